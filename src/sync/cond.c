/*
 * sync/cond.c — swarm_cond_t: condition variables.
 *
 * A waiter queues itself under the condition variable's spinlock and, still
 * holding it, releases the mutex; it parks with the spinlock released by the
 * park's commit. A signaller takes the spinlock to dequeue, so a signal sent
 * after the waiter released the mutex (even by a thread that does not hold
 * the mutex) always finds the waiter queued: no wake-up is lost, and none is
 * delivered to a thread that is not parked yet.
 *
 * Woken threads lock the mutex again themselves; broadcast readies them all
 * and lets them contend (the mutex hands over in FIFO order).
 * Rejected: moving broadcast's waiters onto the mutex queue (wait morphing)
 * — it saves wake-ups only under heavy broadcast use and would tie the two
 * objects' locks together beyond cond -> mutex.
 */
#include "sync/sync.h"

/* A condition variable's lock comes before its mutex's in the lock order. */
static inline void cond_lock(swarm_cond_t *c) {
  spin_lock_as(spinlock_of_word(&c->lock_), LOCK_SYNC_COND);
}
static inline void cond_unlock(swarm_cond_t *c) {
  spin_unlock_as(spinlock_of_word(&c->lock_), LOCK_SYNC_COND);
}

int swarm_cond_init(swarm_cond_t *c, int clock) {
  if (!c || (clock != CLOCK_REALTIME && clock != CLOCK_MONOTONIC))
    return EINVAL;
  c->lock_ = 0;
  c->clock_ = clock;
  c->head_ = c->tail_ = NULL;
  c->reserved_[0] = c->reserved_[1] = c->reserved_[2] = 0;
  return 0;
}

int swarm_cond_destroy(swarm_cond_t *c) {
  if (!c)
    return EINVAL;
  cond_lock(c);
  int busy = c->head_ != NULL;
  cond_unlock(c);
  return busy ? EBUSY : 0;
}

void (*sync_wait_interrupted_hook)(void);

int sync_cond_wait_x(swarm_cond_t *c, swarm_mutex_t *m, int clock,
                     const struct timespec *abstime, bool interruptible) {
  if (!c || !m)
    return EINVAL;
  struct swarm_thread *self = sync_self();
  uint64_t deadline = 0;
  bool expired = false;
  int r;
  if (abstime && (r = sync_deadline(clock, abstime, &deadline, &expired)))
    return r;
  if ((r = sync_mutex_check_owner(m, self)))
    return r;
  if (interruptible && sync_interrupt_pending(self))
    return ECANCELED; /* a cancellation point acts before waiting */
  if (expired) {
    /* Still a point where others may run: release and retake the mutex. */
    uint32_t depth = sync_mutex_release_all(m);
    sync_mutex_reacquire(m, depth);
    return ETIMEDOUT;
  }
  struct sync_waiter w;
  sync_waiter_init(&w, self, &c->lock_, sync_queue_of(&c->head_), c, NULL);
  w.reason = SWARM_PARK_COND;
  w.lock_rank = LOCK_SYNC_COND;
  w.deadline_ns = deadline;
  w.interruptible = interruptible;
  sync_wait_begin(&w);
  cond_lock(c);
  sync_queue_push(sync_queue_of(&c->head_), &w);
  uint32_t depth = sync_mutex_release_all(m); /* lock order: cond -> mutex */
  r = sync_wait_park(&w);
  sync_wait_end(&w);
  if (r == ECANCELED && sync_wait_interrupted_hook)
    sync_wait_interrupted_hook(); /* before the mutex: see sync.h */
  sync_mutex_reacquire(m, depth);
  return r;
}

int swarm_cond_wait(swarm_cond_t *c, swarm_mutex_t *m) {
  return sync_cond_wait_x(c, m, CLOCK_REALTIME, NULL, false);
}

int swarm_cond_timedwait(swarm_cond_t *c, swarm_mutex_t *m,
                         const struct timespec *abstime) {
  if (!c || !abstime)
    return EINVAL;
  return sync_cond_wait_x(c, m, c->clock_, abstime, false);
}

int swarm_cond_clockwait(swarm_cond_t *c, swarm_mutex_t *m, int clock,
                         const struct timespec *abstime) {
  if (!abstime)
    return EINVAL;
  return sync_cond_wait_x(c, m, clock, abstime, false);
}

int swarm_cond_signal(swarm_cond_t *c) {
  if (!c)
    return EINVAL;
  /* An empty queue needs no lock: a waiter that queues after this load
   * released its mutex after we (per the usual pattern) changed the
   * predicate, and will see it. */
  if (!__atomic_load_n(&c->head_, __ATOMIC_ACQUIRE))
    return 0;
  cond_lock(c);
  struct sync_waiter *w = sync_queue_pop(sync_queue_of(&c->head_), 0);
  cond_unlock(c);
  if (w)
    swarm_ready(w->thread);
  return 0;
}

int swarm_cond_broadcast(swarm_cond_t *c) {
  if (!c)
    return EINVAL;
  if (!__atomic_load_n(&c->head_, __ATOMIC_ACQUIRE))
    return 0;
  cond_lock(c);
  struct sync_waiter *list =
      sync_queue_take(sync_queue_of(&c->head_), 0, NULL, NULL);
  cond_unlock(c);
  sync_ready_list(list);
  return 0;
}
