/*
 * test_dist_addr.c — swarm_dist_init refuses, on every rank and with a
 * message naming what differs, when the ranks' code or data addresses
 * disagree. Run with SWARM_DIST_TEST_SKEW=1 (rank 1 pretends its
 * executable moved) and with SWARM_DIST_NO_REEXEC=1 (ASLR left on, when
 * the kernel randomises). CTest also matches the message.
 */
#include <errno.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <swarm/dist.h>

int main(int argc, char **argv) {
  int e = swarm_dist_init(&argc, &argv);
  if (e == 0) {
    int rank = swarm_dist_rank();
    swarm_dist_finalize();
    fprintf(stderr,
            "FAIL rank %d: swarm_dist_init accepted mismatched "
            "addresses\n",
            rank);
    return 1;
  }
  if (e != EADDRNOTAVAIL) {
    fprintf(stderr, "FAIL: swarm_dist_init: %s, want EADDRNOTAVAIL\n",
            strerror(e));
    return 1;
  }
  int fin;
  MPI_Finalized(&fin);
  if (!fin) {
    fprintf(stderr, "FAIL: MPI left initialised after the refusal\n");
    return 1;
  }
  printf("refused cleanly: %s\n", strerror(e));
  return 0;
}
