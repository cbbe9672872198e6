/*
 * core/sched.h — what the scheduler's files share and nothing outside core
 * needs: the context switch as core makes it (sanitizer annotations, the
 * transfer of the worker), the owner-only counters, making a thread
 * runnable, the local run queue, and the "after" steps a switch runs on the
 * new stack (arch/context.h). The hot paths' pieces are static inline here
 * so that spawn.c, park.c and sched.c inline them as one file did.
 *
 * Files of the scheduler: sched.c (ready queues, waking idle workers, the
 * worker loop: finding work, stealing, sleeping, quiescence), spawn.c
 * (work-first spawn and thread exit), park.c (park, ready, yield, kernel
 * threads that are not workers), runtime.c (start, stop, fork), fault.c
 * (the stack-overflow message).
 *
 * Every switch hands the resumed context the worker it now runs on (the
 * transfer value of swarm_arch_switch). Code after a switch uses that, or
 * worker_current(), never a worker pointer or TLS address from before the
 * switch: the thread may have been stolen in between.
 *
 * errno belongs to the thread: saved when a thread switches away (spawn,
 * park) and restored in whatever kernel thread resumes it, through
 * os_errno_get/set (os.h), which the compiler cannot cache across the
 * switch; a new thread starts with errno 0, as a new pthread does.
 */
#ifndef SWARM_CORE_SCHED_H
#define SWARM_CORE_SCHED_H

#include "arch/context.h"
#include "core/core.h"

#ifdef SWARM_ASAN
#include <sanitizer/common_interface_defs.h>
#endif

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
    t = thread_stack_owner(t);
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

/* Under ASan: the running fiber ends here (nothing is saved) and next's
 * stack (or the scheduler's) comes. Nothing otherwise. */
static inline void fiber_ends(struct worker *w, struct swarm_thread *next) {
#ifdef SWARM_ASAN
  const void *lo;
  size_t size;
  stack_bounds_of(w, next, &lo, &size);
  __sanitizer_start_switch_fiber(NULL, lo, size);
#else
  (void)w;
  (void)next;
#endif
}

