/*
 * core/inline.c — the opt-in inline spawn (swarm_attr_setinline): a child
 * that may run as a plain call on its spawner's stack, and its exit.
 *
 * What it owns:
 *  - The decision (inline_may_run): the worker's deque already holds at
 *    least SWARM_INLINE_DEPTH threads (stealable work enough: a thief takes
 *    those, the oldest, and the next spawn with fewer left is a plain one,
 *    which refills the deque), the parent is a USER or inlined thread that
 *    is not pinned (its stack and its worker may move while the child
 *    blocks), and the parent's stack has room left below the stack pointer
 *    (at least half the stack the child would have had). Otherwise
 *    spawn.c spawns the child as a plain thread.
 *  - The run (inline_spawn): the child gets a descriptor of its own, with
 *    kind THREAD_INLINE and the parent's stack bounds, so everything that
 *    looks at the running thread sees the child: swarm_self, errno (the
 *    parent's is kept in its saved_errno), the upper layers' slots, a park (the
 *    child's saved sp is on the parent's stack, which moves with it), the
 *    overflow report (fault.c), ASan's fiber bounds. The parent is owned by
 *    the call: it is in no deque and no list until the child returns, so
 *    nothing can run it meanwhile; that is the promise the spawner made.
 *    A descriptor that kept a stack (spawn.c) gives it back first.
 *  - The call (swarm_arch_inline_run, arch/x86_64.S and aarch64.S; a
 *    __builtin_setjmp twin below for the portable back end): fn(arg) as a
 *    plain call with an unwind point, the callee-saved registers saved once
 *    and the stack pointer stored in the parent's sp (nothing reads it while
 *    the parent is owned by the call). inline_spawn makes no call but its
 *    tail call of it and the run ends in a tail call of inline_done, so
 *    neither saves a register of its own; the parent goes in the child's
 *    arg (read otherwise only by thread_entry), the parent's errno in its
 *    saved_errno, as a switched-out thread's.
 *  - The exit (inline_exit): swarm_exit from an inlined child runs the exit
 *    work (thread-specific data, cleanup handlers) on the child's frames,
 *    then leaves them for the unwind point (swarm_arch_inline_unwind: the
 *    registers back from it), where inline_done publishes it as if fn had
 *    returned. The common path pays nothing for it but the pushes.
 *
 * Invariants: everything written to the child's descriptor (its stack back,
 * kind USER) precedes the publication of EXITED, after which a joiner may
 * release it at any moment; it is touched again only when WAITER says a
 * joiner is parked, as in spawn.c. The spawn and exit counters
 * (stat_spawned_pub, stat_exited_pub) count it as any thread, so
 * quiescence (sched.c) holds.
 */
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/core.h"
#include "core/inline.h"
#include "core/sched.h"
#include "core/trace.h"
#include "os/os.h"

#ifdef SWARM_ASAN
#include <sanitizer/asan_interface.h>
#endif

_Static_assert(sizeof(swarm_attr_t) == 2 * sizeof(uint32_t) + sizeof(size_t) +
                                           4 * sizeof(uintptr_t),
               "swarm_attr_t keeps its size: inline_ took a reserved word");

#define INLINE_DEPTH_DEFAULT 4
#define INLINE_DEPTH_MAX 1000000
/* Not read yet: more than any deque holds, so that the rule's depth test
 * says no and inline_decline reads it (one test fewer on the fast path). */
#define INLINE_DEPTH_UNREAD INT_MAX
#define INLINE_ROOM_MIN ((size_t)16384)

/* ---- attributes ---- */

int swarm_attr_setinline(swarm_attr_t *attr, int may_inline) {
  if (!attr || attr->magic_ != SWARM_ATTR_MAGIC ||
      (may_inline != 0 && may_inline != 1))
    return EINVAL;
  attr->inline_ = (uintptr_t)may_inline;
  return 0;
}

