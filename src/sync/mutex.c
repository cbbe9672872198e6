/*
 * sync/mutex.c — swarm_mutex_t: normal, recursive and error-checking
 * mutexes that park waiting threads.
 *
 * The design is Go's sync.Mutex adapted to park/ready. state_ holds
 *   M_LOCKED    the mutex is held
 *   M_WOKEN     a waiter is awake and about to try (a spinner, or a queued
 *               thread an unlock readied): unlock need not ready another
 *   M_STARVING  hand-off mode (below)
 *   waiters     the number of queued threads, in the bits above (M_WAITER)
 * Uncontended lock and unlock are one CAS each (0 -> M_LOCKED -> 0) and never
 * touch the spinlock. The waiter count and the queue change together, only
 * under lock_; the other bits change by CAS outside it.
 *
 * Normal mode lets running threads barge: unlock frees the mutex and, unless
 * a waiter is already awake, readies the first queued thread, which then
 * competes with whoever runs. This is what keeps a contended mutex fast: the
 * threads that are running pass it between them without parking, while a
 * strict hand-off would make every unlock a park + ready + switch (a lock
 * convoy; measured 11x slower than NPTL with 4 threads on 2 workers).
 * Barging can starve a queued thread, so a woken thread that has waited
 * more than STARVE_NS since it first queued switches the mutex into
 * hand-off mode: unlock then gives ownership straight to the first waiter
 * (owner_ set, M_LOCKED kept), newcomers queue at the tail, and the mode
 * ends when the queue empties or, as in Go, when a waiter that has not
 * starved is handed the mutex (kept until the queue emptied, hand-off mode
 * never ended with more threads than workers: a lock convoy at 0.4x NPTL).
 * Since queued threads cannot notice they starve while others barge, the
 * holder checks for them too (mutex_starve_check). A woken thread that loses
 * the race queues again at the front, keeping its place.
 *
 * Invariants: M_STARVING implies M_LOCKED and a non-empty queue; M_WOKEN is
 * set by at most one party at a time, which clears it when it grabs the
 * mutex, queues, or gives up. A waiter that times out leaves the queue
 * under lock_ (mutex_removed). Clearing M_WOKEN while its party is still
 * awake costs at most a spurious ready (that party then clears nothing or
 * someone else's flag, never sets one); only a flag set with nobody awake
 * loses a wake-up.
 *
 * Fork (core/fork.c). M_WOKEN set for a thread of the parent (a spinner,
 * or a waiter an unlock had readied that had not run yet) stays set in the
 * child, where that thread is a ghost and never clears it: every unlock
 * there would ready nobody. So the mutex remembers the era in which its
 * queue lock was last taken, in the half of lock_ that a spinlock keeps
 * its rank in (unused in a public object's word: os/spinlock.h), and the
 * first taker in a newer era clears M_WOKEN (mutex_queue_lock). A thread
 * of the child queues only under lock_, after that check, and ghosts never
 * set the flag again, so no child waiter sleeps behind a ghost's flag; the
 * check costs a load and a branch on the contended paths only (the
 * uncontended lock and unlock never take lock_). The stamp keeps the era's
 * low 16 bits: it is wrong only for a mutex untouched through 65536 nested
 * forks.
 */
#include "sync/sync.h"

#define MUTEX_SPINS 100
#define STARVE_NS 1000000 /* 1 ms, as Go */
#define M_LOCKED 1u
#define M_WOKEN 2u
#define M_STARVING 4u
#define M_WAITER 8u
#define M_WAITERS(s) ((s) >> 3)
#define MUTEX_RETRY (-1) /* waiter result: woken to compete, not owner */

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

/* The era in which lock_ was last taken (file comment: fork). */
static inline uint16_t *era_stamp_of(swarm_mutex_t *m) {
  return &spinlock_of_word(&m->lock_)->rank;
}

static inline uint16_t era_now(void) {
  return (uint16_t)__atomic_load_n(&swarm_rt.era, __ATOMIC_RELAXED);
}

