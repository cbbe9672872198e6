/*
 * dist/global.c — one-sided access to the ranks' windows: the blocking
 * get/put/fetch-and-add/compare-and-swap helpers the runtime uses on its own
 * structures, and the public swarm_global_* memory built on them.
 *
 * Every helper completes its operation (MPI_Win_flush) before returning, so
 * callers can order accesses by program order. Called from thread code
 * too: each takes the MPI lock when the progress thread runs (window.c). The
 * window is opened once with MPI_Win_lock_all at init and stays in a
 * passive-target epoch. Global memory is a bump heap per rank (off_global .. +
 * global_size), released as a whole at swarm_dist_finalize.
 */
#include "dist_internal.h"

#include <string.h>

void swarm_dist_faa(int rank, uint64_t off, int64_t v, uint64_t *old) {
  uint64_t dummy;
  int took = dist_mpi_enter();
  MPI_Fetch_and_op(&v, old ? old : &dummy, MPI_INT64_T, rank, (MPI_Aint)off,
                   MPI_SUM, dist->win);
  MPI_Win_flush(rank, dist->win);
  dist_mpi_exit(took);
}

/* Atomically replaces the word at off with swap if it equals compare;
 * *old gets the word as it was. */
void swarm_dist_cas(int rank, uint64_t off, uint64_t compare, uint64_t swap,
                    uint64_t *old) {
  int took = dist_mpi_enter();
  MPI_Compare_and_swap(&swap, &compare, old, MPI_UINT64_T, rank, (MPI_Aint)off,
                       dist->win);
  MPI_Win_flush(rank, dist->win);
  dist_mpi_exit(took);
}

/* Atomically adds v without waiting for it to reach the target: completes
 * at the origin only (MPI_Win_flush_local: the operation has left this
 * process; the target applies it at its next progress). Later accumulates
 * from this rank to the same word are applied after it (MPI's default
 * accumulate ordering). */
void swarm_dist_add_nowait(int rank, uint64_t off, int64_t v) {
  int took = dist_mpi_enter();
  MPI_Accumulate(&v, 1, MPI_INT64_T, rank, (MPI_Aint)off, 1, MPI_INT64_T,
                 MPI_SUM, dist->win);
  MPI_Win_flush_local(rank, dist->win);
  dist_mpi_exit(took);
}

void swarm_dist_get(void *dst, int rank, uint64_t off, size_t n) {
  if (n == 0)
    return;
  int took = dist_mpi_enter();
  MPI_Get(dst, (int)n, MPI_BYTE, rank, (MPI_Aint)off, (int)n, MPI_BYTE,
          dist->win);
  MPI_Win_flush(rank, dist->win);
  dist_mpi_exit(took);
}

void swarm_dist_put(int rank, uint64_t off, const void *src, size_t n) {
  if (n == 0)
    return;
  int took = dist_mpi_enter();
  MPI_Put(src, (int)n, MPI_BYTE, rank, (MPI_Aint)off, (int)n, MPI_BYTE,
          dist->win);
  MPI_Win_flush(rank, dist->win);
  dist_mpi_exit(took);
}

swarm_gptr_t swarm_global_alloc(size_t size) {
  if (!dist->initialized)
    return SWARM_GPTR_NULL;
  size = (size + 7) & ~(size_t)7;
  if (size == 0)
    size = 8;
  if (dist->global_bump + size > dist->global_size)
    return SWARM_GPTR_NULL;
  uint64_t off = dist->off_global + dist->global_bump;
  dist->global_bump += size;
  memset(dist->win_base + off, 0, size);
  return dist_gref(dist->rank, off);
}

int swarm_gptr_rank(swarm_gptr_t p) {
  return dist_gref_rank(p);
}

void swarm_global_get(void *dst, swarm_gptr_t src, size_t size) {
  swarm_dist_get(dst, dist_gref_rank(src), dist_gref_off(src), size);
}

void swarm_global_put(swarm_gptr_t dst, const void *src, size_t size) {
  swarm_dist_put(dist_gref_rank(dst), dist_gref_off(dst), src, size);
}

int64_t swarm_global_fetch_add(swarm_gptr_t p, int64_t v) {
  uint64_t old;
  swarm_dist_faa(dist_gref_rank(p), dist_gref_off(p), v, &old);
  return (int64_t)old;
}
