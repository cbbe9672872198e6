/*
 * pthread/io.c — the drop-in's I/O interposers: an unmodified
 * thread-per-connection program's blocking read/write/accept/... park only
 * the calling swarm thread, through src/io (the same code as the native
 * swarm_* calls).
 *
 * Which descriptors swarm manages (non-blocking underneath, waits in
 * epoll): those the program creates through the calls intercepted here
 * (socket, accept, accept4, pipe, pipe2, socketpair, eventfd, and dup*
 * copies of managed ones), and any socket on first use. Pipes, FIFOs and
 * terminals the program did not create here (stdin from a shell) are left
 * blocking: O_NONBLOCK belongs to the open file, which other processes
 * share; a read on them blocks the worker, and the monitor's spare workers
 * keep the other threads running meanwhile. Regular files are offloaded.
 *
 * The program's view of O_NONBLOCK is kept per descriptor: fcntl(F_SETFL)
 * and ioctl(FIONBIO) set it (the kernel's flag stays on), F_GETFL reports
 * it, and a descriptor the program made non-blocking returns EAGAIN.
 * Calls from kernel threads that are not swarm threads block that kernel
 * thread, with the same semantics. The _FORTIFY_SOURCE variants
 * (__read_chk, __recv_chk, __recvfrom_chk, __poll_chk, __ppoll_chk) are
 * covered too, since Debian builds programs with them.
 *
 * Known limit: a managed descriptor used through stdio (fdopen) or closed
 * by libc internally (fclose) is reached through glibc's internal names,
 * which cannot be interposed: stdio sees EAGAIN where it expected to
 * block, and swarm does not learn of that close.
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
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "io/io.h"
#include "pthread/dropin.h"

#define NODE(...)                                                              \
  struct io_node n;                                                            \
  memset(&n, 0, sizeof n);                                                     \
  __VA_ARGS__

static long call(int fd, struct io_node *n) {
  return io_fail(io_do(fd, n, false));
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
  return io_connect_impl(fd, addr, addrlen, false);
}

/* ---- readiness waits: on a swarm thread they park it ---- */

DROPIN_API int poll(struct pollfd *fds, nfds_t nfds, int timeout) {
  if (!worker_current()) {
    struct timespec ts = {timeout / 1000, (long)(timeout % 1000) * 1000000};
    return (int)io_fail(sys_ppoll(fds, nfds, timeout < 0 ? NULL : &ts, NULL));
  }
  return io_poll_impl(fds, nfds, timeout < 0 ? -1 : (int64_t)timeout * 1000000,
                      NULL);
}

DROPIN_API int __poll_chk(struct pollfd *fds, nfds_t nfds, int timeout,
                          size_t size) {
  if (nfds > size / sizeof *fds)
    abort();
  return poll(fds, nfds, timeout);
}

DROPIN_API int ppoll(struct pollfd *fds, nfds_t nfds,
                     const struct timespec *tmo, const sigset_t *mask) {
  if (!worker_current())
    return (int)io_fail(sys_ppoll(fds, nfds, tmo, mask));
  if (tmo &&
      (tmo->tv_sec < 0 || tmo->tv_nsec < 0 || tmo->tv_nsec >= 1000000000L))
    return dropin_fail(EINVAL);
  int64_t ns =
      tmo ? (int64_t)tmo->tv_sec * 1000000000 + (int64_t)tmo->tv_nsec : -1;
  return io_poll_impl(fds, nfds, ns, mask);
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
  if (!worker_current()) {
    struct timespec ts, *tp = NULL;
    if (tv) {
      ts.tv_sec = tv->tv_sec;
      ts.tv_nsec = tv->tv_usec * 1000;
      tp = &ts;
    }
    return (int)io_fail(io_ret(syscall(SYS_pselect6, nfds, r, w, x, tp, NULL)));
  }
  return io_select_impl(nfds, r, w, x, tv);
}

DROPIN_API int epoll_wait(int epfd, struct epoll_event *ev, int maxevents,
                          int timeout) {
  if (!worker_current())
    return (int)io_fail(sys_epoll_pwait(epfd, ev, maxevents, timeout));
  return io_epoll_wait_impl(epfd, ev, maxevents, timeout);
}

/* ---- descriptors: creation, copies, flags, close ---- */

DROPIN_API int socket(int domain, int type, int protocol) {
  long r = io_ret(syscall(SYS_socket, domain, type, protocol));
  if (r >= 0)
    io_fd_created((int)r, (type & SOCK_NONBLOCK) != 0);
  return (int)io_fail(r);
}

