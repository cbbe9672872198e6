/*
 * exchange_shm.c — the cycles of a collective transfer when every rank can
 * address every aggregator's slots (the shared segment, aggregator.c). The
 * exchange is then each rank copying its own pieces straight between its
 * stream and the aggregators' slots: one memcpy per byte, done by all ranks
 * in parallel, instead of pack + message + unpack on the aggregator's
 * critical path.
 *
 * Layout: file byte x of aggregator i's cycle c lives at
 * agg_slots[i] + (c % depth) * S + (x - window_lo(i, c)), so every rank
 * finds its pieces without asking; the I/O thread preads / pwrites just the
 * span [span_lo, span_hi) of the window at that place.
 *
 * Two counters per aggregator and cycle order everything, with no barrier:
 * a rank waits only for the aggregators whose slots it uses, and only the
 * aggregator waits for the ranks. In cycle c each aggregator waits for the
 * I/O queued on slot c % depth (read: the slot holds cycle c's data; write:
 * the pwrite of cycle c - depth is done and, with holes, cycle c's span has
 * been pre-read) and publishes `ready` = c + 1. A rank that has pieces in
 * aggregator i's window of cycle c waits for i's ready to reach c + 1,
 * copies, and publishes its `copied` = c + 1 for i (every rank, every
 * cycle, pieces or not). Before it queues what slot (c - 1) % depth does
 * next — write: the pwrite of cycle c - 1; then the read of cycle
 * c - 1 + depth (pre-read, for writes with holes) — the aggregator waits
 * until every rank's copied reaches c, unless nobody else used that slot in
 * cycle c - 1 (a direct span). The I/O thread thus keeps depth - 1 cycles
 * of I/O queued while the ranks copy. Writes need one more step
 * (c == ncycles) to queue the last pwrite, and depth >= 2 (cio_agg_setup
 * keeps messages for depth 1): the slot written in cycle c must not be the
 * one whose pwrite is queued only after cycle c's copies.
 *
 * The races this wins. Release stores and acquire loads of the counters
 * order the copies and the I/O thread's bytes (handed to the aggregator
 * under the I/O queue's mutex) between processes: a rank's copy out of a
 * slot happens after the aggregator's wait for the slot's read, and the
 * aggregator's next op on that slot after every rank's copy. The waits
 * cannot deadlock: each waits for an event of an earlier or the same cycle,
 * which its owner publishes before waiting for anything of a later one.
 * Counters count on across calls (fh->cycle_base), so a stale value from a
 * previous call never satisfies a wait of this one.
 *
 * A cycle whose span holds only the aggregator's own bytes (plan->direct,
 * e.g. every cycle of a contiguous pattern) needs no exchange at all: the
 * I/O thread preads / pwrites between the file and the aggregator's stream
 * and nobody copies. A span shared with other ranks (plan->scatter) still
 * moves the aggregator's own pieces that way, inside the one preadv /
 * pwritev of the span, so only the other ranks copy (one copy per byte
 * instead of two for 1/P of the bytes). The stream is the caller's buffer,
 * and every op is waited for (slot waits, then the drain) before the call
 * returns.
 */
#include <string.h>

#include "plan.h"

/* Aggregator agg's counter `line` in the segment (aggregator.c's layout):
 * line 0 is its ready, line 1 + r rank r's copied. */
static int64_t *counter(swarm_cio_file_t fh, int agg, int line) {
  return (int64_t *)(fh->shm_map +
                     ((size_t)agg * (size_t)(fh->nprocs + 1) + (size_t)line) *
                         64);
}

static int64_t *ready_counter(swarm_cio_file_t fh, int agg) {
  return counter(fh, agg, 0);
}

static int64_t *copied_counter(swarm_cio_file_t fh, int agg, int rank) {
  return counter(fh, agg, 1 + rank);
}

/* Waits until *x >= value (another process stores it, with release). */
static void wait_at_least(const int64_t *x, int64_t value) {
  for (int tries = 0; __atomic_load_n(x, __ATOMIC_ACQUIRE) < value; tries++)
    cio_pause(tries);
}

/* Aggregator: queues the I/O of cycle's span on slot cycle % depth. Direct
 * spans go straight between file and stream; scattered ones (the read of
 * a read, the pwrite of a write) split the span between the stream (the
 * aggregator's own pieces) and the slot (everything else: other ranks'
 * pieces, and the holes a pre-read filled); the rest go to the slot whole.
 * Byte x of the span sits in the slot at x - window_lo. */
