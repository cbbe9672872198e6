// tests/cxx/test_cxx_uts.cpp — Unbalanced Tree Search through swarm.hpp (a
// task_group per node, as bench/cxx_uts.cpp) counts the same nodes and depth
// as a serial walk of the same tree, for a geometric and a binomial tree.
#include "check.h"
#include "uts_tree.h"
#include <swarm.hpp>

#include <vector>

static uts_params_t params;

static uts_count_t serial(const uts_node_t &node) {
  uts_count_t c{1, node.height};
  int k = uts_num_children(&params, &node);
  for (int i = 0; i < k; i++) {
    uts_node_t child;
    uts_child(&params, &node, i, &child);
    uts_count_add(&c, serial(child));
  }
  return c;
}

static uts_count_t parallel(const uts_node_t &node) {
  uts_count_t c{1, node.height};
  int k = uts_num_children(&params, &node);
  if (k == 0)
    return c;
  std::vector<uts_node_t> child(static_cast<size_t>(k));
  std::vector<uts_count_t> sub(static_cast<size_t>(k));
  swarm::task_group g;
  for (int i = 0; i < k; i++) {
    uts_child(&params, &node, i, &child[i]);
    g.run([&, i] { sub[i] = parallel(child[i]); });
  }
  g.wait();
  for (auto &s : sub)
    uts_count_add(&c, s);
  return c;
}

static void check_tree() {
  uts_node_t root;
  uts_root(&params, &root);
  uts_count_t want = serial(root);
  uts_count_t got = swarm::spawn([&root] { return parallel(root); }).join();
  CHECK(want.nodes > 100);
  CHECK_EQ(got.nodes, want.nodes);
  CHECK_EQ(got.max_depth, want.max_depth);
}

int main() {
  swarm::runtime rt(2);
  uts_default_params(&params);
  params.type = UTS_GEO; // T1-like, smaller: geometric, fixed shape
  params.shape = UTS_FIXED;
  params.b0 = 4;
  params.depth_limit = 6;
  params.root_seed = 19;
  check_tree();
  uts_default_params(&params);
  params.type = UTS_BIN; // binomial: a few deep chains
  params.b0 = 200;
  params.q = 0.124875;
  params.m = 8;
  params.root_seed = 7;
  check_tree();
  return 0;
}
