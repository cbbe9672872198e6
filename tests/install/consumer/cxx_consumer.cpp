// The C++ interface from an installed swarm: swarm.hpp, typed results.
#include <cstdio>
#include <swarm.hpp>

static long fib(long n) {
  if (n < 2)
    return n;
  auto a = swarm::spawn(fib, n - 1);
  auto b = swarm::spawn(fib, n - 2);
  long x = a.join();
  return x + b.join();
}

int main() {
  std::printf("fib(20) = %ld\n", swarm::spawn(fib, 20L).join());
  return 0;
}
