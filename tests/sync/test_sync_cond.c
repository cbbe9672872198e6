/* Condition variables: signal wakes one waiter, broadcast all; timed waits
 * time out (never early) against CLOCK_REALTIME and CLOCK_MONOTONIC and come
 * back holding the mutex; errors: EINVAL (bad clock, bad timespec), EPERM
 * (error-checking mutex not held), EBUSY (destroy while waited on). */
#include "sync_util.h"

static swarm_mutex_t m = SWARM_MUTEX_INITIALIZER;
static swarm_cond_t c = SWARM_COND_INITIALIZER;
static int ready_flag, woken;

static void *waiter(void *a) {
  (void)a;
  swarm_mutex_lock(&m);
  while (!ready_flag)
    CHECK_EQ(swarm_cond_wait(&c, &m), 0);
  woken++;
  swarm_mutex_unlock(&m);
  return NULL;
}

static swarm_cond_t cm;
static void *timed_waiter(void *a) {
  int clock = (int)(long)a;
  swarm_mutex_lock(&m);
  long long t0 = mono_ms(); /* before the deadline: a delay between the two must
                               not look early */
  struct timespec t = in_ms(clock, 40);
  int r = clock == CLOCK_MONOTONIC ? swarm_cond_timedwait(&cm, &m, &t)
                                   : swarm_cond_timedwait(&c, &m, &t);
  CHECK(mono_ms() - t0 >= 39);
  CHECK_EQ(swarm_mutex_trylock(&m), EBUSY); /* we hold it again */
  swarm_mutex_unlock(&m);
  return (void *)(long)r;
}

int main(void) {
  start2();
  CHECK_EQ(swarm_cond_init(&cm, CLOCK_PROCESS_CPUTIME_ID), EINVAL);
  CHECK_EQ(swarm_cond_init(&cm, CLOCK_MONOTONIC), 0);

  enum { N = 50 };
  swarm_thread_t t[N];
  for (int i = 0; i < N; i++)
    CHECK_EQ(swarm_spawn(&t[i], NULL, waiter, NULL), 0);
  /* let them all wait */
  for (int i = 0; i < 20; i++)
    swarm_sleep_ns(1000000);
  CHECK_EQ(swarm_cond_destroy(&c), EBUSY);
  swarm_mutex_lock(&m);
  ready_flag = 1;
  swarm_cond_signal(&c);
  swarm_mutex_unlock(&m);
  swarm_sleep_ns(5000000);
  swarm_mutex_lock(&m);
  CHECK(woken >= 1);
  swarm_cond_broadcast(&c);
  swarm_mutex_unlock(&m);
  for (int i = 0; i < N; i++)
    CHECK_EQ(swarm_join(t[i], NULL), 0);
  CHECK_EQ(woken, N);
  CHECK_EQ(swarm_cond_destroy(&c), 0);

  swarm_thread_t a, b;
  void *ra, *rb;
  CHECK_EQ(swarm_spawn(&a, NULL, timed_waiter, (void *)(long)CLOCK_REALTIME),
           0);
  CHECK_EQ(swarm_spawn(&b, NULL, timed_waiter, (void *)(long)CLOCK_MONOTONIC),
           0);
  CHECK_EQ(swarm_join(a, &ra), 0);
  CHECK_EQ(swarm_join(b, &rb), 0);
  CHECK_EQ((long)ra, ETIMEDOUT);
  CHECK_EQ((long)rb, ETIMEDOUT);

  swarm_mutex_lock(&m);
  struct timespec bad = {0, -1};
  CHECK_EQ(swarm_cond_timedwait(&c, &m, &bad), EINVAL);
  CHECK_EQ(swarm_cond_clockwait(&c, &m, 99, &bad), EINVAL);
  struct timespec past = {0, 0};
  CHECK_EQ(swarm_cond_clockwait(&c, &m, CLOCK_MONOTONIC, &past), ETIMEDOUT);
  swarm_mutex_unlock(&m);

  swarm_mutex_t em = SWARM_ERRORCHECK_MUTEX_INITIALIZER;
  CHECK_EQ(swarm_cond_wait(&c, &em), EPERM);
  swarm_mutex_t rm = SWARM_RECURSIVE_MUTEX_INITIALIZER;
  swarm_mutex_lock(&rm);
  swarm_mutex_lock(&rm);
  struct timespec soon = in_ms(CLOCK_REALTIME, 5);
  CHECK_EQ(swarm_cond_timedwait(&c, &rm, &soon), ETIMEDOUT);
  CHECK_EQ(swarm_mutex_unlock(&rm), 0); /* depth 2 restored */
  CHECK_EQ(swarm_mutex_unlock(&rm), 0);
  CHECK_EQ(swarm_mutex_unlock(&rm), EPERM);
  CHECK_EQ(swarm_finalize(), 0);
  TEST_PASS("sync_cond");
  return 0;
}