static void queue_span(swarm_cio_file_t fh, cio_plan_t *plan, char *stream,
                       int kind, int64_t cycle) {
  int slot_index = (int)(cycle % fh->hints.depth);
  int64_t window_lo = cio_window_lo(plan, fh->agg_index, cycle);
  int64_t span_lo = plan->span_lo[cycle], span_hi = plan->span_hi[cycle];
  char *slot = fh->slots[slot_index];
  if (plan->direct[cycle] >= 0) {
    cio_io_submit(&fh->io, kind, slot_index, stream + plan->direct[cycle],
                  span_lo, span_hi - span_lo);
    return;
  }
  if (!plan->scatter[cycle] ||
      kind != (plan->is_write ? CIO_OP_WRITE : CIO_OP_READ)) {
    cio_io_submit(&fh->io, kind, slot_index, slot + (span_lo - window_lo),
                  span_lo, span_hi - span_lo);
    return;
  }
  struct iovec *iov =
      plan->iov + (size_t)slot_index * (size_t)plan->iov_per_slot;
  int niov = 0;
  int64_t off, len, pos, at = span_lo;
  /* skip the pieces of earlier cycles */
  while (cio_cursor_next(&plan->iov_cursor, window_lo, &off, &len, &pos))
    ;
  while (cio_cursor_next(&plan->iov_cursor, window_lo + plan->slot_size, &off,
                         &len, &pos)) {
    if (off > at)
      iov[niov++] = (struct iovec){slot + (at - window_lo), (size_t)(off - at)};
    iov[niov++] = (struct iovec){stream + pos, (size_t)len};
    at = off + len;
  }
  if (span_hi > at)
    iov[niov++] =
        (struct iovec){slot + (at - window_lo), (size_t)(span_hi - at)};
  cio_io_submitv(&fh->io, kind, slot_index, iov, niov, span_lo,
                 span_hi - span_lo);
}

/* Aggregator, in cycle `cycle` >= 1: slot (cycle - 1) % depth is free once
 * every rank that may have used it in cycle - 1 is done with it; then it
 * takes that cycle's pwrite (write) and the read of cycle - 1 + depth. */
static void reuse_slot(swarm_cio_file_t fh, cio_plan_t *plan, char *stream,
                       int64_t cycle, int64_t base) {
  int64_t previous = cycle - 1;
  if (cio_span_nonempty(plan, previous) && plan->direct[previous] < 0)
    for (int rank = 0; rank < fh->nprocs; rank++)
      wait_at_least(copied_counter(fh, fh->agg_index, rank), base + cycle);
  if (plan->is_write && cio_span_nonempty(plan, previous))
    queue_span(fh, plan, stream, CIO_OP_WRITE, previous);
  if (previous + fh->hints.depth < plan->ncycles &&
      cio_span_needs_read(plan, previous + fh->hints.depth))
    queue_span(fh, plan, stream, CIO_OP_READ, previous + fh->hints.depth);
}

/* This rank's pieces in aggregator agg's window of `cycle`: waits for the
 * slot to be ready if there are any, copies them, and publishes `copied`
 * (always, pieces or not). The aggregator's own pieces in a direct or
 * scattered span are the I/O thread's to move. */
static void copy_pieces(swarm_cio_file_t fh, cio_plan_t *plan, char *stream,
                        int agg, int64_t cycle, int64_t base) {
  int64_t window_lo = cio_window_lo(plan, agg, cycle);
  int64_t window_end = cio_window_end(plan, agg, cycle), off, len, pos;
  char *slot = fh->agg_slots[agg] + (cycle % fh->hints.depth) * plan->slot_size;
  int by_io_thread = agg == fh->agg_index &&
                     (plan->direct[cycle] >= 0 || plan->scatter[cycle]);
  cio_cursor_t peek = plan->agg_cursor[agg];
  if (!by_io_thread && cio_cursor_next(&peek, window_end, &off, &len, &pos))
    wait_at_least(ready_counter(fh, agg), base + cycle + 1);
  while (
      cio_cursor_next(&plan->agg_cursor[agg], window_end, &off, &len, &pos)) {
    if (by_io_thread)
      continue;
    if (plan->is_write)
      memcpy(slot + (off - window_lo), stream + pos, (size_t)len);
    else
      memcpy(stream + pos, slot + (off - window_lo), (size_t)len);
  }
  __atomic_store_n(copied_counter(fh, agg, fh->rank), base + cycle + 1,
                   __ATOMIC_RELEASE);
}

int cio_exchange_by_shm(swarm_cio_file_t fh, cio_plan_t *plan, char *stream) {
  int depth = fh->hints.depth, my_agg = fh->agg_index;
  int64_t ncycles = plan->ncycles, base = fh->cycle_base;
  fh->cycle_base += ncycles + 1;
  for (int64_t cycle = 0; my_agg >= 0 && cycle < ncycles && cycle < depth;
       cycle++)
    if (cio_span_needs_read(plan, cycle))
      queue_span(fh, plan, stream, CIO_OP_READ, cycle);
  for (int64_t cycle = 0; cycle < ncycles + plan->is_write; cycle++) {
    if (my_agg >= 0 && cycle < ncycles) {
      cio_io_wait_slot(&fh->io, (int)(cycle % depth));
      __atomic_store_n(ready_counter(fh, my_agg), base + cycle + 1,
                       __ATOMIC_RELEASE);
    }
    if (my_agg >= 0 && cycle >= 1)
      reuse_slot(fh, plan, stream, cycle, base);
    if (cycle == ncycles)
      break;
    for (int agg = 0; agg < fh->hints.cb_nodes; agg++)
      copy_pieces(fh, plan, stream, agg, cycle, base);
  }
  return MPI_SUCCESS;
}
