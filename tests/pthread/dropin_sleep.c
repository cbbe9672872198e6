/* The sleeping calls park threads, not workers: 64 threads each sleep with
 * usleep, nanosleep, clock_nanosleep (relative and absolute) and sleep(0);
 * none wakes early, all finish. The run's stats (checked by run_dropin.sh)
 * show the threads ran on swarm. */
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include "dropin_check.h"

static long long now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}
static void *sleeper(void *a) {
  (void)a;
  long long t0 = now_ms();
  CHECK(usleep(20000) == 0);
  CHECK(now_ms() - t0 >= 19);
  t0 = now_ms();
  struct timespec d = {0, 20000000};
  CHECK(nanosleep(&d, NULL) == 0);
  CHECK(now_ms() - t0 >= 19);
  t0 = now_ms();
  CHECK(clock_nanosleep(CLOCK_MONOTONIC, 0, &d, NULL) == 0);
  CHECK(now_ms() - t0 >= 19);
  struct timespec abs;
  clock_gettime(CLOCK_REALTIME, &abs);
  abs.tv_nsec += 20000000;
  if (abs.tv_nsec >= 1000000000) {
    abs.tv_sec++;
    abs.tv_nsec -= 1000000000;
  }
  t0 = now_ms();
  CHECK(clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &abs, NULL) == 0);
  CHECK(now_ms() - t0 >= 19);
  CHECK(sleep(0) == 0);
  struct timespec bad = {0, 1000000000};
  CHECK(nanosleep(&bad, NULL) == -1);
  return NULL;
}

int main(void) {
  report_on_swarm();
  pthread_t t[64];
  for (int i = 0; i < 64; i++)
    CHECK(pthread_create(&t[i], NULL, sleeper, NULL) == 0);
  for (int i = 0; i < 64; i++)
    CHECK(pthread_join(t[i], NULL) == 0);
  CHECK(sched_yield() == 0);
  printf("OK sleep\n");
  return 0;
}
