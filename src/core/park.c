/*
 * core/park.c — the one way to block and the one way to wake (core.h):
 * swarm_park, swarm_ready, and yield, which is a park that requeues.
 *
 *  - A worker's thread parks by switching to the next local thread (or the
 *    worker's scheduler context) with the after step after_park, which runs
 *    the commit on the next stack, once the parked thread is entirely off
 *    its own: MassiveThreads' switch-then-call, Go's gopark(unlockf). The
 *    commit publishes the thread in a wait list and releases that list's
 *    lock; nobody can ready the thread before it is off its stack, and no
 *    switch through a scheduler context is paid.
 *  - A kernel thread that is not a worker ("external") gets a descriptor of
 *    its own on first need (swarm_current_thread), kept in its TLS, so every
 *    primitive built on park/ready works from it: its park runs the commit
 *    at once, on its own stack (nothing else can run on it), and sleeps on
 *    the descriptor's futex word; swarm_ready stores the word and wakes it.
 *    The word is cleared before the commit publishes the thread, so a ready
 *    that comes before the sleep is not lost.
 *    When that kernel thread ends (returns from its start routine or calls
 *    pthread_exit), libc's destructor of one libc pthread key of ours
 *    (external_thread_exit) runs what a swarm thread's exit runs (the upper
 *    layers' exit hook: key destructors) and releases the descriptor (new
 *    generation: its handle answers ESRCH). The key is libc's own even
 *    under the drop-in (os/sys.h's libc_pthread_key_create), and libc runs
 *    no key destructor in exit(): the process's last moments keep theirs.
 *  - A park with a deadline (struct swarm_deadline, core.h): on a worker, a
 *    timer on the worker's heap calls the deadline's expire (park_timed);
 *    on a kernel thread that is not a worker, the futex wait's own timeout
 *    (external_park). Either way expire runs once, and only a thread it
 *    took out of its wait list resumes with ETIMEDOUT.
 *  - swarm_ready from a worker pushes onto that worker's deque (make_runnable,
 *    sched.h); from a kernel thread that is not a worker, onto the ready
 *    queue of the thread's pinned worker or of the next worker in turn.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "core/core.h"
#include "core/sched.h"
#include "core/trace.h"
#include "os/os.h"
#include "os/sys.h"

static __thread struct swarm_thread *tls_external;
static __thread bool tls_exit_armed; /* our libc key holds a value */

void external_thread_forget(void) {
  tls_external = NULL;
}

struct swarm_thread *external_thread_current(void) {
  return tls_external;
}

/* ---- the end of a kernel thread that is not a worker ---- */

void (*swarm_external_exit_hook)(struct swarm_thread *self);

static pthread_key_t exit_key;
static _Atomic int exit_key_state; /* 0 none, 1 making, 2 made, 3 failed */

/* libc's destructor of exit_key, at the kernel thread's end (not in exit(),
 * where libc runs none). What a swarm thread's exit runs for it (the upper
 * layers' hook: key destructors, which may use swarm, this descriptor
 * included), then the descriptor goes back, with a new generation. Nothing
 * is done for a descriptor that is the main thread's while a runtime runs
 * on this kernel thread (kind MAIN, and this is worker 0). A destructor run
 * after this one that calls swarm again makes and arms a fresh descriptor,
 * which libc's next destructor round releases. Race: the last waker of this
 * thread may still be between its store of wake_word and its futex wake
 * (sched.c); the wake may then reach whoever reuses the descriptor, a
 * spurious wake that every futex sleeper here tolerates (it rechecks). */
static void external_thread_exit(void *value) {
  (void)value;
  tls_exit_armed = false;
  struct swarm_thread *t = tls_external;
  if (!t || t->kind != THREAD_EXTERNAL || worker_current())
    return;
  bool work = false; /* the hook is for threads with data in a slot */
  for (int i = 0; i < SWARM_THREAD_SLOTS; i++)
    work |= __atomic_load_n(&t->slots[i], __ATOMIC_ACQUIRE) != NULL;
  if (work && swarm_thread_exit_hook)
    swarm_thread_exit_hook(t); /* may block: this is still t's thread */
  if (swarm_external_exit_hook)
    swarm_external_exit_hook(t);
  tls_external = NULL;
  desc_release(NULL, t); /* clears its slots (not a USER thread) */
}

/* Arms the calling kernel thread's exit_key (once until it fires). Without
 * the key (libc out of keys), the descriptor stays for the process's life,
 * as it did before. */
static void external_exit_arm(void) {
  if (tls_exit_armed)
    return;
  int s = atomic_load_explicit(&exit_key_state, memory_order_acquire);
  while (s != 2) {
    if (s == 3)
      return;
    int none = 0;
    if (s == 0 && atomic_compare_exchange_strong(&exit_key_state, &none, 1)) {
      s = libc_pthread_key_create(&exit_key, external_thread_exit) ? 3 : 2;
      atomic_store_explicit(&exit_key_state, s, memory_order_release);
      continue;
    }
    os_yield(); /* another kernel thread is making it */
    s = atomic_load_explicit(&exit_key_state, memory_order_acquire);
  }
  if (libc_pthread_setspecific(exit_key, &exit_key) == 0)
    tls_exit_armed = true;
}

