/*
 * plan.c — planning one collective transfer (plan.h has the terms): which
 * bytes every rank accesses, how the range is cut into file domains, which
 * pieces each aggregator receives, and what each of its cycles reads or
 * writes.
 *
 * Three stages, each ending in a collective every rank reaches:
 *   1. range: each rank's access list (the file blocks its view maps its
 *      next N stream bytes to, in stream order = file order), and one
 *      allgather of (error, first byte, end), so the ranks agree on
 *      failure before any data moves and learn [gmin, gmax);
 *   2. domains: [gmin, gmax) cut into cb_nodes equal domains; each rank
 *      splits its blocks at domain edges and sends each aggregator its
 *      (offset, length) pairs (alltoall of counts, alltoallv of pairs);
 *   3. cycles: each aggregator derives, per cycle, the span its ranks touch
 *      and how much of it they cover (holes mean a write must pre-read the
 *      span); with the shared segment, which spans are all its own bytes
 *      (direct) and which can scatter its own bytes straight to its stream
 *      (scatter). Then the buffers, and one agreement.
 * The sizes of every message of every cycle follow from these lists (both
 * sides walk them with cursors), so nothing is exchanged per cycle but data.
 *
 * Invariant: every failure is turned into an error class that the next
 * collective makes every rank's, and every rank runs the same collectives
 * in the same order whatever its local outcome.
 */
#include <limits.h>
#include <stdlib.h>

#include "plan.h"

/* ---- 1. the range -------------------------------------------------------- */

int cio_plan_range(swarm_cio_file_t fh, int64_t nbytes, int rc,
                   cio_list_t *access, cio_plan_t *plan) {
  if (rc == MPI_SUCCESS &&
      cio_view_access(fh, fh->position * fh->etype_size, nbytes, access))
    rc = cio_set_error(MPI_ERR_NO_MEM, "out of memory for the access list");
  const cio_block_t *last = access->n ? &access->b[access->n - 1] : NULL;
  int64_t mine[3] = {rc, access->n ? access->b[0].off : -1,
                     last ? last->off + last->len : -1};
  int64_t *all = malloc(3 * sizeof(int64_t) * (size_t)fh->nprocs);
  if (!all) /* cannot even agree without it: fall back to a reduction */
    return cio_agree(fh->comm, cio_set_error(MPI_ERR_NO_MEM, "out of memory"));
  MPI_Request req;
  if (MPI_Iallgather(mine, 3, MPI_INT64_T, all, 3, MPI_INT64_T, fh->comm,
                     &req) == MPI_SUCCESS)
    cio_quiet_wait(&req);
  int other = MPI_SUCCESS;
  int64_t gmin = INT64_MAX, gmax = -1;
  for (int rank = 0; rank < fh->nprocs; rank++) {
    const int64_t *theirs = all + 3 * rank;
    if (theirs[0] != MPI_SUCCESS && other == MPI_SUCCESS)
      other = (int)theirs[0];
    if (theirs[1] >= 0) {
      if (theirs[1] < gmin)
        gmin = theirs[1];
      if (theirs[2] > gmax)
        gmax = theirs[2];
    }
  }
  free(all);
  plan->gmin = gmin;
  plan->gmax = gmax;
  if (rc != MPI_SUCCESS)
    return rc;
  if (other != MPI_SUCCESS)
    return cio_other_rank_failed(other);
  return MPI_SUCCESS;
}

/* ---- 2. the domains ------------------------------------------------------ */

/* How many pieces this rank's blocks make once split at domain edges. */
static size_t count_pieces(const cio_plan_t *plan, const cio_list_t *access) {
  size_t npieces = 0;
  for (size_t j = 0; j < access->n; j++) {
    const cio_block_t *block = &access->b[j];
    int64_t first = (block->off - plan->gmin) / plan->domain_size;
    int64_t last =
        (block->off + block->len - 1 - plan->gmin) / plan->domain_size;
    npieces += (size_t)(last - first + 1);
  }
  return npieces;
}

