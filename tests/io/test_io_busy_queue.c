/*
 * test_io_busy_queue: I/O makes progress while every worker's run queue
 * never empties. Yielding threads keep each worker switching all the time,
 * so the scheduler loop's idle poll point is never reached; the monitor
 * sees the workers' I/O go stale while they still switch and asks them to
 * poll at their next park (DUE_IO_POLL, src/core/sched.c), instead of
 * polling for them from its own kernel thread. A swarm thread echoes 8-byte
 * messages over two pipes with a kernel thread of the program's (not a
 * worker), so every message's readiness must be noticed while the queues
 * are full. One worker, whatever SWARM_WORKERS says: with more, a worker
 * whose yielders were all stolen would idle and poll for itself. Checks:
 * every round trip completes with the right value, the yielders ran all
 * along, and the worker made polls on the monitor's request
 * (stats.polls_due; SWARM_STATS prints it).
 */
#include <pthread.h>
#include <time.h>

#include "core/core.h"
#include "io_test.h"

static int to_swarm[2], to_kernel[2];
static long rounds;
static atomic_int stop_yielders;
static atomic_long yields;

static void *yielder(void *arg) {
  (void)arg;
  while (!atomic_load(&stop_yielders)) {
    swarm_yield();
    atomic_fetch_add_explicit(&yields, 1, memory_order_relaxed);
  }
  return NULL;
}

static void *echo(void *arg) {
  (void)arg;
  for (long i = 0; i < rounds; i++) {
    long v;
    CHECK(read_full(to_swarm[0], &v, sizeof v) == 0);
    CHECK_EQ(v, i);
    v = -v;
    CHECK(write_full(to_kernel[1], &v, sizeof v) == 0);
  }
  return NULL;
}

static void *kernel_side(void *arg) {
  (void)arg;
  for (long i = 0; i < rounds; i++) {
    CHECK(write(to_swarm[1], &i, sizeof i) == sizeof i);
    long v;
    CHECK(read(to_kernel[0], &v, sizeof v) == sizeof v);
    CHECK_EQ(v, -i);
    usleep(300); /* longer than a poll skip, shorter than the stale time */
  }
  return NULL;
}

static uint64_t polls_due(void) {
  uint64_t n = 0;
  for (int i = 0; i < swarm_rt.nslots; i++)
    n +=
        __atomic_load_n(&swarm_rt.workers[i].stats.polls_due, __ATOMIC_RELAXED);
  return n;
}

int main(void) {
  rounds = test_scaled(300, 30);
  swarm_config_t one = {.workers = 1};
  CHECK_EQ(swarm_init(&one), 0);
  int nw = swarm_num_workers();
  CHECK(pipe(to_swarm) == 0 && pipe(to_kernel) == 0);
  int ny = 3;
  swarm_thread_t *ys = calloc((size_t)ny, sizeof *ys);
  CHECK(ys != NULL);
  for (int i = 0; i < ny; i++)
    CHECK(swarm_spawn(&ys[i], NULL, yielder, NULL) == 0);
  uint64_t due_before = polls_due();
  swarm_thread_t e;
  CHECK(swarm_spawn(&e, NULL, echo, NULL) == 0);
  pthread_t kt;
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  CHECK(pthread_create(&kt, NULL, kernel_side, NULL) == 0);
  CHECK(swarm_join(e, NULL) == 0);    /* parks: the worker runs the rest */
  CHECK(pthread_join(kt, NULL) == 0); /* past its last read: brief */
  clock_gettime(CLOCK_MONOTONIC, &t1);
  long yielded = atomic_load(&yields);
  uint64_t due = polls_due() - due_before;
  atomic_store(&stop_yielders, 1);
  for (int i = 0; i < ny; i++)
    CHECK(swarm_join(ys[i], NULL) == 0);
  free(ys);
  CHECK(yielded > rounds, "the yielders ran %ld times in %ld round trips",
        yielded, rounds);
  CHECK(due > 0, "no poll at the monitor's request in %ld round trips", rounds);
  CHECK_EQ(swarm_finalize(), 0);
  /* informational: the mean round trip with every run queue full */
  double us = ((double)(t1.tv_sec - t0.tv_sec) * 1e9 +
               (double)(t1.tv_nsec - t0.tv_nsec)) /
              1e3 / (double)rounds;
  printf("PASS io_busy_queue (%d workers, %d yielders, %ld round trips, "
         "%.0f us each, %llu polls asked)\n",
         nw, ny, rounds, us, (unsigned long long)due);
  return 0;
}
