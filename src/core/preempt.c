/*
 * core/preempt.c — asynchronous preemption (as Go's since 1.14): a swarm
 * thread that computes for a time slice while other threads wait on its
 * worker is interrupted by a signal and switched away from at the
 * interrupt, when that is safe.
 *
 * Who asks. The monitor (monitor.c) already counts, per worker, the ticks
 * in which the worker switched no thread; preempt_tick asks for a
 * preemption when that reaches PREEMPT_TICKS with threads queued on the
 * worker (deque or ready queue): it sets worker.preempt_requested and sends
 * the interrupt signal (os_interrupt_signal) to the worker's kernel
 * thread. Nothing is added to spawn, exit, park or the scheduler loop: the
 * cost when no thread is preempted is the monitor's one call per worker
 * and tick.
 *
 * When it is safe: swarm_preempt_safe. The handler runs on the interrupted
 * thread's stack; switching away there is what a park does, except for
 * state the interrupted code holds that another thread on the same kernel
 * thread could trip over:
 *  - the runtime's own state (a half-done switch, where worker.current
 *    already names the next thread; a spinlock): refused when the
 *    interrupted program counter is in the runtime's code (the object that
 *    contains this file: libswarm.so or libswarm-pthread.so; a program
 *    that links libswarm statically has its own code in that object too,
 *    so it is never preempted);
 *  - the C library's and the dynamic loader's internal locks (malloc's
 *    arenas, stdio's, the loader's), which belong to the kernel thread, so
 *    a second swarm thread on the same worker would deadlock or enter
 *    them: refused when the program counter is in libc.so or ld.so;
 *  - a shared object with thread-local storage of its own (a PT_TLS
 *    segment: an allocator's thread cache such as jemalloc's, libgomp's
 *    thread state, libstdc++'s): under the drop-in a worker's swarm
 *    threads share its kernel thread's TLS, which such code updates
 *    assuming nothing else runs on that kernel thread meanwhile, so a
 *    second thread switched in at the interrupt would interleave with it
 *    (tests/pthread/dropin_preempt_tls: per-thread counts came out mixed).
 *    Refused there, as in libc. The program's own executable stays
 *    preemptible, TLS or not (docs/dropin.md). Objects loaded later
 *    (dlopen) are added when the monitor next asks for a preemption: it
 *    rebuilds the table when the loader's count of added objects moved;
 *  - the vDSO (clock_gettime, gettimeofday): the runtime reads clocks
 *    through it, at times holding a sync object's spinlock (a timed wait
 *    computing its deadline), so it is runtime code for this purpose:
 *    refused there too (a program's own clock read is a few dozen
 *    nanoseconds; the next tick asks again).
 *    Locks taken through pthread_mutex_lock (libstdc++, libgcc's unwinder,
 *    the program's) are swarm's under the drop-in and may be held across
 *    a preemption like across any park;
 *  - a signal handler, or one of the drop-in's windows where the worker
 *    runs with the thread's own mask: refused when the interrupted
 *    context's mask is not the worker's.
 * A refused preemption is asked again at the next tick.
 *
 * The switch. The handler restores the worker's mask (the kernel blocked
 * everything while it runs), pins the thread to this worker and yields:
 * it goes to this worker's ready queue, and resumes here, returning
 * through the handler and the kernel's sigreturn to the interrupted
 * instruction. Pinning keeps the kernel thread the same across the
 * interruption, so an address of a thread-local variable the interrupted
 * code holds in a register stays right, and sigreturn restores the mask of
 * the worker it was taken on. Spares are preempted too (a thread queued on
 * a spare that computes would otherwise wait for it forever); pinning to a
 * spare is safe, as a spare retires only after finding nothing to run,
 * its own ready queue included.
 */
#include <link.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <ucontext.h>

#include "core/core.h"
#include "os/sys.h"

#define PREEMPT_TICKS 2 /* monitor ticks: 1 to 20 ms */
#define PREEMPT_RANGES 64

/* The code where an interrupt must not switch. Immutable once published:
 * a rebuilt table is a new one (the old ones are few, one per change in
 * the loaded objects, and are kept: a handler may still be reading one). */
struct preempt_ranges {
  unsigned long long adds; /* the loader's count of added objects */
  bool full;               /* an object did not fit: refuse everywhere */
  int n;
  uintptr_t lo[PREEMPT_RANGES], hi[PREEMPT_RANGES];
};

/* Whether pc lies in one of r's ranges. */
static bool ranges_hold(const struct preempt_ranges *r, uintptr_t pc) {
  for (int i = 0; i < r->n; i++)
    if (pc >= r->lo[i] && pc < r->hi[i])
      return true;
  return false;
}

static struct {
  bool enabled;
  uint64_t worker_mask;
  struct preempt_ranges first;
  struct preempt_ranges *_Atomic ranges;
  uintptr_t vdso_lo, vdso_hi; /* also one of the ranges */
} preempt;

#ifndef SWARM_ASAN
static void add_range(struct preempt_ranges *r, uintptr_t lo, uintptr_t hi) {
  if (r->n < PREEMPT_RANGES) {
    r->lo[r->n] = lo;
    r->hi[r->n] = hi;
    r->n++;
  } else {
    r->full = true;
  }
}

static bool name_has(const char *name, const char *part) {
  return name && strstr(name, part) != NULL;
}

/* Whether the object is the vDSO: one of its segments holds the ELF
 * header the kernel names in the auxiliary vector. */
static bool is_vdso(const struct dl_phdr_info *info) {
  uintptr_t ehdr = (uintptr_t)getauxval(AT_SYSINFO_EHDR);
  for (int i = 0; ehdr && i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *p = &info->dlpi_phdr[i];
    uintptr_t lo = info->dlpi_addr + p->p_vaddr;
    if (p->p_type == PT_LOAD && ehdr >= lo && ehdr < lo + p->p_memsz)
      return true;
  }
  return false;
}

