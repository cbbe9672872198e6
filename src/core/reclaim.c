/*
 * core/reclaim.c — at a memory limit, the free stacks and descriptors that
 * other workers cache, brought back to the global pool and list.
 *
 * Free stacks and descriptors are cached per worker (stack.c, thread.c):
 * only the owner touches its caches, so the spawn path needs no atomics,
 * and only a cache's spill reaches the global pool or list. At a limit the
 * room it leaves can therefore sit in a cache the spawning worker (or a
 * kernel thread that is not a worker) cannot reach. Before a spawn says
 * EAGAIN it asks the other workers for what they hold:
 *  - reclaim_from_workers sets DUE_GIVE_BACK in each running worker's due
 *    word (a spare only while it is active: a retiring spare gives its
 *    caches back first, monitor.c), wakes it if it sleeps, and waits on
 *    reclaim_given until what it needs is there, every worker asked has
 *    answered, or RECLAIM_WAIT_NS passed;
 *  - the asked worker answers at its next park, yield or scheduler round
 *    (sched.c, sched_due): worker_give_back moves the stacks kept on its
 *    free descriptors into its stack cache, flushes that cache to the pool
 *    and its descriptor cache to the global list, clears the bit and wakes
 *    the waiting spawners;
 *  - a worker that let a wait pass without answering (its thread computes)
 *    is marked late (DUE_GIVE_BACK_LATE) and not waited for again until it
 *    answers: at a limit beside such a worker, only the first refused
 *    spawn waits, not every one (a program that falls back to running the
 *    work itself on EAGAIN would otherwise pay the wait per task).
 *
 * Invariants: only the owner clears its DUE_GIVE_BACK bit, and only after
 * its caches are empty (release), so a waiter that reads the bit clear
 * (acquire) finds them in the pool and the list; it clears the late bit
 * with it, and the late bit is only ever set beside a set DUE_GIVE_BACK
 * (a CAS), so it never outlives the request. A waiter answers requests
 * made of its own worker while it waits, so two workers reclaiming at once
 * never wait for each other. Nothing is asked while the runtime starts or
 * stops (the other workers' loops may not run).
 */
#include <limits.h>

#include "core/core.h"
#include "os/os.h"

/* How long a spawn at a memory limit waits for other workers' answers: a
 * worker that computes without switching answers only at its next park
 * (the monitor preempts it after a few ticks under the drop-in), so the
 * wait is bounded; past it the spawn says EAGAIN. */
#define RECLAIM_WAIT_NS 20000000

/* Bumped (and futex-woken) by every give-back, which a waiting spawn
 * sleeps on. */
static _Atomic uint32_t reclaim_given;

void worker_give_back(struct worker *w) {
  desc_cache_drop_stacks(w);
  stack_cache_flush(w);
  desc_cache_flush(w);
  /* release: the pool's stacks and the list's descriptors before the
   * answer */
  atomic_fetch_and_explicit(&w->due,
                            ~(uint32_t)(DUE_GIVE_BACK | DUE_GIVE_BACK_LATE),
                            memory_order_release);
  atomic_fetch_add_explicit(&reclaim_given, 1, memory_order_release);
  os_futex_wake(&reclaim_given, INT_MAX);
}

static bool asked_of(struct worker *w) {
  return atomic_load_explicit(&w->due, memory_order_acquire) & DUE_GIVE_BACK;
}

/* Asked and not known to be late: worth waiting for. */
static bool awaited(struct worker *w) {
  uint32_t d = atomic_load_explicit(&w->due, memory_order_acquire);
  return (d & (DUE_GIVE_BACK | DUE_GIVE_BACK_LATE)) == DUE_GIVE_BACK;
}

/* The wait passed with w's request unanswered: mark it late, only while
 * the request stands (w may answer meanwhile). */
static void mark_late(struct worker *w) {
  uint32_t d = atomic_load_explicit(&w->due, memory_order_relaxed);
  while ((d & (DUE_GIVE_BACK | DUE_GIVE_BACK_LATE)) == DUE_GIVE_BACK &&
         !atomic_compare_exchange_weak_explicit(
             &w->due, &d, d | DUE_GIVE_BACK_LATE, memory_order_relaxed,
             memory_order_relaxed))
    ;
}

void reclaim_from_workers(struct worker *self, bool (*enough)(void)) {
  int asked = atomic_load(&swarm_rt.state) == RT_RUNNING ? swarm_rt.nslots : 0;
  for (int i = 0; i < asked; i++) {
    struct worker *v = &swarm_rt.workers[i];
    if (v == self || (i >= swarm_rt.nworkers && !atomic_load(&v->spare_active)))
      continue;
    atomic_fetch_or_explicit(&v->due, DUE_GIVE_BACK, memory_order_relaxed);
    worker_wake(v);
  }
  uint64_t deadline = os_now_ns() + RECLAIM_WAIT_NS;
  for (;;) {
    uint32_t seq = atomic_load_explicit(&reclaim_given, memory_order_acquire);
    if (self && asked_of(self))
      worker_give_back(self);
    if (enough && enough())
      return;
    bool pending = false;
    for (int i = 0; i < asked && !pending; i++)
      pending = &swarm_rt.workers[i] != self && awaited(&swarm_rt.workers[i]);
    if (!pending)
      return;
    uint64_t now = os_now_ns();
    if (now >= deadline) {
      for (int i = 0; i < asked; i++)
        if (&swarm_rt.workers[i] != self)
          mark_late(&swarm_rt.workers[i]);
      return;
    }
    os_futex_wait(&reclaim_given, seq, (int64_t)(deadline - now));
  }
}
