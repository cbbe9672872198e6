/*
 * aggregator.c — who aggregates, and what an aggregator owns: its `depth`
 * pipeline buffers ("slots") and its file-I/O thread (iothread.c). With
 * the shared-segment exchange, every aggregator's slots live in one POSIX
 * shared-memory segment that every rank maps, behind the cycle counters
 * (their protocol is exchange_shm.c's).
 *
 * Aggregator i is rank i * P / cb_nodes. A slot holds one cycle's window of
 * the aggregator's file domain: min(cb_buffer_size / depth,
 * swarm_cio_slot_size) bytes, so an aggregator never uses more buffer than
 * cb_buffer_size (ROMIO's memory at the same hint).
 *
 * Segment layout (every rank computes the same): first the counters, one
 * 64-byte line each, so aggregators' and ranks' stores never share a line —
 * per aggregator i, line i * (P + 1) is its `ready`, line i * (P + 1) + 1 + r
 * rank r's `copied` — rounded up to a page; then aggregator i's slots at
 * shm_counter_bytes + i * depth * slot_size, slot s at + s * slot_size.
 *
 * Invariants: the state is made once per set of hints, by the first
 * collective call (cio_agg_setup, whose collective part every rank runs
 * identically), and released only where no rank can still use the segment
 * (close, or set_view with new hints, both after a final agreement). After
 * the collective part a failure is local and kept in agg_rc, so later calls
 * fail the same way without repeating the collective part. Whether the
 * segment is used is the same on every rank: if any rank cannot map it,
 * nobody uses it and the exchange goes by messages.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cio_internal.h"

/* The shared segment of every aggregator's slots, mapped on every rank
 * (collective). Rank 0 creates it under a fresh name and sizes it with
 * posix_fallocate (a full /dev/shm fails here, not with SIGBUS at a page
 * fault in the middle of a copy), the others open the name, and once all
 * have mapped it the name is removed, so nothing outlives the processes.
 * Returns the mapping, or NULL on every rank if any rank failed (the
 * exchange then goes by messages).
 *
 * Why not MPI_Win_allocate_shared, which did this before: MPICH 4.0 took
 * 1.8 ms for it with 2 ranks and 85-100 ms with 4 ranks on 2 cores (its
 * internal collectives poll), per open, against 0.1-0.2 ms for this. The
 * memory-model duty MPI_Win_sync did is done by the release / acquire
 * order of the segment's cycle counters (exchange_shm.c). */
static char *shm_segment(swarm_cio_file_t fh, size_t len) {
  struct {
    int err;
    char name[64];
  } msg;
  memset(&msg, 0, sizeof msg);
  int fd = -1, err = 0;
  if (fh->rank == 0) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    for (int tries = 0; tries < 8; tries++) {
      snprintf(msg.name, sizeof msg.name, "/swarm-cio.%d.%lx.%d", (int)getpid(),
               (unsigned long)(now.tv_sec * 1000000000L + now.tv_nsec), tries);
      fd = shm_open(msg.name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
      if (fd >= 0 || errno != EEXIST)
        break;
    }
    if (fd < 0)
      msg.err = errno ? errno : EEXIST;
    else if ((msg.err = posix_fallocate(fd, 0, (off_t)len)) != 0)
      shm_unlink(msg.name);
  }
  MPI_Request req;
  if (MPI_Ibcast(&msg, (int)sizeof msg, MPI_BYTE, 0, fh->comm, &req) !=
          MPI_SUCCESS ||
      cio_quiet_wait(&req) != MPI_SUCCESS)
    msg.err = msg.err ? msg.err : EIO;
  if (!msg.err && fh->rank != 0 &&
      (fd = shm_open(msg.name, O_RDWR | O_CLOEXEC, 0)) < 0)
    err = errno;
  char *map = NULL;
  if (!msg.err && !err) {
    map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED) {
      map = NULL;
      err = errno;
    }
  }
  if (fd >= 0)
    close(fd);
  int any = msg.err ? msg.err : err;
  cio_quiet_allreduce(MPI_IN_PLACE, &any, 1, MPI_INT, MPI_MAX, fh->comm);
  if (fh->rank == 0 && !msg.err)
    shm_unlink(msg.name); /* everyone has opened it by now */
  if (any && map) {
    munmap(map, len);
    map = NULL;
  }
  return map;
}

