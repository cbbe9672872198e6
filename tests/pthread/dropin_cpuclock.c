/* A thread's CPU-time clock (issue 16 item 6): pthread_getcpuclockid gives
 * a clock that measures that thread's own CPU time, and so does
 * CLOCK_THREAD_CPUTIME_ID from the thread itself. One thread spins, one
 * sleeps: the spinner's clock advances (it spins until its own clock shows
 * 100 ms, which never ends if the clock stands still), never by more than
 * the process's CPU time, and agrees with what others read of it; the
 * sleeper's barely moves even when it shares a worker with the spinner
 * (SWARM_WORKERS=1: the worker's kernel thread computes all along).
 * clock_getres answers, clock_nanosleep on another thread's clock sleeps
 * until that thread has computed the time, on the caller's own clock it
 * answers EINVAL, and a joined thread's clock answers EINVAL, as NPTL and
 * the kernel do. Passes on NPTL alone too. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#include "dropin_check.h"

#define MS 1000000ull

static _Atomic int stop, spun, slept;
static _Atomic uint64_t spinner_own; /* its own clock when it had spun */

static uint64_t read_clock(clockid_t c) {
  struct timespec ts;
  CHECK_EQ(clock_gettime(c, &ts), 0);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void pause_ms(long ms) {
  struct timespec d = {.tv_sec = 0, .tv_nsec = ms * 1000000L};
  nanosleep(&d, NULL);
}

static void *spinner(void *arg) {
  (void)arg;
  uint64_t start = read_clock(CLOCK_THREAD_CPUTIME_ID);
  uint64_t wall0 = read_clock(CLOCK_MONOTONIC);
  volatile uint64_t x = 0;
  uint64_t now;
  do {
    for (int i = 0; i < 100000; i++)
      x += (uint64_t)i;
    now = read_clock(CLOCK_THREAD_CPUTIME_ID);
    /* 120 s of wall time for 100 ms of CPU: the clock stands still */
    CHECK(read_clock(CLOCK_MONOTONIC) - wall0 < 120000 * MS);
  } while (now - start < 100 * MS);
  atomic_store(&spinner_own, now);
  atomic_store(&spun, 1);
  while (!atomic_load(&stop))
    x += 1;
  return NULL;
}

static void *sleeper(void *arg) {
  (void)arg;
  for (int i = 0; i < 100; i++)
    pause_ms(1);
  atomic_store(&slept, 1);
  while (!atomic_load(&stop))
    pause_ms(1);
  return NULL;
}

static _Atomic int quick_go;
static void *quick(void *arg) {
  while (!atomic_load(&quick_go)) /* alive until main has its clock */
    pause_ms(1);
  return arg;
}

int main(void) {
  report_on_swarm();
  clockid_t self_clock, spin_clock, sleep_clock;
  CHECK_EQ(pthread_getcpuclockid(pthread_self(), &self_clock), 0);
  uint64_t m0 = read_clock(self_clock), m1 = read_clock(self_clock);
  CHECK(m1 >= m0); /* monotonic */
  struct timespec res;
  CHECK_EQ(clock_getres(self_clock, &res), 0);
  CHECK(res.tv_sec == 0 && res.tv_nsec > 0 && res.tv_nsec <= 1000000);

  /* clock_nanosleep on one's own CPU clock: EINVAL (glibc, kernel). */
  struct timespec one_ms = {.tv_sec = 0, .tv_nsec = 1000000};
  CHECK_EQ(clock_nanosleep(CLOCK_THREAD_CPUTIME_ID, 0, &one_ms, NULL), EINVAL);
  CHECK_EQ(clock_nanosleep(self_clock, 0, &one_ms, NULL), EINVAL);

  pthread_t spin, sleep;
  uint64_t proc0 = read_clock(CLOCK_PROCESS_CPUTIME_ID);
  CHECK_EQ(pthread_create(&sleep, NULL, sleeper, NULL), 0);
  CHECK_EQ(pthread_getcpuclockid(sleep, &sleep_clock), 0);
  uint64_t s0 = read_clock(sleep_clock);
  CHECK_EQ(pthread_create(&spin, NULL, spinner, NULL), 0);
  CHECK_EQ(pthread_getcpuclockid(spin, &spin_clock), 0);
  CHECK(spin_clock != sleep_clock && spin_clock != self_clock);

  while (!atomic_load(&spun) || !atomic_load(&slept))
    pause_ms(1);
  uint64_t spin_seen = read_clock(spin_clock);
  uint64_t s1 = read_clock(sleep_clock);
  uint64_t proc1 = read_clock(CLOCK_PROCESS_CPUTIME_ID);
  printf("spinner %.1f ms (own view %.1f ms), sleeper +%.3f ms, process "
         "+%.1f ms\n",
         spin_seen / 1e6, atomic_load(&spinner_own) / 1e6, (s1 - s0) / 1e6,
         (proc1 - proc0) / 1e6);
  CHECK(spin_seen >= atomic_load(&spinner_own)); /* one clock, two readers */
  CHECK(spin_seen >= 100 * MS);
  CHECK(spin_seen <= proc1 - proc0 + 10 * MS); /* CPU time, not wall */
  CHECK(s1 - s0 < 50 * MS); /* slept 100 ms: a few wake-ups' worth */

  /* Sleep until the spinner has computed 20 ms more. */
  struct timespec twenty = {.tv_sec = 0, .tv_nsec = 20000000};
  uint64_t before = read_clock(spin_clock);
  CHECK_EQ(clock_nanosleep(spin_clock, 0, &twenty, NULL), 0);
  CHECK(read_clock(spin_clock) >= before + 20 * MS);

  atomic_store(&stop, 1);
  CHECK_EQ(pthread_join(spin, NULL), 0);
  CHECK_EQ(pthread_join(sleep, NULL), 0);

  /* A thread that ended and was joined: its clock answers EINVAL. */
  pthread_t q;
  clockid_t q_clock;
  CHECK_EQ(pthread_create(&q, NULL, quick, NULL), 0);
  CHECK_EQ(pthread_getcpuclockid(q, &q_clock), 0);
  CHECK(read_clock(q_clock) < 50 * MS);
  atomic_store(&quick_go, 1);
  CHECK_EQ(pthread_join(q, NULL), 0);
  struct timespec ts;
  errno = 0;
  CHECK_EQ(clock_gettime(q_clock, &ts), -1);
  CHECK_EQ(errno, EINVAL);
  errno = 0;
  CHECK_EQ(clock_gettime(spin_clock, &ts), -1);
  CHECK_EQ(errno, EINVAL);
  printf("OK\n");
  return 0;
}
