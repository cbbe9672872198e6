/* An idle runtime uses about no CPU: after a burst of work, every worker
 * goes to sleep; over one second the process's CPU time stays far below
 * one core-second (limit 5% of one core, generous for a noisy machine). */
#include <swarm.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "fib_threads.h"


static double cpu_seconds(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
         (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

static void *sleeper(void *arg) {
  (void)arg;
  /* Worker threads all idle while this kernel-level sleep runs: the flow
   * blocking its worker here is on purpose (no swarm sleep in core). */
  struct timespec ts = {1, 0};
  nanosleep(&ts, NULL);
  return NULL;
}

int main(void) {
  swarm_config_t cfg = {.workers = 2};
  CHECK_EQ(swarm_init(&cfg), 0);
  CHECK_EQ((long)fib_threads((void *)22L), 17711);
  usleep(300000); /* let spinning workers fall asleep */
  double before = cpu_seconds();
  sleeper(NULL);
  double used = cpu_seconds() - before;
  printf("CPU time while idle for 1 s with 2 workers: %.4f s\n", used);
  CHECK(used < 0.05);
  CHECK_EQ(swarm_finalize(), 0);
  TEST_PASS("idle_cpu");
  return 0;
}
