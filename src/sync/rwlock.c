/*
 * sync/rwlock.c — swarm_rwlock_t: reader-writer locks.
 *
 * Everything is decided under the object's spinlock; the critical sections
 * are a few loads and stores. readers_ counts read holders, writer_ names
 * the write holder; at most one of them is non-zero.
 *
 * Policy (kind_):
 *   PREFER_READER (default, as glibc): a reader enters whenever no writer
 *     holds the lock, even while writers wait, so a thread may take read
 *     locks recursively.
 *   PREFER_WRITER: a waiting writer holds new readers back; recursive read
 *     locking may deadlock, as glibc's NONRECURSIVE kind documents.
 *
 * Waiting follows the mutex (mutex.c, Go's sync.Mutex) rather than a strict
 * hand-off, which made every contended acquire a park, a ready and a switch
 * and left the lock held by a thread that was not running, so that
 * everybody else parked behind it (a convoy: 0.58x NPTL at 64 threads,
 * issue 18). Now:
 *   - a thread that cannot enter spins (at most RW_SPINS rounds, outside
 *     the lock) while the holders are running, then queues and parks;
 *   - an unlock that leaves room wakes (RW_RETRY) the waiters the policy
 *     would admit — the first writer, or every reader as one batch — to
 *     compete with running threads (barging), unless woken waiters have not
 *     run yet (woken_ counts them; their attempt covers the turn);
 *   - a woken waiter that loses queues again at the front, keeping its
 *     place; one that has waited over RW_STARVE_NS since it first queued
 *     sets handoff_, and then unlocks hand the lock over (grant, result 0)
 *     as the old lock always did, until a hand-over happens.
 * Threads are not preempted, so a thread that keeps finding the lock free
 * would keep its worker: unlockers yield once per RW_SLICE_NS (see
 * swarm_rwlock_unlock).
 * rw_wake is the one place that admits or wakes waiters; it runs after
 * every change that may let one in (unlock, a waiter leaving: timeout,
 * requeue while the lock is free).
 * Invariant: whenever the queue is not empty and its first admissible
 * waiter could enter, rw_wake has woken or granted someone who has not yet
 * run (woken_ or asleep_ non-zero), or a holder's unlock is still to come.
 *
 * Fork: woken_ and asleep_ count threads that may be ghosts in a fork child
 * (core/fork.c), where they never run to undo their count: the first taker
 * of the lock in a newer era clears both (as mutex.c does with M_WOKEN;
 * the era sits in the spinlock word's rank half).
 *
 * Read holders are not recorded individually, so unlock cannot tell a
 * reader from a stranger; it returns EPERM only when nobody holds the lock
 * or another thread holds it for writing.
 */
#include "sync/sync.h"

#define TAG_READER 0
#define TAG_WRITER 1
#define RW_SPINS 100
#define RW_STARVE_NS 1000000 /* 1 ms, as the mutex */
#define RW_RETRY (-1)        /* waiter result: woken to compete */

static inline bool prefer_writer(swarm_rwlock_t *rw) {
  return rw->kind_ == SWARM_RWLOCK_PREFER_WRITER;
}

/* Fields read outside the lock (spinning) are written with these. */
#define RW_SET(field, v) __atomic_store_n(&(field), (v), __ATOMIC_RELAXED)
#define RW_GET(field) __atomic_load_n(&(field), __ATOMIC_RELAXED)

int swarm_rwlock_init(swarm_rwlock_t *rw, int kind) {
  if (!rw || (kind != SWARM_RWLOCK_PREFER_READER &&
              kind != SWARM_RWLOCK_PREFER_WRITER))
    return EINVAL;
  rw->lock_ = 0;
  rw->readers_ = 0;
  rw->writer_ = 0;
  rw->head_ = rw->tail_ = NULL;
  rw->writers_waiting_ = 0;
  rw->asleep_ = 0;
  rw->woken_ = 0;
  rw->handoff_ = 0;
  rw->kind_ = (uint32_t)kind;
  rw->pad2_ = 0;
  return 0;
}

/* The era in which lock_ was last taken (file comment: fork). */
static inline uint16_t *era_stamp_of(swarm_rwlock_t *rw) {
  return &spinlock_of_word(&rw->lock_)->rank;
}

static __attribute__((noinline)) void rw_era_check(swarm_rwlock_t *rw) {
  uint16_t era = (uint16_t)__atomic_load_n(&swarm_rt.era, __ATOMIC_RELAXED);
  if (*era_stamp_of(rw) == era)
    return;
  *era_stamp_of(rw) = era;
  __atomic_store_n(&rw->woken_, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&rw->asleep_, 0, __ATOMIC_RELAXED);
}

