/*
 * bench/peers/pthread-common.c — thread-per-task spawning and the create+join
 * microbenchmark of the NPTL peer (see pthread-common.h).
 */
#include "pthread-common.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static atomic_long create_failures;

int pt_flags(pt_opts_t *o, bench_flag_t *flags, int at) {
  o->max_tasks = 100000;
  o->micro = 0;
  flags[at++] = (bench_flag_t){"--max-tasks", BENCH_LONG, &o->max_tasks,
                               "largest run done with a thread per task "
                               "(default 100000)"};
  flags[at++] = (bench_flag_t){"--micro", BENCH_BOOL, &o->micro,
                               "measure create+join pairs instead"};
  return at;
}

void pt_setup(const bench_args_t *args) {
  int e = bench_limit_cpus(args->workers);
  if (e)
    fprintf(stderr, "pthread peer: cannot limit to %d CPUs: %s\n",
            args->workers, strerror(e));
}

void pt_spawn(pt_task_t *t, void *(*fn)(void *), void *arg) {
  int e = pthread_create(&t->thread, NULL, fn, arg);
  if (e == 0) {
    t->created = 1;
    return;
  }
  if (e != EAGAIN) {
    fprintf(stderr, "pthread_create: %s\n", strerror(e));
    exit(1);
  }
  atomic_fetch_add(&create_failures, 1);
  t->created = 0;
  t->inline_result = fn(arg);
}

void pt_join(pt_task_t *t, void **result) {
  if (t->created) {
    int e = pthread_join(t->thread, result);
    if (e) {
      fprintf(stderr, "pthread_join: %s\n", strerror(e));
      exit(1);
    }
  } else if (result) {
    *result = t->inline_result;
  }
}

static void *empty_thread(void *arg) {
  return arg;
}

typedef struct micro {
  uint64_t pairs;
} micro_t;

static void micro_rep(void *ctx) {
  micro_t *m = ctx;
  for (uint64_t i = 0; i < m->pairs; i++) {
    pthread_t t;
    int e = pthread_create(&t, NULL, empty_thread, NULL);
    if (e) {
      fprintf(stderr, "pthread_create: %s\n", strerror(e));
      exit(1);
    }
    pthread_join(t, NULL);
  }
}

int pt_maybe_micro(const char *bench, const char *params,
                   uint64_t workload_tasks, const bench_args_t *args,
                   const pt_opts_t *o) {
  char why[256];
  if (o->micro)
    snprintf(why, sizeof why,
             "--micro: timed create+join of empty threads instead of the "
             "workload");
  else if (workload_tasks == 0 || workload_tasks > (uint64_t)o->max_tasks)
    snprintf(why, sizeof why,
             "one kernel thread per task is not feasible for %s tasks (limit "
             "--max-tasks %ld): timed create+join of empty threads instead",
             workload_tasks ? "so many" : "an unknown number of", o->max_tasks);
  else
    return 0;
  micro_t m = {workload_tasks && workload_tasks < 20000 ? workload_tasks
                                                        : 20000};
  double *times = calloc(args->reps, sizeof(double));
  long minflt;
  bench_time_reps(args, micro_rep, &m, times, &minflt);
  pthread_micro_report(bench, params, workload_tasks, args->workers, args->reps,
                       times, m.pairs, minflt, why);
  free(times);
  return 1;
}

void pt_add_fields(void) {
  bench_extra_str("mode", "thread_per_task");
  bench_extra_int("create_failures", atomic_load(&create_failures));
}
