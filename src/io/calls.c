/*
 * io/calls.c — the blocking calls of include/swarm/io.h, shared by the
 * native API and the drop-in (pthread/io.c): each call is an "attempt"
 * (one system call made non-blocking by itself, never through the file's
 * O_NONBLOCK, which a poller may perform on the parked thread's behalf)
 * routed by the descriptor's kind: epoll wait for sockets, pipes and the
 * like, offload for regular files and blocking connects, straight through
 * for descriptors swarm leaves alone. Waits on several descriptors (poll,
 * select, epoll_wait) and connect are readiness waits that re-check
 * themselves. Semantics and errno are the kernel's: every result is the
 * system call's own, only the waiting differs.
 */
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "io/io.h"
#include "swarm/io.h"
#include "sync/sync.h"

/* ---- attempts: one non-blocking system call each ----
 *
 * Never through the file's O_NONBLOCK (it is shared with other processes:
 * docs/io.md). read/write/readv/writev use preadv2/pwritev2 at the current
 * position (offset -1) with RWF_NOWAIT: for sockets, pipes, eventfd and
 * timerfd the kernel runs exactly the read/write path (a zero-length read
 * returns 0 at once, a SOCK_SEQPACKET write gets its MSG_EOR, a pipe write
 * of at most PIPE_BUF bytes is all or EAGAIN) but returns EAGAIN where it
 * would sleep. Files without RWF_NOWAIT (FIFOs opened by name, terminals)
 * answer EOPNOTSUPP on first try and are switched to IO_HOW_READY. The
 * socket calls take MSG_DONTWAIT. accept has no per-call form: it is
 * always IO_HOW_READY. n->how == IO_HOW_PLAIN (left-alone descriptors,
 * regular files in the pool) makes the call as the program did. */

static const struct timespec zero_ts = {0, 0};

/* A readiness check (before a wait, or a readiness-first attempt): ppoll
 * with a zero timeout, which Linux still fails with EINTR when a handler
 * ran meanwhile (the runtime's interrupt that preempts the worker, or a
 * program's signal). Either is
 * as if it came just before the call, when POSIX lets select and poll go
 * on waiting (the race pselect exists for), so the check is made again
 * rather than failing the call with an EINTR no signal of this thread's
 * caused. A signal sent to the thread while it then waits ends the wait
 * through the interruption record (sync_interrupt), with EINTR. */
static long ready_check_ppoll(struct pollfd *fds, nfds_t nfds,
                              const sigset_t *mask) {
  long r;
  do
    r = sys_ppoll(fds, nfds, &zero_ts, mask);
  while (r == -EINTR);
  return r;
}

static bool is_vec(const struct io_node *n) {
  return n->attempt == io_attempt_readv || n->attempt == io_attempt_writev;
}

static long plain_rw(struct io_node *n) {
  if (is_vec(n))
    return n->dir ? sys_writev(n->fd, n->iov, n->iovcnt)
                  : sys_readv(n->fd, n->iov, n->iovcnt);
  return n->dir ? sys_write(n->fd, n->buf, n->len)
                : sys_read(n->fd, n->buf, n->len);
}

/* A write after POLLOUT on a pipe or FIFO: at most PIPE_BUF bytes, which a
 * free slot always takes, so the call cannot sleep (unless another process
 * filled the pipe in between). Longer writes have no atomicity to keep;
 * the caller's loop (io_do) writes the rest. */
static long fifo_write_chunk(struct io_node *n) {
  if (!is_vec(n))
    return sys_write(n->fd, n->buf, n->len < PIPE_BUF ? n->len : PIPE_BUF);
  struct iovec part[16];
  size_t total = 0;
  int cnt = 0;
  for (int i = 0; i < n->iovcnt && cnt < 16 && total < PIPE_BUF; i++) {
    part[cnt] = n->iov[i];
    if (part[cnt].iov_len > PIPE_BUF - total)
      part[cnt].iov_len = PIPE_BUF - total;
    total += part[cnt++].iov_len;
  }
  if (n->iovcnt <= 0 || n->iovcnt > IOV_MAX)
    return plain_rw(n); /* the kernel's own EINVAL */
  return sys_writev(n->fd, part, cnt);
}