/* Splits the blocks at domain edges into plan->mine (triples) and `pairs`
 * (what each aggregator is sent), and counts them per aggregator into
 * plan->mine_first (then prefix-summed). */
static void split_by_domain(cio_plan_t *plan, const cio_list_t *access,
                            int64_t *pairs, int naggs) {
  size_t piece = 0;
  int64_t pos = 0;
  for (size_t j = 0; j < access->n; j++) {
    int64_t off = access->b[j].off, end = off + access->b[j].len;
    while (off < end) {
      int64_t agg = (off - plan->gmin) / plan->domain_size;
      int64_t domain_end = plan->gmin + (agg + 1) * plan->domain_size;
      int64_t piece_end = end < domain_end ? end : domain_end;
      plan->mine[3 * piece] = off;
      plan->mine[3 * piece + 1] = piece_end - off;
      plan->mine[3 * piece + 2] = pos;
      pairs[2 * piece] = off;
      pairs[2 * piece + 1] = piece_end - off;
      plan->mine_first[agg + 1]++;
      pos += piece_end - off;
      off = piece_end;
      piece++;
    }
  }
  for (int agg = 0; agg < naggs; agg++)
    plan->mine_first[agg + 1] += plan->mine_first[agg];
}

/* Each aggregator learns every rank's pairs in its domain: an alltoall of
 * the counts, then an alltoallv of the pairs (collective; the counts are
 * agreed before the pairs move). */
static int trade_pieces(swarm_cio_file_t fh, cio_plan_t *plan,
                        const int64_t *pairs, const int *send_count,
                        const int *send_displ) {
  MPI_Request req;
  if (MPI_Ialltoall(send_count, 1, MPI_INT, plan->others_count, 1, MPI_INT,
                    fh->comm, &req) == MPI_SUCCESS)
    cio_quiet_wait(&req);
  int64_t total = 0;
  for (int rank = 0; rank < fh->nprocs; rank++) {
    plan->others_displ[rank] = (int)total;
    total += plan->others_count[rank];
  }
  int rc = MPI_SUCCESS;
  if (total > INT_MAX)
    rc = cio_set_error(MPI_ERR_COUNT, "too many blocks for one aggregator");
  else if (!(plan->others = malloc(((size_t)total + 1) * sizeof(int64_t))))
    rc = cio_set_error(MPI_ERR_NO_MEM, "out of memory for block lists");
  rc = cio_agree(fh->comm, rc);
  if (rc == MPI_SUCCESS &&
      MPI_Ialltoallv(pairs, send_count, send_displ, MPI_INT64_T, plan->others,
                     plan->others_count, plan->others_displ, MPI_INT64_T,
                     fh->comm, &req) == MPI_SUCCESS)
    cio_quiet_wait(&req);
  return rc;
}

