/* A producer/consumer pair and a pool of 8 more, through a bounded buffer
 * with a mutex and two condition variables (static initialisers); every
 * item arrives exactly once. */
#include <pthread.h>

#include "dropin_check.h"

#define CAP 16
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t not_full = PTHREAD_COND_INITIALIZER;
static pthread_cond_t not_empty = PTHREAD_COND_INITIALIZER;
static long buf[CAP], in_sum, out_sum;
static int head, count;
#define ITEMS 20000

static void *producer(void *a) {
  long base = (long)a;
  for (long i = 0; i < ITEMS; i++) {
    pthread_mutex_lock(&m);
    while (count == CAP)
      pthread_cond_wait(&not_full, &m);
    buf[(head + count++) % CAP] = base + i;
    in_sum += base + i;
    pthread_cond_signal(&not_empty);
    pthread_mutex_unlock(&m);
  }
  return NULL;
}
static void *consumer(void *a) {
  (void)a;
  for (long i = 0; i < ITEMS; i++) {
    pthread_mutex_lock(&m);
    while (count == 0)
      pthread_cond_wait(&not_empty, &m);
    out_sum += buf[head];
    head = (head + 1) % CAP;
    count--;
    pthread_cond_signal(&not_full);
    pthread_mutex_unlock(&m);
  }
  return NULL;
}

int main(void) {
  report_on_swarm();
  pthread_t p[5], c[5];
  for (long i = 0; i < 5; i++) {
    CHECK(pthread_create(&p[i], NULL, producer, (void *)(i * 1000000)) == 0);
    CHECK(pthread_create(&c[i], NULL, consumer, NULL) == 0);
  }
  for (int i = 0; i < 5; i++) {
    CHECK(pthread_join(p[i], NULL) == 0);
    CHECK(pthread_join(c[i], NULL) == 0);
  }
  CHECK(in_sum == out_sum && count == 0);
  printf("items %d sum %ld\nOK prodcons\n", 5 * ITEMS, out_sum);
  return 0;
}
