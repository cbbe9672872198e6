/* Kernel threads that are not workers: they spawn (the thread goes to a
 * worker), join (the kernel thread blocks until the result is ready), ask
 * for swarm_self, and are woken when the thread they join exits later. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <swarm.h>
#include <unistd.h>

#include "check.h"
#include "fib_threads.h"

static void *square(void *a) {
  long v = (long)a;
  swarm_yield();
  CHECK(swarm_worker_id() >= 0);
  return (void *)(v * v);
}

static _Atomic int release_slow;
static void *slow(void *a) {
  while (!atomic_load(&release_slow))
    swarm_yield();
  return a;
}


static void *external(void *arg) {
  long base = (long)arg;
  CHECK_EQ(swarm_worker_id(), -1);
  swarm_thread_t me = swarm_self();
  CHECK(me != SWARM_THREAD_NONE);
  CHECK_EQ(swarm_join(me, NULL), EDEADLK);
  for (long i = 0; i < 2000; i++) {
    swarm_thread_t t;
    void *r;
    CHECK_EQ(swarm_spawn(&t, NULL, square, (void *)(base + i)), 0);
    CHECK_EQ(swarm_join(t, &r), 0);
    CHECK_EQ((long)r, (base + i) * (base + i));
  }
  swarm_thread_t f;
  void *r;
  CHECK_EQ(swarm_spawn(&f, NULL, fib_threads, (void *)20L), 0);
  CHECK_EQ(swarm_join(f, &r), 0);
  CHECK_EQ((long)r, 6765);
  return NULL;
}

static swarm_thread_t slow_handle;
static void *external_joiner(void *arg) {
  (void)arg;
  void *r;
  CHECK_EQ(swarm_join(slow_handle, &r), 0); /* blocks this kernel thread */
  CHECK_EQ((long)r, 99);
  return NULL;
}

int main(void) {
  swarm_config_t cfg = {.workers = 2};
  CHECK_EQ(swarm_init(&cfg), 0);
  pthread_t kt[3];
  for (long i = 0; i < 3; i++)
    CHECK_EQ(pthread_create(&kt[i], NULL, external, (void *)(i * 10000)), 0);
  for (int i = 0; i < 3; i++)
    pthread_join(kt[i], NULL);

  /* a kernel thread blocks in join on a thread that exits later */
  CHECK_EQ(swarm_spawn(&slow_handle, NULL, slow, (void *)99), 0);
  pthread_t j;
  CHECK_EQ(pthread_create(&j, NULL, external_joiner, NULL), 0);
  usleep(50000);
  atomic_store(&release_slow, 1);
  pthread_join(j, NULL);
  CHECK_EQ(swarm_finalize(), 0);
  printf("external kernel threads spawned and joined\n");
  TEST_PASS("external");
  return 0;
}
