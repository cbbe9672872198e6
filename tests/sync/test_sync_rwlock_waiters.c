/* Reader-writer lock waiters get in (sync/rwlock.c, rw_wake):
 *  - prefer-writer: a reader queued behind a write holder, then a writer
 *    queued after it: the holder's unlock must let both through in turn
 *    (the first lock woke nobody here: no reader while a writer waited, and
 *    no writer that was not first in the queue; both waited for ever);
 *  - prefer-reader: a writer gets in while readers on every worker keep
 *    taking the lock without a pause (the starvation bound: a waiter that
 *    waited over 1 ms is handed the lock).
 * Waits are timed (20 s) so that a lost wake-up fails instead of hanging. */
#include "sync_util.h"

static swarm_rwlock_t rw;
static _Atomic int queued, stop;

static void *timed_reader(void *a) {
  (void)a;
  struct timespec t = in_ms(CLOCK_MONOTONIC, 20000);
  atomic_fetch_add(&queued, 1);
  int r = swarm_rwlock_timedrdlock(&rw, CLOCK_MONOTONIC, &t);
  if (r == 0)
    CHECK_EQ(swarm_rwlock_unlock(&rw), 0);
  return (void *)(long)r;
}

static void *timed_writer(void *a) {
  (void)a;
  struct timespec t = in_ms(CLOCK_MONOTONIC, 20000);
  atomic_fetch_add(&queued, 1);
  int r = swarm_rwlock_timedwrlock(&rw, CLOCK_MONOTONIC, &t);
  if (r == 0)
    CHECK_EQ(swarm_rwlock_unlock(&rw), 0);
  return (void *)(long)r;
}

/* With the caller holding rw: spawns fn and lets it queue. */
static swarm_thread_t spawn_queued(void *(*fn)(void *)) {
  swarm_thread_t t;
  int before = atomic_load(&queued);
  CHECK_EQ(swarm_spawn(&t, NULL, fn, NULL), 0);
  while (atomic_load(&queued) == before)
    swarm_sleep_ns(1000000);
  swarm_sleep_ns(20000000); /* past its spinning: it parks */
  return t;
}

static void *busy_reader(void *a) {
  long *rounds = a;
  while (!atomic_load(&stop)) {
    CHECK_EQ(swarm_rwlock_rdlock(&rw), 0);
    CHECK_EQ(swarm_rwlock_unlock(&rw), 0);
    __atomic_store_n(rounds, *rounds + 1, __ATOMIC_RELAXED);
  }
  return NULL;
}

int main(void) {
  start2();
  void *r1, *r2;
  CHECK_EQ(swarm_rwlock_init(&rw, SWARM_RWLOCK_PREFER_WRITER), 0);
  CHECK_EQ(swarm_rwlock_wrlock(&rw), 0);
  swarm_thread_t reader = spawn_queued(timed_reader);
  swarm_thread_t writer = spawn_queued(timed_writer);
  CHECK_EQ(swarm_rwlock_unlock(&rw), 0);
  CHECK_EQ(swarm_join(reader, &r1), 0);
  CHECK_EQ(swarm_join(writer, &r2), 0);
  CHECK_EQ((long)r1, 0);
  CHECK_EQ((long)r2, 0);
  CHECK_EQ(swarm_rwlock_destroy(&rw), 0);

  /* Readers on every worker (and one more) never pause. */
  CHECK_EQ(swarm_rwlock_init(&rw, SWARM_RWLOCK_PREFER_READER), 0);
  enum { READERS = 3 };
  swarm_thread_t busy[READERS];
  long rounds[READERS] = {0};
  for (int i = 0; i < READERS; i++)
    CHECK_EQ(swarm_spawn(&busy[i], NULL, busy_reader, &rounds[i]), 0);
  /* Every reader is taking the lock before the writers come (under qemu
   * the third one may otherwise not have run yet when they are done). */
  for (int i = 0; i < READERS; i++)
    while (__atomic_load_n(&rounds[i], __ATOMIC_RELAXED) == 0)
      swarm_sleep_ns(1000000);
  for (int k = 0; k < 20; k++) {
    CHECK_EQ(run(timed_writer, NULL), 0);
  }
  atomic_store(&stop, 1);
  for (int i = 0; i < READERS; i++) {
    CHECK_EQ(swarm_join(busy[i], NULL), 0);
  }
  CHECK_EQ(swarm_rwlock_destroy(&rw), 0);
  CHECK_EQ(swarm_finalize(), 0);
  TEST_PASS("sync_rwlock_waiters");
  return 0;
}
