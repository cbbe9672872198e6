/*
 * bench/peers/fib-pthread.c — fib(n) on NPTL with one kernel thread per call
 * (both children created, then joined; the root too), where feasible; else
 * the create+join microbenchmark (see pthread-common.h).
 */
#include "pthread-common.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static void *fib_thread(void *arg) {
  intptr_t n = (intptr_t)arg;
  if (n < 2)
    return (void *)n;
  pt_task_t a, b;
  void *ra, *rb;
  pt_spawn(&a, fib_thread, (void *)(n - 1));
  pt_spawn(&b, fib_thread, (void *)(n - 2));
  pt_join(&a, &ra);
  pt_join(&b, &rb);
  return (void *)((intptr_t)ra + (intptr_t)rb);
}

static int n = 30;
static long long result;

static void rep(void *ctx) {
  (void)ctx;
  pt_task_t root;
  void *r;
  pt_spawn(&root, fib_thread, (void *)(intptr_t)n);
  pt_join(&root, &r);
  result = (intptr_t)r;
}

int main(int argc, char **argv) {
  bench_args_t args;
  pt_opts_t o;
  bench_flag_t flags[4] = {{"-n", BENCH_INT, &n, "fib(n) (default 30)"}};
  int nflags = pt_flags(&o, flags, 1);
  bench_parse(argc, argv, "[-n N] [--max-tasks T] [--micro]", &args, flags,
              nflags);
  if (n < 0 || n > 60)
    return 2;
  pt_setup(&args);
  char params[64];
  snprintf(params, sizeof params, "{\"n\":%d}", n);
  if (pt_maybe_micro("fib", params, fib_calls(n), &args, &o))
    return 0;
  double *times = calloc(args.reps, sizeof(double));
  long minflt;
  bench_time_reps(&args, rep, NULL, times, &minflt);
  pt_add_fields();
  fib_report("pthread", n, args.workers, args.reps, times, result, minflt,
             NULL);
  free(times);
  return 0;
}
