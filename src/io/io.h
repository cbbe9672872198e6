/*
 * io/io.h — the I/O layer's internal interface: the descriptor table, the
 * waits threads park in, and the calls themselves (used by the io sources
 * and by the drop-in's interposers, pthread/io.c). System calls are made
 * through os/sys.h (sys_read, ...: never an interposed libc symbol, results
 * as -errno).
 *
 * Concepts (src/io/poller.c has the design and the races):
 *  - struct io_fd: what swarm knows about one descriptor number: its kind,
 *    how a call on it is made non-blocking (per call: RWF_NOWAIT or
 *    MSG_DONTWAIT; or "readiness first, then the call"), whether and where
 *    it is registered in an epoll, two readiness sequence counters (rseq,
 *    wseq: edges seen for reading and writing) and two FIFO lists of
 *    waiting nodes. Guarded by its spinlock; the table never frees
 *    entries, a close bumps `gen`. swarm never changes the file's
 *    O_NONBLOCK flag: it belongs to the open file description, which
 *    other processes share, so the kernel's flag is always the program's.
 *  - struct io_wait: one parked thread's wait (on one or several fds), with
 *    `fired`, the one word whose 0 -> 1 transition decides who wakes the
 *    thread (a poller that completed its call, a timer, a close).
 *  - struct io_node: the thread's entry in one fd's list; carries the call
 *    a poller performs for it (attempt), or none for a pure readiness wait;
 *    a call made "readiness first" (how == IO_HOW_READY) is never performed
 *    by a poller (it might block): its thread is woken to make it itself.
 */
#ifndef SWARM_IO_INTERNAL_H
#define SWARM_IO_INTERNAL_H

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "core/core.h"
#include "os/sys.h"

enum io_kind {
  FD_UNKNOWN = 0, /* not looked at yet (or closed) */
  FD_POLLABLE,    /* calls made non-blocking per call, waits in epoll */
  FD_FILE,        /* regular file or block device: offloaded */
  FD_PASS,        /* left alone: calls go straight to the kernel */
};

/* How a read/write-family call on an FD_POLLABLE descriptor is made
 * without blocking (struct io_fd's `how`, copied into the node). */
enum io_how {
  IO_HOW_PLAIN = 0, /* the plain system call (FD_FILE, FD_PASS, the pool) */
  IO_HOW_NOWAIT,    /* preadv2/pwritev2(..., -1, RWF_NOWAIT): not tried yet */
  IO_HOW_NOWAIT_OK, /* RWF_NOWAIT seen to work on this file */
  IO_HOW_READY,     /* no per-call form (FIFOs opened by name, terminals,
                     * listening sockets): a zero-timeout poll first, the
                     * plain call only if it says ready; serialized per
                     * direction within the process by io_fd.busy */
};

struct io_node;

/* One line (64 bytes, aligned): what a round trip reads and writes (the
 * lookup's kind, the attempt's how and socket, the counters, the drained
 * hint, the cached flags, the wait lists) is one cache line per
 * descriptor; at 96 bytes it was two (docs/io.md, "Cache footprint").
 * Each wait list is doubly linked through its nodes, the head's prev
 * naming the tail (poller.c's node_link): no tail pointers. The socket
 * timeouts, read only when the cached flags say one is set, are apart
 * (io_fd_timeo). */
struct io_fd {
  _Alignas(64) struct spinlock lock; /* LOCK_IO_FD */
  _Atomic uint32_t gen;   /* bumped by close: stale epoll events are dropped */
  _Atomic uint8_t kind;   /* enum io_kind; set under lock, read without */
  _Atomic uint8_t how[2]; /* enum io_how of read/readv, write/writev */
  bool registered;        /* in io_workers[owner]'s epoll */
  bool socket;
  bool fifo;          /* pipe or FIFO: READY writes go PIPE_BUF at a time */
  bool stream;        /* a byte stream (SOCK_STREAM socket, pipe, FIFO): a short
                       * read drained it (io_call's drained hint) */
  _Atomic bool ended; /* a poller saw hang-up or error: no drained
                       * hint */
  _Atomic uint32_t rseq, wseq; /* readiness edges seen, per direction */
  _Atomic uint32_t drained;    /* rseq + 1 when a read came back short with
                                * rseq at that value; 0: nothing known */
  _Atomic bool ring_short;     /* ringread.c: the last read came back short */
  _Atomic uint8_t busy[2];     /* IO_HOW_READY: a check-then-call in progress */
  /* What the kernel said of the open file's O_NONBLOCK and the socket's
   * SO_RCVTIMEO / SO_SNDTIMEO, cached while io_fd_opts_watch() is in
   * force (the drop-in sees every call that changes them): the global
   * epoch it was read at (low 32 bits) and IO_OPTS_* bits; 0: unknown.
   * io_fd_timeo(fd)[d]: the timeout in ns when IO_OPTS_TIMEO(d) is set. */
  _Atomic uint64_t opts;
  struct io_node *head[2]; /* [0] readers, [1] writers */
  int16_t owner;
};
_Static_assert(sizeof(struct io_fd) == 64, "struct io_fd: one cache line");

