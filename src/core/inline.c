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
 *    spawn.c spawns the child as a plain thread. The fast path tests it
 *    with three compares: the deque's depth against the worker's
 *    inline_depth (INT64_MAX sends the first spawn on a worker, a traced
 *    worker's and a non-worker's the slow way), the stack pointer against
 *    the parent's inline_floor (precomputed where a stack is bound;
 *    UINTPTR_MAX for the main thread), and a default stack size in attr;
 *    a pinned thread never spawns (core.h).
 *  - The run (inline_spawn): the child gets a descriptor of its own, with
 *    kind THREAD_INLINE and no stack of its own (thread_stack_owner finds
 *    the parent's), so everything that
 *    looks at the running thread sees the child: swarm_self, errno (the
 *    parent's is kept in the run's frame), the upper layers' slots, a park (the
 *    child's saved sp is on the parent's stack, which moves with it), the
 *    overflow report (fault.c), ASan's fiber bounds. The parent is owned by
 *    the call: it is in no deque and no list until the child returns, so
 *    nothing can run it meanwhile; that is the promise the spawner made.
 *    A descriptor that kept a stack (spawn.c) gives it back first.
 *  - The call (swarm_arch_inline_run, arch/x86_64.S and aarch64.S; a
 *    __builtin_setjmp twin below for the portable back end): fn(arg) as a
 *    plain call with an unwind point, the callee-saved registers and the
 *    parent's errno saved once and the stack pointer stored in the parent's
 *    sp (nothing reads it while the parent is owned by the call).
 *    inline_spawn makes no call but its tail call of it and the run ends in
 *    a tail call of inline_done(result, parent's errno), so neither saves a
 *    register of its own; the parent goes in the child's arg (read
 *    otherwise only by thread_entry).
 *  - The exit (inline_exit): swarm_exit from an inlined child runs the exit
 *    work (thread-specific data, cleanup handlers) on the child's frames,
 *    then leaves them for the unwind point (swarm_arch_inline_unwind: the
 *    registers back from it), where inline_done publishes it as if fn had
 *    returned. The common path pays nothing for it but the pushes.
 *
 * Invariants: everything written to the child's descriptor (kind USER
 * again; its stack field it never wrote) precedes the publication of EXITED,
 * after which a joiner may release it at any moment; it is touched again only
 * when WAITER says a joiner is parked, as in spawn.c. The spawn and exit
 * counters (stat_spawned_pub, stat_exited_pub) count it as any thread, so
 * quiescence (sched.c) holds.
 */
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
#define INLINE_DEPTH_UNREAD (-1)

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
 * same value); each worker copies it into its inline_depth on its first
 * inline spawn (inline_spawn_slow). */
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

static int inline_depth_get(void) {
  int d = __atomic_load_n(&inline_depth_cached, __ATOMIC_RELAXED);
  return d == INLINE_DEPTH_UNREAD ? inline_depth_read() : d;
}

/* The fast path's test of attr: initialised (the magic), joinable and the
 * default stack size. On a little-endian machine the magic and the detach
 * state are one 64-bit word, compared at once. */
_Static_assert(offsetof(swarm_attr_t, magic_) == 0 &&
                   offsetof(swarm_attr_t, detached_) == 4,
               "the magic and the detach state share the attr's first word");
static inline bool inline_attr_plain(const swarm_attr_t *attr) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  uint64_t head;
  memcpy(&head, attr, sizeof head);
  return head == SWARM_ATTR_MAGIC && attr->stack_size_ == 0;
#else
  return attr->magic_ == SWARM_ATTR_MAGIC && attr->detached_ == 0 &&
         attr->stack_size_ == 0;
#endif
}

/* How many threads w's deque holds: deque_size without its clamp (a
 * transient negative is below any depth; at depth 0 it keeps a child from
 * running inline while a thief takes the last one). Relaxed. On x86-64 top
 * is subtracted from memory, which GCC does not make of an atomic load. */
static inline int64_t inline_deque_used(struct worker *w) {
  int64_t n = atomic_load_explicit(&w->deque.bottom, memory_order_relaxed);
#if defined(__x86_64__)
  __asm__("subq %1, %0" : "+r"(n) : "m"(w->deque.top));
  return n;
#else
  return n - atomic_load_explicit(&w->deque.top, memory_order_relaxed);
#endif
}

/* The stack pointer, for the room rule. */
static inline uintptr_t inline_sp(void) {
#if defined(__x86_64__)
  uintptr_t sp;
  __asm__("movq %%rsp, %0" : "=r"(sp));
  return sp;
#else
  return (uintptr_t)__builtin_frame_address(0);
#endif
}

/* Whether the stack pointer is below floor (no room): one compare of the
 * stack pointer with memory on x86-64. */