static inline void rw_queue_lock(swarm_rwlock_t *rw) {
  sync_spin_lock(&rw->lock_);
  if (unlikely(__atomic_load_n(&swarm_rt.era, __ATOMIC_RELAXED) != 0))
    rw_era_check(rw);
}

int swarm_rwlock_destroy(swarm_rwlock_t *rw) {
  if (!rw)
    return EINVAL;
  rw_queue_lock(rw);
  int busy = rw->readers_ || rw->writer_ || rw->head_ || rw->woken_;
  sync_spin_unlock(&rw->lock_);
  return busy ? EBUSY : 0;
}

/* A ghost (sync.h) leaves: a writer no longer holds readers back. */
static void ghost_gone(struct sync_waiter *w) {
  swarm_rwlock_t *rw = w->object;
  if (w->tag == TAG_WRITER)
    RW_SET(rw->writers_waiting_, rw->writers_waiting_ - 1);
}

/* rw_wake's test for each queued reader once readers may enter: in
 * hand-off mode it enters (is counted) while the count has room; else it
 * is woken to try. */
static bool reader_taken(struct sync_waiter *w, void *arg) {
  swarm_rwlock_t *rw = arg;
  if (w->tag != TAG_READER)
    return false;
  if (!rw->handoff_) {
    rw->woken_++;
    return true;
  }
  if (rw->readers_ == UINT32_MAX)
    return false;
  RW_SET(rw->readers_, rw->readers_ + 1);
  rw->asleep_++;
  return true;
}

/* The first queued writer (prefer-writer: it goes before earlier readers). */
static struct sync_waiter *first_writer(struct sync_queue *q) {
  struct sync_waiter *w = q->head;
  while (w && w->tag != TAG_WRITER)
    w = w->next;
  return w;
}

/* Under the lock: admits (hand-off mode) or wakes to compete (otherwise)
 * the waiters the policy lets in now; returns them, dequeued, linked
 * through next, for sync_ready_list after unlocking. */
static struct sync_waiter *rw_wake(swarm_rwlock_t *rw) {
  struct sync_queue *q = sync_queue_of(&rw->head_);
  if (rw->writer_)
    return NULL;
  sync_queue_drop_ghosts(q, ghost_gone);
  if (!q->head)
    rw->handoff_ = 0; /* nobody left to hand to */
  if (!q->head || (!rw->handoff_ && (rw->woken_ || rw->asleep_)))
    return NULL; /* nobody, or someone not yet run will try */
  struct sync_waiter *w = q->head;
  if (prefer_writer(rw) && rw->writers_waiting_)
    w = first_writer(q);
  if (w && w->tag == TAG_WRITER) {
    if (rw->readers_)
      return NULL; /* the last reader's unlock comes back here */
    sync_queue_remove(q, w);
    w->next = NULL;
    RW_SET(rw->writers_waiting_, rw->writers_waiting_ - 1);
    if (rw->handoff_) {
      w->result = 0;
      RW_SET(rw->writer_, (uint64_t)(uintptr_t)w->thread);
      rw->asleep_++;
      rw->handoff_ = 0;
    } else {
      w->result = RW_RETRY;
      rw->woken_++;
    }
    return w;
  }
  struct sync_waiter *list =
      sync_queue_take(q, rw->handoff_ ? 0 : RW_RETRY, reader_taken, rw);
  if (list)
    rw->handoff_ = 0;
  return list;
}

/* A timed-out or interrupted waiter left: a writer stops holding readers
 * back, and whoever it kept out may be let in. */
static struct sync_waiter *rw_removed(struct sync_waiter *w) {
  swarm_rwlock_t *rw = w->object;
  if (w->tag == TAG_WRITER)
    RW_SET(rw->writers_waiting_, rw->writers_waiting_ - 1);
  if (!rw->head_)
    rw->handoff_ = 0; /* nobody left to hand to */
  return rw_wake(rw);
}

/* Whether the caller could not enter now (racy read, for spinning only). */
static inline bool rw_busy(swarm_rwlock_t *rw, bool writer) {
  if (RW_GET(rw->writer_))
    return true;
  if (writer)
    return RW_GET(rw->readers_) != 0;
  return prefer_writer(rw) && RW_GET(rw->writers_waiting_) != 0;
}

/* Under the lock: enters if the policy lets the caller in now. Returns 0
 * (entered), EAGAIN (reader count full) or -1 (must wait). */