int cio_plan_domains(swarm_cio_file_t fh, cio_plan_t *plan, cio_list_t *access,
                     int agg_rc) {
  int nprocs = fh->nprocs, naggs = fh->hints.cb_nodes;
  plan->domain_size = (plan->gmax - plan->gmin + naggs - 1) / naggs;
  plan->slot_size = fh->slot_size;
  plan->ncycles = (plan->domain_size + plan->slot_size - 1) / plan->slot_size;
  size_t npieces = count_pieces(plan, access);
  plan->mine = malloc((npieces + 1) * 3 * sizeof(int64_t));
  plan->mine_first = calloc((size_t)naggs + 1, sizeof *plan->mine_first);
  plan->others_count = calloc((size_t)nprocs, sizeof(int));
  plan->others_displ = calloc((size_t)nprocs, sizeof(int));
  int *send_count = calloc((size_t)nprocs, sizeof(int));
  int *send_displ = calloc((size_t)nprocs, sizeof(int));
  int64_t *pairs = malloc((npieces + 1) * 2 * sizeof(int64_t));
  plan->agg_cursor = calloc((size_t)naggs, sizeof *plan->agg_cursor);
  plan->rank_cursor = calloc((size_t)nprocs, sizeof *plan->rank_cursor);
  plan->requests = calloc(2 * (size_t)nprocs + 2, sizeof *plan->requests);
  int rc =
      (plan->mine && plan->mine_first && plan->others_count &&
       plan->others_displ && send_count && send_displ && pairs &&
       plan->agg_cursor && plan->rank_cursor && plan->requests)
          ? MPI_SUCCESS
          : cio_set_error(MPI_ERR_NO_MEM, "out of memory planning the I/O");
  if (rc == MPI_SUCCESS && 2 * npieces > INT_MAX)
    rc = cio_set_error(MPI_ERR_COUNT,
                       "the view splits into too many blocks "
                       "(%zu)",
                       npieces);
  if (rc == MPI_SUCCESS) {
    split_by_domain(plan, access, pairs, naggs);
    for (int agg = 0; agg < naggs; agg++) {
      int rank = cio_agg_rank(fh, agg);
      send_count[rank] =
          (int)(2 * (plan->mine_first[agg + 1] - plan->mine_first[agg]));
      send_displ[rank] = (int)(2 * plan->mine_first[agg]);
    }
  }
  cio_list_free(access);
  if (rc == MPI_SUCCESS)
    rc = agg_rc;
  rc = cio_agree(fh->comm, rc);
  if (rc == MPI_SUCCESS)
    rc = trade_pieces(fh, plan, pairs, send_count, send_displ);
  free(send_count);
  free(send_displ);
  free(pairs);
  return rc;
}

/* ---- 3. the cycles ------------------------------------------------------- */

/* Aggregator: per cycle, the span every rank's pieces touch and the bytes
 * they cover. */
static int plan_spans(swarm_cio_file_t fh, cio_plan_t *plan) {
  int64_t domain_lo = cio_domain_lo(plan, fh->agg_index);
  size_t ncycles = (size_t)plan->ncycles;
  plan->span_lo = malloc((ncycles + 1) * sizeof(int64_t));
  plan->span_hi = malloc((ncycles + 1) * sizeof(int64_t));
  plan->cover = calloc(ncycles + 1, sizeof(int64_t));
  if (!plan->span_lo || !plan->span_hi || !plan->cover)
    return cio_set_error(MPI_ERR_NO_MEM, "out of memory for the cycle plan");
  for (int64_t cycle = 0; cycle < plan->ncycles; cycle++) {
    plan->span_lo[cycle] = INT64_MAX;
    plan->span_hi[cycle] = -1;
  }
  for (int rank = 0; rank < fh->nprocs; rank++) {
    const int64_t *pairs = plan->others + plan->others_displ[rank];
    for (int j = 0; j < plan->others_count[rank] / 2; j++) {
      int64_t off = pairs[2 * j], end = off + pairs[2 * j + 1];
      while (off < end) { /* one step per window the piece reaches */
        int64_t cycle = (off - domain_lo) / plan->slot_size;
        int64_t window_end = domain_lo + (cycle + 1) * plan->slot_size;
        int64_t piece_end = end < window_end ? end : window_end;
        if (off < plan->span_lo[cycle])
          plan->span_lo[cycle] = off;
        if (piece_end > plan->span_hi[cycle])
          plan->span_hi[cycle] = piece_end;
        plan->cover[cycle] += piece_end - off;
        off = piece_end;
      }
    }
  }
  return MPI_SUCCESS;
}

/* Aggregator, shared segment: per cycle, own_bytes and own_pieces of its
 * own pieces, and direct[c] = where the cycle's first own byte sits in its
 * stream (-1 if none). */