/* Maps the shared segment (collective) and finds every aggregator's slots
 * in it; on failure anywhere fh->shm is 0 on every rank. */
static void map_shared_slots(swarm_cio_file_t fh, size_t per_agg) {
  int naggs = fh->hints.cb_nodes;
  fh->shm_counter_bytes =
      ((size_t)naggs * (size_t)(fh->nprocs + 1) * 64 + 4095) & ~(size_t)4095;
  fh->shm_len = fh->shm_counter_bytes + per_agg * (size_t)naggs;
  fh->agg_slots = calloc((size_t)naggs, sizeof *fh->agg_slots);
  int bad = fh->agg_slots == NULL;
  cio_quiet_allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, fh->comm);
  fh->shm_map = bad ? NULL : shm_segment(fh, fh->shm_len);
  if (!fh->shm_map) { /* no shared memory: exchange by messages */
    free(fh->agg_slots);
    fh->agg_slots = NULL;
    fh->shm = 0;
    return;
  }
  for (int agg = 0; agg < naggs; agg++)
    fh->agg_slots[agg] =
        fh->shm_map + fh->shm_counter_bytes + (size_t)agg * per_agg;
}

/* Local: this aggregator's slots (in the segment, or its own memory) and
 * its I/O thread. */
static int start_aggregator(swarm_cio_file_t fh) {
  int depth = fh->hints.depth;
  fh->slots = calloc((size_t)depth, sizeof *fh->slots);
  int ok = fh->slots != NULL;
  for (int s = 0; ok && s < depth; s++)
    ok = (fh->slots[s] = fh->shm
                             ? fh->agg_slots[fh->agg_index] + s * fh->slot_size
                             : malloc((size_t)fh->slot_size)) != NULL;
  int err = ok ? cio_io_start(&fh->io, fh->fd, depth) : ENOMEM;
  if (!err)
    return MPI_SUCCESS;
  for (int s = 0; !fh->shm && fh->slots && s < depth; s++)
    free(fh->slots[s]);
  free(fh->slots);
  fh->slots = NULL;
  return cio_set_error(cio_errno_class(err),
                       "cannot set up the aggregator (%lld bytes of "
                       "buffer, I/O thread): %s",
                       (long long)fh->hints.cb_size, strerror(err));
}

int cio_agg_setup(swarm_cio_file_t fh) {
  if (fh->agg_ready)
    return fh->agg_rc;
  fh->agg_rc = MPI_SUCCESS;
  fh->agg_index = -1;
  for (int agg = 0; agg < fh->hints.cb_nodes; agg++)
    if (cio_agg_rank(fh, agg) == fh->rank)
      fh->agg_index = agg;
  /* cb_buffer_size / depth, but at most slot_max: a buffer that fits the
   * caches keeps each cycle's bytes cache-hot between the I/O thread's copy
   * and the ranks' copies, and costs fewer page faults; never more memory
   * than cb_buffer_size. */
  fh->slot_size = (fh->hints.cb_size + fh->hints.depth - 1) / fh->hints.depth;
  if (fh->slot_size > fh->hints.slot_max)
    fh->slot_size = fh->hints.slot_max;
  /* Depth 1 keeps messages: the shared cycle loop frees a slot one cycle
   * after its copies, so it needs a second slot to fill meanwhile. */
  fh->shm = fh->hints.shm && fh->one_node && fh->hints.depth >= 2;
  if (fh->shm)
    map_shared_slots(fh, (size_t)fh->slot_size * (size_t)fh->hints.depth);
  /* The collective part is done: from here a failure is local, kept in
   * agg_rc, and cio_agg_free releases what was made. */
  fh->agg_ready = 1;
  if (fh->agg_index >= 0)
    fh->agg_rc = start_aggregator(fh);
  return fh->agg_rc;
}

void cio_agg_free(swarm_cio_file_t fh) {
  if (!fh->agg_ready)
    return;
  if (fh->agg_index >= 0)
    cio_io_stop(&fh->io);
  if (fh->shm) {
    munmap(fh->shm_map, fh->shm_len);
    fh->shm_map = NULL;
    free(fh->agg_slots);
    fh->agg_slots = NULL;
    fh->shm = 0;
  } else if (fh->slots) {
    for (int s = 0; s < fh->hints.depth; s++)
      free(fh->slots[s]);
  }
  free(fh->slots);
  fh->slots = NULL;
  fh->agg_ready = 0;
}