DROPIN_API int socketpair(int domain, int type, int protocol, int sv[2]) {
  long r = io_ret(syscall(SYS_socketpair, domain, type, protocol, sv));
  if (r == 0) {
    io_fd_created(sv[0], (type & SOCK_NONBLOCK) != 0);
    io_fd_created(sv[1], (type & SOCK_NONBLOCK) != 0);
  }
  return (int)io_fail(r);
}

DROPIN_API int pipe2(int fds[2], int flags) {
  long r = io_ret(syscall(SYS_pipe2, fds, flags));
  if (r == 0) {
    io_fd_created(fds[0], (flags & O_NONBLOCK) != 0);
    io_fd_created(fds[1], (flags & O_NONBLOCK) != 0);
  }
  return (int)io_fail(r);
}

DROPIN_API int pipe(int fds[2]) {
  return pipe2(fds, 0);
}

DROPIN_API int eventfd(unsigned int initval, int flags) {
  long r = io_ret(syscall(SYS_eventfd2, initval, flags));
  if (r >= 0)
    io_fd_created((int)r, (flags & EFD_NONBLOCK) != 0);
  return (int)io_fail(r);
}

/* A copy of old as new: managed if old is, with old's view of O_NONBLOCK. */
static long copied(int old, long r) {
  if (r < 0)
    return r;
  struct io_fd *e = io_fd_entry(old);
  if (e && atomic_load(&e->kind) == FD_POLLABLE)
    io_fd_created((int)r, e->user_nonblock);
  return r;
}

DROPIN_API int dup(int old) {
  return (int)io_fail(copied(old, io_ret(syscall(SYS_dup, old))));
}

static long op_dup3(int new, void *arg) {
  int *of = arg;
  return io_ret(syscall(SYS_dup3, of[0], new, of[1]));
}

DROPIN_API int dup3(int old, int new, int flags) {
  if (old == new)
    return dropin_fail(EINVAL);
  if (sys_fcntl(old, F_GETFD, 0) < 0)
    return dropin_fail(EBADF); /* dup3 leaves new open on a bad old */
  /* dup3 closes new: forget it in the same step (io_fd_forget_with) */
  int of[2] = {old, flags};
  return (int)io_fail(copied(old, io_fd_forget_with(new, op_dup3, of)));
}

DROPIN_API int dup2(int old, int new) {
  if (old == new)
    return (int)io_fail(sys_fcntl(old, F_GETFD, 0) < 0 ? -EBADF : new);
  return dup3(old, new, 0);
}

DROPIN_API int fcntl(int fd, int cmd, ...) {
  va_list ap;
  va_start(ap, cmd);
  long arg = va_arg(ap, long); /* int or pointer: both fit in a long */
  va_end(ap);
  switch (cmd) {
  case F_GETFL:
  case F_SETFL: {
    struct io_fd *e = io_fd_get(fd, false);
    bool managed = e && atomic_load(&e->kind) == FD_POLLABLE;
    if (cmd == F_GETFL) {
      long r = sys_fcntl(fd, F_GETFL, 0);
      if (r >= 0 && managed)
        r = (r & ~O_NONBLOCK) | (e->user_nonblock ? O_NONBLOCK : 0);
      return (int)io_fail(r);
    }
    long r = sys_fcntl(fd, F_SETFL, managed ? arg | O_NONBLOCK : arg);
    if (r == 0 && managed)
      io_fd_set_user_nonblock(e, (arg & O_NONBLOCK) != 0);
    return (int)io_fail(r);
  }
  case F_DUPFD:
  case F_DUPFD_CLOEXEC:
    return (int)io_fail(copied(fd, sys_fcntl(fd, cmd, arg)));
  default:
    return (int)io_fail(sys_fcntl(fd, cmd, arg));
  }
}

DROPIN_API int ioctl(int fd, unsigned long request, ...) {
  va_list ap;
  va_start(ap, request);
  void *arg = va_arg(ap, void *);
  va_end(ap);
  if (request == FIONBIO && arg) {
    struct io_fd *e = io_fd_get(fd, false);
    if (e && atomic_load(&e->kind) == FD_POLLABLE) {
      io_fd_set_user_nonblock(e, *(int *)arg != 0);
      return 0; /* the kernel's flag stays on */
    }
  }
  return (int)io_fail(io_ret(syscall(SYS_ioctl, fd, request, arg)));
}

DROPIN_API int close(int fd) {
  return (int)io_fail(io_fd_close(fd));
}
