// tests/cxx/test_cxx_catch_blocks.cpp — swarm threads may block inside a
// catch block (src/sync/cxx_eh.c): 16 threads on one worker, then on two,
// run catch_rounds.hpp's rounds, blocking on a contended swarm::mutex, a
// yield or a sleep; each must find its own exception behind
// std::current_exception() and a bare `throw;`. With the C++ runtime's
// per-kernel-thread state the first rethrow after a switch is another
// thread's. Main's own exceptions cross swarm_init and swarm_finalize:
// one that unwinds through the runtime object's end, a catch block that
// starts and ends a runtime.
#include "catch_rounds.hpp"
#include "check.h"
#include <swarm.hpp>

#include <atomic>
#include <cstdio>
#include <vector>

namespace {

using catch_rounds::own;
using catch_rounds::thread_error;

swarm::mutex lock;
std::atomic<int> failures{0};

void block(int how) {
  switch (how % 3) {
  case 0: {
    std::lock_guard<swarm::mutex> g(lock);
    swarm_yield(); // the others queue on the mutex meanwhile
    break;
  }
  case 1:
    swarm_yield();
    break;
  default:
    swarm_sleep_ns(20000);
  }
}

void fail(const char *what, int id, int round) {
  if (failures++ < 5)
    std::printf("thread %d round %d: %s\n", id, round, what);
}

void round_of_threads() {
  std::vector<swarm::thread<void>> ts;
  for (int i = 0; i < 16; i++)
    ts.push_back(swarm::spawn(
        [](int id) { catch_rounds::run(id, 100, block, fail); }, i));
  for (auto &t : ts)
    t.join();
}

// An exception thrown while the runtime runs that unwinds through the
// runtime object's end (swarm_finalize) and is caught after it.
void throw_through_runtime() {
  swarm::runtime rt(2);
  round_of_threads();
  throw thread_error{100, 0};
}

} // namespace

int main() {
  {
    swarm::runtime rt(1); // every thread on one kernel thread
    round_of_threads();
  }
  CHECK(failures.load() == 0);
  try {
    throw_through_runtime(); // and moving between two
  } catch (const thread_error &e) {
    CHECK(e.id == 100);
    CHECK(std::uncaught_exceptions() == 0);
    CHECK(own(std::current_exception(), 100, 0));
  }
  CHECK(std::uncaught_exceptions() == 0);
  CHECK(!std::current_exception());
  CHECK(failures.load() == 0);
  // A catch block that starts and ends a runtime, on main's flow.
  try {
    throw thread_error{101, 0};
  } catch (...) {
    {
      swarm::runtime rt(1);
      round_of_threads();
      CHECK(own(std::current_exception(), 101, 0)); // main, a swarm thread
    }
    CHECK(own(std::current_exception(), 101, 0));
  }
  CHECK(!std::current_exception());
  CHECK(failures.load() == 0);
  return 0;
}