static long ready_call_rw(struct io_node *n) {
  if (n->dir && n->e->fifo)
    return fifo_write_chunk(n);
  return plain_rw(n);
}

/* Readiness first, then the call (IO_HOW_READY). Within the process the
 * check and the call are serialized per direction (e->busy: 1 held, 2
 * held and someone found it held), so two of our threads cannot both see
 * one connection and have one of them sleep in accept; only another
 * process sharing the file can take the readiness between the check and
 * the call, and then the call blocks this worker until more comes (the
 * monitor's spares keep the others running). A thread that finds it held
 * says EAGAIN and parks; the holder then kicks a waiter (io_fd_kick), as
 * it does after any call that got something done, since readiness may be
 * left for the next one (one edge wakes one such waiter). */
static long ready_then(struct io_node *n, short events,
                       long (*call)(struct io_node *)) {
  struct io_fd *e = n->e;
  _Atomic uint8_t *busy = &e->busy[n->dir];
  n->how = IO_HOW_READY;
  uint8_t v = atomic_load(busy);
  for (;;) {
    if (v == 0) {
      if (atomic_compare_exchange_weak(busy, &v, 1))
        break; /* ours */
    } else if (v == 2 || atomic_compare_exchange_weak(busy, &v, 2)) {
      /* held, and the holder knows to kick: without that mark, a holder
       * whose check said "not ready" just before an edge we counted
       * would leave us parked beside data */
      return -EAGAIN;
    }
  }
  struct pollfd p = {n->fd, events, 0};
  long r = ready_check_ppoll(&p, 1, NULL);
  bool done = false;
  if (r == 0) {
    r = -EAGAIN;
  } else if (r > 0) {
    if (p.revents & POLLNVAL) {
      r = -EBADF;
    } else {
      r = call(n);
      done = r != -EAGAIN;
    }
  }
  if (atomic_exchange(busy, 0) == 2 || done)
    io_fd_kick(e, n->dir);
  return r;
}

/* A read of zero bytes never sleeps (pipes, sockets, terminals and files
 * answer at once), and readiness-first would wait for data it does not
 * want. Not so a write: a zero-length datagram or a write to a connecting
 * stream may wait, as readiness-first does. */
static bool reads_nothing(const struct io_node *n, bool vec) {
  if (n->dir)
    return false;
  if (!vec)
    return n->len == 0;
  if (n->iovcnt <= 0 || n->iovcnt > IOV_MAX)
    return true; /* the kernel's own EINVAL, at once */
  for (int i = 0; i < n->iovcnt; i++)
    if (n->iov[i].iov_len)
      return false;
  return true;
}

/* The attempt of read/write/readv/writev; vec: which pair (each attempt
 * knows, so the hot path compares no function pointers). */
