/*
 * dropin_nonblock_cache: a plain pthread program (run under swarmrun by
 * run_dropin.sh). Under the drop-in, what the kernel said of a descriptor's
 * O_NONBLOCK and SO_RCVTIMEO / SO_SNDTIMEO is kept after the first park
 * (src/io/opts.c) and forgotten on every fcntl F_SETFL, ioctl FIONBIO and
 * setsockopt at SOL_SOCKET of the process. Each case first parks a thread
 * on the descriptor (the answer "blocking, no timeout" is then cached),
 * changes the flag or the timeout afterwards in one of those ways, and
 * checks that the next call obeys the change: EAGAIN at once for
 * O_NONBLOCK set through fcntl, fcntl64, ioctl(FIONBIO) and through a
 * dup of the descriptor; a timeout set with SO_RCVTIMEO / SO_SNDTIMEO
 * after first use ends the wait with EAGAIN; cleared again, the call
 * waits for the data. A stale answer would park these calls for good
 * (CTest's timeout fails the test).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../pthread/dropin_check.h"

static void *late_write(void *arg) {
  int fd = (int)(intptr_t)arg;
  usleep(20000); /* the reader parks first (either way is correct) */
  CHECK(write(fd, "x", 1) == 1);
  return NULL;
}

/* A thread parks in read on rfd until a late write: the flags are then
 * known (and cached) as blocking, no timeout. */
static void park_once(int rfd, int wfd) {
  pthread_t t;
  CHECK(pthread_create(&t, NULL, late_write, (void *)(intptr_t)wfd) == 0);
  char c;
  CHECK(read(rfd, &c, 1) == 1 && c == 'x');
  CHECK(pthread_join(t, NULL) == 0);
}

/* errno read where the compiler cannot keep its address across a call
 * that parked and resumed on another worker (glibc declares
 * __errno_location const; docs/dropin.md, "errno is per swarm thread") */
static __attribute__((noipa)) int errno_now(void) {
  return errno;
}

static void expect_eagain(int fd) {
  char c;
  CHECK(read(fd, &c, 1) == -1);
  CHECK(errno_now() == EAGAIN);
}

enum { VIA_FCNTL, VIA_FCNTL64, VIA_IOCTL, VIA_DUP, NWAYS };
static const char *way_name[] = {"fcntl", "fcntl64", "ioctl(FIONBIO)",
                                 "fcntl on a dup"};

static void set_nonblock(int fd, int way, int on) {
  switch (way) {
  case VIA_FCNTL: {
    int fl = fcntl(fd, F_GETFL);
    CHECK(fcntl(fd, F_SETFL, on ? fl | O_NONBLOCK : fl & ~O_NONBLOCK) == 0);
    break;
  }
  case VIA_FCNTL64: {
    int fl = fcntl64(fd, F_GETFL);
    CHECK(fcntl64(fd, F_SETFL, on ? fl | O_NONBLOCK : fl & ~O_NONBLOCK) == 0);
    break;
  }
  case VIA_IOCTL:
    CHECK(ioctl(fd, FIONBIO, &on) == 0);
    break;
  case VIA_DUP: { /* the flag is the open file's: the copy changes it too */
    int d = dup(fd);
    CHECK(d >= 0);
    int fl = fcntl(d, F_GETFL);
    CHECK(fcntl(d, F_SETFL, on ? fl | O_NONBLOCK : fl & ~O_NONBLOCK) == 0);
    CHECK(close(d) == 0);
    break;
  }
  }
}

static void nonblock_after_park(int kind, int way) {
  int fds[2];
  if (kind)
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, fds) == 0);
  else
    CHECK(pipe(fds) == 0);
  park_once(fds[0], fds[1]);
  set_nonblock(fds[0], way, 1);
  expect_eagain(fds[0]);
  set_nonblock(fds[0], way, 0);
  park_once(fds[0], fds[1]); /* blocking again: waits for the data */
  CHECK(close(fds[0]) == 0);
  CHECK(close(fds[1]) == 0);
  printf("%s: O_NONBLOCK set through %s after a park: EAGAIN; cleared: "
         "waits again\n",
         kind ? "socket" : "pipe", way_name[way]);
}

static void set_timeo(int fd, int opt, long ms) {
  struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
  CHECK(setsockopt(fd, SOL_SOCKET, opt, &tv, sizeof tv) == 0);
}

/* Fills fd's send buffer without touching its flags; returns the bytes. */
static size_t fill(int fd) {
  char buf[1024];
  memset(buf, 'y', sizeof buf);
  size_t total = 0;
  ssize_t n;
  while ((n = send(fd, buf, sizeof buf, MSG_DONTWAIT)) > 0)
    total += (size_t)n;
  CHECK(errno_now() == EAGAIN);
  return total;
}

struct drain {
  int fd;
  size_t bytes;
};

static void *drain(void *arg) {
  struct drain *d = arg;
  usleep(20000); /* the writer parks first (either way is correct) */
  char buf[1024];
  while (d->bytes > 0) {
    ssize_t n = read(d->fd, buf, d->bytes < sizeof buf ? d->bytes : sizeof buf);
    CHECK(n > 0);
    d->bytes -= (size_t)n;
  }
  return NULL;
}

static void timeouts_after_park(void) {
  int sv[2];
  CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
  park_once(sv[0], sv[1]);
  set_timeo(sv[0], SO_RCVTIMEO, 30);
  expect_eagain(sv[0]); /* after about 30 ms */
  set_timeo(sv[0], SO_RCVTIMEO, 0);
  park_once(sv[0], sv[1]);

  /* SO_SNDTIMEO after a write that parked on a full buffer */
  int small = 4096;
  CHECK(setsockopt(sv[1], SOL_SOCKET, SO_SNDBUF, &small, sizeof small) == 0);
  struct drain d = {sv[0], fill(sv[1])};
  pthread_t t;
  CHECK(pthread_create(&t, NULL, drain, &d) == 0);
  char buf[64];
  memset(buf, 'y', sizeof buf);
  CHECK(write(sv[1], buf, sizeof buf) == (ssize_t)sizeof buf); /* parks */
  CHECK(pthread_join(t, NULL) == 0);
  fill(sv[1]);
  set_timeo(sv[1], SO_SNDTIMEO, 30);
  CHECK(write(sv[1], buf, sizeof buf) == -1);
  CHECK(errno_now() == EAGAIN);
  CHECK(close(sv[0]) == 0);
  CHECK(close(sv[1]) == 0);
  printf("socket: SO_RCVTIMEO and SO_SNDTIMEO set after first use end the "
         "wait with EAGAIN; cleared, a read waits again\n");
}

int main(void) {
  report_on_swarm();
  for (int kind = 0; kind < 2; kind++)
    for (int way = 0; way < NWAYS; way++)
      nonblock_after_park(kind, way);
  timeouts_after_park();
  printf("OK\n");
  return 0;
}
