/*
 * bench/uts.c — Unbalanced Tree Search on swarm, one thread per node. A node's
 * thread computes its children's descriptors (SHA-1, bench/common/uts_tree.c),
 * spawns a thread for each, joins them all and sums their node counts and
 * depths. main spawns the root's thread. Flags are UTS's: -t -b -q -m -r -a
 * -d (-f -g); correct compares with the published tree sizes.
 */
#include "swarm.h"
#include "swarm_run.h"
#include "uts_tree.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void die(const char *what, int err) {
  fprintf(stderr, "uts: %s: %s\n", what, strerror(err));
  exit(1);
}

static uts_params_t params;

typedef struct task {
  uts_node_t node;
  uts_count_t count; /* out */
  swarm_thread_t thread;
} task_t;

static void *uts_thread(void *arg) {
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
    die("malloc", ENOMEM);
  int e;
  for (int i = 0; i < k; i++) {
    uts_child(&params, &t->node, i, &child[i].node);
    if ((e = swarm_spawn(&child[i].thread, swarm_bench_attr, uts_thread,
                         &child[i])))
      die("swarm_spawn", e);
  }
  for (int i = 0; i < k; i++) {
    if ((e = swarm_join(child[i].thread, NULL)) != 0)
      die("swarm_join", e);
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
  int e;
  if ((e = swarm_spawn(&root.thread, NULL, uts_thread, &root)) != 0)
    die("swarm_spawn", e);
  if ((e = swarm_join(root.thread, NULL)) != 0)
    die("swarm_join", e);
}

int main(int argc, char **argv) {
  bench_args_t args;
  bench_flag_t flags[17];
  uts_default_params(&params);
  int nflags = uts_flags(&params, flags);
  flags[nflags++] = (bench_flag_t)SWARM_BENCH_INLINE_FLAG;
  bench_parse(argc, argv,
              "[-t T -b B -q Q -m M -r R -a A -d D -f F -g G] [--inline]",
              &args, flags, nflags);
  const char *system = swarm_bench_inline_setup();
  if (uts_check_params(&params))
    return 2;
  int workers;
  long minflt;
  double *times = swarm_bench_run("uts", &args, rep, NULL, &workers, &minflt);
  uts_report(system, &params, workers, args.reps, times, root.count, minflt);
  free(times);
  const uts_reference_t *ref = uts_find_reference(&params);
  return (ref && ref->nodes != root.count.nodes) ? 1 : 0;
}
