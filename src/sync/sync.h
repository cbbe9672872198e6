/*
 * sync/sync.h — the internal interface of the synchronisation layer: the
 * waiter every blocking primitive queues, the one function that parks on it
 * (with an optional deadline and an optional interruption for pthread
 * cancellation), the per-thread record (thread-specific values, interrupt
 * flag) and the small spinlock that guards each object's waiter queue.
 *
 * The waiter protocol, shared by mutex, cond, rwlock, barrier, sem, once and
 * sleep:
 *   1. The waiting thread builds a `struct sync_waiter` on its own stack,
 *      takes the object's spinlock, decides it must wait, appends the waiter
 *      to the object's queue (`queued` = 1) and calls sync_wait_park() with
 *      the spinlock still held.
 *   2. sync_wait_park parks through swarm_park, with the waiter's deadline
 *      if it has one; the commit, running once the thread is off its stack,
 *      releases the spinlock. So nobody can dequeue-and-ready the thread
 *      before it is parked (core's ownership rule); a deadline that passes
 *      before the commit has run waits for the spinlock like anyone else.
 *   3. Exactly one party dequeues a waiter, always under the object's
 *      spinlock, and sets `result` then: a waker (0, with whatever the
 *      primitive granted, e.g. mutex ownership handed over), the deadline
 *      (ETIMEDOUT; waiter_expire, which core calls and then readies the
 *      thread itself), or an interrupter (ECANCELED). That party then
 *      readies the thread after releasing the spinlock. A party that finds
 *      `queued` == 0 does nothing. A waker takes one waiter with
 *      sync_queue_pop, several (a broadcast, a barrier's round, readers)
 *      with sync_queue_take, and readies them with sync_ready_list.
 *   4. Once resumed the waiter reads `result`; core has disarmed the
 *      deadline before swarm_park returns.
 *
 * Locks are os/spinlock.h's, in three ranks of the runtime's lock order:
 * a thread record's lock (LOCK_SYNC_RECORD) may be held while taking an
 * object's (interruption), never the other way round; a condition
 * variable's (LOCK_SYNC_COND) while taking its mutex's (a cond wait releases
 * the mutex while it holds the cond's lock); every other object's lock
 * (LOCK_SYNC_OBJECT) is taken alone among sync's, before core's timer heap
 * and ready queues.
 *
 * Nothing ever parks while holding a spinlock other than through step 2, and
 * a worker never switches threads inside a critical section, so a spinlock
 * is only ever contended by code running on another kernel thread.
 */
#ifndef SWARM_SYNC_H
#define SWARM_SYNC_H

#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "core/core.h"

/* ---- the object's lock (a uint32_t inside each public object) ---- */

/* Rank LOCK_SYNC_OBJECT; a condition variable's lock word is taken with
 * rank LOCK_SYNC_COND (cond.c). */
static inline void sync_spin_lock(uint32_t *word) {
  spin_lock_as(spinlock_of_word(word), LOCK_SYNC_OBJECT);
}

static inline void sync_spin_unlock(uint32_t *word) {
  spin_unlock_as(spinlock_of_word(word), LOCK_SYNC_OBJECT);
}

/* ---- waiters ---- */

struct sync_waiter;

/* The FIFO of waiters; the public objects carry head_ and tail_ pointers
 * next to each other, which this struct overlays. */
struct sync_queue {
  struct sync_waiter *head, *tail;
};

static inline struct sync_queue *sync_queue_of(void **head) {
  return (struct sync_queue *)(void *)head;
}

/* Called under the object's lock right after a timeout or an interruption
 * dequeued `w`, to restore the object's invariants (a mutex whose last
 * waiter left, a writer that stopped holding readers back). It may grant the
 * object to other waiters: it dequeues them, sets their result and returns
 * them linked through `next`; the caller readies them after unlocking. */
typedef struct sync_waiter *(*sync_removed_fn)(struct sync_waiter *w);

