/*
 * bench/peers/fib-tbb.cpp — fib(n) on oneTBB task_group: every call is a task
 * (two task_group::run per inner call, then wait); the root too.
 */
#include "tbb-common.h"
#include "workloads.h"

#include <oneapi/tbb/task_group.h>

#include <cstdlib>
#include <vector>

static long long fib(int n) {
  if (n < 2)
    return n;
  long long a, b;
  tbb::task_group g;
  g.run([&] { a = fib(n - 1); });
  g.run([&] { b = fib(n - 2); });
  g.wait();
  return a + b;
}

static int n = 30;
static long long result;

static void rep(void *) {
  tbb::task_group g;
  g.run([] { result = fib(n); });
  g.wait();
}

int main(int argc, char **argv) {
  bench_args_t args;
  bench_flag_t flags[] = {{"-n", BENCH_INT, &n, "fib(n) (default 30)"}};
  bench_parse(argc, argv, "[-n N]", &args, flags, 1);
  if (n < 0 || n > 60)
    return 2;
  auto limit = tbb_limit(args.workers);
  std::vector<double> times(args.reps);
  long minflt;
  bench_time_reps(&args, rep, nullptr, times.data(), &minflt);
  fib_report("tbb", n, tbb_workers(), args.reps, times.data(), result, minflt,
             nullptr);
  return 0;
}
