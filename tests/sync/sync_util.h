/* tests/sync/sync_util.h — small helpers for the synchronisation tests. */
#ifndef SWARM_TEST_SYNC_UTIL_H
#define SWARM_TEST_SYNC_UTIL_H
#include <errno.h>
#include <stdatomic.h>
#include <swarm.h>
#include <time.h>

#include "check.h"

/* An absolute time `ms` from now on `clock`. */
static inline struct timespec in_ms(int clock, long ms) {
  return test_time_in(clock, ms * 1000000LL);
}

static inline long long mono_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* Runs fn(arg) in a new thread and returns its result. */
static inline long run(void *(*fn)(void *), void *arg) {
  swarm_thread_t t;
  void *r;
  CHECK_EQ(swarm_spawn(&t, NULL, fn, arg), 0);
  CHECK_EQ(swarm_join(t, &r), 0);
  return (long)r;
}

static inline void start2(void) {
  swarm_config_t cfg = {.workers = 2};
  CHECK_EQ(swarm_init(&cfg), 0);
}
#endif
