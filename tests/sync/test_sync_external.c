/* Every primitive from kernel threads that are not workers, mixed with swarm
 * threads: a mutex counter shared by 4 kernel threads and 16 swarm threads
 * stays exact; kernel threads wait on a condition variable and semaphore
 * signalled by swarm threads and the other way round; a kernel thread's
 * timed waits time out (futex path, no worker involved); a barrier mixes
 * both kinds of thread. Also with no runtime running at all. */
#include <pthread.h>

#include "sync_util.h"

static swarm_mutex_t m = SWARM_MUTEX_INITIALIZER;
static swarm_cond_t c = SWARM_COND_INITIALIZER;
static swarm_sem_t s, never; /* never: nobody posts it */
static swarm_barrier_t bar;
static long counter, iters;
static int go;

static void *bump(void *a) {
  (void)a;
  for (long i = 0; i < iters; i++) {
    swarm_mutex_lock(&m);
    counter++;
    swarm_mutex_unlock(&m);
  }
  swarm_barrier_wait(&bar);
  return NULL;
}

static void *kernel_waits(void *a) {
  (void)a;
  swarm_mutex_lock(&m);
  while (!go)
    swarm_cond_wait(&c, &m);
  swarm_mutex_unlock(&m);
  CHECK_EQ(swarm_sem_wait(&s), 0);
  long long t0 = mono_ms(); /* before the deadline: a delay between the two must
                               not look early */
  struct timespec t = in_ms(CLOCK_MONOTONIC, 20);
  CHECK_EQ(swarm_sem_timedwait(&never, CLOCK_MONOTONIC, &t), ETIMEDOUT);
  CHECK(mono_ms() - t0 >= 19);
  swarm_mutex_lock(&m);
  t = in_ms(CLOCK_REALTIME, 20);
  CHECK_EQ(swarm_cond_timedwait(&c, &m, &t), ETIMEDOUT);
  swarm_mutex_unlock(&m);
  swarm_sleep_ns(1000000);
  return NULL;
}

static void *swarm_signals(void *a) {
  (void)a;
  swarm_sleep_ns(5000000);
  swarm_mutex_lock(&m);
  go = 1;
  swarm_cond_broadcast(&c);
  swarm_mutex_unlock(&m);
  for (int i = 0; i < 4; i++)
    swarm_sem_post(&s);
  return NULL;
}

int main(void) {
  /* before the runtime exists: kernel threads only */
  CHECK_EQ(swarm_sem_init(&s, 0), 0);
  CHECK_EQ(swarm_sem_init(&never, 0), 0);
  {
    struct timespec t = in_ms(CLOCK_MONOTONIC, 10);
    CHECK_EQ(swarm_sem_timedwait(&s, CLOCK_MONOTONIC, &t), ETIMEDOUT);
    CHECK_EQ(swarm_is_running(), 0);
  }
  start2();
  iters = test_scaled(20000, 1000);
  CHECK_EQ(swarm_barrier_init(&bar, 4 + 16 + 1), 0);
  pthread_t k[4];
  swarm_thread_t t[16];
  for (int i = 0; i < 4; i++)
    CHECK_EQ(pthread_create(&k[i], NULL, bump, NULL), 0);
  for (int i = 0; i < 16; i++)
    CHECK_EQ(swarm_spawn(&t[i], NULL, bump, NULL), 0);
  swarm_barrier_wait(&bar);
  for (int i = 0; i < 16; i++)
    CHECK_EQ(swarm_join(t[i], NULL), 0);
  for (int i = 0; i < 4; i++)
    CHECK_EQ(pthread_join(k[i], NULL), 0);
  CHECK_EQ(counter, 20 * iters);

  for (int i = 0; i < 4; i++)
    CHECK_EQ(pthread_create(&k[i], NULL, kernel_waits, NULL), 0);
  swarm_thread_t sig;
  CHECK_EQ(swarm_spawn(&sig, NULL, swarm_signals, NULL), 0);
  CHECK_EQ(swarm_join(sig, NULL), 0);
  /* main must not block its worker in pthread_join while the kernel
   * threads' wake-ups might need it: they do not (futexes), so it may. */
  for (int i = 0; i < 4; i++)
    CHECK_EQ(pthread_join(k[i], NULL), 0);
  CHECK_EQ(swarm_finalize(), 0);
  TEST_PASS("sync_external");
  return 0;
}
