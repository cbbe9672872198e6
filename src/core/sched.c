/*
 * core/sched.c — the portable scheduler: workers, work-first spawn, exit,
 * park/ready, yield, idle stealing and sleeping, start and stop.
 *
 * Design (MassiveThreads' scheduler with PPL's idle workers):
 *
 *  - One worker per core, each a kernel thread owning a Chase–Lev deque of
 *    runnable threads (deque.h) and a small locked FIFO ("ready queue") for
 *    yields, pinned threads and threads handed over by non-worker kernel
 *    threads. The kernel thread that starts the runtime becomes worker 0 and
 *    its flow the "main" swarm thread; worker 0's scheduler loop runs on a
 *    stack of its own, the other workers' on their kernel thread's stack.
 *
 *  - Work-first spawn. swarm_spawn switches straight from the parent to the
 *    child's fresh stack; the "after" step of that switch (arch/context.h),
 *    running on the child's stack once the parent is fully saved, pushes the
 *    parent on the deque. When the child exits, the worker takes the parent
 *    back from the bottom of the deque and switches to it: one switch each
 *    way, no scheduler context in between. If a thief stole the parent, the
 *    worker takes whatever else is local or goes to its scheduler loop.
 *
 *  - Every switch hands the resumed context the worker it now runs on (the
 *    transfer value of swarm_arch_switch). Code after a switch uses that, or
 *    worker_current(), never a worker pointer or TLS address from before the
 *    switch: the thread may have been stolen in between.
 *
 *  - Finding work, in order: own deque (bottom) -> own ready queue -> due
 *    timers and I/O (the io layer's poll hook, core.h) -> random victims'
 *    deques (top) and unpinned ready-queue entries (spare workers'
 *    included, monitor.c) -> spin a bounded number of rounds -> sleep on
 *    the worker's futex, or in its epoll_wait when the io layer is linked
 *    in (below). A spare worker retires instead of sleeping.
 *
 *  - Sleeping and waking, the store-buffer race won here. A worker about to
 *    sleep sets its `sleeping` flag, counts itself in idle_workers, issues a
 *    seq_cst fence, re-checks every deque and queue, and only then waits on
 *    its futex. A pusher publishes its item, then reads idle_workers. Each
 *    side stores then loads, so without a fence on both sides each could
 *    miss the other's store (x86 does reorder a store with a later load)
 *    and the work would wait for the sleeper's timeout. Rules:
 *      - a push into a deque that looked empty, and every ready-queue push,
 *        is followed by a seq_cst fence before the idle check: the sleeper
 *        either sees the item or the pusher sees the sleeper;
 *      - a push into a non-empty deque checks without the fence (it would
 *        cost ~8% of a spawn, measured on fib): whoever went to sleep after
 *        the deque became non-empty saw it non-empty in its re-check, and
 *        whoever slept before was woken by the push that made it non-empty;
 *      - a thief that leaves items behind in its victim wakes another idle
 *        worker, so one wake fans out to as many as there is work for.
 *    One window stays: the owner's view of `top` may be stale, so a push
 *    can look non-empty just after thieves emptied the deque. A sleeper
 *    racing that push sleeps until its timeout, which starts at 1 ms and
 *    doubles to 256 ms while it stays idle. That costs parallelism, never
 *    progress: the owner runs its own deque.
 *    With the io layer the wait is an epoll_wait on the worker's epoll
 *    instead of the futex wait, and the protocol keeps the futex's
 *    meaning (models/park_ready.pml still describes it): the sleeper stores
 *    in_epoll, then re-reads sleep_word and waits only if it still equals
 *    the value read before the re-check; a waker advances sleep_word
 *    (seq_cst), then reads in_epoll and, if set, writes the worker's
 *    eventfd, which stays readable until drained, so a wake that lands
 *    before epoll_wait starts still ends it. Readiness ends it too.
 *    The monitor (monitor.c) sleeps without a deadline once every worker
 *    sleeps; a worker leaving worker_sleep wakes it.
 *    Rejected: one global futex all idle workers wait on (wakes a herd); a
 *    fence on every push (the 8%); no sleeping, as in MassiveThreads (an
 *    idle program burns every core).
 *
 *  - errno belongs to the thread: saved when a thread switches away
 *    (spawn, park) and restored in whatever kernel thread resumes it, through
 *    os_errno_get/set (os.h), which the compiler cannot cache across the
 * switch; a new thread starts with errno 0, as a new pthread does.
 *
 *  - Quiescence (swarm_finalize, and main calling swarm_exit) is detected by
 *    idle workers from per-worker spawned/exited counters that only their
 *    owner writes: read every exited count, then every spawned count; if
 *    the sums match, every thread spawned before the second read has exited.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "arch/context.h"
#include "core/core.h"
#include "core/trace.h"
#include "os/os.h"
#include "os/sys.h"

#ifdef SWARM_ASAN
#include <sanitizer/common_interface_defs.h>
#endif

#define SPIN_ROUNDS 2000
#define SLEEP_MIN_NS 1000000LL
#define SLEEP_MAX_NS 256000000LL
#define SCHED_STACK_SIZE ((size_t)256 * 1024)

struct runtime swarm_rt = {.lifecycle_lock = SPINLOCK_INIT(LOCK_LIFECYCLE)};
__thread struct worker *swarm_tls_worker
    __attribute__((tls_model("initial-exec")));
static __thread struct swarm_thread *tls_external;

__attribute__((noinline, noipa)) struct worker *
swarm_worker_current_slow(void) {
  return swarm_tls_worker;
}

/* Clears the calling kernel thread's swarm_tls_worker. Its own function for
 * the reason worker_current is: code after a switch must not write through a
 * thread pointer read before it (aarch64 may read tpidr_el0 once at a
 * function's start; swarm_finalize then cleared the TLS of the worker main
 * had run on, not of the one it returned to — test_finalize, qemu-aarch64). */
static __attribute__((noinline, noipa)) void tls_worker_clear(void) {
  swarm_tls_worker = NULL;
}

/* ---- counters ---- */

static inline void counter_inc(_Atomic uint64_t *c) {
  /* Owner-only: no locked instruction. Release so that a reader that sees
   * the count also sees what happened before it. On x86-64, where every
   * store is a release store, that is one add to memory (its store is
   * single-copy atomic; only the owner writes, so no update is lost). */
#if defined(__x86_64__)
  __asm__ volatile("addq $1, %0" : "+m"(*(volatile uint64_t *)c) : : "memory");
#else
  atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + 1,
                        memory_order_release);
#endif
}

/* ---- context switches with sanitizer annotations ---- */

static inline void stack_bounds_of(struct worker *w, struct swarm_thread *t,
                                   const void **lo, size_t *size) {
  if (t) {
    *lo = t->stack.lo;
    *size = t->stack.size;
  } else {
    *lo = w->sched_stack.lo;
    *size = w->sched_stack.size;
  }
}

