/*
 * exchange_msg.c — the cycles of a collective transfer when the pieces
 * travel by messages (ranks on several nodes, depth 1, or swarm_cio_shm=0).
 *
 * Per cycle c, every rank sends (write) or receives (read) one message per
 * aggregator whose window holds pieces of its own, packed in file order;
 * each aggregator receives (write) or sends (read) one message per rank
 * with pieces in its window. Both sides size the messages by walking their
 * cursors (cio_cursor_bytes), so no counts travel. The aggregator's slot
 * c % depth holds the cycle's span from its first byte:
 *   read: the span was pread into the slot `depth` cycles ahead; the
 *     aggregator waits for it, packs each rank's pieces, sends, and at once
 *     queues the read of cycle c + depth into the freed slot, so cycles
 *     c + 1 .. c + depth's reads overlap this exchange;
 *   write: the aggregator receives, waits for the slot (its last pwrite,
 *     and the pre-read of a span with holes), lays the pieces over it and
 *     queues one pwrite of the span, then queues the pre-read of cycle
 *     c + depth behind it.
 *
 * Invariants: the caller touches slot s only after cio_io_wait_slot(s); an
 * op queued on a slot runs after the ops queued on it before (the I/O
 * thread's FIFO), so a pre-read never overtakes the pwrite that last used
 * its slot; every message of a cycle completes (MPI_Waitall) before the
 * next cycle reuses the exchange buffers; between two ranks the messages of
 * one cycle are one in each direction at most, all with one tag, and
 * matched in cycle order (MPI's non-overtaking rule).
 */
#include <string.h>

#include "plan.h"

#define CIO_TAG 7411

/* MPI_Waitall without statuses. GCC 12 reads MPICH's access attributes on
 * MPI_Waitall as if MPI_STATUSES_IGNORE were an array of nreq statuses and
 * warns (-Wstringop-overflow); it is MPI's documented sentinel. */
static int wait_all(int nreq, MPI_Request *req) {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpragmas"
#pragma GCC diagnostic ignored "-Wstringop-overflow"
  return MPI_Waitall(nreq, req, MPI_STATUSES_IGNORE);
#pragma GCC diagnostic pop
}

/* Aggregator: queues the read of cycle's span into its slot, if it needs
 * one (a read, or a write with holes). */
static void queue_read(swarm_cio_file_t fh, const cio_plan_t *plan,
                       int64_t cycle) {
  if (cycle >= plan->ncycles || !cio_span_needs_read(plan, cycle))
    return;
  int slot = (int)(cycle % fh->hints.depth);
  cio_io_submit(&fh->io, CIO_OP_READ, slot, fh->slots[slot],
                plan->span_lo[cycle],
                plan->span_hi[cycle] - plan->span_lo[cycle]);
}

/* This rank's side: one message per aggregator holding pieces of ours in
 * this cycle, packed from the stream and sent (write) or posted to be
 * received (read). Returns the requests posted. */
static int post_rank_side(swarm_cio_file_t fh, cio_plan_t *plan, char *stream,
                          int64_t cycle) {
  int nreq = 0;
  int64_t at = 0, off, len, pos;
  for (int agg = 0; agg < fh->hints.cb_nodes; agg++) {
    int64_t window_end = cio_window_end(plan, agg, cycle);
    int64_t bytes = cio_cursor_bytes(plan->agg_cursor[agg], window_end);
    if (bytes == 0)
      continue;
    char *msg = plan->rank_buf + at;
    if (plan->is_write) {
      char *to = msg;
      while (cio_cursor_next(&plan->agg_cursor[agg], window_end, &off, &len,
                             &pos)) {
        memcpy(to, stream + pos, (size_t)len);
        to += len;
      }
      MPI_Isend(msg, (int)bytes, MPI_BYTE, cio_agg_rank(fh, agg), CIO_TAG,
                fh->comm, &plan->requests[nreq++]);
    } else {
      MPI_Irecv(msg, (int)bytes, MPI_BYTE, cio_agg_rank(fh, agg), CIO_TAG,
                fh->comm, &plan->requests[nreq++]);
    }
    at += bytes;
  }
  return nreq;
}

/* The aggregator's side: one message per rank with pieces in its window —
 * posted to be received (write), or packed from the slot once its read is
 * done and sent (read; the cursors stay put until finish_agg_side). Adds
 * to the nreq requests already posted; returns the new count. */
