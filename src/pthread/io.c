/*
 * pthread/io.c — the drop-in's I/O interposers: an unmodified
 * thread-per-connection program's blocking read/write/accept/... park only
 * the calling swarm thread, through src/io (the same code as the native
 * swarm_* calls).
 *
 * Which descriptors swarm manages (waits in epoll): sockets, pipes, FIFOs
 * and anonymous inodes (eventfd, timerfd, ...), whoever created them,
 * including those inherited at start (stdin from a shell pipe). Terminals
 * and other character devices are left alone: a blocking read must still
 * stop a background job with SIGTTIN. Regular files are offloaded.
 *
 * O_NONBLOCK is never set: it belongs to the open file description, which
 * a child shares after fork (and keeps across exec, posix_spawn, system,
 * popen, vfork), and which SCM_RIGHTS and pidfd_getfd hand to strangers.
 * A flag swarm set would make an ordinary child read EAGAIN, and a flag
 * another swarm process set would look like the program's own. So the
 * kernel's flag is always exactly what the program set (fcntl and ioctl
 * FIONBIO go straight to the kernel, F_DUPFD and the changes of the flag
 * and of SO_RCVTIMEO / SO_SNDTIMEO are watched), nothing has
 * to be undone before fork or exec, and each call is made non-blocking by
 * itself (src/io/calls.c): read/write/readv/writev as preadv2/pwritev2
 * with RWF_NOWAIT, the socket calls with MSG_DONTWAIT, accept and files
 * without RWF_NOWAIT (FIFOs opened by name) by a readiness check first,
 * and a blocking connect on the offload pool's kernel thread. Before a
 * thread parks, the kernel's F_GETFL says whether the program asked for
 * EAGAIN instead; since every change of the flag and of the socket
 * timeouts in this process passes through fcntl, ioctl and setsockopt
 * here, the I/O layer keeps the kernel's answers until one of them is
 * called (src/io/opts.c, which also says what that cannot see). Calls from
 * kernel threads that are not swarm threads block that kernel thread, with the
 * same semantics. The _FORTIFY_SOURCE variants (__read_chk, __recv_chk,
 * __recvfrom_chk, __poll_chk,
 * __ppoll_chk) are covered too, since Debian builds programs with them.
 *
 * Cancellation points, as in NPTL: read, write, readv, writev, the recv
 * and send families, accept, accept4, connect, poll, ppoll, select and
 * epoll_wait act on a pending cancellation on entry, and a wait they park
 * in ends when the thread is cancelled (sync_interrupt reaches it through
 * the I/O layer's hook). A call the poller completed before the
 * cancellation arrived returns its result, so no data is lost; the
 * cancellation is then acted on at the next point. Not interruptible once
 * under way, so acted on at entry only: regular-file calls (offloaded,
 * short) and a blocking connect (made on the offload pool's kernel
 * thread, which the kernel's own timeout ends).
 *
 * Known limit: a managed descriptor used through stdio (fdopen) or closed
 * by libc internally (fclose) is reached through glibc's internal names,
 * which cannot be interposed: stdio's calls block the worker, and swarm
 * does not learn of that close (the next use of the number through us
 * finds a stale entry; where epoll refuses the new file, the plain call
 * is made).
 */
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/select.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "io/io.h"
#include "pthread/dropin.h"
#include "swarm/io.h"

#define NODE(...)                                                              \
  _Alignas(64) struct io_node n;                                               \
  memset(&n, 0, sizeof n);                                                     \
  __VA_ARGS__

/* Entry to a cancellation point: on swarm threads only (a kernel thread
 * that is not a worker may call read before the runtime exists). */
static inline void cancel_point(void) {
  if (worker_current())
    dropin_testcancel();
}

/* A cancellation point around one I/O call. An interrupted wait that was
 * not a cancellation was a signal (pthread/signal.c): its handler runs
 * here, then the call fails with EINTR, or starts again when every handler
 * that ran had SA_RESTART (nothing was transferred: the call returned
 * -ECANCELED, not a count). */
static long call(int fd, struct io_node *n) {
  cancel_point();
  for (;;) {
    n->interruptible = true;
    long r = io_do(fd, n, false);
    if (r != -ECANCELED)
      return io_fail(r);
    dropin_testcancel(); /* a cancellation acts: no return */
    if (dropin_signal_interrupted() == DROPIN_SIG_EINTR)
      return io_fail(-EINTR);
  }
}