/* Under lock_, in a fork child's runtime: the first taker of lock_ in this
 * era clears the parent's M_WOKEN. */
static __attribute__((noinline)) void mutex_era_check(swarm_mutex_t *m) {
  if (__atomic_load_n(era_stamp_of(m), __ATOMIC_RELAXED) == era_now())
    return;
  __atomic_store_n(era_stamp_of(m), era_now(), __ATOMIC_RELAXED);
  atomic_fetch_and_explicit(state_of(m), ~M_WOKEN, memory_order_relaxed);
}

/* Takes the queue lock; every path of this file takes it this way. */
static inline void mutex_queue_lock(swarm_mutex_t *m) {
  sync_spin_lock(&m->lock_);
  if (unlikely(__atomic_load_n(&swarm_rt.era, __ATOMIC_RELAXED) != 0))
    mutex_era_check(m);
}

/* Outside lock_: a fork child's first contended lock or destroy of a mutex
 * clears the parent's M_WOKEN at once, which would otherwise keep every
 * lock and unlock off the fast path and destroy answering EBUSY until a
 * thread queued. (The stamp is read atomically: it changes under lock_.) */
static inline void mutex_era_refresh(swarm_mutex_t *m) {
  if (unlikely(__atomic_load_n(&swarm_rt.era, __ATOMIC_RELAXED) != 0) &&
      __atomic_load_n(era_stamp_of(m), __ATOMIC_RELAXED) != era_now()) {
    mutex_queue_lock(m);
    sync_spin_unlock(&m->lock_);
  }
}

int swarm_mutex_destroy(swarm_mutex_t *m) {
  if (!m)
    return EINVAL;
  mutex_era_refresh(m);
  if (atomic_load_explicit(state_of(m), memory_order_acquire) != 0)
    return EBUSY;
  return 0;
}

/* Under lock_, after a timed-out or interrupted waiter left the queue. */
static struct sync_waiter *mutex_removed(struct sync_waiter *w) {
  swarm_mutex_t *m = w->object;
  atomic_fetch_sub_explicit(state_of(m), M_WAITER, memory_order_relaxed);
  if (!m->head_) /* hand-off mode needs someone to hand to */
    atomic_fetch_and_explicit(state_of(m), ~M_STARVING, memory_order_relaxed);
  return NULL;
}