static int post_agg_side(swarm_cio_file_t fh, cio_plan_t *plan, int64_t cycle,
                         int nreq) {
  int slot = (int)(cycle % fh->hints.depth);
  int64_t span_lo = plan->span_lo[cycle], at = 0, off, len;
  int64_t window_end = cio_window_end(plan, fh->agg_index, cycle);
  if (!plan->is_write)
    cio_io_wait_slot(&fh->io, slot);
  for (int rank = 0; rank < fh->nprocs; rank++) {
    int64_t bytes = cio_cursor_bytes(plan->rank_cursor[rank], window_end);
    if (bytes == 0)
      continue;
    char *msg = plan->agg_buf + at;
    if (plan->is_write) {
      MPI_Irecv(msg, (int)bytes, MPI_BYTE, rank, CIO_TAG, fh->comm,
                &plan->requests[nreq++]);
    } else {
      char *to = msg;
      cio_cursor_t peek = plan->rank_cursor[rank];
      while (cio_cursor_next(&peek, window_end, &off, &len, NULL)) {
        memcpy(to, fh->slots[slot] + (off - span_lo), (size_t)len);
        to += len;
      }
      MPI_Isend(msg, (int)bytes, MPI_BYTE, rank, CIO_TAG, fh->comm,
                &plan->requests[nreq++]);
    }
    at += bytes;
  }
  return nreq;
}

/* Read: this rank's pieces from the messages into the stream. */
static void unpack_rank_side(swarm_cio_file_t fh, cio_plan_t *plan,
                             char *stream, int64_t cycle) {
  int64_t at = 0, off, len, pos;
  for (int agg = 0; agg < fh->hints.cb_nodes; agg++) {
    int64_t window_end = cio_window_end(plan, agg, cycle);
    while (
        cio_cursor_next(&plan->agg_cursor[agg], window_end, &off, &len, &pos)) {
      memcpy(stream + pos, plan->rank_buf + at, (size_t)len);
      at += len;
    }
  }
}

/* The aggregator's side once the messages are in: write — lay the
 * received pieces over the slot and queue the pwrite of the span; read —
 * move the cursors past this window. */
static void finish_agg_side(swarm_cio_file_t fh, cio_plan_t *plan,
                            int64_t cycle) {
  int slot = (int)(cycle % fh->hints.depth);
  int64_t span_lo = plan->span_lo[cycle], span_hi = plan->span_hi[cycle];
  int64_t window_end = cio_window_end(plan, fh->agg_index, cycle);
  int64_t at = 0, off, len;
  if (!plan->is_write) {
    for (int rank = 0; rank < fh->nprocs; rank++)
      while (cio_cursor_next(&plan->rank_cursor[rank], window_end, &off, &len,
                             NULL))
        ;
    return;
  }
  cio_io_wait_slot(&fh->io, slot);
  for (int rank = 0; rank < fh->nprocs; rank++)
    while (cio_cursor_next(&plan->rank_cursor[rank], window_end, &off, &len,
                           NULL)) {
      memcpy(fh->slots[slot] + (off - span_lo), plan->agg_buf + at,
             (size_t)len);
      at += len;
    }
  cio_io_submit(&fh->io, CIO_OP_WRITE, slot, fh->slots[slot], span_lo,
                span_hi - span_lo);
}

int cio_exchange_by_messages(swarm_cio_file_t fh, cio_plan_t *plan,
                             char *stream) {
  int depth = fh->hints.depth, is_aggregator = fh->agg_index >= 0;
  int rc = MPI_SUCCESS;
  for (int64_t cycle = 0; is_aggregator && cycle < depth; cycle++)
    queue_read(fh, plan, cycle);
  for (int64_t cycle = 0; cycle < plan->ncycles; cycle++) {
    int has_span = is_aggregator && cio_span_nonempty(plan, cycle);
    int nreq = post_rank_side(fh, plan, stream, cycle);
    if (has_span)
      nreq = post_agg_side(fh, plan, cycle, nreq);
    /* read: the slot is packed, so its next read can start now */
    if (is_aggregator && !plan->is_write)
      queue_read(fh, plan, cycle + depth);
    if (wait_all(nreq, plan->requests) != MPI_SUCCESS && rc == MPI_SUCCESS)
      rc = cio_set_error(MPI_ERR_OTHER,
                         "an exchange message failed in cycle %lld",
                         (long long)cycle);
    if (!plan->is_write) /* a write's cursors moved while packing */
      unpack_rank_side(fh, plan, stream, cycle);
    if (has_span)
      finish_agg_side(fh, plan, cycle);
    /* write: the pre-read of the slot's next span, behind its pwrite */
    if (is_aggregator && plan->is_write)
      queue_read(fh, plan, cycle + depth);
  }
  return rc;
}
