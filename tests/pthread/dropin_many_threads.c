/* 10,000 threads alive at once (they wait on a barrier until all exist),
 * then joined, each result checked; then 1,000 detached threads counted
 * with a mutex; thread attributes (stack size, detach state) honoured. */
#include <pthread.h>
#include <string.h>

#include "dropin_check.h"

#define N 10000
static pthread_barrier_t all_made;
static pthread_t ids[N];
static void *alive(void *a) {
  long i = (long)a;
  CHECK(pthread_equal(pthread_self(), ids[i])); /* *out set before it ran */
  pthread_barrier_wait(&all_made);
  return (void *)(i * 3);
}

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
static int detached_done;
static void *detached(void *a) {
  (void)a;
  char big[200 * 1024]; /* needs the 512K stack asked for */
  memset(big, 1, sizeof big);
  pthread_mutex_lock(&m);
  detached_done += big[sizeof big - 1];
  pthread_cond_signal(&c);
  pthread_mutex_unlock(&m);
  return NULL;
}

int main(void) {
  report_on_swarm();
  CHECK(pthread_barrier_init(&all_made, NULL, N + 1) == 0);
  for (long i = 0; i < N; i++)
    CHECK(pthread_create(&ids[i], NULL, alive, (void *)i) == 0);
  pthread_barrier_wait(&all_made);
  for (long i = 0; i < N; i++) {
    void *r;
    CHECK(pthread_join(ids[i], &r) == 0);
    CHECK((long)r == i * 3);
  }
  CHECK(pthread_barrier_destroy(&all_made) == 0);

  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_attr_setstacksize(&attr, 512 * 1024);
  for (int i = 0; i < 1000; i++) {
    pthread_t t;
    CHECK(pthread_create(&t, &attr, detached, NULL) == 0);
  }
  pthread_attr_destroy(&attr);
  pthread_mutex_lock(&m);
  while (detached_done < 1000)
    pthread_cond_wait(&c, &m);
  pthread_mutex_unlock(&m);
  printf("OK many_threads\n");
  return 0;
}