static void count_own_pieces(swarm_cio_file_t fh, cio_plan_t *plan,
                             int64_t *own_bytes, int64_t *own_pieces) {
  int64_t domain_lo = cio_domain_lo(plan, fh->agg_index);
  const int64_t *own = plan->mine + 3 * plan->mine_first[fh->agg_index];
  size_t nown =
      plan->mine_first[fh->agg_index + 1] - plan->mine_first[fh->agg_index];
  for (int64_t cycle = 0; cycle < plan->ncycles; cycle++)
    plan->direct[cycle] = -1;
  for (size_t j = 0; j < nown; j++) {
    int64_t off = own[3 * j], end = off + own[3 * j + 1];
    while (off < end) {
      int64_t cycle = (off - domain_lo) / plan->slot_size;
      int64_t window_end = domain_lo + (cycle + 1) * plan->slot_size;
      int64_t piece_end = end < window_end ? end : window_end;
      if (own_bytes[cycle] == 0)
        plan->direct[cycle] = own[3 * j + 2] + (off - own[3 * j]);
      own_bytes[cycle] += piece_end - off;
      own_pieces[cycle]++;
      off = piece_end;
    }
  }
}

/* A cycle where another rank's piece overlaps one of the aggregator's own
 * (ranks may read the same bytes) must keep the aggregator's bytes in the
 * slot too: marked by own_bytes[c] = 0. Both lists are sorted, so one merge
 * per rank. */
static void drop_overlapped_cycles(swarm_cio_file_t fh, cio_plan_t *plan,
                                   int64_t *own_bytes) {
  int64_t domain_lo = cio_domain_lo(plan, fh->agg_index);
  int64_t slot_size = plan->slot_size;
  const int64_t *own = plan->mine + 3 * plan->mine_first[fh->agg_index];
  size_t nown =
      plan->mine_first[fh->agg_index + 1] - plan->mine_first[fh->agg_index];
  for (int rank = 0; rank < fh->nprocs; rank++) {
    if (rank == fh->rank)
      continue;
    const int64_t *theirs = plan->others + plan->others_displ[rank];
    size_t ntheirs = (size_t)plan->others_count[rank] / 2, j = 0, k = 0;
    while (j < nown && k < ntheirs) {
      int64_t own_lo = own[3 * j], own_end = own_lo + own[3 * j + 1];
      int64_t their_lo = theirs[2 * k],
              their_end = their_lo + theirs[2 * k + 1];
      int64_t both_lo = own_lo > their_lo ? own_lo : their_lo;
      int64_t both_end = own_end < their_end ? own_end : their_end;
      for (int64_t cycle = (both_lo - domain_lo) / slot_size;
           both_lo < both_end &&
           cycle <= (both_end - 1 - domain_lo) / slot_size;
           cycle++)
        own_bytes[cycle] = 0;
      if (own_end <= their_end)
        j++;
      else
        k++;
    }
  }
}

/* Aggregator, shared segment: which cycles go straight between file and
 * stream (direct) and which scatter the aggregator's own pieces (scatter),
 * and the iovecs the latter need. */
static int plan_direct_io(swarm_cio_file_t fh, cio_plan_t *plan) {
  size_t ncycles = (size_t)plan->ncycles;
  plan->direct = malloc((ncycles + 1) * sizeof(int64_t));
  plan->scatter = plan->direct ? calloc(ncycles + 1, 1) : NULL;
  int64_t *own_bytes = calloc(ncycles + 1, sizeof(int64_t));
  int64_t *own_pieces = calloc(ncycles + 1, sizeof(int64_t));
  int64_t most = 0;
  if (!plan->scatter || !own_bytes || !own_pieces) {
    free(own_bytes);
    free(own_pieces);
    return cio_set_error(MPI_ERR_NO_MEM, "out of memory for the cycle plan");
  }
  count_own_pieces(fh, plan, own_bytes, own_pieces);
  drop_overlapped_cycles(fh, plan, own_bytes);
  for (int64_t cycle = 0; cycle < plan->ncycles; cycle++) {
    int nonempty = cio_span_nonempty(plan, cycle);
    /* All the span's bytes are this rank's own, and no other rank's (ranks
     * may read the same bytes): those bytes are consecutive in its stream
     * too (the view is monotonic and nobody else's bytes lie between), so
     * the span maps to one stream range. */
    if (!nonempty ||
        own_bytes[cycle] != plan->span_hi[cycle] - plan->span_lo[cycle] ||
        plan->cover[cycle] != own_bytes[cycle])
      plan->direct[cycle] = -1;
    /* own pieces and the gaps around them: at most 2 * own_pieces + 1 */
    if (nonempty && plan->direct[cycle] < 0 && own_bytes[cycle] > 0 &&
        2 * own_pieces[cycle] + 1 <= CIO_IOV_MAX) {
      plan->scatter[cycle] = 1;
      if (2 * own_pieces[cycle] + 1 > most)
        most = 2 * own_pieces[cycle] + 1;
    }
  }
  free(own_bytes);
  free(own_pieces);
  plan->iov_per_slot = (int)most;
  if (most > 0 && !(plan->iov = malloc((size_t)fh->hints.depth * (size_t)most *
                                       sizeof *plan->iov)))
    return cio_set_error(MPI_ERR_NO_MEM, "out of memory for the cycle plan");
  return MPI_SUCCESS;
}

