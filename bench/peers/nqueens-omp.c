/*
 * bench/peers/nqueens-omp.c — N-Queens on OpenMP tasks (libgomp): one task
 * per legal placement, each with its own copy of the board; the parent waits
 * for all (taskwait) and sums.
 */
#include "workloads.h"

#include <omp.h>
#include <stdlib.h>
#include <string.h>

typedef struct task {
  int n, row;
  signed char board[NQUEENS_MAX];
  long long solutions;
  uint64_t tasks;
} task_t;

static void solve(task_t *t) {
  t->solutions = 0;
  t->tasks = 1;
  if (t->row == t->n) {
    t->solutions = 1;
    return;
  }
  task_t child[NQUEENS_MAX];
  int k = 0;
  for (int col = 0; col < t->n; col++) {
    if (!nqueens_ok(t->board, t->row, col))
      continue;
    task_t *c = &child[k++];
    c->n = t->n;
    c->row = t->row + 1;
    memcpy(c->board, t->board, (size_t)t->row);
    c->board[t->row] = (signed char)col;
#pragma omp task firstprivate(c)
    solve(c);
  }
#pragma omp taskwait
  for (int i = 0; i < k; i++) {
    t->solutions += child[i].solutions;
    t->tasks += child[i].tasks;
  }
}

static int n = 12;
static task_t root;

static void rep(void *ctx) {
  (void)ctx;
  memset(&root, 0, sizeof root);
  root.n = n;
#pragma omp parallel
#pragma omp single
  {
#pragma omp task
    solve(&root);
#pragma omp taskwait
  }
}

int main(int argc, char **argv) {
  bench_args_t args;
  bench_flag_t flags[] = {{"-n", BENCH_INT, &n, "board size (default 12)"}};
  bench_parse(argc, argv, "[-n N]", &args, flags, 1);
  if (n < 1 || n > NQUEENS_MAX)
    return 2;
  omp_set_num_threads(args.workers);
  double *times = calloc(args.reps, sizeof(double));
  long minflt;
  bench_time_reps(&args, rep, NULL, times, &minflt);
  nqueens_report("omp", n, omp_get_max_threads(), args.reps, times,
                 root.solutions, root.tasks, minflt);
  free(times);
  return 0;
}
