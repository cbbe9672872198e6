/*
 * sync/wait.c — how every synchronisation primitive waits: the waiter queue,
 * parking with a deadline and an interruption, the per-thread record, and
 * the small things built directly on them (one-shot events, sleeping).
 * The protocol and the lock order are in sync.h; this file keeps them.
 *
 * Parking is core's swarm_park, for swarm threads and for kernel threads
 * that are not workers alike; a deadline is core's too (struct
 * swarm_deadline): when it passes, waiter_expire takes the waiter out under
 * the object's lock, exactly as a timeout always did, and core resumes the
 * thread with ETIMEDOUT. What core does not know — which waiters an object
 * grants to when one leaves (`removed`), interruption — stays here.
 */
#include <stdlib.h>
#include <string.h>

#include "os/sys.h"
#include "sync/sync.h"

/* ---- queues ---- */

void sync_waiter_init(struct sync_waiter *w, struct swarm_thread *self,
                      uint32_t *lock, struct sync_queue *q, void *object,
                      sync_removed_fn removed) {
  memset(w, 0, sizeof *w);
  w->thread = self;
  w->lock = lock;
  w->lock_rank = LOCK_SYNC_OBJECT;
  w->queue = q;
  w->object = object;
  w->removed = removed;
}

__attribute__((noinline)) bool sync_slice_over(struct sync_slice *s,
                                               uint64_t slice_ns) {
  uint64_t now = sync_now_ns();
  if (now - s->start_ns < slice_ns)
    return false;
  s->start_ns = now;
  return true;
}

void sync_queue_push(struct sync_queue *q, struct sync_waiter *w) {
  w->next = NULL;
  w->prev = q->tail;
  if (q->tail)
    q->tail->next = w;
  else
    q->head = w;
  q->tail = w;
  w->queued = 1;
}

void sync_queue_push_front(struct sync_queue *q, struct sync_waiter *w) {
  if (!q->head) {
    sync_queue_push(q, w);
    return;
  }
  w->prev = NULL;
  w->next = q->head;
  q->head->prev = w;
  q->head = w;
  w->queued = 1;
}

void sync_queue_remove(struct sync_queue *q, struct sync_waiter *w) {
  if (w->prev)
    w->prev->next = w->next;
  else
    q->head = w->next;
  if (w->next)
    w->next->prev = w->prev;
  else
    q->tail = w->prev;
  w->next = w->prev = NULL;
  w->queued = 0;
}

void sync_queue_drop_ghosts_slow(struct sync_queue *q,
                                 void (*gone)(struct sync_waiter *w)) {
  uint32_t era = swarm_rt.era;
  struct sync_waiter *w = q->head;
  while (w) {
    struct sync_waiter *next = w->next;
    /* A waiter stamps its era when it parks, under the object's lock we
     * hold (core/park.c): a stale stamp is a parent's thread. */
    if (w->thread->era != era) {
      sync_queue_remove(q, w);
      w->result = ECANCELED;
      if (gone)
        gone(w);
    }
    w = next;
  }
}

static inline struct sync_waiter *pop_head(struct sync_queue *q, int result) {
  struct sync_waiter *w = q->head;
  if (w) {
    sync_queue_remove(q, w);
    w->result = result;
  }
  return w;
}

/* Off the fast path: a call there would cost the pop a stack frame. */
static __attribute__((noinline)) struct sync_waiter *
pop_past_ghosts(struct sync_queue *q, int result) {
  sync_queue_drop_ghosts_slow(q, NULL);
  return pop_head(q, result);
}

struct sync_waiter *sync_queue_pop(struct sync_queue *q, int result) {
  if (unlikely(__atomic_load_n(&swarm_rt.era, __ATOMIC_RELAXED) != 0))
    return pop_past_ghosts(q, result); /* sync_queue_drop_ghosts */
  return pop_head(q, result);
}