static bool has_tls(const struct dl_phdr_info *info) {
  for (int i = 0; i < info->dlpi_phnum; i++)
    if (info->dlpi_phdr[i].p_type == PT_TLS && info->dlpi_phdr[i].p_memsz)
      return true;
  return false;
}

struct ranges_scan {
  uintptr_t self; /* an address in the runtime's object */
  struct preempt_ranges *table;
};

/* Adds the executable segments of the runtime's object (the one that
 * contains scan->self), libc, the dynamic loader, the vDSO and every
 * shared object with TLS of its own (the program, named "", excepted). */
static int find_ranges(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size;
  struct ranges_scan *scan = arg;
  scan->table->adds = info->dlpi_adds;
  bool vdso = is_vdso(info);
  bool program = !info->dlpi_name || !info->dlpi_name[0];
  bool system = name_has(info->dlpi_name, "/libc.so") ||
                name_has(info->dlpi_name, "/ld-linux") ||
                name_has(info->dlpi_name, "/ld64.so") || vdso ||
                (!program && has_tls(info));
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *p = &info->dlpi_phdr[i];
    if (p->p_type != PT_LOAD || !(p->p_flags & PF_X))
      continue;
    uintptr_t lo = info->dlpi_addr + p->p_vaddr, hi = lo + p->p_memsz;
    if (system || (scan->self >= lo && scan->self < hi))
      add_range(scan->table, lo, hi);
    if (vdso) { /* read by interrupt handlers at any time */
      __atomic_store_n(&preempt.vdso_lo, lo, __ATOMIC_RELAXED);
      __atomic_store_n(&preempt.vdso_hi, hi, __ATOMIC_RELEASE);
    }
  }
  return 0;
}

static void ranges_scan(struct preempt_ranges *table) {
  memset(table, 0, sizeof *table);
  struct ranges_scan scan = {(uintptr_t)swarm_preempt_enable, table};
  dl_iterate_phdr(find_ranges, &scan);
}

static int read_adds(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size;
  *(unsigned long long *)arg = info->dlpi_adds;
  return 1; /* the first object says it */
}

/* The monitor's, before it asks for a preemption: a table that covers the
 * objects loaded since the last one, or false (no memory: do not ask). */
static bool ranges_refresh(void) {
  struct preempt_ranges *now =
      atomic_load_explicit(&preempt.ranges, memory_order_relaxed);
  unsigned long long adds = 0;
  dl_iterate_phdr(read_adds, &adds);
  if (adds == now->adds)
    return true;
  struct preempt_ranges *fresh = malloc(sizeof *fresh);
  if (!fresh)
    return false;
  ranges_scan(fresh);
  atomic_store_explicit(&preempt.ranges, fresh, memory_order_release);
  return true;
}
#endif

bool swarm_preempt_enable(uint64_t worker_mask) {
#ifdef SWARM_ASAN
  (void)worker_mask;
  return false; /* fiber switches from a signal handler: not under ASan */
#else
  if (!os_interrupt_signal)
    return false;
  struct preempt_ranges *r = &preempt.first;
  ranges_scan(r);
  if (!ranges_hold(r, (uintptr_t)swarm_preempt_enable))
    return false;
  atomic_store_explicit(&preempt.ranges, r, memory_order_release);
  preempt.worker_mask = worker_mask;
  __atomic_store_n(&preempt.enabled, true, __ATOMIC_RELEASE);
  return true;
#endif
}

void preempt_tick(struct worker *w, uint32_t stalled, bool queued) {
  if (!__atomic_load_n(&preempt.enabled, __ATOMIC_ACQUIRE) ||
      stalled < PREEMPT_TICKS || !queued || !w->tid)
    return;
#ifndef SWARM_ASAN
  if (!ranges_refresh())
    return;
#endif
  atomic_store_explicit(&w->preempt_requested, 1, memory_order_relaxed);
  os_thread_signal(w->tid, os_interrupt_signal);
}

static uint64_t mask_bits(const sigset_t *set) {
  uint64_t b;
  memcpy(&b, set, sizeof b); /* the kernel's layout: bit sig - 1 */
  return b;
}

bool swarm_pc_in_vdso(uintptr_t pc) {
  uintptr_t hi = __atomic_load_n(&preempt.vdso_hi, __ATOMIC_ACQUIRE);
  return pc < hi && pc >= __atomic_load_n(&preempt.vdso_lo, __ATOMIC_RELAXED);
}

bool swarm_preempt_safe(const void *ucontext) {
  if (!__atomic_load_n(&preempt.enabled, __ATOMIC_ACQUIRE))
    return false;
  uintptr_t pc = os_context_pc(ucontext);
  const struct preempt_ranges *r =
      atomic_load_explicit(&preempt.ranges, memory_order_acquire);
  if (!pc || !r || r->full || ranges_hold(r, pc))
    return false;
  const ucontext_t *uc = ucontext;
  return mask_bits(&uc->uc_sigmask) == preempt.worker_mask;
}

void swarm_preempt_point(const void *ucontext) {
  struct worker *w = worker_current();
  if (!w || !w->current ||
      !atomic_exchange_explicit(&w->preempt_requested, 0, memory_order_relaxed))
    return;
  if (!swarm_preempt_safe(ucontext))
    return;
  const ucontext_t *uc = ucontext;
  sys_sigmask(SIG_SETMASK, &uc->uc_sigmask, NULL);
  struct swarm_thread *self = w->current;
  int16_t pinned = self->pinned_worker;
  self->pinned_worker = (int16_t)w->id;
  swarm_yield(); /* resumes on w: pinned */
  self->pinned_worker = pinned;
}
