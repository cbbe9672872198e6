/*
 * bench/pingpong_uring.c — pingpong's io_uring client (issue 17): a client
 * cheap enough that the server, not the client, sets the round-trip rate.
 *
 * The epoll client costs as much per round trip as the epoll-loop server
 * (an epoll_wait share, a read and a write): with both saturated on their
 * own CPU, no server could measure faster than the client. This one keeps
 * one multishot recv armed per active connection, its bytes landing in a
 * provided-buffer ring (no SQE per receive), and answers every completion
 * of a batch with one send SQE whose success posts no CQE
 * (IOSQE_CQE_SKIP_SUCCESS); the sends go in with the next wait, so a
 * batch costs one io_uring_enter. The ring is single-issuer with deferred
 * task work: completions run in the client's own enter, in a batch, and
 * not as interrupts of whatever it does. Sockets and the ring fd are
 * registered (no file lookups per operation).
 *
 * Invariants: at most one byte is in flight per active connection, so at
 * most `active` buffers are held at once (the buffer ring has at least
 * that many) and at most `active` recv CQEs wait at once (the CQ is
 * sized 2x). A recv CQE without IORING_CQE_F_MORE ended its multishot:
 * it is re-armed unless it reports an error or the peer's close. Send
 * CQEs come only on failure and count as errors. Each buffer is handed
 * back to the ring as soon as its bytes are counted.
 */
#define _GNU_SOURCE
#include "pingpong_client.h"

#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define BUF_SIZE 16
#define BGID 1
#define KIND_SEND (1ull << 63)

struct uclient {
  struct io_uring ring;
  struct io_uring_buf_ring *br;
  unsigned nbufs;
  char *bufs;
  unsigned sqe_flags;  /* IOSQE_FIXED_FILE when the sockets are registered */
  unsigned send_flags; /* IOSQE_CQE_SKIP_SUCCESS where the kernel has it */
  int inited;
};

static const char xs[BUF_SIZE] = "xxxxxxxxxxxxxxxx";

static unsigned pow2_at_least(unsigned long n, unsigned lo, unsigned hi) {
  unsigned p = lo;
  while (p < n && p < hi)
    p <<= 1;
  return p;
}

/* an SQE, flushing the queue into the kernel when it is full */
static struct io_uring_sqe *sqe_get(struct uclient *u) {
  struct io_uring_sqe *s = io_uring_get_sqe(&u->ring);
  if (!s) {
    io_uring_submit(&u->ring);
    s = io_uring_get_sqe(&u->ring);
  }
  return s;
}

static int arm_recv(struct uclient *u, const struct pp_run *r, long k) {
  struct io_uring_sqe *s = sqe_get(u);
  if (!s)
    return -EBUSY;
  int target = u->sqe_flags & IOSQE_FIXED_FILE ? (int)k : r->fd[k];
  io_uring_prep_recv_multishot(s, target, NULL, 0, 0);
  s->flags |= IOSQE_BUFFER_SELECT | u->sqe_flags;
  s->buf_group = BGID;
  io_uring_sqe_set_data64(s, (uint64_t)k);
  return 0;
}

static int queue_send(struct uclient *u, const struct pp_run *r, long k,
                      unsigned n) {
  struct io_uring_sqe *s = sqe_get(u);
  if (!s)
    return -EBUSY;
  int target = u->sqe_flags & IOSQE_FIXED_FILE ? (int)k : r->fd[k];
  io_uring_prep_send(s, target, xs, n, MSG_NOSIGNAL);
  s->flags |= u->sqe_flags | u->send_flags;
  io_uring_sqe_set_data64(s, KIND_SEND | (uint64_t)k | ((uint64_t)n << 32));
  return 0;
}

