// tests/cxx/test_cxx_spawn_result.cpp — swarm::spawn returns a handle whose
// join() gives the function's value with its own type: scalars, strings,
// move-only values, void; arguments are copied or moved in; a moved-from
// handle is not joinable; a handle dropped unjoined joins in its destructor.
#include "check.h"
#include <swarm.hpp>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

static int add(int a, int b) {
  return a + b;
}

int main() {
  swarm::runtime rt(2);

  swarm::thread<int> t = swarm::spawn([] { return 6 * 7; });
  CHECK(t.joinable());
  CHECK(t.native_handle() != SWARM_THREAD_NONE);
  CHECK_EQ(t.join(), 42);
  CHECK(!t.joinable());

  // A function pointer with arguments, copied into the thread.
  CHECK_EQ(swarm::spawn(add, 40, 2).join(), 42);

  // A std::string result, built from a captured value.
  std::string who = "swarm";
  auto s = swarm::spawn([who] { return "hello " + who; });
  CHECK(s.join() == "hello swarm");

  // A move-only argument moved in, and a move-only result moved out.
  auto p = std::make_unique<int>(5);
  auto u = swarm::spawn(
      [](std::unique_ptr<int> q) {
        *q *= 3;
        return q;
      },
      std::move(p));
  std::unique_ptr<int> back = u.join();
  CHECK(back && *back == 15);

  // void: join() returns nothing, the side effect is visible after it.
  int side = 0;
  auto v = swarm::spawn([&side] { side = 9; });
  v.join();
  CHECK_EQ(side, 9);

  // The thread runs as a swarm thread: it has a handle of its own.
  auto self = swarm::spawn([] { return swarm_self(); });
  swarm_thread_t expect = self.native_handle();
  CHECK(self.join() == expect);

  // Moving a handle moves the obligation to join.
  auto a = swarm::spawn([] { return 1; });
  swarm::thread<int> b = std::move(a);
  CHECK(!a.joinable());
  CHECK(b.joinable());
  CHECK_EQ(b.join(), 1);

  // join() on a handle that is not joinable throws EINVAL.
  bool threw = false;
  try {
    b.join();
  } catch (const std::system_error &e) {
    threw = e.code().value() == EINVAL;
  }
  CHECK(threw);

  // Dropped without join: the destructor waits for it.
  std::atomic<int> done{0};
  {
    auto d = swarm::spawn([&done] {
      swarm_yield();
      done = 1;
    });
  }
  CHECK_EQ(done.load(), 1);

  // Many at once, results in order.
  std::vector<swarm::thread<long>> many;
  for (long i = 0; i < 1000; i++)
    many.push_back(swarm::spawn([i] { return i * i; }));
  long sum = 0;
  for (auto &m : many)
    sum += m.join();
  CHECK_EQ(sum, 332833500L);
  return 0;
}