struct sync_waiter {
  struct sync_waiter *next, *prev;
  struct swarm_thread *thread;
  uint32_t *lock;           /* the object's lock word */
  struct sync_queue *queue; /* the object's queue */
  sync_removed_fn removed;  /* may be NULL */
  void *object;             /* the primitive, for `removed` */
  uintptr_t tag;            /* primitive-specific (rwlock: writer?) */
  uint64_t deadline_ns;     /* CLOCK_MONOTONIC; 0: none */
  int result;               /* valid once dequeued */
  int queued;
  bool interruptible;
  uint8_t reason;    /* enum swarm_park_reason, for the trace; 0: other */
  uint8_t lock_rank; /* of *lock: LOCK_SYNC_OBJECT unless set after init */
};

/* The lock of w's object, in w's rank. */
static inline void sync_waiter_lock(struct sync_waiter *w) {
  spin_lock_as(spinlock_of_word(w->lock), (enum lock_rank)w->lock_rank);
}
static inline void sync_waiter_unlock(struct sync_waiter *w) {
  spin_unlock_as(spinlock_of_word(w->lock), (enum lock_rank)w->lock_rank);
}

/* Prepares w for the calling thread (self). */
void sync_waiter_init(struct sync_waiter *w, struct swarm_thread *self,
                      uint32_t *lock, struct sync_queue *q, void *object,
                      sync_removed_fn removed);

void sync_queue_push(struct sync_queue *q, struct sync_waiter *w);
/* At the head: a woken waiter that lost the race keeps its place in front
 * of those who came later. */
void sync_queue_push_front(struct sync_queue *q, struct sync_waiter *w);
void sync_queue_remove(struct sync_queue *q, struct sync_waiter *w);
/* Takes the head (NULL if empty), marking it dequeued with `result`. */
struct sync_waiter *sync_queue_pop(struct sync_queue *q, int result);

/* Ghosts (core/fork.c): in a fork child, the waiters the parent's threads
 * left in an object's queue. They never run (swarm_ready drops them), so
 * no hand-off may go to one: it would be lost (a signal, a post) or leave
 * the object to a thread that never releases it (a mutex, a write lock).
 * sync_queue_drop_ghosts dequeues every ghost of q (result ECANCELED),
 * calling gone(w) for each, if not NULL, under the object's lock, to undo
 * what the waiter counts for in the object; sync_queue_pop and
 * sync_queue_take call it with NULL first, so objects whose waiters count
 * for nothing (cond, sem, barrier, once, events) need nothing more. One
 * load and a branch until a fork child's runtime has started (swarm_rt.era
 * is 0 until then); then a walk of the queue per hand-off. */
void sync_queue_drop_ghosts_slow(struct sync_queue *q,
                                 void (*gone)(struct sync_waiter *w));
static inline void sync_queue_drop_ghosts(struct sync_queue *q,
                                          void (*gone)(struct sync_waiter *w)) {
  if (unlikely(__atomic_load_n(&swarm_rt.era, __ATOMIC_RELAXED) != 0))
    sync_queue_drop_ghosts_slow(q, gone);
}

/* Whether sync_queue_take takes w; called once per waiter, in queue order,
 * under the object's lock, so it may update the object for each waiter it
 * takes (a reader entering a rwlock). */
typedef bool (*sync_take_fn)(struct sync_waiter *w, void *arg);

/* Dequeues, in queue order, every waiter `take` accepts (every waiter if
 * take is NULL), marking each with `result`, and returns them linked
 * through next for sync_ready_list, which the caller runs after unlocking.
 * The one way a primitive wakes more than one waiter (broadcast, barrier,
 * once, rwlock readers, events, a drop-in thread's joiners). */
struct sync_waiter *sync_queue_take(struct sync_queue *q, int result,
                                    sync_take_fn take, void *arg);

/* Step 2 of the protocol: called with *w->lock held and w queued; returns
 * with the lock released and w dequeued, giving w->result (0, ETIMEDOUT,
 * ECANCELED, or ENOMEM when core could arm no timer for the deadline). */
