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
 *     locks recursively; writers can starve under a constant stream of
 *     readers.
 *   PREFER_WRITER: a waiting writer holds new readers back; recursive read
 *     locking may deadlock, as glibc's NONRECURSIVE kind documents.
 * grant() is the one place that admits waiters; it runs after every change
 * that may admit someone (unlock, a waiting writer timing out).
 * Read holders are not recorded individually, so unlock cannot tell a
 * reader from a stranger; it returns EPERM only when nobody holds the lock
 * or another thread holds it for writing.
 */
#include "sync/sync.h"

#define TAG_READER 0
#define TAG_WRITER 1

static inline bool prefer_writer(swarm_rwlock_t *rw) {
  return rw->kind_ == SWARM_RWLOCK_PREFER_WRITER;
}

int swarm_rwlock_init(swarm_rwlock_t *rw, int kind) {
  if (!rw || (kind != SWARM_RWLOCK_PREFER_READER &&
              kind != SWARM_RWLOCK_PREFER_WRITER))
    return EINVAL;
  rw->lock_ = 0;
  rw->readers_ = 0;
  rw->writer_ = 0;
  rw->head_ = rw->tail_ = NULL;
  rw->writers_waiting_ = 0;
  rw->pad0_ = 0;
  rw->pad1_ = 0;
  rw->kind_ = (uint32_t)kind;
  rw->pad2_ = 0;
  return 0;
}

int swarm_rwlock_destroy(swarm_rwlock_t *rw) {
  if (!rw)
    return EINVAL;
  sync_spin_lock(&rw->lock_);
  int busy = rw->readers_ || rw->writer_ || rw->head_;
  sync_spin_unlock(&rw->lock_);
  return busy ? EBUSY : 0;
}

/* grant's test for each waiter once readers may enter: a reader enters,
 * and is counted, while the count has room; writers stay queued. */
static bool reader_enters(struct sync_waiter *w, void *arg) {
  swarm_rwlock_t *rw = arg;
  if (w->tag != TAG_READER || rw->readers_ == UINT32_MAX)
    return false;
  rw->readers_++;
  return true;
}

/* A ghost (sync.h) leaves: a writer no longer holds readers back. */
static void ghost_gone(struct sync_waiter *w) {
  swarm_rwlock_t *rw = w->object;
  if (w->tag == TAG_WRITER)
    rw->writers_waiting_--;
}

/* Admits the waiters the policy allows; returns them (dequeued, result 0)
 * linked through next. Called under the lock. */
static struct sync_waiter *grant(swarm_rwlock_t *rw) {
  struct sync_queue *q = sync_queue_of(&rw->head_);
  if (rw->writer_)
    return NULL;
  sync_queue_drop_ghosts(q, ghost_gone);
  struct sync_waiter *w = q->head;
  if (w && w->tag == TAG_WRITER && rw->readers_ == 0) {
    sync_queue_remove(q, w);
    w->result = 0;
    w->next = NULL;
    rw->writer_ = (uint64_t)(uintptr_t)w->thread;
    rw->writers_waiting_--;
    return w;
  }
  if (prefer_writer(rw) && rw->writers_waiting_)
    return NULL;
  return sync_queue_take(q, 0, reader_enters, rw);
}

static struct sync_waiter *rw_removed(struct sync_waiter *w) {
  swarm_rwlock_t *rw = w->object;
  if (w->tag == TAG_WRITER) {
    rw->writers_waiting_--;
    return grant(rw); /* readers it was holding back may enter now */
  }
  return NULL;
}

static int rw_lock(swarm_rwlock_t *rw, bool writer, bool try, int clock,
                   const struct timespec *abstime) {
  if (!rw)
    return EINVAL;
  struct swarm_thread *self = sync_self();
  uint64_t me = (uint64_t)(uintptr_t)self;
  uint64_t deadline = 0;
  bool expired = false;
  sync_spin_lock(&rw->lock_);
  /* Ghost writers would hold this reader back with nobody to grant. */
  sync_queue_drop_ghosts(sync_queue_of(&rw->head_), ghost_gone);
  if (rw->writer_ && sync_same_owner(rw->writer_, self)) {
    sync_spin_unlock(&rw->lock_);
    return try ? EBUSY : EDEADLK; /* a try never deadlocks (as NPTL) */
  }
  if (writer) {
    if (!rw->writer_ && rw->readers_ == 0) {
      rw->writer_ = me;
      sync_spin_unlock(&rw->lock_);
      return 0;
    }
  } else if (!rw->writer_ && (!prefer_writer(rw) || !rw->writers_waiting_)) {
    int r = 0;
    if (rw->readers_ == UINT32_MAX)
      r = EAGAIN;
    else
      rw->readers_++;
    sync_spin_unlock(&rw->lock_);
    return r;
  }
  if (try) {
    sync_spin_unlock(&rw->lock_);
    return EBUSY;
  }
  if (abstime) {
    int r = sync_deadline(clock, abstime, &deadline, &expired);
    if (r || expired) {
      sync_spin_unlock(&rw->lock_);
      return r ? r : ETIMEDOUT;
    }
  }
  struct sync_waiter w;
  sync_waiter_init(&w, self, &rw->lock_, sync_queue_of(&rw->head_), rw,
                   rw_removed);
  w.reason = SWARM_PARK_RWLOCK;
  w.tag = writer ? TAG_WRITER : TAG_READER;
  w.deadline_ns = deadline;
  if (writer)
    rw->writers_waiting_++;
  sync_queue_push(sync_queue_of(&rw->head_), &w);
  /* 0: grant() made us a holder before readying us. */
  return sync_wait_park(&w);
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

int swarm_rwlock_unlock(swarm_rwlock_t *rw) {
  if (!rw)
    return EINVAL;
  struct swarm_thread *self = sync_self();
  sync_spin_lock(&rw->lock_);
  if (rw->writer_) {
    if (!sync_same_owner(rw->writer_, self)) {
      sync_spin_unlock(&rw->lock_);
      return EPERM;
    }
    rw->writer_ = 0;
  } else if (rw->readers_) {
    rw->readers_--;
  } else {
    sync_spin_unlock(&rw->lock_);
    return EPERM;
  }
  struct sync_waiter *list = grant(rw);
  sync_spin_unlock(&rw->lock_);
  sync_ready_list(list);
  return 0;
}
