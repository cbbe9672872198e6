/*
 * bench/peers/btc-serial.c — Binary Task Creation's serial baseline: the same
 * full binary tree of depth d walked by recursion (one call per task).
 */
#include "workloads.h"

#include <stdlib.h>

/* Counting through a pointer keeps the two calls distinct: a pure
 * btc(d-1) + btc(d-1) is folded by GCC into 2*btc(d-1). */
static void btc(int d, long long *leaves) {
  if (d == 0) {
    ++*leaves;
    return;
  }
  btc(d - 1, leaves);
  btc(d - 1, leaves);
}

static int depth = 20;
static long long leaves;

static void rep(void *ctx) {
  (void)ctx;
  leaves = 0;
  btc(depth, &leaves);
}

int main(int argc, char **argv) {
  bench_args_t args;
  bench_flag_t flags[] = {{"-d", BENCH_INT, &depth, "depth (default 20)"}};
  bench_parse(argc, argv, "[-d D]", &args, flags, 1);
  if (depth < 0 || depth > 40)
    return 2;
  double *times = calloc(args.reps, sizeof(double));
  long minflt;
  bench_time_reps(&args, rep, NULL, times, &minflt);
  btc_report("serial", depth, 1, args.reps, times, leaves, minflt);
  free(times);
  return 0;
}