int swarm_attr_getinline(const swarm_attr_t *attr, int *may_inline) {
  if (!attr || attr->magic_ != SWARM_ATTR_MAGIC || !may_inline)
    return EINVAL;
  *may_inline = (int)attr->inline_;
  return 0;
}

/* ---- the decision ---- */

/* SWARM_INLINE_DEPTH, read once (a benign race: every reader computes the
 * same value). */
static int inline_depth_cached = INLINE_DEPTH_UNREAD;

static __attribute__((noinline, cold)) int inline_depth_read(void) {
  int d = INLINE_DEPTH_DEFAULT;
  const char *v = getenv("SWARM_INLINE_DEPTH");
  if (v && *v) {
    char *end;
    long x = strtol(v, &end, 10);
    if (*end || x < 0 || x > INLINE_DEPTH_MAX)
      fprintf(stderr,
              "swarm: ignoring SWARM_INLINE_DEPTH='%s': expected 0..%d\n", v,
              INLINE_DEPTH_MAX);
    else
      d = (int)x;
  }
  __atomic_store_n(&inline_depth_cached, d, __ATOMIC_RELAXED);
  return d;
}

/* Whether a child spawned with attr may run inline under `parent` on w
 * (see the file comment). */
static inline char *inline_sp(void);
static inline bool inline_may_run(struct worker *w, struct swarm_thread *parent,
                                  const swarm_attr_t *attr, int depth) {
  if (unlikely(!parent || parent->pinned_worker >= 0 ||
               (parent->kind != THREAD_USER && parent->kind != THREAD_INLINE)))
    return false;
  /* deque_size without its clamp: a transient negative is < depth too
   * (or, at depth 0, lets a child run inline while the deque is empty). */
  int64_t n = atomic_load_explicit(&w->deque.bottom, memory_order_relaxed) -
              atomic_load_explicit(&w->deque.top, memory_order_relaxed);
  if (n < depth)
    return false;
  size_t size = attr->stack_size_ ? attr->stack_size_ : swarm_rt.default_stack;
  size_t need = (size > 2 * INLINE_ROOM_MIN ? size : 2 * INLINE_ROOM_MIN) / 2;
  /* Signed: a stack pointer below the bounds (never, but) says no. */
  return inline_sp() - parent->stack.lo >= (ptrdiff_t)need;
}

/* ---- the run and the exit ---- */

/* The call with an unwind point (see the file comment): fn(arg) runs as a
 * plain call; *unwind gets the point swarm_exit goes back to; both ways end
 * in inline_done(result), whose value is returned. The assembly back ends
 * have it (arch/x86_64.S, arch/aarch64.S: they save the callee-saved
 * registers and the stack pointer, nothing else, and the common path
 * reloads none but aarch64's fp and lr); the portable one uses
 * __builtin_setjmp. */
int inline_done(void *result);
#if (defined(__x86_64__) || defined(__aarch64__)) &&                           \
    defined(SWARM_ARCH_PUBLISH_LAST)
int swarm_arch_inline_run(void *(*fn)(void *), void *arg, void **unwind)
    __attribute__((visibility("hidden")));
_Noreturn void swarm_arch_inline_unwind(void *sp, void *result)
    __attribute__((visibility("hidden")));
#else
static __attribute__((noinline)) int
swarm_arch_inline_run(void *(*fn)(void *), void *arg, void **unwind) {
  void *jb[5], *result;
  if (__builtin_setjmp(jb)) { /* from swarm_arch_inline_unwind */
    result = worker_current()->current->result;
  } else {
    *unwind = jb;
    result = fn(arg);
  }
  return inline_done(result);
}

_Noreturn static void swarm_arch_inline_unwind(void *sp, void *result) {
  worker_current()->current->result = result;
  __builtin_longjmp(sp, 1);
}
#endif

/* The upper layers' exit work, on the child's frames (it may block);
 * true if there was any. */
