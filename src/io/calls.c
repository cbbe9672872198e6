/*
 * io/calls.c — the blocking calls of include/swarm/io.h, shared by the
 * native API and the drop-in (pthread/io.c): each call is an "attempt"
 * (one non-blocking system call, which a poller may perform on the parked
 * thread's behalf) routed by the descriptor's kind: epoll wait for
 * sockets, pipes and the like, offload for regular files, straight through
 * for descriptors swarm leaves alone. Waits on several descriptors (poll,
 * select, epoll_wait) and connect are readiness waits that re-check
 * themselves. Semantics and errno are the kernel's: every result is the
 * system call's own, only the waiting differs.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#include "io/io.h"
#include "swarm/io.h"

/* ---- attempts: one non-blocking system call each ---- */

long io_attempt_read(struct io_node *n) {
  return sys_read(n->fd, n->buf, n->len);
}
long io_attempt_write(struct io_node *n) {
  return sys_write(n->fd, n->buf, n->len);
}
long io_attempt_readv(struct io_node *n) {
  return sys_readv(n->fd, n->iov, n->iovcnt);
}
long io_attempt_writev(struct io_node *n) {
  return sys_writev(n->fd, n->iov, n->iovcnt);
}
long io_attempt_recvfrom(struct io_node *n) {
  return sys_recvfrom(n->fd, n->buf, n->len, n->flags | MSG_DONTWAIT, n->addr,
                      n->addrlen);
}
long io_attempt_sendto(struct io_node *n) {
  return sys_sendto(n->fd, n->buf, n->len, n->flags | MSG_DONTWAIT, n->caddr,
                    n->caddrlen);
}
long io_attempt_recvmsg(struct io_node *n) {
  return sys_recvmsg(n->fd, n->msg, n->flags | MSG_DONTWAIT);
}
long io_attempt_sendmsg(struct io_node *n) {
  return sys_sendmsg(n->fd, n->msg, n->flags | MSG_DONTWAIT);
}
long io_attempt_accept(struct io_node *n) {
  /* n->flags: the caller's accept4 flags */
  long r = sys_accept4(n->fd, n->addr, n->addrlen,
                       (n->flags & ~MSG_DONTWAIT) | SOCK_NONBLOCK);
  if (r >= 0)
    io_fd_created((int)r, (n->flags & SOCK_NONBLOCK) != 0);
  return r;
}

/* MSG_WAITALL: the attempts add MSG_DONTWAIT, which makes the kernel
 * return what it has; keep waiting for the rest as a blocking recv would
 * (a signal cannot interrupt a parked thread, so only EOF, an error or a
 * timeout ends it early, with what arrived so far). */
static long recv_waitall(struct io_fd *e, struct io_node *n) {
  char *buf = n->buf;
  size_t len = n->len, got = 0;
  while (got < len) {
    n->buf = buf + got;
    n->len = len - got;
    long r = io_call(e, n, 0);
    if (r <= 0)
      return got ? (long)got : r;
    got += (size_t)r;
  }
  return (long)got;
}

long io_do(int fd, struct io_node *n, bool adopt) {
  struct io_fd *e = io_fd_get(fd, adopt);
  if (!e)
    return -errno;
  n->fd = fd;
  switch (atomic_load_explicit(&e->kind, memory_order_relaxed)) {
  case FD_POLLABLE:
    if (unlikely((n->flags & MSG_WAITALL) && n->attempt == io_attempt_recvfrom))
      return recv_waitall(e, n);
    return io_call(e, n, 0);
  case FD_FILE:
    return io_offload(n);
  default:
    return n->attempt(n);
  }
}

/* ---- readiness waits ---- */

static uint64_t deadline_after(int64_t ns) {
  return ns > 0 ? os_now_ns_inline() + (uint64_t)ns : 0;
}

/* Sleeps the calling thread until deadline (0: for ever). */
static void sleep_until(uint64_t deadline) {
  for (;;) {
    uint64_t now = os_now_ns_inline();
    if (deadline && now >= deadline)
      return;
    swarm_sleep_ns(deadline ? deadline - now : 1000000000ull);
  }
}

