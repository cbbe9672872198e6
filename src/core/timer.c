/*
 * core/timer.c — per-worker timer heaps, the clock under every timed wait
 * (swarm_sleep_ns, cond/mutex timed waits, poll timeouts in later layers).
 *
 * A timer lives in the binary min-heap of the worker that started it (a
 * non-worker kernel thread uses worker 0's), ordered by CLOCK_MONOTONIC
 * deadline, under that heap's spinlock: a timer may be cancelled from any
 * worker. Due timers are taken out of the heap under the lock and their
 * callbacks run outside it, where they are noticed (timers_poll, core.h):
 *   - in the owning worker's scheduler loop on every round (sched.c);
 *   - when one of its threads yields (park.c: swarm_yield), so a worker
 *     busy with threads that yield still fires them;
 *   - an idle worker sleeps no longer than its earliest deadline (sched.c);
 *   - the monitor fires the due timers of a worker whose kernel thread is
 *     stuck (a thread that never blocks, or one blocked in a system call
 *     core does not know about), on the monitor's kernel thread
 *     (monitor.c).
 * Not when a thread parks: a park's caller holds the lock its commit
 * releases, and a due callback may need that very lock (park.c, park_here).
 * A park with a deadline on a kernel thread that is not a worker uses no
 * timer: that thread waits on its futex with a timeout itself (park.c).
 *
 * Invariants: timer->heap_index is its slot while in a heap and -1 once
 * removed (fired or cancelled); swarm_timer_cancel returns true only if it
 * removed the timer before its callback was taken, so exactly one of
 * "cancel succeeded" and "callback runs" happens.
 */
#include <errno.h>
#include <stdlib.h>

#include "core/core.h"
#include "os/os.h"

static void heap_set(struct timer_heap *h, uint32_t i, struct swarm_timer *t) {
  h->items[i] = t;
  t->heap_index = (int32_t)i;
}

static void sift_up(struct timer_heap *h, uint32_t i) {
  struct swarm_timer *t = h->items[i];
  while (i > 0) {
    uint32_t p = (i - 1) / 2;
    if (h->items[p]->deadline_ns <= t->deadline_ns)
      break;
    heap_set(h, i, h->items[p]);
    i = p;
  }
  heap_set(h, i, t);
}

static void sift_down(struct timer_heap *h, uint32_t i) {
  struct swarm_timer *t = h->items[i];
  for (;;) {
    uint32_t c = 2 * i + 1;
    if (c >= h->count)
      break;
    if (c + 1 < h->count &&
        h->items[c + 1]->deadline_ns < h->items[c]->deadline_ns)
      c++;
    if (t->deadline_ns <= h->items[c]->deadline_ns)
      break;
    heap_set(h, i, h->items[c]);
    i = c;
  }
  heap_set(h, i, t);
}

static void publish_earliest(struct timer_heap *h) {
  atomic_store_explicit(&h->earliest_ns,
                        h->count ? h->items[0]->deadline_ns : UINT64_MAX,
                        memory_order_release);
}

static void heap_remove_at(struct timer_heap *h, uint32_t i) {
  struct swarm_timer *t = h->items[i];
  t->heap_index = -1;
  h->count--;
  if (i != h->count) {
    heap_set(h, i, h->items[h->count]);
    sift_down(h, i);
    sift_up(h, (uint32_t)h->items[i]->heap_index);
  }
}

int swarm_timer_start(struct swarm_timer *t, uint64_t deadline_ns,
                      void (*fire)(struct swarm_timer *), void *arg) {
  struct worker *w = worker_current();
  if (!w) {
    int r = runtime_ensure_started();
    if (r)
      return r;
    w = &swarm_rt.workers[0];
  }
  struct timer_heap *h = &w->timers;
  t->deadline_ns = deadline_ns;
  t->fire = fire;
  t->arg = arg;
  t->owner = w;
  spin_lock(&h->lock);
  if (h->count == h->capacity) {
    uint32_t cap = h->capacity ? h->capacity * 2 : 64;
    struct swarm_timer **items = realloc(h->items, sizeof *items * cap);
    if (!items) {
      spin_unlock(&h->lock);
      t->heap_index = -1;
      return ENOMEM;
    }
    h->items = items;
    h->capacity = cap;
  }
  h->items[h->count] = t;
  t->heap_index = (int32_t)h->count++;
  sift_up(h, (uint32_t)t->heap_index);
  bool first = h->items[0] == t;
  publish_earliest(h);
  spin_unlock(&h->lock);
  /* A sleeping owner may be waiting for a later deadline: wake it to
   * recompute. (From a worker, the owner is ourselves and awake.) */
  if (first && worker_current() != w)
    worker_wake(w);
  return 0;
}

bool swarm_timer_cancel(struct swarm_timer *t) {
  struct worker *w = t->owner;
  if (!w)
    return false;
  struct timer_heap *h = &w->timers;
  spin_lock(&h->lock);
  bool removed = t->heap_index >= 0;
  if (removed) {
    heap_remove_at(h, (uint32_t)t->heap_index);
    publish_earliest(h);
  }
  spin_unlock(&h->lock);
  return removed;
}

uint64_t timers_earliest(struct worker *w) {
  return atomic_load_explicit(&w->timers.earliest_ns, memory_order_acquire);
}

void timers_run_due(struct worker *w, uint64_t now) {
  struct timer_heap *h = &w->timers;
  for (;;) {
    struct swarm_timer *due = NULL;
    spin_lock(&h->lock);
    if (h->count && h->items[0]->deadline_ns <= now) {
      due = h->items[0];
      heap_remove_at(h, 0);
      publish_earliest(h);
    }
    spin_unlock(&h->lock);
    if (!due)
      return;
    due->fire(due); /* removed: a cancel now returns false */
  }
}

void timers_destroy(struct worker *w) {
  free(w->timers.items);
  w->timers.items = NULL;
  w->timers.count = w->timers.capacity = 0;
}
