/*
 * bench/cxx_uts.cpp — Unbalanced Tree Search through swarm's C++ interface:
 * a node's thread computes its children's descriptors, runs one task per
 * child in a swarm::task_group, waits, and sums their counts. Same tree,
 * flags and JSON fields as bench/uts.c ("system": "swarm-cxx").
 */
#include "swarm.hpp"
#include "swarm_run.h"
#include "uts_tree.h"

#include <cstdlib>
#include <vector>

static uts_params_t params;

static uts_count_t visit(const uts_node_t &node) {
  uts_count_t count;
  count.nodes = 1;
  count.max_depth = node.height;
  int k = uts_num_children(&params, &node);
  if (k == 0)
    return count;
  std::vector<uts_node_t> child(static_cast<size_t>(k));
  std::vector<uts_count_t> sub(static_cast<size_t>(k));
  swarm::task_group g;
  for (int i = 0; i < k; i++) {
    uts_child(&params, &node, i, &child[i]);
    g.run([&, i] { sub[i] = visit(child[i]); });
  }
  g.wait();
  for (int i = 0; i < k; i++)
    uts_count_add(&count, sub[i]);
  return count;
}

static uts_count_t total;

static void rep(void *) {
  uts_node_t root;
  uts_root(&params, &root);
  total = swarm::spawn([&root] { return visit(root); }).join();
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
  int workers;
  long minflt;
  double *times =
      swarm_bench_run("cxx_uts", &args, rep, nullptr, &workers, &minflt);
  uts_report("swarm-cxx", &params, workers, args.reps, times, total, minflt);
  std::free(times);
  const uts_reference_t *ref = uts_find_reference(&params);
  return (ref && ref->nodes != total.nodes) ? 1 : 0;
}
