/*
 * bench/peers/pthread-common.h — the NPTL peer's shared part: one kernel
 * thread per task (pthread_create with default attributes, as a user would
 * write it), and the create+join microbenchmark measured instead where a
 * thread per task is not feasible (issue 3).
 *
 * Feasible means: the workload makes at most --max-tasks tasks (default
 * 100,000; at ~10-40 µs per create+join a larger run takes seconds per
 * repetition, and live threads hit vm.max_map_count, 65,530 mappings, two
 * per thread). Above that, or with --micro, the program times `pairs`
 * create+join pairs of an empty thread from one thread and reports that,
 * with "mode":"create_join_microbenchmark" and the reason in "note".
 * When a create fails with EAGAIN during a real run the task runs inline in
 * its parent and the failure is counted in "create_failures".
 * -w W limits the process to W CPUs (sched_setaffinity): NPTL has no worker
 * count, the kernel schedules every thread.
 */
#ifndef SWARM_BENCH_PTHREAD_COMMON_H
#define SWARM_BENCH_PTHREAD_COMMON_H

#include "workloads.h"

#include <pthread.h>

typedef struct pt_task {
  pthread_t thread;
  int created;         /* 0: ran inline because pthread_create failed */
  void *inline_result; /* fn's result when it ran inline */
} pt_task_t;

typedef struct pt_opts {
  long max_tasks;
  int micro;
} pt_opts_t;

/* Appends --max-tasks and --micro to flags[at..]; returns the new count. */
int pt_flags(pt_opts_t *o, bench_flag_t *flags, int at);

/* Applies -w (CPU affinity); call after parsing. */
void pt_setup(const bench_args_t *args);

/* Runs fn(arg) on a new kernel thread (or inline, counted, on EAGAIN). */
void pt_spawn(pt_task_t *t, void *(*fn)(void *), void *arg);
void pt_join(pt_task_t *t, void **result);

/* If the workload (workload_tasks tasks; 0 when not known beforehand) is
 * not feasible as one thread per task, or --micro was given, runs and
 * reports the microbenchmark and returns 1; else returns 0. */
int pt_maybe_micro(const char *bench, const char *params,
                   uint64_t workload_tasks, const bench_args_t *args,
                   const pt_opts_t *o);

/* Before printing a real run's report: adds create_failures. */
void pt_add_fields(void);

#endif
