/* Thread-specific data: each of 16 threads (and main) sees its own value;
 * destructors run once per thread with a non-NULL value, both when the
 * start routine returns and when the thread calls pthread_exit. */
#include <pthread.h>
#include <unistd.h>

#include "dropin_check.h"

static pthread_key_t key;
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static long dtor_sum;
static int dtor_calls;
static void dtor(void *v) {
  pthread_mutex_lock(&m);
  dtor_sum += (long)v;
  dtor_calls++;
  pthread_mutex_unlock(&m);
}
static void *thread(void *a) {
  long i = (long)a;
  CHECK(pthread_getspecific(key) == NULL);
  CHECK(pthread_setspecific(key, (void *)(i + 1)) == 0);
  for (int k = 0; k < 20; k++) {
    usleep(100);
    CHECK(pthread_getspecific(key) == (void *)(i + 1));
  }
  if (i % 2)
    pthread_exit(NULL);
  return NULL;
}

int main(void) {
  report_on_swarm();
  CHECK(pthread_key_create(&key, dtor) == 0);
  CHECK(pthread_setspecific(key, (void *)1000L) == 0);
  pthread_t t[16];
  for (long i = 0; i < 16; i++)
    CHECK(pthread_create(&t[i], NULL, thread, (void *)i) == 0);
  for (int i = 0; i < 16; i++)
    CHECK(pthread_join(t[i], NULL) == 0);
  CHECK(pthread_getspecific(key) == (void *)1000L);
  CHECK(dtor_calls == 16);
  CHECK(dtor_sum == 16 * 17 / 2);
  CHECK(pthread_key_delete(key) == 0);
  printf("OK keys\n");
  return 0;
}
