/*
 * bench/cxx_fib.cpp — fib(n) through swarm's C++ interface (swarm.hpp): each
 * call spawns fib(n-1) and fib(n-2) as swarm::thread<long long> and joins
 * both, so threads = calls = 2*F(n+1)-1, as in bench/fib.c; main spawns the
 * root. Prints the same JSON fields as fib.c ("system": "swarm-cxx"): the
 * difference between the two is what the typed handles (a heap state per
 * thread, an exception slot) cost over the C API.
 */
#include "swarm.hpp"
#include "swarm_run.h"
#include "workloads.h"

#include <cstdio>
#include <cstdlib>

static long long fib(int n) {
  if (n < 2)
    return n;
  swarm::thread<long long> a = swarm::spawn(fib, n - 1);
  swarm::thread<long long> b = swarm::spawn(fib, n - 2);
  long long x = a.join();
  return x + b.join();
}

static int n = 30;
static long long result;

static void rep(void *) { result = swarm::spawn(fib, n).join(); }

int main(int argc, char **argv) {
  bench_args_t args;
  bench_flag_t flags[] = {{"-n", BENCH_INT, &n, "fib(n) (default 30)"}};
  bench_parse(argc, argv, "[-n N]", &args, flags, 1);
  if (n < 0 || n > 60) {
    std::fprintf(stderr, "cxx_fib: -n must be in 0..60\n");
    return 2;
  }
  int workers;
  long minflt;
  double *times =
      swarm_bench_run("cxx_fib", &args, rep, nullptr, &workers, &minflt);
  fib_report("swarm-cxx", n, workers, args.reps, times, result, minflt,
             nullptr);
  std::free(times);
  return result == fib_reference(n) ? 0 : 1;
}
