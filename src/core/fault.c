/*
 * core/fault.c — the message for a stack overflow: os.c's SIGSEGV/SIGBUS
 * handler (on the kernel thread's alternate signal stack) asks here whether
 * the faulting address is the guard region below a stack core handed out,
 * or just below main's own stack, and if so what to print: the thread in
 * the program's own terms, its stack size, and how to give it more.
 *
 * Whose terms. Natively a thread is its swarm handle and start routine. An
 * upper layer that made the thread for a program in other terms (the
 * pthread drop-in: a pthread_t and the routine given to pthread_create)
 * registers a namer with fault_set_namer; its answer replaces the native
 * name, and its advice the native advice. Start routines are symbolised
 * with dladdr (os_describe_code): "routine+0x0 in ./prog", or the object
 * and offset for a static function.
 *
 * Which regions. A thread's guard is [stack.lo - guard_size, stack.lo)
 * (core/stack.c maps it; runtime.c sizes it). Main's flow runs on the
 * process's own stack, which the kernel grows down to RLIMIT_STACK and
 * keeps stack_guard_gap (1 MiB by default) away from the mapping below; a
 * fault within that gap of the lowest address glibc reports for it
 * (pthread_getattr_np: the end of [stack] minus RLIMIT_STACK, or the
 * mapping below when unlimited) is its overflow. Worker 0's scheduler
 * stack has a guard too.
 *
 * Async-signal-safe apart from dladdr (see os.h): no allocation, no locks
 * of ours, no stdio; only the faulting worker's own state is read (a
 * thread's stack cannot change while it runs).
 */
#include "core/core.h"
#include "os/os.h"

/* The kernel's default stack_guard_gap (256 pages) plus our guard size:
 * how far below main's lowest stack address an overflow can land. */
#define MAIN_STACK_GAP ((size_t)1 << 20)

static struct {
  _Atomic(fault_namer_fn) namer;
  const char *_Atomic advice;
} fault_state;

void fault_set_namer(fault_namer_fn namer, const char *advice) {
  atomic_store(&fault_state.advice, advice);
  atomic_store(&fault_state.namer, namer);
}

static size_t append(char *buf, size_t n, size_t cap, const char *s) {
  while (*s && n < cap)
    buf[n++] = *s++;
  return n;
}

static size_t append_hex(char *buf, size_t n, size_t cap, uint64_t v) {
  char num[24];
  num[os_format_hex(num, v)] = 0;
  return append(buf, n, cap, num);
}

static size_t append_u64(char *buf, size_t n, size_t cap, uint64_t v) {
  char num[24];
  num[os_format_u64(num, v)] = 0;
  return append(buf, n, cap, num);
}

/* "0x100000003 (start routine fn in ./prog" — the native name. */
static size_t native_name(struct swarm_thread *t, char *buf, size_t cap) {
  size_t n = append_hex(buf, 0, cap, desc_handle(t));
  n = append(buf, n, cap, " (start routine ");
  return n + os_describe_code((const void *)t->fn, buf + n, cap - n);
}

static size_t describe_thread(struct swarm_thread *t, size_t stack_size,
                              void *addr, char *buf, size_t cap) {
  fault_namer_fn namer = atomic_load(&fault_state.namer);
  const char *advice = atomic_load(&fault_state.advice);
  size_t n = append(buf, 0, cap, "swarm: stack overflow in thread ");
  size_t named = namer ? namer(t, buf + n, cap - n) : 0;
  if (named == 0) {
    named = native_name(t, buf + n, cap - n);
    advice = NULL;
  }
  n += named;
  n = append(buf, n, cap, ", stack size ");
  n = append_u64(buf, n, cap, stack_size);
  n = append(buf, n, cap, " bytes, guard hit at ");
  n = append_hex(buf, n, cap, (uint64_t)(uintptr_t)addr);
  n = append(buf, n, cap, ").\n");
  return append(buf, n, cap,
                advice ? advice
                       : "swarm: give it a larger stack with "
                         "swarm_attr_setstacksize(), or raise the default "
                         "with SWARM_STACK_SIZE (e.g. SWARM_STACK_SIZE=1M).\n");
}

static size_t describe_main(struct swarm_thread *t, void *addr, char *buf,
                            size_t cap) {
  size_t n = append(buf, 0, cap,
                    "swarm: stack overflow in the main thread (its own "
                    "stack, ");
  n = append_u64(buf, n, cap, t->stack.size);
  n = append(buf, n, cap, " bytes as RLIMIT_STACK allows, fault at ");
  n = append_hex(buf, n, cap, (uint64_t)(uintptr_t)addr);
  return append(buf, n, cap,
                ").\nswarm: raise the limit with 'ulimit -s', or run the "
                "deep work in a thread given a larger stack.\n");
}

size_t fault_describe(void *addr, char *buf, size_t cap) {
  struct worker *w = worker_current();
  if (!w)
    return 0;
  char *a = addr;
  size_t guard = swarm_rt.guard_size;
  struct swarm_thread *t = w->current;
  /* An inlined child runs on the stack of its nearest plain ancestor. */
  struct swarm_thread *s = t ? thread_stack_owner(t) : NULL;
  if (s && s->kind == THREAD_USER && a >= s->stack.lo - guard &&
      a < s->stack.lo)
    return describe_thread(t, s->stack.size, addr, buf, cap);
  if (t && t->kind == THREAD_MAIN && t->stack.lo &&
      a >= t->stack.lo - MAIN_STACK_GAP - guard &&
      a < t->stack.lo + MAIN_STACK_GAP)
    return describe_main(t, addr, buf, cap);
  if (!t && w->id == 0 && w->sched_stack.lo && a >= w->sched_stack.lo - guard &&
      a < w->sched_stack.lo)
    return append(buf, 0, cap,
                  "swarm: stack overflow in worker 0's scheduler stack\n");
  return 0;
}
