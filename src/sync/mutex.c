/*
 * sync/mutex.c — swarm_mutex_t: normal, recursive and error-checking
 * mutexes that park waiting threads.
 *
 * state_ is the whole truth about ownership:
 *   0  free
 *   1  locked, no thread queued
 *   2  locked, and threads may be queued (queue non-empty => state 2)
 * Uncontended lock and unlock are one CAS each (0->1, 1->0) and never touch
 * the spinlock. Everything that involves the queue happens under lock_, and
 * while state_ is 2 only holders of lock_ change it, so a fast-path CAS can
 * only race with states 0 and 1.
 *
 * Unlocking with waiters hands the mutex straight to the first waiter
 * (owner_ is set to it, state_ stays locked) instead of freeing it and
 * letting everyone race: a parked thread would otherwise lose to running
 * ones indefinitely, and a woken one would often have to park again.
 * Before queueing, a locker spins briefly while the mutex is held without
 * waiters, since a holder running on another worker usually lets go soon.
 *
 * A waiter that times out leaves the queue under lock_; if it was the last
 * one, state_ goes back from 2 to 1 (mutex_removed).
 */
#include "sync/sync.h"

#define MUTEX_SPINS 100

static inline uint64_t me_id(struct swarm_thread *self) {
  return (uint64_t)(uintptr_t)self;
}

static inline _Atomic uint32_t *state_of(swarm_mutex_t *m) {
  return (_Atomic uint32_t *)&m->state_;
}

static inline _Atomic uint64_t *owner_of(swarm_mutex_t *m) {
  return (_Atomic uint64_t *)&m->owner_;
}

static inline bool kind_ok(int32_t k) {
  return k == SWARM_MUTEX_NORMAL || k == SWARM_MUTEX_RECURSIVE ||
         k == SWARM_MUTEX_ERRORCHECK;
}

/* glibc's PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP writes kind 3; treat it as
 * normal, as glibc does apart from its spinning. Flags glibc keeps in the
 * high bits of the kind (robust, pshared) are never set by our attributes. */
static inline int32_t mutex_kind(swarm_mutex_t *m) {
  int32_t k = m->kind_;
  return k == 3 ? SWARM_MUTEX_NORMAL : k;
}

int swarm_mutex_init(swarm_mutex_t *m, int type) {
  if (!m || !kind_ok(type))
    return EINVAL;
  m->state_ = 0;
  m->count_ = 0;
  m->owner_ = 0;
  m->kind_ = type;
  m->lock_ = 0;
  m->head_ = m->tail_ = NULL;
  return 0;
}

int swarm_mutex_destroy(swarm_mutex_t *m) {
  if (!m)
    return EINVAL;
  if (atomic_load_explicit(state_of(m), memory_order_acquire) != 0)
    return EBUSY;
  return 0;
}

static struct sync_waiter *mutex_removed(struct sync_waiter *w) {
  swarm_mutex_t *m = w->object;
  if (!m->head_) /* the last waiter left: nobody to hand over to */
    atomic_store_explicit(state_of(m), 1, memory_order_relaxed);
  return NULL;
}

/* Relock by the owner: the type decides. 1 if handled (result in *r). */
static inline bool relock_by_owner(swarm_mutex_t *m, int32_t kind,
                                   struct swarm_thread *self, int *r) {
  if (kind == SWARM_MUTEX_NORMAL)
    return false;
  if (!sync_same_owner(atomic_load_explicit(owner_of(m), memory_order_relaxed),
                       self))
    return false;
  if (kind == SWARM_MUTEX_ERRORCHECK) {
    *r = EDEADLK;
  } else if (m->count_ == UINT32_MAX) {
    *r = EAGAIN;
  } else {
    m->count_++;
    *r = 0;
  }
  return true;
}

