/*
 * bench/peers/pingpong-server-epoll.c — pingpong's hand-written event
 * loop: one loop (kernel thread, own epoll) per CPU in the affinity mask,
 * all accepting from one non-blocking listening socket (EPOLLEXCLUSIVE),
 * each echoing on the connections it accepted. The practical upper bound
 * for a server on these cores. Prints "port N"; runs until killed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

static int listen_fd;

static void *loop(void *arg) {
  (void)arg;
  int ep = epoll_create1(0);
  struct epoll_event ev = {.events = EPOLLIN | EPOLLEXCLUSIVE,
                           .data.fd = listen_fd};
  epoll_ctl(ep, EPOLL_CTL_ADD, listen_fd, &ev);
  struct epoll_event evs[256];
  char buf[256];
  int one = 1;
  for (;;) {
    int n = epoll_wait(ep, evs, 256, -1);
    for (int i = 0; i < n; i++) {
      int fd = evs[i].data.fd;
      if (fd == listen_fd) {
        int c;
        while ((c = accept4(listen_fd, NULL, NULL, SOCK_NONBLOCK)) >= 0) {
          setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
          struct epoll_event ce = {.events = EPOLLIN, .data.fd = c};
          epoll_ctl(ep, EPOLL_CTL_ADD, c, &ce);
        }
        continue;
      }
      ssize_t r = read(fd, buf, sizeof buf);
      if (r > 0) {
        if (write(fd, buf, (size_t)r) != r)
          close(fd); /* 1-byte echoes never fill the buffer */
      } else if (r == 0 || errno != EAGAIN) {
        close(fd);
      }
    }
  }
  return NULL;
}

int main(void) {
  signal(SIGPIPE, SIG_IGN);
  struct rlimit rl;
  getrlimit(RLIMIT_NOFILE, &rl);
  rl.rlim_cur = rl.rlim_max;
  setrlimit(RLIMIT_NOFILE, &rl);
  listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  int one = 1;
  setsockopt(listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_in a = {.sin_family = AF_INET,
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof a;
  if (bind(listen_fd, (struct sockaddr *)&a, sizeof a) ||
      listen(listen_fd, 4096) ||
      getsockname(listen_fd, (struct sockaddr *)&a, &len)) {
    perror("pingpong-server-epoll");
    return 1;
  }
  printf("port %d\n", ntohs(a.sin_port));
  fflush(stdout);
  cpu_set_t set;
  sched_getaffinity(0, sizeof set, &set);
  int n = CPU_COUNT(&set);
  for (int i = 1; i < n; i++) {
    pthread_t t;
    pthread_create(&t, NULL, loop, NULL);
  }
  loop(NULL);
}