struct io_wait {
  _Atomic int fired;     /* 1 while disarmed or once claimed */
  _Atomic int timed_out; /* set by the timer before it tries to claim */
  _Atomic int timer_done;
  _Atomic int interrupted; /* set by sync_interrupt's hook before it claims */
  bool has_timer;
  bool closed;      /* claimed by close: EBADF */
  bool completed;   /* claimed by a poller whose attempt finished */
  long result;      /* the attempt's result (>= 0 or -errno) */
  uint32_t revents; /* pure waits: the epoll events seen */
  struct swarm_thread *thread;
  struct swarm_timer timer;
};

/* What ended a park that did not complete: -EBADF (a close claimed it),
 * -ECANCELED (an interruption), -EAGAIN (its deadline), or 0 (a wake-up
 * with nothing to say: the caller tries again). */
static inline long io_wait_failure(struct io_wait *wt, uint64_t deadline) {
  if (wt->closed)
    return -EBADF;
  if (atomic_load(&wt->interrupted))
    return -ECANCELED;
  if (deadline && atomic_load(&wt->timed_out))
    return -EAGAIN;
  return 0;
}

/* The first line (64 bytes) holds what a poller touches when it performs
 * the call: edge_walk's walk, the attempt's arguments, the unlink, the
 * claimed list (ready_next shares prev: a node on it is unlinked); the
 * rest is read by the thread itself, around its park. The native and
 * drop-in calls' nodes (NODE) are line-aligned on the stack, so a poller
 * misses one line of a parked node, not three (docs/io.md). */
struct io_node {
  struct io_node *next;
  union {
    struct io_node *prev;       /* linked */
    struct io_node *ready_next; /* unlinked: a poller's list of claimed nodes */
  };
  struct io_wait *wait;
  struct io_fd *e;
  /* the call to perform (NULL: a pure readiness wait) and its arguments */
  long (*attempt)(struct io_node *);
  void *buf;
  size_t len;
  int fd;
  uint8_t dir; /* 0 read, 1 write */
  uint8_t how; /* enum io_how the attempt used (IO_HOW_READY: never
                * performed by a poller; its thread is woken instead) */
  bool linked; /* in e's list (under e->lock) */
  bool ring;   /* ringread.c: the recv goes (or went) to ring_iw */
  /* ---- */
  uint32_t seq;       /* e's sequence counter when the attempt said EAGAIN */
  bool interruptible; /* the drop-in's cancellation may end the wait:
                       * io_call then returns -ECANCELED */
  bool file_only;     /* pread/pwrite/fsync families: offloaded on a file,
                       * otherwise the plain call (a stream answers ESPIPE
                       * or EINVAL at once: nothing to wait for) */
  off_t offset;       /* the positional calls' file offset (>= 0) */
  int flags;
  const struct iovec *iov;
  int iovcnt;
  struct msghdr *msg;
  struct sockaddr *addr;
  socklen_t *addrlen;
  const struct sockaddr *caddr;
  socklen_t caddrlen;
  /* a read performed by the ring (ringread.c): seq then holds e's gen */
  bool ring_first;        /* the stream was drained: the kernel polls first */
  _Atomic int ring_state; /* enum in ringread.c */
  long ring_res;          /* the recv's result, once ring_state says done */
  struct io_worker *ring_iw;
};
_Static_assert(__builtin_offsetof(struct io_node, seq) == 64,
               "struct io_node: a poller's fields fill the first line");
