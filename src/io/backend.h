/*
 * io/backend.h — the readiness back ends behind the poller: what
 * src/io/poller.c asks of "the thing that tells a worker which descriptors
 * became ready", so that the rest of src/io does not know which one runs.
 *
 * Two back ends, one chosen per process at the first worker poller
 * (SWARM_IO=epoll|uring|auto; poller.c's choose_backend):
 *  - epoll (src/io/epoll.c): a per-worker epoll, descriptors registered
 *    once, edge-triggered, for both directions; an eventfd in it carries
 *    the scheduler's wake-ups. Always there.
 *  - uring (src/io/uring.c, built only when CMake found liburing): a
 *    per-worker io_uring with one multishot poll (IORING_POLL_ADD_MULTI)
 *    per descriptor, which posts a completion on every wake-up of the
 *    file's wait queue whose events it asked for: the same edges epoll's
 *    EPOLLET reports. Registrations are batched into the next
 *    io_uring_enter of the owning worker; an empty poll reads the
 *    completion ring in memory, without a system call.
 *
 * Both deliver the same thing: (token, events) pairs, token = the entry's
 * generation << 32 | fd, events in epoll's bits (poll(2)'s are the same
 * values), handed to io_deliver, which bumps the counters and performs the
 * parked calls. The races of the parking protocol (poller.c) do not depend
 * on the back end: an edge delivered late or twice costs a call that says
 * EAGAIN, never a lost wake-up, as long as every readiness change after a
 * registration produces at least one delivery.
 */
#ifndef SWARM_IO_BACKEND_H
#define SWARM_IO_BACKEND_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#define IO_WAKE_TOKEN UINT64_MAX /* the wake-up eventfd's events */
#define IO_EVENT_BATCH 128
/* A completion's user data with this bit (and not IO_WAKE_TOKEN) is a read
 * performed by the ring (io/ringread.c): the rest is its struct io_node.
 * Tokens keep 31 bits of the generation, so they never have it. */
#define IO_RING_OP_TAG (1ull << 63)

/* The token of descriptor fd at generation gen. */
static inline uint64_t io_token(uint32_t gen, int fd) {
  return (uint64_t)(gen & 0x7fffffffu) << 32 | (uint32_t)fd;
}
static inline bool io_token_is_gen(uint64_t token, uint32_t gen) {
  return (uint32_t)(token >> 32) == (gen & 0x7fffffffu);
}

struct io_node;

/* One worker's poller, whichever back end. Created on first need under
 * poller.c's create lock; `fd` + 1 is published in `ready` (0: not yet). */
struct io_worker {
  _Atomic int ready;
  int fd;               /* the epoll or the ring */
  int evfd;             /* the wake-up eventfd */
  _Atomic int in_sleep; /* the owner sleeps in ->wait (core's protocol) */
  _Atomic uint64_t polled_ns;
  /* epoll only: empty polls in a row back off (poller.c's hook_poll) */
  unsigned idle_skip, idle_backoff;
  unsigned idle_cap; /* POLL_SKIP_MAX or POLL_SKIP_MAX_BATCH (poller.c) */
  void *priv;        /* back end's own state (uring: the ring) */
} __attribute__((aligned(64)));

struct io_backend {
  const char *name;
  bool poll_is_free; /* an empty poll costs no system call (no back-off) */
  /* Creates iw's poller and its wake-up eventfd: 0 or -errno. */
  int (*open)(struct io_worker *iw);
  /* In a fork child: forget iw's poller (the parent keeps its own). */
  void (*drop)(struct io_worker *iw);
  /* Registers fd (both directions, edge-triggered) under token; called
   * under the entry's lock. owner: the caller is iw's worker, which will
   * poll or sleep in it soon (the uring back end then defers the
   * submission to that call). 0 or -errno. */
  long (*add)(struct io_worker *iw, int fd, uint64_t token, bool owner);
  /* Unregisters it; called under the entry's lock, before the close. */
  void (*del)(struct io_worker *iw, int fd, uint64_t token);
  /* Collects what is ready, waiting at most timeout_ns (0: not at all),
   * and hands each event to io_deliver. owner: the caller is iw's worker
   * (only it drains the wake-up eventfd). Returns events seen (< 0: none,
   * the wait was interrupted) and adds the threads readied to *readied. */
  int (*wait)(struct io_worker *iw, int64_t timeout_ns, bool owner,
              int *readied);
  /* Ends the owner's ->wait (it stored in_sleep). */
  void (*wake)(struct io_worker *iw);
  /* uring: arms fd's poll again (it ended); under the entry's lock. */
  void (*rearm)(struct io_worker *iw, int fd, uint64_t token);
  /* uring, unless SWARM_URING_RECV=0 or the kernel lacks IORING_OP_RECV
   * (NULL then): queues an IORING_OP_RECV of n->len bytes into n->buf
   * from n->fd, tagged n (IO_RING_OP_TAG), submitted with the owner's next
   * io_uring_enter; its completion goes to io_ring_done. The caller is
   * iw's worker. poll_first: the stream was drained, skip the kernel's
   * first try. 0 or -errno. */
  int (*recv)(struct io_worker *iw, struct io_node *n, bool poll_first);
  /* Cancels n's recv and returns once the kernel has ended it (its
   * completion, with the data if any came first, may still be unread). */
  void (*recv_cancel)(struct io_worker *iw, struct io_node *n);
  /* Submits what is queued (a close must not let a queued recv find the
   * next file given the same number). */
  void (*flush)(struct io_worker *iw);
};

/* poller.c: the back end chosen (NULL before the first poller). */
const struct io_backend *io_backend_of(void);
/* poller.c: one event for token; returns the threads it readied. */
int io_deliver(uint64_t token, uint32_t events);
/* poller.c: token's registration ended; ->rearm it if the descriptor is
 * still registered under that generation. */
void io_rearm(uint64_t token);
/* ringread.c: the recv queued for n completed with res; returns the
 * threads it readied (0 or 1). */
int io_ring_done(struct io_node *n, long res);
/* poller.c: token's registration ended for good (the back end refused
 * it): the entry is no longer registered, the next wait registers again. */
void io_unregistered(uint64_t token);

extern const struct io_backend io_backend_epoll;
#ifdef SWARM_HAVE_URING
/* The uring back end, reads in the ring or not (SWARM_URING_RECV=0, or a
 * kernel without IORING_OP_RECV), and what was chosen in note[len]. */
const struct io_backend *io_uring_variant(char *note, unsigned len);
/* Whether this kernel gives what the uring back end needs (multishot poll,
 * waits with a timeout argument, no dropped completions); if not, a reason
 * in why[len]. */
bool io_uring_usable(char *why, unsigned len);
#endif

#endif