/* Makes `next` (or, when NULL, the worker's scheduler context) the one w
 * runs and returns the stack pointer to switch to. */
static inline void *enter_next(struct worker *w, struct swarm_thread *next) {
  w->current = next;
  if (!next)
    return w->sched_sp;
  w->stats.run++;
  return next->sp;
}

/* Switches from the running context (saving into *save_sp) to `next`, or to
 * the worker's scheduler context when next is NULL. Returns, in the resumed
 * context, its worker. */
static inline struct worker *switch_to(struct worker *w, void **save_sp,
                                       struct swarm_thread *next,
                                       void *(*after)(void *)) {
  void *sp = enter_next(w, next);
#ifdef SWARM_ASAN
  void *fake = NULL;
  const void *lo;
  size_t size;
  stack_bounds_of(w, next, &lo, &size);
  __sanitizer_start_switch_fiber(&fake, lo, size);
#else
  (void)stack_bounds_of;
#endif
  w = swarm_arch_switch(save_sp, sp, after, w);
#ifdef SWARM_ASAN
  __sanitizer_finish_switch_fiber(fake, NULL, NULL);
#endif
  return w;
}

/* The same for a context that exits: nothing is saved. */
_Noreturn static inline __attribute__((always_inline)) void
resume_next(struct worker *w, struct swarm_thread *next,
            void *(*after)(void *)) {
  void *sp = enter_next(w, next);
#ifdef SWARM_ASAN
  const void *lo;
  size_t size;
  stack_bounds_of(w, next, &lo, &size);
  __sanitizer_start_switch_fiber(NULL, lo, size); /* this fiber ends */
#endif
  if (__builtin_constant_p(after == NULL) && after == NULL)
    swarm_arch_resume_plain(sp, w);
  swarm_arch_resume(sp, after, w);
}

/* The exit's fast resume, as a tail call. The functions of the exit path
 * are not declared _Noreturn and end in calls in tail position, so GCC
 * makes them jumps: no frame, no stack alignment, nothing saved (it keeps
 * calls to _Noreturn functions as calls, for backtraces). They never
 * return all the same; their callers say so with __builtin_unreachable. */
void swarm_arch_resume_plain_tail(void *new_sp,
                                  void *arg) __asm__("swarm_arch_resume_plain")
    __attribute__((visibility("hidden")));

static inline __attribute__((always_inline)) void
resume_plain_tail(struct worker *w, struct swarm_thread *next) {
#ifdef SWARM_ASAN
  resume_next(w, next, NULL);
#else
  swarm_arch_resume_plain_tail(enter_next(w, next), w);
#endif
}

/* ---- ready queues ---- */

static inline uint32_t queue_count(struct ready_queue *q) {
  return __atomic_load_n(&q->count, __ATOMIC_RELAXED);
}

void ready_queue_push(struct ready_queue *q, struct swarm_thread *t) {
  t->next = NULL;
  spin_lock(&q->lock);
  if (q->tail)
    q->tail->next = t;
  else
    q->head = t;
  q->tail = t;
  __atomic_store_n(&q->count, q->count + 1, __ATOMIC_RELAXED);
  spin_unlock(&q->lock);
}

struct swarm_thread *ready_queue_pop(struct ready_queue *q,
                                     bool unpinned_only) {
  if (queue_count(q) == 0)
    return NULL;
  spin_lock(&q->lock);
  struct swarm_thread *prev = NULL, *t = q->head;
  while (t && unpinned_only && t->pinned_worker >= 0) {
    prev = t;
    t = t->next;
  }
  if (t) {
    if (prev)
      prev->next = t->next;
    else
      q->head = t->next;
    if (q->tail == t)
      q->tail = prev;
    t->next = NULL;
    __atomic_store_n(&q->count, q->count - 1, __ATOMIC_RELAXED);
  }
  spin_unlock(&q->lock);
  return t;
}

/* ---- waking idle workers ---- */

/* Wakes w if it sleeps. Returns true if it did. Callers that just published
 * work issue a seq_cst fence first (see the file comment). */
static bool worker_wake_if_sleeping(struct worker *w) {
  uint32_t one = 1;
  if (atomic_load_explicit(&w->sleeping, memory_order_relaxed) == 0 ||
      !atomic_compare_exchange_strong_explicit(
          &w->sleeping, &one, 0, memory_order_acq_rel, memory_order_relaxed))
    return false;
  atomic_fetch_sub_explicit(&swarm_rt.idle_workers, 1, memory_order_relaxed);
  /* seq_cst, not release: the I/O layer's sleeper stores "in epoll_wait"
   * and then loads sleep_word, so this store must not pass the load of
   * that flag in io->wake (store-buffer race; src/io/poller.c). */
  atomic_fetch_add_explicit(&w->sleep_word, 1, memory_order_seq_cst);
  const struct swarm_io_hooks *io =
      atomic_load_explicit(&swarm_io_hooks, memory_order_acquire);
  if (!io || !io->wake(w)) /* asleep in epoll_wait: its eventfd woke it */
    os_futex_wake(&w->sleep_word, 1);
  return true;
}

bool worker_wake_sleeping(struct worker *w) { /* for the monitor */
  return worker_wake_if_sleeping(w);
}

void worker_wake(struct worker *w) {
  atomic_thread_fence(memory_order_seq_cst);
  worker_wake_if_sleeping(w);
}

static void wake_one(struct worker *self);

/* Hands t to `target` through its ready queue and wakes it, or, when it is
 * awake and t may run anywhere, some idle worker that can steal t. */
static void queue_push_and_wake(struct worker *target, struct swarm_thread *t,
                                struct worker *self) {
  ready_queue_push(&target->queue, t);
  atomic_thread_fence(memory_order_seq_cst);
  if (target != self && worker_wake_if_sleeping(target))
    return;
  if (t->pinned_worker < 0 &&
      atomic_load_explicit(&swarm_rt.idle_workers, memory_order_relaxed) > 0)
    wake_one(target);
}

/* Wakes one sleeping worker other than `self` (may be NULL), if any. */
static void wake_one(struct worker *self) {
  int n = swarm_rt.nworkers;
  int start = self ? self->id + 1 : 0;
  for (int i = 0; i < n; i++) {
    struct worker *v = &swarm_rt.workers[(start + i) % n];
    if (v != self && worker_wake_if_sleeping(v))
      return;
  }
}

static inline void wake_if_idle(struct worker *w) {
  if (unlikely(atomic_load_explicit(&swarm_rt.idle_workers,
                                    memory_order_relaxed) > 0))
    wake_one(w);
}

/* Makes t runnable from worker w: its deque, or a ready queue for a pinned
 * thread (only its worker may run it, and deques are open to thieves). */
