/*
 * sync/barrier.c — swarm_barrier_t: reusable barriers.
 *
 * Under the spinlock, arrivals are counted; the last arrival of a round
 * takes the whole queue, starts the next round (arrived_ = 0, round_++) and
 * readies everyone after unlocking. Because the queue is emptied in the same
 * critical section that starts the next round, a fast thread that re-enters
 * the barrier for the next round can never be released by the previous
 * round's last arrival. The last arrival is the serial thread.
 */
#include "sync/sync.h"

int swarm_barrier_init(swarm_barrier_t *b, unsigned count) {
  if (!b || count == 0)
    return EINVAL;
  b->lock_ = 0;
  b->count_ = count;
  b->arrived_ = 0;
  b->round_ = 0;
  b->head_ = b->tail_ = NULL;
  return 0;
}

int swarm_barrier_destroy(swarm_barrier_t *b) {
  if (!b || b->count_ == 0)
    return EINVAL;
  sync_spin_lock(&b->lock_);
  int busy = b->arrived_ != 0;
  if (!busy)
    b->count_ = 0;
  sync_spin_unlock(&b->lock_);
  return busy ? EBUSY : 0;
}

int swarm_barrier_wait(swarm_barrier_t *b) {
  if (!b)
    return EINVAL;
  sync_spin_lock(&b->lock_);
  if (b->count_ == 0) {
    sync_spin_unlock(&b->lock_);
    return EINVAL;
  }
  if (++b->arrived_ == b->count_) {
    struct sync_waiter *list =
        sync_queue_take(sync_queue_of(&b->head_), 0, NULL, NULL);
    b->arrived_ = 0;
    b->round_++;
    sync_spin_unlock(&b->lock_);
    sync_ready_list(list);
    return SWARM_BARRIER_SERIAL_THREAD;
  }
  struct sync_waiter w;
  sync_waiter_init(&w, sync_self(), &b->lock_, sync_queue_of(&b->head_), b,
                   NULL);
  w.reason = SWARM_PARK_BARRIER;
  sync_queue_push(sync_queue_of(&b->head_), &w);
  sync_wait_park(&w);
  return 0;
}
