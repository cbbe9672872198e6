/*
 * bench/peers/uts-omp.c — UTS on OpenMP tasks (libgomp): one task per node;
 * a node computes its children's descriptors, makes a task for each, waits
 * (taskwait) and sums their counts. Same tree code as every system.
 */
#include "uts_tree.h"

#include <omp.h>
#include <stdlib.h>

static uts_params_t params;

typedef struct task {
  uts_node_t node;
  uts_count_t count;
} task_t;

static void walk(task_t *t) {
  t->count.nodes = 1;
  t->count.max_depth = t->node.height;
  int k = uts_num_children(&params, &t->node);
  if (k == 0)
    return;
  task_t stack_children[UTS_STACK_CHILDREN];
  task_t *child =
      k <= UTS_STACK_CHILDREN ? stack_children : malloc(sizeof(task_t) * k);
  if (!child)
    abort();
  for (int i = 0; i < k; i++) {
    task_t *c = &child[i];
    uts_child(&params, &t->node, i, &c->node);
#pragma omp task firstprivate(c)
    walk(c);
  }
#pragma omp taskwait
  for (int i = 0; i < k; i++)
    uts_count_add(&t->count, child[i].count);
  if (child != stack_children)
    free(child);
}

static task_t root;

static void rep(void *ctx) {
  (void)ctx;
  uts_root(&params, &root.node);
#pragma omp parallel
#pragma omp single
  {
#pragma omp task
    walk(&root);
#pragma omp taskwait
  }
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
  omp_set_num_threads(args.workers);
  double *times = calloc(args.reps, sizeof(double));
  long minflt;
  bench_time_reps(&args, rep, NULL, times, &minflt);
  uts_report("omp", &params, omp_get_max_threads(), args.reps, times,
             root.count, minflt);
  free(times);
  return 0;
}
