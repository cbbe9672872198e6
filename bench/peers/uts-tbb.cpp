/*
 * bench/peers/uts-tbb.cpp — UTS on oneTBB task_group: one task per node; a
 * node computes its children's descriptors, runs a task for each, waits and
 * sums. Same tree code (bench/common/uts_tree.c) as every system.
 */
#include "tbb-common.h"
#include "uts_tree.h"

#include <oneapi/tbb/task_group.h>

#include <vector>

static uts_params_t params;

struct task {
  uts_node_t node;
  uts_count_t count;
};

static void walk(task *t) {
  t->count.nodes = 1;
  t->count.max_depth = t->node.height;
  int k = uts_num_children(&params, &t->node);
  if (k == 0)
    return;
  task stack_children[UTS_STACK_CHILDREN];
  std::vector<task> heap_children;
  task *child = stack_children;
  if (k > UTS_STACK_CHILDREN) {
    heap_children.resize(k);
    child = heap_children.data();
  }
  tbb::task_group g;
  for (int i = 0; i < k; i++) {
    task *c = &child[i];
    uts_child(&params, &t->node, i, &c->node);
    g.run([c] { walk(c); });
  }
  g.wait();
  for (int i = 0; i < k; i++)
    uts_count_add(&t->count, child[i].count);
}

static task root;

static void rep(void *) {
  uts_root(&params, &root.node);
  tbb::task_group g;
  g.run([] { walk(&root); });
  g.wait();
}

int main(int argc, char **argv) {
  bench_args_t args;
  bench_flag_t flags[16];
  uts_default_params(&params);
  int nflags = uts_flags(&params, flags);
  bench_parse(argc, argv, "[-t T -b B -q Q -m M -r R -a A -d D -f F -g G]",
              &args, flags, nflags);
  if (uts_check_params(&params))
    return 2;
  auto limit = tbb_limit(args.workers);
  std::vector<double> times(args.reps);
  long minflt;
  bench_time_reps(&args, rep, nullptr, times.data(), &minflt);
  uts_report("tbb", &params, tbb_workers(), args.reps, times.data(), root.count,
             minflt);
  return 0;
}
