/* Deferred cancellation: a thread blocked in pthread_cond_wait is cancelled,
 * its cleanup handler runs with the mutex held again; a thread in sleep()
 * is cancelled; a thread with cancellation disabled is not cancelled until
 * it enables it and reaches pthread_testcancel; joins return
 * PTHREAD_CANCELED. */
#include <pthread.h>
#include <unistd.h>

#include "dropin_check.h"

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
static int cleanups, waiting;

static void unlock_cleanup(void *a) {
  CHECK(pthread_mutex_trylock(&m) != 0); /* we hold it */
  cleanups++;
  pthread_mutex_unlock(a);
}
static void *cond_waiter(void *a) {
  (void)a;
  pthread_mutex_lock(&m);
  pthread_cleanup_push(unlock_cleanup, &m);
  waiting = 1;
  for (;;)
    pthread_cond_wait(&c, &m);
  pthread_cleanup_pop(0);
  return NULL;
}
static void count_cleanup(void *a) {
  __atomic_add_fetch((int *)a, 1, 0);
}
static int sleep_cleanups;
static void *sleeper(void *a) {
  (void)a;
  pthread_cleanup_push(count_cleanup, &sleep_cleanups);
  pthread_cleanup_push(count_cleanup, &sleep_cleanups);
  sleep(100);
  pthread_cleanup_pop(0);
  pthread_cleanup_pop(0);
  return NULL;
}
static volatile int may_go;
static void *disabled(void *a) {
  (void)a;
  int old;
  pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
  while (!may_go)
    usleep(1000); /* a cancellation point, but disabled */
  pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, &old);
  pthread_testcancel();
  return (void *)1L;
}

int main(void) {
  report_on_swarm();
  pthread_t a, b, d;
  void *r;
  CHECK(pthread_create(&a, NULL, cond_waiter, NULL) == 0);
  CHECK(pthread_create(&b, NULL, sleeper, NULL) == 0);
  CHECK(pthread_create(&d, NULL, disabled, NULL) == 0);
  for (;;) {
    pthread_mutex_lock(&m);
    int w = waiting;
    pthread_mutex_unlock(&m);
    if (w)
      break;
    usleep(1000);
  }
  usleep(10000);
  CHECK(pthread_cancel(a) == 0);
  CHECK(pthread_join(a, &r) == 0 && r == PTHREAD_CANCELED);
  CHECK(cleanups == 1);
  CHECK(pthread_mutex_trylock(&m) == 0); /* the handler released it */
  pthread_mutex_unlock(&m);
  CHECK(pthread_cancel(b) == 0);
  CHECK(pthread_join(b, &r) == 0 && r == PTHREAD_CANCELED);
  CHECK(sleep_cleanups == 2);
  CHECK(pthread_cancel(d) == 0);
  usleep(20000);
  may_go = 1;
  CHECK(pthread_join(d, &r) == 0 && r == PTHREAD_CANCELED);
  printf("OK cancel\n");
  return 0;
}
