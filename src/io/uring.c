/*
 * io/uring.c — the io_uring back end of the poller (io/backend.h), built
 * when CMake found liburing (SWARM_HAVE_URING). One ring per worker; each
 * registered descriptor has one multishot poll (IORING_POLL_ADD_MULTI,
 * edge-triggered as io_uring polls are unless asked for IORING_POLL_ADD_
 * LEVEL) whose completions carry the entry's token and the poll mask; the
 * wake-up eventfd has one too (token IO_WAKE_TOKEN). The poller still
 * performs most parked calls itself (poller.c): the ring says which
 * descriptors woke up, as epoll did; but a parked read of a stream socket
 * is an IORING_OP_RECV into its thread's buffer (io/ringread.c; ->recv,
 * unless SWARM_URING_RECV=0 or the kernel lacks the opcode), whose
 * completion (user data IO_RING_OP_TAG | node) goes to io_ring_done.
 *
 * What it changes against epoll:
 *  - an empty poll reads the completion ring's tail in memory: no system
 *    call (so no back-off is needed in hook_poll);
 *  - a registration is an SQE left in the submission ring when the owning
 *    worker makes it; it goes to the kernel with the owner's next
 *    io_uring_enter (its next poll point or sleep), batched with any
 *    others made meanwhile. Late is safe: a poll armed on a file that is
 *    already ready completes at once, so the edge is delivered anyway;
 *  - the wake-up eventfd is never drained: every write wakes its wait
 *    queue, and each wake-up is a completion.
 *
 * liburing comes from its archive, inside the runtime's object
 * (src/CMakeLists.txt): under the drop-in, code outside the runtime is the
 * program's and may be preempted, and a worker switched away inside
 * io_uring_submit would keep sq_lock.
 *
 * Races kept here:
 *  - several kernel threads use one ring (the owner, spares and the
 *    monitor poll it; any thread registers or removes): the submission
 *    side is under sq_lock, the completion side under cq_lock, which is
 *    held only while completions are copied out (never while they are
 *    delivered, which takes descriptor locks). The owner sleeps in
 *    io_uring_enter holding neither.
 *  - a poll holds a reference to its file: a close must cancel it at once
 *    and for sure, or the socket would stay open in the kernel and its peer
 *    never see the end of the stream. An asynchronous POLL_REMOVE is not
 *    sure (EALREADY while the poll is completing leaves it armed:
 *    dropin_nonblock_child hung there), so the close cancels synchronously
 *    (IORING_REGISTER_SYNC_CANCEL, which retries), after submitting any
 *    add still queued.
 *  - a multishot poll that ends (its completion lacks IORING_CQE_F_MORE: a
 *    full completion ring, or a cancellation the kernel made) is armed
 *    again by io_rearm if its descriptor is still registered under the same
 *    generation, and its last events are delivered as an edge (an extra
 *    edge costs one call that says EAGAIN, never a lost wake-up).
 */
#include <liburing.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>

#include "io/backend.h"
#include "io/io.h"

#define SQ_ENTRIES 256
#define CQ_ENTRIES 16384
#define POLL_EVENTS (POLLIN | POLLOUT | POLLRDHUP | POLLPRI)

struct uring {
  struct io_uring ring;
  struct spinlock sq_lock;  /* LOCK_IO_RING: get_sqe, submit */
  struct spinlock cq_lock;  /* LOCK_IO_RING: reaping */
  _Atomic unsigned pending; /* SQEs queued, not yet submitted */
};

/* An SQE of u (under sq_lock); submits to make room if the ring is full. */
static struct io_uring_sqe *sqe_get(struct uring *u) {
  struct io_uring_sqe *sqe = io_uring_get_sqe(&u->ring);
  if (!sqe) {
    io_uring_submit(&u->ring);
    atomic_store_explicit(&u->pending, 0, memory_order_relaxed);
    sqe = io_uring_get_sqe(&u->ring);
  }
  return sqe;
}

/* Under sq_lock. */
static void submit_now(struct uring *u) {
  io_uring_submit(&u->ring);
  atomic_store_explicit(&u->pending, 0, memory_order_relaxed);
}

static void prep_poll(struct io_uring_sqe *sqe, int fd, uint64_t token,
                      unsigned events) {
  io_uring_prep_poll_multishot(sqe, fd, events);
  io_uring_sqe_set_data64(sqe, token);
}

