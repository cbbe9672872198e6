/*
 * bench/peers/fib-omp.c — fib(n) on OpenMP tasks (GCC's libgomp): every call
 * is a task (two `omp task` per inner call, then `taskwait`; the root is a
 * task made inside `parallel`/`single`). -w sets omp_set_num_threads; every
 * other knob (OMP_WAIT_POLICY, GOMP_SPINCOUNT, ...) is left to the
 * environment, as a user would.
 */
#include "workloads.h"

#include <omp.h>
#include <stdlib.h>

static long long fib(int n) {
  if (n < 2)
    return n;
  long long a, b;
#pragma omp task shared(a) firstprivate(n)
  a = fib(n - 1);
#pragma omp task shared(b) firstprivate(n)
  b = fib(n - 2);
#pragma omp taskwait
  return a + b;
}

static int n = 30;
static long long result;

static void rep(void *ctx) {
  (void)ctx;
#pragma omp parallel
#pragma omp single
  {
#pragma omp task shared(result)
    result = fib(n);
#pragma omp taskwait
  }
}

int main(int argc, char **argv) {
  bench_args_t args;
  bench_flag_t flags[] = {{"-n", BENCH_INT, &n, "fib(n) (default 30)"}};
  bench_parse(argc, argv, "[-n N]", &args, flags, 1);
  if (n < 0 || n > 60)
    return 2;
  omp_set_num_threads(args.workers);
  double *times = calloc(args.reps, sizeof(double));
  long minflt;
  bench_time_reps(&args, rep, NULL, times, &minflt);
  fib_report("omp", n, omp_get_max_threads(), args.reps, times, result, minflt,
             NULL);
  free(times);
  return 0;
}
