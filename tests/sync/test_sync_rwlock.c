/* Reader-writer locks: many readers at once, writers alone; try and timed
 * forms; a preferring-writer lock holds new readers back while a writer
 * waits; errors EDEADLK, EPERM, EBUSY, EINVAL. (The invariant stress is in
 * test_sync_stress.) */
#include "sync_util.h"

static swarm_rwlock_t rw = SWARM_RWLOCK_INITIALIZER;
static void *try_rd(void *a) {
  return (void *)(long)swarm_rwlock_tryrdlock(a);
}
static void *try_wr(void *a) {
  return (void *)(long)swarm_rwlock_trywrlock(a);
}
static void *timed_wr(void *a) {
  long long t0 = mono_ms(); /* before the deadline: a delay between the two must
                               not look early */
  struct timespec t = in_ms(CLOCK_MONOTONIC, 30);
  int r = swarm_rwlock_timedwrlock(a, CLOCK_MONOTONIC, &t);
  CHECK(mono_ms() - t0 >= 29);
  return (void *)(long)r;
}
static void *wr_then_unlock(void *a) {
  CHECK_EQ(swarm_rwlock_wrlock(a), 0);
  CHECK_EQ(swarm_rwlock_unlock(a), 0);
  return NULL;
}
static void *unlock_other(void *a) {
  return (void *)(long)swarm_rwlock_unlock(a);
}
int main(void) {
  start2();
  swarm_rwlock_t w;
  CHECK_EQ(swarm_rwlock_init(&w, 5), EINVAL);
  CHECK_EQ(swarm_rwlock_unlock(&rw), EPERM);
  CHECK_EQ(swarm_rwlock_rdlock(&rw), 0);
  CHECK_EQ(swarm_rwlock_rdlock(&rw), 0); /* recursive read */
  CHECK_EQ(run(try_rd, &rw), 0);         /* readers share */
  CHECK_EQ(swarm_rwlock_unlock(&rw), 0); /* the one try_rd took */
  CHECK_EQ(run(try_wr, &rw), EBUSY);
  CHECK_EQ(run(timed_wr, &rw), ETIMEDOUT);
  CHECK_EQ(swarm_rwlock_destroy(&rw), EBUSY);
  CHECK_EQ(swarm_rwlock_unlock(&rw), 0);
  CHECK_EQ(swarm_rwlock_unlock(&rw), 0);

  CHECK_EQ(swarm_rwlock_wrlock(&rw), 0);
  CHECK_EQ(swarm_rwlock_wrlock(&rw), EDEADLK);
  CHECK_EQ(swarm_rwlock_rdlock(&rw), EDEADLK);
  CHECK_EQ(run(try_rd, &rw), EBUSY);
  CHECK_EQ(run(unlock_other, &rw), EPERM);
  struct timespec past = {0, 0};
  CHECK_EQ(swarm_rwlock_timedrdlock(&rw, CLOCK_REALTIME, &past), EDEADLK);
  CHECK_EQ(swarm_rwlock_unlock(&rw), 0);
  CHECK_EQ(swarm_rwlock_destroy(&rw), 0);

  /* writer preference: a waiting writer blocks a new reader */
  CHECK_EQ(swarm_rwlock_init(&w, SWARM_RWLOCK_PREFER_WRITER), 0);
  CHECK_EQ(swarm_rwlock_rdlock(&w), 0);
  swarm_thread_t wt;
  CHECK_EQ(swarm_spawn(&wt, NULL, wr_then_unlock, &w), 0);
  for (int i = 0; i < 10; i++)
    swarm_sleep_ns(1000000); /* the writer queues */
  CHECK_EQ(run(try_rd, &w), EBUSY);
  struct timespec bad = {0, 1000000000L};
  CHECK_EQ(swarm_rwlock_timedrdlock(&w, CLOCK_REALTIME, &bad), EINVAL);
  CHECK_EQ(swarm_rwlock_unlock(&w), 0);
  CHECK_EQ(swarm_join(wt, NULL), 0);
  CHECK_EQ(run(try_rd, &w), 0);
  CHECK_EQ(swarm_rwlock_unlock(&w), 0);
  CHECK_EQ(swarm_rwlock_destroy(&w), 0);
  CHECK_EQ(swarm_finalize(), 0);
  TEST_PASS("sync_rwlock");
  return 0;
}
