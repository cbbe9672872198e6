/* errno is each thread's own across migrations (issue 16 item 2): 8
 * threads each make a failing system call with an errno of its own, then
 * give the scheduler a chance to move them (sched_yield, a short sleep, a
 * contended mutex, a condition wait), then read errno; over 2 million
 * iterations (SWARM_TEST_SCALE shortens them) every read must give the
 * thread's own value. The kernel thread id is read beside errno, so the
 * program counts how often a thread really changed worker between the
 * failing call and the read, and prints it.
 *
 * errno is read in a function the compiler may not analyse (noipa): glibc
 * declares __errno_location const, so within one function the compiler may
 * keep errno's address across a call that switches workers (the limit
 * docs/dropin.md describes). Passes with NPTL alone too. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "dropin_check.h"

enum { THREADS = 8 };

static __attribute__((noipa)) int errno_now(void) {
  return errno;
}
static __attribute__((noipa)) long tid_now(void) {
  return syscall(SYS_gettid);
}

static int pipefd[2];

/* Thread k's failing call and the errno it must leave (eight different
 * ones). */
static __attribute__((noipa)) int fail(int k) {
  switch (k % THREADS) {
  case 0:
    close(-1);
    return EBADF;
  case 1:
    open("/nonexistent/dropin_errno", O_RDONLY);
    return ENOENT;
  case 2:
    lseek(pipefd[0], 0, SEEK_SET);
    return ESPIPE;
  case 3:
    open("/dev/null/dropin_errno", O_RDONLY);
    return ENOTDIR;
  case 4:
    kill(-2147483647, 0);
    return ESRCH;
  case 5:
    fcntl(pipefd[0], 123456);
    return EINVAL;
  case 6:
    mmap(NULL, 0, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return EINVAL; /* length 0 */
  default: {
    /* valid buffers: qemu-user checks them before the descriptor */
    int type;
    socklen_t len = sizeof type;
    getsockopt(pipefd[0], SOL_SOCKET, SO_TYPE, &type, &len);
  }
    return ENOTSOCK;
  }
}

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
static long ticks, iterations;
static long migrations[THREADS];

static void migrate_point(long i) {
  if (i % 64 == 0) {
    usleep(1);
  } else if (i % 16 == 0) {
    pthread_mutex_lock(&m);
    ticks++;
    pthread_cond_broadcast(&c);
    pthread_mutex_unlock(&m);
  } else if (i % 16 == 1) {
    struct timespec t = test_time_in(CLOCK_REALTIME, 100000);
    pthread_mutex_lock(&m);
    pthread_cond_timedwait(&c, &m, &t);
    pthread_mutex_unlock(&m);
  } else {
    sched_yield();
  }
}

static void *thread(void *arg) {
  int k = (int)(long)arg;
  for (long i = 0; i < iterations; i++) {
    long before = tid_now();
    int want = fail(k);
    CHECK(errno_now() == want, "thread %d: errno %d after its call", k,
          errno_now());
    migrate_point(i);
    int got = errno_now();
    if (tid_now() != before)
      migrations[k]++;
    CHECK(got == want, "thread %d iteration %ld: errno %d (%s), want %d", k, i,
          got, strerror(got), want);
  }
  return NULL;
}

int main(void) {
  report_on_swarm();
  iterations = test_scaled(2000000 / THREADS, 2000);
  CHECK_EQ(pipe(pipefd), 0);
  pthread_t t[THREADS];
  for (long k = 0; k < THREADS; k++)
    CHECK_EQ(pthread_create(&t[k], NULL, thread, (void *)k), 0);
  for (int k = 0; k < THREADS; k++)
    CHECK_EQ(pthread_join(t[k], NULL), 0);
  long moved = 0;
  for (int k = 0; k < THREADS; k++)
    moved += migrations[k];
  printf("%ld iterations, %ld with a change of kernel thread between the "
         "failing call and the read of errno\n",
         iterations * THREADS, moved);
  printf("OK\n");
  return 0;
}