static int ur_setup(struct io_uring *ring, unsigned *features) {
  struct io_uring_params p;
  memset(&p, 0, sizeof p);
  /* COOP_TASKRUN: a poll's completion is posted by task work on the
   * worker that armed it; by default the kernel interrupts that worker
   * (an IPI) for it, cooperative mode leaves it to its next entry into the
   * kernel or return from an interrupt (a worker that computes sees the
   * next timer tick), and TASKRUN_FLAG tells a poller reading the ring to
   * enter. Measured: fewer round trips lost to interrupts (docs/io.md). */
  p.flags = IORING_SETUP_CQSIZE | IORING_SETUP_CLAMP |
            IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG;
  p.cq_entries = CQ_ENTRIES;
  int r = io_uring_queue_init_params(SQ_ENTRIES, ring, &p);
  if (r == 0)
    *features = p.features;
  return r;
}

static int ur_open(struct io_worker *iw) {
  struct uring *u = calloc(1, sizeof *u);
  if (!u)
    return -ENOMEM;
  unsigned features = 0;
  int r = ur_setup(&u->ring, &features);
  if (r < 0) {
    free(u);
    return r;
  }
  int evfd = (int)sys_eventfd2(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (evfd < 0) {
    io_uring_queue_exit(&u->ring);
    free(u);
    return evfd;
  }
  spin_init(&u->sq_lock, LOCK_IO_RING);
  spin_init(&u->cq_lock, LOCK_IO_RING);
  prep_poll(io_uring_get_sqe(&u->ring), evfd, IO_WAKE_TOKEN, POLLIN);
  r = io_uring_submit(&u->ring);
  if (r != 1) { /* no wake-up: a sleeping owner would never be woken */
    sys_close(evfd);
    io_uring_queue_exit(&u->ring);
    free(u);
    return r < 0 ? r : -EIO;
  }
  iw->fd = u->ring.ring_fd;
  iw->evfd = evfd;
  iw->priv = u;
  return 0;
}

static void ur_drop(struct io_worker *iw) {
  struct uring *u = iw->priv;
  /* the mappings are the parent's too (MAP_SHARED): unmapping ours and
   * closing our descriptor leaves the parent's ring alone */
  io_uring_queue_exit(&u->ring);
  sys_close(iw->evfd);
  free(u);
  iw->priv = NULL;
}

/* The owner submits it with its next poll or sleep (batched with any
 * other made meanwhile); anyone else at once, since the owner may sleep. */
static long ur_add(struct io_worker *iw, int fd, uint64_t token, bool owner) {
  struct uring *u = iw->priv;
  spin_lock(&u->sq_lock);
  struct io_uring_sqe *sqe = sqe_get(u);
  if (!sqe) {
    spin_unlock(&u->sq_lock);
    return -EBUSY;
  }
  prep_poll(sqe, fd, token, POLL_EVENTS);
  atomic_fetch_add_explicit(&u->pending, 1, memory_order_relaxed);
  if (!owner)
    submit_now(u);
  spin_unlock(&u->sq_lock);
  return 0;
}

/* Queued like a registration by the owner: it goes in with the worker's
 * next poll or sleep, batched. */
static int ur_recv(struct io_worker *iw, struct io_node *n, bool poll_first) {
  struct uring *u = iw->priv;
  spin_lock(&u->sq_lock);
  struct io_uring_sqe *sqe = sqe_get(u);
  if (!sqe) {
    spin_unlock(&u->sq_lock);
    return -EBUSY;
  }
  io_uring_prep_recv(sqe, n->fd, n->buf, n->len, 0);
  if (poll_first) /* drained: the kernel's first try would say EAGAIN */
    sqe->ioprio |= IORING_RECVSEND_POLL_FIRST;
  io_uring_sqe_set_data64(sqe, IO_RING_OP_TAG | (uint64_t)(uintptr_t)n);
  atomic_fetch_add_explicit(&u->pending, 1, memory_order_relaxed);
  spin_unlock(&u->sq_lock);
  return 0;
}

/* Cancels the request with user_data and returns once the kernel has
 * ended it: 0, or -ENOENT if there was none. */
static int sync_cancel(struct io_uring *ring, uint64_t user_data) {
  struct io_uring_sync_cancel_reg reg;
  memset(&reg, 0, sizeof reg);
  reg.addr = user_data;
  reg.fd = -1;
  reg.timeout.tv_sec = reg.timeout.tv_nsec = -1;
  return io_uring_register_sync_cancel(ring, &reg);
}

static void ur_flush(struct io_worker *iw) {
  struct uring *u = iw->priv;
  if (atomic_load_explicit(&u->pending, memory_order_relaxed)) {
    spin_lock(&u->sq_lock);
    submit_now(u);
    spin_unlock(&u->sq_lock);
  }
}

/* The synchronous cancel of ur_del, by the recv's user data; its
 * completion (ECANCELED, or the data if it came first) is reaped later. */
static void ur_recv_cancel(struct io_worker *iw, struct io_node *n) {
  ur_flush(iw);
  sync_cancel(&((struct uring *)iw->priv)->ring,
              IO_RING_OP_TAG | (uint64_t)(uintptr_t)n);
}

/* Cancels fd's poll and waits until the kernel has done so (the
 * synchronous cancel retries while the poll is completing, which an
 * asynchronous POLL_REMOVE reports as EALREADY and leaves armed, holding
 * the file: a peer then never saw the end of the stream). An add still
 * queued goes in first, or the cancel would miss it. */
static void ur_del(struct io_worker *iw, int fd, uint64_t token) {
  (void)fd;
  ur_flush(iw);
  sync_cancel(&((struct uring *)iw->priv)->ring, token);
}

struct done_cqe {
  uint64_t token;
  int32_t res;
  uint32_t flags;
};

static int ur_wait(struct io_worker *iw, int64_t timeout_ns, bool owner,
                   int *readied) {
  struct uring *u = iw->priv;
  ur_flush(iw);
  if (timeout_ns > 0 && !io_uring_cq_ready(&u->ring)) {
    struct __kernel_timespec ts = {.tv_sec = timeout_ns / 1000000000,
                                   .tv_nsec = timeout_ns % 1000000000};
    struct io_uring_cqe *cqe;
    io_uring_wait_cqes(&u->ring, &cqe, 1, &ts, NULL);
  }
  /* The owner runs its own task work (the completions of the polls it
   * armed) when the kernel flags some; liburing's peek would enter for
   * anyone who sees the flag, and another poller's entry runs only its
   * own work: an empty system call per spin round (measured: up to 5
   * io_uring_enter per round trip). So the ring is read by hand. */
  if (owner && (IO_URING_READ_ONCE(*u->ring.sq.kflags) &
                (IORING_SQ_TASKRUN | IORING_SQ_CQ_OVERFLOW)))
    io_uring_get_events(&u->ring);
  struct done_cqe done[IO_EVENT_BATCH];
  unsigned n = 0, head;
  struct io_uring_cqe *cqe;
  spin_lock(&u->cq_lock);
  io_uring_for_each_cqe(&u->ring, head, cqe) {
    if (n == IO_EVENT_BATCH)
      break;
    done[n++] = (struct done_cqe){cqe->user_data, cqe->res, cqe->flags};
  }
  io_uring_cq_advance(&u->ring, n);
  spin_unlock(&u->cq_lock);
  /* As the epoll back end does: the entries (or the ring's own reads'
   * nodes) fetched at once, each readiness event's parked reader one
   * completion ahead. */
  for (unsigned i = 0; i < n; i++) {
    if (!(done[i].token & IO_RING_OP_TAG))
      io_prefetch_entry(done[i].token);
    else if (done[i].token != IO_WAKE_TOKEN)
      __builtin_prefetch((void *)(uintptr_t)(done[i].token & ~IO_RING_OP_TAG));
  }
  for (unsigned i = 0; i < n; i++) {
    struct done_cqe *c = &done[i];
    bool more = c->flags & IORING_CQE_F_MORE;
    if (i + 1 < n && !(done[i + 1].token & IO_RING_OP_TAG))
      io_prefetch_waiter(done[i + 1].token);
    if (c->token == IO_WAKE_TOKEN) {
      if (!more) {
        spin_lock(&u->sq_lock);
        struct io_uring_sqe *sqe = sqe_get(u);
        if (sqe)
          prep_poll(sqe, iw->evfd, IO_WAKE_TOKEN, POLLIN);
        submit_now(u);
        spin_unlock(&u->sq_lock);
      }
      continue;
    }
    if (c->token & IO_RING_OP_TAG) {
      *readied += io_ring_done(
          (struct io_node *)(uintptr_t)(c->token & ~IO_RING_OP_TAG), c->res);
      continue;
    }
    uint32_t events = c->res >= 0 ? (uint32_t)c->res : EPOLLIN | EPOLLOUT;
    *readied += io_deliver(c->token, events);
    if (!more && (c->res >= 0 || c->res == -ECANCELED))
      io_rearm(c->token);
    else if (!more)
      io_unregistered(c->token);
  }
  ur_flush(iw); /* polls armed again above */
  return (int)n;
}

static void ur_wake(struct io_worker *iw) {
  uint64_t one = 1;
  sys_write(iw->evfd, &one, sizeof one);
}

static void ur_rearm(struct io_worker *iw, int fd, uint64_t token) {
  struct uring *u = iw->priv;
  spin_lock(&u->sq_lock);
  struct io_uring_sqe *sqe = sqe_get(u);
  if (sqe) {
    prep_poll(sqe, fd, token, POLL_EVENTS);
    atomic_fetch_add_explicit(&u->pending, 1, memory_order_relaxed);
  }
  spin_unlock(&u->sq_lock);
}

#define UR_OPS                                                                 \
  .poll_is_free = true, .open = ur_open, .drop = ur_drop, .add = ur_add,       \
  .del = ur_del, .wait = ur_wait, .wake = ur_wake, .rearm = ur_rearm,          \
  .flush = ur_flush

/* Reads performed by the ring (io/ringread.c) ... */
static const struct io_backend uring_recv = {
    .name = "uring", UR_OPS, .recv = ur_recv, .recv_cancel = ur_recv_cancel};
/* ... or by the poller after the poll's completion, as epoll's. */
static const struct io_backend uring_poll = {.name = "uring", UR_OPS};

/* Whether this kernel has IORING_OP_RECV (and the cancel it needs). */
static bool has_recv(void) {
  struct io_uring_probe *p = io_uring_get_probe();
  bool ok = p && io_uring_opcode_supported(p, IORING_OP_RECV) &&
            io_uring_opcode_supported(p, IORING_OP_ASYNC_CANCEL);
  if (p)
    io_uring_free_probe(p);
  return ok;
}

const struct io_backend *io_uring_variant(char *note, unsigned len) {
  const char *v = getenv("SWARM_URING_RECV");
  if (v && *v && strcmp(v, "0") != 0 && strcmp(v, "1") != 0) {
    fprintf(stderr, "swarm: ignoring SWARM_URING_RECV='%s': expected 0 or 1\n",
            v);
    v = NULL;
  }
  if (v && strcmp(v, "0") == 0) {
    snprintf(note, len, "uring (reads by poll: SWARM_URING_RECV=0)");
    return &uring_poll;
  }
  if (!has_recv()) {
    snprintf(note, len, "uring (reads by poll: no IORING_OP_RECV here)");
    return &uring_poll;
  }
  snprintf(note, len, "uring (reads in the ring)");
  return &uring_recv;
}

/* The features used, tried for real on a small ring: synchronous cancel
 * (Linux 6.0) must answer ENOENT for nothing, and a multishot poll on an
 * eventfd must complete twice, for two writes, and stay armed. */
bool io_uring_usable(char *why, unsigned len) {
  struct io_uring ring;
  unsigned features = 0;
  int r = ur_setup(&ring, &features);
  if (r < 0) {
    snprintf(why, len, "io_uring_setup: %s", strerror(-r));
    return false;
  }
  bool ok = false;
  const unsigned need = IORING_FEAT_EXT_ARG | IORING_FEAT_NODROP;
  int evfd = (int)sys_eventfd2(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if ((features & need) != need) {
    snprintf(why, len, "kernel too old (no IORING_FEAT_EXT_ARG/NODROP)");
  } else if (sync_cancel(&ring, 12345) != -ENOENT) { /* 12345: nothing */
    snprintf(why, len, "kernel too old (no IORING_REGISTER_SYNC_CANCEL)");
  } else if (evfd < 0) {
    snprintf(why, len, "eventfd: %s", strerror(-evfd));
  } else {
    prep_poll(io_uring_get_sqe(&ring), evfd, 1, POLLIN);
    io_uring_submit(&ring);
    int seen = 0;
    for (int round = 0; round < 2; round++) {
      uint64_t one = 1;
      sys_write(evfd, &one, sizeof one);
      struct io_uring_cqe *cqe;
      struct __kernel_timespec ts = {.tv_sec = 1};
      if (io_uring_wait_cqes(&ring, &cqe, 1, &ts, NULL) == 0) {
        if (cqe->res > 0 && (cqe->flags & IORING_CQE_F_MORE))
          seen++;
        io_uring_cqe_seen(&ring, cqe);
      }
    }
    ok = seen == 2;
    if (!ok)
      snprintf(why, len, "no multishot poll (IORING_POLL_ADD_MULTI)");
  }
  if (evfd >= 0)
    sys_close(evfd);
  io_uring_queue_exit(&ring);
  return ok;
}
