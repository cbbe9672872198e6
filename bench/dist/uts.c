/*
 * bench/dist/uts.c — Unbalanced Tree Search on the distributed runtime,
 * same flags and trees as bench/uts.c (-t -b -q -m -r -a -d -f -g). One
 * thread per node (plus, for nodes with more than UTS_STACK_CHILDREN
 * children, helper threads that split the range; tasks counts nodes, as
 * in bench/uts.c); a child copies its node descriptor before it spawns
 * (the parent computes each child's into one local), and returns
 * nodes << 16 | deepest height through join: nothing is written into a
 * parent's frame, which may have moved to another rank.
 */
#include "dist_run.h"
#include "uts_tree.h"

static uts_params_t params; /* parsed identically on every rank */

static void *uts_thread(void *arg);

/* Children [lo, hi) of a node: spawned directly when few, else split in
 * two halves (the binomial root has 2000 children, and a thread keeps its
 * children's handles on its stack). */
typedef struct range {
  uts_node_t node;
  int lo, hi;
} range_t;

static uint64_t add_result(uint64_t acc, void *r) {
  uint64_t v = (uint64_t)(uintptr_t)r;
  uint64_t nodes = (acc >> 16) + (v >> 16);
  uint64_t depth = (acc & 0xffff) > (v & 0xffff) ? acc & 0xffff : v & 0xffff;
  return (nodes << 16) | depth;
}

static void *uts_range(void *arg) {
  range_t r = *(const range_t *)arg;
  uint64_t acc = 0;
  if (r.hi - r.lo <= UTS_STACK_CHILDREN) {
    swarm_thread_t th[UTS_STACK_CHILDREN];
    uts_node_t child;
    for (int i = r.lo; i < r.hi; i++) {
      uts_child(&params, &r.node, i, &child);
      swarm_spawn(&th[i - r.lo], NULL, uts_thread, &child);
    }
    for (int i = r.lo; i < r.hi; i++) {
      void *v;
      swarm_join(th[i - r.lo], &v);
      acc = add_result(acc, v);
    }
    return (void *)(uintptr_t)acc;
  }
  range_t half = r;
  swarm_thread_t a, b;
  void *va, *vb;
  half.hi = r.lo + (r.hi - r.lo) / 2;
  swarm_spawn(&a, NULL, uts_range, &half);
  half.lo = half.hi;
  half.hi = r.hi;
  swarm_spawn(&b, NULL, uts_range, &half);
  swarm_join(a, &va);
  swarm_join(b, &vb);
  return (void *)(uintptr_t)add_result(add_result(0, va), vb);
}

/* Result: nodes << 16 | deepest height. */
static void *uts_thread(void *arg) {
  range_t r;
  r.node = *(const uts_node_t *)arg;
  r.lo = 0;
  r.hi = uts_num_children(&params, &r.node);
  uint64_t self = ((uint64_t)1 << 16) | (uint64_t)r.node.height;
  if (r.hi == 0)
    return (void *)(uintptr_t)self;
  return (void *)(uintptr_t)add_result(self, uts_range(&r));
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
