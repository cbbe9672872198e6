/* errno survives migrations in the native API (issue 16 item 2): 8 swarm
 * threads on 4 workers each make a failing system call with an errno of its
 * own, then yield, sleep, or wait on a contended mutex or a condition
 * variable (points where the thread may resume on another worker), then
 * read errno; over 2 million iterations (SWARM_TEST_SCALE shortens them)
 * every read must give the thread's own value. swarm_worker_id() is read
 * beside errno, and the number of reads made on another worker than the
 * failing call is printed. errno is read in a noipa function, as in
 * test_errno.c (why: swarm.h). */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <swarm.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

enum { THREADS = 8 };

static __attribute__((noipa)) int errno_now(void) {
  return errno;
}

static int pipefd[2];

/* Thread k's failing call and the errno it must leave. */
static __attribute__((noipa)) int fail(int k) {
  switch (k % 4) {
  case 0:
    close(-1);
    return EBADF;
  case 1:
    open("/nonexistent/test_errno_migrate", O_RDONLY);
    return ENOENT;
  case 2:
    lseek(pipefd[0], 0, SEEK_SET);
    return ESPIPE;
  default:
    fcntl(pipefd[0], 123456);
    return EINVAL;
  }
}

static swarm_mutex_t m = SWARM_MUTEX_INITIALIZER;
static swarm_cond_t c = SWARM_COND_INITIALIZER;
static long iterations, moved[THREADS];

static void migrate_point(long i) {
  if (i % 64 == 0) {
    swarm_sleep_ns(1000);
  } else if (i % 16 == 0) {
    swarm_mutex_lock(&m);
    swarm_cond_broadcast(&c);
    swarm_mutex_unlock(&m);
  } else if (i % 16 == 1) {
    struct timespec t = test_time_in(CLOCK_REALTIME, 100000);
    swarm_mutex_lock(&m);
    swarm_cond_timedwait(&c, &m, &t);
    swarm_mutex_unlock(&m);
  } else {
    swarm_yield();
  }
}

static void *thread(void *arg) {
  int k = (int)(long)arg;
  for (long i = 0; i < iterations; i++) {
    int before = swarm_worker_id();
    int want = fail(k);
    migrate_point(i);
    int got = errno_now();
    if (swarm_worker_id() != before)
      moved[k]++;
    CHECK(got == want, "thread %d iteration %ld: errno %d (%s), want %d", k, i,
          got, strerror(got), want);
  }
  return NULL;
}

int main(void) {
  CHECK_EQ(pipe(pipefd), 0);
  iterations = test_scaled(2000000 / THREADS, 2000);
  swarm_config_t cfg = {.workers = 4};
  CHECK_EQ(swarm_init(&cfg), 0);
  swarm_thread_t t[THREADS];
  for (long k = 0; k < THREADS; k++)
    CHECK_EQ(swarm_spawn(&t[k], NULL, thread, (void *)k), 0);
  long total = 0;
  for (int k = 0; k < THREADS; k++) {
    CHECK_EQ(swarm_join(t[k], NULL), 0);
    total += moved[k];
  }
  CHECK_EQ(swarm_finalize(), 0);
  printf("%ld iterations, %ld read errno on another worker than the failing "
         "call\n",
         iterations * THREADS, total);
  TEST_PASS("errno_migrate");
  return 0;
}
