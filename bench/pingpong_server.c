/*
 * bench/pingpong_server.c — pingpong's swarm server: a swarm thread per
 * connection doing plain blocking swarm_read / swarm_write (swarm/io.h).
 * Prints "port N" on stdout once it listens on 127.0.0.1; runs until killed.
 * It never changes O_NONBLOCK or a socket timeout after a descriptor's
 * first wait, so it lets swarm keep what the kernel said of them
 * (swarm_io_cache_flags: two system calls fewer per round trip);
 * PINGPONG_EXACT_FLAGS=1 leaves that out, to compare.
 */
#define _GNU_SOURCE
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "swarm.h"
#include "swarm/io.h"

static void *echo(void *arg) {
  int fd = (int)(intptr_t)arg;
  char buf[256];
  ssize_t n;
  while ((n = swarm_read(fd, buf, sizeof buf)) > 0)
    if (swarm_write(fd, buf, (size_t)n) != n)
      break;
  swarm_close(fd);
  return NULL;
}

int main(void) {
  signal(SIGPIPE, SIG_IGN);
  const char *exact = getenv("PINGPONG_EXACT_FLAGS");
  if (!exact || strcmp(exact, "1") != 0)
    swarm_io_cache_flags();
  struct rlimit rl;
  getrlimit(RLIMIT_NOFILE, &rl);
  rl.rlim_cur = rl.rlim_max;
  setrlimit(RLIMIT_NOFILE, &rl);
  int s = socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_in a = {.sin_family = AF_INET,
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof a;
  if (bind(s, (struct sockaddr *)&a, sizeof a) || listen(s, 4096) ||
      getsockname(s, (struct sockaddr *)&a, &len)) {
    perror("pingpong-server-swarm");
    return 1;
  }
  printf("port %d\n", ntohs(a.sin_port));
  fflush(stdout);
  swarm_attr_t attr;
  swarm_attr_init(&attr);
  swarm_attr_setdetachstate(&attr, SWARM_CREATE_DETACHED);
  swarm_attr_setstacksize(&attr, 64 * 1024);
  for (;;) {
    int c = swarm_accept(s, NULL, NULL);
    if (c < 0)
      continue;
    setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    swarm_spawn(NULL, &attr, echo, (void *)(intptr_t)c);
  }
}