void external_thread_adopt(struct swarm_thread *t) {
  t->kind = THREAD_EXTERNAL;
  t->pinned_worker = -1;
  t->next = NULL;
  atomic_store(&t->wake_word, 0);
  /* Not joinable: it is a kernel thread, joined with pthread_join. */
  uint64_t c = atomic_load_explicit(&t->control, memory_order_relaxed);
  atomic_store_explicit(&t->control,
                        (c & ~CTL_FLAGS) | CTL_DETACHED | CTL_SPECIAL,
                        memory_order_relaxed);
  tls_external = t;
  external_exit_arm();
}

struct swarm_thread *swarm_current_thread(void) {
  struct worker *w = worker_current();
  if (w)
    return w->current;
  if (tls_external)
    return tls_external;
  struct swarm_thread *t = desc_alloc(NULL);
  if (!t)
    return NULL;
  t->fn = NULL;
  t->stack.lo = NULL;
  t->stack.size = 0;
  t->inline_floor = UINTPTR_MAX;
  for (int i = 0; i < SWARM_THREAD_SLOTS; i++)
    t->slots[i] = NULL;
  external_thread_adopt(t);
  return t;
}

/* ---- kernel threads that are not workers ---- */

/* Parks on the descriptor's futex word until a ready stores 1 in it, or,
 * with a deadline, until expire takes the thread out. The word is cleared
 * before the commit publishes the thread. No timer and no worker is
 * involved: the kernel thread waits with the futex's own timeout, so a
 * timed wait works without a runtime (starting one from inside a wait
 * would make this kernel thread worker 0 while it sleeps). */
static int external_park(swarm_commit_fn commit, void *arg,
                         enum swarm_park_reason why,
                         const struct swarm_deadline *deadline) {
  struct swarm_thread *self = swarm_current_thread();
  if (!self) {
    /* No descriptor, so nothing a waker could find: fail loudly rather
     * than corrupt a wait list. */
    static const char msg[] = "swarm: out of memory for a kernel thread's "
                              "descriptor while blocking\n";
    os_write_stderr(msg, sizeof msg - 1);
    abort();
  }
  self->park_reason = (uint8_t)why;
  self->era = swarm_rt.era;
  atomic_store_explicit(&self->wake_word, 0, memory_order_relaxed);
  if (!commit(self, arg))
    return 0;
  bool timed = deadline != NULL;
  while (atomic_load_explicit(&self->wake_word, memory_order_acquire) == 0) {
    if (!timed) {
      os_futex_wait(&self->wake_word, 0, -1);
      continue;
    }
    uint64_t now = os_now_ns_inline();
    if (now >= deadline->ns) {
      if (deadline->expire(self, arg))
        return ETIMEDOUT; /* out of the list: nobody will wake us */
      timed = false;      /* a waker took us out: its wake is on the way */
      continue;
    }
    os_futex_wait(&self->wake_word, 0, (int64_t)(deadline->ns - now));
  }
  return 0;
}

/* ---- workers ---- */

/* Parks w's current thread: switches to the next local thread, or to the
 * scheduler context, with the after step that runs the commit there. */
static inline __attribute__((always_inline)) void
park_here(struct worker *w, swarm_commit_fn commit, void *arg,
          enum swarm_park_reason why) {
  /* No timers_poll here: callers park holding the lock their commit
   * releases, and a due timer's callback may need that very lock (a timed
   * waiter's timeout takes its object's lock) — a self-deadlock, found by
   * tests/sync/test_sync_mutex_contention. */
  struct swarm_thread *self = w->current;
  self->park_reason = (uint8_t)why;
  self->era = swarm_rt.era; /* fork.c: this era's thread, not a ghost */
  w->park_commit = commit;
  w->park_arg = arg;
  w->handoff = self;
  w->stats.parks++;
  self->saved_errno = os_errno_get();
  /* Something is asked of this worker (a poll, its free stacks and
   * descriptors: sched.c, sched_due): the scheduler loop does it, then runs
   * the next thread. */
  struct swarm_thread *next =
      unlikely(atomic_load_explicit(&w->due, memory_order_relaxed))
          ? NULL
          : local_next(w);
  switch_to(w, &self->sp, next, w->after_park);
  /* resumed, perhaps on another worker: w is stale */
  os_errno_set(self->saved_errno);
}

/* A timed park on a worker: a core timer on this worker, armed before the
 * switch (while the caller still holds the lock its commit releases, so an
 * expire that runs early, from the monitor, waits for the commit), fires
 * park_timer_fire. Lives on the parked thread's stack. */
struct park_timer {
  struct swarm_timer timer;
  struct swarm_thread *thread;
  bool (*expire)(struct swarm_thread *self, void *arg);
  void *arg;
  int result;             /* ETIMEDOUT once the timer took the thread out */
  _Atomic int done;       /* the callback no longer touches this struct */
  swarm_commit_fn commit; /* ENOMEM path: the caller's commit */
};

