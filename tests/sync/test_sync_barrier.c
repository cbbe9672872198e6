/* Barriers: exactly one serial thread per round, reusable, EINVAL for a
 * zero count, EBUSY when destroyed mid-round. (Rounds under contention are
 * in test_sync_stress.) */
#include "sync_util.h"

static swarm_barrier_t b;
static _Atomic int serial;
static void *wait_once(void *a) {
  (void)a;
  if (swarm_barrier_wait(&b) == SWARM_BARRIER_SERIAL_THREAD)
    atomic_fetch_add(&serial, 1);
  return NULL;
}

int main(void) {
  start2();
  CHECK_EQ(swarm_barrier_init(&b, 0), EINVAL);
  CHECK_EQ(swarm_barrier_init(&b, 1), 0);
  CHECK_EQ(swarm_barrier_wait(&b), SWARM_BARRIER_SERIAL_THREAD);
  CHECK_EQ(swarm_barrier_destroy(&b), 0);
  CHECK_EQ(swarm_barrier_wait(&b), EINVAL); /* destroyed */
  CHECK_EQ(swarm_barrier_init(&b, 4), 0);
  for (int round = 0; round < 3; round++) {
    swarm_thread_t t[3];
    for (int i = 0; i < 3; i++)
      CHECK_EQ(swarm_spawn(&t[i], NULL, wait_once, NULL), 0);
    swarm_sleep_ns(2000000);
    CHECK_EQ(swarm_barrier_destroy(&b), EBUSY);
    wait_once(NULL);
    for (int i = 0; i < 3; i++)
      CHECK_EQ(swarm_join(t[i], NULL), 0);
    CHECK_EQ(atomic_load(&serial), round + 1);
  }
  CHECK_EQ(swarm_barrier_destroy(&b), 0);
  CHECK_EQ(swarm_finalize(), 0);
  TEST_PASS("sync_barrier");
  return 0;
}