/* The attempt runs in a poller, under e->lock (edge_walk): it must not
 * block (rw). Per kernel thread: a poller runs the attempts itself. */
extern __thread bool io_in_poller __attribute__((tls_model("initial-exec")));

/* errno of the running kernel thread, safe across a switch */
static inline long io_fail(long r) {
  if (r < 0) {
    *os_errno_location() = (int)-r;
    return -1;
  }
  return r;
}

/* ---- the descriptor table (poller.c) ---- */
/* Chunks of entries, each made on first use of one of its numbers and
 * never freed (written only by poller.c). */
#define IO_FD_CHUNK_SHIFT 12
#define IO_FD_CHUNK ((uint32_t)1 << IO_FD_CHUNK_SHIFT)
#define IO_FD_MAX_CHUNKS 1024 /* 4M descriptors */
/* A chunk is IO_FD_CHUNK entries followed by as many of these, the parts
 * of an entry no round trip touches. */
struct io_fd_cold {
  _Atomic int64_t timeo[2]; /* see io_fd.opts (written by io/opts.c) */
};
extern _Atomic(struct io_fd *) io_fd_chunks[IO_FD_MAX_CHUNKS];
struct io_fd *io_fd_chunk_make(uint32_t c); /* (fdtable.c) */
struct io_fd *io_fd_get_slow(int fd, bool adopt);
/* The entry for fd if its chunk is made, else NULL (also for fd < 0). */
static inline struct io_fd *io_fd_entry_made(uint32_t fd) {
  if (unlikely(fd >= IO_FD_CHUNK * IO_FD_MAX_CHUNKS))
    return NULL; /* negative too */
  struct io_fd *chunk = atomic_load_explicit(
      &io_fd_chunks[fd >> IO_FD_CHUNK_SHIFT], memory_order_acquire);
  return chunk ? &chunk[fd & (IO_FD_CHUNK - 1)] : NULL;
}
/* The entry for fd (NULL only for fd < 0 or out of memory). */
static inline struct io_fd *io_fd_entry(int fd) {
  struct io_fd *e = io_fd_entry_made((uint32_t)fd);
  if (likely(e) || (uint32_t)fd >= IO_FD_CHUNK * IO_FD_MAX_CHUNKS)
    return e;
  struct io_fd *chunk = io_fd_chunk_make((uint32_t)fd >> IO_FD_CHUNK_SHIFT);
  return chunk ? &chunk[(uint32_t)fd & (IO_FD_CHUNK - 1)] : NULL;
}
/* Hints for a poller about to hand a batch of events to io_deliver:
 * io_prefetch_entry fetches the entry a token names (all of a batch's at
 * once), io_prefetch_waiter, once that entry is in the cache, the node of
 * its first parked reader (on that thread's stack), both while an earlier
 * event's call runs. With thousands of connections each would otherwise be
 * a wait on memory (docs/io.md, "Prefetching"). The node is only fetched,
 * never read (it may be leaving its list: the read of head is unlocked);
 * a token that names no entry (the wake-up token, a chunk never made)
 * fetches nothing. */
static inline void io_prefetch_entry(uint64_t token) {
  struct io_fd *e = io_fd_entry_made((uint32_t)token);
  if (e)
    __builtin_prefetch(e);
}
static inline void io_prefetch_waiter(uint64_t token) {
  struct io_fd *e = io_fd_entry_made((uint32_t)token);
  struct io_node *n = e ? __atomic_load_n(&e->head[0], __ATOMIC_RELAXED) : NULL;
  if (n)
    __builtin_prefetch(n);
}

/* The entry, its kind decided (fstat) on first use: sockets, pipes, FIFOs
 * and anonymous inodes (eventfd, timerfd, ...) are waited for in epoll;
 * character devices (terminals) too if adopt (the native API), otherwise
 * left alone (the drop-in: a blocking read on a terminal must still stop a
 * background job with SIGTTIN). NULL with errno on a bad descriptor.
 * Inline: an entry already made and classified (every call but the
 * first) is two loads (io_fd_known, NULL otherwise); the rest is
 * io_fd_get_slow. */
