/*
 * test_dist_join_ancestor.c — a thread may join its own ancestor: C spawns
 * G and gives it its handle (swarm_self()); G joins C while C still runs,
 * so G suspends and C's frames go on above it on the same stack. When C
 * returns, its parent is right below on the deque, the case whose exit
 * completes the record with plain stores: that exit must see the waiting
 * G, put the parent back and resume G (before, G was never resumed and
 * the run hung until the test's timeout). G gets C's result (its own
 * handle, which C returns) and is joined by W, which finds G's handle in
 * global memory (G publishes it before joining: W may be stolen and run
 * on another rank before C returns).
 */
#include <errno.h>
#include <stdint.h>
#include <swarm.h>

#include "dist_test.h"

static swarm_gptr_t slot; /* on rank 0: G's handle once G has started */

static void *g_thread(void *c) {
  swarm_thread_t self = swarm_self();
  swarm_global_put(slot, &self, sizeof self);
  void *r = NULL;
  CHECK(swarm_join((swarm_thread_t)(uintptr_t)c, &r) == 0,
        "G joins its parent C");
  CHECK((swarm_thread_t)(uintptr_t)r == self, "G got C's result");
  return (void *)(intptr_t)6;
}

static void *c_thread(void *unused) {
  (void)unused;
  swarm_thread_t g;
  CHECK(swarm_spawn(&g, NULL, g_thread, (void *)(uintptr_t)swarm_self()) == 0,
        "spawn G");
  return (void *)(uintptr_t)g;
}

static void *w_thread(void *unused) {
  (void)unused;
  swarm_thread_t c, g = 0;
  void *r = NULL;
  CHECK(swarm_spawn(&c, NULL, c_thread, NULL) == 0, "spawn C");
  while (g == 0) { /* set before C can have returned; W may be stolen */
    swarm_global_get(&g, slot, sizeof g);
    swarm_dist_poll();
  }
  CHECK(swarm_join(g, &r) == 0 && (intptr_t)r == 6, "W joins G: %ld",
        (long)(intptr_t)r);
  CHECK(swarm_join(c, &r) == ESRCH, "C, joined by G already");
  return (void *)(intptr_t)7;
}

static void *root(void *unused) {
  (void)unused;
  for (int k = 0; k < 20; k++) {
    swarm_thread_t w;
    void *r = NULL;
    swarm_thread_t zero = 0;
    swarm_global_put(slot, &zero, sizeof zero);
    CHECK(swarm_spawn(&w, NULL, w_thread, NULL) == 0, "spawn W");
    CHECK(swarm_join(w, &r) == 0 && (intptr_t)r == 7, "join W, round %d", k);
  }
  return (void *)(intptr_t)1;
}

int main(int argc, char **argv) {
  dist_test_init(&argc, &argv);
  slot = swarm_global_alloc(sizeof(swarm_thread_t)); /* rank 0's, for all */
  MPI_Bcast(&slot, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  CHECK(slot != SWARM_GPTR_NULL && swarm_gptr_rank(slot) == 0, "global slot");
  void *r = NULL;
  CHECK(swarm_dist_run(root, NULL, &r) == 0 && (intptr_t)r == 1, "run");
  if (swarm_dist_rank() == 0)
    printf("join_ancestor: a thread joined its running parent, 20 times, on "
           "%d rank(s)\n",
           swarm_dist_ranks());
  swarm_dist_finalize();
  return 0;
}
