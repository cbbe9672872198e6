/* Preemption never switches inside a shared object with TLS of its own
 * (core/preempt.c): under the drop-in a worker's swarm threads share its
 * kernel thread's TLS, so a thread switched in while another computes in
 * such an object (an allocator's thread cache, libgomp's thread state)
 * would interleave with its updates. Run at one worker and no spare:
 *  1. the program's own code is preempted: 8 threads spin-wait in it for
 *     a flag the last to arrive sets (without preemption the last never
 *     runs and the process hangs);
 *  2. 4 threads each count to ITERS in preempt_tls_lib.c's TLS counter,
 *     first through the copy the program links, then through one loaded
 *     with dlopen after the runtime started (its path in PREEMPT_TLS_LIB);
 *     each must get its own count.
 * Before the fix the counts came out mixed (e.g. 32,827,175 of 30,000,000).
 * Passes on NPTL alone too. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "dropin_check.h"

enum { SPINNERS = 8, COUNTERS = 4 };
#define ITERS 10000000L

long tls_work(long iters); /* preempt_tls_lib.c, linked */

static atomic_int arrived;

static void *spin_wait(void *arg) {
  (void)arg;
  if (atomic_fetch_add(&arrived, 1) + 1 == SPINNERS)
    return NULL;
  while (atomic_load_explicit(&arrived, memory_order_relaxed) < SPINNERS)
    ; /* no call, no yield: only preemption lets the others arrive */
  return NULL;
}

static void *count(void *arg) {
  long (*work)(long) = (long (*)(long))arg;
  return (void *)work(ITERS);
}

static int run_counters(long (*work)(long), const char *which) {
  pthread_t t[COUNTERS];
  int bad = 0;
  for (int i = 0; i < COUNTERS; i++)
    CHECK(pthread_create(&t[i], NULL, count, (void *)work) == 0);
  for (int i = 0; i < COUNTERS; i++) {
    void *r;
    CHECK(pthread_join(t[i], &r) == 0);
    if ((long)r != ITERS) {
      printf("FAIL: %s: thread %d counted %ld of %ld\n", which, i, (long)r,
             ITERS);
      bad++;
    }
  }
  return bad;
}

int main(void) {
  report_on_swarm();
  pthread_t t[SPINNERS];
  for (int i = 0; i < SPINNERS; i++)
    CHECK(pthread_create(&t[i], NULL, spin_wait, NULL) == 0);
  for (int i = 0; i < SPINNERS; i++)
    CHECK(pthread_join(t[i], NULL) == 0);
  printf("%d spin-waiters in the program's code released\n", SPINNERS);

  int bad = run_counters(tls_work, "linked");
  const char *copy = getenv("PREEMPT_TLS_LIB"); /* the copy to load */
  CHECK(copy != NULL);
  void *h = dlopen(copy, RTLD_NOW);
  if (!h) {
    printf("FAIL: dlopen %s: %s\n", copy, dlerror());
    return 1;
  }
  long (*tls_work_loaded)(long) = (long (*)(long))dlsym(h, "tls_work");
  CHECK(tls_work_loaded != NULL);
  bad += run_counters(tls_work_loaded, "loaded");
  if (bad)
    return 1;
  printf("%d threads x 2 objects, every count its own\nOK\n", COUNTERS);
  return 0;
}