/* The cold part of fd's entry (which exists: the caller holds it). */
static inline struct io_fd_cold *io_fd_cold_of(int fd) {
  struct io_fd *chunk = atomic_load_explicit(
      &io_fd_chunks[(uint32_t)fd >> IO_FD_CHUNK_SHIFT], memory_order_acquire);
  return (struct io_fd_cold *)(chunk + IO_FD_CHUNK) +
         ((uint32_t)fd & (IO_FD_CHUNK - 1));
}
static inline _Atomic int64_t *io_fd_timeo(int fd) {
  return io_fd_cold_of(fd)->timeo;
}
static inline struct io_fd *io_fd_known(int fd) {
  if (likely((uint32_t)fd < IO_FD_CHUNK * IO_FD_MAX_CHUNKS)) {
    struct io_fd *chunk = atomic_load_explicit(
        &io_fd_chunks[(uint32_t)fd >> IO_FD_CHUNK_SHIFT], memory_order_acquire);
    if (likely(chunk)) {
      struct io_fd *e = &chunk[(uint32_t)fd & (IO_FD_CHUNK - 1)];
      if (likely(atomic_load_explicit(&e->kind, memory_order_acquire)))
        return e;
    }
  }
  return NULL; /* not yet: io_fd_get_slow */
}
static inline struct io_fd *io_fd_get(int fd, bool adopt) {
  struct io_fd *e = io_fd_known(fd);
  return likely(e) ? e : io_fd_get_slow(fd, adopt);
}
/* Forgets what the entry of a descriptor number just created by an
 * intercepted or native call knew (a stale entry, if its old file was
 * closed behind swarm's back), and classifies it afresh. */
void io_fd_created(int fd);
/* What is known of O_NONBLOCK and the socket timeouts (io/opts.c). */
struct io_opts_state {
  _Atomic uint32_t epoch; /* moved by io_fd_opts_changed */
  _Atomic bool watched;   /* io_fd_opts_watch: io_fd.opts may be kept */
};
extern struct io_opts_state io_opts;
#define IO_OPTS_VALID (1ull << 32)
#define IO_OPTS_NONBLOCK (1ull << 33)
#define IO_OPTS_TIMEO(d) (1ull << (34 + (d)))

/* e's cached word if it holds for the current epoch, or 0. */
static inline uint64_t io_fd_opts_cached(struct io_fd *e) {
  if (!atomic_load_explicit(&io_opts.watched, memory_order_relaxed))
    return 0;
  uint32_t epoch = atomic_load_explicit(&io_opts.epoch, memory_order_acquire);
  uint64_t w = atomic_load_explicit(&e->opts, memory_order_acquire);
  return (w & IO_OPTS_VALID) && (uint32_t)w == epoch ? w : 0;
}
/* The kernel's answers (and, when watched, kept in e). */
bool io_fd_nonblock_ask(struct io_fd *e, int fd);
int64_t io_fd_timeout_ask(struct io_fd *e, int fd, int dir);

/* Whether the open file has O_NONBLOCK (set by the program: swarm never
 * sets it). Asked of the kernel (F_GETFL), since dups and other processes
 * share it; under io_fd_opts_watch, the answer is kept in e until any
 * io_fd_opts_changed or until fd is closed or created anew. */
static inline bool io_fd_nonblock(struct io_fd *e, int fd) {
  uint64_t w = io_fd_opts_cached(e);
  return w ? (w & IO_OPTS_NONBLOCK) != 0 : io_fd_nonblock_ask(e, fd);
}
/* The socket's SO_RCVTIMEO (dir 0) or SO_SNDTIMEO (dir 1) in ns, or -1
 * for none (or not a socket); cached as io_fd_nonblock. */
static inline int64_t io_fd_timeout(struct io_fd *e, int fd, int dir) {
  if (!e->socket)
    return -1;
  uint64_t w = io_fd_opts_cached(e);
  if (!w)
    return io_fd_timeout_ask(e, fd, dir);
  return w & IO_OPTS_TIMEO(dir)
             ? atomic_load_explicit(&io_fd_timeo(fd)[dir], memory_order_relaxed)
             : -1;
}
/* From now on every change of O_NONBLOCK and of the socket timeouts this
 * process makes goes through io_fd_opts_changed (the drop-in's fcntl,
 * ioctl and setsockopt): io_fd_nonblock and io_fd_timeout may keep what
 * the kernel said. Without it (the native API) they ask every time. */
