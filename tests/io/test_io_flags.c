/*
 * test_io_flags: the native API's swarm_io_cache_flags (include/swarm/io.h).
 * Once a program asked swarm to keep what the kernel said of a
 * descriptor's O_NONBLOCK and socket timeouts, each case parks a thread on
 * the descriptor (caching "blocking, no timeout"), changes the flag or the
 * timeout with libc's own fcntl / ioctl / setsockopt, reports it with
 * swarm_io_flags_changed, and checks that the next call obeys: EAGAIN at
 * once for O_NONBLOCK (set on the descriptor or on a dup of it), EAGAIN
 * after SO_RCVTIMEO; cleared again, the call waits for its data. And a
 * descriptor made non-blocking before its first wait needs no report.
 * A stale answer parks for good (CTest's timeout fails the test).
 */
#include <fcntl.h>
#include <sys/ioctl.h>

#include "io_test.h"

static void *late_write(void *arg) {
  int fd = (int)(intptr_t)arg;
  swarm_sleep_ns(20000000); /* the reader parks first (either way is fine) */
  CHECK_EQ(swarm_write(fd, "x", 1), 1);
  return NULL;
}

static void park_once(int rfd, int wfd) {
  swarm_thread_t t;
  CHECK(swarm_spawn(&t, NULL, late_write, (void *)(intptr_t)wfd) == 0);
  char c = 0;
  CHECK_EQ(swarm_read(rfd, &c, 1), 1);
  CHECK_EQ(c, 'x');
  CHECK(swarm_join(t, NULL) == 0);
}

static void expect_eagain(int fd) {
  char c;
  CHECK_EQ(swarm_read(fd, &c, 1), -1);
  CHECK_EQ(ERRNO, EAGAIN);
}

static void set_nonblock(int fd, int way, int on) {
  if (way == 1) {
    CHECK(ioctl(fd, FIONBIO, &on) == 0);
  } else {
    int f = way == 2 ? dup(fd) : fd; /* the flag is the open file's */
    CHECK(f >= 0);
    int fl = fcntl(f, F_GETFL);
    CHECK(fcntl(f, F_SETFL, on ? fl | O_NONBLOCK : fl & ~O_NONBLOCK) == 0);
    if (f != fd)
      CHECK(close(f) == 0);
  }
  swarm_io_flags_changed();
}

static void *body(void *arg) {
  (void)arg;
  swarm_io_cache_flags();
  static const char *ways[] = {"fcntl", "ioctl(FIONBIO)", "fcntl on a dup"};
  for (int way = 0; way < 3; way++) {
    int sv[2];
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    park_once(sv[0], sv[1]);
    set_nonblock(sv[0], way, 1);
    expect_eagain(sv[0]);
    set_nonblock(sv[0], way, 0);
    park_once(sv[0], sv[1]);
    swarm_close(sv[0]);
    swarm_close(sv[1]);
    printf("O_NONBLOCK through %s after a park, reported: EAGAIN; "
           "cleared: waits again\n",
           ways[way]);
  }

  int sv[2];
  CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
  park_once(sv[0], sv[1]);
  struct timeval tv = {0, 30000};
  CHECK(setsockopt(sv[0], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) == 0);
  swarm_io_flags_changed();
  expect_eagain(sv[0]); /* after about 30 ms */
  tv.tv_usec = 0;
  CHECK(setsockopt(sv[0], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) == 0);
  swarm_io_flags_changed();
  park_once(sv[0], sv[1]);
  swarm_close(sv[0]);
  swarm_close(sv[1]);
  printf("SO_RCVTIMEO after a park, reported: EAGAIN; cleared: waits again\n");

  /* set before the descriptor's first wait: nothing to report */
  int p[2];
  CHECK(pipe(p) == 0);
  CHECK(fcntl(p[0], F_SETFL, O_NONBLOCK) == 0);
  expect_eagain(p[0]);
  swarm_close(p[0]);
  swarm_close(p[1]);
  printf("O_NONBLOCK before the first wait: EAGAIN\n");
  return NULL;
}

int main(void) {
  swarm_thread_t t;
  CHECK(swarm_spawn(&t, NULL, body, NULL) == 0);
  CHECK(swarm_join(t, NULL) == 0);
  TEST_PASS("io_flags");
  return 0;
}
