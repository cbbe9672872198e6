// tests/cxx/test_cxx_exceptions.cpp — an exception thrown in a spawned
// function reaches whoever joins it, with its type and message, through
// nested spawns; task_group::wait rethrows the first one after every task
// ran; parallel_for rethrows after all its pieces finished; a destructor
// join drops the exception instead of terminating.
#include "check.h"
#include <swarm.hpp>

#include <atomic>
#include <stdexcept>
#include <string>

struct custom_error {
  int code;
};

static int deep(int n) {
  if (n == 0)
    throw std::runtime_error("bottom");
  return swarm::spawn(deep, n - 1).join() + 1;
}

int main() {
  swarm::runtime rt(2);

  // Type and message survive the trip.
  auto t = swarm::spawn([]() -> int { throw std::out_of_range("index 7"); });
  try {
    t.join();
    CHECK(!"join should have thrown");
  } catch (const std::out_of_range &e) {
    CHECK(std::string(e.what()) == "index 7");
  }
  CHECK(!t.joinable());

  // A thrown non-std type.
  auto c = swarm::spawn([] { throw custom_error{17}; });
  try {
    c.join();
    CHECK(!"join should have thrown");
  } catch (const custom_error &e) {
    CHECK_EQ(e.code, 17);
  }

  // Through twenty levels of spawn/join.
  try {
    deep(20);
    CHECK(!"deep should have thrown");
  } catch (const std::runtime_error &e) {
    CHECK(std::string(e.what()) == "bottom");
  }

  // task_group: every task runs, the first failure (in run order) is thrown.
  std::atomic<int> ran{0};
  swarm::task_group g;
  for (int i = 0; i < 8; i++)
    g.run([&ran, i] {
      ran++;
      if (i == 3 || i == 5)
        throw std::runtime_error("task " + std::to_string(i));
    });
  try {
    g.wait();
    CHECK(!"wait should have thrown");
  } catch (const std::runtime_error &e) {
    CHECK(std::string(e.what()) == "task 3");
  }
  CHECK_EQ(ran.load(), 8);

  // parallel_for: the throw does not cut other pieces short.
  std::atomic<int> calls{0};
  try {
    swarm::parallel_for(0, 1000, 10, [&](int i) {
      calls++;
      if (i == 500)
        throw std::logic_error("500");
    });
    CHECK(!"parallel_for should have thrown");
  } catch (const std::logic_error &e) {
    CHECK(std::string(e.what()) == "500");
  }
  // Every piece but the rest of the one that threw ran to its end.
  CHECK(calls.load() > 990 && calls.load() <= 1000);

  // Dropped unjoined: the destructor joins and swallows.
  {
    auto d = swarm::spawn([] { throw 1; });
  }
  return 0;
}