#define POLL_STACK_NODES 16

int io_poll_impl(struct pollfd *fds, nfds_t nfds, int64_t timeout_ns,
                 const sigset_t *mask) {
  uint64_t deadline = deadline_after(timeout_ns);
  const struct timespec zero = {0, 0};
  struct io_node stack_nodes[POLL_STACK_NODES];
  struct io_node *nodes = stack_nodes;
  if (nfds > POLL_STACK_NODES / 2) {
    nodes = calloc(2 * nfds, sizeof *nodes);
    if (!nodes)
      return (int)io_fail(-ENOMEM);
  }
  int result;
  for (;;) {
    int count = 0;
    for (nfds_t i = 0; i < nfds; i++) {
      if (fds[i].fd < 0)
        continue;
      struct io_fd *e = io_fd_get(fds[i].fd, false);
      if (!e || atomic_load(&e->kind) == FD_FILE)
        continue; /* the check below reports it (POLLNVAL, or ready) */
      bool out = fds[i].events & (POLLOUT | POLLWRNORM | POLLWRBAND);
      bool in = !out || (fds[i].events & (POLLIN | POLLPRI | POLLRDNORM |
                                          POLLRDBAND | POLLRDHUP));
      for (int d = 0; d < 2; d++) {
        if (d ? !out : !in)
          continue;
        struct io_node *n = &nodes[count++];
        memset(n, 0, sizeof *n);
        n->fd = fds[i].fd;
        n->e = e;
        n->dir = d;
        n->seq = atomic_load(d ? &e->wseq : &e->rseq);
      }
    }
    long r = sys_ppoll(fds, nfds, &zero, mask);
    if (r != 0) {
      result = (int)io_fail(r);
      break;
    }
    if (timeout_ns == 0 || (deadline && os_now_ns_inline() >= deadline)) {
      result = 0;
      break;
    }
    if (count == 0)
      sleep_until(deadline);
    else
      io_wait_many(nodes, count, deadline);
  }
  if (nodes != stack_nodes)
    free(nodes);
  return result;
}

int io_select_impl(int nfds, fd_set *r, fd_set *w, fd_set *x,
                   struct timeval *tv) {
  if (nfds < 0 || nfds > FD_SETSIZE ||
      (tv && (tv->tv_sec < 0 || tv->tv_usec < 0)))
    return (int)io_fail(-EINVAL);
  struct pollfd stack_p[64], *p = stack_p;
  int np = 0;
  for (int fd = 0; fd < nfds; fd++)
    np += (r && FD_ISSET(fd, r)) || (w && FD_ISSET(fd, w)) ||
          (x && FD_ISSET(fd, x));
  if (np > 64 && !(p = malloc(sizeof *p * (size_t)np)))
    return (int)io_fail(-ENOMEM);
  np = 0;
  for (int fd = 0; fd < nfds; fd++) {
    short ev = 0;
    if (r && FD_ISSET(fd, r))
      ev |= POLLIN;
    if (w && FD_ISSET(fd, w))
      ev |= POLLOUT;
    if (x && FD_ISSET(fd, x))
      ev |= POLLPRI;
    if (ev)
      p[np++] = (struct pollfd){fd, ev, 0};
  }
  int64_t ns =
      tv ? (int64_t)tv->tv_sec * 1000000000 + (int64_t)tv->tv_usec * 1000 : -1;
  int n = io_poll_impl(p, (nfds_t)np, ns, NULL);
  if (n > 0) {
    n = 0;
    for (int i = 0; i < np; i++)
      if (p[i].revents & POLLNVAL) {
        if (p != stack_p)
          free(p);
        return (int)io_fail(-EBADF);
      }
    if (r)
      FD_ZERO(r);
    if (w)
      FD_ZERO(w);
    if (x)
      FD_ZERO(x);
    for (int i = 0; i < np; i++) {
      short re = p[i].revents, ev = p[i].events;
      if ((ev & POLLIN) && (re & (POLLIN | POLLHUP | POLLERR)))
        FD_SET(p[i].fd, r), n++;
      if ((ev & POLLOUT) && (re & (POLLOUT | POLLERR)))
        FD_SET(p[i].fd, w), n++;
      if ((ev & POLLPRI) && (re & POLLPRI))
        FD_SET(p[i].fd, x), n++;
    }
  } else if (n == 0) {
    if (r)
      FD_ZERO(r);
    if (w)
      FD_ZERO(w);
    if (x)
      FD_ZERO(x);
  }
  if (p != stack_p)
    free(p);
  return n;
}