static void park_timer_fire(struct swarm_timer *t) {
  struct park_timer *p = t->arg;
  struct swarm_thread *thread = p->thread;
  if (p->expire(thread, p->arg)) {
    /* Nobody else readies it now, so it cannot return before this ready. */
    p->result = ETIMEDOUT;
    atomic_store_explicit(&p->done, 1, memory_order_release);
    swarm_ready(thread);
    return;
  }
  /* A waker has it; from this store on, p may be gone. */
  atomic_store_explicit(&p->done, 1, memory_order_release);
}

/* No timer: the park expires as soon as it is committed. */
static bool commit_then_expire(struct swarm_thread *self, void *arg) {
  struct park_timer *p = arg;
  if (!p->commit(self, p->arg))
    return false;
  if (!p->expire(self, p->arg))
    return true; /* a waker took it out already and readies it */
  p->result = ENOMEM;
  return false; /* taken out: run again at once */
}

static __attribute__((noinline)) int
park_timed(struct worker *w, swarm_commit_fn commit, void *arg,
           enum swarm_park_reason why, const struct swarm_deadline *deadline) {
  struct park_timer p = {.thread = w->current,
                         .expire = deadline->expire,
                         .arg = arg,
                         .commit = commit};
  if (swarm_timer_start(&p.timer, deadline->ns, park_timer_fire, &p) != 0) {
    park_here(w, commit_then_expire, &p, why);
    return p.result;
  }
  park_here(w, commit, arg, why);
  if (!swarm_timer_cancel(&p.timer)) /* it fired: wait until it let go */
    while (!atomic_load_explicit(&p.done, memory_order_acquire))
      os_cpu_relax();
  return p.result;
}

int swarm_park(swarm_commit_fn commit, void *arg, enum swarm_park_reason why,
               const struct swarm_deadline *deadline) {
  struct worker *w = worker_current();
  if (unlikely(!w))
    return external_park(commit, arg, why, deadline);
  if (unlikely(deadline != NULL))
    return park_timed(w, commit, arg, why, deadline);
  park_here(w, commit, arg, why);
  return 0;
}

void swarm_ready(struct swarm_thread *t) {
  if (unlikely(t->era != swarm_rt.era))
    return; /* a parent's thread in a fork child: never runs (fork.c) */
  struct worker *w = worker_current();
  TRACE_READY(w, t);
  if (w || t->kind == THREAD_EXTERNAL) {
    if (unlikely(w && w->ready_to_queue) && t->kind != THREAD_EXTERNAL &&
        t->pinned_worker < 0) {
      queue_push_and_wake(w, t, w); /* behind the run queue: sched.c */
      return;
    }
    make_runnable(w, t);
    return;
  }
  int idx = t->pinned_worker;
  if (idx < 0)
    idx = (int)(atomic_fetch_add_explicit(&swarm_rt.external_rr, 1,
                                          memory_order_relaxed) %
                (uint32_t)swarm_rt.nworkers);
  queue_push_and_wake(&swarm_rt.workers[idx], t, NULL);
}

bool commit_requeue(struct swarm_thread *self, void *arg) {
  (void)arg;
  struct worker *w = worker_current(), *target = w;
  if (self->pinned_worker >= 0)
    target = &swarm_rt.workers[self->pinned_worker];
  if (target != w) {
    queue_push_and_wake(target, self, w);
    return true;
  }
  ready_queue_push(&w->queue, self);
  /* We run another thread now, so a thread that may run anywhere waits
   * here: an idle worker can steal it (sched.c), so wake one, fenced as
   * every ready-queue push (Go's wakep). Without the wake a sleeper found
   * it only at its timeout (up to 256 ms), and threads that take turns by
   * yielding (the mutex's slice) stayed on one worker while the other
   * slept (tests/core/test_balance_yield). A pinned thread (a preempted
   * one) only we may run: no wake. */
  if (self->pinned_worker < 0) {
    atomic_thread_fence(memory_order_seq_cst);
    wake_if_idle(w);
  }
  return true;
}

void swarm_yield(void) {
  struct worker *w = worker_current();
  if (!w) {
    os_yield();
    return;
  }
  timers_poll(w);
  /* Nothing else runnable here: yielding would only come straight back,
   * unless something is asked of this worker (worker.due: a poll, its free
   * stacks and descriptors), which the park does on the way (park_here). */
  if (deque_size(&w->deque) == 0 && queue_count(&w->queue) == 0 &&
      !atomic_load_explicit(&w->due, memory_order_relaxed))
    return;
  swarm_park(commit_requeue, NULL, SWARM_PARK_YIELD, NULL);
}

/* ---- the park's after step (arch/context.h) ---- */

void *after_park(void *arg) {
  struct worker *w = arg;
  if (!w->park_commit(w->handoff, w->park_arg))
    make_runnable(w, w->handoff);
  return w;
}

void *after_park_traced(void *arg) {
  struct worker *w = arg; /* the parked thread is not ours after commit */
  uint64_t now = trace_now();
  trace_put(w->trace, TR_PARK, now, trace_id(w->handoff), 0,
            w->handoff->park_reason);
  trace_switch_at(w->trace, now, w->current);
  return after_park(arg);
}