static inline bool inline_sp_below(const uintptr_t *floor) {
#if defined(__x86_64__) && defined(__GCC_ASM_FLAG_OUTPUTS__)
  bool below;
  __asm__("cmpq %1, %%rsp" : "=@ccb"(below) : "m"(*floor));
  return below;
#else
  return inline_sp() < *floor;
#endif
}

/* The whole rule, for the slow path: whether a child spawned with attr may
 * run inline under `parent` on w (see the file comment). */
static bool inline_may_run(struct worker *w, struct swarm_thread *parent,
                           const swarm_attr_t *attr, int64_t depth) {
  if (!parent || parent->pinned_worker >= 0 ||
      (parent->kind != THREAD_USER && parent->kind != THREAD_INLINE))
    return false;
  if (inline_deque_used(w) < depth)
    return false;
  if (attr->stack_size_ == 0) /* the room inline_floor was made for */
    return !inline_sp_below(&parent->inline_floor);
  size_t need = inline_room_for(attr->stack_size_);
  const char *lo = thread_stack_owner(parent)->stack.lo;
  /* Signed: a stack pointer below the bounds (never, but) says no. */
  return (ptrdiff_t)(inline_sp() - (uintptr_t)lo) >= (ptrdiff_t)need;
}

/* ---- the run and the exit ---- */

/* The call with an unwind point (see the file comment): fn(arg) runs as a
 * plain call; *unwind gets the point swarm_exit goes back to; both ways end
 * in inline_done(result, parent_errno), whose value is returned. The
 * assembly back ends have it (arch/x86_64.S, arch/aarch64.S: they save the
 * callee-saved registers, parent_errno and the stack pointer, nothing
 * else, and the common path reloads none but aarch64's fp and lr); the
 * portable one uses __builtin_setjmp. */
int inline_done(void *result, int parent_errno);
#if (defined(__x86_64__) || defined(__aarch64__)) &&                           \
    defined(SWARM_ARCH_PUBLISH_LAST)
int swarm_arch_inline_run(swarm_thread_t *out, int parent_errno,
                          void *(*fn)(void *), void *arg, struct worker *w,
                          void **unwind) __attribute__((visibility("hidden")));
_Noreturn void swarm_arch_inline_unwind(void *sp, void *result)
    __attribute__((visibility("hidden")));
