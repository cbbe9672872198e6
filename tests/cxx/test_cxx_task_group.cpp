// tests/cxx/test_cxx_task_group.cpp — task_group runs every task and wait()
// returns only when all finished; groups nest; a group may be reused after
// wait(); its destructor waits for tasks nobody waited for.
#include "check.h"
#include <swarm.hpp>

#include <atomic>
#include <vector>

static long tree_sum(int depth) {
  if (depth == 0)
    return 1;
  long a = 0, b = 0;
  swarm::task_group g;
  g.run([&] { a = tree_sum(depth - 1); });
  g.run([&] { b = tree_sum(depth - 1); });
  g.wait();
  return a + b + 1;
}

int main() {
  swarm::runtime rt(2);

  std::vector<int> hit(500, 0);
  swarm::task_group g;
  for (int i = 0; i < 500; i++)
    g.run([&hit, i] { hit[i] += 1; });
  g.wait();
  for (int i = 0; i < 500; i++)
    CHECK_EQ(hit[i], 1);

  // Reused after wait.
  std::atomic<int> n{0};
  for (int i = 0; i < 10; i++)
    g.run([&n] { n++; });
  g.wait();
  CHECK_EQ(n.load(), 10);
  g.wait(); // empty: returns at once

  // Nested groups: a full binary tree of depth 10 has 2^11 - 1 nodes.
  CHECK_EQ(tree_sum(10), 2047);

  // Destroyed without wait: still every task ran before it returned.
  std::atomic<int> late{0};
  {
    swarm::task_group d;
    for (int i = 0; i < 20; i++)
      d.run([&late] {
        swarm_yield();
        late++;
      });
  }
  CHECK_EQ(late.load(), 20);
  return 0;
}
