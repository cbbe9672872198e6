/*
 * plan.h — the plan of one collective transfer (plan.c makes it; the two
 * exchanges, exchange_msg.c and exchange_shm.c, carry it out), and the
 * cursors both sides walk their block lists with. Not installed.
 *
 * Terms. The accessed range [gmin, gmax) is cut into cb_nodes equal file
 * domains, aggregator i owning [domain_lo(i), domain_lo(i + 1)). Cycle c
 * covers, in every domain, the window [domain_lo(i) + c * S, + S) clipped
 * to the domain, S = the slot size; every domain has ncycles windows, and
 * cycle c of aggregator i uses its slot c % depth. A piece is a part of a
 * rank's access that lies in one domain; within a cycle it is cut again at
 * the window's edges by the cursors. The span of a cycle is the part of
 * its window that some rank's pieces touch: the aggregator reads or writes
 * only the span.
 *
 * Invariants: every list is sorted by file offset (views are monotonic, and
 * pieces never overlap within one rank); the plan is equal in shape on
 * every rank (same ncycles, same domains); all its buffers are made before
 * the cycles start, so the exchange cannot fail half way for want of memory.
 */
#ifndef SWARM_CIO_PLAN_H
#define SWARM_CIO_PLAN_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "cio_internal.h"

/* Walks a sorted list of blocks (stride 2: offset, length; stride 3:
 * offset, length, stream position) window by window. */
typedef struct cio_cursor {
  const int64_t *blocks;
  int stride;
  size_t count, index;
  int64_t next; /* next unconsumed file byte */
} cio_cursor_t;

static inline void cio_cursor_init(cio_cursor_t *cursor, const int64_t *blocks,
                                   int stride, size_t count) {
  cursor->blocks = blocks;
  cursor->stride = stride;
  cursor->count = count;
  cursor->index = 0;
  cursor->next = count ? blocks[0] : 0;
}

/* The next piece below `window_end`: 1 with *off, *len and (if pos is not
 * NULL) the stream position *pos set, or 0. */
static inline int cio_cursor_next(cio_cursor_t *cursor, int64_t window_end,
                                  int64_t *off, int64_t *len, int64_t *pos) {
  while (cursor->index < cursor->count) {
    const int64_t *block = cursor->blocks + cursor->index * cursor->stride;
    if (cursor->next < block[0])
      cursor->next = block[0];
    if (cursor->next >= block[0] + block[1]) {
      cursor->index++;
      continue;
    }
    if (cursor->next >= window_end)
      return 0;
    int64_t end =
        block[0] + block[1] < window_end ? block[0] + block[1] : window_end;
    *off = cursor->next;
    *len = end - cursor->next;
    if (pos)
      *pos = cursor->stride == 3 ? block[2] + (cursor->next - block[0]) : 0;
    cursor->next = end;
    return 1;
  }
  return 0;
}

/* The bytes of the pieces below `window_end`; takes the cursor by value, so
 * it only peeks. */
static inline int64_t cio_cursor_bytes(cio_cursor_t cursor,
                                       int64_t window_end) {
  int64_t off, len, total = 0;
  while (cio_cursor_next(&cursor, window_end, &off, &len, NULL))
    total += len;
  return total;
}

