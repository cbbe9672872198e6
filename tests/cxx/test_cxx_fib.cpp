// tests/cxx/test_cxx_fib.cpp — fib with one typed swarm thread per call
// (as bench/cxx_fib.cpp), on 1 and on 2 workers: the value is exact and the
// thread count is what the recursion makes.
#include "check.h"
#include <swarm.hpp>

static long long fib(int n) {
  if (n < 2)
    return n;
  auto a = swarm::spawn(fib, n - 1);
  auto b = swarm::spawn(fib, n - 2);
  long long x = a.join();
  return x + b.join();
}

int main() {
  for (int workers : {1, 2}) {
    swarm::runtime rt(workers);
    swarm_stats_t before, after;
    CHECK_EQ(swarm_stats_get(&before), 0);
    CHECK_EQ(swarm::spawn(fib, 20).join(), 6765);
    CHECK_EQ(swarm_stats_get(&after), 0);
    // 2*F(21)-1 calls, each its own thread, plus the root's spawn
    CHECK_EQ(after.threads_spawned - before.threads_spawned, 2 * 10946 - 1);
  }
  return 0;
}
