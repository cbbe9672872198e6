/*
 * test_dist_trace.c — the workload that check_dist_trace.py traces
 * (SWARM_TRACE on rank 0): one run whose root is forced to be stolen (its
 * child spins until the root's continuation has run, which only a thief on
 * another rank can make happen: a steal and a migration), then places a
 * thread on every rank with swarm_spawn_on and computes fib(16) with
 * spawn/join. Rank 0 writes what the runtime counted, per rank, as JSON to
 * $SWARM_DIST_TEST_EXPECT, for the checker to compare with the trace.
 */
#include "dist_test.h"

#include <stdint.h>

#define NCOUNTS 6

static void *root(void *g) {
  swarm_gptr_t flag = (swarm_gptr_t)(uintptr_t)g;
  swarm_thread_t c, on[64];
  CHECK(swarm_spawn(&c, NULL, dist_test_spin_until_set,
                    (void *)(uintptr_t)flag) == 0,
        "spawn spinner");
  CHECK(swarm_dist_rank() != 0, "only a thief can have resumed the root");
  int64_t one = 1;
  swarm_global_put(flag, &one, sizeof one);
  CHECK(swarm_join(c, NULL) == 0, "join spinner");
  int P = swarm_dist_ranks();
  for (int r = 0; r < P; r++)
    CHECK(swarm_spawn_on(r, &on[r], dist_test_fib, (void *)(intptr_t)10) == 0,
          "spawn_on %d", r);
  void *f;
  CHECK(dist_test_fib((void *)(intptr_t)16) == (void *)(intptr_t)987,
        "fib(16)");
  for (int r = 0; r < P; r++)
    CHECK(swarm_join(on[r], &f) == 0 && (intptr_t)f == 55, "spawn_on %d", r);
  return (void *)(intptr_t)1;
}

int main(int argc, char **argv) {
  dist_test_init(&argc, &argv);
  int rank = swarm_dist_rank(), P = swarm_dist_ranks();
  CHECK(P >= 2 && P <= 64, "2 to 64 ranks");
  swarm_gptr_t flag = swarm_global_alloc(8);
  void *r;
  CHECK(swarm_dist_run(root, (void *)(uintptr_t)flag, &r) == 0 &&
            (intptr_t)r == 1,
        "run");
  swarm_dist_stats_t s;
  CHECK(swarm_dist_stats_get(&s) == 0, "stats");
  uint64_t mine[NCOUNTS] = {s.spawns,     s.remote_spawns, s.steals,
                            s.migrations, s.suspensions,   s.node_steals};
  uint64_t all[64 * NCOUNTS];
  MPI_Gather(mine, NCOUNTS, MPI_UINT64_T, all, NCOUNTS, MPI_UINT64_T, 0,
             MPI_COMM_WORLD);
  CHECK(swarm_dist_finalize() == 0, "finalize"); /* writes the trace */
  const char *out = getenv("SWARM_DIST_TEST_EXPECT");
  if (rank == 0 && out) {
    FILE *f = fopen(out, "w");
    CHECK(f != NULL, "cannot write %s", out);
    fprintf(f, "{\"runs\": 1, \"ranks\": [");
    for (int i = 0; i < P; i++) {
      uint64_t *c = &all[i * NCOUNTS];
      fprintf(f,
              "%s{\"spawns\": %llu, \"remote_spawns\": %llu, \"steals\": "
              "%llu, \"migrations\": %llu, \"suspensions\": %llu, "
              "\"node_steals\": %llu}",
              i ? ", " : "", (unsigned long long)c[0], (unsigned long long)c[1],
              (unsigned long long)c[2], (unsigned long long)c[3],
              (unsigned long long)c[4], (unsigned long long)c[5]);
    }
    fprintf(f, "]}\n");
    fclose(f);
  }
  if (rank == 0)
    printf("test_dist_trace: run done on %d ranks\n", P);
  return 0;
}
