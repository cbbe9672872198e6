/* errno survives asynchronous preemption (issue 16 item 2): 4 threads each
 * make a failing system call with an errno of its own, then compute
 * (reading CLOCK_MONOTONIC through the vDSO in a loop) until another
 * thread has made progress, then read errno. With one worker
 * (SWARM_WORKERS=1, as the CTest registration runs it) other threads
 * progress only if this one was preempted between its failing call and
 * its read, by the runtime's interrupt signal, while the others ran on
 * the same kernel thread and set that kernel thread's errno to theirs;
 * there the program also requires that most iterations were preempted so.
 * Every read must give the thread's own value. Passes with NPTL alone too
 * (the kernel preempts). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "dropin_check.h"

enum { THREADS = 4 };

static _Atomic long progress[THREADS];
static _Atomic int done;
static long interrupted[THREADS];
static long iterations;

static __attribute__((noipa)) int errno_now(void) {
  return errno;
}

static __attribute__((noipa)) int fail(int k) {
  switch (k) {
  case 0:
    close(-1);
    return EBADF;
  case 1:
    open("/nonexistent/dropin_errno_preempt", O_RDONLY);
    return ENOENT;
  case 2:
    mkdir("/proc", 0700);
    return EEXIST;
  default:
    open("/dev/null/dropin_errno_preempt", O_RDONLY);
    return ENOTDIR;
  }
}

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static long others(int k) {
  long s = 0;
  for (int j = 0; j < THREADS; j++)
    if (j != k)
      s += atomic_load_explicit(&progress[j], memory_order_relaxed);
  return s;
}

static void *thread(void *arg) {
  int k = (int)(long)arg;
  for (long i = 0; i < iterations; i++) {
    int want = fail(k);
    long seen = others(k);
    uint64_t until = now_ns() + 50000000ull; /* at most 50 ms */
    while (others(k) == seen && now_ns() < until)
      ;
    if (others(k) != seen)
      interrupted[k]++;
    int got = errno_now();
    CHECK(got == want, "thread %d iteration %ld: errno %d (%s), want %d", k, i,
          got, strerror(got), want);
    atomic_fetch_add_explicit(&progress[k], 1, memory_order_relaxed);
  }
  /* Keep progressing until everyone is done, so that no one waits 50 ms
   * per iteration for threads that have finished. */
  atomic_fetch_add(&done, 1);
  while (atomic_load(&done) < THREADS) {
    atomic_fetch_add_explicit(&progress[k], 1, memory_order_relaxed);
    sched_yield();
  }
  return NULL;
}

int main(void) {
  report_on_swarm();
  iterations = test_scaled(100, 25);
  pthread_t t[THREADS];
  for (long k = 0; k < THREADS; k++)
    CHECK_EQ(pthread_create(&t[k], NULL, thread, (void *)k), 0);
  for (int k = 0; k < THREADS; k++)
    CHECK_EQ(pthread_join(t[k], NULL), 0);
  long n = 0;
  for (int k = 0; k < THREADS; k++)
    n += interrupted[k];
  printf("%ld iterations, %ld in which other threads ran between the failing "
         "call and the read of errno\n",
         iterations * THREADS, n);
  const char *w = getenv("SWARM_WORKERS");
  if (dlsym(RTLD_DEFAULT, "swarm_self") && w && strcmp(w, "1") == 0)
    CHECK(n >= iterations * THREADS / 2,
          "one worker: only %ld preemptions between call and read", n);
  printf("OK\n");
  return 0;
}