static void make_runnable_slow(struct worker *w, struct swarm_thread *t) {
  if (unlikely(t->kind == THREAD_EXTERNAL)) {
    /* A kernel thread blocked in external_park: wake its futex. */
    atomic_store_explicit(&t->wake_word, 1, memory_order_release);
    os_futex_wake(&t->wake_word, 1);
    return;
  }
  if (t->pinned_worker >= 0) {
    queue_push_and_wake(&swarm_rt.workers[t->pinned_worker], t, w);
    return;
  }
  int pushed = deque_push(&w->deque, t);
  if (!pushed) {
    /* No memory to grow the deque: the ready queue needs none. */
    queue_push_and_wake(w, t, w);
    return;
  }
  if (pushed == DEQUE_PUSHED_INTO_EMPTY)
    atomic_thread_fence(memory_order_seq_cst);
  wake_if_idle(w);
}

static inline void make_runnable(struct worker *w, struct swarm_thread *t) {
  int pushed;
  if (likely(t->kind != THREAD_EXTERNAL && t->pinned_worker < 0 &&
             (pushed = deque_push(&w->deque, t)))) {
    if (unlikely(pushed == DEQUE_PUSHED_INTO_EMPTY))
      atomic_thread_fence(memory_order_seq_cst); /* see the file comment */
    wake_if_idle(w);
    return;
  }
  make_runnable_slow(w, t);
}

/* Runnable work on this worker, without stealing. */
static inline __attribute__((always_inline)) struct swarm_thread *
local_next(struct worker *w) {
  struct swarm_thread *t = deque_take(&w->deque);
  if (likely(t) || likely(queue_count(&w->queue) == 0))
    return t;
  return ready_queue_pop(&w->queue, false);
}

/* ---- "after" steps, run on the new stack (arch/context.h) ---- */

static void *after_push_parent(void *arg) {
  struct worker *w = arg;
  make_runnable(w, w->handoff);
  return w;
}

static void *after_wake_idle(void *arg) { /* push_parent_early's parent */
  struct worker *w = arg;
  wake_one(w);
  return w;
}

static void *after_park(void *arg) {
  struct worker *w = arg;
  if (!w->park_commit(w->handoff, w->park_arg))
    make_runnable(w, w->handoff);
  return w;
}

static void *after_release_stack(void *arg) {
  struct worker *w = arg;
  stack_release(w, w->dead_stack);
  return w;
}

/* Traced twins of the three, chosen by trace_start (trace.h): the switch
 * closes the old run slice and opens the new one, then the plain step. */
static void *after_push_parent_traced(void *arg) {
  struct worker *w = arg;
  uint64_t now = trace_now();
  trace_put(w->trace, TR_SPAWN, now, trace_id(w->handoff), trace_id(w->current),
            0);
  trace_switch_at(w->trace, now, w->current);
  return after_push_parent(arg);
}

static void *after_park_traced(void *arg) {
  struct worker *w = arg; /* the parked thread is not ours after commit */
  uint64_t now = trace_now();
  trace_put(w->trace, TR_PARK, now, trace_id(w->handoff), 0,
            w->handoff->park_reason);
  trace_switch_at(w->trace, now, w->current);
  return after_park(arg);
}

static void *after_release_stack_traced(void *arg) {
  struct worker *w = arg;
  trace_switch(w->trace, w->current);
  return after_release_stack(arg);
}

static void *after_main_exit_traced(void *arg) {
  struct worker *w = arg;
  trace_switch(w->trace, w->current);
  return w;
}

/* ---- thread start and exit ---- */

static void user_thread_exit(void *result);

/* Where a thread made by swarm_spawn starts when it is not started by
 * swarm_arch_spawn (an after step, a spawn from a non-worker, ASan). */
static void thread_entry(void *transfer) {
#ifdef SWARM_ASAN
  __sanitizer_finish_switch_fiber(NULL, NULL, NULL);
#endif
  struct worker *w = transfer;
  struct swarm_thread *t = w->current;
  os_errno_set(0);
  user_thread_exit(t->fn(t->arg));
  __builtin_unreachable();
}

static bool all_threads_exited(void) {
  /* Exited first, then spawned: see the file comment. */
  uint64_t exited = 0, spawned = 0;
  for (int i = 0; i < swarm_rt.nslots; i++) /* spares count too */
    exited += atomic_load_explicit(&swarm_rt.workers[i].stat_exited_pub,
                                   memory_order_acquire);
  for (int i = 0; i < swarm_rt.nslots; i++)
    spawned += atomic_load_explicit(&swarm_rt.workers[i].stat_spawned_pub,
                                    memory_order_acquire);
  spawned +=
      atomic_load_explicit(&swarm_rt.external_spawned, memory_order_acquire);
  return spawned == exited;
}

void (*swarm_thread_exit_hook)(struct swarm_thread *self);

/* The exiting thread's joiner is parked on it: make it runnable. Out of
 * line, so that its trace point does not weigh on the exit's fast
 * path (the joiner usually finds the thread exited and never parks). */
static __attribute__((noinline)) void ready_joiner(struct worker *w,
                                                   struct swarm_thread *j) {
  TRACE_READY(w, j);
  make_runnable(w, j);
}

/* Upper layers' exit work (core.h: swarm_thread_exit_hook), for a thread
 * with something in its slots. It may block, so callers read their worker
 * only afterwards. */
static __attribute__((noinline)) void thread_exit_work(struct swarm_thread *t) {
  if (swarm_thread_exit_hook)
    swarm_thread_exit_hook(t);
}

static inline bool thread_has_exit_work(struct swarm_thread *t) {
  return ((uintptr_t)t->slots[SLOT_SYNC] | (uintptr_t)t->slots[SLOT_PTHREAD]) !=
         0;
}

/* A joiner is parked on t (WAITER) or t is detached: ready the joiner, or
 * retire the descriptor. */
static void exit_notify(struct worker *w, struct swarm_thread *t,
                        uint64_t old) {
  if (old & CTL_WAITER)
    ready_joiner(w, t->joiner);
  else
    desc_release(w, t);
}

/* Publishes t's exit with its result and returns the control word before.
 * After this the descriptor may be released by a joiner at any moment, so
 * it is not touched again unless WAITER says a joiner is parked (and cannot
 * release it before we ready it). EXITED is set once, so an add is the or;
 * it needs no CAS loop. */
static inline uint64_t exit_publish(struct swarm_thread *t, void *result) {
  t->result = result;
  return atomic_fetch_add_explicit(&t->control, CTL_EXITED,
                                   memory_order_acq_rel);
}

/* The exit's last step, the general way: `next` is what the deque gave
 * (NULL: look in the ready queue), any stack (the after step releases it
 * once we are off it). */
static __attribute__((noinline)) void
exit_switch_slow(struct worker *w, struct stack_ref dead,
                 struct swarm_thread *next) {
  if (!next && queue_count(&w->queue) != 0)
    next = ready_queue_pop(&w->queue, false);
  void *(*after)(void *) = w->after_exit;
  if (stack_release_running(w, dead))
    resume_next(w, next, NULL);
  w->dead_stack = dead;
  resume_next(w, next, after ? after : after_release_stack);
}

