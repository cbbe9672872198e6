/*
 * test_io_timeout: waits end at their timeouts with the kernel's results:
 * SO_RCVTIMEO on recv and read (EAGAIN), SO_SNDTIMEO on a full socket's
 * send (EAGAIN), poll and ppoll (0), select (0, sets cleared), epoll_wait
 * (0), swarm_fd_wait (0); none returns before its timeout; a descriptor
 * the program made non-blocking returns EAGAIN at once; data that arrives
 * before the timeout is delivered; MSG_WAITALL waits for all it asked.
 */
#include <fcntl.h>
#include <poll.h>
#include <sys/epoll.h>

#include "io_test.h"

#define MS 1000000ull

static uint64_t now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void set_timeo(int fd, int opt, long ms) {
  struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
  CHECK(setsockopt(fd, SOL_SOCKET, opt, &tv, sizeof tv) == 0);
}

static int sv[2];

static void *late_writer(void *arg) {
  (void)arg;
  swarm_sleep_ns(20 * MS);
  CHECK_EQ(swarm_write(sv[1], "x", 1), 1);
  return NULL;
}

static void *split_writer(void *arg) {
  (void)arg;
  CHECK_EQ(swarm_write(sv[1], "abcd", 4), 4);
  swarm_sleep_ns(10 * MS);
  CHECK_EQ(swarm_write(sv[1], "efgh", 4), 4);
  return NULL;
}

static void *body(void *arg) {
  (void)arg;
  CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
  char buf[64];

  set_timeo(sv[0], SO_RCVTIMEO, 50);
  uint64_t t0 = now();
  CHECK_EQ(swarm_recv(sv[0], buf, sizeof buf, 0), -1);
  CHECK_EQ(ERRNO, EAGAIN);
  CHECK(now() - t0 >= 50 * MS);
  t0 = now();
  CHECK_EQ(swarm_read(sv[0], buf, sizeof buf), -1);
  CHECK_EQ(ERRNO, EAGAIN);
  CHECK(now() - t0 >= 50 * MS);

  /* data before the timeout is delivered, not a timeout */
  set_timeo(sv[0], SO_RCVTIMEO, 5000);
  swarm_thread_t w;
  CHECK(swarm_spawn(&w, NULL, late_writer, NULL) == 0);
  CHECK_EQ(swarm_read(sv[0], buf, sizeof buf), 1);
  CHECK_EQ(buf[0], 'x');
  CHECK(swarm_join(w, NULL) == 0);

  /* MSG_WAITALL waits for all of it, across two writes */
  CHECK(swarm_spawn(&w, NULL, split_writer, NULL) == 0);
  CHECK_EQ(swarm_recv(sv[0], buf, 8, MSG_WAITALL), 8);
  CHECK(memcmp(buf, "abcdefgh", 8) == 0);
  CHECK(swarm_join(w, NULL) == 0);

  /* SO_SNDTIMEO on a full socket */
  set_timeo(sv[1], SO_SNDTIMEO, 30);
  int sndbuf = 4096;
  setsockopt(sv[1], SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf);
  static char big[1 << 16];
  ssize_t r;
  while ((r = swarm_send(sv[1], big, sizeof big, MSG_DONTWAIT)) > 0)
    ;
  CHECK_EQ(ERRNO, EAGAIN);
  t0 = now();
  CHECK_EQ(swarm_send(sv[1], big, sizeof big, 0), -1);
  CHECK_EQ(ERRNO, EAGAIN);
  CHECK(now() - t0 >= 30 * MS);

  int p[2];
  CHECK(pipe(p) == 0);
  struct pollfd pf = {p[0], POLLIN, 0};
  t0 = now();
  CHECK_EQ(swarm_poll(&pf, 1, 40), 0);
  CHECK(now() - t0 >= 40 * MS);
  struct timespec ts = {0, 30 * (long)MS};
  t0 = now();
  CHECK_EQ(swarm_ppoll(&pf, 1, &ts, NULL), 0);
  CHECK(now() - t0 >= 30 * MS);
  fd_set rs;
  FD_ZERO(&rs);
  FD_SET(p[0], &rs);
  struct timeval tv = {0, 30000};
  t0 = now();
  CHECK_EQ(swarm_select(p[0] + 1, &rs, NULL, NULL, &tv), 0);
  CHECK(now() - t0 >= 30 * MS);
  CHECK(!FD_ISSET(p[0], &rs));
  t0 = now();
  CHECK_EQ(swarm_fd_wait(p[0], POLLIN, 25), 0);
  CHECK(now() - t0 >= 25 * MS);
  int ep = epoll_create1(0);
  struct epoll_event ev = {.events = EPOLLIN, .data.fd = p[0]};
  CHECK(epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev) == 0);
  t0 = now();
  CHECK_EQ(swarm_epoll_wait(ep, &ev, 1, 30), 0);
  CHECK(now() - t0 >= 30 * MS);
  /* ... and readiness ends those waits */
  CHECK_EQ(swarm_write(p[1], "y", 1), 1);
  CHECK_EQ(swarm_epoll_wait(ep, &ev, 1, 5000), 1);
  CHECK_EQ(swarm_poll(&pf, 1, 5000), 1);
  CHECK(pf.revents & POLLIN);
  FD_SET(p[0], &rs);
  CHECK_EQ(swarm_select(p[0] + 1, &rs, NULL, NULL, NULL), 1);
  CHECK(FD_ISSET(p[0], &rs));

  /* a descriptor the program made non-blocking: EAGAIN at once */
  int q[2];
  CHECK(pipe(q) == 0);
  CHECK(fcntl(q[0], F_SETFL, O_NONBLOCK) == 0);
  CHECK_EQ(swarm_read(q[0], buf, 1), -1);
  CHECK_EQ(ERRNO, EAGAIN);

  swarm_close(ep);
  swarm_close(p[0]);
  swarm_close(p[1]);
  swarm_close(q[0]);
  swarm_close(q[1]);
  swarm_close(sv[0]);
  swarm_close(sv[1]);
  return NULL;
}

int main(void) {
  swarm_thread_t t;
  CHECK(swarm_spawn(&t, NULL, body, NULL) == 0);
  CHECK(swarm_join(t, NULL) == 0);
  TEST_PASS("io_timeout");
  return 0;
}