static inline bool inline_exit_work(struct swarm_thread *t) {
  if (likely(((uintptr_t)t->slots[SLOT_SYNC] |
              (uintptr_t)t->slots[SLOT_PTHREAD]) == 0))
    return false;
  if (swarm_thread_exit_hook)
    swarm_thread_exit_hook(t);
  for (int i = 0; i < SWARM_THREAD_SLOTS; i++)
    __atomic_store_n(&t->slots[i], NULL, __ATOMIC_RELAXED);
  return true;
}

/* The unwind point of the running inlined child t: in its parent's sp,
 * which nothing reads while the parent is owned by the call (it is in no
 * deque or list, and is not switched out); the parent is in t->arg, which
 * only thread_entry reads otherwise. */
_Noreturn void inline_exit(struct swarm_thread *t, void *result) {
  inline_exit_work(t);
  t = worker_current()->current; /* the same thread, perhaps moved */
  struct swarm_thread *parent = t->arg;
#ifdef SWARM_ASAN
  __asan_handle_no_return(); /* the frames below the point are left */
#endif
  swarm_arch_inline_unwind(parent->sp, result);
}

static __attribute__((noinline, cold)) void
inline_trace(struct worker *w, struct swarm_thread *from,
             struct swarm_thread *to, bool spawn) {
  uint64_t now = trace_now();
  if (spawn)
    trace_put(w->trace, TR_SPAWN, now, trace_id(from), trace_id(to), 0);
  trace_switch_at(w->trace, now, to);
}

/* A published exit with a joiner parked (WAITER) or a detached child:
 * ready the joiner, or retire the descriptor; swarm_spawn's 0. */
static __attribute__((noinline)) int
inline_notify(struct worker *w, struct swarm_thread *t, uint64_t old) {
  if (old & CTL_WAITER) {
    TRACE_READY(w, t->joiner);
    make_runnable(w, t->joiner);
  } else {
    desc_release(w, t);
  }
  return 0;
}

/* The child t, w's current thread, has ended with `result`: give the
 * worker back to its parent (t->arg) with the parent's errno (in the
 * parent's saved_errno, as a switched-out thread's is), then publish the
 * exit (as spawn.c's exit_publish and exit_notify do). Every write to t
 * precedes the add of EXITED, after which a joiner may release t. */
static inline __attribute__((always_inline)) int
inline_publish(struct worker *w, struct swarm_thread *t, void *result) {
  struct swarm_thread *parent = t->arg;
  t->stack.lo = NULL; /* a free descriptor's: none kept */
  t->stack.size = 0;
  t->kind = THREAD_USER;
  t->result = result;
  counter_inc(&w->stat_exited_pub);
  w->current = parent;
  os_errno_set(parent->saved_errno);
  uint64_t old =
      atomic_fetch_add_explicit(&t->control, CTL_EXITED, memory_order_acq_rel);
  if (unlikely(old & (CTL_WAITER | CTL_DETACHED)))
    return inline_notify(w, t, old);
  return 0;
}

/* inline_done with exit work (it may block) or a trace: the same after
 * them. */
static __attribute__((noinline)) int inline_done_slow(void *result) {
  inline_exit_work(worker_current()->current);
  struct worker *w = worker_current(); /* the child may have moved */
  struct swarm_thread *t = w->current;
  if (w->trace)
    inline_trace(w, t, t->arg, false);
  return inline_publish(w, t, result);
}

/* The child, w's current thread, has returned `result` (or unwound from
 * swarm_exit): its end, and swarm_spawn's 0. It makes no call on the
 * common path (a tail call at most), so it saves no register. */
int inline_done(void *result) {
  struct worker *w = worker_current(); /* the child may have moved */
  struct swarm_thread *t = w->current;
  if (unlikely((((uintptr_t)t->slots[SLOT_SYNC] |
                 (uintptr_t)t->slots[SLOT_PTHREAD]) != 0) ||
               w->trace))
    return inline_done_slow(result);
  return inline_publish(w, t, result);
}

/* The stack pointer, for the room check. */
static inline char *inline_sp(void) {
#if defined(__x86_64__)
  char *sp;
  __asm__("movq %%rsp, %0" : "=r"(sp));
  return sp;
#else
  return __builtin_frame_address(0);
#endif
}