/* The exit's last step: count it, leave for the next local thread. The
 * common case (a thread in the deque, the plain steps, a cached stack)
 * makes no call but the switch, so the exit path keeps nothing in
 * callee-saved registers; the rest is exit_switch_slow. With the plain
 * steps (after_exit NULL) the stack goes back to the cache now, while we
 * still run on it (stack_release_running). */
static inline __attribute__((always_inline)) void
exit_switch(struct worker *w, struct stack_ref dead) {
  counter_inc(&w->stat_exited_pub);
  struct swarm_thread *next = deque_take(&w->deque);
  if (likely(next) && likely(stack_release_running(w, dead))) {
    resume_plain_tail(w, next);
    return;
  }
  exit_switch_slow(w, dead, next);
}

/* A published exit with a joiner to wake or a detached descriptor to
 * release. WAITER/DETACHED keep t ours until then (see exit_publish), so
 * its stack can still be read here, before exit_notify lets it go. */
static __attribute__((noinline)) void
exit_notify_switch(struct worker *w, struct swarm_thread *t, uint64_t old) {
  struct stack_ref dead = t->stack;
  exit_notify(w, t, old);
  exit_switch(w, dead);
}

/* user_thread_exit for a thread with exit work (the hook may block). */
static __attribute__((noinline)) void
user_thread_exit_slow(struct swarm_thread *t, void *result) {
  thread_exit_work(t);
  struct worker *w = worker_current(); /* the hook may have moved us */
  struct stack_ref dead = t->stack;
  uint64_t old = exit_publish(t, result);
  if (old & (CTL_WAITER | CTL_DETACHED)) {
    exit_notify_switch(w, t, old);
    return;
  }
  exit_switch(w, dead);
}

/* The end of every thread made by swarm_spawn (swarm_arch_spawn calls it
 * with fn's result; thread_entry, swarm_exit). Never returns (see
 * resume_plain_tail for why it is not declared so). */
static __attribute__((noinline)) void user_thread_exit(void *result) {
  struct worker *w = worker_current();
  struct swarm_thread *t = w->current;
  if (unlikely(thread_has_exit_work(t))) {
    user_thread_exit_slow(t, result);
    return;
  }
  struct stack_ref dead = t->stack;
  uint64_t old = exit_publish(t, result);
  if (unlikely(old & (CTL_WAITER | CTL_DETACHED))) {
    exit_notify_switch(w, t, old);
    return;
  }
  exit_switch(w, dead);
}

/* The main flow ends (swarm_exit from main): its kernel thread's stack is
 * not ours to release; swarm_finalize's waiter learns it from main_exited. */
_Noreturn static void main_thread_finish(struct swarm_thread *t, void *result) {
  if (thread_has_exit_work(t))
    thread_exit_work(t);
  struct worker *w = worker_current();
  atomic_store_explicit(&swarm_rt.main_exited, true, memory_order_release);
  uint64_t old = exit_publish(t, result);
  if (old & (CTL_WAITER | CTL_DETACHED))
    exit_notify(w, t, old);
  resume_next(w, local_next(w), swarm_rt.after_main_exit);
}

_Noreturn void swarm_exit(void *result) {
  struct worker *w = worker_current();
  if (!w || !w->current) {
    static const char msg[] =
        "swarm: swarm_exit called from a kernel thread that is not a swarm "
        "thread\n";
    os_write_stderr(msg, sizeof msg - 1);
    abort();
  }
  struct swarm_thread *t = w->current;
  if (t->kind == THREAD_MAIN)
    main_thread_finish(t, result);
  user_thread_exit(result);
  __builtin_unreachable();
}

/* ---- spawn ---- */

static void thread_init(struct swarm_thread *t, void *(*fn)(void *), void *arg,
                        bool detached) {
  /* result, joiner and next are written before anything reads them (exit,
   * join's park, a list insertion), so they are not cleared here; kind and
   * pinned_worker are already USER and -1 in a free descriptor (core.h). */
  t->fn = fn;
  t->arg = arg;
  for (int i = 0; i < SWARM_THREAD_SLOTS; i++)
    t->slots[i] = NULL;
  if (detached)
    atomic_fetch_or_explicit(&t->control, CTL_DETACHED, memory_order_relaxed);
}

/* Spawn from a kernel thread that is not a worker: hand the new thread to a
 * worker through its ready queue. */
static int spawn_external(swarm_thread_t *out, size_t size, bool detached,
                          void *(*fn)(void *), void *arg) {
  struct swarm_thread *t = desc_alloc(NULL);
  if (!t)
    return EAGAIN;
  if (stack_alloc(NULL, size, &t->stack) != 0) {
    desc_release(NULL, t);
    return EAGAIN;
  }
  thread_init(t, fn, arg, detached);
  if (out)
    *out = desc_handle(t);
  t->sp = swarm_arch_prepare(thread_stack_top(t->stack), thread_entry);
  atomic_fetch_add_explicit(&swarm_rt.external_spawned, 1,
                            memory_order_acq_rel);
  uint32_t k =
      atomic_fetch_add_explicit(&swarm_rt.external_rr, 1, memory_order_relaxed);
  queue_push_and_wake(&swarm_rt.workers[k % (uint32_t)swarm_rt.nworkers], t,
                      NULL);
  return 0;
}

/* The fast way to publish a spawning parent, when the back end stores the
 * saved stack pointer last (arch/context.h: SWARM_ARCH_PUBLISH_LAST) and
 * tracing is off (w->after_spawn is NULL then): push it on the deque now,
 * before the switch, with its sp cleared; a thief that takes it waits in
 * thread_wait_saved until the switch has stored the sp, after which the old
 * worker no longer writes to the parent's stack. This saves the after step's
 * call and reloads. Returns NULL when that is all, or the after step that
 * must finish the job on the child's stack: after_push_parent for a pinned
 * parent or a full deque (it grows it), after_wake_idle when a worker
 * sleeps. So the fast path makes no call before the switch, and nothing of
 * it lives in callee-saved registers. */
static inline void *(*push_parent_early(struct worker *w,
                                        struct swarm_thread *parent))(void *) {
  if (unlikely(parent->pinned_worker >= 0))
    return after_push_parent;
  __atomic_store_n(&parent->sp, NULL, __ATOMIC_RELAXED);
  int pushed = deque_try_push(&w->deque, parent);
  if (unlikely(!pushed))
    return after_push_parent;
  if (unlikely(pushed == DEQUE_PUSHED_INTO_EMPTY))
    atomic_thread_fence(memory_order_seq_cst); /* see the file comment */
  if (unlikely(atomic_load_explicit(&swarm_rt.idle_workers,
                                    memory_order_relaxed) > 0))
    return after_wake_idle;
  return NULL;
}

/* Work-first spawn on worker w: run the child now; the parent is pushed on
 * the deque before the switch (push_parent_early) or by the after step once
 * it is fully saved. The child's first transfer value is w (thread_entry). */
