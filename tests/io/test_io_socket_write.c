/*
 * test_io_socket_write: swarm_write on a stream socket it already knows
 * takes MSG_DONTWAIT (calls.c's write_known, which makes the attempt
 * before it builds the call's node) keeps a blocking write's meaning:
 *  - a write larger than the socket buffer, to a reader that is slow to
 *    drain it, returns its whole length (the short first try goes on in
 *    write_rest), and every byte arrives, in order;
 *  - 256 writes of 16 KiB against a reader that pauses, every byte
 *    checked;
 *  - writes that start with the buffer already full (filled behind
 *    swarm's back: the first try says EAGAIN) park and complete;
 *  - the program's O_NONBLOCK: a large write returns what fit (short, not
 *    an error), the next one -1 with EAGAIN;
 *  - an error is the call's: the peer closed, EPIPE.
 * A lost edge (a writer parked beside room) hangs, and fails by CTest's
 * timeout.
 */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

#include "io_test.h"

static unsigned char pattern(size_t i) {
  return (unsigned char)(i * 7 + (i >> 13));
}

struct reader {
  int fd;
  size_t expect;
  size_t got;
  int bad;
};

/* A kernel thread, so it drains at its own pace: pauses now and then, so
 * the writer finds the buffer full. */
static void *slow_read(void *arg) {
  struct reader *r = arg;
  unsigned char buf[3000];
  int rounds = 0;
  usleep(1000); /* let the writer find the buffer full */
  while (r->got < r->expect) {
    if (++rounds % 16 == 0)
      usleep(200);
    ssize_t n = read(r->fd, buf, sizeof buf);
    if (n <= 0)
      break;
    for (ssize_t k = 0; k < n; k++)
      if (buf[k] != pattern(r->got + (size_t)k))
        r->bad++;
    r->got += (size_t)n;
  }
  return NULL;
}

static void pair(int sv[2]) {
  CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
  int small = 4096;
  setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof small);
  setsockopt(sv[1], SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
}

static void big_and_full_writes(void) {
  enum { BIG = 1 << 20, SMALL = 16 << 10, NSMALL = 256 };
  size_t total = BIG + (size_t)SMALL * NSMALL;
  unsigned char *data = malloc(total);
  CHECK(data != NULL);
  for (size_t i = 0; i < total; i++)
    data[i] = pattern(i);
  int sv[2];
  pair(sv);
  /* the first write teaches swarm that MSG_DONTWAIT works here; a reader
   * that is not there yet leaves it in the buffer */
  struct reader r = {sv[1], total, 0, 0};
  CHECK_EQ(swarm_write(sv[0], data, 1), 1);
  pthread_t t;
  CHECK(pthread_create(&t, NULL, slow_read, &r) == 0);
  CHECK_EQ(swarm_write(sv[0], data + 1, BIG - 1), BIG - 1);
  for (int i = 0; i < NSMALL; i++)
    CHECK_EQ(swarm_write(sv[0], data + BIG + (size_t)i * SMALL, SMALL), SMALL);
  pthread_join(t, NULL);
  CHECK_EQ(r.got, total);
  CHECK_EQ(r.bad, 0);
  swarm_close(sv[0]);
  close(sv[1]);
  free(data);
}

/* The buffer full before the write starts: its first try says EAGAIN, so
 * it parks, with the counter read before that try, and completes once the
 * reader (started only now, after a pause) makes room. */
static void starts_full(void) {
  enum { LEN = 64 << 10, ROUNDS = 20 };
  unsigned char *data = malloc((size_t)LEN * (ROUNDS + 2));
  CHECK(data != NULL);
  for (size_t i = 0; i < (size_t)LEN * (ROUNDS + 2); i++)
    data[i] = pattern(i);
  int sv[2];
  pair(sv);
  size_t sent = 0, consumed = 0;
  CHECK_EQ(swarm_write(sv[0], data, 1), 1);
  sent = 1;
  for (int round = 0; round < ROUNDS; round++) {
    struct reader r = {sv[1], 0, consumed, 0};
    ssize_t n; /* fill it behind swarm's back */
    while ((n = send(sv[0], data + sent, 512, MSG_DONTWAIT)) > 0)
      sent += (size_t)n;
    CHECK(n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK));
    r.expect = sent + LEN;
    pthread_t t;
    CHECK(pthread_create(&t, NULL, slow_read, &r) == 0);
    CHECK_EQ(swarm_write(sv[0], data + sent, LEN), LEN);
    sent += LEN;
    pthread_join(t, NULL);
    CHECK_EQ(r.got, sent);
    CHECK_EQ(r.bad, 0);
    consumed = r.got;
  }
  swarm_close(sv[0]);
  close(sv[1]);
  free(data);
}

static void program_nonblock(void) {
  enum { LEN = 1 << 20 };
  unsigned char *data = calloc(1, LEN);
  CHECK(data != NULL);
  int sv[2];
  pair(sv);
  CHECK_EQ(swarm_write(sv[0], data, 1), 1);
  int fl = fcntl(sv[0], F_GETFL);
  CHECK(fcntl(sv[0], F_SETFL, fl | O_NONBLOCK) == 0);
  ssize_t n = swarm_write(sv[0], data, LEN);
  CHECK(n > 0 && n < LEN); /* what fit, as the kernel's write says */
  errno = 0;
  CHECK_EQ(swarm_write(sv[0], data, LEN), -1);
  CHECK_EQ(ERRNO, EAGAIN);
  swarm_close(sv[0]);
  close(sv[1]);
  free(data);
}

static void peer_closed(void) {
  int sv[2];
  pair(sv);
  CHECK_EQ(swarm_write(sv[0], "a", 1), 1);
  close(sv[1]);
  errno = 0;
  CHECK_EQ(swarm_write(sv[0], "b", 1), -1);
  CHECK_EQ(ERRNO, EPIPE);
  swarm_close(sv[0]);
}

int main(void) {
  signal(SIGPIPE, SIG_IGN);
  CHECK_EQ(swarm_init(NULL), 0);
  big_and_full_writes();
  starts_full();
  program_nonblock();
  peer_closed();
  CHECK_EQ(swarm_finalize(), 0);
  printf("test_io_socket_write: passed\n");
  return 0;
}
