/*
 * os/os.c — Linux implementation of os/os.h: futex(2), sched_getaffinity,
 * mmap stacks with guard pages, sigaltstack and the SIGSEGV/SIGBUS handler,
 * the runtime's interrupt signal (claimed from glibc's real-time pool).
 *
 * Guard pages: Linux >= 6.13 has MADV_GUARD_INSTALL, which marks pages as
 * faulting in the page tables without splitting the mapping. With mprotect
 * every guard page costs a VMA, and vm.max_map_count (65,530 by default)
 * would cap a process at ~32,000 guarded stacks; with guard markers a batch
 * of stacks stays one VMA, so millions of guarded stacks fit. We probe once
 * and fall back to mprotect on older kernels.
 */
#include "os/os.h"
#include "os/spinlock.h"
#include "os/sys.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#ifndef MADV_GUARD_INSTALL
#define MADV_GUARD_INSTALL 102
#endif

void os_futex_wait(_Atomic uint32_t *word, uint32_t expected,
                   int64_t timeout_ns) {
  struct timespec ts, *tsp = NULL;
  if (timeout_ns >= 0) {
    ts.tv_sec = timeout_ns / 1000000000;
    ts.tv_nsec = timeout_ns % 1000000000;
    tsp = &ts;
  }
  syscall(SYS_futex, (uint32_t *)word, FUTEX_WAIT_PRIVATE, expected, tsp, NULL,
          0);
}

void os_futex_wake(_Atomic uint32_t *word, int count) {
  syscall(SYS_futex, (uint32_t *)word, FUTEX_WAKE_PRIVATE, count, NULL, NULL,
          0);
}

