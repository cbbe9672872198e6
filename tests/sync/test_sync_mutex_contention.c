/* Mutexes under contention: threads that keep re-locking do not starve a
 * queued one (after it has waited a while the mutex hands over in order);
 * lock, timedlock with short timeouts and trylock mixed on one mutex by
 * many threads on two workers lose no update and leave the mutex free. */
#include "sync_util.h"

static swarm_mutex_t m = SWARM_MUTEX_INITIALIZER;
static atomic_int victim_done;
static long shared_counter;

enum { HAMMER_CAP = 20 * 1000 * 1000 };

static void hold_briefly(void) {
  for (volatile int i = 0; i < 200; i++)
    ;
}

/* Re-locks at once after each unlock until the victim is through. */
static void *hammer(void *arg) {
  (void)arg;
  long rounds = 0;
  while (!atomic_load(&victim_done) && rounds < HAMMER_CAP) {
    CHECK_EQ(swarm_mutex_lock(&m), 0);
    shared_counter++;
    hold_briefly();
    CHECK_EQ(swarm_mutex_unlock(&m), 0);
    rounds++;
  }
  return (void *)rounds;
}

static void *victim(void *arg) {
  (void)arg;
  for (int i = 0; i < 200; i++) {
    CHECK_EQ(swarm_mutex_lock(&m), 0);
    shared_counter++;
    CHECK_EQ(swarm_mutex_unlock(&m), 0);
  }
  atomic_store(&victim_done, 1);
  return NULL;
}

enum { MIXERS = 16, MIX_ROUNDS = 4000 };
static atomic_long mixed_done;

static void *mixer(void *arg) {
  long id = (long)arg, mine = 0;
  for (int i = 0; i < MIX_ROUNDS; i++) {
    int r;
    switch ((i + id) % 3) {
    case 0:
      r = swarm_mutex_lock(&m);
      break;
    case 1: {
      /* 20 us: often times out under contention */
      struct timespec t = test_time_in(CLOCK_MONOTONIC, 20000);
      r = swarm_mutex_timedlock(&m, CLOCK_MONOTONIC, &t);
      CHECK(r == 0 || r == ETIMEDOUT);
      break;
    }
    default:
      r = swarm_mutex_trylock(&m);
      CHECK(r == 0 || r == EBUSY);
      break;
    }
    if (r == 0) {
      shared_counter++;
      mine++;
      if (i % 7 == 0)
        swarm_yield(); /* held across a switch: others must queue */
      CHECK_EQ(swarm_mutex_unlock(&m), 0);
    }
  }
  atomic_fetch_add(&mixed_done, mine);
  return NULL;
}

int main(void) {
  start2();
  /* 1. No starvation. */
  swarm_thread_t h[2], v;
  for (int i = 0; i < 2; i++)
    CHECK_EQ(swarm_spawn(&h[i], NULL, hammer, NULL), 0);
  CHECK_EQ(swarm_spawn(&v, NULL, victim, NULL), 0);
  CHECK_EQ(swarm_join(v, NULL), 0);
  long total = 200;
  for (int i = 0; i < 2; i++) {
    void *r;
    CHECK_EQ(swarm_join(h[i], &r), 0);
    /* The victim got through long before the hammers' cap. */
    CHECK((long)r < HAMMER_CAP);
    total += (long)r;
  }
  CHECK_EQ(shared_counter, total);
  CHECK_EQ(swarm_mutex_destroy(&m), 0);

  /* 2. Mixed lock / timedlock / trylock. */
  shared_counter = 0;
  swarm_thread_t t[MIXERS];
  for (long i = 0; i < MIXERS; i++)
    CHECK_EQ(swarm_spawn(&t[i], NULL, mixer, (void *)i), 0);
  for (int i = 0; i < MIXERS; i++)
    CHECK_EQ(swarm_join(t[i], NULL), 0);
  CHECK_EQ(shared_counter, atomic_load(&mixed_done));
  CHECK(shared_counter >= MIXERS * MIX_ROUNDS / 3); /* every plain lock */
  CHECK_EQ(swarm_mutex_destroy(&m), 0); /* free, nobody queued or woken */
  CHECK_EQ(swarm_mutex_trylock(&m), 0);
  CHECK_EQ(swarm_mutex_unlock(&m), 0);
  CHECK_EQ(swarm_finalize(), 0);
  return 0;
}
