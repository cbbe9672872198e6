/*
 * test_io_echo: a thread-per-connection echo server on swarm threads with
 * 10,000 connections open at once (fewer under SWARM_TEST_SCALE), each
 * client sending messages of random sizes; every byte that comes back is
 * checked. The clients run in a child process (its own runtime), so each
 * process holds one end of every connection within the descriptor limit.
 */
#include <stdlib.h>
#include <sys/wait.h>

#include "io_test.h"

static int nconns, nmsgs;
static int listen_fd, port;
static swarm_barrier_t all_connected;
static atomic_int served, failures;

static void *serve(void *arg) {
  int fd = (int)(intptr_t)arg;
  char buf[8192];
  for (;;) {
    ssize_t n = swarm_read(fd, buf, sizeof buf);
    if (n <= 0)
      break;
    if (write_full(fd, buf, (size_t)n) != 0) {
      atomic_fetch_add(&failures, 1);
      break;
    }
  }
  swarm_close(fd);
  atomic_fetch_add(&served, 1);
  return NULL;
}

static void *acceptor(void *arg) {
  (void)arg;
  swarm_attr_t attr;
  swarm_attr_init(&attr);
  swarm_attr_setdetachstate(&attr, SWARM_CREATE_DETACHED);
  for (int i = 0; i < nconns; i++) {
    int fd = swarm_accept(listen_fd, NULL, NULL);
    CHECK(fd >= 0);
    CHECK(swarm_spawn(NULL, &attr, serve, (void *)(intptr_t)fd) == 0);
  }
  return NULL;
}

static void *client(void *arg) {
  unsigned seed = (unsigned)(uintptr_t)arg * 2654435761u + 1;
  int fd = connect_loopback(port);
  CHECK(fd >= 0);
  /* every connection is open before any message flows */
  swarm_barrier_wait(&all_connected);
  char out[4096], in[4096];
  for (int m = 0; m < nmsgs; m++) {
    size_t len = 1 + rand_r(&seed) % sizeof out;
    for (size_t i = 0; i < len; i++)
      out[i] = (char)rand_r(&seed);
    CHECK(write_full(fd, out, len) == 0);
    CHECK(read_full(fd, in, len) == 0);
    CHECK(memcmp(in, out, len) == 0);
  }
  swarm_close(fd);
  return NULL;
}

int main(void) {
  long limit = raise_nofile();
  nconns = (int)test_scaled(10000, 200);
  if (nconns > limit - 64)
    nconns = (int)(limit - 64);
  nmsgs = 4;
  listen_fd = listen_loopback(&port, 4096);
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    swarm_close(listen_fd);
    CHECK(swarm_barrier_init(&all_connected, (unsigned)nconns) == 0);
    swarm_thread_t *t = calloc((size_t)nconns, sizeof *t);
    CHECK(t);
    for (int i = 0; i < nconns; i++)
      CHECK(swarm_spawn(&t[i], NULL, client, (void *)(intptr_t)i) == 0);
    for (int i = 0; i < nconns; i++)
      CHECK(swarm_join(t[i], NULL) == 0);
    free(t);
    _exit(0);
  }
  swarm_thread_t acc;
  CHECK(swarm_spawn(&acc, NULL, acceptor, NULL) == 0);
  CHECK(swarm_join(acc, NULL) == 0);
  int status;
  CHECK(waitpid(pid, &status, 0) == pid);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  while (atomic_load(&served) < nconns)
    swarm_sleep_ns(1000000);
  CHECK_EQ(atomic_load(&failures), 0);
  printf("PASS io_echo (%d connections at once, %d messages each)\n", nconns,
         nmsgs);
  return 0;
}
