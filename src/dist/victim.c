/*
 * dist/victim.c — whom an idle rank tries to steal from: two candidates
 * (power of two choices), the more loaded by the deque sizes the ranks
 * publish in their windows; across nodes one of this node and one chosen
 * from the loads read before (HIVE's hierarchy). Moved out of sched.c
 * when that file reached its size limit; the steal itself stays there.
 *
 * Invariants: only the rank's main thread (its scheduler) calls in here,
 * so dist->rng_state and dist->load_seen have one writer; load_seen is a
 * hint (a stale value only makes a choice worse, never wrong).
 */
#include "dist_internal.h"

static uint64_t xorshift(void) {
  uint64_t x = dist->rng_state;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  return dist->rng_state = x;
}

static int random_other_rank(void) {
  int r = (int)(xorshift() % (uint64_t)(dist->nranks - 1));
  return r >= dist->rank ? r + 1 : r;
}

/* A victim on another node, guided by the loads the ranks publish (HIVE):
 * the rank with the largest deque size read so far (dist->load_seen, kept
 * fresh by every header a thief reads), starting the scan at a random rank
 * so that ties spread; a random one when none was seen loaded, and one
 * time in four anyway, so that stale zeros get read again. */
static int remote_candidate(void) {
  int n = dist->nranks, best = -1;
  if (xorshift() & 3) {
    int64_t best_load = 0;
    int start = (int)(xorshift() % (uint64_t)n);
    for (int k = 0; k < n; k++) {
      int r = start + k < n ? start + k : start + k - n;
      if (r != dist->rank && !dist->on_node[r] &&
          dist->load_seen[r] > best_load) {
        best_load = dist->load_seen[r];
        best = r;
      }
    }
  }
  if (best < 0) /* a random rank off this node (there is one: n_nodes > 1) */
    do
      best = random_other_rank();
    while (dist->on_node[best]);
  return best;
}

/* Victim choice from the loads the ranks publish in their windows (deque
 * size, one MPI_Get of the header each): the more loaded of two candidates,
 * -1 when both look empty (pending remote spawns are not stealable). On
 * one node both are random other ranks (power of two choices). Across
 * nodes (hierarchy): the first is a rank of this node when there is one,
 * and it wins ties, so work stays on the node (where a steal is cheaper)
 * unless another node has more; the second is remote_candidate(), chosen
 * by the loads read before. */
int swarm_dist_choose_victim(void) {
  if (dist->nranks < 2)
    return -1;
  int cand[2], nc = dist->nranks > 2 ? 2 : 1;
  if (dist->n_nodes > 1 && dist->n_node_peers > 0) {
    cand[0] = dist->node_peers[xorshift() % (uint64_t)dist->n_node_peers];
    cand[1] = remote_candidate(); /* nranks > 2 here */
  } else {
    cand[0] = dist->n_nodes > 1 ? remote_candidate() : random_other_rank();
    if (nc == 2)
      do
        cand[1] = random_other_rank();
      while (cand[1] == cand[0]);
  }
  uint64_t hdr[2][6];
  for (int i = 0; i < nc; i++)
    MPI_Get(hdr[i], 6, MPI_UINT64_T, cand[i], 0, 6, MPI_UINT64_T, dist->win);
  for (int i = 0; i < nc; i++)
    MPI_Win_flush(cand[i], dist->win);
  int best = -1;
  int64_t best_load = 0;
  for (int i = 0; i < nc; i++) {
    int64_t deq = (int64_t)(hdr[i][2] - hdr[i][1]); /* bottom - top */
    dist->load_seen[cand[i]] = deq;
    if (deq > best_load) {
      best_load = deq;
      best = cand[i];
    }
  }
  return best;
}
