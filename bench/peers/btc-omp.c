/*
 * bench/peers/btc-omp.c — Binary Task Creation on OpenMP tasks (libgomp):
 * every tree node is a task; an inner node makes two tasks and waits.
 */
#include "workloads.h"

#include <omp.h>
#include <stdlib.h>

static long long btc(int d) {
  if (d == 0)
    return 1;
  long long a, b;
#pragma omp task shared(a) firstprivate(d)
  a = btc(d - 1);
#pragma omp task shared(b) firstprivate(d)
  b = btc(d - 1);
#pragma omp taskwait
  return a + b;
}

static int depth = 20;
static long long leaves;

static void rep(void *ctx) {
  (void)ctx;
#pragma omp parallel
#pragma omp single
  {
#pragma omp task shared(leaves)
    leaves = btc(depth);
#pragma omp taskwait
  }
}

int main(int argc, char **argv) {
  bench_args_t args;
  bench_flag_t flags[] = {{"-d", BENCH_INT, &depth, "depth (default 20)"}};
  bench_parse(argc, argv, "[-d D]", &args, flags, 1);
  if (depth < 0 || depth > 40)
    return 2;
  omp_set_num_threads(args.workers);
  double *times = calloc(args.reps, sizeof(double));
  long minflt;
  bench_time_reps(&args, rep, NULL, times, &minflt);
  btc_report("omp", depth, omp_get_max_threads(), args.reps, times, leaves,
             minflt);
  free(times);
  return 0;
}
