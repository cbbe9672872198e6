/*
 * bench/btc.c — Binary Task Creation on swarm: a full binary tree of threads
 * of depth d (2^d leaves, 2^(d+1)-1 threads, the root spawned by main). Each
 * inner thread spawns its two children and joins them; a leaf returns 1. No
 * work but creation, so ns_per_task is the cost of a spawn+join.
 */
#include "swarm.h"
#include "swarm_run.h"
#include "workloads.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void die(const char *what, int err) {
  fprintf(stderr, "btc: %s: %s\n", what, strerror(err));
  exit(1);
}

static void *btc_thread(void *arg) {
  intptr_t d = (intptr_t)arg;
  if (d == 0)
    return (void *)1;
  swarm_thread_t a, b;
  void *ra, *rb;
  int e;
  if ((e = swarm_spawn(&a, swarm_bench_attr, btc_thread, (void *)(d - 1))) !=
          0 ||
      (e = swarm_spawn(&b, swarm_bench_attr, btc_thread, (void *)(d - 1))) != 0)
    die("swarm_spawn", e);
  if ((e = swarm_join(a, &ra)) != 0 || (e = swarm_join(b, &rb)) != 0)
    die("swarm_join", e);
  return (void *)((intptr_t)ra + (intptr_t)rb);
}

static int depth = 20;
static long long leaves;

static void rep(void *ctx) {
  (void)ctx;
  swarm_thread_t root;
  void *r;
  int e;
  if ((e = swarm_spawn(&root, NULL, btc_thread, (void *)(intptr_t)depth)))
    die("swarm_spawn", e);
  if ((e = swarm_join(root, &r)) != 0)
    die("swarm_join", e);
  leaves = (intptr_t)r;
}

int main(int argc, char **argv) {
  bench_args_t args;
  bench_flag_t flags[] = {{"-d", BENCH_INT, &depth, "depth (default 20)"},
                          SWARM_BENCH_INLINE_FLAG};
  bench_parse(argc, argv, "[-d D] [--inline]", &args, flags, 2);
  const char *system = swarm_bench_inline_setup();
  if (depth < 0 || depth > 40) {
    fprintf(stderr, "btc: -d must be in 0..40\n");
    return 2;
  }
  int workers;
  long minflt;
  double *times = swarm_bench_run("btc", &args, rep, NULL, &workers, &minflt);
  btc_report(system, depth, workers, args.reps, times, leaves, minflt);
  free(times);
  return leaves == (1LL << depth) ? 0 : 1;
}
