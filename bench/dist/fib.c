/*
 * bench/dist/fib.c — fib(n) with one thread per call and no cutoff on the
 * distributed runtime (as bench/fib.c: threads = 2*F(n+1)-1, the root
 * included). Run under mpirun; rank 0 prints the JSON line.
 */
#include "dist_run.h"
#include "workloads.h"

static void *fib_thread(void *arg) {
  intptr_t n = (intptr_t)arg;
  if (n < 2)
    return (void *)n;
  swarm_thread_t a, b;
  void *ra, *rb;
  swarm_spawn(&a, NULL, fib_thread, (void *)(n - 1));
  swarm_spawn(&b, NULL, fib_thread, (void *)(n - 2));
  swarm_join(a, &ra);
  swarm_join(b, &rb);
  return (void *)((intptr_t)ra + (intptr_t)rb);
}

int main(int argc, char **argv) {
  dist_bench_init(&argc, &argv);
  int n = 30, no_serial = 0;
  dist_bench_t b;
  bench_flag_t flags[] = {
      {"-n", BENCH_INT, &n, "fib(n) (default 30)"},
      {"--no-serial", BENCH_BOOL, &no_serial,
       "accepted for bench/fib's command lines; no serial fib is timed here"},
  };
  bench_parse(argc, argv, "[-n N] [--steal rma|msg]", &b.args, flags, 2);
  if (n < 0 || n > 60) {
    fprintf(stderr, "fib: -n must be in 0..60\n");
    return 2;
  }
  dist_bench_run(&b, fib_thread, (void *)(intptr_t)n);
  char params[64];
  snprintf(params, sizeof params, "{\"n\":%d}", n);
  long long r = (long long)b.result;
  dist_bench_report(&b, "fib", params, fib_calls(n), r, r == fib_reference(n));
  return 0;
}