struct sync_waiter *sync_queue_take(struct sync_queue *q, int result,
                                    sync_take_fn take, void *arg) {
  sync_queue_drop_ghosts(q, NULL);
  struct sync_waiter *list = NULL, **tail = &list;
  struct sync_waiter *w = q->head;
  while (w) {
    struct sync_waiter *next = w->next;
    if (!take || take(w, arg)) {
      sync_queue_remove(q, w); /* leaves w->next NULL: the list's end */
      w->result = result;
      *tail = w;
      tail = &w->next;
    }
    w = next;
  }
  return list;
}

void sync_ready_list(struct sync_waiter *list) {
  while (list) {
    struct sync_waiter *next = list->next;
    /* After swarm_ready the waiter's stack frame may be gone. */
    swarm_ready(list->thread);
    list = next;
  }
}

/* Dequeues w for a timeout or an interruption; the caller holds *w->lock.
 * Returns the list of threads to ready after unlocking (w first). */
static struct sync_waiter *take_out(struct sync_waiter *w, int result) {
  sync_queue_remove(w->queue, w);
  w->result = result;
  struct sync_waiter *granted = w->removed ? w->removed(w) : NULL;
  w->next = granted;
  return w;
}

/* ---- parking ---- */

static bool commit_wait(struct swarm_thread *self, void *arg) {
  (void)self;
  sync_waiter_unlock(arg);
  return true;
}

/* The park's deadline passed (core calls this at most once, perhaps before
 * commit_wait has run: the lock makes it wait for the commit). */
static bool waiter_expire(struct swarm_thread *self, void *arg) {
  (void)self;
  struct sync_waiter *w = arg, *list = NULL;
  sync_waiter_lock(w);
  if (w->queued)
    list = take_out(w, ETIMEDOUT);
  sync_waiter_unlock(w);
  if (!list)
    return false;              /* a waker took it out and readies it */
  sync_ready_list(list->next); /* whom `removed` granted; core readies w */
  return true;
}

int sync_wait_park(struct sync_waiter *w) {
  if (w->interruptible) {
    struct sync_thread *rec = sync_thread_of(w->thread, false);
    /* rec->blocked was published by the caller before it took w->lock (see
     * sync_wait_begin in the callers); an interrupter that set the flag
     * before we read it here either finds us queued later (and takes us
     * out) or we see its flag now. */
    if (rec && atomic_load_explicit(&rec->interrupt, memory_order_seq_cst)) {
      struct sync_waiter *list = take_out(w, ECANCELED);
      sync_waiter_unlock(w);
      sync_ready_list(list->next);
      return ECANCELED;
    }
  }
  struct swarm_deadline deadline = {w->deadline_ns, waiter_expire};
  int r = swarm_park(commit_wait, w, (enum swarm_park_reason)w->reason,
                     w->deadline_ns ? &deadline : NULL);
  if (r == ENOMEM) /* no timer: the wait expired at once, without waiting */
    w->result = ENOMEM;
  return w->result;
}

/* ---- deadlines ---- */

