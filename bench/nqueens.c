/*
 * bench/nqueens.c — N-Queens on swarm, one thread per placement: a thread
 * for row r tries every column, and for each legal one spawns a thread for
 * row r+1 with its own copy of the board; then it joins them all and sums
 * their solutions and task counts. Tasks = 1 (root) + legal placements.
 */
#include "swarm.h"
#include "swarm_run.h"
#include "workloads.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void die(const char *what, int err) {
  fprintf(stderr, "nqueens: %s: %s\n", what, strerror(err));
  exit(1);
}

typedef struct task {
  int n, row;
  signed char board[NQUEENS_MAX];
  long long solutions; /* out */
  uint64_t tasks;      /* out: tasks in this subtree, this one included */
} task_t;

static void *nqueens_thread(void *arg) {
  task_t *t = arg;
  t->solutions = 0;
  t->tasks = 1;
  if (t->row == t->n) {
    t->solutions = 1;
    return NULL;
  }
  task_t child[NQUEENS_MAX];
  swarm_thread_t th[NQUEENS_MAX];
  int k = 0, e;
  for (int col = 0; col < t->n; col++) {
    if (!nqueens_ok(t->board, t->row, col))
      continue;
    task_t *c = &child[k];
    c->n = t->n;
    c->row = t->row + 1;
    memcpy(c->board, t->board, (size_t)t->row);
    c->board[t->row] = (signed char)col;
    if ((e = swarm_spawn(&th[k], swarm_bench_attr, nqueens_thread, c)) != 0)
      die("swarm_spawn", e);
    k++;
  }
  for (int i = 0; i < k; i++) {
    if ((e = swarm_join(th[i], NULL)) != 0)
      die("swarm_join", e);
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
  swarm_thread_t th;
  int e;
  if ((e = swarm_spawn(&th, NULL, nqueens_thread, &root)) != 0)
    die("swarm_spawn", e);
  if ((e = swarm_join(th, NULL)) != 0)
    die("swarm_join", e);
}

int main(int argc, char **argv) {
  bench_args_t args;
  bench_flag_t flags[] = {{"-n", BENCH_INT, &n, "board size (default 12)"},
                          SWARM_BENCH_INLINE_FLAG};
  bench_parse(argc, argv, "[-n N] [--inline]", &args, flags, 2);
  const char *system = swarm_bench_inline_setup();
  if (n < 1 || n > NQUEENS_MAX) {
    fprintf(stderr, "nqueens: -n must be in 1..%d\n", NQUEENS_MAX);
    return 2;
  }
  int workers;
  long minflt;
  double *times =
      swarm_bench_run("nqueens", &args, rep, NULL, &workers, &minflt);
  nqueens_report(system, n, workers, args.reps, times, root.solutions,
                 root.tasks, minflt);
  free(times);
  return root.solutions == nqueens_reference(n) ? 0 : 1;
}