void io_fd_opts_watch(void);
/* Some descriptor's O_NONBLOCK or socket timeout may have changed (F_SETFL,
 * FIONBIO, setsockopt at SOL_SOCKET): forget every cached answer (one
 * epoch for all: a flag set through a dup changes every copy). */
void io_fd_opts_changed(void);
/* A check-then-call (IO_HOW_READY) on direction dir of e finished and may
 * have consumed readiness or left some: wake the next waiter to look. */
void io_fd_kick(struct io_fd *e, int dir);
/* fd stops naming its file: op(fd, arg) (the close, or the dup3 that
 * replaces it) runs under the entry's lock after the epoll registration is
 * removed; then waiters get EBADF. Returns op's result (-errno). */
long io_fd_forget_with(int fd, long (*op)(int, void *), void *arg);
long io_fd_close(int fd); /* io_fd_forget_with the close system call */

/* Runs the attempt in n with blocking semantics for the calling thread:
 * returns its result (>= 0 or -errno). timeout_ns < 0: none; 0: read
 * SO_RCVTIMEO / SO_SNDTIMEO for a socket. On timeout returns -EAGAIN; if
 * n->interruptible and sync_interrupt ended the wait, -ECANCELED (a call
 * the poller completed first returns its result: nothing is lost); if the
 * descriptor was closed (or replaced by dup2) since the call began,
 * -EBADF, parked or not, without trying the number again. */
long io_call(struct io_fd *e, struct io_node *n, int64_t timeout_ns);
/* io_call (no timeout given, not a ring read) after its first attempt was
 * made by the caller and said EAGAIN, n->seq and e->gen (gen) read before
 * it. */
long io_call_after_eagain(struct io_fd *e, struct io_node *n, uint32_t gen);
/* Parks until one of nodes[0..count) (pure waits, fd/dir/e set) sees an
 * edge, or the deadline (CLOCK_MONOTONIC, 0 = none) passes. Returns 1
 * (readiness or closed), 0 on timeout, -1 when nodes[0].interruptible and
 * sync_interrupt ended the wait. */
int io_wait_many(struct io_node *nodes, int count, uint64_t deadline);
/* Makes sure e (descriptor fd) is in an epoll. false: epoll refuses it. */
bool io_fd_register(struct io_fd *e, int fd);
/* The parking protocol's pieces, for ringread.c: a wait's claim (ARMED ->
 * CLAIMED), the park of io_call and io_wait_many (nodes linked by the
 * commit, a timer for deadline, the drop-in's interruption), the count of
 * parked threads that keeps pollers polling, and the running worker's
 * poller if its back end performs reads in the ring (NULL otherwise). */
bool io_wait_claim(struct io_wait *wt);
/* poller.c's steps for fdtable.c's close paths: unlink a node (under the
 * entry's lock), ready claimed nodes' threads (after it), a poller. */
void io_node_unlink(struct io_fd *e, struct io_node *n);
void io_ready_all(struct io_node *done);
struct io_worker *io_worker_at(int idx);
void io_park_on(struct io_node *nodes, int count, struct io_wait *wt,
                uint64_t deadline);
void io_waiting_add(int delta);
struct io_worker *io_ring_here(void);

/* ---- reads performed by the ring (ringread.c) ---- */
#define IO_RING_RETRY (-(long)0x7fffffff) /* io_ring_read: try again */
/* Set (once, for good) when the back end chosen performs reads in the
 * ring (->recv): until then no read asks io_ring_eligible (with epoll, a
 * read's ring check costs this one load). */
extern _Atomic bool io_ring_reads;
/* Whether n (a plain read or recv of a stream socket) may be performed by
 * the ring of the running worker; sets n->ring_iw. */
bool io_ring_eligible(struct io_fd *e, struct io_node *n);
static inline bool io_ring_wanted(struct io_fd *e, struct io_node *n) {
  return n->dir == 0 &&
         unlikely(atomic_load_explicit(&io_ring_reads, memory_order_relaxed)) &&
         io_ring_eligible(e, n);
}
/* Parks the thread on an IORING_OP_RECV into its buffer, queued in the
 * park's commit (io_ring_submit) if e's generation is still gen; returns
 * its result (data is never dropped, even on timeout, close or
 * interruption), -EAGAIN (deadline), -EBADF (closed), -ECANCELED
 * (interrupted), or IO_RING_RETRY (n->ring false: never again). */
