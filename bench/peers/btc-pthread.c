/*
 * bench/peers/btc-pthread.c — Binary Task Creation on NPTL, one kernel thread
 * per tree node where feasible; else the create+join microbenchmark (see
 * pthread-common.h).
 */
#include "pthread-common.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static void *btc_thread(void *arg) {
  intptr_t d = (intptr_t)arg;
  if (d == 0)
    return (void *)1;
  pt_task_t a, b;
  void *ra, *rb;
  pt_spawn(&a, btc_thread, (void *)(d - 1));
  pt_spawn(&b, btc_thread, (void *)(d - 1));
  pt_join(&a, &ra);
  pt_join(&b, &rb);
  return (void *)((intptr_t)ra + (intptr_t)rb);
}

static int depth = 20;
static long long leaves;

static void rep(void *ctx) {
  (void)ctx;
  pt_task_t root;
  void *r;
  pt_spawn(&root, btc_thread, (void *)(intptr_t)depth);
  pt_join(&root, &r);
  leaves = (intptr_t)r;
}

int main(int argc, char **argv) {
  bench_args_t args;
  pt_opts_t o;
  bench_flag_t flags[4] = {{"-d", BENCH_INT, &depth, "depth (default 20)"}};
  int nflags = pt_flags(&o, flags, 1);
  bench_parse(argc, argv, "[-d D] [--max-tasks T] [--micro]", &args, flags,
              nflags);
  if (depth < 0 || depth > 40)
    return 2;
  pt_setup(&args);
  char params[64];
  snprintf(params, sizeof params, "{\"d\":%d}", depth);
  if (pt_maybe_micro("btc", params, btc_tasks(depth), &args, &o))
    return 0;
  double *times = calloc(args.reps, sizeof(double));
  long minflt;
  bench_time_reps(&args, rep, NULL, times, &minflt);
  pt_add_fields();
  btc_report("pthread", depth, args.workers, args.reps, times, leaves, minflt);
  free(times);
  return 0;
}