static inline int rw_enter(swarm_rwlock_t *rw, bool writer, uint64_t me) {
  if (rw->writer_)
    return -1;
  if (writer) {
    if (rw->readers_)
      return -1;
    RW_SET(rw->writer_, me);
    return 0;
  }
  if (prefer_writer(rw) && rw->writers_waiting_)
    return -1;
  if (rw->readers_ == UINT32_MAX)
    return EAGAIN;
  RW_SET(rw->readers_, rw->readers_ + 1);
  return 0;
}

/* Spins (outside the lock) while the caller could not enter and the
 * holders are running, RW_SPINS rounds in all. */
static void rw_spin(swarm_rwlock_t *rw, bool writer, int *spins) {
  while (*spins < RW_SPINS && rw_busy(rw, writer) && !RW_GET(rw->asleep_)) {
    ++*spins;
    os_cpu_relax();
  }
  ++*spins; /* every retry counts, so retrying ends */
}

/* What one waiting thread carries between its attempts. */
struct rw_attempt {
  bool writer, requeue;
  int spins;
  uint64_t since; /* when it first queued */
  uint64_t deadline;
};

/* Under the lock, having failed to enter: queues (at the front when
 * woken before) and parks. Returns the park's result with the lock
 * released: 0 (granted), RW_RETRY, ETIMEDOUT or ENOMEM. */
static int rw_queue_and_park(swarm_rwlock_t *rw, struct swarm_thread *self,
                             struct rw_attempt *a) {
  struct sync_queue *q = sync_queue_of(&rw->head_);
  uint64_t now = sync_now_ns();
  if (a->deadline && a->deadline <= now) {
    struct sync_waiter *list = rw_wake(rw); /* pass on a turn we had */
    sync_spin_unlock(&rw->lock_);
    sync_ready_list(list);
    return ETIMEDOUT;
  }
  if (!a->since)
    a->since = now;
  else if (now - a->since > RW_STARVE_NS)
    rw->handoff_ = 1;
  struct sync_waiter w;
  sync_waiter_init(&w, self, &rw->lock_, q, rw, rw_removed);
  w.reason = SWARM_PARK_RWLOCK;
  w.tag = a->writer ? TAG_WRITER : TAG_READER;
  w.deadline_ns = a->deadline;
  if (a->writer)
    RW_SET(rw->writers_waiting_, rw->writers_waiting_ + 1);
  if (a->requeue) /* keep our place */
    sync_queue_push_front(q, &w);
  else
    sync_queue_push(q, &w);
  /* The lock may be free with nobody to come back (a prefer-writer reader
   * behind a writer that is queued, not woken): let the policy look. */
  struct sync_waiter *list = rw_wake(rw);
  if (list) {
    /* We may be among them; then we are no longer queued and must not
     * park: take ourselves out of the list and try again. */
    struct sync_waiter **pp = &list;
    bool self_taken = false;
    for (; *pp; pp = &(*pp)->next)
      if (*pp == &w) {
        *pp = w.next;
        self_taken = true;
        break;
      }
    if (self_taken) {
      int r = w.result;
      sync_spin_unlock(&rw->lock_);
      sync_ready_list(list);
      return r;
    }
    /* Others were let in while we stay queued: ready them after parking
     * would be too late for the lock; ready them now, under the lock
     * (swarm_ready takes only core's locks, after ours in the order). */
    sync_ready_list(list);
  }
  return sync_wait_park(&w);
}

/* Takes the lock word and tries to enter. Returns the answer (0, EAGAIN,
 * EDEADLK, EBUSY for a try) with the lock word released, or -1 with it
 * held when the caller must wait. `woken`: an unlock woke us to try. */
static inline int rw_attempt(swarm_rwlock_t *rw, struct swarm_thread *self,
                             bool writer, bool try, bool woken) {
  rw_queue_lock(rw);
  if (woken)
    rw->woken_--; /* this attempt is the turn woken_ counted for us */
  /* Ghost writers would hold this reader back with nobody to grant. */
  sync_queue_drop_ghosts(sync_queue_of(&rw->head_), ghost_gone);
  int r;
  if (rw->writer_ && sync_same_owner(rw->writer_, self))
    r = try ? EBUSY : EDEADLK; /* a try never deadlocks (as NPTL) */
  else if (rw->handoff_ && writer && rw->head_)
    r = try ? EBUSY : -1; /* no barging past a starving waiter */
  else if ((r = rw_enter(rw, writer, (uint64_t)(uintptr_t)self)) < 0 && try)
    r = EBUSY;
  if (r >= 0)
    sync_spin_unlock(&rw->lock_);
  return r;
}

