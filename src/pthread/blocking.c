/*
 * pthread/blocking.c — blocking calls swarm cannot turn into a park: pause,
 * wait, waitpid, wait3, wait4 and waitid. They are cancellation points
 * (POSIX says so) and a pending or arriving pthread_cancel ends them.
 *
 * Each blocks its kernel thread, as under NPTL: the monitor's spare workers
 * (core/monitor.c; one even on a single worker) run the threads queued
 * behind it, so no program freezes on them. To make the kernel-side wait
 * cancellable, it is a ppoll on an eventfd made for the call (and, for a
 * wait on one child, on a pidfd that becomes readable when the child
 * ends); a pthread_cancel reaches it through the sync layer's
 * interruptible-wait hook (sync_interruptible_begin), which writes the
 * eventfd.
 *
 * Signals (pthread/signal.c's model). The worker blocks every signal but
 * the runtime's interrupt signal, which preemption requests and the
 * signal thread's re-kicks send too; its handler (SA_RESTART) cannot
 * restart a ppoll, so an EINTR from the ppoll alone means nothing and the
 * wait goes on. A signal for the thread is a kick: the same interruption
 * as a cancel, so it writes the eventfd too. While the thread waits here
 * (sig_in_kernel) the interrupt handler leaves its signals pending; after
 * the wait the thread acts on a cancellation, else delivers them on its own
 * flow (dropin_signal_interrupted): a handler ran -> pause fails with
 * EINTR, a wait too unless every handler had SA_RESTART (it then waits on,
 * as the kernel restarts wait4); nothing delivered -> it waits on.
 *
 * The race with a cancel that arrives before the hook is registered is won
 * by sync_interruptible_begin itself: it refuses (and we act on the
 * cancellation) when an interruption is already pending.
 *
 * Waits for any child (pid <= 0, waitid's P_ALL and P_PGID) and waits
 * that also report stops or continues (WUNTRACED, WCONTINUED, WSTOPPED)
 * have no fd to poll: they make the system call itself, abandonably
 * (os/abortable.c, wait_any): the canceller's hook stores a flag and
 * sends the interrupt signal to the kernel thread in the call, whose
 * handler moves the program counter out of the call only if the kernel
 * has not completed it. A status the kernel reaped is therefore always
 * returned; a cancellation that came with it acts at the next
 * cancellation point. A signal for the thread abandons the call the same
 * way: its handler runs on the thread's flow and the wait fails with EINTR
 * or, if the handler had SA_RESTART, goes on (as the kernel restarts
 * wait4). WNOHANG calls never block and go straight to the kernel.
 *
 * Rejected: parking the swarm thread instead (what the sleeps do): a
 * waitpid for any child has no fd to wait on; a pidfd for every child
 * (read from /proc/self/task/.../children) misses children forked while
 * it waits and reports no stops; probing with WNOHANG|WNOWAIT on a timer
 * wakes the CPU and delays the answer; making the interrupt handler
 * non-SA_RESTART would turn every other system call it interrupts into
 * an EINTR the program never asked for.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pthread/dropin.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

static struct swarm_thread *kick_eventfd(void *arg) {
  uint64_t one = 1;
  (void)!syscall(SYS_write, *(int *)arg, &one, sizeof one);
  return NULL; /* nothing to ready: the kernel thread wakes by itself */
}

/* One wait in the kernel until fd (-1: none) or efd is readable. 1 when
 * fd became readable, 0 when interrupted (efd written, the interruption
 * already pending, or the runtime's interrupt signal), or -errno. */
static int wait_once(struct dropin_thread *r, struct swarm_thread *self,
                     int efd, int fd) {
  if (!sync_interruptible_begin(self, kick_eventfd, &efd))
    return 0;
  struct pollfd p[2] = {{.fd = efd, .events = POLLIN},
                        {.fd = fd, .events = POLLIN}};
  __atomic_store_n(&r->sig_in_kernel, true, __ATOMIC_RELAXED);
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  long n = sys_ppoll(p, 2, NULL, NULL);
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  __atomic_store_n(&r->sig_in_kernel, false, __ATOMIC_RELAXED);
  sync_interruptible_end(self);
  if (p[0].revents) {
    uint64_t v;
    (void)!sys_read(efd, &v, sizeof v);
  }
  if (n == -EINTR)
    return 0;
  if (n < 0)
    return (int)n;
  return p[1].revents && !p[0].revents;
}

/* Blocks the kernel thread until fd (-1: none) is readable, a signal's
 * handler runs, or the thread is cancelled, which it then acts on. 0 when
 * fd became readable; EINTR when a handler ran that had no SA_RESTART, or
 * any handler if !restart; -1 when no eventfd could be made (the caller
 * waits uncancellably); else the error of the wait. */
static int block_cancellable(int fd, bool restart) {
  dropin_testcancel();
  struct swarm_thread *self = sync_self();
  struct dropin_thread *r = dropin_self();
  int efd = (int)sys_eventfd2(0, EFD_CLOEXEC);
  if (efd < 0 || !self || !r) {
    if (efd >= 0)
      sys_close(efd);
    return -1;
  }
  int e;
  for (;;) {
    e = wait_once(r, self, efd, fd);
    if (e != 0)
      break;
    /* A cancellation acts; a signal's handler runs here, on the thread's
     * own flow (signal.c leaves it pending while we wait); the runtime's
     * own interrupts (preemption requests, re-kicks) deliver nothing. */
    dropin_testcancel();
    int d = dropin_signal_interrupted();
    if (d == DROPIN_SIG_EINTR || (d == DROPIN_SIG_RESTART && !restart)) {
      e = -EINTR;
      break;
    }
  }
  sys_close(efd);
  return e > 0 ? 0 : -e;
}