/* After a readiness wait that may have been interrupted: by a cancellation
 * (acts), or by a signal, whose handler runs; poll, select and epoll_wait
 * then fail with EINTR whatever SA_RESTART says, as on Linux. */
static int waited(int r) {
  if (r < 0 && *os_errno_location() == ECANCELED) {
    dropin_testcancel();
    dropin_signal_interrupted();
    return dropin_fail(EINTR);
  }
  return r;
}

/* ---- data transfer ---- */

DROPIN_API ssize_t read(int fd, void *buf, size_t count) {
  NODE(n.attempt = io_attempt_read; n.buf = buf; n.len = count;)
  return call(fd, &n);
}

DROPIN_API ssize_t __read_chk(int fd, void *buf, size_t count, size_t size) {
  if (count > size)
    abort(); /* glibc's __chk_fail: a buffer overflow caught */
  return read(fd, buf, count);
}

DROPIN_API ssize_t write(int fd, const void *buf, size_t count) {
  NODE(n.attempt = io_attempt_write; n.buf = (void *)buf; n.len = count;
       n.dir = 1;)
  return call(fd, &n);
}

DROPIN_API ssize_t readv(int fd, const struct iovec *iov, int iovcnt) {
  NODE(n.attempt = io_attempt_readv; n.iov = iov; n.iovcnt = iovcnt;)
  return call(fd, &n);
}

DROPIN_API ssize_t writev(int fd, const struct iovec *iov, int iovcnt) {
  NODE(n.attempt = io_attempt_writev; n.iov = iov; n.iovcnt = iovcnt;
       n.dir = 1;)
  return call(fd, &n);
}

/* Positional calls: the 64-bit names are what programs built with
 * _FILE_OFFSET_BITS=64 call; on LP64 they are the same functions. */
DROPIN_API ssize_t pread(int fd, void *buf, size_t count, off_t offset) {
  cancel_point();
  NODE(n.attempt = io_attempt_pread; n.buf = buf; n.len = count;)
  return io_fail(io_do_at(fd, &n, offset, false));
}

DROPIN_API ssize_t pwrite(int fd, const void *buf, size_t count, off_t offset) {
  cancel_point();
  NODE(n.attempt = io_attempt_pwrite; n.buf = (void *)buf; n.len = count;
       n.dir = 1;)
  return io_fail(io_do_at(fd, &n, offset, false));
}

DROPIN_API ssize_t preadv(int fd, const struct iovec *iov, int iovcnt,
                          off_t offset) {
  cancel_point();
  NODE(n.attempt = io_attempt_preadv; n.iov = iov; n.iovcnt = iovcnt;)
  return io_fail(io_do_at(fd, &n, offset, false));
}

DROPIN_API ssize_t pwritev(int fd, const struct iovec *iov, int iovcnt,
                           off_t offset) {
  cancel_point();
  NODE(n.attempt = io_attempt_pwritev; n.iov = iov; n.iovcnt = iovcnt;
       n.dir = 1;)
  return io_fail(io_do_at(fd, &n, offset, false));
}

DROPIN_API ssize_t pread64(int fd, void *buf, size_t count, off_t offset)
    __attribute__((alias("pread")));
DROPIN_API ssize_t pwrite64(int fd, const void *buf, size_t count, off_t offset)
    __attribute__((alias("pwrite")));
DROPIN_API ssize_t preadv64(int fd, const struct iovec *iov, int iovcnt,
                            off_t offset) __attribute__((alias("preadv")));
DROPIN_API ssize_t pwritev64(int fd, const struct iovec *iov, int iovcnt,
                             off_t offset) __attribute__((alias("pwritev")));

DROPIN_API ssize_t __pread_chk(int fd, void *buf, size_t count, off_t offset,
                               size_t size) {
  if (count > size)
    abort();
  return pread(fd, buf, count, offset);
}

DROPIN_API ssize_t __pread64_chk(int fd, void *buf, size_t count, off_t offset,
                                 size_t size)
    __attribute__((alias("__pread_chk")));

/* sendfile (and sendfile64, the same on LP64): the kernel's copy, with
 * only the calling thread waiting while the socket or pipe is full
 * (io/sendfile.c). Not a cancellation point in glibc, nor here. */
