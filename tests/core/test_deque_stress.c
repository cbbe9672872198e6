/* The work-stealing deque under contention: one owner pushing and taking at
 * the bottom, three thieves stealing from the top, with growth from a tiny
 * initial array. Every item must be consumed exactly once: none lost, none
 * duplicated. */
#include <pthread.h>
#include <stdatomic.h>

#include "check.h"
#include "core/deque.h"

#define THIEVES 3
static long n_items;
static struct deque dq;
static _Atomic int *seen;
static _Atomic bool done;
static _Atomic long stolen_total;

static void consume(void *item) {
  long v = (long)(uintptr_t)item - 16; /* items are 16.. so never NULL/ABORT */
  CHECK(v >= 0 && v < n_items);
  int prev = atomic_fetch_add(&seen[v], 1);
  if (prev != 0) {
    fprintf(stderr, "item %ld consumed twice\n", v);
    exit(1);
  }
}

static void *thief(void *arg) {
  (void)arg;
  long mine = 0;
  while (!atomic_load(&done) || deque_size(&dq) > 0) {
    void *it = deque_steal(&dq);
    if (it && it != DEQUE_ABORT) {
      consume(it);
      mine++;
    }
  }
  atomic_fetch_add(&stolen_total, mine);
  return NULL;
}

int main(void) {
  n_items = test_scaled(4000000, 100000);
  seen = calloc((size_t)n_items, sizeof *seen);
  CHECK(seen);
  CHECK_EQ(deque_init(&dq, 2), 0);
  pthread_t th[THIEVES];
  for (int i = 0; i < THIEVES; i++)
    CHECK_EQ(pthread_create(&th[i], NULL, thief, NULL), 0);
  long next = 0, taken = 0;
  unsigned rng = 12345;
  while (next < n_items) {
    /* bursts of pushes (forcing growth) interleaved with takes */
    rng = rng * 1103515245u + 12345u;
    int burst = 1 + (rng >> 16) % 64;
    for (int i = 0; i < burst && next < n_items; i++)
      CHECK(deque_push(&dq, (void *)(uintptr_t)(16 + next++)));
    int takes = (rng >> 8) % 48;
    for (int i = 0; i < takes; i++) {
      void *it = deque_take(&dq);
      if (!it)
        break;
      consume(it);
      taken++;
    }
  }
  void *it;
  while ((it = deque_take(&dq))) {
    consume(it);
    taken++;
  }
  atomic_store(&done, true);
  for (int i = 0; i < THIEVES; i++)
    pthread_join(th[i], NULL);
  for (long i = 0; i < n_items; i++)
    if (atomic_load(&seen[i]) != 1) {
      fprintf(stderr, "item %ld consumed %d times\n", i,
              atomic_load(&seen[i]));
      return 1;
    }
  printf("%ld items: %ld taken by the owner, %ld stolen\n", n_items, taken,
         atomic_load(&stolen_total));
  CHECK_EQ(taken + atomic_load(&stolen_total), n_items);
  CHECK(atomic_load(&stolen_total) > 0);
  deque_destroy(&dq);
  free(seen);
  TEST_PASS("deque_stress");
  return 0;
}