static __attribute__((noinline)) long rw(struct io_node *n, bool vec) {
  if (unlikely(n->how == IO_HOW_PLAIN) || unlikely(reads_nothing(n, vec)))
    return plain_rw(n);
  struct io_fd *e = n->e;
  uint8_t how = atomic_load_explicit(&e->how[n->dir], memory_order_relaxed);
  if (e->socket && !vec && how != IO_HOW_READY) {
    /* A socket's read or write is its recv or send without flags; with
     * MSG_DONTWAIT it goes straight to the socket, without the vfs path
     * and the iovec preadv2/pwritev2 copy in (ping-pong: about 10% of the
     * server's kernel time in those two calls). */
    long r =
        n->dir ? sys_sendto(n->fd, n->buf, n->len, MSG_DONTWAIT, NULL, 0)
               : sys_recvfrom(n->fd, n->buf, n->len, MSG_DONTWAIT, NULL, NULL);
    if (how != IO_HOW_NOWAIT_OK)
      atomic_store_explicit(&e->how[n->dir], IO_HOW_NOWAIT_OK,
                            memory_order_relaxed);
    n->how = IO_HOW_NOWAIT_OK;
    return r;
  }
  if (how != IO_HOW_READY) {
    struct iovec one = {n->buf, n->len};
    const struct iovec *iov = vec ? n->iov : &one;
    int cnt = vec ? n->iovcnt : 1;
    long r = n->dir ? sys_pwritev2(n->fd, iov, cnt, -1, RWF_NOWAIT)
                    : sys_preadv2(n->fd, iov, cnt, -1, RWF_NOWAIT);
    if ((r != -EOPNOTSUPP && r != -ENOSYS) || io_in_poller) {
      if (how != IO_HOW_NOWAIT_OK)
        atomic_store_explicit(&e->how[n->dir], IO_HOW_NOWAIT_OK,
                              memory_order_relaxed);
      n->how = IO_HOW_NOWAIT_OK;
      return r;
    }
    /* No RWF_NOWAIT on this file (a first call; or an entry left stale by
     * a close swarm did not see, now naming a FIFO): readiness first from
     * now on. Never in a poller, which must not make a call that may
     * block under e->lock: it passes the error on. A genuine EOPNOTSUPP
     * of read or write comes back from the plain call just the same. */
    atomic_store_explicit(&e->how[n->dir], IO_HOW_READY, memory_order_relaxed);
  }
  return ready_then(n, n->dir ? POLLOUT : POLLIN, ready_call_rw);
}

/* read and write of a socket already seen to take MSG_DONTWAIT (every
 * call after its first): rw's socket case, without its frame. */
static inline __attribute__((always_inline)) bool
socket_known(const struct io_node *n) {
  struct io_fd *e = n->e;
  return n->how != IO_HOW_PLAIN && e->socket && n->len &&
         atomic_load_explicit(&e->how[n->dir], memory_order_relaxed) ==
             IO_HOW_NOWAIT_OK;
}
long io_attempt_read(struct io_node *n) {
  if (likely(socket_known(n))) {
    n->how = IO_HOW_NOWAIT_OK;
    return sys_recvfrom(n->fd, n->buf, n->len, MSG_DONTWAIT, NULL, NULL);
  }
  return rw(n, false);
}
long io_attempt_write(struct io_node *n) {
  if (likely(socket_known(n))) {
    n->how = IO_HOW_NOWAIT_OK;
    return sys_sendto(n->fd, n->buf, n->len, MSG_DONTWAIT, NULL, 0);
  }
  return rw(n, false);
}
long io_attempt_readv(struct io_node *n) {
  return rw(n, true);
}
long io_attempt_writev(struct io_node *n) {
  return rw(n, true);
}
long io_attempt_recvfrom(struct io_node *n) {
  int dontwait = n->how == IO_HOW_PLAIN ? 0 : MSG_DONTWAIT;
  return sys_recvfrom(n->fd, n->buf, n->len, n->flags | dontwait, n->addr,
                      n->addrlen);
}
long io_attempt_sendto(struct io_node *n) {
  int dontwait = n->how == IO_HOW_PLAIN ? 0 : MSG_DONTWAIT;
  return sys_sendto(n->fd, n->buf, n->len, n->flags | dontwait, n->caddr,
                    n->caddrlen);
}
long io_attempt_recvmsg(struct io_node *n) {
  int dontwait = n->how == IO_HOW_PLAIN ? 0 : MSG_DONTWAIT;
  return sys_recvmsg(n->fd, n->msg, n->flags | dontwait);
}
long io_attempt_sendmsg(struct io_node *n) {
  int dontwait = n->how == IO_HOW_PLAIN ? 0 : MSG_DONTWAIT;
  return sys_sendmsg(n->fd, n->msg, n->flags | dontwait);
}

