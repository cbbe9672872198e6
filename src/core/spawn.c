/*
 * core/spawn.c — work-first spawn and thread exit, the scheduler's hot
 * paths (MassiveThreads' design):
 *
 *  - Work-first spawn. swarm_spawn switches straight from the parent to the
 *    child's fresh stack; the "after" step of that switch (arch/context.h),
 *    running on the child's stack once the parent is fully saved, pushes the
 *    parent on the deque. When the child exits, the worker takes the parent
 *    back from the bottom of the deque and switches to it: one switch each
 *    way, no scheduler context in between. If a thief stole the parent, the
 *    worker takes whatever else is local or goes to its scheduler loop.
 *
 *  - The fast paths make no call but the switch, so nothing of them lives
 *    in callee-saved registers (but the spawning parent's errno, which the
 *    switch saves with the parent's registers). Spawn: a cached descriptor
 *    with a stack (the one its last thread kept, or one from the stack
 *    cache), the parent pushed before the switch (push_parent_early, with
 *    a back end that publishes the saved stack pointer last), the child's
 *    function called straight on its fresh stack (swarm_arch_spawn_core).
 *
 *  - Kept stacks. An exiting thread leaves its stack on its descriptor,
 *    where the next spawn that takes the descriptor from a cache finds it
 *    (spawn_bind_stack): neither exit nor spawn touches the stack cache.
 *    Since the joiner may then reuse the stack at once, on any worker, the
 *    exit publishes EXITED only once off it: swarm_arch_resume_publish
 *    moves to the next thread's stack, adds EXITED there, and runs the
 *    joiner's wake-up or the detached release (swarm_thread_published) on
 *    that stack. How many kept stacks wait for a join is bounded per worker
 *    (worker.stack_keep_room); past it, and on traced or ASan builds, the
 *    exit gives its stack back itself, as before: into the worker's cache
 *    while still running on it (its frames start below the cache's link),
 *    or in the after step, and resumes the next thread without saving
 *    anything (swarm_arch_resume_plain). Everything else — attributes, a
 *    caller that is not a worker, a full deque, a sleeping worker to wake,
 *    upper layers' exit work, tracing — is an after step or a noinline
 *    tail call.
 *
 *  - Join's race with exit is won in thread.c; this side sets EXITED once
 *    (exit_publish) and readies a joiner only when WAITER says one parked.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>

#include "core/core.h"
#include "core/inline.h"
#include "core/sched.h"
#include "core/trace.h"
#include "os/os.h"

/* ---- the after steps of spawn and exit (arch/context.h) ---- */

void *after_push_parent(void *arg) {
  struct worker *w = arg;
  make_runnable(w, w->handoff);
  return w;
}

void *after_wake_idle(void *arg) { /* push_parent_early's parent */
  struct worker *w = arg;
  wake_one(w);
  return w;
}

void *after_release_stack(void *arg) {
  struct worker *w = arg;
  stack_release(w, w->dead_stack);
  return w;
}

/* Traced twins, chosen by trace_start (trace.h): the switch closes the old
 * run slice and opens the new one, then the plain step. */
void *after_push_parent_traced(void *arg) {
  struct worker *w = arg;
  uint64_t now = trace_now();
  trace_put(w->trace, TR_SPAWN, now, trace_id(w->handoff), trace_id(w->current),
            0);
  trace_switch_at(w->trace, now, w->current);
  return after_push_parent(arg);
}

void *after_release_stack_traced(void *arg) {
  struct worker *w = arg;
  trace_switch(w->trace, w->current);
  return after_release_stack(arg);
}

void *after_main_exit_traced(void *arg) {
  struct worker *w = arg;
  trace_switch(w->trace, w->current);
  return w;
}

/* ---- thread start and exit ---- */

/* Where a thread made by swarm_spawn starts when it is not started by
 * swarm_arch_spawn_core (an after step, a spawn from a non-worker, ASan). */