int sync_deadline(int clock, const struct timespec *abstime, uint64_t *out,
                  bool *expired) {
  if (!abstime || abstime->tv_nsec < 0 || abstime->tv_nsec >= 1000000000L)
    return EINVAL;
  if (clock != CLOCK_REALTIME && clock != CLOCK_MONOTONIC)
    return EINVAL;
  uint64_t mono = sync_now_ns();
  int64_t now_on_clock;
  if (clock == CLOCK_MONOTONIC) {
    now_on_clock = (int64_t)mono;
  } else {
    struct timespec ts;
    libc_clock_gettime(CLOCK_REALTIME, &ts);
    now_on_clock = (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
  }
  if (abstime->tv_sec < 0) {
    *expired = true;
    *out = mono ? mono : 1;
    return 0;
  }
  /* Saturate far deadlines instead of overflowing. */
  int64_t abs_ns;
  if (abstime->tv_sec > (INT64_MAX / 1000000000LL) - 1)
    abs_ns = INT64_MAX;
  else
    abs_ns = (int64_t)abstime->tv_sec * 1000000000LL + abstime->tv_nsec;
  if (abs_ns <= now_on_clock) {
    *expired = true;
    *out = mono ? mono : 1;
    return 0;
  }
  uint64_t delta = (uint64_t)(abs_ns - now_on_clock);
  *expired = false;
  *out = delta > UINT64_MAX - mono ? UINT64_MAX : mono + delta;
  return 0;
}

/* ---- per-thread record ---- */

/* slots[SLOT_SYNC] holds the record's address and, in its low bits (the
 * record is 16-aligned), how many interrupters are in it (record_borrow)
 * and whether its thread is freeing it. The record is freed by its own thread
 * (sync_thread_exit): it sets RECORD_DROPPING, which lets no interrupter
 * in, waits for those in it to leave, and leaves RECORD_DROPPING alone in
 * the slot (core clears the slots after the exit hook): no interrupter
 * makes a record for a thread past that point. So no interrupter ever
 * touches a freed record. (Before, one could read the slot, the thread
 * free the record, and the interrupter store into and lock freed memory,
 * where malloc's free-list link read as a held lock: pthread_cancel spun
 * for good, in dropin_wait_any and dropin_unwind once in a few hundred CI
 * runs.) Only an interrupter that read "not exited" before all that and
 * reaches the slot after core cleared it still makes a record, for a
 * descriptor that no longer runs (as before; the drop-in's checks make
 * that window small). A fork copies a borrow or a held record lock of a
 * parent thread that is in the middle of this into the child, where that
 * thread does not exist: sync_thread_after_fork lets both go for the
 * flow that continues there (tests/pthread/dropin_fork_kicked). */
#define RECORD_BORROWS ((uintptr_t)7)
#define RECORD_DROPPING ((uintptr_t)8)
#define RECORD_BITS (RECORD_BORROWS | RECORD_DROPPING)

static inline struct sync_thread *record_at(uintptr_t v) {
  return (struct sync_thread *)(v & ~RECORD_BITS);
}

static inline uintptr_t slot_load(void **slot) {
  return (uintptr_t)__atomic_load_n(slot, __ATOMIC_ACQUIRE);
}

static inline bool slot_cas(void **slot, uintptr_t *v, uintptr_t to) {
  void *expected = (void *)*v;
  bool ok = __atomic_compare_exchange_n(slot, &expected, (void *)to, true,
                                        __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
  *v = (uintptr_t)expected;
  return ok;
}

/* An interrupter is in the record for a few locked steps, but its kernel
 * thread may be preempted: relax, then yield. */
static void borrow_pause(unsigned *rounds) {
  if (++*rounds < 64)
    os_cpu_relax();
  else
    sys_sched_yield();
}

/* A fresh record in the slot if it still holds `from`; false otherwise
 * (or without memory: *nomem). */
static bool record_make(void **slot, uintptr_t from, bool *nomem) {
  /* aligned past RECORD_BITS whatever the allocator's own alignment */
  size_t size = (sizeof(struct sync_thread) + RECORD_BITS) & ~RECORD_BITS;
  struct sync_thread *fresh = aligned_alloc(RECORD_BITS + 1, size);
  *nomem = !fresh;
  if (!fresh)
    return false;
  memset(fresh, 0, sizeof *fresh);
  spin_init(&fresh->lock, LOCK_SYNC_RECORD);
  if (slot_cas(slot, &from, (uintptr_t)fresh))
    return true;
  free(fresh);
  return false;
}

struct sync_thread *sync_thread_of(struct swarm_thread *t, bool create) {
  void **slot = &t->slots[SLOT_SYNC];
  uintptr_t v = slot_load(slot);
  if (record_at(v) || !create)
    return record_at(v);
  /* 0, or RECORD_DROPPING: t itself wants one again after its exit work
   * (only t creates from there). The owner and an interrupter may both
   * create from 0: one wins. */
  bool nomem;
  while (!record_at(v) && !record_make(slot, v, &nomem)) {
    if (nomem)
      return NULL;
    v = slot_load(slot);
  }
  return record_at(slot_load(slot));
}

/* Enters t's record (made if need be; t is not the caller), which stays
 * alive until record_return. NULL and *gone: t is past its exit work;
 * NULL alone: no memory. */
static struct sync_thread *record_borrow(struct swarm_thread *t, bool *gone) {
  void **slot = &t->slots[SLOT_SYNC];
  uintptr_t v = slot_load(slot);
  unsigned rounds = 0;
  bool nomem;
  *gone = false;
  for (;;) {
    if (v & RECORD_DROPPING) {
      *gone = true;
      return NULL;
    } else if (!v) {
      if (!record_make(slot, 0, &nomem) && nomem)
        return NULL;
      v = slot_load(slot);
    } else if ((v & RECORD_BORROWS) == RECORD_BORROWS) { /* 7 at once */
      borrow_pause(&rounds);
      v = slot_load(slot);
    } else if (slot_cas(slot, &v, v + 1)) {
      return record_at(v);
    }
  }
}

static void record_return(struct swarm_thread *t) {
  void **slot = &t->slots[SLOT_SYNC];
  uintptr_t v = slot_load(slot);
  while (!slot_cas(slot, &v, v - 1))
    ;
}

void sync_thread_record_drop(struct swarm_thread *self) {
  void **slot = &self->slots[SLOT_SYNC];
  uintptr_t v = slot_load(slot);
  while (!slot_cas(slot, &v, v | RECORD_DROPPING))
    ;
  unsigned rounds = 0;
  while (slot_load(slot) & RECORD_BORROWS) /* interrupters still in it */
    borrow_pause(&rounds);
  __atomic_store_n(slot, (void *)RECORD_DROPPING, __ATOMIC_RELEASE);
}

void sync_thread_after_fork(struct swarm_thread *self) {
  void **slot = &self->slots[SLOT_SYNC];
  uintptr_t v = slot_load(slot);
  /* The flow itself was in fork, not in its own record: any borrow and any
   * hold of the lock are a parent thread's, a ghost here. */
  if (v & RECORD_BORROWS)
    __atomic_store_n(slot, (void *)(v & ~RECORD_BORROWS), __ATOMIC_RELEASE);
  struct sync_thread *rec = record_at(v);
  if (rec)
    spin_init(&rec->lock, LOCK_SYNC_RECORD);
}

int sync_interrupt(struct swarm_thread *t) {
  bool gone;
  struct sync_thread *rec = record_borrow(t, &gone);
  if (!rec)
    return gone ? 0 : ENOMEM; /* gone: it is exiting, nothing to end */
  atomic_store_explicit(&rec->interrupt, 1, memory_order_seq_cst);
  struct sync_waiter *list = NULL;
  struct swarm_thread *woken = NULL;
  spin_lock(&rec->lock);
  struct sync_waiter *w = rec->blocked;
  if (w) {
    /* rec->lock keeps w alive: the waiter clears `blocked` under it before
     * its stack frame goes away. */
    sync_waiter_lock(w);
    if (w->queued)
      list = take_out(w, ECANCELED);
    sync_waiter_unlock(w);
  } else if (rec->blocked_hook) {
    woken = rec->blocked_hook(rec->blocked_hook_arg); /* alive alike */
  }
  spin_unlock(&rec->lock);
  record_return(t);
  sync_ready_list(list);
  if (woken)
    swarm_ready(woken);
  return 0;
}

bool sync_interruptible_begin(struct swarm_thread *self,
                              struct swarm_thread *(*hook)(void *), void *arg) {
  struct sync_thread *rec = sync_thread_of(self, true);
  if (!rec)
    return true;
  spin_lock(&rec->lock);
  rec->blocked_hook = hook;
  rec->blocked_hook_arg = arg;
  spin_unlock(&rec->lock);
  /* sync_interrupt stores the flag, then looks for a hook under the lock:
   * it finds ours, or we see its flag now (both seq_cst). */
  if (atomic_load_explicit(&rec->interrupt, memory_order_seq_cst)) {
    sync_interruptible_end(self);
    return false;
  }
  return true;
}

void sync_interruptible_end(struct swarm_thread *self) {
  struct sync_thread *rec = sync_thread_of(self, false);
  if (!rec)
    return;
  spin_lock(&rec->lock);
  rec->blocked_hook = NULL;
  rec->blocked_hook_arg = NULL;
  spin_unlock(&rec->lock);
}

void sync_interrupt_clear(struct swarm_thread *t) {
  struct sync_thread *rec = sync_thread_of(t, false);
  if (rec)
    atomic_store_explicit(&rec->interrupt, 0, memory_order_seq_cst);
}

bool sync_interrupt_pending(struct swarm_thread *self) {
  struct sync_thread *rec = sync_thread_of(self, false);
  return rec && atomic_load_explicit(&rec->interrupt, memory_order_seq_cst);
}

/* Publishes w as the thread's interruptible wait (before the object's lock
 * is taken: lock order record -> object). Returns false when no record can
 * be had; the wait then proceeds uninterruptibly. */
bool sync_wait_begin(struct sync_waiter *w) {
  if (!w->interruptible)
    return false;
  struct sync_thread *rec = sync_thread_of(w->thread, true);
  if (!rec) {
    w->interruptible = false;
    return false;
  }
  spin_lock(&rec->lock);
  rec->blocked = w;
  spin_unlock(&rec->lock);
  return true;
}

void sync_wait_end(struct sync_waiter *w) {
  if (!w->interruptible)
    return;
  struct sync_thread *rec = sync_thread_of(w->thread, false);
  spin_lock(&rec->lock);
  rec->blocked = NULL;
  spin_unlock(&rec->lock);
}

/* ---- one-shot events ---- */

int sync_event_wait(struct sync_event *e, uint64_t deadline_ns,
                    bool interruptible) {
  if (__atomic_load_n(&e->done, __ATOMIC_ACQUIRE))
    return 0;
  struct sync_waiter w;
  sync_waiter_init(&w, sync_self(), &e->lock, &e->queue, e, NULL);
  w.interruptible = interruptible;
  w.deadline_ns = deadline_ns;
  sync_wait_begin(&w);
  sync_spin_lock(&e->lock);
  int r = 0;
  if (!e->done) {
    if (deadline_ns && deadline_ns <= sync_now_ns()) {
      r = ETIMEDOUT;
      sync_spin_unlock(&e->lock);
    } else {
      sync_queue_push(&e->queue, &w);
      r = sync_wait_park(&w);
    }
  } else {
    sync_spin_unlock(&e->lock);
  }
  sync_wait_end(&w);
  return r;
}

void sync_event_set(struct sync_event *e) {
  sync_spin_lock(&e->lock);
  __atomic_store_n(&e->done, 1, __ATOMIC_RELEASE);
  struct sync_waiter *list = sync_queue_take(&e->queue, 0, NULL, NULL);
  sync_spin_unlock(&e->lock);
  sync_ready_list(list);
}

/* ---- sleeping ---- */

int sync_sleep_until(uint64_t deadline_ns, bool interruptible) {
  uint32_t lock = 0;
  struct sync_queue q = {NULL, NULL};
  struct sync_waiter w;
  sync_waiter_init(&w, sync_self(), &lock, &q, NULL, NULL);
  w.reason = SWARM_PARK_SLEEP;
  w.interruptible = interruptible;
  w.deadline_ns = deadline_ns ? deadline_ns : 1;
  sync_wait_begin(&w);
  int r = 0;
  sync_spin_lock(&lock);
  if (w.deadline_ns > sync_now_ns()) {
    sync_queue_push(&q, &w);
    r = sync_wait_park(&w);
  } else {
    sync_spin_unlock(&lock);
    r = ETIMEDOUT;
  }
  sync_wait_end(&w);
  if (r == ETIMEDOUT)
    return 0; /* the sleep ran its course */
  if (r == ENOMEM) {
    /* No timer memory: sleep without parking rather than not at all. */
    struct timespec until = {(time_t)(deadline_ns / 1000000000u),
                             (long)(deadline_ns % 1000000000u)};
    while (sync_now_ns() < deadline_ns) /* CLOCK_MONOTONIC, as sync_now_ns */
      sys_sleep_until(CLOCK_MONOTONIC, &until);
    return 0;
  }
  return r;
}

void swarm_sleep_ns(uint64_t ns) {
  if (ns == 0) {
    swarm_yield();
    return;
  }
  uint64_t now = sync_now_ns();
  sync_sleep_until(ns > UINT64_MAX - now ? UINT64_MAX : now + ns, false);
}