static long accept_call(struct io_node *n) {
  /* n->flags: the caller's accept4 flags */
  long r = sys_accept4(n->fd, n->addr, n->addrlen, n->flags & ~MSG_DONTWAIT);
  if (r >= 0)
    io_fd_created((int)r);
  return r;
}
long io_attempt_accept(struct io_node *n) {
  if (n->how == IO_HOW_PLAIN)
    return accept_call(n);
  return ready_then(n, POLLIN, accept_call);
}
long io_attempt_connect(struct io_node *n) {
  return sys_connect(n->fd, n->caddr, n->caddrlen);
}
long io_attempt_pread(struct io_node *n) {
  return sys_pread(n->fd, n->buf, n->len, n->offset);
}
long io_attempt_pwrite(struct io_node *n) {
  return sys_pwrite(n->fd, n->buf, n->len, n->offset);
}
long io_attempt_preadv(struct io_node *n) {
  return sys_preadv(n->fd, n->iov, n->iovcnt, n->offset);
}
long io_attempt_pwritev(struct io_node *n) {
  return sys_pwritev(n->fd, n->iov, n->iovcnt, n->offset);
}
long io_attempt_fsync(struct io_node *n) {
  return sys_fsync(n->fd);
}
long io_attempt_fdatasync(struct io_node *n) {
  return sys_fdatasync(n->fd);
}

/* MSG_WAITALL: the attempts add MSG_DONTWAIT, which makes the kernel
 * return what it has; keep waiting for the rest as a blocking recv would
 * (a signal cannot interrupt a parked thread, so only EOF, an error or a
 * timeout ends it early, with what arrived so far). */
