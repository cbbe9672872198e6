/*
 * bench/dist/nqueens.c — N-Queens on the distributed runtime: one thread
 * per partial placement; a thread copies its board from its parent's frame
 * before spawning (see swarm/dist.h), and returns its count through join.
 */
#include "dist_run.h"
#include "workloads.h"

typedef struct task {
  int n, row;
  signed char board[NQUEENS_MAX];
} task_t;

static void *nqueens_thread(void *arg) {
  task_t t = *(const task_t *)arg;
  if (t.row == t.n)
    return (void *)1;
  task_t child;
  swarm_thread_t th[NQUEENS_MAX];
  int k = 0;
  for (int col = 0; col < t.n; col++) {
    if (!nqueens_ok(t.board, t.row, col))
      continue;
    child = t;
    child.board[t.row] = (signed char)col;
    child.row = t.row + 1;
    swarm_spawn(&th[k++], NULL, nqueens_thread, &child);
  }
  intptr_t sum = 0;
  for (int i = 0; i < k; i++) {
    void *r;
    swarm_join(th[i], &r);
    sum += (intptr_t)r;
  }
  return (void *)sum;
}

/* Threads created: one per safe partial placement, counted serially. */
static uint64_t count_tasks(task_t *t) {
  uint64_t c = 1;
  if (t->row == t->n)
    return c;
  for (int col = 0; col < t->n; col++) {
    if (!nqueens_ok(t->board, t->row, col))
      continue;
    t->board[t->row] = (signed char)col;
    t->row++;
    c += count_tasks(t);
    t->row--;
  }
  return c;
}

int main(int argc, char **argv) {
  dist_bench_init(&argc, &argv);
  int n = 12;
  dist_bench_t b;
  bench_flag_t flags[] = {{"-n", BENCH_INT, &n, "board size (default 12)"}};
  bench_parse(argc, argv, "[-n N] [--steal rma|msg]", &b.args, flags, 1);
  if (n < 1 || n > NQUEENS_MAX) {
    fprintf(stderr, "nqueens: -n must be in 1..%d\n", NQUEENS_MAX);
    return 2;
  }
  task_t root;
  memset(&root, 0, sizeof root);
  root.n = n;
  uint64_t tasks = count_tasks(&root);
  dist_bench_run(&b, nqueens_thread, &root);
  char params[64];
  snprintf(params, sizeof params, "{\"n\":%d}", n);
  long long r = (long long)b.result;
  long long ref = nqueens_reference(n);
  dist_bench_report(&b, "nqueens", params, tasks, r, ref < 0 ? -1 : r == ref);
  return 0;
}
