/*
 * bench/peers/pingpong-server-nptl.c — pingpong's plain pthread server: a
 * kernel thread per connection doing blocking read / write. Not linked to
 * swarm: pingpong runs it as is (server nptl) and under swarmrun (server
 * swarmrun). Prints "port N" on stdout once it listens; runs until killed.
 */
#define _GNU_SOURCE
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

static void *echo(void *arg) {
  int fd = (int)(intptr_t)arg;
  char buf[256];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0)
    if (write(fd, buf, (size_t)n) != n)
      break;
  close(fd);
  return NULL;
}

int main(void) {
  signal(SIGPIPE, SIG_IGN);
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
    perror("pingpong-server-nptl");
    return 1;
  }
  printf("port %d\n", ntohs(a.sin_port));
  fflush(stdout);
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_attr_setstacksize(&attr, 64 * 1024);
  for (;;) {
    int c = accept(s, NULL, NULL);
    if (c < 0)
      continue;
    setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    pthread_t t;
    if (pthread_create(&t, &attr, echo, (void *)(intptr_t)c) != 0)
      close(c);
  }
}