static inline __attribute__((always_inline)) int
spawn_here(struct worker *w, swarm_thread_t *out, size_t size, bool detached,
           void *(*fn)(void *), void *arg) {
  struct swarm_thread *t = desc_alloc(w);
  if (unlikely(!t))
    return EAGAIN;
  if (unlikely(stack_alloc(w, size, &t->stack) != 0)) {
    desc_release(w, t);
    return EAGAIN;
  }
  thread_init(t, fn, arg, detached);
  if (out)
    *out = desc_handle_free(t);
  counter_inc(&w->stat_spawned_pub);
  struct swarm_thread *parent = w->current;
  parent->saved_errno = os_errno_take(); /* the child starts with 0 */
  void *(*after)(void *) = w->after_spawn;
  if (likely(!after))
    after = push_parent_early(w, parent);
  w->current = t; /* its first run is counted by stat_spawned_pub */
#ifdef SWARM_ASAN
  void *fake = NULL;
  __sanitizer_start_switch_fiber(&fake, t->stack.lo, t->stack.size);
#else
  if (likely(!after)) /* fn runs straight on the fresh stack */
    w = swarm_arch_spawn(&parent->sp, thread_stack_top(t->stack), fn, arg,
                         user_thread_exit);
  else
#endif
  {
    w->handoff = parent; /* for the after step */
    w = swarm_arch_start(&parent->sp, thread_stack_top(t->stack), thread_entry,
                         after, w);
  }
#ifdef SWARM_ASAN
  __sanitizer_finish_switch_fiber(fake, NULL, NULL);
#endif
  /* Resumed, perhaps on another kernel thread (w is the one we are on now,
   * and its current thread is us): our errno back. Nothing else is live
   * across the switch, so the fast path needs no callee-saved registers. */
  os_errno_set(w->current->saved_errno);
  return 0;
}

/* Everything but the common case: attributes, bad arguments, a caller that
 * is not a worker, a runtime not started yet. */
static __attribute__((noinline)) int spawn_general(swarm_thread_t *out,
                                                   const swarm_attr_t *attr,
                                                   void *(*fn)(void *),
                                                   void *arg) {
  size_t size = 0;
  bool detached = false;
  if (attr) {
    if (attr->magic_ != SWARM_ATTR_MAGIC)
      return EINVAL;
    size = attr->stack_size_;
    detached = attr->detached_ != 0;
  }
  if (!fn || (!out && !detached))
    return EINVAL;
  struct worker *w = worker_current();
  if (!w) {
    int r = runtime_ensure_started();
    if (r)
      return r;
    w = worker_current();
  }
  if (size == 0)
    size = swarm_rt.default_stack;
  else
    size = (size + os_page_size() - 1) & ~(os_page_size() - 1);
  if (!w)
    return spawn_external(out, size, detached, fn, arg);
  return spawn_here(w, out, size, detached, fn, arg);
}

int swarm_spawn(swarm_thread_t *out, const swarm_attr_t *attr,
                void *(*fn)(void *), void *arg) {
  struct worker *w = worker_current();
  /* The fast path needs both caches non-empty, so that it makes no call
   * before the switch; refills happen in spawn_general. */
  if (unlikely(attr || !fn || !out || !w || !w->descs.head || !w->stacks.head))
    return spawn_general(out, attr, fn, arg);
  return spawn_here(w, out, swarm_rt.default_stack, false, fn, arg);
}

/* ---- park / ready ---- */

struct swarm_thread *swarm_current_thread(void) {
  struct worker *w = worker_current();
  if (w)
    return w->current;
  if (tls_external)
    return tls_external;
  struct swarm_thread *t = desc_alloc(NULL);
  if (!t)
    return NULL;
  t->kind = THREAD_EXTERNAL;
  t->pinned_worker = -1;
  t->fn = NULL;
  t->next = NULL;
  t->stack.lo = NULL;
  t->stack.size = 0;
  atomic_store(&t->wake_word, 0);
  for (int i = 0; i < SWARM_THREAD_SLOTS; i++)
    t->slots[i] = NULL;
  /* Not joinable: it is a kernel thread, joined with pthread_join. */
  atomic_fetch_or(&t->control, CTL_DETACHED | CTL_SPECIAL);
  tls_external = t;
  return t;
}

static void external_park(swarm_commit_fn commit, void *arg) {
  struct swarm_thread *self = swarm_current_thread();
  if (!self) {
    /* Cannot get a descriptor: wait by polling the commit's outcome is not
     * possible either; fail loudly rather than corrupt a wait list. */
    static const char msg[] = "swarm: out of memory for a kernel thread's "
                              "descriptor while blocking\n";
    os_write_stderr(msg, sizeof msg - 1);
    abort();
  }
  atomic_store_explicit(&self->wake_word, 0, memory_order_relaxed);
  if (!commit(self, arg))
    return;
  while (atomic_load_explicit(&self->wake_word, memory_order_acquire) == 0)
    os_futex_wait(&self->wake_word, 0, -1);
}

void swarm_park(swarm_commit_fn commit, void *arg) {
  struct worker *w = worker_current();
  if (!w) {
    external_park(commit, arg);
    return;
  }
  /* No timers_poll here: callers park holding the lock their commit
   * releases, and a due timer's callback may need that very lock (a timed
   * waiter's timeout takes its object's lock) — a self-deadlock, found by
   * tests/sync/test_sync_mutex_contention. */
  struct swarm_thread *self = w->current;
  w->park_commit = commit;
  w->park_arg = arg;
  w->handoff = self;
  w->stats.parks++;
  self->saved_errno = os_errno_get();
  switch_to(w, &self->sp, local_next(w), w->after_park);
  os_errno_set(self->saved_errno);
}

