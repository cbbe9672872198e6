/*
 * bench/swarm_run.h — what every swarm benchmark program does around its
 * timed repetitions: start swarm with the -w workers asked for, time the
 * repetitions (bench_time_reps), stop swarm. Returns the per-repetition
 * times (caller frees) and, through *workers and *minflt, the worker count
 * used and the minor faults of the timed repetitions. Any failure to start
 * the runtime or to allocate ends the program with a message naming it.
 *
 * --inline (swarm_bench_inline_flag): the workloads' threads below the root
 * are spawned with the inline opt-in (swarm_attr_setinline), the freedom
 * OpenMP's tasks have; the results then name the system "swarm-inline".
 */
#ifndef SWARM_BENCH_SWARM_RUN_H
#define SWARM_BENCH_SWARM_RUN_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <swarm.h>

#include "bench.h"

/* The attr the workloads spawn with: NULL (plain threads), or the inline
 * opt-in once swarm_bench_inline_setup saw --inline. */
static const swarm_attr_t *swarm_bench_attr;
static int swarm_bench_inline;

/* The --inline flag, for bench_parse's table. */
#define SWARM_BENCH_INLINE_FLAG                                                \
  {                                                                            \
    "--inline", BENCH_BOOL, &swarm_bench_inline,                               \
        "spawn with the inline opt-in (swarm_attr_setinline)"                  \
  }

/* After bench_parse: the attr and the system name to report. */
static inline const char *swarm_bench_inline_setup(void) {
  static swarm_attr_t attr;
  if (!swarm_bench_inline)
    return "swarm";
  if (swarm_attr_init(&attr) != 0 || swarm_attr_setinline(&attr, 1) != 0) {
    fprintf(stderr, "swarm_attr_setinline failed\n");
    exit(1);
  }
  swarm_bench_attr = &attr;
  return "swarm-inline";
}

static inline double *swarm_bench_run(const char *prog,
                                      const bench_args_t *args,
                                      void (*rep)(void *ctx), void *ctx,
                                      int *workers, long *minflt) {
  double *times = (double *)calloc((size_t)args->reps, sizeof(double));
  if (!times) {
    fprintf(stderr, "%s: out of memory for %d repetitions\n", prog, args->reps);
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