/* Takes the mutex if it is free (0 -> 1), recording the owner. */
static inline bool mutex_try_free(swarm_mutex_t *m, struct swarm_thread *self) {
  uint32_t zero = 0;
  if (!atomic_compare_exchange_strong_explicit(
          state_of(m), &zero, 1, memory_order_acquire, memory_order_relaxed))
    return false;
  atomic_store_explicit(owner_of(m), me_id(self), memory_order_relaxed);
  return true;
}

static int mutex_lock_slow(swarm_mutex_t *m, struct swarm_thread *self,
                           uint64_t deadline_ns, bool expired) {
  _Atomic uint32_t *st = state_of(m);
  for (int i = 0; i < MUTEX_SPINS; i++) {
    uint32_t s = atomic_load_explicit(st, memory_order_relaxed);
    if (s == 0) {
      if (atomic_compare_exchange_weak_explicit(st, &s, 1, memory_order_acquire,
                                                memory_order_relaxed)) {
        atomic_store_explicit(owner_of(m), me_id(self), memory_order_relaxed);
        return 0;
      }
    } else if (s == 2) {
      break; /* others queued already: handoff order, do not barge */
    }
    os_cpu_relax();
  }
  struct sync_waiter w;
  sync_waiter_init(&w, self, &m->lock_, sync_queue_of(&m->head_), m,
                   mutex_removed);
  w.reason = SWARM_PARK_MUTEX;
  w.deadline_ns = deadline_ns;
  sync_spin_lock(&m->lock_);
  for (;;) {
    uint32_t s = atomic_load_explicit(st, memory_order_relaxed);
    if (s == 0) {
      if (atomic_compare_exchange_weak_explicit(st, &s, 1, memory_order_acquire,
                                                memory_order_relaxed)) {
        atomic_store_explicit(owner_of(m), me_id(self), memory_order_relaxed);
        sync_spin_unlock(&m->lock_);
        return 0;
      }
      continue;
    }
    if (expired || (deadline_ns && deadline_ns <= sync_now_ns())) {
      sync_spin_unlock(&m->lock_);
      return ETIMEDOUT;
    }
    /* 1 -> 2 tells the holder's unlock to take the slow path; it may race
     * with the holder's fast 1 -> 0, hence the CAS and the retry. */
    if (s == 1 && !atomic_compare_exchange_weak_explicit(
                      st, &s, 2, memory_order_acquire, memory_order_relaxed))
      continue;
    break;
  }
  sync_queue_push(sync_queue_of(&m->head_), &w);
  int r = sync_wait_park(&w);
  /* r == 0: the unlocker made us the owner (owner_ set, state kept). */
  return r;
}

/* Lock; when `timed`, wait no longer than abstime on `clock` (checked by
 * sync_deadline only if we must wait: EINVAL for a bad or NULL abstime). */
static int mutex_lock_common(swarm_mutex_t *m, bool timed, int clock,
                             const struct timespec *abstime) {
  int32_t kind = mutex_kind(m);
  if (unlikely(!kind_ok(kind)))
    return EINVAL;
  struct swarm_thread *self = sync_self();
  if (likely(mutex_try_free(m, self)))
    return 0;
  int r;
  if (relock_by_owner(m, kind, self, &r))
    return r;
  uint64_t deadline = 0;
  bool expired = false;
  if (timed && (r = sync_deadline(clock, abstime, &deadline, &expired)))
    return r;
  return mutex_lock_slow(m, self, deadline, expired);
}

int swarm_mutex_lock(swarm_mutex_t *m) {
  if (unlikely(!m))
    return EINVAL;
  return mutex_lock_common(m, false, 0, NULL);
}

int swarm_mutex_timedlock(swarm_mutex_t *m, int clock,
                          const struct timespec *abstime) {
  if (!m)
    return EINVAL;
  /* POSIX: the timespec is not checked when the lock is free (or ours to
   * relock), so the deadline is worked out only when we must wait. */
  return mutex_lock_common(m, true, clock, abstime);
}