DROPIN_API ssize_t sendfile(int out_fd, int in_fd, off_t *offset,
                            size_t count) {
  return swarm_sendfile(out_fd, in_fd, offset, count);
}
DROPIN_API ssize_t sendfile64(int out_fd, int in_fd, off_t *offset,
                              size_t count) __attribute__((alias("sendfile")));

DROPIN_API int fsync(int fd) {
  cancel_point();
  NODE(n.attempt = io_attempt_fsync; n.file_only = true;)
  return (int)io_fail(io_do(fd, &n, false));
}

DROPIN_API int fdatasync(int fd) {
  cancel_point();
  NODE(n.attempt = io_attempt_fdatasync; n.file_only = true;)
  return (int)io_fail(io_do(fd, &n, false));
}

DROPIN_API ssize_t recvfrom(int fd, void *buf, size_t len, int flags,
                            struct sockaddr *src, socklen_t *addrlen) {
  NODE(n.attempt = io_attempt_recvfrom; n.buf = buf; n.len = len;
       n.flags = flags; n.addr = src; n.addrlen = addrlen;)
  return call(fd, &n);
}

DROPIN_API ssize_t recv(int fd, void *buf, size_t len, int flags) {
  return recvfrom(fd, buf, len, flags, NULL, NULL);
}

DROPIN_API ssize_t __recv_chk(int fd, void *buf, size_t len, size_t size,
                              int flags) {
  if (len > size)
    abort();
  return recvfrom(fd, buf, len, flags, NULL, NULL);
}

DROPIN_API ssize_t __recvfrom_chk(int fd, void *buf, size_t len, size_t size,
                                  int flags, struct sockaddr *src,
                                  socklen_t *addrlen) {
  if (len > size)
    abort();
  return recvfrom(fd, buf, len, flags, src, addrlen);
}

DROPIN_API ssize_t sendto(int fd, const void *buf, size_t len, int flags,
                          const struct sockaddr *dest, socklen_t addrlen) {
  NODE(n.attempt = io_attempt_sendto; n.buf = (void *)buf; n.len = len;
       n.flags = flags; n.caddr = dest; n.caddrlen = addrlen; n.dir = 1;)
  return call(fd, &n);
}

DROPIN_API ssize_t send(int fd, const void *buf, size_t len, int flags) {
  return sendto(fd, buf, len, flags, NULL, 0);
}

DROPIN_API ssize_t recvmsg(int fd, struct msghdr *msg, int flags) {
  NODE(n.attempt = io_attempt_recvmsg; n.msg = msg; n.flags = flags;)
  return call(fd, &n);
}

DROPIN_API ssize_t sendmsg(int fd, const struct msghdr *msg, int flags) {
  NODE(n.attempt = io_attempt_sendmsg; n.msg = (struct msghdr *)msg;
       n.flags = flags; n.dir = 1;)
  return call(fd, &n);
}

DROPIN_API int accept4(int fd, struct sockaddr *addr, socklen_t *addrlen,
                       int flags) {
  NODE(n.attempt = io_attempt_accept; n.addr = addr; n.addrlen = addrlen;
       n.flags = flags;)
  return (int)call(fd, &n);
}

DROPIN_API int accept(int fd, struct sockaddr *addr, socklen_t *addrlen) {
  return accept4(fd, addr, addrlen, 0);
}

DROPIN_API int connect(int fd, const struct sockaddr *addr, socklen_t addrlen) {
  cancel_point();
  return io_connect_impl(fd, addr, addrlen, false);
}

/* ---- readiness waits: on a swarm thread they park it ---- */

DROPIN_API int poll(struct pollfd *fds, nfds_t nfds, int timeout) {
  cancel_point();
  if (!worker_current()) {
    struct timespec ts = {timeout / 1000, (long)(timeout % 1000) * 1000000};
    return (int)io_fail(sys_ppoll(fds, nfds, timeout < 0 ? NULL : &ts, NULL));
  }
  return waited(io_poll_impl(
      fds, nfds, timeout < 0 ? -1 : (int64_t)timeout * 1000000, NULL, true));
}

