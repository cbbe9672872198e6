/*
 * core/fault.c — the message for a stack overflow: os.c's SIGSEGV/SIGBUS
 * handler (on the kernel thread's alternate signal stack) asks here whether
 * the faulting address is the guard region below a stack core handed out,
 * and if so what to print: the thread (its handle and start routine), its
 * stack size, and how to give it more. Worker 0's scheduler stack has a
 * guard too. Async-signal-safe: no allocation, no locks, no stdio; only
 * the faulting worker's own state is read (a thread's stack cannot change
 * while it runs).
 */
#include "core/core.h"
#include "os/os.h"

static size_t append(char *buf, size_t n, size_t cap, const char *s) {
  while (*s && n < cap)
    buf[n++] = *s++;
  return n;
}

size_t fault_describe(void *addr, char *buf, size_t cap) {
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
