/* Semaphores: counting, a post wakes a parked waiter, trywait EAGAIN,
 * timedwait ETIMEDOUT (never early) and EINVAL, post EOVERFLOW at the
 * maximum, EINVAL for objects never initialised or destroyed, destroy EBUSY
 * while waited on. */
#include <string.h>

#include "sync_util.h"

static swarm_sem_t s;
static void *waiter(void *a) {
  (void)a;
  CHECK_EQ(swarm_sem_wait(&s), 0);
  return (void *)1L;
}

int main(void) {
  start2();
  swarm_sem_t z;
  memset(&z, 0, sizeof z);
  CHECK_EQ(swarm_sem_wait(&z), EINVAL);
  CHECK_EQ(swarm_sem_post(&z), EINVAL);
  CHECK_EQ(swarm_sem_init(&s, SWARM_SEM_VALUE_MAX + 1u), EINVAL);
  CHECK_EQ(swarm_sem_init(&s, 2), 0);
  CHECK_EQ(swarm_sem_wait(&s), 0);
  CHECK_EQ(swarm_sem_trywait(&s), 0);
  CHECK_EQ(swarm_sem_trywait(&s), EAGAIN);
  int v = -1;
  CHECK_EQ(swarm_sem_getvalue(&s, &v), 0);
  CHECK_EQ(v, 0);

  swarm_thread_t t[10];
  for (int i = 0; i < 10; i++)
    CHECK_EQ(swarm_spawn(&t[i], NULL, waiter, NULL), 0);
  swarm_sleep_ns(2000000);
  CHECK_EQ(swarm_sem_destroy(&s), EBUSY);
  for (int i = 0; i < 10; i++)
    CHECK_EQ(swarm_sem_post(&s), 0);
  for (int i = 0; i < 10; i++)
    CHECK_EQ(swarm_join(t[i], NULL), 0);
  CHECK_EQ(swarm_sem_getvalue(&s, &v), 0);
  CHECK_EQ(v, 0);

  long long t0 = mono_ms(); /* before the deadline: a delay between the two must
                               not look early */

  struct timespec ts = in_ms(CLOCK_REALTIME, 30);
  CHECK_EQ(swarm_sem_timedwait(&s, CLOCK_REALTIME, &ts), ETIMEDOUT);
  CHECK(mono_ms() - t0 >= 29);
  struct timespec bad = {0, 1000000000L};
  CHECK_EQ(swarm_sem_timedwait(&s, CLOCK_MONOTONIC, &bad), EINVAL);
  CHECK_EQ(swarm_sem_post(&s), 0);
  CHECK_EQ(swarm_sem_timedwait(&s, CLOCK_MONOTONIC, &bad), 0); /* had one */

  swarm_sem_t big;
  CHECK_EQ(swarm_sem_init(&big, SWARM_SEM_VALUE_MAX), 0);
  CHECK_EQ(swarm_sem_post(&big), EOVERFLOW);
  CHECK_EQ(swarm_sem_destroy(&big), 0);
  CHECK_EQ(swarm_sem_post(&big), EINVAL);
  CHECK_EQ(swarm_sem_destroy(&s), 0);
  CHECK_EQ(swarm_finalize(), 0);
  TEST_PASS("sync_sem");
  return 0;
}