DROPIN_API int __poll_chk(struct pollfd *fds, nfds_t nfds, int timeout,
                          size_t size) {
  if (nfds > size / sizeof *fds)
    abort();
  return poll(fds, nfds, timeout);
}

DROPIN_API int ppoll(struct pollfd *fds, nfds_t nfds,
                     const struct timespec *tmo, const sigset_t *mask) {
  cancel_point();
  if (!worker_current())
    return (int)io_fail(sys_ppoll(fds, nfds, tmo, mask));
  int64_t ns;
  if (io_timespec_ns(tmo, &ns) < 0)
    return dropin_fail(EINVAL);
  return waited(io_poll_impl(fds, nfds, ns, mask, true));
}

DROPIN_API int __ppoll_chk(struct pollfd *fds, nfds_t nfds,
                           const struct timespec *tmo, const sigset_t *mask,
                           size_t size) {
  if (nfds > size / sizeof *fds)
    abort();
  return ppoll(fds, nfds, tmo, mask);
}

DROPIN_API int select(int nfds, fd_set *r, fd_set *w, fd_set *x,
                      struct timeval *tv) {
  cancel_point();
  if (!worker_current()) {
    struct timespec ts, *tp = NULL;
    if (tv) {
      ts.tv_sec = tv->tv_sec;
      ts.tv_nsec = tv->tv_usec * 1000;
      tp = &ts;
    }
    return (int)io_fail(sys_pselect6(nfds, r, w, x, tp, NULL));
  }
  struct timespec ts, *tp = NULL;
  if (tv) {
    if (io_timeval_timespec(tv, &ts) < 0)
      return dropin_fail(EINVAL);
    tp = &ts;
  }
  return waited(io_select_impl(nfds, r, w, x, tp, NULL, true));
}

DROPIN_API int pselect(int nfds, fd_set *r, fd_set *w, fd_set *x,
                       const struct timespec *tmo, const sigset_t *mask) {
  cancel_point();
  if (!worker_current()) {
    struct timespec copy, *tp = NULL; /* the raw call writes the time left */
    if (tmo) {
      copy = *tmo;
      tp = &copy;
    }
    return (int)io_fail(sys_pselect6(nfds, r, w, x, tp, mask));
  }
  return waited(io_select_impl(nfds, r, w, x, tmo, mask, true));
}

DROPIN_API int epoll_wait(int epfd, struct epoll_event *ev, int maxevents,
                          int timeout) {
  cancel_point();
  if (!worker_current())
    return (int)io_fail(sys_epoll_pwait(epfd, ev, maxevents, timeout, NULL));
  return waited(io_epoll_wait_impl(epfd, ev, maxevents, io_ms_to_ns(timeout),
                                   NULL, true));
}

/* The signal mask applies to the readiness checks: a parked swarm thread
 * receives no signals (libuv and others call epoll_pwait). */
DROPIN_API int epoll_pwait(int epfd, struct epoll_event *ev, int maxevents,
                           int timeout, const sigset_t *mask) {
  cancel_point();
  if (!worker_current())
    return (int)io_fail(sys_epoll_pwait(epfd, ev, maxevents, timeout, mask));
  return waited(io_epoll_wait_impl(epfd, ev, maxevents, io_ms_to_ns(timeout),
                                   mask, true));
}

#ifdef SYS_epoll_pwait2
DROPIN_API int epoll_pwait2(int epfd, struct epoll_event *ev, int maxevents,
                            const struct timespec *tmo, const sigset_t *mask) {
  cancel_point();
  if (!worker_current())
    return (int)io_fail(sys_epoll_pwait2(epfd, ev, maxevents, tmo, mask));
  int64_t ns;
  if (io_timespec_ns(tmo, &ns) < 0)
    return dropin_fail(EINVAL);
  return waited(io_epoll_wait_impl(epfd, ev, maxevents, ns, mask, true));
}
#endif

/* ---- descriptors: creation, copies, flags, close ---- */

DROPIN_API int socket(int domain, int type, int protocol) {
  long r = sys_socket(domain, type, protocol);
  if (r >= 0)
    io_fd_created((int)r);
  return (int)io_fail(r);
}

DROPIN_API int socketpair(int domain, int type, int protocol, int sv[2]) {
  long r = sys_socketpair(domain, type, protocol, sv);
  if (r == 0) {
    io_fd_created(sv[0]);
    io_fd_created(sv[1]);
  }
  return (int)io_fail(r);
}

