/* Steals against the owner's fence-less take (deque.h: the asymmetric
 * fence), in two parts.
 *
 * The deque alone: an owner keeps two items in a deque and takes them back
 * with the take the runtime uses (deque_take_begin_light when
 * deque_fence_init registered membarrier, else deque_take_begin), while a
 * thief kernel thread steals in a loop. The race that the fence exists for
 * needs a thief to steal twice within one of the owner's takes (both items,
 * the second while the owner's store to bottom is still in its store
 * buffer): a runtime thief never does that (it runs what it stole first),
 * so this part is the one that fails, on two CPUs, when the thieves'
 * barrier is removed. Every item must be taken exactly once.
 *
 * The runtime: binary trees of empty threads on every worker: each exit takes
 * its parent back from the deque (the kept-stack exit's light take) while
 * idle workers steal parents from the top, so the last two items of a
 * deque are raced for all the time. A parent taken by its worker and
 * stolen too would run its continuation twice (its mark counts 2, or the
 * two copies wreck its stack); a lost one would never be joined. So every
 * node's entry and continuation must have run exactly once per round.
 * Prints which fence the run used (thieves' membarrier or the owner's).
 * SWARM_MEMBARRIER=0 runs both parts with the owner's fence. */
#include <pthread.h>
#include <stdatomic.h>
#include <swarm.h>

#include "check.h"
#include "core/deque.h"

#define DEPTH 15
#define NODES (1L << (DEPTH + 1)) /* heap numbering: 1 .. NODES - 1 */

/* ---- the deque alone ---- */

static struct deque dq;
static _Atomic unsigned char *seen;
static _Atomic bool hammer_done;
static _Atomic long hammer_stolen;

static void hammer_consume(void *item, long n) {
  long v = (long)(uintptr_t)item - 16; /* items are 16.. : never NULL/ABORT */
  CHECK(v >= 0 && v < n);
  if (atomic_fetch_add(&seen[v], 1) != 0) {
    fprintf(stderr, "item %ld taken twice\n", v);
    exit(1);
  }
}

static void *hammer_thief(void *arg) {
  long n = (long)arg, mine = 0;
  while (!atomic_load_explicit(&hammer_done, memory_order_relaxed)) {
    void *it = deque_steal(&dq);
    if (it && it != DEQUE_ABORT) {
      hammer_consume(it, n);
      mine++;
    }
  }
  atomic_store(&hammer_stolen, mine);
  return NULL;
}

/* The owner's take as the runtime's kept-stack exit does it. */
static void *owner_take(void) {
  int64_t b;
  void *it = deque_membarrier ? deque_take_begin_light(&dq, &b)
                              : deque_take_begin(&dq, &b);
  return it ? it : deque_take_end(&dq, b);
}

static void hammer(void) {
  long n = test_scaled(2000000, 100000), taken = 0, next = 0;
  deque_fence_init(); /* the runtime does this at its start */
  seen = calloc((size_t)n, 1);
  CHECK(seen);
  CHECK_EQ(deque_init(&dq, 64), 0);
  pthread_t th;
  CHECK_EQ(pthread_create(&th, NULL, hammer_thief, (void *)n), 0);
  unsigned rng = 12345;
  while (next < n) {
    for (int i = 0; i < 2 && next < n; i++)
      CHECK(deque_push(&dq, (void *)(uintptr_t)(16 + next++)));
    /* a random pause: the thief finds the deque non-empty at every point */
    rng = rng * 1103515245u + 12345u;
    for (volatile unsigned k = (rng >> 16) % 200; k; k--)
      ;
    void *it;
    while ((it = owner_take())) {
      hammer_consume(it, n);
      taken++;
    }
  }
  atomic_store(&hammer_done, true);
  CHECK_EQ(pthread_join(th, NULL), 0);
  for (long i = 0; i < n; i++)
    if (atomic_load(&seen[i]) != 1) {
      fprintf(stderr, "item %ld taken %d times\n", i, atomic_load(&seen[i]));
      exit(1);
    }
  printf("deque, take fence by %s: %ld items, %ld taken by the owner, %ld "
         "stolen\n",
         deque_membarrier ? "thieves' membarrier" : "the owner's fence", n,
         taken, atomic_load(&hammer_stolen));
  CHECK_EQ(taken + atomic_load(&hammer_stolen), n);
  deque_destroy(&dq);
  free(seen);
}

/* ---- the runtime ---- */

static _Atomic int entered[NODES];
static _Atomic int continued[NODES];

static void *node(void *arg) {
  long id = (long)arg;
  atomic_fetch_add_explicit(&entered[id], 1, memory_order_relaxed);
  if (id >= NODES / 2)
    return (void *)1L; /* a leaf: the exit takes the parent at once */
  swarm_thread_t a, b;
  void *ra, *rb;
  CHECK_EQ(swarm_spawn(&a, NULL, node, (void *)(2 * id)), 0);
  /* The continuation: runs once, on whichever worker got the parent. */
  atomic_fetch_add_explicit(&continued[id], 1, memory_order_relaxed);
  CHECK_EQ(swarm_spawn(&b, NULL, node, (void *)(2 * id + 1)), 0);
  CHECK_EQ(swarm_join(a, &ra), 0);
  CHECK_EQ(swarm_join(b, &rb), 0);
  return (void *)((long)ra + (long)rb);
}

int main(void) {
  hammer();
  CHECK_EQ(swarm_init(NULL), 0); /* SWARM_WORKERS, else one per CPU */
  int rounds = (int)test_scaled(60, 4);
  for (int r = 1; r <= rounds; r++) {
    CHECK_EQ((long)node((void *)1L), NODES / 2);
    for (long i = 1; i < NODES; i++) {
      if (atomic_load(&entered[i]) != r ||
          (i < NODES / 2 && atomic_load(&continued[i]) != r)) {
        fprintf(stderr, "round %d: node %ld entered %d, continued %d times\n",
                r, i, atomic_load(&entered[i]), atomic_load(&continued[i]));
        return 1;
      }
    }
  }
  swarm_stats_t st;
  CHECK_EQ(swarm_stats_get(&st), 0);
  printf("%d workers, take fence by %s: %d rounds of %ld threads, "
         "steals %llu/%llu\n",
         swarm_num_workers(),
         deque_membarrier ? "thieves' membarrier" : "the owner's fence", rounds,
         NODES - 2, (unsigned long long)st.steals_succeeded,
         (unsigned long long)st.steals_tried);
  if (swarm_num_workers() > 1)
    CHECK(st.steals_succeeded > 0);
  CHECK_EQ(swarm_finalize(), 0);
  TEST_PASS("steal_take");
  return 0;
}
