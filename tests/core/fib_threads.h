/* tests/fib_threads.h — fib(n) with one swarm thread per call, the
 * workload several tests use to keep workers busy and force steals. */
#ifndef SWARM_TEST_FIB_THREADS_H
#define SWARM_TEST_FIB_THREADS_H

#include <swarm.h>

#include "check.h"

static void *fib_threads(void *arg) {
  long n = (long)arg;
  if (n < 2)
    return arg;
  swarm_thread_t x, y;
  void *rx, *ry;
  CHECK_EQ(swarm_spawn(&x, NULL, fib_threads, (void *)(n - 1)), 0);
  CHECK_EQ(swarm_spawn(&y, NULL, fib_threads, (void *)(n - 2)), 0);
  CHECK_EQ(swarm_join(x, &rx), 0);
  CHECK_EQ(swarm_join(y, &ry), 0);
  return (void *)((long)rx + (long)ry);
}

#endif