#else
static __attribute__((noinline)) int
swarm_arch_inline_run(swarm_thread_t *out, int parent_errno,
                      void *(*fn)(void *), void *arg, struct worker *w,
                      void **unwind) {
  (void)out;
  (void)w;
  void *jb[5], *result;
  if (__builtin_setjmp(jb)) { /* from swarm_arch_inline_unwind */
    result = worker_current()->current->result;
  } else {
    *unwind = jb;
    result = fn(arg);
  }
  return inline_done(result, parent_errno);
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
 * worker back to its parent (t->arg) with the parent's errno (kept in the
 * run's frame, swarm_arch_inline_run), then publish the
 * exit (as spawn.c's exit_publish and exit_notify do). Every write to t
 * precedes the add of EXITED, after which a joiner may release t. Its
 * stack field was never written (thread_stack_owner): empty, as a free
 * descriptor's without a kept stack must be. */
static inline __attribute__((always_inline)) int
inline_publish(struct worker *w, struct swarm_thread *t, void *result,
               int parent_errno) {
  struct swarm_thread *parent = t->arg;
  t->kind = THREAD_USER;
  t->result = result;
  counter_inc(&w->stat_exited_pub);
  w->current = parent;
  os_errno_set(parent_errno);
  uint64_t old =
      atomic_fetch_add_explicit(&t->control, CTL_EXITED, memory_order_acq_rel);
  if (unlikely(old & (CTL_WAITER | CTL_DETACHED)))
    return inline_notify(w, t, old);
  return 0;
}

/* inline_done with exit work (it may block): the same after it. */
static __attribute__((noinline)) int inline_done_slow(void *result,
                                                      int parent_errno) {
  inline_exit_work(worker_current()->current);
  struct worker *w = worker_current(); /* the child may have moved */
  return inline_publish(w, w->current, result, parent_errno);
}

/* The child, w's current thread, has returned `result` (or unwound from
 * swarm_exit): its end, and swarm_spawn's 0. It makes no call on the
 * common path (a tail call at most), so it saves no register. A traced
 * run records the parent's slice after it (inline_run_traced). */
int inline_done(void *result, int parent_errno) {
  struct worker *w = worker_current(); /* the child may have moved */
  struct swarm_thread *t = w->current;
  if (unlikely(((uintptr_t)t->slots[SLOT_SYNC] |
                (uintptr_t)t->slots[SLOT_PTHREAD]) != 0))
    return inline_done_slow(result, parent_errno);
  return inline_publish(w, t, result, parent_errno);
}

/* The traced run: the spawn's trace point, the call (not a tail call:
 * the parent's slice is recorded once the child has ended, on whatever
 * worker the parent then runs). */
static __attribute__((noinline, cold)) int
inline_run_traced(struct worker *w, struct swarm_thread *parent,
                  struct swarm_thread *t, int parent_errno, void *(*fn)(void *),
                  void *arg) {
  inline_trace(w, parent, t, true);
  int r = swarm_arch_inline_run(NULL, parent_errno, fn, arg, w, &parent->sp);
  w = worker_current();
  if (w->trace)
    trace_switch(w->trace, parent);
  return r;
}

/* The run of the child t (taken from w's cache, no kept stack) under
 * parent: t becomes w's current thread and fn(arg) is called. Makes no
 * call but its last (a tail call of the run, which ends in inline_done's
 * return to swarm_spawn's caller), so nothing of it lives in callee-saved
 * registers: the parent goes in the child's arg, its errno to the run.
 * t keeps no stack of its own: fault.c and ASan find the
 * parent's (thread_stack_owner), a nested spawn's rule its inline_floor. */
static inline __attribute__((always_inline)) int
inline_run(struct worker *w, struct swarm_thread *parent,
           struct swarm_thread *t, swarm_thread_t *out, void *(*fn)(void *),
           void *arg, bool traced) {
  t->inline_floor = parent->inline_floor;
  t->kind = THREAD_INLINE;
  t->fn = fn; /* for the overflow report */
  t->arg = parent;
  if (out)
    *out = desc_handle_free(t);
  counter_inc(&w->stat_spawned_pub);
  w->stats.inlined++;
  int parent_errno = os_errno_take(); /* the child starts with 0 */
  w->current = t;
  if (unlikely(traced))
    return inline_run_traced(w, parent, t, parent_errno, fn, arg);
  return swarm_arch_inline_run(out, parent_errno, fn, arg, w, &parent->sp);
}

/* Everything but the fast path: bad arguments, a caller that is not a
 * worker (swarm_worker_none), a detached child, a stack size, a worker
 * that has not read SWARM_INLINE_DEPTH yet or is traced (its inline_depth
 * is INT64_MAX), the rule saying no, an empty descriptor cache or a
 * descriptor with a kept stack (given back, as spawn_bind_stack gives back
 * one of another size). */
static __attribute__((noinline)) int
inline_spawn_slow(swarm_thread_t *out, const swarm_attr_t *attr,
                  void *(*fn)(void *), void *arg, struct worker *w) {
  if (attr->magic_ != SWARM_ATTR_MAGIC || !fn || (!out && !attr->detached_) ||
      w == &swarm_worker_none)
    return spawn_plain_general(out, attr, fn, arg); /* its answers */
  int64_t depth = inline_depth_get();
  if (!w->trace)
    w->inline_depth = depth; /* the fast path's from now on */
  struct swarm_thread *parent = w->current;
  if (!inline_may_run(w, parent, attr, depth))
    return spawn_plain_general(out, attr, fn, arg);
  struct swarm_thread *t = w->descs.head;
  if (!t) {
    if (!(t = desc_alloc_slow(w)))
      return EAGAIN; /* after a reclaim, and said why (thread.c) */
    desc_cache_put(w, t);
    t = w->descs.head;
  }
  if (t->stack.size) {
    stack_release(w, t->stack);
    t->stack.lo = NULL;
    t->stack.size = 0;
    w->stack_keep_room++;
  }
  w->descs.head = t->next;
  w->descs.count--;
  if (attr->detached_)
    atomic_fetch_or_explicit(&t->control, CTL_DETACHED, memory_order_relaxed);
  return inline_run(w, parent, t, out, fn, arg, w->trace != NULL);
}

/* The fast path: an initialised, joinable attr with the default stack
 * size, a handle wanted, a worker with SWARM_INLINE_DEPTH read and no
 * trace whose deque holds that many threads (swarm_worker_none's depth
 * says no), room below the stack pointer (the parent's inline_floor,
 * UINTPTR_MAX for the main thread; a pinned thread never spawns, as
 * swarm_spawn's kept-stack path also assumes), a cached descriptor without
 * a kept stack. Anything else is inline_spawn_slow. */
int inline_spawn(swarm_thread_t *out, const swarm_attr_t *attr,
                 void *(*fn)(void *), void *arg, struct worker *w) {
  if (unlikely(!inline_attr_plain(attr) || !fn || !out))
    return inline_spawn_slow(out, attr, fn, arg, w);
  if (unlikely(inline_deque_used(w) < w->inline_depth))
    return inline_spawn_slow(out, attr, fn, arg, w);
  struct swarm_thread *parent = w->current;
  if (unlikely(inline_sp_below(&parent->inline_floor)))
    return inline_spawn_slow(out, attr, fn, arg, w);
  struct swarm_thread *t = w->descs.head;
  if (unlikely(!t || t->stack.size))
    return inline_spawn_slow(out, attr, fn, arg, w);
  w->descs.head = t->next;
  w->descs.count--;
  return inline_run(w, parent, t, out, fn, arg, false);
}
