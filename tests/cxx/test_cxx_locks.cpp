// tests/cxx/test_cxx_locks.cpp — swarm::mutex works with std::lock_guard,
// std::unique_lock and std::scoped_lock and keeps a shared counter exact
// under contention; try_lock fails while another thread holds it;
// swarm::lock_guard over a C swarm_mutex_t; recursive_mutex relocks;
// condition_variable hands a value from one thread to another.
#include "check.h"
#include <swarm.hpp>

#include <mutex>

int main() {
  swarm::runtime rt(2);

  swarm::mutex m;
  long counter = 0;
  swarm::task_group g;
  for (int t = 0; t < 16; t++)
    g.run([&] {
      for (int i = 0; i < 2000; i++) {
        if (i % 3 == 0) {
          std::lock_guard<swarm::mutex> l(m);
          counter++;
        } else if (i % 3 == 1) {
          std::unique_lock<swarm::mutex> l(m);
          counter++;
          l.unlock();
          swarm_yield(); // contention: others run while we do not hold it
        } else {
          swarm::lock_guard<swarm::mutex> l(m);
          counter++;
        }
      }
    });
  g.wait();
  CHECK_EQ(counter, 16 * 2000);

  // try_lock: false while another thread holds the mutex, true after.
  {
    std::unique_lock<swarm::mutex> held(m);
    bool got = swarm::spawn([&m] {
                 bool r = m.try_lock();
                 if (r)
                   m.unlock();
                 return r;
               }).join();
    CHECK(!got);
  }
  CHECK(m.try_lock());
  m.unlock();

  // scoped_lock over two of them.
  swarm::mutex m2;
  {
    std::scoped_lock both(m, m2);
    CHECK(!swarm::spawn([&m2] {
             bool r = m2.try_lock();
             if (r)
               m2.unlock();
             return r;
           }).join());
  }

  // A C mutex, guarded from C++.
  swarm_mutex_t cm = SWARM_MUTEX_INITIALIZER;
  int c_counter = 0;
  swarm::task_group h;
  for (int t = 0; t < 8; t++)
    h.run([&] {
      for (int i = 0; i < 1000; i++) {
        swarm::lock_guard<swarm_mutex_t> l(cm);
        c_counter++;
      }
    });
  h.wait();
  CHECK_EQ(c_counter, 8000);
  CHECK_EQ(swarm_mutex_destroy(&cm), 0);

  // Recursive: the owner locks twice.
  swarm::recursive_mutex rm;
  {
    std::lock_guard<swarm::recursive_mutex> a(rm);
    std::lock_guard<swarm::recursive_mutex> b(rm);
    CHECK(rm.try_lock());
    rm.unlock();
  }

  // Condition variable: a consumer waits for a producer's value.
  swarm::condition_variable cv;
  int value = 0;
  auto consumer = swarm::spawn([&] {
    std::unique_lock<swarm::mutex> l(m);
    cv.wait(l, [&] { return value != 0; });
    return value;
  });
  swarm::spawn([&] {
    std::lock_guard<swarm::mutex> l(m);
    value = 99;
    cv.notify_all();
  }).join();
  CHECK_EQ(consumer.join(), 99);
  return 0;
}