/* Called with the lock word held, after a failed first attempt. */
static __attribute__((noinline)) int
rw_lock_slow(swarm_rwlock_t *rw, struct swarm_thread *self, bool writer,
             int clock, const struct timespec *abstime) {
  struct rw_attempt a = {writer, false, 0, 0, 0};
  /* Spinning only pays when a holder can be running on another worker.
   * Read, not swarm_num_workers(): that may start the runtime, which must
   * not happen under the lock word (lock order: lifecycle before sync). */
  int spins0 =
      __atomic_load_n(&swarm_rt.nworkers, __ATOMIC_RELAXED) < 2 ? RW_SPINS : 0;
  a.spins = spins0;
  if (abstime) {
    bool expired = false;
    int r = sync_deadline(clock, abstime, &a.deadline, &expired);
    if (r || expired) {
      sync_spin_unlock(&rw->lock_);
      return r ? r : ETIMEDOUT;
    }
  }
  for (;;) {
    int r = 0;
    if (a.spins < RW_SPINS && !rw->asleep_ && !rw->handoff_) {
      sync_spin_unlock(&rw->lock_);
      rw_spin(rw, writer, &a.spins);
    } else {
      r = rw_queue_and_park(rw, self, &a);
      if (r == 0) {
        __atomic_fetch_sub(&rw->asleep_, 1, __ATOMIC_RELAXED);
        return 0; /* granted: rw_wake made us a holder */
      }
      if (r != RW_RETRY)
        return r; /* ETIMEDOUT, ENOMEM */
      a.spins = spins0;
    }
    bool woken = r == RW_RETRY;
    if (woken)
      a.requeue = true;
    if ((r = rw_attempt(rw, self, writer, false, woken)) >= 0)
      return r;
  }
}

static int rw_lock(swarm_rwlock_t *rw, bool writer, bool try, int clock,
                   const struct timespec *abstime) {
  if (!rw)
    return EINVAL;
  struct swarm_thread *self = sync_self();
  int r = rw_attempt(rw, self, writer, try, false);
  if (likely(r >= 0))
    return r;
  return rw_lock_slow(rw, self, writer, clock, abstime);
}

int swarm_rwlock_rdlock(swarm_rwlock_t *rw) {
  return rw_lock(rw, false, false, 0, NULL);
}
int swarm_rwlock_tryrdlock(swarm_rwlock_t *rw) {
  return rw_lock(rw, false, true, 0, NULL);
}
int swarm_rwlock_timedrdlock(swarm_rwlock_t *rw, int clock,
                             const struct timespec *abstime) {
  if (!abstime)
    return EINVAL;
  return rw_lock(rw, false, false, clock, abstime);
}
int swarm_rwlock_wrlock(swarm_rwlock_t *rw) {
  return rw_lock(rw, true, false, 0, NULL);
}
int swarm_rwlock_trywrlock(swarm_rwlock_t *rw) {
  return rw_lock(rw, true, true, 0, NULL);
}
int swarm_rwlock_timedwrlock(swarm_rwlock_t *rw, int clock,
                             const struct timespec *abstime) {
  if (!abstime)
    return EINVAL;
  return rw_lock(rw, true, false, clock, abstime);
}

/* Threads are not preempted: a thread that takes the lock without parking
 * (spinning, or finding it free) would keep its worker while others
 * runnable there wait. So an unlocker on a worker yields once per
 * RW_SLICE_NS of its kernel thread's time (sync_slice_tick), as a kernel's
 * time slice would, and as mutex.c does. */
#define RW_SLICE_NS 50000
static __thread struct sync_slice rw_slice
    __attribute__((tls_model("initial-exec")));

int swarm_rwlock_unlock(swarm_rwlock_t *rw) {
  if (!rw)
    return EINVAL;
  struct swarm_thread *self = sync_self();
  rw_queue_lock(rw);
  if (rw->writer_) {
    if (!sync_same_owner(rw->writer_, self)) {
      sync_spin_unlock(&rw->lock_);
      return EPERM;
    }
    RW_SET(rw->writer_, 0);
  } else if (rw->readers_) {
    RW_SET(rw->readers_, rw->readers_ - 1);
  } else {
    sync_spin_unlock(&rw->lock_);
    return EPERM;
  }
  struct sync_waiter *list = rw->head_ ? rw_wake(rw) : NULL;
  sync_spin_unlock(&rw->lock_);
  sync_ready_list(list);
  /* a kernel thread that is not a worker: the kernel slices */
  if (sync_slice_tick(&rw_slice, RW_SLICE_NS) && worker_current())
    swarm_yield();
  return 0;
}