int io_epoll_wait_impl(int epfd, struct epoll_event *ev, int n, int ms) {
  uint64_t deadline = deadline_after(ms > 0 ? (int64_t)ms * 1000000 : 0);
  for (;;) {
    struct io_fd *e = io_fd_get(epfd, false);
    struct io_node node;
    memset(&node, 0, sizeof node);
    if (e) {
      node.fd = epfd;
      node.e = e;
      node.seq = atomic_load(&e->rseq);
    }
    long r = sys_epoll_pwait(epfd, ev, n, 0);
    if (r != 0 || ms == 0 || !e)
      return (int)io_fail(r);
    if (deadline && os_now_ns_inline() >= deadline)
      return 0;
    io_wait_many(&node, 1, deadline);
  }
}

int io_connect_impl(int fd, const struct sockaddr *a, socklen_t al,
                    bool adopt) {
  struct io_fd *e = io_fd_get(fd, adopt);
  if (!e)
    return (int)io_fail(-errno);
  if (atomic_load(&e->kind) != FD_POLLABLE)
    return (int)io_fail(sys_connect(fd, a, al));
  struct io_node node;
  memset(&node, 0, sizeof node);
  node.fd = fd;
  node.e = e;
  node.dir = 1;
  node.seq = atomic_load(&e->wseq);
  long r = sys_connect(fd, a, al);
  if (r != -EINPROGRESS || e->user_nonblock)
    return (int)io_fail(r);
  uint64_t deadline = 0;
  struct timeval tv = {0, 0};
  socklen_t len = sizeof tv;
  if (getsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, &len) == 0 &&
      (tv.tv_sec || tv.tv_usec))
    deadline = deadline_after((int64_t)tv.tv_sec * 1000000000 +
                              (int64_t)tv.tv_usec * 1000);
  for (;;) {
    struct pollfd p = {fd, POLLOUT, 0};
    const struct timespec zero = {0, 0};
    if (sys_ppoll(&p, 1, &zero, NULL) > 0) {
      int err = 0;
      socklen_t el = sizeof err;
      if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) != 0)
        return -1;
      return (int)io_fail(err ? -err : 0);
    }
    if (deadline && os_now_ns_inline() >= deadline)
      return (int)io_fail(-EINPROGRESS);
    if (io_wait_many(&node, 1, deadline) == 0)
      return (int)io_fail(-EINPROGRESS);
    node.seq = atomic_load(&e->wseq);
  }
}

/* ---- the native API ---- */

#define NODE(...)                                                              \
  struct io_node n;                                                            \
  memset(&n, 0, sizeof n);                                                     \
  __VA_ARGS__

ssize_t swarm_read(int fd, void *buf, size_t count) {
  NODE(n.attempt = io_attempt_read; n.buf = buf; n.len = count;)
  return io_fail(io_do(fd, &n, true));
}

ssize_t swarm_write(int fd, const void *buf, size_t count) {
  NODE(n.attempt = io_attempt_write; n.buf = (void *)buf; n.len = count;
       n.dir = 1;)
  return io_fail(io_do(fd, &n, true));
}

ssize_t swarm_readv(int fd, const struct iovec *iov, int iovcnt) {
  NODE(n.attempt = io_attempt_readv; n.iov = iov; n.iovcnt = iovcnt;)
  return io_fail(io_do(fd, &n, true));
}

ssize_t swarm_writev(int fd, const struct iovec *iov, int iovcnt) {
  NODE(n.attempt = io_attempt_writev; n.iov = iov; n.iovcnt = iovcnt;
       n.dir = 1;)
  return io_fail(io_do(fd, &n, true));
}

