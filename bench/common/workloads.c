/*
 * bench/common/workloads.c — reference answers, task counts and JSON reports
 * of fib, btc and nqueens (see workloads.h).
 */
#include "workloads.h"

#include <stdio.h>

long long fib_reference(int n) {
  long long a = 0, b = 1;
  for (int i = 0; i < n; i++) {
    long long t = a + b;
    a = b;
    b = t;
  }
  return a;
}

uint64_t fib_calls(int n) {
  return n < 0 ? 0 : (uint64_t)(2 * fib_reference(n + 1) - 1);
}

void fib_report(const char *system, int n, int workers, int reps, double *times,
                long long result, long minflt, double *serial_times) {
  char params[64];
  snprintf(params, sizeof params, "{\"n\":%d}", n);
  uint64_t threads = fib_calls(n);
  bench_result_t r = {
      .bench = "fib",
      .system = system,
      .params = params,
      .workers = workers,
      .reps = reps,
      .tasks = threads,
      .seconds = bench_summarize(times, reps),
      .result = result,
      .correct = result == fib_reference(n),
      .minflt = minflt,
  };
  bench_json_t j;
  bench_json_common(&j, &r);
  bench_json_int(&j, "n", n);
  bench_json_int(&j, "threads", (long long)threads);
  bench_json_double(&j, "ns_per_thread",
                    1e9 * r.seconds.median / (double)threads);
  if (serial_times) {
    bench_stats_t s = bench_summarize(serial_times, reps);
    bench_json_double(&j, "serial_seconds_median", s.median);
    bench_json_double(&j, "overhead_ns_per_thread",
                      1e9 * (r.seconds.median - s.median / workers) /
                          (double)threads);
  }
  bench_json_print(&j);
}

uint64_t btc_tasks(int depth) {
  return ((uint64_t)2 << depth) - 1;
}

void btc_report(const char *system, int depth, int workers, int reps,
                double *times, long long leaves, long minflt) {
  char params[64];
  snprintf(params, sizeof params, "{\"d\":%d}", depth);
  bench_result_t r = {
      .bench = "btc",
      .system = system,
      .params = params,
      .workers = workers,
      .reps = reps,
      .tasks = btc_tasks(depth),
      .seconds = bench_summarize(times, reps),
      .result = leaves,
      .correct = leaves == (1LL << depth),
      .minflt = minflt,
  };
  bench_json_t j;
  bench_json_common(&j, &r);
  bench_json_print(&j);
}

long long nqueens_reference(int n) {
  static const long long solutions[] = {1,
                                        1,
                                        0,
                                        0,
                                        2,
                                        10,
                                        4,
                                        40,
                                        92,
                                        352,
                                        724,
                                        2680,
                                        14200,
                                        73712,
                                        365596,
                                        2279184,
                                        14772512,
                                        95815104,
                                        666090624,
                                        4968057848LL,
                                        39029188884LL};
  return (n >= 0 && n <= NQUEENS_MAX) ? solutions[n] : -1;
}

void nqueens_report(const char *system, int n, int workers, int reps,
                    double *times, long long solutions, uint64_t tasks,
                    long minflt) {
  char params[64];
  snprintf(params, sizeof params, "{\"n\":%d}", n);
  long long ref = nqueens_reference(n);
  bench_result_t r = {
      .bench = "nqueens",
      .system = system,
      .params = params,
      .workers = workers,
      .reps = reps,
      .tasks = tasks,
      .seconds = bench_summarize(times, reps),
      .result = solutions,
      .correct = ref < 0 ? -1 : solutions == ref,
      .minflt = minflt,
  };
  bench_json_t j;
  bench_json_common(&j, &r);
  bench_json_print(&j);
}

void pthread_micro_report(const char *bench, const char *params,
                          uint64_t workload_tasks, int workers, int reps,
                          double *times, uint64_t pairs, long minflt,
                          const char *why) {
  bench_result_t r = {
      .bench = bench,
      .system = "pthread",
      .params = params,
      .workers = workers,
      .reps = reps,
      .tasks = pairs,
      .seconds = bench_summarize(times, reps),
      .no_result = 1,
      .correct = -1,
      .minflt = minflt,
  };
  bench_json_t j;
  bench_json_common(&j, &r);
  bench_json_str(&j, "mode", "create_join_microbenchmark");
  bench_json_int(&j, "workload_tasks", (long long)workload_tasks);
  bench_json_str(&j, "note", why);
  bench_json_print(&j);
}
