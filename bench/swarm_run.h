/*
 * bench/swarm_run.h — what every swarm benchmark program does around its
 * timed repetitions: start swarm with the -w workers asked for, time the
 * repetitions (bench_time_reps), stop swarm. Returns the per-repetition
 * times (caller frees) and, through *workers and *minflt, the worker count
 * used and the minor faults of the timed repetitions. Any failure to start
 * the runtime or to allocate ends the program with a message naming it.
 */
#ifndef SWARM_BENCH_SWARM_RUN_H
#define SWARM_BENCH_SWARM_RUN_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <swarm.h>

#include "bench.h"

static inline double *swarm_bench_run(const char *prog,
                                      const bench_args_t *args,
                                      void (*rep)(void *ctx), void *ctx,
                                      int *workers, long *minflt) {
  double *times = (double *)calloc((size_t)args->reps, sizeof(double));
  if (!times) {
    fprintf(stderr, "%s: out of memory for %d repetitions\n", prog,
            args->reps);
    exit(1);
  }
  swarm_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.workers = args->workers;
  int e = swarm_init(&cfg);
  if (e != 0) {
    fprintf(stderr, "%s: swarm_init: %s\n", prog, strerror(e));
    exit(1);
  }
  *workers = swarm_num_workers();
  bench_time_reps(args, rep, ctx, times, minflt);
  swarm_finalize();
  return times;
}

#endif
