/* Mutexes: the three types' semantics and every error code; static
 * initialisers; trylock; timedlock times out (never early) on both clocks
 * and rejects a bad timespec; a waiter parks (its worker runs others). */
#include "sync_util.h"

static swarm_mutex_t held = SWARM_MUTEX_INITIALIZER;
static swarm_mutex_t srec = SWARM_RECURSIVE_MUTEX_INITIALIZER;
static swarm_mutex_t serr = SWARM_ERRORCHECK_MUTEX_INITIALIZER;

static void *try_other(void *arg) {
  swarm_mutex_t *m = arg;
  return (void *)(long)swarm_mutex_trylock(m);
}
static void *unlock_other(void *arg) {
  return (void *)(long)swarm_mutex_unlock(arg);
}
static void *timed_other(void *arg) {
  long long t0 = mono_ms(); /* before the deadline: a delay between the two must
                               not look early */
  struct timespec t = in_ms(CLOCK_MONOTONIC, 50);
  int r = swarm_mutex_timedlock(arg, CLOCK_MONOTONIC, &t);
  CHECK(mono_ms() - t0 >= 49);
  return (void *)(long)r;
}
static void *lock_then_unlock(void *arg) {
  CHECK_EQ(swarm_mutex_lock(arg), 0);
  CHECK_EQ(swarm_mutex_unlock(arg), 0);
  return (void *)1L;
}
int main(void) {
  start2();
  swarm_mutex_t m;
  CHECK_EQ(swarm_mutex_init(NULL, 0), EINVAL);
  CHECK_EQ(swarm_mutex_init(&m, 7), EINVAL);
  CHECK_EQ(swarm_mutex_lock(NULL), EINVAL);

  /* normal */
  CHECK_EQ(swarm_mutex_init(&m, SWARM_MUTEX_NORMAL), 0);
  CHECK_EQ(swarm_mutex_unlock(&m), EPERM); /* nobody holds it */
  CHECK_EQ(swarm_mutex_lock(&m), 0);
  CHECK_EQ(swarm_mutex_trylock(&m), EBUSY);
  CHECK_EQ(swarm_mutex_destroy(&m), EBUSY);
  CHECK_EQ(run(try_other, &m), EBUSY);
  CHECK_EQ(run(timed_other, &m), ETIMEDOUT);
  CHECK_EQ(run(unlock_other, &m), 0); /* normal: another thread may unlock */
  CHECK_EQ(swarm_mutex_destroy(&m), 0);

  /* error-checking */
  CHECK_EQ(swarm_mutex_lock(&serr), 0);
  CHECK_EQ(swarm_mutex_lock(&serr), EDEADLK);
  CHECK_EQ(swarm_mutex_trylock(&serr), EBUSY);
  CHECK_EQ(run(unlock_other, &serr), EPERM);
  CHECK_EQ(swarm_mutex_unlock(&serr), 0);
  CHECK_EQ(swarm_mutex_unlock(&serr), EPERM);

  /* recursive */
  CHECK_EQ(swarm_mutex_lock(&srec), 0);
  CHECK_EQ(swarm_mutex_lock(&srec), 0);
  CHECK_EQ(swarm_mutex_trylock(&srec), 0);
  CHECK_EQ(run(try_other, &srec), EBUSY);
  CHECK_EQ(run(unlock_other, &srec), EPERM);
  CHECK_EQ(swarm_mutex_unlock(&srec), 0);
  CHECK_EQ(swarm_mutex_unlock(&srec), 0);
  CHECK_EQ(run(try_other, &srec), EBUSY); /* still held once */
  CHECK_EQ(swarm_mutex_unlock(&srec), 0);
  CHECK_EQ(swarm_mutex_unlock(&srec), EPERM);
  CHECK_EQ(swarm_mutex_destroy(&srec), 0);

  /* timedlock: bad timespec, past deadline, realtime clock */
  CHECK_EQ(swarm_mutex_lock(&held), 0);
  struct timespec bad = {0, 2000000000L};
  CHECK_EQ(swarm_mutex_timedlock(&m, CLOCK_REALTIME, &bad), 0); /* free */
  CHECK_EQ(swarm_mutex_unlock(&m), 0);
  swarm_mutex_t m2 = SWARM_MUTEX_INITIALIZER;
  CHECK_EQ(swarm_mutex_lock(&m2), 0);
  CHECK_EQ(swarm_mutex_timedlock(&m2, CLOCK_REALTIME, &bad), EINVAL);
  CHECK_EQ(swarm_mutex_timedlock(&m2, 12345, &bad), EINVAL);
  struct timespec past = {1, 0};
  CHECK_EQ(swarm_mutex_timedlock(&m2, CLOCK_REALTIME, &past), ETIMEDOUT);
  long long t0 = mono_ms(); /* before the deadline: a delay between the two must
                               not look early */
  struct timespec rt = in_ms(CLOCK_REALTIME, 30);
  CHECK_EQ(swarm_mutex_timedlock(&m2, CLOCK_REALTIME, &rt), ETIMEDOUT);
  CHECK(mono_ms() - t0 >= 29);
  CHECK_EQ(swarm_mutex_unlock(&m2), 0);

  /* a waiter gets the mutex when it is released */
  swarm_thread_t t;
  CHECK_EQ(swarm_spawn(&t, NULL, lock_then_unlock, &held), 0);
  swarm_yield();
  CHECK_EQ(swarm_mutex_unlock(&held), 0);
  void *r;
  CHECK_EQ(swarm_join(t, &r), 0);
  CHECK_EQ((long)r, 1);
  CHECK_EQ(swarm_mutex_destroy(&held), 0);
  CHECK_EQ(swarm_finalize(), 0);
  TEST_PASS("sync_mutex");
  return 0;
}
