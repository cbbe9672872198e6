/*
 * collective.c — the collectives of libswarm-cio, and how every rank comes
 * to the same outcome.
 *
 * Collectives that give the core away. Every collective of the library
 * (open's agreement and MPI_Comm_idup, the allgather, alltoall(v) and
 * allreduces of a call, the segment's broadcast) is started non-blocking and
 * completed by cio_quiet_wait, which gives the waiting rank's core away: to
 * the I/O threads and to the ranks that have not arrived yet. MPI libraries
 * poll while they wait (MPICH never yields; Open MPI yields only when it
 * knows it is oversubscribed), and with more ranks and I/O threads than
 * cores (4 + 4 on the 2-core bench machine) a polling rank holds a core for
 * its whole time slice while the rank it waits for cannot run: MPICH's
 * blocking collectives made one open + contiguous read + close of 256 MiB
 * at P = 4 take 0.5 s, of which the preads were 0.1 s. cio_quiet_wait first
 * tests with sched_yield between tries (a collective usually completes
 * within microseconds of the last rank's arrival, and a timed sleep costs at
 * least the 50 us timer slack), then naps 20 us at a time (cio_pause).
 * MPI_Comm_split_type, which has no non-blocking form, stays blocking (and
 * is cached, file.c).
 *
 * Agreement. A collective call fails on every rank or on none: before any
 * step that other ranks depend on, the ranks reduce their codes
 * (cio_agree), so a rank whose arguments were bad never leaves the others
 * waiting in a collective it skips. Invariant: every rank makes the same
 * sequence of collective calls, whatever its local outcome.
 */
#include "cio_internal.h"

int cio_quiet_wait(MPI_Request *req) {
  int rc = MPI_SUCCESS, done = 0;
  for (int tries = 0; rc == MPI_SUCCESS && !done; tries++) {
    rc = MPI_Test(req, &done, MPI_STATUS_IGNORE);
    if (rc == MPI_SUCCESS && !done)
      cio_pause(tries);
  }
  return rc;
}

int cio_quiet_allreduce(const void *in, void *out, int n, MPI_Datatype type,
                        MPI_Op op, MPI_Comm comm) {
  MPI_Request req;
  int rc = MPI_Iallreduce(in, out, n, type, op, comm, &req);
  return rc == MPI_SUCCESS ? cio_quiet_wait(&req) : rc;
}

int cio_agree(MPI_Comm comm, int rc) {
  int any = rc;
  cio_quiet_allreduce(&rc, &any, 1, MPI_INT, MPI_MAX, comm);
  if (rc != MPI_SUCCESS)
    return rc;
  if (any != MPI_SUCCESS)
    return cio_other_rank_failed(any);
  return MPI_SUCCESS;
}

/* One MPI_MAX reduction carries the code, every value and every value's
 * negation: the maximum of -v is minus the minimum of v. */
int cio_agree_values(MPI_Comm comm, int rc, const int64_t *v, int nv,
                     const char *const *names) {
  int64_t in[1 + 2 * 8], out[1 + 2 * 8];
  in[0] = rc;
  for (int i = 0; i < nv; i++) {
    in[1 + 2 * i] = v[i];
    in[2 + 2 * i] = -v[i];
  }
  cio_quiet_allreduce(in, out, 1 + 2 * nv, MPI_INT64_T, MPI_MAX, comm);
  if (rc != MPI_SUCCESS)
    return rc;
  if (out[0] != MPI_SUCCESS)
    return cio_other_rank_failed((int)out[0]);
  for (int i = 0; i < nv; i++)
    if (out[1 + 2 * i] != -out[2 + 2 * i])
      return cio_set_error(MPI_ERR_NOT_SAME,
                           "%s differs between ranks (%lld here, range "
                           "%lld..%lld)",
                           names[i], (long long)v[i],
                           (long long)-out[2 + 2 * i],
                           (long long)out[1 + 2 * i]);
  return MPI_SUCCESS;
}
