/* Asynchronous preemption (issue 16 item 1): threads that spin-wait on a
 * flag another thread sets, more of them than workers and spares, finish
 * (without preemption the setter never runs: the process hangs); and a
 * thread of asynchronous cancel type that computes without a cancellation
 * point is cancelled. Passes on NPTL alone too. */
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#include "dropin_check.h"

enum { SPINNERS = 16 };
static atomic_int go;
static atomic_int arrived;

static void *spin_wait(void *arg) {
  (void)arg;
  atomic_fetch_add(&arrived, 1);
  while (!atomic_load_explicit(&go, memory_order_relaxed))
    ; /* no call, no yield: only preemption lets the setter run */
  return NULL;
}

static void *setter(void *arg) {
  (void)arg;
  atomic_store(&go, 1);
  return NULL;
}

static void *computes(void *arg) {
  (void)arg;
  CHECK(pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, NULL) == 0);
  atomic_store(&arrived, -1);
  volatile unsigned long x = 0;
  for (;;)
    x++;
  return NULL;
}

int main(void) {
  report_on_swarm();
  pthread_t t[SPINNERS], s;
  for (int i = 0; i < SPINNERS; i++)
    CHECK(pthread_create(&t[i], NULL, spin_wait, NULL) == 0);
  CHECK(pthread_create(&s, NULL, setter, NULL) == 0);
  for (int i = 0; i < SPINNERS; i++)
    CHECK(pthread_join(t[i], NULL) == 0);
  CHECK(pthread_join(s, NULL) == 0);
  CHECK(atomic_load(&arrived) == SPINNERS);
  printf("%d spin-waiters released by a later thread\n", SPINNERS);

  pthread_t c;
  CHECK(pthread_create(&c, NULL, computes, NULL) == 0);
  while (atomic_load(&arrived) != -1)
    usleep(1000);
  usleep(10000);
  CHECK(pthread_cancel(c) == 0);
  void *res = NULL;
  CHECK(pthread_join(c, &res) == 0);
  CHECK(res == PTHREAD_CANCELED);
  printf("asynchronous cancellation of a computing thread\n");
  printf("OK\n");
  return 0;
}
