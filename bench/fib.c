/*
 * bench/fib.c — swarm's fib benchmark (issues 2 and 3): fib(n) with one swarm
 * thread per call and no cutoff. Each call spawns both fib(n-1) and fib(n-2)
 * as threads and joins both, and main spawns the root, so threads = calls =
 * 2*F(n+1)-1. A plain recursive serial fib, compiled in this file with the
 * same flags, is timed in the same run for overhead_ns_per_thread.
 */
#include "swarm.h"
#include "swarm_run.h"
#include "workloads.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void die(const char *what, int err) {
  fprintf(stderr, "fib: %s: %s\n", what, strerror(err));
  exit(1);
}

static void *fib_thread(void *arg) {
  intptr_t n = (intptr_t)arg;
  if (n < 2)
    return (void *)n;
  swarm_thread_t a, b;
  void *ra, *rb;
  int e;
  if ((e = swarm_spawn(&a, swarm_bench_attr, fib_thread, (void *)(n - 1))) != 0)
    die("swarm_spawn", e);
  if ((e = swarm_spawn(&b, swarm_bench_attr, fib_thread, (void *)(n - 2))) != 0)
    die("swarm_spawn", e);
  if ((e = swarm_join(a, &ra)) != 0 || (e = swarm_join(b, &rb)) != 0)
    die("swarm_join", e);
  return (void *)((intptr_t)ra + (intptr_t)rb);
}

static long long fib_serial(int n) {
  return n < 2 ? n : fib_serial(n - 1) + fib_serial(n - 2);
}

static int n = 30;
static long long result, serial_result;

static void rep_swarm(void *ctx) {
  (void)ctx;
  swarm_thread_t root;
  void *r;
  int e;
  if ((e = swarm_spawn(&root, NULL, fib_thread, (void *)(intptr_t)n)) != 0)
    die("swarm_spawn", e);
  if ((e = swarm_join(root, &r)) != 0)
    die("swarm_join", e);
  result = (intptr_t)r;
}

static void rep_serial(void *ctx) {
  (void)ctx;
  serial_result = fib_serial(n);
}

int main(int argc, char **argv) {
  bench_args_t args;
  int no_serial = 0;
  bench_flag_t flags[] = {
      {"-n", BENCH_INT, &n, "fib(n) (default 30)"},
      {"--no-serial", BENCH_BOOL, &no_serial,
       "skip the serial fib (for instruction counts)"},
      SWARM_BENCH_INLINE_FLAG,
  };
  bench_parse(argc, argv, "[-n N] [--no-serial] [--inline]", &args, flags, 3);
  const char *system = swarm_bench_inline_setup();
  if (n < 0 || n > 60) {
    fprintf(stderr, "fib: -n must be in 0..60\n");
    return 2;
  }
  double *serial_times = calloc(args.reps, sizeof(double));
  long minflt, serial_minflt;
  if (!serial_times) {
    fprintf(stderr, "fib: out of memory for %d repetitions\n", args.reps);
    return 1;
  }
  if (!no_serial)
    bench_time_reps(&args, rep_serial, NULL, serial_times, &serial_minflt);

  int workers;
  double *times =
      swarm_bench_run("fib", &args, rep_swarm, NULL, &workers, &minflt);

  if (!no_serial && serial_result != fib_reference(n)) {
    fprintf(stderr, "fib: serial fib(%d) = %lld, wrong\n", n, serial_result);
    return 1;
  }
  fib_report(system, n, workers, args.reps, times, result, minflt,
             no_serial ? NULL : serial_times);
  free(times);
  free(serial_times);
  return result == fib_reference(n) ? 0 : 1;
}
