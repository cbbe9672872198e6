/*
 * cio_test.h — helpers shared by the cio tests: a per-run temp directory on
 * rank 0 broadcast to all ranks, and CHECK that aborts the job with a message
 * (a failed test must not leave other ranks waiting).
 */
#ifndef CIO_TEST_H
#define CIO_TEST_H
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A failed check aborts the whole job. */
#define CHECK_ON_FAIL() MPI_Abort(MPI_COMM_WORLD, 1)
#include "check.h"

/* A fresh directory (rank 0 makes it), same path on every rank. */
static inline void cio_test_tmpdir(char *dir, size_t n) {
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0) {
    const char *t = getenv("TMPDIR");
    snprintf(dir, n, "%s/swarm-cio-XXXXXX", t && *t ? t : "/tmp");
    if (!mkdtemp(dir)) {
      perror("mkdtemp");
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
  }
  MPI_Bcast(dir, (int)n, MPI_CHAR, 0, MPI_COMM_WORLD);
}
#endif