uint64_t os_now_ns(void) {
  struct timespec ts;
  libc_clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int os_cpus_allowed(int *cpus, int max) {
  cpu_set_t set;
  int n = 0;
  if (sched_getaffinity(0, sizeof set, &set) != 0) {
    long c = sysconf(_SC_NPROCESSORS_ONLN);
    for (int i = 0; i < c && i < max; i++)
      cpus[n++] = i;
    return n > 0 ? n : 1;
  }
  for (int i = 0; i < CPU_SETSIZE; i++)
    if (CPU_ISSET(i, &set)) {
      if (n < max)
        cpus[n] = i;
      n++;
    }
  return n > 0 ? n : 1;
}

int os_bind_self(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return (int)-sys_sched_setaffinity_self(sizeof set, &set);
}

size_t os_page_size(void) {
  static size_t page;
  if (!page)
    page = (size_t)sysconf(_SC_PAGESIZE);
  return page;
}

/* 0 = not probed, 1 = madvise guard markers, 2 = mprotect */
static _Atomic int guard_mode;

/* Guard markers must really fault: an emulator (qemu-user) may accept the
 * madvise and do nothing, which would leave stacks unguarded. A write(2)
 * from a guarded page must fail with EFAULT; anything else means no. */
static bool guard_markers_work(void) {
  size_t pg = os_page_size();
  char *p = mmap(NULL, 2 * pg, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    return false;
  bool ok = false;
  if (madvise(p, pg, MADV_GUARD_INSTALL) == 0) {
    int fds[2];
    if (sys_pipe2(fds, O_CLOEXEC) == 0) {
      ok = sys_write(fds[1], p, 1) == -EFAULT;
      sys_close(fds[0]);
      sys_close(fds[1]);
    }
  }
  munmap(p, 2 * pg);
  return ok;
}

static int guard_install(void *addr, size_t len) {
  int mode = atomic_load_explicit(&guard_mode, memory_order_acquire);
  if (mode == 0) {
    mode = guard_markers_work() ? 1 : 2;
    atomic_store_explicit(&guard_mode, mode, memory_order_release);
  }
  if (mode == 1)
    return madvise(addr, len, MADV_GUARD_INSTALL);
  return mprotect(addr, len, PROT_NONE);
}

const char *os_guard_kind(void) {
  return atomic_load(&guard_mode) == 2 ? "mprotect" : "madvise guard markers";
}

void *os_map_stacks(size_t size, size_t guard, int count) {
  size_t each = size + guard, total = each * (size_t)count;
  char *base =
      mmap(NULL, total, PROT_READ | PROT_WRITE,
           MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
  if (base == MAP_FAILED)
    return NULL;
  for (int i = 0; i < count; i++) {
    if (guard_install(base + (size_t)i * each, guard) != 0) {
      int e = errno;
      munmap(base, total);
      errno = e;
      return NULL;
    }
  }
  return base;
}

void os_unmap(void *addr, size_t len) {
  munmap(addr, len);
}

void os_discard(void *addr, size_t len) {
  madvise(addr, len, MADV_DONTNEED);
}

int os_thread_start(pthread_t *kt, void *(*fn)(void *), void *arg) {
  /* The new kernel thread inherits the mask in force while it is made. */
  sigset_t all, old;
  pthread_attr_t attr;
  if (pthread_attr_init(&attr) != 0)
    return EAGAIN;
  pthread_attr_setstacksize(&attr, OS_THREAD_STACK);
  sigfillset(&all);
  sys_sigmask(SIG_SETMASK, &all, &old);
  int r = libc_pthread_create(kt, &attr, fn, arg);
  if (r == EINVAL) /* a program's static TLS larger than the stack */
    r = libc_pthread_create(kt, NULL, fn, arg);
  sys_sigmask(SIG_SETMASK, &old, NULL);
  pthread_attr_destroy(&attr);
  return r;
}

void os_thread_join(pthread_t kt) {
  libc_pthread_join(kt, NULL);
}

int os_thread_id(void) {
  return (int)sys_gettid();
}

void os_yield(void) {
  sys_sched_yield();
}

/* ---- the interrupt signal ---- */

extern int __libc_allocate_rtsig(int high);
int os_interrupt_signal;

/* The signals the kernel lets a thread block, as bits sig - 1: all but
 * SIGKILL and SIGSTOP natively. qemu-user (7.2) has no host signal for
 * guest signals 63 and 64 (it keeps the host's top ones for itself): a mask
 * blocking them reads back without them, and tgkill of either answers
 * EINVAL. Probed once by blocking everything and reading back what was
 * kept (the restoring call returns it). */
uint64_t os_blockable_signals(void) {
  static uint64_t blockable;
  uint64_t b = __atomic_load_n(&blockable, __ATOMIC_RELAXED);
  if (b)
    return b;
  sigset_t all, old, kept;
  memset(&all, 0xff, sizeof all);
  if (sys_sigmask(SIG_BLOCK, &all, &old) != 0 ||
      sys_sigmask(SIG_SETMASK, &old, &kept) != 0)
    return ~(uint64_t)0;
  memcpy(&b, &kept, sizeof b); /* the kernel's layout: bit sig - 1 */
  __atomic_store_n(&blockable, b, __ATOMIC_RELAXED);
  return b;
}

int os_interrupt_signal_claim(void (*handler)(int, siginfo_t *, void *)) {
  if (os_interrupt_signal)
    return os_interrupt_signal;
  /* glibc's argument is the other way round: 0 takes the top one (SIGRTMAX
   * goes down by one), 1 the bottom one (SIGRTMIN goes up). The top one
   * unless it cannot be blocked (so cannot be sent either): qemu-user. */
  int sig = __libc_allocate_rtsig(0);
  if (sig > 0 && !(os_blockable_signals() & ((uint64_t)1 << (sig - 1))))
    sig = __libc_allocate_rtsig(1);
  if (sig <= 0)
    return 0;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = handler;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigfillset(&sa.sa_mask); /* nothing nests inside it */
  if (sigaction(sig, &sa, NULL) != 0)
    return 0;
  os_interrupt_signal = sig;
  return sig;
}

static void worker_mask_set(sigset_t *set) {
  sigfillset(set); /* glibc leaves out its own two */
  static const int keep[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS};
  for (size_t i = 0; i < sizeof keep / sizeof keep[0]; i++)
    sigdelset(set, keep[i]);
  sigdelset(set, os_interrupt_signal);
  sigdelset(set, SIGKILL); /* never blocked: as the kernel reports it */
  sigdelset(set, SIGSTOP);
}

static sigset_t program_mask;
static bool program_mask_saved;

void os_program_mask_save(void) {
  sys_sigmask(SIG_BLOCK, NULL, &program_mask);
  program_mask_saved = true;
}

void os_worker_mask_install(void) {
  if (!os_interrupt_signal) {
    if (program_mask_saved)
      sys_sigmask(SIG_SETMASK, &program_mask, NULL);
    return;
  }
  sigset_t set;
  worker_mask_set(&set);
  sys_sigmask(SIG_SETMASK, &set, NULL);
}

uint64_t os_worker_mask(void) {
  sigset_t set;
  worker_mask_set(&set);
  uint64_t b;
  memcpy(&b, &set, sizeof b);        /* the kernel's layout: bit sig - 1 */
  return b & os_blockable_signals(); /* as the kernel reports it back */
}

/* The error from the kernel's register (sys_call), not read back from the
 * kernel thread's errno, which a switched-away thread may store into. */
int os_thread_signal(int tid, int sig) {
  return (int)-sys_call(SYS_tgkill, getpid(), tid, sig);
}

int os_thread_sigqueue(int tid, int sig, const siginfo_t *info) {
  return (int)-sys_call(SYS_rt_tgsigqueueinfo, getpid(), tid, sig, info);
}

uintptr_t os_context_pc(const void *ucontext) {
  const ucontext_t *uc = ucontext;
#if defined(__x86_64__)
  return (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
#elif defined(__aarch64__)
  return (uintptr_t)uc->uc_mcontext.pc;
#else
  (void)uc;
  return 0; /* unknown: callers treat it as inside the runtime */
#endif
}

#define ALTSTACK_SIZE (64 * 1024)

void *os_altstack_install(void) {
  stack_t cur;
  if (sigaltstack(NULL, &cur) == 0 && !(cur.ss_flags & SS_DISABLE))
    return NULL; /* the program set one already: keep it */
  void *mem = mmap(NULL, ALTSTACK_SIZE, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED)
    return NULL;
  stack_t ss = {.ss_sp = mem, .ss_size = ALTSTACK_SIZE, .ss_flags = 0};
  if (sigaltstack(&ss, NULL) != 0) {
    munmap(mem, ALTSTACK_SIZE);
    return NULL;
  }
  return mem;
}

void os_altstack_release(void *mem) {
  if (!mem)
    return;
  stack_t ss = {.ss_sp = NULL, .ss_size = 0, .ss_flags = SS_DISABLE};
  sigaltstack(&ss, NULL);
  munmap(mem, ALTSTACK_SIZE);
}

void os_thread_stack_bounds(void **lo, size_t *size) {
  pthread_attr_t a;
  *lo = NULL;
  *size = 0;
  if (libc_pthread_getattr_np(libc_pthread_self(), &a) == 0) {
    pthread_attr_getstack(&a, lo, size);
    pthread_attr_destroy(&a);
  }
}

/* ---- errno ---- */

intptr_t os_errno_offset;

static char *thread_pointer(void) {
  char *tp = NULL;
#if defined(__x86_64__)
  __asm__ volatile("movq %%fs:0, %0" : "=r"(tp));
#elif defined(__aarch64__)
  __asm__ volatile("mrs %0, tpidr_el0" : "=r"(tp));
#endif
  return tp;
}

void os_errno_init(void) {
  os_errno_offset = (char *)__errno_location() - thread_pointer();
}

/* Other CPUs: through a call the compiler cannot treat as const. */
__attribute__((noinline, noipa)) int *os_errno_location_slow(void) {
  return __errno_location();
}

/* ---- overflow handler ---- */

static _Atomic(os_guard_describe_fn) guard_describe;
static struct sigaction previous_segv, previous_bus;
static _Atomic int handler_state; /* 0 none, 1 being installed, 2 done */

static void chain_previous(int sig, siginfo_t *info, void *uctx) {
  struct sigaction *prev = sig == SIGSEGV ? &previous_segv : &previous_bus;
  if ((prev->sa_flags & SA_SIGINFO) && prev->sa_sigaction) {
    prev->sa_sigaction(sig, info, uctx);
    return;
  }
  if (prev->sa_handler != SIG_DFL && prev->sa_handler != SIG_IGN &&
      prev->sa_handler != NULL) {
    prev->sa_handler(sig);
    return;
  }
  /* Default action: restore it and return; the faulting instruction runs
   * again and the kernel ends the process with this signal. */
  signal(sig, SIG_DFL);
}

static void overflow_handler(int sig, siginfo_t *info, void *uctx) {
  int saved_errno = errno;
  os_guard_describe_fn fn = atomic_load(&guard_describe);
  char msg[1024];
  size_t n = fn ? fn(info->si_addr, msg, sizeof msg) : 0;
  if (n > 0) {
    os_write_stderr(msg, n);
    signal(SIGSEGV, SIG_DFL);
    signal(SIGBUS, SIG_DFL);
    errno = saved_errno;
    return; /* re-faults with the default action: the process ends */
  }
  chain_previous(sig, info, uctx);
  errno = saved_errno;
}

static void install_once(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = overflow_handler;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGSEGV, &sa, &previous_segv);
  sigaction(SIGBUS, &sa, &previous_bus);
}

void os_overflow_handler_install(os_guard_describe_fn fn) {
  atomic_store(&guard_describe, fn);
  int none = 0;
  if (atomic_compare_exchange_strong(&handler_state, &none, 1)) {
    install_once();
    atomic_store(&handler_state, 2);
  }
  while (atomic_load(&handler_state) != 2) /* a racing first install */
    os_yield();
}

static size_t append_str(char *buf, size_t n, size_t cap, const char *s) {
  while (s && *s && n < cap)
    buf[n++] = *s++;
  return n;
}

size_t os_describe_code(const void *addr, char *buf, size_t cap) {
  char hex[24];
  size_t n = 0;
  Dl_info info;
  if (addr && dladdr(addr, &info) && info.dli_fname) {
    const char *base = info.dli_sname ? (const char *)info.dli_saddr
                                      : (const char *)info.dli_fbase;
    n = append_str(buf, n, cap, info.dli_sname);
    if (!info.dli_sname || (const char *)addr != base) {
      n = append_str(buf, n, cap, "+");
      hex[os_format_hex(hex, (uint64_t)((const char *)addr - base))] = 0;
      n = append_str(buf, n, cap, hex);
    }
    n = append_str(buf, n, cap, " in ");
    n = append_str(buf, n, cap,
                   info.dli_fname[0] ? info.dli_fname : "the main program");
    return n;
  }
  hex[os_format_hex(hex, (uint64_t)(uintptr_t)addr)] = 0;
  return append_str(buf, n, cap, hex);
}

void os_write_stderr(const char *s, size_t len) {
  while (len > 0) {
    long w = sys_write(2, s, len);
    if (w < 0) {
      if (w == -EINTR)
        continue;
      return;
    }
    s += w;
    len -= (size_t)w;
  }
}

size_t os_format_u64(char *buf, uint64_t v) {
  char tmp[24];
  size_t n = 0;
  do {
    tmp[n++] = (char)('0' + v % 10);
    v /= 10;
  } while (v);
  for (size_t i = 0; i < n; i++)
    buf[i] = tmp[n - 1 - i];
  return n;
}

size_t os_format_hex(char *buf, uint64_t v) {
  static const char digits[] = "0123456789abcdef";
  char tmp[16];
  size_t n = 0;
  do {
    tmp[n++] = digits[v & 15];
    v >>= 4;
  } while (v);
  buf[0] = '0';
  buf[1] = 'x';
  for (size_t i = 0; i < n; i++)
    buf[2 + i] = tmp[n - 1 - i];
  return n + 2;
}

/* ---- the spinlock's slow path and the lock-order check (spinlock.h) ---- */

void spin_lock_contended(struct spinlock *l) {
  unsigned spins = 0;
  do {
    while (atomic_load_explicit(&l->held, memory_order_relaxed)) {
      if (++spins < SPIN_RELAX_ROUNDS)
        os_cpu_relax();
      else /* the holder was preempted, or holds it long: let it run */
        sys_sched_yield();
    }
  } while (atomic_exchange_explicit(&l->held, 1, memory_order_acquire));
}

#if defined(SWARM_LOCK_ORDER_CHECK)
static const char *const lock_names[LOCK_RANKS] = {
    [LOCK_UNRANKED] = "unranked",
    [LOCK_LIFECYCLE] = "lifecycle",
    [LOCK_SYNC_RECORD] = "sync thread record",
    [LOCK_SYNC_COND] = "sync condition variable",
    [LOCK_SYNC_OBJECT] = "sync object",
    [LOCK_IO_FD] = "io descriptor",
    [LOCK_IO_EPOLL] = "io epoll creation",
    [LOCK_IO_RING] = "io ring",
    [LOCK_OFFLOAD] = "io offload pool",
    [LOCK_TIMERS] = "timer heap",
    [LOCK_READY_QUEUE] = "ready queue",
    [LOCK_DESC_TABLE] = "descriptor table",
    [LOCK_STACK_POOL] = "stack pool",
    [LOCK_TRACE_FILE] = "trace file",
};

/* Bit r set: this kernel thread holds a lock of rank r. */
static __thread uint32_t ranks_held;

static _Noreturn void lock_order_violated(unsigned taking, uint32_t held) {
  unsigned worst = 31 - (unsigned)__builtin_clz(held);
  static const char a[] = "swarm: lock order violated: taking the ";
  static const char b[] = " lock while holding the ";
  static const char c[] = " lock (os/spinlock.h: enum lock_rank)\n";
  os_write_stderr(a, sizeof a - 1);
  os_write_stderr(lock_names[taking], strlen(lock_names[taking]));
  os_write_stderr(b, sizeof b - 1);
  os_write_stderr(lock_names[worst], strlen(lock_names[worst]));
  os_write_stderr(c, sizeof c - 1);
  abort();
}

__attribute__((noinline, noipa)) void lock_order_acquire(unsigned rank) {
  if (rank == LOCK_UNRANKED)
    return;
  uint32_t later_or_same = ~(((uint32_t)1 << rank) - 1);
  if (ranks_held & later_or_same)
    lock_order_violated(rank, ranks_held & later_or_same);
  ranks_held |= (uint32_t)1 << rank;
}

__attribute__((noinline, noipa)) void lock_order_release(unsigned rank) {
  if (rank != LOCK_UNRANKED)
    ranks_held &= ~((uint32_t)1 << rank);
}
#endif
