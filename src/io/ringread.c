/*
 * io/ringread.c — parked reads performed by the ring: with the io_uring
 * back end (io/backend.h's ->recv), a thread whose read of a stream socket
 * would block parks on an IORING_OP_RECV into its own buffer instead of
 * waiting for a readiness edge and then having a poller call recv. The
 * kernel arms its internal poll and completes the recv when data comes;
 * the completion's count (or error, or 0 at the end of the stream) is the
 * read's result, and whoever reaps it readies the thread. One system call
 * per round trip less (the poller's recv), and the submission rides on the
 * owner's next io_uring_enter with everything else queued meanwhile.
 *
 * Which reads: read() and recv() without flags or address of a stream
 * socket (io_ring_eligible), on a regular worker whose back end offers
 * ->recv. Nothing is ever read ahead of a thread's own read: the buffer is
 * the thread's, and it is parked. Vectors, MSG_ flags, datagrams, pipes
 * and spares keep the poller's path (io/poller.c). The program's
 * O_NONBLOCK and MSG_DONTWAIT are decided before (io_call: never parked).
 *
 * The node is linked on the descriptor's reader list, marked `ring`, so a
 * close finds and claims it (EBADF); the edges of a multishot poll of the
 * same descriptor (registered when a write or a pure wait parked on it)
 * skip it. Its `seq` holds the generation read before the attempt: the
 * commit queues the recv only if no close came since (under e->lock, as a
 * close bumps it), and a close first submits what is queued, so a recv
 * never finds the next file given the same number.
 *
 * Races kept here, with ring_state (RING_NONE -> FLIGHT -> DONE, or
 * FLIGHT -> WAITING -> DONE):
 *  - the completion (io_ring_done, in any poller) claims the wait; if it
 *    wins, it stores the result and readies the thread. If the timer, a
 *    close or an interruption claimed first (or the commit had not armed
 *    yet: MISSED), the recv is still in flight when the thread runs: the
 *    thread cancels it synchronously and then parks until ring_state says
 *    DONE (CAS FLIGHT -> WAITING in the commit; the completion's exchange
 *    to DONE sees WAITING and readies it). Only then does it return, so
 *    the kernel never writes into a buffer its thread has left, and data
 *    that came during the cancel is returned, never dropped.
 *  - the completion touches nothing of the node after its exchange to DONE
 *    (or after readying the thread it claimed).
 */
#include <limits.h>

#include "io/backend.h"
#include "io/io.h"

enum { RING_NONE, RING_FLIGHT, RING_WAITING, RING_DONE };

_Atomic bool io_ring_reads;

bool io_ring_eligible(struct io_fd *e, struct io_node *n) {
  if (n->dir != 0 || !e->socket || !e->stream || n->len == 0 ||
      n->len > INT_MAX || /* an SQE's length is 32 bits */
      (n->flags & MSG_DONTWAIT) ||
      atomic_load_explicit(&e->how[0], memory_order_relaxed) == IO_HOW_READY)
    return false;
  if (n->attempt != io_attempt_read &&
      (n->attempt != io_attempt_recvfrom || n->flags || n->addr))
    return false;
  n->ring_iw = io_ring_here();
  return n->ring_iw != NULL;
}

void io_ring_note(struct io_fd *e, const struct io_node *n, long r) {
  if (n->ring_iw && r > 0)
    atomic_store_explicit(&e->ring_short, (size_t)r < n->len,
                          memory_order_relaxed);
}

/* Under e->lock, e's generation checked; the thread is parked, off its
 * stack. FLIGHT before the recv is visible: its completion may come at
 * once, through another poller. */
bool io_ring_submit(struct io_node *n) {
  atomic_store_explicit(&n->ring_state, RING_FLIGHT, memory_order_relaxed);
  if (io_backend_of()->recv(n->ring_iw, n, n->ring_first) == 0)
    return true;
  atomic_store_explicit(&n->ring_state, RING_NONE, memory_order_relaxed);
  n->ring = false; /* no room: the poller's path from now on */
  return false;
}

int io_ring_done(struct io_node *n, long res) {
  struct io_wait *wt = n->wait;
  struct swarm_thread *th = wt->thread;
  n->ring_res = res;
  if (io_wait_claim(wt)) {
    wt->result = res;
    wt->completed = true;
    atomic_store_explicit(&n->ring_state, RING_DONE, memory_order_release);
    swarm_ready(th);
    return 1;
  }
  if (atomic_exchange(&n->ring_state, RING_DONE) == RING_WAITING) {
    swarm_ready(th); /* parked in wait_done */
    return 1;
  }
  return 0;
}

static bool commit_done(struct swarm_thread *self, void *arg) {
  (void)self;
  struct io_node *n = arg;
  int v = RING_FLIGHT;
  return atomic_compare_exchange_strong(&n->ring_state, &v, RING_WAITING);
}

/* The wait ended some other way with the recv in flight: cancel it and
 * wait for its completion (which may bring data). */
static void cancel_and_wait(struct io_node *n) {
  io_backend_of()->recv_cancel(n->ring_iw, n);
  io_waiting_add(1); /* keeps the pollers reaping */
  while (atomic_load_explicit(&n->ring_state, memory_order_acquire) !=
         RING_DONE)
    swarm_park(commit_done, n, SWARM_PARK_IO, NULL);
  io_waiting_add(-1);
}

long io_ring_read(struct io_fd *e, struct io_node *n, uint64_t deadline,
                  uint32_t gen, bool drained) {
  /* The ring of the worker the thread parks on, whose commit queues the
   * recv there for its owner to submit: not the one io_ring_eligible saw
   * if the thread has moved since (a wait of call_loop's that ended
   * without the read), or the recv would wait in a sleeping worker's
   * queue (a 20 ms SO_RCVTIMEO read in test_io_ringread timed out with
   * its data there). None on a spare: the poller's path. */
  struct io_worker *here = io_ring_here();
  if (!here) {
    n->ring = false;
    return IO_RING_RETRY;
  }
  n->ring_iw = here;
  n->ring = true;
  n->ring_first = drained;
  n->seq = gen;
  atomic_store_explicit(&n->ring_state, RING_NONE, memory_order_relaxed);
  struct io_wait wt;
  io_park_on(n, 1, &wt, deadline);
  int st = atomic_load_explicit(&n->ring_state, memory_order_acquire);
  if (st == RING_NONE)
    return IO_RING_RETRY; /* a close since the attempt, or no room */
  if (st != RING_DONE)
    cancel_and_wait(n);
  long r = n->ring_res;
  if (r == -ECANCELED || r == -EAGAIN || r == -EINTR) {
    long failure = io_wait_failure(&wt, deadline);
    /* else io_call looks again (O_NONBLOCK, deadline) */
    return failure ? failure : IO_RING_RETRY;
  }
  io_ring_note(e, n, r);
  return r;
}
