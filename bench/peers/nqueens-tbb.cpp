/*
 * bench/peers/nqueens-tbb.cpp — N-Queens on oneTBB task_group: one task per
 * legal placement with its own board copy; the parent waits and sums.
 */
#include "tbb-common.h"
#include "workloads.h"

#include <oneapi/tbb/task_group.h>

#include <cstring>
#include <vector>

struct task {
  int n, row;
  signed char board[NQUEENS_MAX];
  long long solutions;
  uint64_t tasks;
};

static void solve(task *t) {
  t->solutions = 0;
  t->tasks = 1;
  if (t->row == t->n) {
    t->solutions = 1;
    return;
  }
  task child[NQUEENS_MAX];
  int k = 0;
  tbb::task_group g;
  for (int col = 0; col < t->n; col++) {
    if (!nqueens_ok(t->board, t->row, col))
      continue;
    task *c = &child[k++];
    c->n = t->n;
    c->row = t->row + 1;
    std::memcpy(c->board, t->board, (size_t)t->row);
    c->board[t->row] = (signed char)col;
    g.run([c] { solve(c); });
  }
  g.wait();
  for (int i = 0; i < k; i++) {
    t->solutions += child[i].solutions;
    t->tasks += child[i].tasks;
  }
}

static int n = 12;
static task root;

static void rep(void *) {
  std::memset(&root, 0, sizeof root);
  root.n = n;
  tbb::task_group g;
  g.run([] { solve(&root); });
  g.wait();
}

int main(int argc, char **argv) {
  bench_args_t args;
  bench_flag_t flags[] = {{"-n", BENCH_INT, &n, "board size (default 12)"}};
  bench_parse(argc, argv, "[-n N]", &args, flags, 1);
  if (n < 1 || n > NQUEENS_MAX)
    return 2;
  auto limit = tbb_limit(args.workers);
  std::vector<double> times(args.reps);
  long minflt;
  bench_time_reps(&args, rep, nullptr, times.data(), &minflt);
  nqueens_report("tbb", n, tbb_workers(), args.reps, times.data(),
                 root.solutions, root.tasks, minflt);
  return 0;
}