static void thread_entry(void *transfer) {
#ifdef SWARM_ASAN
  __sanitizer_finish_switch_fiber(NULL, NULL, NULL);
#endif
  struct worker *w = transfer;
  struct swarm_thread *t = w->current;
  os_errno_set(0);
  swarm_thread_finish(t->fn(t->arg));
  __builtin_unreachable();
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

/* The exit's last step, the general way: `next` is what the deque gave,
 * or NULL when deque_take_begin left the take to finish (deque_take_end:
 * the last item, raced for with the thieves, or none; then look in the
 * ready queue); any stack (the after step releases it once we are off
 * it). */
static __attribute__((noinline)) void
exit_switch_slow(struct worker *w, struct stack_ref dead,
                 struct swarm_thread *next, int64_t b) {
  if (!next)
    next = deque_take_end(&w->deque, b);
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
  w->stats.exit_runs_counted++; /* its resume counts itself in run */
  int64_t b;
  struct swarm_thread *next = deque_take_begin(&w->deque, &b);
  if (likely(next) && likely(stack_release_running(w, dead))) {
    resume_plain_tail(w, next);
    return;
  }
  exit_switch_slow(w, dead, next, b);
}

/* A published exit with a joiner to wake or a detached descriptor to
 * release; `dead` is the stack it took off its descriptor. */
static __attribute__((noinline)) void
exit_notify_switch(struct worker *w, struct swarm_thread *t, uint64_t old,
                   struct stack_ref dead) {
  exit_notify(w, t, old);
  exit_switch(w, dead);
}

/* Takes t's stack off its descriptor, before the exit is published: the
 * exit that releases its stack itself leaves none for the joiner. */
static inline struct stack_ref thread_stack_take(struct swarm_thread *t) {
  struct stack_ref s = t->stack;
  t->stack.lo = NULL;
  t->stack.size = 0;
  return s;
}

/* An exit that releases its stack (into the cache, or in the after step):
 * a traced worker's, or one that may keep no more (stack_keep_room: its
 * bound, or a memory limit's share, limits_stack_keep_max). */
static __attribute__((noinline)) void
user_thread_exit_release(struct worker *w, struct swarm_thread *t,
                         void *result) {
  struct stack_ref dead = thread_stack_take(t);
  uint64_t old = exit_publish(t, result);
  if (unlikely(old & (CTL_WAITER | CTL_DETACHED))) {
    exit_notify_switch(w, t, old, dead);
    return;
  }
  exit_switch(w, dead);
}

/* swarm_thread_finish past the room for kept stacks: gives back the one it
 * took. */
static __attribute__((noinline)) void
user_thread_exit_unkept(struct worker *w, struct swarm_thread *t,
                        void *result) {
  w->stack_keep_room++;
  user_thread_exit_release(w, t, result);
}

/* ---- the exit that keeps its stack ---- */

/* The kept-stack exit's notify (arch/context.h: swarm_arch_resume_publish
 * calls it by name): on the next context's stack, once the add of EXITED
 * found a joiner parked or the thread detached. */
_Static_assert(SWARM_ARCH_PUBLISH_NOTIFY == (CTL_WAITER | CTL_DETACHED),
               "swarm_arch_resume_publish tests core's notify bits");
void swarm_thread_published(void *arg, uint64_t old, _Atomic uint64_t *word) {
  struct swarm_thread *t =
      (struct swarm_thread *)((char *)word -
                              offsetof(struct swarm_thread, control));
  exit_notify(arg, t, old);
}

/* swarm_arch_resume_publish, declared so that a call to it in tail position
 * is a jump (see resume_plain_tail). */
void swarm_arch_resume_publish_tail(
    void *new_sp, void *arg,
    _Atomic uint64_t *word) __asm__("swarm_arch_resume_publish")
    __attribute__((visibility("hidden")));

/* swarm_arch_resume_publish(sp, w, &t->control), where the back end has
 * it, as a jump to its entry that takes w in rax and t in rcx
 * (arch/context.h: SWARM_ARCH_RESUME_PUBLISH_RAX): w is there after
 * worker_current and t after its load, so the exit moves neither and
 * computes no address (three instructions). The jump leaves this frame for
 * good, as the tail call does. */
#ifdef SWARM_ARCH_RESUME_PUBLISH_RAX
_Static_assert(offsetof(struct swarm_thread, control) ==
                   SWARM_ARCH_PUBLISH_WORD_OFFSET,
               "swarm_arch_resume_publish_rax adds to t's control word");
#endif
static inline __attribute__((always_inline)) void
resume_publish_to(void *sp, struct worker *w, struct swarm_thread *t) {
#ifdef SWARM_ARCH_RESUME_PUBLISH_RAX
  __asm__ volatile("jmp swarm_arch_resume_publish_rax"
                   :
                   : "D"(sp), "a"(w), "c"(t)
                   : "memory");
  __builtin_unreachable();
#else
  swarm_arch_resume_publish_tail(sp, w, &t->control);
#endif
}

/* Leaves t, whose result is stored and whose stack stays on its
 * descriptor, for next (NULL: the scheduler context); EXITED is published
 * once off t's stack, so a joiner may reuse the stack at once. */
static inline __attribute__((always_inline)) void
resume_publish(struct worker *w, struct swarm_thread *next,
               struct swarm_thread *t) {
  void *sp = enter_next_ending(w, next);
  resume_publish_to(sp, w, t);
}

/* resume_publish to a thread the deque gave (not NULL), its run not
 * counted: stat_exited_pub, which exit_keep bumped, counts it (stats.c,
 * worker_stats.run). */
static inline __attribute__((always_inline)) void
resume_publish_handoff(struct worker *w, struct swarm_thread *next,
                       struct swarm_thread *t) {
  w->current = next;
  void *sp = next->sp;
  fiber_ends(w, next);
  resume_publish_to(sp, w, t);
}

/* The kept-stack exit when deque_take_begin left the take to finish. */
static __attribute__((noinline)) void
exit_keep_slow(struct worker *w, struct swarm_thread *t, int64_t b) {
  w->stats.exit_runs_counted++; /* resume_publish counts it */
  struct swarm_thread *next = deque_take_end(&w->deque, b);
  if (!next && queue_count(&w->queue) != 0)
    next = ready_queue_pop(&w->queue, false);
  resume_publish(w, next, t);
}

/* The kept-stack exit: the result stored, the next thread taken, EXITED
 * published from its stack (resume_publish). */
static inline __attribute__((always_inline)) void
exit_keep(struct worker *w, struct swarm_thread *t, void *result) {
  t->result = result;
  counter_inc(&w->stat_exited_pub);
  int64_t b;
  struct swarm_thread *next = deque_take_begin(&w->deque, &b);
  if (unlikely(!next)) {
    exit_keep_slow(w, t, b);
    return;
  }
  resume_publish_handoff(w, next, t);
}

/* swarm_thread_finish for a thread with exit work (the hook may block): then
 * as a thread without. */
static __attribute__((noinline)) void
user_thread_exit_slow(struct swarm_thread *t, void *result) {
  thread_exit_work(t);
  /* Free descriptors have NULL slots (thread_init); only t itself sets
   * its slots, and it runs no more code of the upper layers. */
  for (int i = 0; i < SWARM_THREAD_SLOTS; i++)
    __atomic_store_n(&t->slots[i], NULL, __ATOMIC_RELAXED);
  struct worker *w = worker_current(); /* the hook may have moved us */
  if (unlikely(--w->stack_keep_room < 0)) {
    user_thread_exit_unkept(w, t, result);
    return;
  }
  exit_keep(w, t, result);
}

/* The end of every thread made by swarm_spawn (swarm_arch_spawn_core calls it
 * with fn's result; thread_entry, swarm_exit). Never returns (see
 * resume_plain_tail for why it is not declared so). The common case keeps
 * the stack on the descriptor for the next spawn that takes it (see
 * spawn_bind_stack) and touches no cache: it stores the result, takes the
 * next thread and leaves, publishing EXITED from the next stack. */
__attribute__((noinline)) void swarm_thread_finish(void *result) {
  struct worker *w = worker_current();
  struct swarm_thread *t = w->current;
  if (unlikely(thread_has_exit_work(t))) {
    user_thread_exit_slow(t, result);
    return;
  }
  if (unlikely(--w->stack_keep_room < 0)) {
    user_thread_exit_unkept(w, t, result);
    return;
  }
  exit_keep(w, t, result);
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
    exit_notify(w, t, old); /* desc_release drops MAIN's stack */
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
  if (t->kind == THREAD_INLINE)
    inline_exit(t, result); /* back to its spawn point */
  swarm_thread_finish(result);
  __builtin_unreachable();
}

/* ---- spawn ---- */

static void thread_init(struct swarm_thread *t, void *(*fn)(void *),
                        bool detached) {
  /* result, joiner and next are written before anything reads them (exit,
   * join's park, a list insertion), so they are not cleared here; kind and
   * pinned_worker are already USER and -1 in a free descriptor (core.h).
   * arg is read only by thread_entry, so only spawns that start there set
   * it; fn stays for the overflow report (fault.c). The slots are already
   * NULL too: a thread that set one clears them after its exit work
   * (user_thread_exit_slow). */
  t->fn = fn;
  if (detached)
    atomic_fetch_or_explicit(&t->control, CTL_DETACHED, memory_order_relaxed);
}

/* Gives t a stack of `size` (w may be NULL): the one its last thread left
 * on it (swarm_thread_finish), which gives back one of the room for kept
 * stacks, or a stack from the cache; one of another size is released. 0 or
 * EAGAIN. */
static inline int spawn_bind_stack(struct worker *w, struct swarm_thread *t,
                                   size_t size) {
  if (likely(t->stack.size == size)) {
    if (w)
      w->stack_keep_room++;
    return 0;
  }
  if (t->stack.size) {
    stack_release(w, t->stack);
    if (w)
      w->stack_keep_room++;
  }
  t->stack.lo = NULL;
  t->stack.size = 0;
  if (stack_alloc(w, size, &t->stack) != 0) {
    t->stack.lo = NULL;
    t->stack.size = 0;
    return EAGAIN;
  }
  t->inline_floor = thread_inline_floor(t->stack.lo);
  return 0;
}

/* Spawn from a kernel thread that is not a worker: hand the new thread to a
 * worker through its ready queue. */
static int spawn_external(swarm_thread_t *out, size_t size, bool detached,
                          void *(*fn)(void *), void *arg) {
  struct swarm_thread *t = desc_alloc(NULL);
  if (!t)
    return EAGAIN;
  if (spawn_bind_stack(NULL, t, size) != 0) {
    desc_release(NULL, t);
    return EAGAIN;
  }
  thread_init(t, fn, detached);
  t->arg = arg;
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
 * it lives in callee-saved registers. may_pin false: the caller knows the
 * parent is not pinned (swarm_spawn's kept-stack path: see core.h's
 * pinned_worker, a pinned thread never spawns). */
static inline void *(*push_parent_early(struct worker *w,
                                        struct swarm_thread *parent,
                                        bool may_pin))(void *) {
  if (may_pin && unlikely(parent->pinned_worker >= 0))
    return after_push_parent;
  __atomic_store_n(&parent->sp, NULL, __ATOMIC_RELAXED);
  int pushed = deque_try_push(&w->deque, parent);
  if (unlikely(!pushed))
    return after_push_parent;
  if (unlikely(pushed == DEQUE_PUSHED_INTO_EMPTY))
    atomic_thread_fence(memory_order_seq_cst); /* see the file comment */
  if (unlikely(atomic_int_positive(&swarm_rt.idle_workers)))
    return after_wake_idle;
  return NULL;
}

/* Work-first spawn on worker w of t, which has its stack: run the child
 * now; the parent is pushed on the deque before the switch
 * (push_parent_early) or by the after step once it is fully saved. The
 * child's first transfer value is w (thread_entry). */
static inline __attribute__((always_inline)) int
spawn_run(struct worker *w, struct swarm_thread *t, swarm_thread_t *out,
          bool detached, void *(*fn)(void *), void *arg, bool may_trace) {
  thread_init(t, fn, detached);
  if (out)
    *out = desc_handle_free(t);
  counter_inc(&w->stat_spawned_pub);
  struct swarm_thread *parent = w->current;
  /* Our errno, kept across the switch in a callee-saved register (which
   * the switch saves and restores), not in the descriptor: one reload
   * fewer. The child starts with 0. */
  int saved_errno = os_errno_take();
  void *(*after)(void *) = may_trace ? w->after_spawn : NULL;
  if (likely(!after))
    after = push_parent_early(w, parent, may_trace);
  w->current = t; /* its first run is counted by stat_spawned_pub */
#ifdef SWARM_ASAN
  void *fake = NULL;
  __sanitizer_start_switch_fiber(&fake, t->stack.lo, t->stack.size);
#else
  if (likely(!after)) /* fn runs straight on the fresh stack */
    w = swarm_arch_spawn_core(&parent->sp, thread_stack_top(t->stack), fn, arg);
  else
#endif
  {
    t->arg = arg;        /* for thread_entry */
    w->handoff = parent; /* for the after step */
    w = swarm_arch_start(&parent->sp, thread_stack_top(t->stack), thread_entry,
                         after, w);
  }
#ifdef SWARM_ASAN
  __sanitizer_finish_switch_fiber(fake, NULL, NULL);
#endif
  /* Resumed, perhaps on another kernel thread: our errno back. Nothing
   * else is live across the switch. */
  (void)w;
  os_errno_set(saved_errno);
  return 0;
}

/* Everything but the common case: attributes, bad arguments, a caller that
 * is not a worker, a runtime not started yet (also inline.c's way when it
 * declines). */
int spawn_plain_general(swarm_thread_t *out, const swarm_attr_t *attr,
                        void *(*fn)(void *), void *arg) {
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
  struct swarm_thread *t = desc_alloc(w);
  if (unlikely(!t))
    return EAGAIN;
  if (unlikely(spawn_bind_stack(w, t, size) != 0)) {
    desc_release(w, t);
    return EAGAIN;
  }
  return spawn_run(w, t, out, detached, fn, arg, true);
}

/* swarm_spawn's way for anything but the common case and the inline
 * opt-in. */
static __attribute__((noinline)) int spawn_general(swarm_thread_t *out,
                                                   const swarm_attr_t *attr,
                                                   void *(*fn)(void *),
                                                   void *arg) {
  return spawn_plain_general(out, attr, fn, arg);
}

int swarm_spawn(swarm_thread_t *out, const swarm_attr_t *attr,
                void *(*fn)(void *), void *arg) {
  /* swarm_worker_none on a kernel thread that is not a worker: its
   * descriptor cache is empty, so the test of the head is that one too. */
  struct worker *w = worker_current_or_none();
  struct swarm_thread *t;
  /* The fast path makes no call before the switch: a cached descriptor,
   * with the stack its last thread kept (spawn_bind_stack) or a cached
   * one; refills and the rest happen in spawn_general. */
  if (unlikely(attr)) {
    /* The inline opt-in: inline.c runs the child as a call or declines to
     * spawn_plain_general; it is given w (swarm_worker_none's deque depth
     * sends it the slow way). */
    if (attr->inline_)
      return inline_spawn(out, attr, fn, arg, w);
    return spawn_general(out, attr, fn, arg);
  }
  if (unlikely(!fn))
    return spawn_general(out, attr, fn, arg);
  if (unlikely(!out))
    return spawn_general(out, attr, fn, arg);
  if (unlikely(!(t = w->descs.head)))
    return spawn_general(out, attr, fn, arg);
  if (likely(t->stack.size == w->spawn_keep_size)) {
    /* A kept stack on an untraced worker (spawn_keep_size): no after
     * step to test for, and no pinned parent (core.h: a pinned thread
     * does not spawn). */
    w->descs.count--;
    w->stack_keep_room++;
    w->descs.head = t->next;
    return spawn_run(w, t, out, false, fn, arg, false);
  }
  size_t size = swarm_rt.default_stack;
  char *lo = w->stacks.head;
  if (unlikely(t->stack.size || !lo))
    return spawn_general(out, attr, fn, arg);
  w->descs.count--;
  w->stacks.head = *stack_link(lo, size);
  w->stacks.count--;
  t->stack.lo = lo;
  t->stack.size = size;
  t->inline_floor = thread_inline_floor(lo); /* a kept stack keeps it */
  w->descs.head = t->next;
  return spawn_run(w, t, out, false, fn, arg, true);
}