DROPIN_API int pause(void) {
  int err = block_cancellable(-1, false);
  if (err < 0) { /* no eventfd: any interruption ends it */
    dropin_testcancel();
    long n = sys_ppoll(NULL, 0, NULL, NULL);
    err = n < 0 ? (int)-n : EINTR;
  }
  return dropin_fail(err ? err : EINTR);
}

/* What kick_abort needs to abandon a wait_any: its flag, and the kernel
 * thread that makes the call (the thread cannot move while it blocks). */
struct abort_req {
  int flag;
  int tid;
};

/* A wait for one child's exit (pid > 0), cancellable: until it can be
 * reaped. 0 then; -1 with errno as the call would set it; 1 when no pidfd
 * could be had (an old kernel, no fd left), for wait_any to wait. */
static int child_ready(pid_t pid) {
  /* A pidfd opens for any process: only a child of ours may be waited on
   * (else the call says ECHILD at once). WNOWAIT: reaps nothing. */
  siginfo_t si;
  if (syscall(SYS_waitid, P_PID, pid, &si, WEXITED | WNOHANG | WNOWAIT, NULL) !=
      0)
    return 0;
  int fd = (int)syscall(SYS_pidfd_open, pid, 0);
  if (fd < 0)
    return errno == ESRCH ? 0 : 1; /* ESRCH: the call says ECHILD */
  int err = block_cancellable(fd, true);
  syscall(SYS_close, fd);
  if (err > 0) /* block_cancellable parked: errno through os_errno_location */
    return dropin_fail(err);
  return 0;
}

static struct swarm_thread *kick_abort(void *arg) {
  struct abort_req *k = arg;
  __atomic_store_n(&k->flag, 1, __ATOMIC_SEQ_CST);
  os_thread_signal(k->tid, os_interrupt_signal); /* os_abortable_fixup */
  return NULL;
}

/* A wait for any child (or one that also reports stops and continues):
 * the system call nr(a..e) itself, made abandonable (os/abortable.c) and
 * registered as the thread's interruptible wait, so that a cancellation
 * or a signal for the thread abandons it while it blocks. A completed
 * call's result is returned even when a cancellation came with it (it
 * acts at the next cancellation point), so no status is lost. Returns the
 * kernel's result or -errno. */
static long wait_any(long nr, long a, long b, long c, long d, long e) {
  dropin_testcancel();
  struct swarm_thread *self = sync_self();
  struct dropin_thread *r = dropin_self();
  if (!os_interrupt_signal || !self || !r)
    return sys_call(nr, a, b, c, d, e); /* cancellable on entry only */
  for (;;) {
    struct abort_req k = {.flag = 0, .tid = os_thread_id()};
    long n = -EINTR;
    if (sync_interruptible_begin(self, kick_abort, &k)) {
      __atomic_store_n(&r->sig_in_kernel, true, __ATOMIC_RELAXED);
      __atomic_signal_fence(__ATOMIC_SEQ_CST);
      n = os_abortable_syscall(&k.flag, nr, a, b, c, d, e);
      __atomic_signal_fence(__ATOMIC_SEQ_CST);
      __atomic_store_n(&r->sig_in_kernel, false, __ATOMIC_RELAXED);
      sync_interruptible_end(self);
      if (n == -ENOSYS && !__atomic_load_n(&k.flag, __ATOMIC_SEQ_CST))
        return sys_call(nr, a, b, c, d, e); /* no stub here */
    }
    if (n != -EINTR)
      return n;
    /* Abandoned, or refused (an interruption was pending): as in
     * block_cancellable, a cancellation acts, a handler runs. */
    dropin_testcancel();
    if (dropin_signal_interrupted() == DROPIN_SIG_EINTR)
      return -EINTR;
  }
}

static pid_t wait_result(long n) {
  if (n < 0) {
    errno = (int)-n;
    return -1;
  }
  return (pid_t)n;
}

static pid_t do_wait4(pid_t pid, int *status, int options,
                      struct rusage *usage) {
  dropin_testcancel();
  if (options & WNOHANG)
    return (pid_t)syscall(SYS_wait4, pid, status, options, usage);
  if (pid > 0 && !(options & (WUNTRACED | WCONTINUED))) {
    int ready = child_ready(pid);
    if (ready < 0)
      return -1;
    if (ready == 0)
      return (pid_t)syscall(SYS_wait4, pid, status, options, usage);
  }
  return wait_result(
      wait_any(SYS_wait4, pid, (long)status, options, (long)usage, 0));
}

DROPIN_API pid_t waitpid(pid_t pid, int *status, int options) {
  return do_wait4(pid, status, options, NULL);
}

DROPIN_API pid_t wait(int *status) {
  return do_wait4(-1, status, 0, NULL);
}

DROPIN_API pid_t wait4(pid_t pid, int *status, int options,
                       struct rusage *usage) {
  return do_wait4(pid, status, options, usage);
}

DROPIN_API pid_t wait3(int *status, int options, struct rusage *usage) {
  return do_wait4(-1, status, options, usage);
}

DROPIN_API int waitid(idtype_t type, id_t id, siginfo_t *info, int options) {
  dropin_testcancel();
  if (options & WNOHANG)
    return (int)syscall(SYS_waitid, type, id, info, options, NULL);
  if (type == P_PID && (pid_t)id > 0 && (options & WEXITED) &&
      !(options & (WSTOPPED | WCONTINUED))) {
    int ready = child_ready((pid_t)id);
    if (ready < 0)
      return -1;
    if (ready == 0)
      return (int)syscall(SYS_waitid, type, id, info, options, NULL);
  }
  return (int)wait_result(
      wait_any(SYS_waitid, type, (long)id, (long)info, options, 0));
}
