/*
 * sync/sem.c — swarm_sem_t: counting semaphores.
 *
 * value_ and the queue are changed only under the spinlock. A post that
 * finds a waiter hands its unit straight to it (the value stays 0) rather
 * than incrementing and letting the woken thread race for it; so value_ > 0
 * implies an empty queue. magic_ marks initialised objects (the drop-in
 * also uses it to tell its semaphores from NPTL's named ones).
 */
#include "sync/sync.h"

#define SEM_MAGIC 0x53e3a50fu

int swarm_sem_init(swarm_sem_t *s, unsigned value) {
  if (!s || value > SWARM_SEM_VALUE_MAX)
    return EINVAL;
  s->lock_ = 0;
  s->value_ = value;
  s->head_ = s->tail_ = NULL;
  s->pad_ = 0;
  __atomic_store_n(&s->magic_, SEM_MAGIC, __ATOMIC_RELEASE);
  return 0;
}

static inline bool sem_ok(swarm_sem_t *s) {
  return s && __atomic_load_n(&s->magic_, __ATOMIC_ACQUIRE) == SEM_MAGIC;
}

int swarm_sem_destroy(swarm_sem_t *s) {
  if (!sem_ok(s))
    return EINVAL;
  sync_spin_lock(&s->lock_);
  int busy = s->head_ != NULL;
  if (!busy)
    s->magic_ = 0;
  sync_spin_unlock(&s->lock_);
  return busy ? EBUSY : 0;
}

int sync_sem_wait_x(swarm_sem_t *s, uint64_t deadline_ns, bool interruptible) {
  if (!sem_ok(s))
    return EINVAL;
  struct swarm_thread *self = sync_self();
  if (interruptible && sync_interrupt_pending(self))
    return ECANCELED;
  struct sync_waiter w;
  sync_waiter_init(&w, self, &s->lock_, sync_queue_of(&s->head_), s, NULL);
  w.reason = SWARM_PARK_SEM;
  w.deadline_ns = deadline_ns;
  w.interruptible = interruptible;
  sync_wait_begin(&w);
  sync_spin_lock(&s->lock_);
  uint32_t v = s->value_;
  int r;
  if (v > 0) {
    s->value_ = v - 1;
    sync_spin_unlock(&s->lock_);
    r = 0;
  } else if (deadline_ns && deadline_ns <= sync_now_ns()) {
    sync_spin_unlock(&s->lock_);
    r = ETIMEDOUT;
  } else {
    sync_queue_push(sync_queue_of(&s->head_), &w);
    r = sync_wait_park(&w); /* 0: a post handed us its unit */
  }
  sync_wait_end(&w);
  return r;
}

int swarm_sem_wait(swarm_sem_t *s) {
  return sync_sem_wait_x(s, 0, false);
}

int swarm_sem_trywait(swarm_sem_t *s) {
  if (!sem_ok(s))
    return EINVAL;
  sync_spin_lock(&s->lock_);
  int r = EAGAIN;
  if (s->value_ > 0) {
    s->value_--;
    r = 0;
  }
  sync_spin_unlock(&s->lock_);
  return r;
}

int swarm_sem_timedwait(swarm_sem_t *s, int clock,
                        const struct timespec *abstime) {
  if (!sem_ok(s))
    return EINVAL;
  if (swarm_sem_trywait(s) == 0)
    return 0;
  uint64_t deadline;
  bool expired;
  int r = sync_deadline(clock, abstime, &deadline, &expired);
  if (r)
    return r;
  if (expired)
    return ETIMEDOUT;
  return sync_sem_wait_x(s, deadline, false);
}

int swarm_sem_post(swarm_sem_t *s) {
  if (!sem_ok(s))
    return EINVAL;
  sync_spin_lock(&s->lock_);
  struct sync_waiter *w = sync_queue_pop(sync_queue_of(&s->head_), 0);
  int r = 0;
  if (!w) {
    if (s->value_ >= SWARM_SEM_VALUE_MAX)
      r = EOVERFLOW;
    else
      s->value_++;
  }
  sync_spin_unlock(&s->lock_);
  if (w)
    swarm_ready(w->thread);
  return r;
}

int swarm_sem_getvalue(swarm_sem_t *s, int *value) {
  if (!sem_ok(s) || !value)
    return EINVAL;
  *value = (int)__atomic_load_n(&s->value_, __ATOMIC_RELAXED);
  return 0;
}

bool sync_sem_is_ours(const void *s) {
  return __atomic_load_n(&((const swarm_sem_t *)s)->magic_, __ATOMIC_ACQUIRE) ==
         SEM_MAGIC;
}