DROPIN_API int pipe2(int fds[2], int flags) {
  long r = sys_pipe2(fds, flags);
  if (r == 0) {
    io_fd_created(fds[0]);
    io_fd_created(fds[1]);
  }
  return (int)io_fail(r);
}

DROPIN_API int pipe(int fds[2]) {
  return pipe2(fds, 0);
}

DROPIN_API int eventfd(unsigned int initval, int flags) {
  long r = sys_eventfd2(initval, flags);
  if (r >= 0)
    io_fd_created((int)r);
  return (int)io_fail(r);
}

/* A copy of old as r: whatever the entry of r knew is stale. */
static long copied(int old, long r) {
  (void)old;
  if (r >= 0)
    io_fd_created((int)r);
  return r;
}

DROPIN_API int dup(int old) {
  return (int)io_fail(copied(old, sys_dup(old)));
}

static long op_dup3(int new, void *arg) {
  int *of = arg;
  return sys_dup3(of[0], new, of[1]);
}

DROPIN_API int dup3(int old, int new, int flags) {
  if (old == new)
    return dropin_fail(EINVAL);
  if (sys_fcntl(old, F_GETFD, 0) < 0)
    return dropin_fail(EBADF); /* dup3 leaves new open on a bad old */
  /* dup3 closes new: forget it in the same step (io_fd_forget_with),
   * which leaves the entry as a new file's; no io_fd_created after it,
   * which would find the copy classified if another thread used it in
   * between, and end that thread's wait as the old file's */
  int of[2] = {old, flags};
  return (int)io_fail(io_fd_forget_with(new, op_dup3, of));
}

DROPIN_API int dup2(int old, int new) {
  if (old == new)
    return (int)io_fail(sys_fcntl(old, F_GETFD, 0) < 0 ? -EBADF : new);
  return dup3(old, new, 0);
}

/* The copies need us, and so do the changes of O_NONBLOCK: F_SETFL goes
 * to the kernel as it is (the flag is the program's), then tells the I/O
 * layer that what it cached of the flags is stale (src/io/opts.c).
 * fcntl64 is the name glibc's headers bind fcntl to under
 * _FILE_OFFSET_BITS=64. */
DROPIN_API int fcntl(int fd, int cmd, ...) {
  va_list ap;
  va_start(ap, cmd);
  long arg = va_arg(ap, long); /* int or pointer: both fit in a long */
  va_end(ap);
  switch (cmd) {
  case F_DUPFD:
  case F_DUPFD_CLOEXEC:
    return (int)io_fail(copied(fd, sys_fcntl(fd, cmd, arg)));
  case F_SETFL: {
    long r = sys_fcntl(fd, cmd, arg);
    if (r >= 0)
      io_fd_opts_changed();
    return (int)io_fail(r);
  }
  default:
    return (int)io_fail(sys_fcntl(fd, cmd, arg));
  }
}

DROPIN_API int fcntl64(int fd, int cmd, ...) __attribute__((alias("fcntl")));

/* FIONBIO sets or clears O_NONBLOCK as F_SETFL does. */
DROPIN_API int ioctl(int fd, unsigned long request, ...) {
  va_list ap;
  va_start(ap, request);
  void *arg = va_arg(ap, void *);
  va_end(ap);
  long r = sys_call(SYS_ioctl, fd, request, arg);
  if (request == FIONBIO && r >= 0)
    io_fd_opts_changed();
  return (int)io_fail(r);
}

/* SO_RCVTIMEO / SO_SNDTIMEO (any SOL_SOCKET option: the _OLD and _NEW
 * names of both, and options like SO_RCVBUF cost one refill) */
DROPIN_API int setsockopt(int fd, int level, int name, const void *value,
                          socklen_t len) {
  long r = sys_call(SYS_setsockopt, fd, level, name, value, len);
  if (level == SOL_SOCKET && r >= 0)
    io_fd_opts_changed();
  return (int)io_fail(r);
}

__attribute__((constructor)) static void dropin_io_watch(void) {
  io_fd_opts_watch(); /* every change above is seen: cache the flags */
}

DROPIN_API int close(int fd) {
  return (int)io_fail(io_fd_close(fd));
}