/* Under lock_: dequeues the ghosts (sync.h) as if they had timed out. */
static void mutex_ghost_gone(struct sync_waiter *w) {
  (void)mutex_removed(w);
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

/* Takes the mutex if it is free and uncontended (0 -> M_LOCKED). */
static inline bool mutex_try_free(swarm_mutex_t *m, struct swarm_thread *self) {
  uint32_t zero = 0;
  if (!atomic_compare_exchange_strong_explicit(state_of(m), &zero, M_LOCKED,
                                               memory_order_acquire,
                                               memory_order_relaxed))
    return false;
  atomic_store_explicit(owner_of(m), me_id(self), memory_order_relaxed);
  return true;
}

/* Takes the mutex whenever it is not held (barging past queued threads in
 * normal mode; in hand-off mode it is always held). */
static inline bool mutex_try_barge(swarm_mutex_t *m, struct swarm_thread *self,
                                   uint32_t clear) {
  _Atomic uint32_t *st = state_of(m);
  uint32_t s = atomic_load_explicit(st, memory_order_relaxed);
  while (!(s & (M_LOCKED | M_STARVING))) {
    if (atomic_compare_exchange_weak_explicit(st, &s, (s | M_LOCKED) & ~clear,
                                              memory_order_acquire,
                                              memory_order_relaxed)) {
      atomic_store_explicit(owner_of(m), me_id(self), memory_order_relaxed);
      return true;
    }
  }
  return false;
}

/* Under lock_: takes the first waiter to be readied to compete (result
 * MUTEX_RETRY, M_WOKEN set for it), unless the mutex is held again or a
 * waiter is awake already: their unlock or grab covers it. The caller
 * readies the one returned after releasing lock_. */
static struct sync_waiter *mutex_wake_locked(swarm_mutex_t *m) {
  _Atomic uint32_t *st = state_of(m);
  sync_queue_drop_ghosts(sync_queue_of(&m->head_), mutex_ghost_gone);
  uint32_t s = atomic_load_explicit(st, memory_order_relaxed);
  do {
    if (!M_WAITERS(s) || (s & (M_LOCKED | M_WOKEN | M_STARVING)))
      return NULL;
  } while (!atomic_compare_exchange_weak_explicit(
      st, &s, (s - M_WAITER) | M_WOKEN, memory_order_relaxed,
      memory_order_relaxed));
  struct sync_waiter *w = sync_queue_pop(sync_queue_of(&m->head_), MUTEX_RETRY);
  w->next = NULL;
  return w;
}

static int mutex_lock_slow(swarm_mutex_t *m, struct swarm_thread *self,
                           uint64_t deadline_ns, bool expired) {
  _Atomic uint32_t *st = state_of(m);
  mutex_era_refresh(m);
  /* Spinning only pays when the holder can be running on another worker. */
  int spins = swarm_num_workers() > 1 ? 0 : MUTEX_SPINS;
  bool awoke = false;   /* M_WOKEN is set on our behalf */
  bool requeue = false; /* we were woken once: queue at the front */
  bool starving = false;
  uint64_t since = 0;
  struct sync_waiter w;
  for (;;) {
    uint32_t s = atomic_load_explicit(st, memory_order_relaxed);
    if ((s & (M_LOCKED | M_STARVING)) == M_LOCKED && spins < MUTEX_SPINS) {
      /* Held in normal mode: spin, and say so, so the holder's unlock does
       * not ready a queued thread that would only lose to us. */
      if (!awoke && !(s & M_WOKEN) && M_WAITERS(s) &&
          atomic_compare_exchange_weak_explicit(
              st, &s, s | M_WOKEN, memory_order_relaxed, memory_order_relaxed))
        awoke = true;
      spins++;
      os_cpu_relax();
      continue;
    }
    if (!(s & (M_LOCKED | M_STARVING))) {
      if (atomic_compare_exchange_weak_explicit(
              st, &s, (s | M_LOCKED) & ~(awoke ? M_WOKEN : 0),
              memory_order_acquire, memory_order_relaxed)) {
        atomic_store_explicit(owner_of(m), me_id(self), memory_order_relaxed);
        return 0;
      }
      continue;
    }
    /* Held, and spinning is over or pointless: queue. */
    mutex_queue_lock(m);
    s = atomic_load_explicit(st, memory_order_relaxed);
    if (!(s & (M_LOCKED | M_STARVING))) {
      sync_spin_unlock(&m->lock_); /* freed meanwhile: try again */
      continue;
    }
    uint64_t now = sync_now_ns();
    if (expired || (deadline_ns && deadline_ns <= now)) {
      struct sync_waiter *next = NULL;
      if (awoke) {
        /* An unlock may have skipped readying anyone because of our
         * M_WOKEN; pass the turn on. */
        atomic_fetch_and_explicit(st, ~M_WOKEN, memory_order_relaxed);
        next = mutex_wake_locked(m);
      }
      sync_spin_unlock(&m->lock_);
      if (next)
        swarm_ready(next->thread);
      return ETIMEDOUT;
    }
    if (!since)
      since = now;
    uint32_t n = s + M_WAITER;
    if (awoke)
      n &= ~M_WOKEN;
    if (starving)
      n |= M_STARVING; /* s is held here, keeping the invariant */
    if (!atomic_compare_exchange_strong_explicit(
            st, &s, n, memory_order_relaxed, memory_order_relaxed)) {
      sync_spin_unlock(&m->lock_);
      continue;
    }
    awoke = false;
    sync_waiter_init(&w, self, &m->lock_, sync_queue_of(&m->head_), m,
                     mutex_removed);
    w.reason = SWARM_PARK_MUTEX;
    w.deadline_ns = deadline_ns;
    w.tag = (uintptr_t)since; /* for mutex_starve_check */
    struct sync_queue *q = sync_queue_of(&m->head_);
    if (requeue) /* keep the place we had */
      sync_queue_push_front(q, &w);
    else
      sync_queue_push(q, &w);
    int r = sync_wait_park(&w);
    if (r == 0 && !starving && sync_now_ns() - since <= STARVE_NS) {
      /* Handed over without having starved: hand-off mode has done its
       * job, back to barging (Go's rule; ending it only when the queue
       * empties kept it forever with more threads than workers: every
       * unlock a park, a ready and a steal, 0.4x NPTL's speed). */
      atomic_fetch_and_explicit(st, ~M_STARVING, memory_order_relaxed);
    }
    if (r != MUTEX_RETRY)
      return r; /* 0: handed over (owner_ is us); or ETIMEDOUT */
    /* An unlock readied us in normal mode and set M_WOKEN for us. */
    awoke = true;
    requeue = true;
    spins = swarm_num_workers() > 1 ? 0 : MUTEX_SPINS;
    if (!starving && sync_now_ns() - since > STARVE_NS)
      starving = true;
  }
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
  if (mutex_try_barge(m, self, 0))
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

/* Hand-off mode: ownership goes straight to the first waiter. */
static void mutex_hand_off(swarm_mutex_t *m) {
  _Atomic uint32_t *st = state_of(m);
  mutex_queue_lock(m);
  sync_queue_drop_ghosts(sync_queue_of(&m->head_), mutex_ghost_gone);
  if (unlikely(!m->head_)) {
    /* Only ghosts were queued (a fork child): nobody to hand to, and
     * mutex_removed ended hand-off mode; let go as a plain unlock. */
    atomic_fetch_and_explicit(st, ~M_LOCKED, memory_order_release);
    sync_spin_unlock(&m->lock_);
    return;
  }
  struct sync_waiter *w = sync_queue_pop(sync_queue_of(&m->head_), 0);
  /* M_STARVING implies a queued waiter (file comment). */
  atomic_store_explicit(owner_of(m), me_id(w->thread), memory_order_relaxed);
  uint32_t s = atomic_load_explicit(st, memory_order_relaxed), n;
  do {
    n = s - M_WAITER;
    if (!m->head_)
      n &= ~M_STARVING;
    /* Still M_LOCKED (by w now). The release orders our critical section
     * before the new owner's. */
  } while (!atomic_compare_exchange_weak_explicit(
      st, &s, n, memory_order_release, memory_order_relaxed));
  w->next = NULL;
  sync_spin_unlock(&m->lock_);
  swarm_ready(w->thread);
}

/* Barging has a hole that a waiter's own starvation test cannot close:
 * threads are not preempted, so with more threads than workers the running
 * ones pass the mutex between them (a spinner's M_WOKEN tells unlock to
 * ready nobody) for as long as their kernel threads run, while the queued
 * ones, and runnable threads in the workers' deques, never run to notice
 * that they starve. So the holder looks, on every STARVE_CHECK_EVERY-th
 * contended release by its kernel thread: if the first waiter has
 * queued for more than STARVE_NS it switches the mutex to hand-off mode
 * before letting go (it holds the mutex and the queue is not empty, so the
 * invariant holds) and hands it over; otherwise swarm_mutex_unlock yields
 * once it has let go, so that threads runnable on this worker get their
 * turn (swarm_yield returns at once when there are none). Threads that
 * pass the mutex by spinning leave no waiter to look at, so every unlocker
 * also yields once per STARVE_NS of its kernel thread's time (sync_slice_tick,
 * looked at on every SYNC_SLICE_CHECK_EVERY-th unlock): a kernel's time slice,
 * for threads that take turns only at unlocks. Measured with `make
 * bench-locks` (4 threads on 2 workers): without it the least thread's share
 * fell from ~0.9 to ~0.5 of the mean, with it ~0.85 (NPTL ~0.9). Cost: a
 * TLS increment per unlock and per contended release (initial-exec:
 * counters per kernel thread, no call); a clock read, and the lock_ or a
 * yield, once in STARVE_CHECK_EVERY. */
#define STARVE_CHECK_EVERY 16
_Static_assert(sizeof(uintptr_t) >= sizeof(uint64_t),
               "a waiter's tag holds its queue time");
static __thread uint32_t starve_check_skips
    __attribute__((tls_model("initial-exec")));
static __thread struct sync_slice mutex_slice
    __attribute__((tls_model("initial-exec")));

/* Under no lock, by the holder: true if the mutex is now in hand-off mode
 * because its first waiter starves. */
static __attribute__((noinline)) bool mutex_starve_check(swarm_mutex_t *m) {
  bool starved = false;
  mutex_queue_lock(m);
  struct sync_queue *q = sync_queue_of(&m->head_);
  if (q->head && sync_now_ns() - (uint64_t)q->head->tag > STARVE_NS) {
    atomic_fetch_or_explicit(state_of(m), M_STARVING, memory_order_relaxed);
    starved = true;
  }
  sync_spin_unlock(&m->lock_);
  return starved;
}

/* Releases the mutex entirely (recursion already accounted for). Returns
 * true when the starvation check (above) asks the caller to yield. */
static bool mutex_release(swarm_mutex_t *m) {
  _Atomic uint32_t *st = state_of(m);
  atomic_store_explicit(owner_of(m), 0, memory_order_relaxed);
  uint32_t s = M_LOCKED;
  bool yield = false;
  for (;;) {
    if (s & M_STARVING) {
      mutex_hand_off(m);
      return yield;
    }
    if (unlikely(s != M_LOCKED) &&
        unlikely(++starve_check_skips % STARVE_CHECK_EVERY == 0)) {
      if (mutex_starve_check(m)) {
        mutex_hand_off(m);
        return false;
      }
      yield = true;
    }
    if (atomic_compare_exchange_weak_explicit(
            st, &s, s & ~M_LOCKED, memory_order_release, memory_order_relaxed))
      break;
  }
  if (likely(!M_WAITERS(s)) || (s & M_WOKEN))
    return yield; /* nobody queued, or someone awake will take it */
  mutex_queue_lock(m);
  struct sync_waiter *w = mutex_wake_locked(m);
  sync_spin_unlock(&m->lock_);
  if (w)
    swarm_ready(w->thread);
  return yield;
}

int swarm_mutex_unlock(swarm_mutex_t *m) {
  if (unlikely(!m))
    return EINVAL;
  int32_t kind = mutex_kind(m);
  if (unlikely(!kind_ok(kind)))
    return EINVAL;
  if (unlikely(!(atomic_load_explicit(state_of(m), memory_order_relaxed) &
                 M_LOCKED)))
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
  bool yield = mutex_release(m);
  if (sync_slice_tick(&mutex_slice, STARVE_NS))
    yield = true;
  if (unlikely(yield))
    swarm_yield();
  return 0;
}

/* For condition variables: is the mutex held by self (as far as its type
 * lets us know)? */
int sync_mutex_check_owner(swarm_mutex_t *m, struct swarm_thread *self) {
  int32_t kind = mutex_kind(m);
  if (!kind_ok(kind))
    return EINVAL;
  if (!(atomic_load_explicit(state_of(m), memory_order_relaxed) & M_LOCKED))
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
  (void)mutex_release(m); /* no yield: the cond wait parks next */
  return depth;
}

void sync_mutex_reacquire(swarm_mutex_t *m, uint32_t depth) {
  struct swarm_thread *self = sync_self();
  if (!mutex_try_free(m, self))
    mutex_lock_slow(m, self, 0, false); /* untimed: cannot fail */
  m->count_ = depth;
}
