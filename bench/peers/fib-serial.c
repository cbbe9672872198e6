/*
 * bench/peers/fib-serial.c — fib(n) by plain recursion, the serial baseline
 * for fib; tasks counts calls (2*F(n+1)-1) so ns_per_task compares with the
 * threaded systems' per-thread cost.
 */
#include "workloads.h"

#include <stdio.h>
#include <stdlib.h>

static long long fib(int n) {
  return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

static int n = 30;
static long long result;

static void rep(void *ctx) {
  (void)ctx;
  result = fib(n);
}

int main(int argc, char **argv) {
  bench_args_t args;
  bench_flag_t flags[] = {{"-n", BENCH_INT, &n, "fib(n) (default 30)"}};
  bench_parse(argc, argv, "[-n N]", &args, flags, 1);
  if (n < 0 || n > 60)
    return 2;
  double *times = calloc(args.reps, sizeof(double));
  long minflt;
  bench_time_reps(&args, rep, NULL, times, &minflt);
  fib_report("serial", n, 1, args.reps, times, result, minflt, NULL);
  free(times);
  return 0;
}
