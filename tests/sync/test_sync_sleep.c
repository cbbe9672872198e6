/* swarm_sleep_ns parks the thread, not the worker: 100 threads sleeping
 * 50 ms each on 2 workers finish in far less than 100 * 50 ms (a generous
 * bound: 2.5 s), none wakes early; 0 yields; a non-worker kernel thread
 * sleeps too. */
#include <pthread.h>

#include "sync_util.h"

static void *sleeper(void *a) {
  (void)a;
  long long t0 = mono_ms();
  swarm_sleep_ns(50 * 1000000ull);
  CHECK(mono_ms() - t0 >= 49);
  return NULL;
}
static void *kernel_sleeper(void *a) {
  return sleeper(a);
}

int main(void) {
  start2();
  swarm_sleep_ns(0);
  enum { N = 100 };
  swarm_thread_t t[N];
  long long t0 = mono_ms();
  for (int i = 0; i < N; i++)
    CHECK_EQ(swarm_spawn(&t[i], NULL, sleeper, NULL), 0);
  for (int i = 0; i < N; i++)
    CHECK_EQ(swarm_join(t[i], NULL), 0);
  CHECK(mono_ms() - t0 < 2500);
  pthread_t k;
  CHECK_EQ(pthread_create(&k, NULL, kernel_sleeper, NULL), 0);
  CHECK_EQ(pthread_join(k, NULL), 0);
  CHECK_EQ(swarm_finalize(), 0);
  TEST_PASS("sync_sleep");
  return 0;
}
