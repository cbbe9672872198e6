/*
 * os/spinlock.h — the runtime's one lock: a test-and-test-and-set spinlock
 * with one back-off policy, and the order in which the runtime's locks may
 * be nested (checked in debug builds).
 *
 * Why a spinlock and nothing else. Every critical section of the runtime is
 * a few loads and stores (a list splice, a heap sift, a counter), and no
 * swarm thread ever switches inside one: the only lock held across a switch
 * is the one a park's commit releases, on the same kernel thread, once the
 * parking thread is off its stack (core/core.h). So a holder can only be
 * held up by the kernel (preempted, or inside a system call), never by
 * swarm's scheduler, and a futex-based mutex would buy nothing but a
 * locked instruction on every release. Rejected: NPTL mutexes (the drop-in
 * defines pthread_mutex_lock itself, and the runtime must not call it), a
 * second, sleeping lock type for the few long holders (the lifecycle lock,
 * held while kernel threads start; the trace file, written under its lock):
 * their contenders are rare and yield their kernel thread (below).
 *
 * Back-off, the one policy: read the word until it looks free, relaxing the
 * CPU (os_cpu_relax) for SPIN_RELAX_ROUNDS reads; after that, yield the
 * kernel thread between reads (sched_yield), since a holder that stays this
 * long was preempted (the machine has fewer cores than runnable kernel
 * threads) or is one of the long holders above.
 *
 * Lock order. A kernel thread may take a lock only while every lock it
 * holds comes earlier in enum lock_rank, the single place the order is
 * written; each lock's declaration names its rank. A lock embedded in a
 * public object (sync's objects: the object's 32-bit lock word, which a
 * static initialiser leaves all zero) has no room for its rank, so its
 * users pass the rank at each acquisition (spin_lock_as). LOCK_UNRANKED (0,
 * what a zeroed lock has) is never checked.
 *
 * Not this lock: the drop-in's pthread_spin_lock. A program's spinlock may
 * be held by a swarm thread that parks (it holds it across a read), so its
 * waiters must yield their swarm thread, not their kernel thread, or a
 * holder queued on the same worker would never run (pthread/objects.c).
 *
 * Debug builds (SWARM_LOCK_ORDER_CHECK, CMake's Debug configuration, which
 * the sanitizer suite uses) keep, per kernel thread, the set of ranks held,
 * and abort with both lock names on an acquisition out of order. The set is
 * read and written only inside out-of-line functions (os.c) so that, as for
 * worker_current (core.h), no thread-pointer-relative address is ever kept
 * across a switch that moved the caller to another kernel thread.
 */
#ifndef SWARM_OS_SPINLOCK_H
#define SWARM_OS_SPINLOCK_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "os/os.h"

/* The runtime's locks, outermost first: while holding one, a kernel thread
 * may take only locks further down this list. */
enum lock_rank {
  LOCK_UNRANKED = 0, /* not checked */
  LOCK_LIFECYCLE,    /* core: swarm_init / swarm_finalize; under it the
                      * runtime takes descriptors, stacks, the trace file */
  LOCK_SYNC_RECORD,  /* sync: a thread's record (interruption); taken
                      * before the lock of the wait it interrupts */
  LOCK_SYNC_COND,    /* sync: a condition variable's queue; a cond wait
                      * releases its mutex while holding it */
  LOCK_SYNC_OBJECT,  /* sync: the queue of a mutex, rwlock, barrier, sem,
                      * once bucket, event or sleep */
  LOCK_IO_FD,        /* io: one descriptor's entry (wait lists, counters) */
  LOCK_IO_EPOLL,     /* io: creating a worker's poller (epoll or ring) */
  LOCK_IO_RING,      /* io: a worker ring's submission or completion side
                      * (io/uring.c); taken under a descriptor's lock */
  LOCK_OFFLOAD,      /* io: the file-offload pool's queue */
  LOCK_TIMERS,       /* core: a worker's timer heap; a timed park arms its
                      * timer while holding its wait list's lock */
  LOCK_READY_QUEUE,  /* core: a worker's ready queue (swarm_ready) */
  LOCK_DESC_TABLE,   /* core: the global list of free descriptors */
  LOCK_STACK_POOL,   /* core: the global pool of free stacks */
  LOCK_TRACE_FILE,   /* core: the trace file; a full trace buffer is
                      * written wherever a record is made */
  LOCK_RANKS
};
_Static_assert(LOCK_RANKS <= 32, "the debug check keeps ranks in 32 bits");

/* 0 free, 1 held; `rank` is set once, when the lock is initialised. */
struct spinlock {
  _Atomic uint16_t held;
  uint16_t rank; /* enum lock_rank; in a public object's word the lock never
                  * reads it (spin_lock_as): a mutex keeps its fork era
                  * there, under the lock (sync/mutex.c) */
};
_Static_assert(sizeof(struct spinlock) == sizeof(uint32_t),
               "a spinlock overlays a public object's 32-bit lock word");

#define SPINLOCK_INIT(rank_)                                                   \
  { 0, (rank_) }
#define SPIN_RELAX_ROUNDS 256

static inline void spin_init(struct spinlock *l, enum lock_rank rank) {
  atomic_init(&l->held, 0);
  l->rank = (uint16_t)rank;
}

/* The lock word of a public object (sync's objects keep a uint32_t). */
static inline struct spinlock *spinlock_of_word(uint32_t *word) {
  return (struct spinlock *)(void *)word;
}

#if defined(SWARM_LOCK_ORDER_CHECK)
void lock_order_acquire(unsigned rank);
void lock_order_release(unsigned rank);
#else
static inline void lock_order_acquire(unsigned rank) {
  (void)rank;
}
static inline void lock_order_release(unsigned rank) {
  (void)rank;
}
#endif

void spin_lock_contended(struct spinlock *l);

/* Takes l, which has rank `rank` (spin_lock: the rank l was made with). */
static inline void spin_lock_as(struct spinlock *l, enum lock_rank rank) {
  lock_order_acquire(rank);
  if (__builtin_expect(
          atomic_exchange_explicit(&l->held, 1, memory_order_acquire), 0))
    spin_lock_contended(l);
}

static inline void spin_unlock_as(struct spinlock *l, enum lock_rank rank) {
  atomic_store_explicit(&l->held, 0, memory_order_release);
  lock_order_release(rank);
}

static inline void spin_lock(struct spinlock *l) {
  spin_lock_as(l, (enum lock_rank)l->rank);
}

static inline void spin_unlock(struct spinlock *l) {
  spin_unlock_as(l, (enum lock_rank)l->rank);
}

#endif
