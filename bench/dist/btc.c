/*
 * bench/dist/btc.c — Binary Task Creation on the distributed runtime: a
 * full binary tree of threads of depth d (2^(d+1)-1 threads). Nothing but
 * creation, so ns_per_task is a spawn+join (and, with P > 1, what stealing
 * costs it).
 */
#include "dist_run.h"
#include "workloads.h"

static void *btc_thread(void *arg) {
  intptr_t d = (intptr_t)arg;
  if (d == 0)
    return (void *)1;
  swarm_thread_t a, b;
  void *ra, *rb;
  swarm_spawn(&a, NULL, btc_thread, (void *)(d - 1));
  swarm_spawn(&b, NULL, btc_thread, (void *)(d - 1));
  swarm_join(a, &ra);
  swarm_join(b, &rb);
  return (void *)((intptr_t)ra + (intptr_t)rb);
}

int main(int argc, char **argv) {
  dist_bench_init(&argc, &argv);
  int depth = 20;
  dist_bench_t b;
  bench_flag_t flags[] = {{"-d", BENCH_INT, &depth, "depth (default 20)"}};
  bench_parse(argc, argv, "[-d D] [--steal rma|msg]", &b.args, flags, 1);
  if (depth < 0 || depth > 40) {
    fprintf(stderr, "btc: -d must be in 0..40\n");
    return 2;
  }
  dist_bench_run(&b, btc_thread, (void *)(intptr_t)depth);
  char params[64];
  snprintf(params, sizeof params, "{\"d\":%d}", depth);
  long long r = (long long)b.result;
  dist_bench_report(&b, "btc", params, btc_tasks(depth), r,
                    r == (1LL << depth));
  return 0;
}