int sync_wait_park(struct sync_waiter *w);

/* Interruptible waits publish themselves in the thread's record before
 * taking the object's lock (lock order record -> object) and withdraw after
 * waking. Both do nothing for a waiter that is not interruptible. */
bool sync_wait_begin(struct sync_waiter *w);
void sync_wait_end(struct sync_waiter *w);

/* Readies every waiter of a list built by sync_queue_pop / `removed`
 * (linked through next). Call after unlocking; w must not be touched after
 * its thread is readied, so `next` is read first. */
void sync_ready_list(struct sync_waiter *list);

/* ---- deadlines ---- */

/* Converts an absolute `abstime` on `clock` to a CLOCK_MONOTONIC deadline in
 * ns (at least 1, so 0 can mean "none"). EINVAL for a bad timespec or clock.
 * *expired is set when the deadline has already passed. */
int sync_deadline(int clock, const struct timespec *abstime, uint64_t *out,
                  bool *expired);

/* ---- identity ---- */

/* The calling thread (never NULL: core aborts when it cannot make an
 * external descriptor). Owners recorded in objects are these pointers. */
static inline struct swarm_thread *sync_self(void) {
  struct worker *w = worker_current();
  if (likely(w))
    return w->current;
  return swarm_current_thread();
}

/* Whether an object's recorded owner is self. (A fork child's flow keeps
 * its descriptor, core's runtime_fork_child, so what it held stays its.) */
static inline bool sync_same_owner(uint64_t owner, struct swarm_thread *self) {
  return owner == (uint64_t)(uintptr_t)self;
}

/* ---- per-thread record (slots[SLOT_SYNC]) ---- */

struct sync_key_value {
  uint32_t seq; /* the key's sequence number when set */
  void *value;
};

#define SYNC_CXX_EH_WORDS 4
struct sync_thread {
  struct spinlock lock;        /* LOCK_SYNC_RECORD: `blocked`, the hook */
  _Atomic int interrupt;       /* an interruption is pending */
  struct sync_waiter *blocked; /* the interruptible wait in progress */
  /* or another layer's (the I/O layer's): see sync_interruptible_begin */
  struct swarm_thread *(*blocked_hook)(void *);
  void *blocked_hook_arg;
  uint32_t nvalues;
  struct sync_key_value *values;
  /* cxx_eh.c: the C++ runtime's exceptions being handled by the thread */
  void *cxx_eh[SYNC_CXX_EH_WORDS];
};

/* The record of t, made if `create` (NULL if not made or no memory). */
struct sync_thread *sync_thread_of(struct swarm_thread *t, bool create);

/* Takes the record out of self's slot, once the interrupters in it have
 * left, with no new one let in, and none let make a new one (wait.c); the
 * caller then frees it (sync_thread_exit). */
void sync_thread_record_drop(struct swarm_thread *self);

/* In a fork child, for the flow that called fork: another kernel thread
 * of the parent may have been inside this thread's record at the fork (a
 * signal or a cancellation entering it: a borrow in the slot, the record's
 * lock), and it does not exist in the child. Returns the borrows and frees
 * the lock that only such a ghost can hold (wait.c). */
void sync_thread_after_fork(struct swarm_thread *self);

/* Runs the calling thread's key destructors and frees its record. Called
 * on every thread exit: by core, through swarm_thread_exit_hook, and by the
 * drop-in for its threads (docs/sync.md). */
void sync_thread_exit(struct swarm_thread *self);

/* Interruption (the drop-in's deferred cancellation): marks t interrupted;
 * an interruptible wait in progress ends with ECANCELED, and later ones
 * return ECANCELED at once, until sync_interrupt_clear. ENOMEM if t's record
 * cannot be made. */