static int setup(struct uclient *u, const struct pp_run *r, const char **why) {
  unsigned long active = (unsigned long)r->active / (unsigned long)r->step + 1;
  struct io_uring_params p = {0};
  p.flags = IORING_SETUP_CQSIZE | IORING_SETUP_SINGLE_ISSUER |
            IORING_SETUP_DEFER_TASKRUN;
  p.cq_entries = pow2_at_least(2 * active, 64, 1u << 16);
  unsigned sq = pow2_at_least(active, 64, 4096);
  int e = io_uring_queue_init_params(sq, &u->ring, &p);
  if (e == -EINVAL) { /* kernels before 6.1: no deferred task work */
    memset(&p, 0, sizeof p);
    p.flags = IORING_SETUP_CQSIZE;
    p.cq_entries = pow2_at_least(2 * active, 64, 1u << 16);
    e = io_uring_queue_init_params(sq, &u->ring, &p);
  }
  if (e < 0) {
    *why = "io_uring_queue_init";
    return e;
  }
  u->inited = 1;
  u->send_flags =
      p.features & IORING_FEAT_CQE_SKIP ? IOSQE_CQE_SKIP_SUCCESS : 0;
  io_uring_register_ring_fd(&u->ring); /* an optimisation: may fail */
  u->sqe_flags = 0;
  if (r->conns <= 65536 &&
      io_uring_register_files(&u->ring, r->fd, (unsigned)r->conns) == 0)
    u->sqe_flags = IOSQE_FIXED_FILE;

  u->nbufs = pow2_at_least(active, 16, 32768);
  size_t len = u->nbufs * sizeof(struct io_uring_buf);
  u->br = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_ANONYMOUS | MAP_PRIVATE,
               -1, 0);
  u->bufs = malloc((size_t)u->nbufs * BUF_SIZE);
  if (u->br == MAP_FAILED || !u->bufs) {
    *why = "buffer ring memory";
    return -ENOMEM;
  }
  io_uring_buf_ring_init(u->br);
  struct io_uring_buf_reg reg = {
      .ring_addr = (uintptr_t)u->br, .ring_entries = u->nbufs, .bgid = BGID};
  e = io_uring_register_buf_ring(&u->ring, &reg, 0);
  if (e < 0) {
    *why = "io_uring_register_buf_ring (provided buffers: Linux 5.19+)";
    return e;
  }
  int mask = io_uring_buf_ring_mask(u->nbufs);
  for (unsigned b = 0; b < u->nbufs; b++)
    io_uring_buf_ring_add(u->br, u->bufs + (size_t)b * BUF_SIZE, BUF_SIZE,
                          (unsigned short)b, mask, (int)b);
  io_uring_buf_ring_advance(u->br, (int)u->nbufs);
  return 0;
}

static void teardown(struct uclient *u) {
  /* exiting the ring cancels the armed recvs and drops its references to
   * the sockets, so the caller's close() is what closes them */
  if (u->inited)
    io_uring_queue_exit(&u->ring);
  if (u->br && u->br != MAP_FAILED)
    munmap(u->br, u->nbufs * sizeof(struct io_uring_buf));
  free(u->bufs);
}

/* one recv CQE: count, hand the buffer back, answer, re-arm if ended */
static void on_recv(struct uclient *u, struct pp_run *r, struct io_uring_cqe *c,
                    int counting, int mask) {
  long k = (long)(c->user_data & 0xffffffffu);
  int more = c->flags & IORING_CQE_F_MORE;
  if (c->res > 0 && (c->flags & IORING_CQE_F_BUFFER)) {
    unsigned short bid = (unsigned short)(c->flags >> IORING_CQE_BUFFER_SHIFT);
    const char *b = u->bufs + (size_t)bid * BUF_SIZE;
    unsigned n = (unsigned)c->res;
    for (unsigned j = 0; j < n; j++)
      if (b[j] != 'x')
        r->errors++;
    io_uring_buf_ring_add(u->br, (void *)b, BUF_SIZE, bid, mask, 0);
    io_uring_buf_ring_advance(u->br, 1);
    r->transactions += counting ? n : 0;
    if (queue_send(u, r, k, n) != 0)
      r->errors++;
  } else if (c->res != -ENOBUFS) {
    r->errors++; /* the peer closed (0) or the recv failed */
    return;
  }
  if (!more && arm_recv(u, r, k) != 0)
    r->errors++;
}

int pp_uring_usable(const char **why) {
  int fd = -1;
  struct pp_run r = {.fd = &fd, .conns = 1, .active = 1, .step = 1};
  struct uclient u = {0};
  int e = setup(&u, &r, why);
  teardown(&u);
  return e;
}

int pp_client_uring(struct pp_run *r, const char **why) {
  struct uclient u = {0};
  int e = setup(&u, r, why);
  if (e < 0) {
    teardown(&u);
    return e;
  }
  for (long i = r->first; i < r->active; i += r->step) {
    /* blocking: io_uring tries each call without waiting anyway, and
     * some kernels answer -EAGAIN instead of waiting on O_NONBLOCK */
    fcntl(r->fd[pp_active_index(r, i)], F_SETFL, 0);
    if (arm_recv(&u, r, pp_active_index(r, i)) != 0)
      r->errors++;
  }
  int mask = io_uring_buf_ring_mask(u.nbufs), opened = 0;
  for (;;) {
    int counting = pp_turn(r, &opened);
    if (counting < 0)
      break;
    struct io_uring_cqe *c;
    struct __kernel_timespec ts = {.tv_sec = 0, .tv_nsec = 100 * 1000 * 1000};
    e = io_uring_submit_and_wait_timeout(&u.ring, &c, 1, &ts, NULL);
    if (e < 0 && e != -ETIME && e != -EINTR) {
      errno = -e;
      *why = "io_uring_submit_and_wait_timeout";
      r->errors++;
      break;
    }
    unsigned head, seen = 0;
    io_uring_for_each_cqe(&u.ring, head, c) {
      seen++;
      if (c->user_data & KIND_SEND) {
        unsigned n = (unsigned)(c->user_data >> 32) & 0x7fffffffu;
        if (c->res != (int)n)
          r->errors++;
      } else {
        on_recv(&u, r, c, counting, mask);
      }
    }
    io_uring_cq_advance(&u.ring, seen);
  }
  teardown(&u);
  return 0;
}
