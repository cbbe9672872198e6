/*
 * test_dist_workloads.c — fib, N-Queens and UTS (T1 cut at depth 8) under
 * the distributed runtime give the published counts for any number of
 * ranks and either steal mode (the CTest entries run it with P = 1..4 and
 * --steal rma|msg). Threads pass everything by value: a child copies what
 * it needs from its parent's frame before its first spawn, and returns its
 * result through join, so any thread may migrate at any spawn or join.
 */
#include "dist_test.h"

#include <stdint.h>

#include "workloads.h"
#ifdef DIST_TEST_HAVE_UTS
#include "uts_tree.h"
#endif

typedef struct queens {
  int n, row;
  signed char board[NQUEENS_MAX];
} queens_t;

static void *nqueens(void *p) {
  queens_t t = *(const queens_t *)p; /* before any spawn: see dist.h */
  if (t.row == t.n)
    return (void *)1;
  queens_t child[NQUEENS_MAX];
  swarm_thread_t th[NQUEENS_MAX];
  int k = 0;
  for (int col = 0; col < t.n; col++) {
    if (!nqueens_ok(t.board, t.row, col))
      continue;
    child[k] = t;
    child[k].board[t.row] = (signed char)col;
    child[k].row = t.row + 1;
    CHECK(swarm_spawn(&th[k], NULL, nqueens, &child[k]) == 0, "spawn");
    k++;
  }
  intptr_t sum = 0;
  for (int i = 0; i < k; i++) {
    void *r;
    CHECK(swarm_join(th[i], &r) == 0, "join");
    sum += (intptr_t)r;
  }
  return (void *)sum;
}

#ifdef DIST_TEST_HAVE_UTS
static uts_params_t params; /* set identically on every rank before runs */

/* Result: nodes << 16 | deepest height. Each child copies its node
 * descriptor before it spawns, so the parent computes every child's into
 * one local (a geometric node may have up to UTS_MAX_CHILDREN). */
static void *uts(void *p) {
  uts_node_t node = *(const uts_node_t *)p;
  int k = uts_num_children(&params, &node);
  uint64_t nodes = 1, depth = (uint64_t)node.height;
  CHECK(k <= UTS_MAX_CHILDREN, "%d children", k);
  swarm_thread_t th[UTS_MAX_CHILDREN];
  uts_node_t child;
  for (int i = 0; i < k; i++) {
    uts_child(&params, &node, i, &child);
    CHECK(swarm_spawn(&th[i], NULL, uts, &child) == 0, "spawn");
  }
  for (int i = 0; i < k; i++) {
    void *r;
    CHECK(swarm_join(th[i], &r) == 0, "join");
    uint64_t v = (uint64_t)(uintptr_t)r;
    nodes += v >> 16;
    if ((v & 0xffff) > depth)
      depth = v & 0xffff;
  }
  return (void *)(uintptr_t)((nodes << 16) | depth);
}
#endif

int main(int argc, char **argv) {
  dist_test_init(&argc, &argv);
  int rank = swarm_dist_rank(), P = swarm_dist_ranks();
  void *r;

  for (int n = 0; n <= 18; n += 6) {
    CHECK(swarm_dist_run(dist_test_fib, (void *)(intptr_t)n, &r) == 0, "run");
    CHECK((long long)(intptr_t)r == fib_reference(n), "fib(%d) = %lld", n,
          (long long)(intptr_t)r);
  }

  queens_t q;
  memset(&q, 0, sizeof q);
  q.n = 8;
  CHECK(swarm_dist_run(nqueens, &q, &r) == 0, "run");
  CHECK((long long)(intptr_t)r == nqueens_reference(8), "nqueens(8) = %lld",
        (long long)(intptr_t)r);

#ifdef DIST_TEST_HAVE_UTS
  /* T1d8: geometric, fixed shape, b 4, depth 8, seed 19 (257,042 nodes). */
  uts_default_params(&params);
  params.type = UTS_GEO;
  params.shape = UTS_FIXED;
  params.depth_limit = 8;
  params.b0 = 4;
  params.root_seed = 19;
  const uts_reference_t *ref = uts_find_reference(&params);
  CHECK(ref && strcmp(ref->name, "T1d8") == 0, "T1d8 reference");
  uts_node_t root;
  uts_root(&params, &root);
  CHECK(swarm_dist_run(uts, &root, &r) == 0, "run");
  uint64_t v = (uint64_t)(uintptr_t)r;
  CHECK((long long)(v >> 16) == ref->nodes, "T1d8: %llu nodes, want %lld",
        (unsigned long long)(v >> 16), ref->nodes);
  CHECK((int)(v & 0xffff) == ref->max_depth, "T1d8: depth %d",
        (int)(v & 0xffff));
#endif

  /* The window path the test expects is the one that ran, and
   * (tools/cluster-test) the ranks span the nodes they were given. */
  const char *want = getenv("SWARM_DIST_TEST_WINDOW");
  if (want && *want)
    CHECK(strcmp(swarm_dist_window_path(), want) == 0, "window %s, want %s",
          swarm_dist_window_path(), want);
  const char *nodes = getenv("SWARM_DIST_TEST_NODES");
  if (nodes && *nodes)
    CHECK(swarm_dist_nodes() == atoi(nodes), "%d nodes, want %s",
          swarm_dist_nodes(), nodes);

  swarm_dist_stats_t s;
  CHECK(swarm_dist_stats_sum(&s) == 0, "stats");
  if (rank == 0)
    printf("workloads: P=%d steal=%s spawns=%llu steals=%llu migrations=%llu "
           "suspensions=%llu: all results equal the published counts\n",
           P, swarm_dist_steal_name(swarm_dist_steal_mode()),
           (unsigned long long)s.spawns, (unsigned long long)s.steals,
           (unsigned long long)s.migrations, (unsigned long long)s.suspensions);
  CHECK(s.suspensions == s.resumes, "%llu suspended, %llu resumed",
        (unsigned long long)s.suspensions, (unsigned long long)s.resumes);
  swarm_dist_finalize();
  return 0;
}