ssize_t swarm_recvfrom(int fd, void *buf, size_t len, int flags,
                       struct sockaddr *src, socklen_t *addrlen) {
  NODE(n.attempt = io_attempt_recvfrom; n.buf = buf; n.len = len;
       n.flags = flags; n.addr = src; n.addrlen = addrlen;)
  return io_fail(io_do(fd, &n, true));
}

ssize_t swarm_recv(int fd, void *buf, size_t len, int flags) {
  return swarm_recvfrom(fd, buf, len, flags, NULL, NULL);
}

ssize_t swarm_sendto(int fd, const void *buf, size_t len, int flags,
                     const struct sockaddr *dest, socklen_t addrlen) {
  NODE(n.attempt = io_attempt_sendto; n.buf = (void *)buf; n.len = len;
       n.flags = flags; n.caddr = dest; n.caddrlen = addrlen; n.dir = 1;)
  return io_fail(io_do(fd, &n, true));
}

ssize_t swarm_send(int fd, const void *buf, size_t len, int flags) {
  return swarm_sendto(fd, buf, len, flags, NULL, 0);
}

ssize_t swarm_recvmsg(int fd, struct msghdr *msg, int flags) {
  NODE(n.attempt = io_attempt_recvmsg; n.msg = msg; n.flags = flags;)
  return io_fail(io_do(fd, &n, true));
}

ssize_t swarm_sendmsg(int fd, const struct msghdr *msg, int flags) {
  NODE(n.attempt = io_attempt_sendmsg; n.msg = (struct msghdr *)msg;
       n.flags = flags; n.dir = 1;)
  return io_fail(io_do(fd, &n, true));
}

int swarm_accept4(int fd, struct sockaddr *addr, socklen_t *addrlen,
                  int flags) {
  NODE(n.attempt = io_attempt_accept; n.addr = addr; n.addrlen = addrlen;
       n.flags = flags;)
  return (int)io_fail(io_do(fd, &n, true));
}

int swarm_accept(int fd, struct sockaddr *addr, socklen_t *addrlen) {
  return swarm_accept4(fd, addr, addrlen, 0);
}

int swarm_connect(int fd, const struct sockaddr *addr, socklen_t addrlen) {
  return io_connect_impl(fd, addr, addrlen, true);
}

int swarm_poll(struct pollfd *fds, nfds_t nfds, int timeout_ms) {
  return io_poll_impl(
      fds, nfds, timeout_ms < 0 ? -1 : (int64_t)timeout_ms * 1000000, NULL);
}

int swarm_ppoll(struct pollfd *fds, nfds_t nfds, const struct timespec *tmo,
                const sigset_t *sigmask) {
  if (tmo &&
      (tmo->tv_sec < 0 || tmo->tv_nsec < 0 || tmo->tv_nsec >= 1000000000L))
    return (int)io_fail(-EINVAL);
  int64_t ns =
      tmo ? (int64_t)tmo->tv_sec * 1000000000 + (int64_t)tmo->tv_nsec : -1;
  return io_poll_impl(fds, nfds, ns, sigmask);
}

int swarm_select(int nfds, fd_set *readfds, fd_set *writefds, fd_set *exceptfds,
                 struct timeval *timeout) {
  return io_select_impl(nfds, readfds, writefds, exceptfds, timeout);
}

int swarm_epoll_wait(int epfd, struct epoll_event *events, int maxevents,
                     int timeout_ms) {
  return io_epoll_wait_impl(epfd, events, maxevents, timeout_ms);
}

int swarm_fd_wait(int fd, short events, int timeout_ms) {
  struct pollfd p = {fd, events, 0};
  int r = swarm_poll(&p, 1, timeout_ms);
  if (r <= 0)
    return r;
  if (p.revents & POLLNVAL)
    return (int)io_fail(-EBADF);
  return p.revents;
}

int swarm_close(int fd) {
  return (int)io_fail(io_fd_close(fd));
}