long io_ring_read(struct io_fd *e, struct io_node *n, uint64_t deadline,
                  uint32_t gen, bool drained);
/* The commit's part (under e->lock, gen checked): queues n's recv. */
bool io_ring_submit(struct io_node *n);
/* A read of e came back with r: keeps the short-read hint. */
void io_ring_note(struct io_fd *e, const struct io_node *n, long r);

/* ---- offload of regular-file calls (offload.c) ---- */
/* Runs n->attempt on a pool kernel thread while the caller parks (from a
 * worker); runs it in place otherwise. */
long io_offload(struct io_node *n);
/* Runs n->attempt, a call that may block, on a pool kernel thread while
 * the caller parks (connect on a blocking socket); in place if the caller
 * is not a worker. */
long io_offload_blocking(struct io_node *n);

/* ---- the calls' attempts (calls.c) ---- */
long io_attempt_read(struct io_node *n);
long io_attempt_write(struct io_node *n);
long io_attempt_readv(struct io_node *n);
long io_attempt_writev(struct io_node *n);
long io_attempt_recvfrom(struct io_node *n);
long io_attempt_sendto(struct io_node *n);
long io_attempt_recvmsg(struct io_node *n);
long io_attempt_sendmsg(struct io_node *n);
long io_attempt_accept(struct io_node *n);
long io_attempt_connect(struct io_node *n); /* blocking: for the pool */
/* positional and sync calls (n->file_only): plain system calls, run on the
 * offload pool for files; pread/pwrite(v) try the page cache first */
long io_attempt_pread(struct io_node *n);
long io_attempt_pwrite(struct io_node *n);
long io_attempt_preadv(struct io_node *n);
long io_attempt_pwritev(struct io_node *n);
long io_attempt_fsync(struct io_node *n);
long io_attempt_fdatasync(struct io_node *n);

/* Shared by the native API and the drop-in: one blocking-semantics call on
 * fd through the right path (epoll wait, offload, or straight through). */
long io_do(int fd, struct io_node *n, bool adopt);
/* The positional calls (pread/pwrite/preadv/pwritev, given as attempt with
 * buf/len or iov/iovcnt): EINVAL for a negative offset, as the kernel
 * checks first; then io_do. */
long io_do_at(int fd, struct io_node *n, off_t offset, bool adopt);
/* The readiness waits. interruptible (the drop-in's cancellation points):
 * sync_interrupt ends them with -1 and errno ECANCELED. */
int io_poll_impl(struct pollfd *fds, nfds_t nfds, int64_t timeout_ns,
                 const sigset_t *mask, bool interruptible);
int io_connect_impl(int fd, const struct sockaddr *a, socklen_t al, bool adopt);
/* timeout_ns < 0: none. mask (may be NULL) applies to the readiness checks
 * only: a parked swarm thread receives no signals. */
int io_epoll_wait_impl(int epfd, struct epoll_event *ev, int n,
                       int64_t timeout_ns, const sigset_t *mask,
                       bool interruptible);
/* tmo NULL: none; EINVAL unless 0 <= tv_nsec < 1e9 and tv_sec >= 0. */
int io_select_impl(int nfds, fd_set *r, fd_set *w, fd_set *x,
                   const struct timespec *tmo, const sigset_t *mask,
                   bool interruptible);
/* A poll-style timeout as nanoseconds in *ns (-1: none, for NULL or one
 * too far to matter): 0, or -EINVAL unless tv_sec >= 0 and
 * 0 <= tv_nsec < 1e9. */
long io_timespec_ns(const struct timespec *t, int64_t *ns);
/* select's timeval as a timespec (0), or -EINVAL for a negative one. */
int io_timeval_timespec(const struct timeval *tv, struct timespec *out);
/* milliseconds (< 0: none) as the ns the impls take */
static inline int64_t io_ms_to_ns(int ms) {
  return ms < 0 ? -1 : (int64_t)ms * 1000000;
}

#endif
