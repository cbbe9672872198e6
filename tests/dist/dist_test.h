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

#define CHECK(cond, ...)                                                       \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "FAIL rank %d %s:%d: %s: ", swarm_dist_rank(), __FILE__, \
              __LINE__, #cond);                                                \
      fprintf(stderr, __VA_ARGS__);                                            \
      fprintf(stderr, "\n");                                                   \
      MPI_Abort(MPI_COMM_WORLD, 1);                                            \
    }                                                                          \
  } while (0)

static inline void dist_test_init(int *argc, char ***argv) {
  int e = swarm_dist_init(argc, argv);
  if (e != 0) {
    fprintf(stderr, "FAIL: swarm_dist_init: %s\n", strerror(e));
    exit(1);
  }
}
#endif
