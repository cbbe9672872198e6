/*
 * sync/once.c — swarm_once: run a routine exactly once.
 *
 * The once word (4 bytes, all the room pthread_once_t gives) goes
 * 0 (not run) -> 1 (running) -> 2 (done). It has no room for a queue, so
 * threads that find it running wait in one of a fixed set of wait buckets
 * chosen by the word's address, tagged with that address. The runner, after
 * storing 2, takes the bucket's lock and readies the waiters with its tag;
 * a waiter re-checks the word under the same lock before it queues, so the
 * store of 2 and the waiter's check are ordered by that lock and no wake-up
 * is lost.
 *
 * Fork (core/fork.c): a routine a thread of the parent was running at the
 * fork never finishes in the child, where that thread is a ghost. So the
 * running state carries the runtime's era (ONCE_RUNNING | era << 2, as
 * glibc's pthread_once carries its fork generation), and a caller that
 * finds the routine running in an older era takes it over and runs it
 * itself. As with glibc, a routine that forks runs on in the child too,
 * where a second caller runs it again.
 */
#include "sync/sync.h"

#define ONCE_BUCKETS 64
#define ONCE_NOT_RUN 0u
#define ONCE_RUNNING 1u
#define ONCE_DONE 2u

/* The running state of this era (the era's top two bits are lost: only a
 * once word left running through 2^30 nested forks is misread). */
static inline uint32_t once_running(void) {
  return ONCE_RUNNING | __atomic_load_n(&swarm_rt.era, __ATOMIC_RELAXED) << 2;
}

static struct once_bucket {
  uint32_t lock;
  struct sync_queue queue;
} once_buckets[ONCE_BUCKETS];

static struct once_bucket *bucket_of(swarm_once_t *once) {
  uintptr_t a = (uintptr_t)once;
  return &once_buckets[(a >> 2 ^ a >> 9) % ONCE_BUCKETS];
}

/* A bucket holds the waiters of several once objects: take those of one. */
static bool waits_for(struct sync_waiter *w, void *once) {
  return w->tag == (uintptr_t)once;
}

static void wake_tagged(swarm_once_t *once) {
  struct once_bucket *b = bucket_of(once);
  sync_spin_lock(&b->lock);
  struct sync_waiter *list = sync_queue_take(&b->queue, 0, waits_for, once);
  sync_spin_unlock(&b->lock);
  sync_ready_list(list);
}

/* Not done yet: run fn, or wait for its run. Out of line, so that the
 * done case does not pay for this frame (callgrind, a loop of calls on a
 * done object: 23 instructions a call with this inline, 25 once it read
 * the era, 9 out of line). */
static __attribute__((noinline)) int once_slow(swarm_once_t *once,
                                               void (*fn)(void)) {
  _Atomic uint32_t *word = (_Atomic uint32_t *)once;
  for (;;) {
    uint32_t s = atomic_load_explicit(word, memory_order_acquire);
    if (s == ONCE_DONE)
      return 0;
    uint32_t running = once_running();
    if (s != running) { /* not run, or run by a ghost (file comment) */
      if (!atomic_compare_exchange_strong_explicit(
              word, &s, running, memory_order_acquire, memory_order_acquire))
        continue;
      fn();
      atomic_store_explicit(word, ONCE_DONE, memory_order_release);
      wake_tagged(once);
      return 0;
    }
    /* Running elsewhere: wait for it. */
    struct once_bucket *b = bucket_of(once);
    struct sync_waiter w;
    sync_waiter_init(&w, sync_self(), &b->lock, &b->queue, NULL, NULL);
    w.reason = SWARM_PARK_ONCE;
    w.tag = (uintptr_t)once;
    sync_spin_lock(&b->lock);
    if (atomic_load_explicit(word, memory_order_acquire) != running) {
      sync_spin_unlock(&b->lock);
      continue;
    }
    sync_queue_push(&b->queue, &w);
    sync_wait_park(&w);
  }
}

int swarm_once(swarm_once_t *once, void (*fn)(void)) {
  if (!once || !fn)
    return EINVAL;
  if (likely(atomic_load_explicit((_Atomic uint32_t *)once,
                                  memory_order_acquire) == ONCE_DONE))
    return 0;
  return once_slow(once, fn);
}

void sync_once_abort(swarm_once_t *once) {
  atomic_store_explicit((_Atomic uint32_t *)once, ONCE_NOT_RUN,
                        memory_order_release);
  wake_tagged(once);
}