void swarm_ready(struct swarm_thread *t) {
  struct worker *w = worker_current();
  TRACE_READY(w, t);
  if (w || t->kind == THREAD_EXTERNAL) {
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

static bool commit_requeue(struct swarm_thread *self, void *arg) {
  (void)arg;
  struct worker *w = worker_current(), *target = w;
  if (self->pinned_worker >= 0)
    target = &swarm_rt.workers[self->pinned_worker];
  if (target == w)
    ready_queue_push(&w->queue, self); /* we run it ourselves: no wake */
  else
    queue_push_and_wake(target, self, w);
  return true;
}

void swarm_yield(void) {
  struct worker *w = worker_current();
  if (!w) {
    os_yield();
    return;
  }
  timers_poll(w);
  /* Nothing else runnable here: yielding would only come straight back. */
  if (deque_size(&w->deque) == 0 && queue_count(&w->queue) == 0)
    return;
  swarm_park_why(commit_requeue, NULL, SWARM_PARK_YIELD);
}

/* ---- the scheduler loop ---- */

/* A thread taken from a deque by a thief may be a parent its worker pushed
 * before switching away from it (spawn_here): wait until its context is
 * saved. The window is a few instructions of the owner's switch. */
static inline void thread_wait_saved(struct swarm_thread *t) {
  for (unsigned spins = 0; unlikely(!__atomic_load_n(&t->sp, __ATOMIC_ACQUIRE));
       spins++) {
    if (spins < 1024)
      os_cpu_relax();
    else /* the owner was preempted inside that window: let it run */
      os_yield();
  }
}

static struct swarm_thread *steal_round(struct worker *w) {
  int n = swarm_rt.nslots; /* spare workers' deques too (monitor.c) */
  if (n < 2)
    return NULL;
  for (int attempt = 0; attempt < n - 1; attempt++) {
    /* xorshift64: a random victim other than ourselves */
    uint64_t x = w->rng;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    w->rng = x;
    int v = (int)(x % (uint64_t)(n - 1));
    if (v >= w->id)
      v++;
    struct worker *victim = &swarm_rt.workers[v];
    w->stats.steals_tried++;
    void *item = deque_steal(&victim->deque);
    if (item == DEQUE_ABORT)
      item = deque_steal(&victim->deque);
    if (item && item != DEQUE_ABORT) {
      thread_wait_saved(item);
      w->stats.steals_ok++;
      TRACE_STEAL(w, item, v);
      /* More where that came from: let another idle worker have it. */
      if (deque_size(&victim->deque) > 0)
        wake_if_idle(w);
      return item;
    }
    struct swarm_thread *t = ready_queue_pop(&victim->queue, true);
    if (t) {
      w->stats.steals_ok++;
      TRACE_STEAL(w, t, v);
      return t;
    }
  }
  return NULL;
}

static bool work_visible(void) {
  for (int i = 0; i < swarm_rt.nslots; i++) { /* spares too */
    struct worker *v = &swarm_rt.workers[i];
    if (deque_size(&v->deque) > 0 || queue_count(&v->queue) > 0)
      return true;
  }
  return false;
}

static void check_quiescence(struct worker *w) {
  struct swarm_thread *waiter =
      atomic_load_explicit(&swarm_rt.finalize_waiter, memory_order_acquire);
  bool main_gone =
      atomic_load_explicit(&swarm_rt.main_exited, memory_order_acquire);
  if (!waiter && !main_gone)
    return;
  if (!all_threads_exited())
    return;
  if (waiter) {
    if (atomic_compare_exchange_strong(&swarm_rt.finalize_waiter, &waiter,
                                       NULL))
      make_runnable(w, waiter);
    return;
  }
  /* main called swarm_exit and every other thread is done: end the process
   * as pthread_exit in main does. */
  exit(0);
}

static void worker_sleep(struct worker *w, int64_t timeout_ns) {
  uint32_t seq = atomic_load_explicit(&w->sleep_word, memory_order_acquire);
  atomic_store_explicit(&w->sleeping, 1, memory_order_seq_cst);
  atomic_fetch_add_explicit(&swarm_rt.idle_workers, 1, memory_order_seq_cst);
  /* Re-check after announcing ourselves, fenced: a pusher either sees us in
   * idle_workers or left its work where we look now (file comment). */
  atomic_thread_fence(memory_order_seq_cst);
  if (!work_visible() &&
      atomic_load_explicit(&swarm_rt.state, memory_order_acquire) ==
          RT_RUNNING &&
      !atomic_load_explicit(&swarm_rt.finalize_waiter, memory_order_acquire)) {
    w->stats.sleeps++;
    TRACE_SLEEP_BEGIN(w);
    /* Sleep no longer than the earliest timer of ours. */
    uint64_t e = timers_earliest(w);
    if (e != UINT64_MAX) {
      uint64_t now = os_now_ns_inline();
      int64_t until = e > now ? (int64_t)(e - now) : 0;
      if (until < timeout_ns)
        timeout_ns = until;
    }
    /* With the I/O layer, sleep in the worker's epoll_wait so readiness
     * wakes it too; wakers then write its eventfd (io->wake). */
    const struct swarm_io_hooks *io =
        atomic_load_explicit(&swarm_io_hooks, memory_order_acquire);
    if (timeout_ns > 0 && (!io || !io->sleep(w, seq, timeout_ns)))
      os_futex_wait(&w->sleep_word, seq, timeout_ns);
    TRACE_SLEEP_END(w);
  }
  uint32_t one = 1;
  if (atomic_compare_exchange_strong_explicit(
          &w->sleeping, &one, 0, memory_order_acq_rel, memory_order_relaxed))
    atomic_fetch_sub_explicit(&swarm_rt.idle_workers, 1, memory_order_relaxed);
  /* The monitor sleeps without a deadline once every worker sleeps: a
   * worker that wakes brings it back (fence: store-load against its
   * monitor_idle store then sleeping-flag loads; monitor.c). */
  atomic_thread_fence(memory_order_seq_cst);
  if (atomic_load_explicit(&swarm_rt.monitor_idle, memory_order_relaxed))
    monitor_kick();
}

static void sched_loop(struct worker *w) {
  unsigned spins = 0;
  int64_t backoff = SLEEP_MIN_NS;
  for (;;) {
    timers_poll(w);
    struct swarm_thread *t = local_next(w);
    if (!t) { /* due I/O before stealing (src/io; cheap when none waits) */
      const struct swarm_io_hooks *io =
          atomic_load_explicit(&swarm_io_hooks, memory_order_relaxed);
      if (io) {
        io->poll(w);
        t = local_next(w);
      }
    }
    if (!t)
      t = steal_round(w);
    if (t) {
      spins = 0;
      backoff = SLEEP_MIN_NS;
      TRACE_SWITCH(w, t);
      w = switch_to(w, &w->sched_sp, t, NULL);
      continue;
    }
    if (atomic_load_explicit(&swarm_rt.state, memory_order_acquire) ==
        RT_STOPPING)
      return;
    check_quiescence(w);
    if (++spins < SPIN_ROUNDS) {
      os_cpu_relax();
      continue;
    }
    if (unlikely(w->id >= swarm_rt.nworkers)) { /* a spare: retire */
      spare_retire(w);
      spins = 0;
      continue;
    }
    worker_sleep(w, backoff);
    if (backoff < SLEEP_MAX_NS)
      backoff *= 2;
    spins = SPIN_ROUNDS - 8; /* a few rounds, then back to sleep */
  }
}

/* Worker 0's scheduler runs on its own stack, entered like a thread. */
static void sched_entry(void *transfer) {
#ifdef SWARM_ASAN
  __sanitizer_finish_switch_fiber(NULL, NULL, NULL);
#endif
  sched_loop(transfer);
  static const char msg[] = "swarm: worker 0's scheduler returned\n";
  os_write_stderr(msg, sizeof msg - 1);
  abort();
}

void *worker_main(void *arg) { /* also the spares' (monitor.c) */
  struct worker *w = arg;
  swarm_tls_worker = w;
  w->tid = os_thread_id(); /* the monitor reads its state */
  if (swarm_rt.bind)
    os_bind_self(swarm_rt.cpus[w->id % swarm_rt.ncpus]);
  w->altstack = os_altstack_install();
  void *lo;
  size_t size;
  os_thread_stack_bounds(&lo, &size);
  w->sched_stack.lo = lo;
  w->sched_stack.size = size;
  sched_loop(w);
  os_altstack_release(w->altstack);
  w->altstack = NULL;
  swarm_tls_worker = NULL;
  return NULL;
}

/* ---- stack overflow recognition (called from the signal handler) ---- */

static size_t append(char *buf, size_t n, size_t cap, const char *s) {
  while (*s && n < cap)
    buf[n++] = *s++;
  return n;
}

size_t sched_describe_fault(void *addr, char *buf, size_t cap) {
  struct worker *w = worker_current();
  if (!w)
    return 0;
  char *a = addr;
  size_t guard = swarm_rt.guard_size;
  struct swarm_thread *t = w->current;
  char num[32];
  size_t n = 0;
  if (t && t->kind == THREAD_USER && a >= t->stack.lo - guard &&
      a < t->stack.lo) {
    n = append(buf, n, cap, "swarm: stack overflow in thread ");
    num[os_format_hex(num, desc_handle(t))] = 0;
    n = append(buf, n, cap, num);
    n = append(buf, n, cap, " (start routine ");
    num[os_format_hex(num, (uint64_t)(uintptr_t)t->fn)] = 0;
    n = append(buf, n, cap, num);
    n = append(buf, n, cap, ", stack size ");
    num[os_format_u64(num, t->stack.size)] = 0;
    n = append(buf, n, cap, num);
    n = append(buf, n, cap, " bytes, guard page hit at ");
    num[os_format_hex(num, (uint64_t)(uintptr_t)addr)] = 0;
    n = append(buf, n, cap, num);
    n = append(buf, n, cap,
               ").\nswarm: give it a larger stack with "
               "swarm_attr_setstacksize(), or raise the default with "
               "SWARM_STACK_SIZE (e.g. SWARM_STACK_SIZE=1M).\n");
    return n;
  }
  if (!t && w->id == 0 && w->sched_stack.lo && a >= w->sched_stack.lo - guard &&
      a < w->sched_stack.lo) {
    n = append(buf, n, cap,
               "swarm: stack overflow in worker 0's scheduler stack\n");
    return n;
  }
  return 0;
}

/* ---- start and stop ---- */

static void stats_at_exit(void) {
  if (atomic_load(&swarm_rt.state) == RT_RUNNING && swarm_rt.print_stats)
    swarm_stats_print();
}

static void workers_release(int nslots) {
  for (int i = 0; i < nslots; i++) {
    struct worker *w = &swarm_rt.workers[i];
    stack_cache_flush(w);
    desc_cache_flush(w);
    deque_destroy(&w->deque);
    timers_destroy(w);
  }
  free(swarm_rt.workers);
  swarm_rt.workers = NULL;
  stack_pool_shutdown();
}

int swarm_init(const swarm_config_t *config) {
  int nworkers;
  size_t stack;
  bool bind, stats;
  int r = config_resolve(config, &nworkers, &stack, &bind, &stats);
  if (r)
    return r;
  spin_lock(&swarm_rt.lifecycle_lock);
  if (atomic_load(&swarm_rt.state) != RT_OFF) {
    spin_unlock(&swarm_rt.lifecycle_lock);
    return EBUSY;
  }
  atomic_store(&swarm_rt.state, RT_STARTING);
  swarm_rt.nworkers = nworkers;
  swarm_rt.default_stack = stack;
  swarm_rt.bind = bind;
  swarm_rt.print_stats = stats;
  /* Programs may close stderr before exit (xz does): keep our own copy so
   * the counters printed at exit still reach the terminal. */
  swarm_rt.stats_fd = stats ? (int)sys_fcntl(2, F_DUPFD_CLOEXEC, 3) : -1;
  swarm_rt.guard_size = os_page_size();
  swarm_rt.ncpus = os_cpus_allowed(swarm_rt.cpus, SWARM_MAX_WORKERS);
  if (swarm_rt.ncpus > SWARM_MAX_WORKERS)
    swarm_rt.ncpus = SWARM_MAX_WORKERS;
  atomic_store(&swarm_rt.idle_workers, 0);
  atomic_store(&swarm_rt.external_spawned, 0);
  atomic_store(&swarm_rt.finalize_waiter, NULL);
  atomic_store(&swarm_rt.main_exited, false);

  /* Spare workers (monitor.c) follow the regular ones in the array. */
  int nslots = nworkers + monitor_spare_count(nworkers);
  swarm_rt.nslots = nslots;
  size_t bytes = sizeof(struct worker) * (size_t)nslots;
  swarm_rt.workers = aligned_alloc(64, (bytes + 63) & ~(size_t)63);
  if (!swarm_rt.workers)
    goto fail_nomem;
  memset(swarm_rt.workers, 0, bytes);
  for (int i = 0; i < nslots; i++) {
    struct worker *w = &swarm_rt.workers[i];
    w->id = i;
    atomic_init(&w->timers.earliest_ns, UINT64_MAX);
    spin_init(&w->timers.lock, LOCK_TIMERS);
    spin_init(&w->queue.lock, LOCK_READY_QUEUE);
    w->rng = 0x9e3779b97f4a7c15ull * (uint64_t)(i + 1) ^ (uint64_t)getpid();
    if (!w->rng)
      w->rng = 1;
    if (deque_init(&w->deque, 256) != 0) {
      for (int j = 0; j < i; j++)
        deque_destroy(&swarm_rt.workers[j].deque);
      free(swarm_rt.workers);
      swarm_rt.workers = NULL;
      goto fail_nomem;
    }
  }
  os_overflow_handler_install(sched_describe_fault);
  os_errno_init();

  /* Worker 0: this kernel thread; its flow becomes the main swarm thread. */
  struct worker *w0 = &swarm_rt.workers[0];
  struct swarm_thread *main_t = desc_alloc(NULL);
  if (!main_t || stack_alloc(w0, SCHED_STACK_SIZE, &w0->sched_stack) != 0) {
    if (main_t)
      desc_release(NULL, main_t);
    workers_release(nslots);
    goto fail_nomem;
  }
  main_t->kind = THREAD_MAIN;
  atomic_fetch_or(&main_t->control, CTL_SPECIAL); /* see core.h */
  main_t->pinned_worker = -1;
  main_t->fn = NULL;
  main_t->next = NULL;
  main_t->joiner = NULL;
  for (int i = 0; i < SWARM_THREAD_SLOTS; i++)
    main_t->slots[i] = NULL;
  void *lo;
  size_t size;
  os_thread_stack_bounds(&lo, &size);
  main_t->stack.lo = lo;
  main_t->stack.size = size;
  swarm_rt.main_thread = main_t;
  w0->tid = os_thread_id(); /* the monitor reads its state */
  w0->current = main_t;
  /* Plain steps: NULL where the work is done before the switch (spawn_here,
   * exit_switch), which needs SWARM_ARCH_PUBLISH_LAST for the spawn and a
   * build without ASan for the exit (stack_release_running). */
  static const struct trace_steps plain =
                                      {
#ifdef SWARM_ARCH_PUBLISH_LAST
                                          NULL,
#else
                                          after_push_parent,
#endif
#ifdef SWARM_ASAN
                                          after_release_stack,
#else
                                          NULL,
#endif
                                          after_park},
                                  traced = {after_push_parent_traced,
                                            after_release_stack_traced,
                                            after_park_traced};
  swarm_rt.after_main_exit =
      trace_start(&plain, &traced) ? after_main_exit_traced : NULL;
  w0->altstack = os_altstack_install();
  w0->sched_sp = swarm_arch_prepare(w0->sched_stack.lo + w0->sched_stack.size,
                                    sched_entry);
  swarm_tls_worker = w0;
  if (bind)
    os_bind_self(swarm_rt.cpus[0]);
  atomic_store(&swarm_rt.state, RT_RUNNING);

  for (int i = 1; i < nworkers; i++) {
    struct worker *w = &swarm_rt.workers[i];
    if (os_thread_start(&w->kthread, worker_main, w) != 0) {
      /* Stop the ones that started, undo everything, report EAGAIN. */
      atomic_store(&swarm_rt.state, RT_STOPPING);
      for (int j = 1; j < i; j++) {
        worker_wake_if_sleeping(&swarm_rt.workers[j]);
        os_thread_join(swarm_rt.workers[j].kthread);
      }
      trace_stop();
      swarm_tls_worker = NULL;
      os_altstack_release(w0->altstack);
      stack_release(NULL, w0->sched_stack);
      desc_release(NULL, main_t);
      swarm_rt.main_thread = NULL;
      workers_release(nslots);
      atomic_store(&swarm_rt.state, RT_OFF);
      spin_unlock(&swarm_rt.lifecycle_lock);
      return EAGAIN;
    }
  }
  monitor_start(); /* without it, only stuck workers go unnoticed */
  static bool atexit_done;
  if (!atexit_done) {
    atexit_done = true;
    atexit(stats_at_exit);
  }
  spin_unlock(&swarm_rt.lifecycle_lock);
  return 0;

fail_nomem:
  atomic_store(&swarm_rt.state, RT_OFF);
  spin_unlock(&swarm_rt.lifecycle_lock);
  return EAGAIN;
}

int runtime_ensure_started(void) {
  if (likely(atomic_load_explicit(&swarm_rt.state, memory_order_acquire) ==
             RT_RUNNING))
    return 0;
  int r = swarm_init(NULL);
  if (r != EBUSY)
    return r;
  /* Another kernel thread is starting it: wait until it is up. */
  int s;
  while ((s = atomic_load_explicit(&swarm_rt.state, memory_order_acquire)) ==
         RT_STARTING)
    os_yield();
  return s == RT_RUNNING ? 0 : EAGAIN;
}

void runtime_reset_after_fork(void) {
  swarm_tls_worker = NULL;
  tls_external = NULL;
  swarm_rt.workers = NULL; /* the parent's, abandoned with their threads */
  swarm_rt.nworkers = 0;
  swarm_rt.nslots = 0;
  monitor_after_fork();
  swarm_rt.main_thread = NULL;
  atomic_store(&swarm_rt.idle_workers, 0);
  atomic_store(&swarm_rt.finalize_waiter, NULL);
  atomic_store(&swarm_rt.main_exited, false);
  atomic_store(&swarm_rt.external_spawned, 0);
  spin_init(&swarm_rt.lifecycle_lock, LOCK_LIFECYCLE);
  desc_table_after_fork();
  stack_pool_after_fork();
  atomic_store(&swarm_rt.state, RT_OFF);
}

static bool commit_finalize_wait(struct swarm_thread *self, void *arg) {
  (void)arg;
  atomic_store_explicit(&swarm_rt.finalize_waiter, self, memory_order_release);
  return true;
}

int swarm_finalize(void) {
  if (atomic_load(&swarm_rt.state) != RT_RUNNING)
    return ESRCH;
  struct worker *w = worker_current();
  if (!w || w->current != swarm_rt.main_thread)
    return EPERM;
  struct swarm_thread *self = swarm_rt.main_thread;
  /* Come back to worker 0, the kernel thread that called swarm_init, and
   * stay there: after this we are that kernel thread again. */
  self->pinned_worker = 0;
  if (w->id != 0)
    swarm_park_why(commit_requeue, NULL, SWARM_PARK_FINALIZE);
  /* Wait until every other thread has exited (an idle worker readies us). */
  swarm_park_why(commit_finalize_wait, NULL, SWARM_PARK_FINALIZE);
  w = worker_current();
  if (swarm_rt.print_stats) { /* SWARM_STATS: this run's counters, now */
    swarm_stats_print();
    if (swarm_rt.stats_fd >= 0)
      sys_close(swarm_rt.stats_fd);
    swarm_rt.stats_fd = -1;
  }
  spin_lock(&swarm_rt.lifecycle_lock);
  atomic_store(&swarm_rt.state, RT_STOPPING);
  for (int i = 1; i < swarm_rt.nworkers; i++) {
    struct worker *v = &swarm_rt.workers[i];
    worker_wake_if_sleeping(v);
    atomic_fetch_add(&v->sleep_word, 1);
    os_futex_wake(&v->sleep_word, 1);
  }
  for (int i = 1; i < swarm_rt.nworkers; i++)
    os_thread_join(swarm_rt.workers[i].kthread);
  monitor_stop(); /* and the spares it started */
  trace_stop();
  tls_worker_clear();
  os_altstack_release(w->altstack);
  w->altstack = NULL;
  stack_release(NULL, w->sched_stack);
  self->pinned_worker = -1;
  atomic_fetch_or(&self->control, CTL_EXITED);
  desc_release(NULL, self);
  swarm_rt.main_thread = NULL;
  workers_release(swarm_rt.nslots);
  swarm_rt.nworkers = 0;
  swarm_rt.nslots = 0;
  atomic_store(&swarm_rt.state, RT_OFF);
  spin_unlock(&swarm_rt.lifecycle_lock);
  return 0;
}

/* ---- small queries ---- */

int swarm_is_running(void) {
  return atomic_load(&swarm_rt.state) == RT_RUNNING;
}

swarm_thread_t swarm_self(void) {
  struct worker *w = worker_current();
  if (!w && runtime_ensure_started() == 0)
    w = worker_current();
  struct swarm_thread *t = w ? w->current : swarm_current_thread();
  return t ? desc_handle(t) : SWARM_THREAD_NONE;
}

int swarm_worker_id(void) {
  struct worker *w = worker_current();
  return w ? w->id : -1;
}

int swarm_num_workers(void) {
  if (runtime_ensure_started() != 0)
    return 1;
  return swarm_rt.nworkers;
}