/* enter_next for a context that ends here (nothing is saved). */
static inline void *enter_next_ending(struct worker *w,
                                      struct swarm_thread *next) {
  void *sp = enter_next(w, next);
  fiber_ends(w, next);
  return sp;
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
  void *sp = enter_next_ending(w, next);
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

/* ---- runnable threads (sched.c) ---- */

static inline uint32_t queue_count(struct ready_queue *q) {
  return __atomic_load_n(&q->count, __ATOMIC_RELAXED);
}

/* Wakes one sleeping worker other than `self` (may be NULL), if any. */
void wake_one(struct worker *self);
/* Hands t to `target` through its ready queue and wakes it, or, when it is
 * awake and t may run anywhere, some idle worker that can steal t. */
void queue_push_and_wake(struct worker *target, struct swarm_thread *t,
                         struct worker *self);
void make_runnable_slow(struct worker *w, struct swarm_thread *t);

static inline void wake_if_idle(struct worker *w) {
  if (unlikely(atomic_int_positive(&swarm_rt.idle_workers)))
    wake_one(w);
}

/* Makes t runnable from worker w: onto w's deque, or (make_runnable_slow)
 * a ready queue for a pinned thread (only its worker may run it, and deques
 * are open to thieves) or when the deque cannot grow, or the futex of a
 * kernel thread that is not a worker. */
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

/* ---- prefetching the next thread's frames ---- */

/* How many 64-byte lines above a parked thread's saved stack pointer its
 * resumption touches first: the saved registers, the park's and the
 * blocking call's frames, the caller's. A thread parked in a read sits
 * about 900 bytes below its stack's top (bench/pingpong's echo). */
#define SCHED_PREFETCH_LINES 16

/* The lines a thread's resumption reads first: those above its saved
 * stack pointer (n's descriptor should be in the cache: it was fetched a
 * take earlier, sched_prefetch_descriptor). With thousands of threads
 * parked in I/O (a server's connections) each resumption otherwise waits
 * on a dozen lines from memory (docs/io.md, "Prefetching"). Only hints: a
 * descriptor is always readable (their region is never unmapped), a stale
 * saved sp costs a wasted fetch, and a prefetch never faults. */
static inline __attribute__((always_inline)) void
sched_prefetch_thread(const struct swarm_thread *n) {
  uintptr_t sp =
      (uintptr_t)__atomic_load_n(&n->sp, __ATOMIC_RELAXED) & ~(uintptr_t)63;
  for (int i = 0; i < SCHED_PREFETCH_LINES; i++)
    __builtin_prefetch((const void *)(sp + 64 * (uintptr_t)i));
}

/* A descriptor's two lines (its saved sp, which the next take reads, is
 * in the first); p may be stale or NULL, it is only fetched. */
static inline __attribute__((always_inline)) void
sched_prefetch_descriptor(const void *p) {
  __builtin_prefetch(p);
  __builtin_prefetch((const char *)p + 64);
}

/* local_next has taken slot b of w's deque and the slot below it holds a
 * thread (top < b was seen after the take's fence): the one the next
 * local_next will take, unless a thief or a push comes first. Its frames
 * are fetched while the taken thread runs, and the descriptor of the one
 * after it. A slot a thief has emptied still names a descriptor; the slot
 * after may be below top (stale), which costs a wasted fetch. */
static inline __attribute__((always_inline)) void
sched_prefetch_next(struct worker *w, int64_t b) {
  struct deque *d = &w->deque;
  int64_t mask = d->mask;
  sched_prefetch_thread(
      atomic_load_explicit(&d->items[(b - 1) & mask], memory_order_relaxed));
  sched_prefetch_descriptor(
      atomic_load_explicit(&d->items[(b - 2) & mask], memory_order_relaxed));
}

/* The same for the ready queue once local_next has popped from it: the
 * frames of its new head (whose descriptor the previous pop fetched) and
 * the descriptor after it. Read without the queue's lock: any descriptor
 * a stale link names is readable. */
static inline __attribute__((always_inline)) void
sched_prefetch_queued(struct worker *w) {
  const struct swarm_thread *n =
      __atomic_load_n(&w->queue.head, __ATOMIC_RELAXED);
  if (n) {
    sched_prefetch_thread(n);
    sched_prefetch_descriptor(__atomic_load_n(&n->next, __ATOMIC_RELAXED));
  }
}

/* Runnable work on this worker, without stealing. */
static inline __attribute__((always_inline)) struct swarm_thread *
local_next(struct worker *w) {
  int64_t b;
  struct swarm_thread *t = deque_take_begin(&w->deque, &b);
  if (likely(t)) {
    sched_prefetch_next(w, b);
    return t;
  }
  t = deque_take_end(&w->deque, b);
  if (likely(t) || likely(queue_count(&w->queue) == 0))
    return t;
  t = ready_queue_pop(&w->queue, false);
  sched_prefetch_queued(w);
  return t;
}

/* ---- after steps (arch/context.h), chosen per worker by trace_start ---- */
void *after_push_parent(void *arg);   /* spawn.c: push the parent */
void *after_wake_idle(void *arg);     /* spawn.c: wake an idle worker */
void *after_release_stack(void *arg); /* spawn.c: return the dead stack */
void *after_park(void *arg);          /* park.c: run the park's commit */
void *after_push_parent_traced(void *arg);
void *after_release_stack_traced(void *arg);
void *after_park_traced(void *arg);
void *after_main_exit_traced(void *arg);

/* park.c: requeue the parked thread (a yield; finalize's move to worker 0) */
bool commit_requeue(struct swarm_thread *self, void *arg);
/* park.c: the calling kernel thread's descriptor as a thread that is not
 * a worker (its TLS): forget it (a fork child), read it (NULL if it has
 * none yet), or make t that descriptor (a fork child whose runtime could
 * not start keeps its identity). */
void external_thread_forget(void);
struct swarm_thread *external_thread_current(void);
void external_thread_adopt(struct swarm_thread *t);
/* sched.c: worker 0's scheduler context starts here (swarm_init). */
void sched_entry(void *transfer);
/* runtime.c: clears the calling kernel thread's swarm_tls_worker */
void tls_worker_clear(void);

#endif
