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
 * eventfd. A signal handler run on the kernel thread ends the ppoll with
 * EINTR, which is what pause and the waits return then.
 *
 * The race with a cancel that arrives before the hook is registered is won
 * by sync_interruptible_begin itself: it refuses (and we act on the
 * cancellation) when an interruption is already pending.
 *
 * Rejected: parking the swarm thread instead (what the sleeps do). pause
 * exists to wait for a signal, and signals are delivered to kernel
 * threads, not to a parked swarm thread; a waitpid for any child has no fd
 * to wait on. Waits for any child (pid <= 0), and waits that also report
 * stops or continues (WUNTRACED, WCONTINUED), are therefore cancellation
 * points on entry and while they wait only through the signal they are
 * sent: they call libc directly after the check.
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

/* Blocks the kernel thread until fd (-1: none) is readable, a signal
 * handler runs, or the thread is cancelled, which it then acts on. 0 when
 * fd became readable, EINTR, or the error of the wait. */
static int block_cancellable(int fd) {
  dropin_testcancel();
  struct swarm_thread *self = sync_self();
  int efd = (int)syscall(SYS_eventfd2, 0, EFD_CLOEXEC);
  if (efd >= 0 && !sync_interruptible_begin(self, kick_eventfd, &efd)) {
    syscall(SYS_close, efd);
    dropin_testcancel(); /* pending and enabled: acts */
    return EINTR;
  }
  struct pollfd p[2] = {{.fd = efd, .events = POLLIN},
                        {.fd = fd, .events = POLLIN}};
  long r = syscall(SYS_ppoll, p, 2, NULL, NULL, sizeof(uint64_t));
  int err = r < 0 ? errno : 0;
  if (efd >= 0) {
    sync_interruptible_end(self);
    syscall(SYS_close, efd);
  }
  if (p[0].revents)
    dropin_testcancel();
  return err;
}

DROPIN_API int pause(void) {
  int err = block_cancellable(-1);
  return dropin_fail(err ? err : EINTR);
}

/* A wait for one child, cancellable: until it can be reaped, then the
 * nonblocking reap itself. -1 with errno as the call would set it. */
static int child_ready(pid_t pid, int options) {
  if (pid <= 0 || (options & (WNOHANG | WUNTRACED | WCONTINUED)))
    return 0; /* not one child's exit, or no wait */
  int fd = (int)syscall(SYS_pidfd_open, pid, 0);
  if (fd < 0)
    return 0; /* not our child, or an old kernel: libc says which */
  int err = block_cancellable(fd);
  syscall(SYS_close, fd);
  if (err) {
    errno = err;
    return -1;
  }
  return 0;
}

DROPIN_API pid_t waitpid(pid_t pid, int *status, int options) {
  dropin_testcancel();
  if (child_ready(pid, options) != 0)
    return -1;
  return (pid_t)syscall(SYS_wait4, pid, status, options, NULL);
}

DROPIN_API pid_t wait(int *status) {
  return waitpid(-1, status, 0);
}

DROPIN_API pid_t wait4(pid_t pid, int *status, int options,
                       struct rusage *usage) {
  dropin_testcancel();
  if (child_ready(pid, options) != 0)
    return -1;
  return (pid_t)syscall(SYS_wait4, pid, status, options, usage);
}

DROPIN_API pid_t wait3(int *status, int options, struct rusage *usage) {
  return wait4(-1, status, options, usage);
}

DROPIN_API int waitid(idtype_t type, id_t id, siginfo_t *info, int options) {
  dropin_testcancel();
  if (type == P_PID && (options & WEXITED) &&
      !(options & (WNOHANG | WSTOPPED | WCONTINUED)) &&
      child_ready((pid_t)id, 0) != 0)
    return -1;
  return (int)syscall(SYS_waitid, type, id, info, options, NULL);
}
