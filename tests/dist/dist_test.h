/*
 * dist_test.h — what the dist tests share: CHECK, which aborts the whole
 * job with a message (a failed rank must not leave the others waiting),
 * start/stop of the runtime, and two thread bodies several tests use.
 */
#ifndef DIST_TEST_H
#define DIST_TEST_H
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <swarm/dist.h>

/* A failed check names the rank and aborts the whole job. */
#define CHECK_ON_FAIL()                                                        \
  (fprintf(stderr, "  (rank %d)\n", swarm_dist_rank()),                        \
   MPI_Abort(MPI_COMM_WORLD, 1))
#include "check.h"

static inline void dist_test_init(int *argc, char ***argv) {
  int e = swarm_dist_init(argc, argv);
  if (e != 0) {
    fprintf(stderr, "FAIL: swarm_dist_init: %s\n", strerror(e));
    exit(1);
  }
}

/* fib(n) with a thread per call (n and the result as pointers). */
static inline void *dist_test_fib(void *a) {
  intptr_t n = (intptr_t)a;
  if (n < 2)
    return a;
  swarm_thread_t x, y;
  void *rx, *ry;
  CHECK(swarm_spawn(&x, NULL, dist_test_fib, (void *)(n - 1)) == 0, "spawn");
  CHECK(swarm_spawn(&y, NULL, dist_test_fib, (void *)(n - 2)) == 0, "spawn");
  CHECK(swarm_join(x, &rx) == 0 && swarm_join(y, &ry) == 0, "join");
  return (void *)((intptr_t)rx + (intptr_t)ry);
}

/* Spins, polling, until the global word g (a swarm_gptr_t) is non-zero, so
 * that its spawner's continuation can only go on by being stolen; returns
 * the rank it ran on. */
static inline void *dist_test_spin_until_set(void *g) {
  swarm_gptr_t flag = (swarm_gptr_t)(uintptr_t)g;
  int64_t v = 0;
  while (v == 0) {
    swarm_global_get(&v, flag, sizeof v);
    swarm_dist_poll();
  }
  return (void *)(intptr_t)swarm_dist_rank();
}
#endif