static __attribute__((noinline)) long recv_waitall(struct io_fd *e,
                                                   struct io_node *n) {
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

/* A blocking write transfers everything (a signal aside, and a parked
 * thread receives none); a non-blocking attempt may stop short when the
 * pipe or socket buffer fills. Keep going with the rest, as the blocking
 * call would have, unless the program asked for non-blocking or a timeout
 * or error ends it (then what was written is the result). sendmsg is not
 * continued: its ancillary data must not be sent twice. */
static __attribute__((noinline)) long write_rest(struct io_fd *e,
                                                 struct io_node *n, long r) {
  size_t total = 0;
  if (is_vec(n)) {
    for (int i = 0; i < n->iovcnt; i++)
      total += n->iov[i].iov_len;
  } else {
    total = n->len;
  }
  if (r <= 0 || (size_t)r >= total || (n->flags & MSG_DONTWAIT) ||
      io_fd_nonblock(e, n->fd))
    return r;
  struct iovec *copy = NULL;
  if (is_vec(n)) {
    copy = malloc(sizeof *copy * (size_t)n->iovcnt);
    if (!copy)
      return r;
    memcpy(copy, n->iov, sizeof *copy * (size_t)n->iovcnt);
  }
  struct iovec *iov = copy;
  int cnt = n->iovcnt;
  size_t done = (size_t)r;
  while (done < total) {
    if (copy) { /* skip what is written */
      size_t skip = (size_t)r;
      while (cnt > 0 && skip >= iov->iov_len) {
        skip -= iov->iov_len;
        iov++;
        cnt--;
      }
      if (cnt > 0) {
        iov->iov_base = (char *)iov->iov_base + skip;
        iov->iov_len -= skip;
      }
      n->iov = iov;
      n->iovcnt = cnt;
    } else {
      n->buf = (char *)n->buf + r;
      n->len -= (size_t)r;
    }
    r = io_call(e, n, 0);
    if (r <= 0)
      break;
    done += (size_t)r;
  }
  free(copy);
  return (long)done;
}

/* A blocking write of the write family on an FD_POLLABLE descriptor: all
 * of it (write_rest) unless the first call took it all, the usual case. */
static __attribute__((noinline)) long pollable_write(struct io_fd *e,
                                                     struct io_node *n) {
  if (n->attempt != io_attempt_write && n->attempt != io_attempt_writev &&
      n->attempt != io_attempt_sendto)
    return io_call(e, n, 0); /* sendmsg: never continued */
  long r = io_call(e, n, 0);
  if (likely(r >= 0 && (size_t)r == n->len) && n->attempt != io_attempt_writev)
    return r; /* all of it: nothing for write_rest */
  return write_rest(e, n, r);
}

static inline __attribute__((always_inline)) long do_on(struct io_fd *e, int fd,
                                                        struct io_node *n) {
  n->fd = fd;
  n->e = e;
  enum io_kind kind = atomic_load_explicit(&e->kind, memory_order_relaxed);
  if (likely(kind == FD_POLLABLE && !n->file_only)) {
    n->how = IO_HOW_NOWAIT; /* the attempt picks e->how */
    if (n->dir)
      return pollable_write(e, n);
    if (unlikely((n->flags & MSG_WAITALL) && n->attempt == io_attempt_recvfrom))
      return recv_waitall(e, n);
    return io_call(e, n, 0);
  }
  n->how = IO_HOW_PLAIN; /* a file_only call on a stream: the plain call */
  return kind == FD_FILE ? io_offload(n) : n->attempt(n);
}

static __attribute__((noinline)) long do_first(int fd, struct io_node *n,
                                               bool adopt) {
  struct io_fd *e = io_fd_get_slow(fd, adopt);
  return e ? do_on(e, fd, n) : -errno;
}

/* Inline and without a frame for a descriptor seen before (do_first: the
 * first call, which classifies it). */
long io_do(int fd, struct io_node *n, bool adopt) {
  struct io_fd *e = io_fd_known(fd);
  return likely(e) ? do_on(e, fd, n) : do_first(fd, n, adopt);
}

long io_do_at(int fd, struct io_node *n, off_t offset, bool adopt) {
  if (offset < 0)
    return -EINVAL;
  n->file_only = true;
  n->offset = offset;
  return io_do(fd, n, adopt);
}

/* ---- readiness waits ---- */

long io_timespec_ns(const struct timespec *t, int64_t *ns) {
  *ns = -1; /* none: no timeout, or one too far to matter */
  if (!t)
    return 0;
  if (t->tv_sec < 0 || t->tv_nsec < 0 || t->tv_nsec >= 1000000000L)
    return -EINVAL;
  if (t->tv_sec < INT64_MAX / 1000000000 - 1)
    *ns = (int64_t)t->tv_sec * 1000000000 + t->tv_nsec;
  return 0;
}

/* select's timeval as a timespec: EINVAL for a negative one; microseconds
 * of a second or more carry over, as Linux does. */
int io_timeval_timespec(const struct timeval *tv, struct timespec *out) {
  if (tv->tv_sec < 0 || tv->tv_usec < 0)
    return -EINVAL;
  out->tv_sec = tv->tv_sec + tv->tv_usec / 1000000;
  out->tv_nsec = (long)(tv->tv_usec % 1000000) * 1000;
  return 0;
}

static uint64_t deadline_after(int64_t ns) {
  return ns > 0 ? os_now_ns_inline() + (uint64_t)ns : 0;
}

/* Sleeps the calling thread until deadline (0: for ever). 0, or -1 when
 * interruptible and sync_interrupt ended it. */
static int sleep_until(uint64_t deadline, bool interruptible) {
  for (;;) {
    uint64_t now = os_now_ns_inline();
    if (deadline && now >= deadline)
      return 0;
    uint64_t until = deadline ? deadline : now + 1000000000ull;
    if (sync_sleep_until(until, interruptible) == ECANCELED)
      return -1;
  }
}

#define POLL_STACK_NODES 16

int io_poll_impl(struct pollfd *fds, nfds_t nfds, int64_t timeout_ns,
                 const sigset_t *mask, bool interruptible) {
  uint64_t deadline = deadline_after(timeout_ns);
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
        n->interruptible = interruptible;
        n->seq = atomic_load(d ? &e->wseq : &e->rseq);
      }
    }
    long r = ready_check_ppoll(fds, nfds, mask);
    if (r != 0) {
      result = (int)io_fail(r);
      break;
    }
    if (timeout_ns == 0 || (deadline && os_now_ns_inline() >= deadline)) {
      result = 0;
      break;
    }
    if ((count == 0 ? sleep_until(deadline, interruptible)
                    : io_wait_many(nodes, count, deadline)) < 0) {
      result = (int)io_fail(-ECANCELED);
      break;
    }
  }
  if (nodes != stack_nodes)
    free(nodes);
  return result;
}