typedef struct cio_plan {
  int is_write;
  int64_t gmin, gmax;  /* every rank's accesses lie in [gmin, gmax) */
  int64_t domain_size; /* bytes of one file domain */
  int64_t slot_size;   /* S: bytes of one cycle's window */
  int64_t ncycles;     /* windows per domain */
  /* This rank's pieces: (offset, length, stream position) triples, those
   * in aggregator i's domain at [mine_first[i], mine_first[i + 1]). */
  int64_t *mine;
  size_t *mine_first;
  /* Aggregator: every rank's pieces in its domain, (offset, length) pairs,
   * rank r's others_count[r] int64s from others[others_displ[r]]. */
  int64_t *others;
  int *others_count, *others_displ;
  /* Aggregator, per cycle: the span [span_lo, span_hi) (empty:
   * span_hi <= span_lo), and the bytes the pieces cover: the span's length
   * when they leave no holes, more when ranks read the same bytes. */
  int64_t *span_lo, *span_hi, *cover;
  /* Shared segment only: direct[c] is where cycle c's span starts in the
   * aggregator's own stream when every byte of the span is its own (then
   * its I/O goes straight between file and stream, no slot, no copy), else
   * -1. */
  int64_t *direct;
  /* Shared segment only: scatter[c] = 1 when cycle c's span holds other
   * ranks' bytes too, but no other rank's piece overlaps the aggregator's
   * own, and it splits into at most iov_per_slot iovecs: then the I/O
   * thread's one preadv (read) or pwritev (write) of the span moves the
   * aggregator's own pieces straight between file and stream, and only the
   * other pieces pass through the slot. iov holds iov_per_slot iovecs per
   * slot; iov_cursor walks the aggregator's own pieces as the ops are
   * queued (cycle order, ahead of the copies' cursor). */
  unsigned char *scatter;
  struct iovec *iov;
  int iov_per_slot;
  cio_cursor_t iov_cursor;
  cio_cursor_t *rank_cursor; /* aggregator: per rank, through `others` */
  cio_cursor_t *agg_cursor;  /* per aggregator, through `mine` */
  /* Messages only: this rank's pieces of one cycle, packed (write) or as
   * received (read), and the aggregator's side of the same. */
  char *rank_buf, *agg_buf;
  MPI_Request *requests;
} cio_plan_t;

/* Where aggregator agg's domain starts (agg == cb_nodes: where the last
 * one ends). */
static inline int64_t cio_domain_lo(const cio_plan_t *plan, int agg) {
  int64_t lo = plan->gmin + agg * plan->domain_size;
  return lo < plan->gmax ? lo : plan->gmax;
}

/* Where aggregator agg's window of `cycle` starts, and ends (clipped to the
 * domain). */
static inline int64_t cio_window_lo(const cio_plan_t *plan, int agg,
                                    int64_t cycle) {
  return cio_domain_lo(plan, agg) + cycle * plan->slot_size;
}

static inline int64_t cio_window_end(const cio_plan_t *plan, int agg,
                                     int64_t cycle) {
  int64_t end = cio_window_lo(plan, agg, cycle) + plan->slot_size;
  int64_t domain_end = cio_domain_lo(plan, agg + 1);
  return end < domain_end ? end : domain_end;
}

/* Aggregator side: some rank touches cycle c's window. */
static inline int cio_span_nonempty(const cio_plan_t *plan, int64_t cycle) {
  return plan->span_hi[cycle] > plan->span_lo[cycle];
}

/* Aggregator side: cycle c's span must be read into the slot first (a
 * read, or a write whose pieces leave holes). */
static inline int cio_span_needs_read(const cio_plan_t *plan, int64_t cycle) {
  return cio_span_nonempty(plan, cycle) &&
         (!plan->is_write ||
          plan->cover[cycle] != plan->span_hi[cycle] - plan->span_lo[cycle]);
}

/* The stages of planning (plan.c), in the order every rank runs them; each
 * returns an error class agreed between the ranks (the first one: equal on
 * every rank through its allgather). */

/* 1. This rank's access list for stream bytes [0, nbytes) from the file
 * pointer, and the accessed range of every rank (plan->gmin, gmax; gmax < 0
 * when nobody accesses anything). `rc` is the caller's outcome so far. */
int cio_plan_range(swarm_cio_file_t fh, int64_t nbytes, int rc,
                   cio_list_t *access, cio_plan_t *plan);
/* 2. The file domains, and each aggregator learns every rank's pieces in
 * its domain. Frees *access. `agg_rc` is cio_agg_setup's local outcome. */
int cio_plan_domains(swarm_cio_file_t fh, cio_plan_t *plan, cio_list_t *access,
                     int agg_rc);
/* 3. The aggregator's per-cycle spans (and, with the shared segment, which
 * cycles bypass the slot), the exchange buffers, and the cursors. */
int cio_plan_cycles(swarm_cio_file_t fh, cio_plan_t *plan, int64_t nbytes);
void cio_plan_free(cio_plan_t *plan);

/* The cycles: this rank's stream moves to (write) or from (read) the file
 * by messages (exchange_msg.c), or through the shared segment
 * (exchange_shm.c). Every op queued on the I/O thread is waited for by
 * the caller's cio_io_drain. Return an error class (local). */
int cio_exchange_by_messages(swarm_cio_file_t fh, cio_plan_t *plan,
                             char *stream);
int cio_exchange_by_shm(swarm_cio_file_t fh, cio_plan_t *plan, char *stream);

#endif
