/* Reader-writer locks of both kinds under a mix of plain, try and timed
 * (some already expired, some short) read and write locks from more
 * threads than workers: the waits that time out, the woken waiters that
 * lose and queue again, and prefer-writer's readers held back by queued
 * writers all happen, and every thread must finish (a lost wake-up hangs:
 * the alarm fails it; the first rwlock hung here) with the invariants kept: a
 * writer holds alone, a reader never beside a writer. Writers sometimes yield
 * holding the lock so that others queue behind them. */
#include <stdbool.h>
#include <unistd.h>

#include "sync_util.h"

enum { THREADS = 12, ROUNDS = 3000 };

static swarm_rwlock_t rw;
static _Atomic int readers_in, writers_in;
static _Atomic long timeouts, busy;

static void *mix_thread(void *a) {
  uint64_t x = (uint64_t)(long)a * 2654435761u + 1;
  for (int i = 0; i < ROUNDS; i++) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    unsigned pick = (unsigned)(x >> 33);
    bool writer = pick % 4 == 0;
    int how = (int)(pick / 4 % 4); /* 0, 1: plain; 2: try; 3: timed */
    int r;
    if (how == 2) {
      r = writer ? swarm_rwlock_trywrlock(&rw) : swarm_rwlock_tryrdlock(&rw);
      if (r == EBUSY) {
        atomic_fetch_add(&busy, 1);
        continue;
      }
    } else if (how == 3) {
      /* 0 ms: already expired unless the lock is free; else 0-2 ms. */
      struct timespec t = in_ms(CLOCK_MONOTONIC, (long)(pick / 16 % 3));
      r = writer ? swarm_rwlock_timedwrlock(&rw, CLOCK_MONOTONIC, &t)
                 : swarm_rwlock_timedrdlock(&rw, CLOCK_MONOTONIC, &t);
      if (r == ETIMEDOUT) {
        atomic_fetch_add(&timeouts, 1);
        continue;
      }
    } else {
      r = writer ? swarm_rwlock_wrlock(&rw) : swarm_rwlock_rdlock(&rw);
    }
    CHECK_EQ(r, 0);
    if (writer) {
      CHECK_EQ(atomic_fetch_add(&writers_in, 1), 0);
      CHECK_EQ(atomic_load(&readers_in), 0);
      if (pick % 8 == 0)
        swarm_yield();
      atomic_fetch_sub(&writers_in, 1);
    } else {
      atomic_fetch_add(&readers_in, 1);
      CHECK_EQ(atomic_load(&writers_in), 0);
      atomic_fetch_sub(&readers_in, 1);
    }
    CHECK_EQ(swarm_rwlock_unlock(&rw), 0);
  }
  return NULL;
}

static void run_kind(int kind) {
  CHECK_EQ(swarm_rwlock_init(&rw, kind), 0);
  swarm_thread_t t[THREADS];
  for (long i = 0; i < THREADS; i++)
    CHECK_EQ(swarm_spawn(&t[i], NULL, mix_thread, (void *)i), 0);
  for (int i = 0; i < THREADS; i++)
    CHECK_EQ(swarm_join(t[i], NULL), 0);
  CHECK_EQ(swarm_rwlock_destroy(&rw), 0); /* nothing left held or woken */
}

int main(void) {
  alarm(60);
  start2();
  run_kind(SWARM_RWLOCK_PREFER_READER);
  run_kind(SWARM_RWLOCK_PREFER_WRITER);
  printf("timed out %ld, busy %ld\n", atomic_load(&timeouts),
         atomic_load(&busy));
  CHECK_EQ(swarm_finalize(), 0);
  TEST_PASS("sync_rwlock_mix");
  return 0;
}
