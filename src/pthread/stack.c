/*
 * pthread/stack.c — the drop-in's stacks in NPTL's terms: the default size
 * a pthread program gets, and the name its threads go by in the stack
 * overflow message.
 *
 * The default size. NPTL sizes a thread's stack, when the program does not,
 * from RLIMIT_STACK as read once when the process starts (glibc's
 * __pthread_early_init, 2.34 and later; __pthread_initialize_minimal
 * before): the soft limit; ARCH_STACK_DEFAULT_SIZE when it is unlimited or
 * cannot be read (2 MiB on x86_64; each architecture has its own); PTHREAD_STACK_MIN
 * when it is smaller than that; at least one page + the static TLS +
 * MINIMAL_REST_STACK; rounded up to the page size. That value is glibc's
 * default attribute, which pthread_attr_getstacksize reports for an attr
 * nobody set a size in (the drop-in leaves pthread_attr_* to glibc). So we
 * do not recompute the rule: we ask glibc for that value once, before the
 * program's main, and make it the runtime's default stack, so that
 * pthread_attr_getstacksize on a default attr, pthread_getattr_np on a
 * running thread and the memory the thread really has all agree, as they
 * do under NPTL. SWARM_STACK_SIZE still overrides it. Sizes swarm cannot
 * map (above SWARM_MAX_STACK, 1 GiB: ulimit -s beyond 1 GiB) are capped
 * there, and the cap is what getattr_np reports.
 *
 * Why this fits a million threads: stacks are mapped MAP_NORESERVE and
 * committed page by page as they are touched (core/stack.c), so an 8 MiB
 * default costs address space (8 TiB for a million threads, of the 128 TiB
 * x86_64 gives a process) and a page-table page per thread, not 8 MiB of
 * memory each. Rejected: keeping a smaller default than NPTL's (programs
 * that need what NPTL gives them crash: siege at 390 KB), and committing
 * stacks eagerly (MAP_POPULATE: a million threads would need terabytes).
 *
 * The overflow name. core/fault.c prints "stack overflow in thread " and
 * asks us how to go on: the pthread_t (the value the program holds), its
 * pthread_setname_np name if it has one, and the start routine given to
 * pthread_create, symbolised. Read in the SIGSEGV handler from the record
 * of the thread that overflowed, which is running, so the record cannot be
 * freed under us.
 */
#include "pthread/dropin.h"

static struct {
  size_t nptl_default; /* glibc's default stack size; 0 until read */
} dropin_stacks;

size_t dropin_default_stack(void) {
  if (!dropin_stacks.nptl_default) {
    pthread_attr_t a;
    size_t size = 0;
    if (pthread_attr_init(&a) == 0) {
      pthread_attr_getstacksize(&a, &size);
      pthread_attr_destroy(&a);
    }
    dropin_stacks.nptl_default = size;
  }
  return dropin_stacks.nptl_default;
}

size_t dropin_stack_for_runtime(void) {
  size_t size = dropin_default_stack();
  if (size < SWARM_STACK_MIN)
    return SWARM_STACK_MIN;
  return size > SWARM_MAX_STACK ? SWARM_MAX_STACK : size;
}

static size_t append(char *buf, size_t n, size_t cap, const char *s) {
  while (*s && n < cap)
    buf[n++] = *s++;
  return n;
}

static size_t fault_name(struct swarm_thread *t, char *buf, size_t cap) {
  struct dropin_thread *r =
      __atomic_load_n(&t->slots[SLOT_PTHREAD], __ATOMIC_ACQUIRE);
  if (!r || r->magic != DROPIN_MAGIC || !r->created)
    return 0;
  char num[24];
  num[os_format_hex(num, (uint64_t)(uintptr_t)r)] = 0;
  size_t n = append(buf, 0, cap, num);
  if (r->name[0]) {
    n = append(buf, n, cap, " \"");
    for (size_t i = 0; i < sizeof r->name && r->name[i] && n < cap; i++)
      buf[n++] = r->name[i];
    n = append(buf, n, cap, "\"");
  }
  n = append(buf, n, cap, " (pthread_t; start routine ");
  return n + os_describe_code((const void *)r->fn, buf + n, cap - n);
}

void dropin_stack_init(void) {
  (void)dropin_default_stack();
  fault_set_namer(fault_name,
                  "swarm: give it a larger stack with "
                  "pthread_attr_setstacksize(), or raise the default: it is "
                  "RLIMIT_STACK, as under NPTL ('ulimit -s'), or "
                  "SWARM_STACK_SIZE (e.g. SWARM_STACK_SIZE=16M).\n");
}
