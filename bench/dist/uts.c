/*
 * bench/dist/uts.c — Unbalanced Tree Search on the distributed runtime,
 * same flags and trees as bench/uts.c (-t -b -q -m -r -a -d -f -g). One
 * thread per node; a child copies its node descriptor before it spawns
 * (the parent computes each child's into one local), and returns
 * nodes << 16 | deepest height through join: nothing is written into a
 * parent's frame, which may have moved to another rank.
 */
#include "dist_run.h"
#include "uts_tree.h"

static uts_params_t params; /* parsed identically on every rank */

static void *uts_thread(void *arg) {
  uts_node_t node = *(const uts_node_t *)arg;
  int k = uts_num_children(&params, &node);
  uint64_t nodes = 1, depth = (uint64_t)node.height;
  swarm_thread_t th[UTS_MAX_CHILDREN];
  uts_node_t child;
  for (int i = 0; i < k; i++) {
    uts_child(&params, &node, i, &child);
    swarm_spawn(&th[i], NULL, uts_thread, &child);
  }
  for (int i = 0; i < k; i++) {
    void *r;
    swarm_join(th[i], &r);
    uint64_t v = (uint64_t)(uintptr_t)r;
    nodes += v >> 16;
    if ((v & 0xffff) > depth)
      depth = v & 0xffff;
  }
  return (void *)(uintptr_t)((nodes << 16) | depth);
}

int main(int argc, char **argv) {
  dist_bench_init(&argc, &argv);
  dist_bench_t b;
  bench_flag_t flags[16];
  uts_default_params(&params);
  int nflags = uts_flags(&params, flags);
  bench_parse(
      argc, argv,
      "[-t T -b B -q Q -m M -r R -a A -d D -f F -g G] [--steal rma|msg]",
      &b.args, flags, nflags);
  if (uts_check_params(&params))
    return 2;
  uts_node_t root;
  uts_root(&params, &root);
  dist_bench_run(&b, uts_thread, &root);
  long long nodes = (long long)(b.result >> 16);
  int depth = (int)(b.result & 0xffff);
  const uts_reference_t *ref = uts_find_reference(&params);
  char p[256];
  uts_params_json(&params, p, sizeof p);
  int correct = ref ? nodes == ref->nodes &&
                          (ref->max_depth < 0 || depth == ref->max_depth)
                    : -1;
  if (swarm_dist_rank() == 0) {
    bench_extra_int("max_depth", depth);
  }
  dist_bench_report(&b, "uts", p, (uint64_t)nodes, nodes, correct);
  return 0;
}