int swarm_mutex_trylock(swarm_mutex_t *m) {
  if (!m)
    return EINVAL;
  int32_t kind = mutex_kind(m);
  if (!kind_ok(kind))
    return EINVAL;
  struct swarm_thread *self = sync_self();
  if (mutex_try_free(m, self))
    return 0;
  if (kind == SWARM_MUTEX_RECURSIVE &&
      sync_same_owner(atomic_load_explicit(owner_of(m), memory_order_relaxed),
                      self)) {
    if (m->count_ == UINT32_MAX)
      return EAGAIN;
    m->count_++;
    return 0;
  }
  return EBUSY;
}

/* Releases the mutex entirely (recursion already accounted for). */
static void mutex_release(swarm_mutex_t *m) {
  _Atomic uint32_t *st = state_of(m);
  atomic_store_explicit(owner_of(m), 0, memory_order_relaxed);
  uint32_t one = 1;
  if (likely(atomic_compare_exchange_strong_explicit(
          st, &one, 0, memory_order_release, memory_order_relaxed)))
    return;
  /* State 2: hand over to the first waiter, if one is still queued. */
  sync_spin_lock(&m->lock_);
  struct sync_waiter *w = sync_queue_pop(sync_queue_of(&m->head_), 0);
  if (w) {
    atomic_store_explicit(owner_of(m), me_id(w->thread), memory_order_relaxed);
    /* Still locked (by w now); 2 while others wait. The release orders our
     * critical section before the new owner's. */
    atomic_store_explicit(st, m->head_ ? 2 : 1, memory_order_release);
    w->next = NULL;
  } else {
    atomic_store_explicit(st, 0, memory_order_release);
  }
  sync_spin_unlock(&m->lock_);
  if (w)
    swarm_ready(w->thread);
}

int swarm_mutex_unlock(swarm_mutex_t *m) {
  if (unlikely(!m))
    return EINVAL;
  int32_t kind = mutex_kind(m);
  if (unlikely(!kind_ok(kind)))
    return EINVAL;
  if (unlikely(atomic_load_explicit(state_of(m), memory_order_relaxed) == 0))
    return EPERM;
  if (kind != SWARM_MUTEX_NORMAL) {
    if (!sync_same_owner(
            atomic_load_explicit(owner_of(m), memory_order_relaxed),
            sync_self()))
      return EPERM;
    if (m->count_ > 0) {
      m->count_--;
      return 0;
    }
  }
  mutex_release(m);
  return 0;
}

/* For condition variables: is the mutex held by self (as far as its type
 * lets us know)? */
int sync_mutex_check_owner(swarm_mutex_t *m, struct swarm_thread *self) {
  int32_t kind = mutex_kind(m);
  if (!kind_ok(kind))
    return EINVAL;
  if (atomic_load_explicit(state_of(m), memory_order_relaxed) == 0)
    return EPERM;
  if (kind != SWARM_MUTEX_NORMAL &&
      !sync_same_owner(atomic_load_explicit(owner_of(m), memory_order_relaxed),
                       self))
    return EPERM;
  return 0;
}

/* Cond wait: release entirely, remembering the recursion depth. */
uint32_t sync_mutex_release_all(swarm_mutex_t *m) {
  uint32_t depth = m->count_;
  m->count_ = 0;
  mutex_release(m);
  return depth;
}

void sync_mutex_reacquire(swarm_mutex_t *m, uint32_t depth) {
  struct swarm_thread *self = sync_self();
  uint32_t zero = 0;
  if (!atomic_compare_exchange_strong_explicit(
          state_of(m), &zero, 1, memory_order_acquire, memory_order_relaxed)) {
    /* Untimed: cannot fail. */
    mutex_lock_slow(m, self, 0, false);
  } else {
    atomic_store_explicit(owner_of(m), me_id(self), memory_order_relaxed);
  }
  m->count_ = depth;
}
