/*
 * test_dist_migrate.c — threads that move between ranks in the middle of
 * their execution keep their stack and compute correct results.
 *
 * 1. Forced (P >= 2), deterministic: the root spawns a child that spins
 *    until the root's continuation has run, which only a steal by another
 *    rank can make happen; so the root resumes on rank r1 != 0 (a steal and
 *    a migration). There it spawns a thread on rank 0 with swarm_spawn_on
 *    and joins it; that thread waits (white-box: reading its own join
 *    record) until the root has suspended on it, so the root is evacuated
 *    on r1 and copied back and resumed on rank 0 by the thread's exit. The
 *    root checks its locals, a pointer into its own frame, and the ranks.
 * 2. Stress: a binary tree of threads, each with a canary array on its
 *    stack and a pointer to it, checked after every spawn and join; leaves
 *    are counted, rank changes across spawn/join are summed in global
 *    memory.
 */
#include "dist_internal.h"
#include "dist_test.h"

#include <stdint.h>

/* ---- 1. forced ---------------------------------------------------------- */

typedef struct forced_out {
  int64_t r0, r1, r2, ok;
} forced_out_t;

/* Returns once whoever joins this thread has arrived on its record. */
static void *wait_for_joiner(void *unused) {
  (void)unused;
  uint64_t self = swarm_self(), state = 0;
  while (state == 0) {
    swarm_dist_get(&state, dist_handle_rank(self),
                   dist->off_records +
                       dist_handle_idx(self) * sizeof(dist_rec_t) +
                       offsetof(dist_rec_t, state),
                   sizeof state);
    swarm_dist_poll();
  }
  return (void *)(intptr_t)(1000 + swarm_dist_rank());
}

static void *forced_root(void *g) {
  swarm_gptr_t out = (swarm_gptr_t)(uintptr_t)g;
  swarm_gptr_t flag = swarm_gptr_add(out, sizeof(forced_out_t));
  volatile uint64_t canary[32];
  for (int i = 0; i < 32; i++)
    canary[i] = 0x5eed0000u + (uint64_t)i * 7919u;
  volatile uint64_t *self_ptr = canary; /* a pointer into our own frame */
  forced_out_t o = {swarm_dist_rank(), -1, -1, 1};
  swarm_thread_t c, d;
  CHECK(swarm_spawn(&c, NULL, dist_test_spin_until_set,
                    (void *)(uintptr_t)flag) == 0,
        "spawn");
  o.r1 = swarm_dist_rank(); /* only a thief can have resumed us */
  int64_t one = 1;
  swarm_global_put(flag, &one, sizeof one);
  void *rc;
  CHECK(swarm_join(c, &rc) == 0 && (intptr_t)rc == 0, "join spinner");
  CHECK(swarm_spawn_on(0, &d, wait_for_joiner, NULL) == 0, "spawn_on");
  void *rd;
  CHECK(swarm_join(d, &rd) == 0, "join waiter");
  o.r2 = swarm_dist_rank();
  if ((intptr_t)rd != 1000)
    o.ok = 0;
  for (int i = 0; i < 32; i++)
    if (canary[i] != 0x5eed0000u + (uint64_t)i * 7919u ||
        self_ptr[i] != canary[i])
      o.ok = 0;
  swarm_global_put(out, &o, sizeof o);
  return NULL;
}

/* ---- 2. stress ---------------------------------------------------------- */

static swarm_gptr_t moves; /* rank 0's counter, the same value on all ranks */

static void *tree(void *a) {
  intptr_t d = (intptr_t)a;
  if (d == 0)
    return (void *)1;
  uint64_t canary[8];
  for (int i = 0; i < 8; i++)
    canary[i] = (uint64_t)d * 1000003u + (uint64_t)i;
  uint64_t *p = &canary[3];
  int rank = swarm_dist_rank();
  swarm_thread_t x, y;
  void *rx, *ry;
  CHECK(swarm_spawn(&x, NULL, tree, (void *)(d - 1)) == 0, "spawn");
  CHECK(swarm_spawn(&y, NULL, tree, (void *)(d - 1)) == 0, "spawn");
  CHECK(*p == (uint64_t)d * 1000003u + 3, "canary after spawn");
  CHECK(swarm_join(x, &rx) == 0 && swarm_join(y, &ry) == 0, "join");
  for (int i = 0; i < 8; i++)
    CHECK(canary[i] == (uint64_t)d * 1000003u + (uint64_t)i, "canary %d", i);
  if (swarm_dist_rank() != rank)
    swarm_global_fetch_add(moves, 1);
  return (void *)((intptr_t)rx + (intptr_t)ry);
}

int main(int argc, char **argv) {
  dist_test_init(&argc, &argv);
  int rank = swarm_dist_rank(), P = swarm_dist_ranks();
  swarm_gptr_t g = swarm_global_alloc(sizeof(forced_out_t) + 8);
  moves = swarm_global_alloc(8);
  MPI_Bcast(&g, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  MPI_Bcast(&moves, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  swarm_dist_stats_t before, after;
  void *r;

  if (P >= 2) {
    swarm_dist_stats_sum(&before);
    CHECK(swarm_dist_run(forced_root, (void *)(uintptr_t)g, NULL) == 0, "run");
    swarm_dist_stats_sum(&after);
    if (rank == 0) {
      forced_out_t o;
      swarm_global_get(&o, g, sizeof o);
      printf("forced: created on %lld, stolen to %lld, resumed after join on "
             "%lld\n",
             (long long)o.r0, (long long)o.r1, (long long)o.r2);
      CHECK(o.ok == 1, "stack contents or results wrong after migration");
      CHECK(o.r0 == 0 && o.r1 != 0 && o.r2 == 0, "ranks %lld %lld %lld",
            (long long)o.r0, (long long)o.r1, (long long)o.r2);
      CHECK(after.steals > before.steals, "no steal counted");
      CHECK(after.migrations > before.migrations, "no migration counted");
      CHECK(after.suspensions > before.suspensions &&
                after.resumes > before.resumes,
            "no suspension/resume counted");
    }
  }

  const int depth = 12;
  for (int rep = 0; rep < 3; rep++) {
    CHECK(swarm_dist_run(tree, (void *)(intptr_t)depth, &r) == 0, "run");
    CHECK((intptr_t)r == (1 << depth), "tree: %ld leaves", (long)(intptr_t)r);
  }
  swarm_dist_stats_sum(&after);
  if (rank == 0) {
    int64_t m;
    swarm_global_get(&m, moves, sizeof m);
    printf("migrate: P=%d steals=%llu migrations=%llu resumes=%llu, %lld "
           "threads changed rank across spawn/join, all stacks intact\n",
           P, (unsigned long long)after.steals,
           (unsigned long long)after.migrations,
           (unsigned long long)after.resumes, (long long)m);
  }
  swarm_dist_finalize();
  return 0;
}
