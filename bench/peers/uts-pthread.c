/*
 * bench/peers/uts-pthread.c — UTS on NPTL, one kernel thread per node where
 * feasible (the tree's size is known beforehand only for the published
 * trees, all far above --max-tasks), else the create+join microbenchmark
 * (see pthread-common.h).
 */
#include "pthread-common.h"
#include "uts_tree.h"

#include <stdio.h>
#include <stdlib.h>

static uts_params_t params;

typedef struct task {
  uts_node_t node;
  uts_count_t count;
  pt_task_t thread;
} task_t;

static void *walk(void *arg) {
  task_t *t = arg;
  t->count.nodes = 1;
  t->count.max_depth = t->node.height;
  int k = uts_num_children(&params, &t->node);
  if (k == 0)
    return NULL;
  task_t stack_children[UTS_STACK_CHILDREN];
  task_t *child =
      k <= UTS_STACK_CHILDREN ? stack_children : malloc(sizeof(task_t) * k);
  if (!child)
    abort();
  for (int i = 0; i < k; i++) {
    uts_child(&params, &t->node, i, &child[i].node);
    pt_spawn(&child[i].thread, walk, &child[i]);
  }
  for (int i = 0; i < k; i++) {
    pt_join(&child[i].thread, NULL);
    uts_count_add(&t->count, child[i].count);
  }
  if (child != stack_children)
    free(child);
  return NULL;
}

static task_t root;

static void rep(void *ctx) {
  (void)ctx;
  uts_root(&params, &root.node);
  pt_spawn(&root.thread, walk, &root);
  pt_join(&root.thread, NULL);
}

int main(int argc, char **argv) {
  bench_args_t args;
  pt_opts_t o;
  bench_flag_t flags[16];
  uts_default_params(&params);
  int nflags = uts_flags(&params, flags);
  nflags = pt_flags(&o, flags, nflags);
  bench_parse(argc, argv,
              "[-t T -b B -q Q -m M -r R -a A -d D -f F -g G] [--max-tasks T] "
              "[--micro]",
              &args, flags, nflags);
  if (uts_check_params(&params))
    return 2;
  pt_setup(&args);
  char pjson[256];
  uts_params_json(&params, pjson, sizeof pjson);
  const uts_reference_t *ref = uts_find_reference(&params);
  if (pt_maybe_micro("uts", pjson, ref ? (uint64_t)ref->nodes : 0, &args, &o))
    return 0;
  double *times = calloc(args.reps, sizeof(double));
  long minflt;
  bench_time_reps(&args, rep, NULL, times, &minflt);
  pt_add_fields();
  uts_report("pthread", &params, args.workers, args.reps, times, root.count,
             minflt);
  free(times);
  return 0;
}
