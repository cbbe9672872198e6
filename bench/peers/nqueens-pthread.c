/*
 * bench/peers/nqueens-pthread.c — N-Queens on NPTL, one kernel thread per
 * legal placement where feasible; else the create+join microbenchmark (see
 * pthread-common.h). Whether it is feasible depends on the task count, known
 * for a board only once solved: the published counts of placements for
 * n <= 10 are small enough, larger boards go to the microbenchmark.
 */
#include "pthread-common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct task {
  int n, row;
  signed char board[NQUEENS_MAX];
  long long solutions;
  uint64_t tasks;
} task_t;

static void *solve(void *arg) {
  task_t *t = arg;
  t->solutions = 0;
  t->tasks = 1;
  if (t->row == t->n) {
    t->solutions = 1;
    return NULL;
  }
  task_t child[NQUEENS_MAX];
  pt_task_t th[NQUEENS_MAX];
  int k = 0;
  for (int col = 0; col < t->n; col++) {
    if (!nqueens_ok(t->board, t->row, col))
      continue;
    task_t *c = &child[k];
    c->n = t->n;
    c->row = t->row + 1;
    memcpy(c->board, t->board, (size_t)t->row);
    c->board[t->row] = (signed char)col;
    pt_spawn(&th[k], solve, c);
    k++;
  }
  for (int i = 0; i < k; i++) {
    pt_join(&th[i], NULL);
    t->solutions += child[i].solutions;
    t->tasks += child[i].tasks;
  }
  return NULL;
}

static int n = 12;
static task_t root;

static void rep(void *ctx) {
  (void)ctx;
  memset(&root, 0, sizeof root);
  root.n = n;
  pt_task_t th;
  pt_spawn(&th, solve, &root);
  pt_join(&th, NULL);
}

/* Tasks (root + legal placements) of the n-queens search tree, counted by
 * a serial walk before any thread is made. */
static uint64_t count_tasks(int n, int row, signed char *board) {
  uint64_t t = 1;
  for (int col = 0; row < n && col < n; col++) {
    if (!nqueens_ok(board, row, col))
      continue;
    board[row] = (signed char)col;
    t += count_tasks(n, row + 1, board);
  }
  return t;
}

int main(int argc, char **argv) {
  bench_args_t args;
  pt_opts_t o;
  bench_flag_t flags[4] = {{"-n", BENCH_INT, &n, "board size (default 12)"}};
  int nflags = pt_flags(&o, flags, 1);
  bench_parse(argc, argv, "[-n N] [--max-tasks T] [--micro]", &args, flags,
              nflags);
  if (n < 1 || n > NQUEENS_MAX)
    return 2;
  pt_setup(&args);
  char params[64];
  snprintf(params, sizeof params, "{\"n\":%d}", n);
  signed char board[NQUEENS_MAX];
  uint64_t tasks = n <= 14 ? count_tasks(n, 0, board) : 0;
  if (pt_maybe_micro("nqueens", params, tasks, &args, &o))
    return 0;
  double *times = calloc(args.reps, sizeof(double));
  long minflt;
  bench_time_reps(&args, rep, NULL, times, &minflt);
  pt_add_fields();
  nqueens_report("pthread", n, args.workers, args.reps, times, root.solutions,
                 root.tasks, minflt);
  free(times);
  return 0;
}
