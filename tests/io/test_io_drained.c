/*
 * test_io_drained: the drained hint (src/io/poller.c) — after a short read
 * of a stream the next read may park without trying, since every byte that
 * comes later raises an edge. Checked on a pipe and on a stream
 * socketpair:
 *  - an end of file that a poller saw before the short read raises no edge
 *    after it: the read after the short read must return 0 at once, not
 *    park for an edge that never comes (the writer closes, the reader's
 *    worker idles so its poller takes the hang-up with nobody waiting,
 *    then the reader reads the rest, short, then reads again);
 *  - 2,000 round trips of 1-100 bytes into a 4 KiB buffer (every read
 *    short) with a kernel thread at the other end answering at once or
 *    after a pause, every byte checked: no read parks past its data.
 * A hang fails the test by CTest's timeout.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "io_test.h"

enum { PIPE, SOCKET };

static void channel(int kind, int *rfd, int *wfd) {
  int fds[2];
  if (kind == PIPE)
    CHECK(pipe(fds) == 0);
  else
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, fds) == 0);
  *rfd = fds[0];
  *wfd = fds[1];
}

struct writer {
  int fd, delay_us, len, close_after;
};

static void *write_later(void *arg) {
  struct writer *w = arg;
  usleep((useconds_t)w->delay_us);
  char buf[128];
  for (int i = 0; i < w->len; i++)
    buf[i] = (char)('a' + i % 26);
  CHECK_EQ(write(w->fd, buf, (size_t)w->len), w->len);
  if (w->close_after)
    close(w->fd);
  return NULL;
}

static void eof_after_short_read(int kind) {
  for (int i = 0; i < 20; i++) {
    int r, w;
    channel(kind, &r, &w);
    char buf[4096];
    pthread_t t;
    struct writer first = {w, 2000, 5, 0};
    CHECK(pthread_create(&t, NULL, write_later, &first) == 0);
    CHECK_EQ(swarm_read(r, buf, sizeof buf), 5); /* parks: registers r */
    pthread_join(t, NULL);
    struct writer last = {w, 0, 7, 1};
    CHECK(pthread_create(&t, NULL, write_later, &last) == 0);
    pthread_join(t, NULL);
    swarm_sleep_ns(3000000); /* the idle worker polls: hang-up taken */
    CHECK_EQ(swarm_read(r, buf, sizeof buf), 7); /* short */
    CHECK_EQ(swarm_read(r, buf, sizeof buf), 0); /* end of file, at once */
    swarm_close(r);
  }
}

struct echo {
  int fd;
};

/* The other end: reads a length byte and that many bytes, answers with
 * the same bytes, sometimes after a pause. */
static void *answer(void *arg) {
  struct echo *e = arg;
  unsigned char len, buf[256];
  for (int i = 0;; i++) {
    if (read(e->fd, &len, 1) != 1)
      break;
    size_t got = 0;
    while (got < len) {
      ssize_t n = read(e->fd, buf + got, len - got);
      CHECK(n > 0);
      got += (size_t)n;
    }
    if (i % 7 == 0)
      usleep(100);
    CHECK_EQ(write(e->fd, buf, len), len);
  }
  return NULL;
}

static void round_trips(void) {
  int sv[2];
  CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
  struct echo e = {sv[1]};
  pthread_t t;
  CHECK(pthread_create(&t, NULL, answer, &e) == 0);
  int n = test_scaled(2000, 200);
  for (int i = 0; i < n; i++) {
    unsigned char msg[101], buf[4096];
    unsigned char len = (unsigned char)(1 + i % 100);
    msg[0] = len;
    for (int k = 1; k <= len; k++)
      msg[k] = (unsigned char)(i + k);
    CHECK_EQ(swarm_write(sv[0], msg, (size_t)len + 1), len + 1);
    size_t got = 0;
    while (got < len) {
      ssize_t r = swarm_read(sv[0], buf + got, sizeof buf - got);
      CHECK(r > 0);
      got += (size_t)r;
    }
    CHECK_EQ(got, len);
    CHECK(memcmp(buf, msg + 1, len) == 0);
  }
  swarm_close(sv[0]);
  pthread_join(t, NULL);
  close(sv[1]);
}

int main(void) {
  CHECK_EQ(swarm_init(NULL), 0);
  eof_after_short_read(PIPE);
  eof_after_short_read(SOCKET);
  round_trips();
  CHECK_EQ(swarm_finalize(), 0);
  printf("test_io_drained: passed\n");
  return 0;
}
