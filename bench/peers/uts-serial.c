/*
 * bench/peers/uts-serial.c — UTS walked by plain recursion: the baseline
 * every other system's UTS time is divided by. Same tree code
 * (bench/common/uts_tree.c) and same flags as build/bench/uts.
 */
#include "uts_tree.h"

#include <stdlib.h>

static uts_params_t params;
static uts_count_t total;

static uts_count_t walk(const uts_node_t *node) {
  uts_count_t c = {1, node->height};
  int k = uts_num_children(&params, node);
  for (int i = 0; i < k; i++) {
    uts_node_t child;
    uts_child(&params, node, i, &child);
    uts_count_add(&c, walk(&child));
  }
  return c;
}

static void rep(void *ctx) {
  (void)ctx;
  uts_node_t root;
  uts_root(&params, &root);
  total = walk(&root);
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
  double *times = malloc(sizeof(double) * args.reps);
  long minflt;
  bench_time_reps(&args, rep, NULL, times, &minflt);
  uts_report("serial", &params, 1, args.reps, times, total, minflt);
  free(times);
  return 0;
}
