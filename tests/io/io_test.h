/*
 * tests/io/io_test.h — helpers the I/O tests share: loopback sockets,
 * descriptor limits, and CPU hogs that occupy every worker without ever
 * blocking or yielding.
 */
#ifndef SWARM_IO_TEST_H
#define SWARM_IO_TEST_H

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "check.h"
#include "swarm.h"
#include "swarm/io.h"

/* errno read where the compiler cannot keep its address across a switch
 * to another worker (tests/core/test_errno.c explains). */
static __attribute__((noipa, unused)) int *errno_here(void) {
  return &errno;
}
#define ERRNO (*errno_here())

/* A listening TCP socket on 127.0.0.1, any port; *port gets the port. */
static inline int listen_loopback(int *port, int backlog) {
  int s = socket(AF_INET, SOCK_STREAM, 0);
  CHECK(s >= 0);
  int one = 1;
  setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_in a = {.sin_family = AF_INET,
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  CHECK(bind(s, (struct sockaddr *)&a, sizeof a) == 0);
  CHECK(listen(s, backlog) == 0);
  socklen_t len = sizeof a;
  CHECK(getsockname(s, (struct sockaddr *)&a, &len) == 0);
  *port = ntohs(a.sin_port);
  return s;
}

static inline int connect_loopback(int port) {
  int s = socket(AF_INET, SOCK_STREAM, 0);
  if (s < 0)
    return -1;
  struct sockaddr_in a = {.sin_family = AF_INET,
                          .sin_port = htons((uint16_t)port),
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  if (swarm_connect(s, (struct sockaddr *)&a, sizeof a) != 0) {
    swarm_close(s);
    return -1;
  }
  return s;
}

/* Raises the soft descriptor limit to the hard one; returns the limit. */
static inline long raise_nofile(void) {
  struct rlimit r;
  CHECK(getrlimit(RLIMIT_NOFILE, &r) == 0);
  r.rlim_cur = r.rlim_max;
  setrlimit(RLIMIT_NOFILE, &r);
  getrlimit(RLIMIT_NOFILE, &r);
  return (long)r.rlim_cur;
}

static inline int read_full(int fd, void *buf, size_t n) {
  char *p = buf;
  while (n) {
    ssize_t r = swarm_read(fd, p, n);
    if (r <= 0)
      return -1;
    p += r;
    n -= (size_t)r;
  }
  return 0;
}

static inline int write_full(int fd, const void *buf, size_t n) {
  const char *p = buf;
  while (n) {
    ssize_t r = swarm_write(fd, p, n);
    if (r <= 0)
      return -1;
    p += r;
    n -= (size_t)r;
  }
  return 0;
}

/* CPU hogs: each spins, never blocking or yielding, until hogs_stop is set;
 * hogs_running counts those that started. */
static atomic_int hogs_stop, hogs_running;
static inline void *hog(void *arg) {
  (void)arg;
  atomic_fetch_add(&hogs_running, 1);
  volatile unsigned long x = 0;
  while (!atomic_load_explicit(&hogs_stop, memory_order_relaxed))
    x++;
  return NULL;
}

#endif
