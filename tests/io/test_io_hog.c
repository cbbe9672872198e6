/*
 * test_io_hog: I/O makes progress while every worker runs a thread that
 * computes without ever blocking or yielding. The hogs stop only after the
 * I/O is done, so the I/O cannot have waited for them:
 *  - two swarm threads ping-pong over a socketpair;
 *  - a swarm thread reads a pipe that a kernel thread of the program's
 *    (not a worker) writes to, so readiness must be noticed by the
 *    monitor, no worker being free to poll.
 * The queued threads themselves run on the monitor's spare workers.
 */
#include <pthread.h>
#include <time.h>

#include "io_test.h"

static int sv[2], p[2];
static long rounds;

static void *ping(void *arg) {
  (void)arg;
  for (long i = 0; i < rounds; i++) {
    CHECK(write_full(sv[0], &i, sizeof i) == 0);
    long v;
    CHECK(read_full(sv[0], &v, sizeof v) == 0);
    CHECK_EQ(v, i + 1);
  }
  return NULL;
}

static void *pong(void *arg) {
  (void)arg;
  for (long i = 0; i < rounds; i++) {
    long v;
    CHECK(read_full(sv[1], &v, sizeof v) == 0);
    CHECK_EQ(v, i);
    v++;
    CHECK(write_full(sv[1], &v, sizeof v) == 0);
  }
  return NULL;
}

static void *pipe_reader(void *arg) {
  (void)arg;
  for (long i = 0; i < rounds; i++) {
    long v;
    CHECK(read_full(p[0], &v, sizeof v) == 0);
    CHECK_EQ(v, i);
  }
  return NULL;
}

static void *kernel_writer(void *arg) {
  (void)arg;
  for (long i = 0; i < rounds; i++) {
    CHECK(write(p[1], &i, sizeof i) == sizeof i);
    usleep(200);
  }
  return NULL;
}

int main(void) {
  /* spare workers even on one worker (none by default there) */
  setenv("SWARM_SPARES", "2", 0);
  rounds = test_scaled(200, 20);
  int nw = swarm_num_workers();
  CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
  CHECK(pipe(p) == 0);
  swarm_thread_t *hogs = calloc((size_t)nw, sizeof *hogs);
  for (int i = 0; i < nw; i++)
    CHECK(swarm_spawn(&hogs[i], NULL, hog, NULL) == 0);
  /* main runs on here only because a spare worker took it over */
  while (atomic_load(&hogs_running) < nw)
    swarm_yield();
  swarm_thread_t a, b, r;
  CHECK(swarm_spawn(&r, NULL, pipe_reader, NULL) == 0);
  pthread_t kt;
  CHECK(pthread_create(&kt, NULL, kernel_writer, NULL) == 0);
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  CHECK(swarm_spawn(&a, NULL, ping, NULL) == 0);
  CHECK(swarm_spawn(&b, NULL, pong, NULL) == 0);
  CHECK(swarm_join(a, NULL) == 0);
  CHECK(swarm_join(b, NULL) == 0);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  CHECK(swarm_join(r, NULL) == 0);
  CHECK(pthread_join(kt, NULL) == 0);
  CHECK_EQ(atomic_load(&hogs_running), nw); /* still hogging all along */
  atomic_store(&hogs_stop, 1);
  for (int i = 0; i < nw; i++)
    CHECK(swarm_join(hogs[i], NULL) == 0);
  free(hogs);
  /* informational, not a pass criterion: the mean round trip while every
   * worker hogs (a spare runs the ping-pong) */
  double us = ((double)(t1.tv_sec - t0.tv_sec) * 1e9 +
               (double)(t1.tv_nsec - t0.tv_nsec)) /
              1e3 / (double)rounds;
  printf("PASS io_hog (%d workers hogged, %ld round trips, %.0f us each)\n", nw,
         rounds, us);
  return 0;
}