/* inline_spawn's slow ways in: SWARM_INLINE_DEPTH read, the descriptor
 * cache refilled, or the stack the first descriptor kept (spawn.c) given
 * back, as spawn_bind_stack does for one of another size (an inlined
 * child's stack field holds its parent's bounds instead); then again. */
static __attribute__((noinline, cold)) int
inline_spawn_prepare(swarm_thread_t *out, const swarm_attr_t *attr,
                     void *(*fn)(void *), void *arg) {
  if (__atomic_load_n(&inline_depth_cached, __ATOMIC_RELAXED) ==
      INLINE_DEPTH_UNREAD)
    inline_depth_read();
  struct worker *w = worker_current();
  struct swarm_thread *t = w->descs.head;
  if (!t) {
    if (!(t = desc_alloc_slow(w)))
      return spawn_plain_general(out, attr, fn, arg); /* EAGAIN, said why */
    desc_cache_put(w, t);
  }
  if (t->stack.size) {
    stack_release(w, t->stack);
    t->stack.lo = NULL;
    t->stack.size = 0;
    w->stack_keep_room++;
  }
  return inline_spawn(out, attr, fn, arg);
}

/* The rule said no: a plain spawn, unless SWARM_INLINE_DEPTH was not read
 * yet (INLINE_DEPTH_UNREAD). */
static __attribute__((noinline)) int inline_decline(swarm_thread_t *out,
                                                    const swarm_attr_t *attr,
                                                    void *(*fn)(void *),
                                                    void *arg) {
  if (unlikely(__atomic_load_n(&inline_depth_cached, __ATOMIC_RELAXED) ==
               INLINE_DEPTH_UNREAD))
    return inline_spawn_prepare(out, attr, fn, arg);
  return spawn_plain_general(out, attr, fn, arg);
}

/* The traced run: the spawn's trace point, then the call. */
static __attribute__((noinline, cold)) int
inline_run_traced(struct worker *w, struct swarm_thread *parent,
                  struct swarm_thread *t, void *(*fn)(void *), void *arg) {
  inline_trace(w, parent, t, true);
  return swarm_arch_inline_run(fn, arg, &parent->sp);
}

/* Makes no call but its last (a tail call of the run, which ends in
 * inline_done's return to our caller), so nothing of it lives in
 * callee-saved registers: the parent goes in the child's arg, its errno in
 * its saved_errno. */
int inline_spawn(swarm_thread_t *out, const swarm_attr_t *attr,
                 void *(*fn)(void *), void *arg) {
  struct worker *w = worker_current();
  if (unlikely(!w || attr->magic_ != SWARM_ATTR_MAGIC || !fn ||
               (!out && !attr->detached_)))
    return spawn_plain_general(out, attr, fn, arg);
  struct swarm_thread *parent = w->current;
  int depth = __atomic_load_n(&inline_depth_cached, __ATOMIC_RELAXED);
  if (!inline_may_run(w, parent, attr, depth))
    return inline_decline(out, attr, fn, arg);
  struct swarm_thread *t = w->descs.head;
  if (unlikely(!t || t->stack.size))
    return inline_spawn_prepare(out, attr, fn, arg);
  w->descs.head = t->next;
  w->descs.count--;
  t->stack = parent->stack; /* bounds for fault.c, ASan, nesting */
  t->kind = THREAD_INLINE;
  t->fn = fn;
  t->arg = parent;
  if (unlikely(attr->detached_))
    atomic_fetch_or_explicit(&t->control, CTL_DETACHED, memory_order_relaxed);
  if (out)
    *out = desc_handle_free(t);
  counter_inc(&w->stat_spawned_pub);
  w->stats.inlined++;
  parent->saved_errno = os_errno_take(); /* the child starts with 0 */
  w->current = t;
  if (unlikely(w->trace))
    return inline_run_traced(w, parent, t, fn, arg);
  return swarm_arch_inline_run(fn, arg, &parent->sp);
}
