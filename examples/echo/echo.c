/*
 * examples/echo/echo.c — a TCP echo server, one swarm thread per
 * connection: the smallest complete network program on swarm.
 *
 *   echo --port P [--addr IPv4]      (P = 0 picks a free port)
 *
 * Each connection's thread is plain blocking code — swarm_read what came,
 * swarm_write it back, until the client closes. While a thread waits, its
 * worker runs other connections' threads; the runtime's poller finds the
 * data and completes the read. Workers: SWARM_WORKERS (default one per
 * CPU). Prints "echo: listening on ADDR port N" once it accepts.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "swarm.h"
#include "swarm/io.h"

static void *connection(void *arg) {
  int fd = (int)(intptr_t)arg;
  char buf[4096];
  ssize_t n;
  while ((n = swarm_read(fd, buf, sizeof buf)) > 0)
    if (swarm_write(fd, buf, (size_t)n) != n) /* writes all, or fails */
      break;
  swarm_close(fd);
  return NULL;
}

int main(int argc, char **argv) {
  const char *addr = "0.0.0.0";
  long port = -1;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--port") == 0)
      port = strtol(argv[i + 1], NULL, 10);
    else if (strcmp(argv[i], "--addr") == 0)
      addr = argv[i + 1];
  }
  struct sockaddr_in sa = {.sin_family = AF_INET,
                           .sin_port = htons((uint16_t)port)};
  if (argc % 2 == 0 || port < 0 || port > 65535 ||
      inet_pton(AF_INET, addr, &sa.sin_addr) != 1) {
    fprintf(stderr, "usage: %s --port P [--addr IPv4]\n", argv[0]);
    return 2;
  }
  signal(SIGPIPE, SIG_IGN); /* a vanished client: EPIPE, not death */
  int ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
  socklen_t len = sizeof sa;
  if (ls < 0 || setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) ||
      bind(ls, (struct sockaddr *)&sa, sizeof sa) || listen(ls, 1024) ||
      getsockname(ls, (struct sockaddr *)&sa, &len)) {
    fprintf(stderr, "echo: %s:%ld: %s\n", addr, port, strerror(errno));
    return 1;
  }
  printf("echo: listening on %s port %d\n", addr, ntohs(sa.sin_port));
  fflush(stdout);
  swarm_attr_t attr; /* detached: nobody joins a connection */
  swarm_attr_init(&attr);
  swarm_attr_setdetachstate(&attr, SWARM_CREATE_DETACHED);
  swarm_attr_setstacksize(&attr, 64 * 1024);
  for (;;) {
    int c = swarm_accept(ls, NULL, NULL);
    if (c < 0)
      continue; /* e.g. ECONNABORTED, EMFILE: keep serving the others */
    setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (swarm_spawn(NULL, &attr, connection, (void *)(intptr_t)c) != 0)
      swarm_close(c); /* out of memory: turn this one away */
  }
}
