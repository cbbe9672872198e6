/*
 * dist/evac.c — the evacuation heap: slots in this rank's window that hold
 * the frames of suspended threads (seed 004's RDMA region), in power-of-two
 * size classes with a free list each and a bump offset.
 *
 * Invariants: a slot is on at most one free list (h.freed == 2) and in the
 * pending list at most once (in_pending); a slot resumed by another rank is
 * freed by that rank's MPI_Put of h.freed = 1 and comes back to a free list
 * only through evac_reclaim, on this rank, so the lists have one writer.
 */
#include "dist_internal.h"

#include <stdlib.h>
#include <string.h>

static int evac_class(size_t n) {
  int c = 8;
  while (((size_t)1 << c) < n)
    c++;
  return c;
}

void swarm_dist_evac_free_local(uint64_t off) {
  dist_evac_slot_t *s = swarm_dist_evac_at(off);
  s->h.freed = 2; /* on a free list */
  s->next = dist->evac_free[s->cls];
  dist->evac_free[s->cls] = off;
}

/* Slots resumed by another rank come back here (their `freed` word was set
 * by that rank's MPI_Put). */
static void evac_reclaim(void) {
  size_t k = 0;
  for (size_t i = 0; i < dist->n_pending; i++) {
    uint64_t off = dist->evac_pending[i];
    dist_evac_slot_t *s = swarm_dist_evac_at(off);
    uint64_t f = vload(&s->h.freed);
    if (f == 0) {
      dist->evac_pending[k++] = off;
      continue;
    }
    s->in_pending = 0;
    if (f == 1)
      swarm_dist_evac_free_local(off);
  }
  dist->n_pending = k;
}

uint64_t swarm_dist_evac_alloc(size_t n) {
  int c = evac_class(n + sizeof(dist_evac_slot_t));
  if (c >= DIST_EVAC_CLASSES)
    swarm_dist_fatal("evacuating %zu bytes of stack", n);
  uint64_t off = dist->evac_free[c];
  if (!off) {
    evac_reclaim();
    off = dist->evac_free[c];
  }
  if (off) {
    dist->evac_free[c] = swarm_dist_evac_at(off)->next;
  } else {
    if (dist->evac_bump + ((size_t)1 << c) > dist->evac_size)
      swarm_dist_fatal("rank %d: SWARM_DIST_HEAP (%zu bytes) full of "
                       "suspended threads",
                       dist->rank, dist->evac_size);
    off = dist->off_evac + dist->evac_bump;
    dist->evac_bump += (size_t)1 << c;
    swarm_dist_evac_at(off)->in_pending = 0;
  }
  dist_evac_slot_t *s = swarm_dist_evac_at(off);
  s->cls = (uint64_t)c;
  s->h.freed = 0;
  if (!s->in_pending) {
    if (dist->n_pending == dist->cap_pending) {
      dist->cap_pending = dist->cap_pending ? 2 * dist->cap_pending : 256;
      dist->evac_pending = realloc(
          dist->evac_pending, dist->cap_pending * sizeof *dist->evac_pending);
      if (!dist->evac_pending)
        swarm_dist_fatal("out of memory");
    }
    dist->evac_pending[dist->n_pending++] = off;
    s->in_pending = 1;
  }
  return off;
}

/* Forgets every slot (a new run: swarm_dist_sched_reset). */
void swarm_dist_evac_reset(void) {
  memset(dist->evac_free, 0, sizeof dist->evac_free);
  dist->evac_bump = 0;
  dist->n_pending = 0;
}
