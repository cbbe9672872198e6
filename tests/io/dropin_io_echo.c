/*
 * dropin_io_echo: a plain pthread thread-per-connection echo server and
 * its clients in one process, knowing nothing of swarm (run under swarmrun
 * by run_dropin.sh). Every blocking call is libc's: accept, connect, read,
 * write, send, recv, poll, select, pipe, close. Checks every byte echoed
 * (messages up to 256 KiB, so writes block on full socket buffers), that a
 * blocking pipe read wakes on another thread's write, and that the
 * program's view of O_NONBLOCK is its own: fcntl(F_GETFL) shows what it
 * set, and a descriptor it made non-blocking says EAGAIN.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../pthread/dropin_check.h"

#define CLIENTS 100
#define ROUNDS 3

static int listen_fd, port;

static void *serve(void *arg) {
  int fd = (int)(intptr_t)arg;
  char *buf = malloc(65536); /* not __thread: per worker under swarm */
  ssize_t n;
  while ((n = read(fd, buf, 65536)) > 0) {
    for (ssize_t off = 0; off < n;) {
      ssize_t w = write(fd, buf + off, (size_t)(n - off));
      CHECK(w > 0);
      off += w;
    }
  }
  CHECK(n == 0);
  free(buf);
  close(fd);
  return NULL;
}

static void *acceptor(void *arg) {
  (void)arg;
  for (int i = 0; i < CLIENTS; i++) {
    int fd = accept(listen_fd, NULL, NULL);
    CHECK(fd >= 0);
    pthread_t t;
    CHECK(pthread_create(&t, NULL, serve, (void *)(intptr_t)fd) == 0);
    pthread_detach(t);
  }
  return NULL;
}

static void *client(void *arg) {
  unsigned seed = (unsigned)(uintptr_t)arg + 7;
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  CHECK(fd >= 0);
  int fl = fcntl(fd, F_GETFL);
  CHECK(fl >= 0 && !(fl & O_NONBLOCK)); /* blocking, as far as we know */
  struct sockaddr_in a = {.sin_family = AF_INET,
                          .sin_port = htons((uint16_t)port),
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  CHECK(connect(fd, (struct sockaddr *)&a, sizeof a) == 0);
  size_t cap = 256 * 1024;
  unsigned char *out = malloc(cap), *in = malloc(cap);
  for (int r = 0; r < ROUNDS; r++) {
    size_t len = 1 + rand_r(&seed) % cap;
    for (size_t i = 0; i < len; i++)
      out[i] = (unsigned char)rand_r(&seed);
    /* a writer thread of our own would be simpler; instead interleave:
     * send what fits, read what came back, until all is echoed */
    size_t sent = 0, got = 0;
    while (got < len) {
      if (sent < len) {
        struct pollfd p = {fd, POLLOUT, 0};
        if (poll(&p, 1, 0) == 1) {
          ssize_t w =
              send(fd, out + sent, len - sent > 4096 ? 4096 : len - sent, 0);
          CHECK(w > 0);
          sent += (size_t)w;
          continue;
        }
      }
      fd_set rs;
      FD_ZERO(&rs);
      FD_SET(fd, &rs);
      struct timeval tv = {5, 0};
      int ready = select(fd + 1, &rs, NULL, NULL, sent < len ? &tv : NULL);
      CHECK(ready >= 0, "%s", strerror(errno));
      if (!FD_ISSET(fd, &rs))
        continue;
      ssize_t n = r % 2 ? recv(fd, in + got, len - got, 0)
                        : read(fd, in + got, len - got);
      CHECK(n > 0);
      got += (size_t)n;
    }
    CHECK(memcmp(in, out, len) == 0);
  }
  free(out);
  free(in);
  close(fd);
  return NULL;
}

static int pp[2];

static void *pipe_writer(void *arg) {
  (void)arg;
  usleep(20000);
  CHECK(write(pp[1], "hello", 5) == 5);
  return NULL;
}

int main(void) {
  report_on_swarm();
  listen_fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET,
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof a;
  CHECK(bind(listen_fd, (struct sockaddr *)&a, sizeof a) == 0);
  CHECK(listen(listen_fd, 128) == 0);
  CHECK(getsockname(listen_fd, (struct sockaddr *)&a, &len) == 0);
  port = ntohs(a.sin_port);
  pthread_t acc, c[CLIENTS];
  CHECK(pthread_create(&acc, NULL, acceptor, NULL) == 0);
  for (int i = 0; i < CLIENTS; i++)
    CHECK(pthread_create(&c[i], NULL, client, (void *)(intptr_t)i) == 0);
  for (int i = 0; i < CLIENTS; i++)
    CHECK(pthread_join(c[i], NULL) == 0);
  CHECK(pthread_join(acc, NULL) == 0);
  printf("echo: %d connections, %d rounds each, every byte checked\n", CLIENTS,
         ROUNDS);

  /* a blocking pipe read, woken by another thread's write */
  CHECK(pipe(pp) == 0);
  pthread_t w;
  CHECK(pthread_create(&w, NULL, pipe_writer, NULL) == 0);
  char buf[8];
  CHECK(read(pp[0], buf, sizeof buf) == 5 && memcmp(buf, "hello", 5) == 0);
  CHECK(pthread_join(w, NULL) == 0);
  /* the program's own O_NONBLOCK */
  CHECK(fcntl(pp[0], F_SETFL, O_NONBLOCK) == 0);
  CHECK(fcntl(pp[0], F_GETFL) & O_NONBLOCK);
  errno = 0;
  CHECK(read(pp[0], buf, 1) == -1 && errno == EAGAIN);
  int off = 0;
  CHECK(ioctl(pp[0], FIONBIO, &off) == 0);
  CHECK(!(fcntl(pp[0], F_GETFL) & O_NONBLOCK));
  int dupd = dup(pp[0]);
  CHECK(dupd >= 0 && !(fcntl(dupd, F_GETFL) & O_NONBLOCK));
  CHECK(close(dupd) == 0 && close(pp[0]) == 0 && close(pp[1]) == 0);
  printf("pipe and O_NONBLOCK view: ok\n");
  printf("OK\n");
  return 0;
}
