/*
 * test_dist_spawn_on.c — HIVE-style placement and global memory:
 * swarm_spawn_on puts a thread on every rank (it reports where it ran),
 * each of those places another on the next rank and joins it there, and the
 * root joins them all from rank 0. Along the way every placed thread adds
 * to a counter on rank 0 with swarm_global_fetch_add and writes its slot of
 * a global array with swarm_global_put; the root reads both back.
 */
#include "dist_test.h"

#include <errno.h>
#include <stdint.h>

static swarm_gptr_t counter, slots; /* on rank 0; same value on all ranks */

static void *leaf(void *a) {
  intptr_t want = (intptr_t)a;
  swarm_global_fetch_add(counter, 1);
  return (void *)(intptr_t)(swarm_dist_rank() == want ? 1 : 0);
}

static void *placed(void *a) {
  intptr_t want = (intptr_t)a;
  int here = swarm_dist_rank();
  swarm_global_fetch_add(counter, 1);
  int64_t mark = 100 + here;
  swarm_global_put(swarm_gptr_add(slots, (size_t)want * 8), &mark, 8);
  int P = swarm_dist_ranks(), next = (int)((want + 1) % P);
  swarm_thread_t t;
  CHECK(swarm_spawn_on(next, &t, leaf, (void *)(intptr_t)next) == 0,
        "spawn_on");
  void *r;
  CHECK(swarm_join(t, &r) == 0, "join");
  return (void *)(intptr_t)((here == want ? 1 : 0) + (intptr_t)r);
}

static void *root(void *unused) {
  (void)unused;
  int P = swarm_dist_ranks();
  swarm_thread_t t[64];
  for (int r = 0; r < P; r++)
    CHECK(swarm_spawn_on(r, &t[r], placed, (void *)(intptr_t)r) == 0,
          "spawn_on %d", r);
  swarm_thread_t bad;
  CHECK(swarm_spawn_on(P, &bad, placed, NULL) == EINVAL, "bad rank");
  intptr_t ok = 0;
  for (int r = 0; r < P; r++) {
    void *v;
    CHECK(swarm_join(t[r], &v) == 0, "join %d", r);
    CHECK(swarm_dist_creator(t[r]) == 0, "creator");
    ok += (intptr_t)v;
  }
  return (void *)ok;
}

int main(int argc, char **argv) {
  dist_test_init(&argc, &argv);
  int rank = swarm_dist_rank(), P = swarm_dist_ranks();
  CHECK(P <= 64, "at most 64 ranks");
  counter = swarm_global_alloc(8);
  slots = swarm_global_alloc(8 * (size_t)P);
  MPI_Bcast(&counter, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  MPI_Bcast(&slots, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  CHECK(swarm_gptr_rank(counter) == 0, "counter on rank 0");
  swarm_thread_t t;
  CHECK(swarm_spawn_on(0, &t, leaf, NULL) == EPERM, "outside a run");
  void *r;
  for (int rep = 0; rep < 2; rep++) {
    CHECK(swarm_dist_run(root, NULL, &r) == 0, "run");
    CHECK((intptr_t)r == 2 * P, "%ld of %d placements on the right rank",
          (long)(intptr_t)r, 2 * P);
  }
  if (rank == 0) {
    int64_t c;
    swarm_global_get(&c, counter, 8);
    CHECK(c == 4 * P, "counter %lld, want %d", (long long)c, 4 * P);
    for (int i = 0; i < P; i++) {
      int64_t m;
      swarm_global_get(&m, swarm_gptr_add(slots, (size_t)i * 8), 8);
      CHECK(m == 100 + i, "slot %d = %lld", i, (long long)m);
    }
    swarm_dist_stats_t s;
    swarm_dist_stats_get(&s);
    printf("spawn_on: %d ranks each ran the threads placed on them; "
           "global counter %lld\n",
           P, (long long)c);
  }
  swarm_dist_finalize();
  return 0;
}