int io_select_impl(int nfds, fd_set *r, fd_set *w, fd_set *x,
                   const struct timespec *tmo, const sigset_t *mask,
                   bool interruptible) {
  int64_t ns;
  if (nfds < 0 || nfds > FD_SETSIZE || io_timespec_ns(tmo, &ns) < 0)
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
  int n = io_poll_impl(p, (nfds_t)np, ns, mask, interruptible);
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

int io_epoll_wait_impl(int epfd, struct epoll_event *ev, int n,
                       int64_t timeout_ns, const sigset_t *mask,
                       bool interruptible) {
  uint64_t deadline = deadline_after(timeout_ns);
  for (;;) {
    struct io_fd *e = io_fd_get(epfd, false);
    struct io_node node;
    memset(&node, 0, sizeof node);
    if (e) {
      node.fd = epfd;
      node.e = e;
      node.interruptible = interruptible;
      node.seq = atomic_load(&e->rseq);
    }
    long r;
    do /* EINTR: as ready_check_ppoll */
      r = sys_epoll_pwait(epfd, ev, n, 0, mask);
    while (r == -EINTR);
    if (r != 0 || timeout_ns == 0 || !e)
      return (int)io_fail(r);
    if (deadline && os_now_ns_inline() >= deadline)
      return 0;
    if (io_wait_many(&node, 1, deadline) < 0)
      return (int)io_fail(-ECANCELED);
  }
}

/* connect has no per-call non-blocking form and no readiness to wait for
 * before it: a blocking one (the program's socket is blocking, and swarm
 * does not change that) runs on the offload pool's kernel thread while
 * the thread parks; the kernel honours SO_SNDTIMEO itself. A socket the
 * program made non-blocking gets the kernel's EINPROGRESS, as it asked. */
int io_connect_impl(int fd, const struct sockaddr *a, socklen_t al,
                    bool adopt) {
  struct io_fd *e = io_fd_get(fd, adopt);
  if (!e)
    return (int)io_fail(-errno);
  if (atomic_load(&e->kind) != FD_POLLABLE || !worker_current() ||
      io_fd_nonblock(e, fd))
    return (int)io_fail(sys_connect(fd, a, al));
  struct io_node node;
  memset(&node, 0, sizeof node);
  node.fd = fd;
  node.e = e;
  node.dir = 1;
  node.attempt = io_attempt_connect;
  node.caddr = a;
  node.caddrlen = al;
  return (int)io_fail(io_offload_blocking(&node));
}

/* ---- the native API ---- */

#define NODE(...)                                                              \
  _Alignas(64) struct io_node n;                                               \
  memset(&n, 0, sizeof n);                                                     \
  __VA_ARGS__

ssize_t swarm_read(int fd, void *buf, size_t count) {
  NODE(n.attempt = io_attempt_read; n.buf = buf; n.len = count;)
  return io_fail(io_do(fd, &n, true));
}

/* swarm_write on a socket already seen to take MSG_DONTWAIT: io_do's
 * steps without the node until one is needed. The same system calls: the
 * counter is read before the attempt (io_call's), a complete write or an
 * error is the result, EAGAIN goes on to io_call's wait with that counter,
 * a short write to write_rest. */
static __attribute__((noinline)) long
write_known(struct io_fd *e, int fd, const void *buf, size_t count) {
  uint32_t seq = atomic_load(&e->wseq), gen = atomic_load(&e->gen);
  long r = sys_sendto(fd, buf, count, MSG_DONTWAIT, NULL, 0);
  if (likely(r == (long)count) || (r < 0 && r != -EAGAIN))
    return r;
  NODE(n.attempt = io_attempt_write; n.buf = (void *)buf; n.len = count;
       n.dir = 1; n.fd = fd; n.e = e; n.how = IO_HOW_NOWAIT_OK;)
  if (r == -EAGAIN) {
    n.seq = seq;
    r = io_call_after_eagain(e, &n, gen);
    if (r >= 0 && (size_t)r == count)
      return r;
  }
  return write_rest(e, &n, r);
}

ssize_t swarm_write(int fd, const void *buf, size_t count) {
  struct io_fd *e = io_fd_known(fd);
  if (likely(e) && count &&
      atomic_load_explicit(&e->kind, memory_order_relaxed) == FD_POLLABLE &&
      e->socket &&
      atomic_load_explicit(&e->how[1], memory_order_relaxed) ==
          IO_HOW_NOWAIT_OK)
    return io_fail(write_known(e, fd, buf, count));
  NODE(n.attempt = io_attempt_write; n.buf = (void *)buf; n.len = count;
       n.dir = 1;)
  return io_fail(io_do(fd, &n, true));
}

ssize_t swarm_pread(int fd, void *buf, size_t count, off_t offset) {
  NODE(n.attempt = io_attempt_pread; n.buf = buf; n.len = count;)
  return io_fail(io_do_at(fd, &n, offset, true));
}

ssize_t swarm_pwrite(int fd, const void *buf, size_t count, off_t offset) {
  NODE(n.attempt = io_attempt_pwrite; n.buf = (void *)buf; n.len = count;
       n.dir = 1;)
  return io_fail(io_do_at(fd, &n, offset, true));
}

ssize_t swarm_preadv(int fd, const struct iovec *iov, int iovcnt,
                     off_t offset) {
  NODE(n.attempt = io_attempt_preadv; n.iov = iov; n.iovcnt = iovcnt;)
  return io_fail(io_do_at(fd, &n, offset, true));
}

ssize_t swarm_pwritev(int fd, const struct iovec *iov, int iovcnt,
                      off_t offset) {
  NODE(n.attempt = io_attempt_pwritev; n.iov = iov; n.iovcnt = iovcnt;
       n.dir = 1;)
  return io_fail(io_do_at(fd, &n, offset, true));
}

int swarm_fsync(int fd) {
  NODE(n.attempt = io_attempt_fsync; n.file_only = true;)
  return (int)io_fail(io_do(fd, &n, true));
}

int swarm_fdatasync(int fd) {
  NODE(n.attempt = io_attempt_fdatasync; n.file_only = true;)
  return (int)io_fail(io_do(fd, &n, true));
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
  return io_poll_impl(fds, nfds, io_ms_to_ns(timeout_ms), NULL, false);
}

int swarm_ppoll(struct pollfd *fds, nfds_t nfds, const struct timespec *tmo,
                const sigset_t *sigmask) {
  int64_t ns;
  if (io_timespec_ns(tmo, &ns) < 0)
    return (int)io_fail(-EINVAL);
  return io_poll_impl(fds, nfds, ns, sigmask, false);
}

int swarm_select(int nfds, fd_set *readfds, fd_set *writefds, fd_set *exceptfds,
                 struct timeval *timeout) {
  struct timespec ts, *tp = NULL;
  if (timeout) {
    if (io_timeval_timespec(timeout, &ts) < 0)
      return (int)io_fail(-EINVAL);
    tp = &ts;
  }
  return io_select_impl(nfds, readfds, writefds, exceptfds, tp, NULL, false);
}

int swarm_epoll_wait(int epfd, struct epoll_event *events, int maxevents,
                     int timeout_ms) {
  return io_epoll_wait_impl(epfd, events, maxevents, io_ms_to_ns(timeout_ms),
                            NULL, false);
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
