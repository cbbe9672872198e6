/*
 * dist_test.h — what the dist tests share: CHECK, which aborts the whole
 * job with a message (a failed rank must not leave the others waiting), and
 * start/stop of the runtime.
 */
#ifndef DIST_TEST_H
#define DIST_TEST_H
#include <mpi.h>
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
#endif
