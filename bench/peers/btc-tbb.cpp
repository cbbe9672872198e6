/*
 * bench/peers/btc-tbb.cpp — Binary Task Creation on oneTBB task_group: every
 * tree node is a task; an inner node runs two and waits.
 */
#include "tbb-common.h"
#include "workloads.h"

#include <oneapi/tbb/task_group.h>

#include <vector>

static long long btc(int d) {
  if (d == 0)
    return 1;
  long long a, b;
  tbb::task_group g;
  g.run([&] { a = btc(d - 1); });
  g.run([&] { b = btc(d - 1); });
  g.wait();
  return a + b;
}

static int depth = 20;
static long long leaves;

static void rep(void *) {
  tbb::task_group g;
  g.run([] { leaves = btc(depth); });
  g.wait();
}

int main(int argc, char **argv) {
  bench_args_t args;
  bench_flag_t flags[] = {{"-d", BENCH_INT, &depth, "depth (default 20)"}};
  bench_parse(argc, argv, "[-d D]", &args, flags, 1);
  if (depth < 0 || depth > 40)
    return 2;
  auto limit = tbb_limit(args.workers);
  std::vector<double> times(args.reps);
  long minflt;
  bench_time_reps(&args, rep, nullptr, times.data(), &minflt);
  btc_report("tbb", depth, tbb_workers(), args.reps, times.data(), leaves,
             minflt);
  return 0;
}