int sync_interrupt(struct swarm_thread *t);
void sync_interrupt_clear(struct swarm_thread *t);
bool sync_interrupt_pending(struct swarm_thread *self);
/* Set by the drop-in (pthread/signal.c): called by an interrupted
 * condition wait before it takes the mutex back, so that a signal's
 * handler runs where NPTL runs it, without the mutex (a handler that takes
 * it would otherwise deadlock on its own thread). */
extern void (*sync_wait_interrupted_hook)(void);

/* Interruptible waits outside sync (the I/O layer's parks). While one is
 * registered, sync_interrupt calls hook(arg) under the record's lock; the
 * hook ends the wait if it still can and returns the thread to ready (or
 * NULL), which sync_interrupt readies after the lock. Returns false, with
 * nothing registered, when an interruption is already pending: the wait
 * must end with ECANCELED without parking. With no memory for a record it
 * registers nothing and returns true: the wait is not interruptible.
 * sync_interruptible_end unregisters; once it returns, the hook is not
 * running and will not run, so the wait's memory may go. */
bool sync_interruptible_begin(struct swarm_thread *self,
                              struct swarm_thread *(*hook)(void *), void *arg);
void sync_interruptible_end(struct swarm_thread *self);

/* Interruptible forms used by the drop-in's cancellation points. They behave
 * as the swarm_* functions and may also return ECANCELED (cond waits return
 * it with the mutex locked again). */
int sync_cond_wait_x(swarm_cond_t *c, swarm_mutex_t *m, int clock,
                     const struct timespec *abstime, bool interruptible);
int sync_sem_wait_x(swarm_sem_t *s, uint64_t deadline_ns, bool interruptible);
/* Sleeps until deadline_ns (CLOCK_MONOTONIC): 0, or ECANCELED. */
int sync_sleep_until(uint64_t deadline_ns, bool interruptible);

/* A one-shot event many threads may wait for (the drop-in's join). */
struct sync_event {
  uint32_t lock;
  uint32_t done;
  struct sync_queue queue;
};
/* 0 once set, ETIMEDOUT at deadline_ns (0: none), ECANCELED if interrupted. */
int sync_event_wait(struct sync_event *e, uint64_t deadline_ns,
                    bool interruptible);
void sync_event_set(struct sync_event *e);

/* Mutex internals for condition variables (mutex.c). */
int sync_mutex_check_owner(swarm_mutex_t *m, struct swarm_thread *self);
uint32_t sync_mutex_release_all(swarm_mutex_t *m);
void sync_mutex_reacquire(swarm_mutex_t *m, uint32_t depth);

/* Was s initialised by swarm_sem_init (and not destroyed)? */
bool sync_sem_is_ours(const void *s);

/* Abandons a swarm_once whose routine did not return (cancelled): the once
 * object goes back to "not run" and waiters retry. */
void sync_once_abort(swarm_once_t *once);

static inline uint64_t sync_now_ns(void) {
  return os_now_ns_inline();
}

/* An unlocker's time slice (mutex.c, rwlock.c). Threads are not preempted:
 * one that passes a lock around without parking would keep its worker
 * while others runnable there wait, so unlockers yield once per slice of
 * their kernel thread's time, as a kernel's time slice would. Each lock
 * kind keeps its own per-kernel-thread state (initial-exec TLS: no call);
 * the clock is read on every SYNC_SLICE_CHECK_EVERY-th unlock only. */
#define SYNC_SLICE_CHECK_EVERY 16
struct sync_slice {
  uint32_t unlocks;
  uint64_t start_ns;
};
/* The clock's part of sync_slice_tick (wait.c). */
bool sync_slice_over(struct sync_slice *s, uint64_t slice_ns);
/* True once per slice_ns of this kernel thread's time: the unlocker yields. */
static inline bool sync_slice_tick(struct sync_slice *s, uint64_t slice_ns) {
  return unlikely(++s->unlocks % SYNC_SLICE_CHECK_EVERY == 0) &&
         sync_slice_over(s, slice_ns);
}

#endif