/* Messages only: the exchange buffers, sized for the largest cycle. This
 * rank's side holds at most one window per aggregator of its own
 * (non-overlapping) pieces; the aggregator's side holds a cycle's pieces of
 * every rank. The shared segment needs none: ranks copy to and from the
 * slots. */
static int plan_buffers(swarm_cio_file_t fh, cio_plan_t *plan, int64_t nbytes) {
  int64_t all_windows = (int64_t)fh->hints.cb_nodes * plan->slot_size;
  int64_t rank_bytes = all_windows < nbytes ? all_windows : nbytes;
  int64_t agg_bytes = 0;
  for (int64_t cycle = 0; fh->agg_index >= 0 && cycle < plan->ncycles; cycle++)
    if (plan->cover[cycle] > agg_bytes)
      agg_bytes = plan->cover[cycle];
  if (fh->shm)
    rank_bytes = agg_bytes = 0;
  if ((rank_bytes > 0 && !(plan->rank_buf = malloc((size_t)rank_bytes))) ||
      (agg_bytes > 0 && !(plan->agg_buf = malloc((size_t)agg_bytes))))
    return cio_set_error(MPI_ERR_NO_MEM, "out of memory for exchange buffers");
  return MPI_SUCCESS;
}

int cio_plan_cycles(swarm_cio_file_t fh, cio_plan_t *plan, int64_t nbytes) {
  int rc = MPI_SUCCESS;
  if (fh->agg_index >= 0) {
    rc = plan_spans(fh, plan);
    if (rc == MPI_SUCCESS && fh->shm)
      rc = plan_direct_io(fh, plan);
  }
  if (rc == MPI_SUCCESS)
    rc = plan_buffers(fh, plan, nbytes);
  rc = cio_agree(fh->comm, rc);
  if (rc != MPI_SUCCESS)
    return rc;
  for (int rank = 0; rank < fh->nprocs; rank++)
    cio_cursor_init(&plan->rank_cursor[rank],
                    plan->others + plan->others_displ[rank], 2,
                    (size_t)plan->others_count[rank] / 2);
  for (int agg = 0; agg < fh->hints.cb_nodes; agg++)
    cio_cursor_init(&plan->agg_cursor[agg],
                    plan->mine + 3 * plan->mine_first[agg], 3,
                    plan->mine_first[agg + 1] - plan->mine_first[agg]);
  if (fh->agg_index >= 0)
    plan->iov_cursor = plan->agg_cursor[fh->agg_index];
  return MPI_SUCCESS;
}

void cio_plan_free(cio_plan_t *plan) {
  free(plan->mine);
  free(plan->mine_first);
  free(plan->others);
  free(plan->others_count);
  free(plan->others_displ);
  free(plan->span_lo);
  free(plan->span_hi);
  free(plan->cover);
  free(plan->direct);
  free(plan->scatter);
  free(plan->iov);
  free(plan->rank_cursor);
  free(plan->agg_cursor);
  free(plan->rank_buf);
  free(plan->agg_buf);
  free(plan->requests);
}
