/*
 * os/os.h — the operating-system half of the machine-dependent layer (PPL's
 * "VP layer"): kernel threads, futexes, CPU affinity, memory for stacks with
 * guard pages, the stack-overflow signal handler, clocks, errno, messages.
 * core calls these and nothing else of the OS; a port to another OS
 * replaces os.c (and sys.h, the system calls underneath, which the upper
 * layers use directly for I/O).
 *
 * Nothing here knows what a swarm thread is. The overflow handler asks core,
 * through a callback, whether a faulting address is a guard page it owns.
 */
#ifndef SWARM_OS_H
#define SWARM_OS_H

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- futex: 32-bit wait/wake ---- */
/* Sleeps while *word == expected, at most timeout_ns (< 0: no limit).
 * Returns early on a wake, a signal, or when *word != expected. */
void os_futex_wait(_Atomic uint32_t *word, uint32_t expected,
                   int64_t timeout_ns);
void os_futex_wake(_Atomic uint32_t *word, int count);

/* ---- clocks ---- */
uint64_t os_now_ns(void); /* CLOCK_MONOTONIC */
#include <time.h>
/* libc's clock_gettime (os/sys.h: the drop-in defines the name). */
int libc_clock_gettime(clockid_t c, struct timespec *ts);
static inline uint64_t os_now_ns_inline(void) {
  struct timespec ts;
  libc_clock_gettime(CLOCK_MONOTONIC, &ts); /* vDSO: no system call */
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- CPUs ---- */
/* Number of CPUs in the process's affinity mask (at least 1); fills cpus[]
 * (up to max entries) with their ids in ascending order. */
int os_cpus_allowed(int *cpus, int max);
/* Pins the calling kernel thread to one CPU. Returns 0 or an errno. */
int os_bind_self(int cpu);

/* ---- memory ---- */
size_t os_page_size(void);
/* Maps `count` stacks of `size` usable bytes, each preceded (below) by a
 * guard of `guard` bytes that faults on access. Returns the lowest address of
 * the region (the first guard), or NULL with errno set. Stack i's usable
 * memory starts at base + i*(guard+size) + guard. */
void *os_map_stacks(size_t size, size_t guard, int count);
void os_unmap(void *addr, size_t len);
/* "madvise guard markers" (Linux >= 6.13: no VMA per stack) or "mprotect". */
const char *os_guard_kind(void);
/* Tells the kernel the pages of [addr, addr+len) may be dropped. */
void os_discard(void *addr, size_t len);

/* ---- kernel threads ---- */
/* The runtime's own kernel threads (workers, monitor, offload) get stacks
 * of this size, not NPTL's default of RLIMIT_STACK (8 MiB; 32 MiB when
 * unlimited), which a capped address space cannot spare per thread. Worker
 * 0's scheduler runs on the same amount (runtime.c). */
#define OS_THREAD_STACK ((size_t)256 * 1024)
/* Starts a kernel thread running fn(arg) on an OS_THREAD_STACK stack with
 * every signal blocked (so that process-directed signals keep going to the
 * program's own threads). 0 or an errno. */
int os_thread_start(pthread_t *kt, void *(*fn)(void *), void *arg);
/* Waits for a kernel thread made by os_thread_start to end. */
void os_thread_join(pthread_t kt);
/* The calling kernel thread's id (gettid). */
int os_thread_id(void);
/* Gives the CPU to another kernel thread (sched_yield(2)). */
void os_yield(void);
/* ---- the runtime's interrupt signal (pthread/signal.c, docs/dropin.md) ----
 * One real-time signal, taken from glibc's pool with __libc_allocate_rtsig
 * (the top one, so a program's SIGRTMAX() reads one less, as with any
 * library that claims one; the bottom one where the top one cannot be
 * blocked: qemu-user), by which one kernel thread interrupts a worker
 * to run something on the swarm thread it runs. 0 until claimed. */
extern int os_interrupt_signal;
/* Claims it (once) and installs handler for it (SA_SIGINFO | SA_RESTART,
 * not on the alternate stack: the handler runs on the interrupted swarm
 * thread's own stack). Returns the signal, or 0 when none is left. */
int os_interrupt_signal_claim(void (*handler)(int, siginfo_t *, void *));
/* The kernel mask of a worker once the interrupt signal is claimed: every
 * signal blocked but the interrupt and the synchronous faults (SIGSEGV,
 * SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS). os_worker_mask_install puts
 * it on the calling kernel thread (workers call it when they start; no-op
 * while unclaimed); os_worker_mask gives it, signals 1..64 as bits
 * sig - 1. Unclaimed, workers get the program's mask instead
 * (os_program_mask_save). */
void os_worker_mask_install(void);
uint64_t os_worker_mask(void);
/* The signals a thread can block (bits sig - 1), as the kernel reads a
 * mask back: all but SIGKILL and SIGSTOP, fewer under qemu-user (os.c). */
uint64_t os_blockable_signals(void);
/* Saves the calling kernel thread's mask as the program's (swarm_init, on
 * the flow that starts the runtime). While the interrupt signal is not
 * claimed (the native API), os_worker_mask_install gives workers this
 * mask, not the full one they were made with, so a process one of them
 * starts inherits the program's mask (issue 21 item 1). */
void os_program_mask_save(void);
/* Sends sig to kernel thread tid of this process (tgkill). 0 or errno. */
int os_thread_signal(int tid, int sig);
/* Queues sig with *info on kernel thread tid of this process
 * (rt_tgsigqueueinfo; within the process any si_code is allowed). */
int os_thread_sigqueue(int tid, int sig, const siginfo_t *info);
/* The interrupted program counter of a signal handler's context. */
uintptr_t os_context_pc(const void *ucontext);
/* A blocking system call nr(a..e) that another kernel thread abandons by
 * storing *flag = 1 and then sending the interrupt signal to the calling
 * kernel thread, whose handler must call os_abortable_fixup
 * (os/abortable.c). Returns the kernel's result (>= 0 or -errno), or
 * -EINTR when abandoned before the kernel completed it (never after: a
 * completed call's result is returned); -ENOSYS on architectures without
 * the stub. */
long os_abortable_syscall(const int *flag, long nr, long a, long b, long c,
                          long d, long e);
/* For the interrupt signal's handler: abandons an os_abortable_syscall the
 * handler interrupted whose flag is set (moves the context's program
 * counter). True when it did. Async-signal-safe. */
bool os_abortable_fixup(void *ucontext);

/* Gives the calling kernel thread an alternate signal stack if it has none,
 * so the overflow handler can run after its stack is exhausted. Returns the
 * memory to release with os_altstack_release (NULL if none was installed). */
void *os_altstack_install(void);
void os_altstack_release(void *mem);
/* Bounds of the calling kernel thread's own stack. */
void os_thread_stack_bounds(void **lo, size_t *size);

/* ---- stack overflow ---- */
/* Called from the SIGSEGV/SIGBUS handler with the faulting address. If it is
 * a guard page, writes a complete message into buf (at most cap bytes) and
 * returns its length; returns 0 otherwise. Must be async-signal-safe. */
typedef size_t (*os_guard_describe_fn)(void *addr, char *buf, size_t cap);
/* Installs the handler once per process (later calls only replace `fn`).
 * Faults that are not guard hits go to the handler that was there before,
 * or get the default action. */
void os_overflow_handler_install(os_guard_describe_fn fn);
/* Names code address `addr` for a crash message: "symbol+0xoff (object)",
 * or the object and offset when the symbol is not exported, or the bare
 * address. Writes at most cap bytes, returns the length. For the overflow
 * handler: it calls dladdr, which takes the dynamic linker's recursive
 * lock; a fault while another kernel thread holds that lock waits for it
 * (the process is ending anyway), one on the holder's own thread re-enters. */
size_t os_describe_code(const void *addr, char *buf, size_t cap);

/* ---- errno of the running kernel thread ---- */
/* glibc keeps errno in static TLS at the same offset from the thread pointer
 * in every thread. Computing its address from the thread pointer with a
 * volatile read is cheap and, unlike `errno` (which calls the const
 * function __errno_location), can never be cached by the compiler across a
 * context switch that moved the caller to another kernel thread. */
extern intptr_t os_errno_offset __attribute__((visibility("hidden")));
void os_errno_init(void);
static inline int *os_errno_location(void) {
#if defined(__x86_64__)
  char *tp;
  __asm__ volatile("movq %%fs:0, %0" : "=r"(tp));
  return (int *)(tp + os_errno_offset);
#elif defined(__aarch64__)
  char *tp;
  __asm__ volatile("mrs %0, tpidr_el0" : "=r"(tp));
  return (int *)(tp + os_errno_offset);
#else
  extern int *os_errno_location_slow(void);
  return os_errno_location_slow();
#endif
}

/* errno's value, read and written the same way; on x86-64 one
 * %fs-relative access instead of computing the address. The "memory"
 * clobber keeps them in place relative to the calls that set errno. */
static inline int os_errno_get(void) {
#if defined(__x86_64__) && defined(SWARM_BUILDING_LIBRARY)
  /* The offset is loaded by name inside the asm: an operand would let the
   * compiler keep its address in a callee-saved register across calls. */
  int v;
  intptr_t off;
  __asm__ volatile("movq os_errno_offset(%%rip), %1\n\t"
                   "movl %%fs:(%1), %0"
                   : "=r"(v), "=&r"(off)
                   :
                   : "memory");
  return v;
#else
  return *os_errno_location();
#endif
}
/* errno's value, leaving 0 in its place. */
static inline int os_errno_take(void) {
#if defined(__x86_64__) && defined(SWARM_BUILDING_LIBRARY)
  int v;
  intptr_t off;
  __asm__ volatile("movq os_errno_offset(%%rip), %1\n\t"
                   "movl %%fs:(%1), %0\n\t"
                   "movl $0, %%fs:(%1)"
                   : "=&r"(v), "=&r"(off)
                   :
                   : "memory");
  return v;
#else
  int *e = os_errno_location();
  int v = *e;
  *e = 0;
  return v;
#endif
}

static inline void os_errno_set(int v) {
#if defined(__x86_64__) && defined(SWARM_BUILDING_LIBRARY)
  intptr_t off;
  __asm__ volatile("movq os_errno_offset(%%rip), %0\n\t"
                   "movl %1, %%fs:(%0)"
                   : "=&r"(off)
                   : "r"(v)
                   : "memory");
#else
  *os_errno_location() = v;
#endif
}

/* ---- messages ---- */
/* Writes a whole string to stderr with write(2): async-signal-safe. */
void os_write_stderr(const char *s, size_t len);
/* Formats v in decimal into buf (no NUL); returns the length. Signal-safe. */
size_t os_format_u64(char *buf, uint64_t v);
size_t os_format_hex(char *buf, uint64_t v);

static inline void os_cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ volatile("yield" ::: "memory");
#else
  __asm__ volatile("" ::: "memory");
#endif
}

#endif
