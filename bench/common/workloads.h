/*
 * bench/common/workloads.h — the small workloads' shared definitions (fib,
 * btc, nqueens): their size flags, task counts, reference answers and JSON
 * reports, so that swarm's programs and every C/C++ peer measure and print
 * the same thing. UTS has its own file (uts_tree.h).
 *
 * Task counts (what ns_per_task divides by), identical in every system:
 *   fib(n): every call is a task, the root included: 2*F(n+1)-1 tasks.
 *   btc(d): a full binary tree of depth d: 2^(d+1)-1 tasks, 2^d leaves.
 *   nqueens(n): the root plus one task per legal placement (counted).
 */
#ifndef SWARM_WORKLOADS_H
#define SWARM_WORKLOADS_H

#include "bench.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- fib ----------------------------------------------------------------- */

/* fib(n) by iteration, the reference answer. */
long long fib_reference(int n);
/* Calls made by the recursive fib(n): 2*F(n+1)-1. */
uint64_t fib_calls(int n);

/* Prints fib's JSON line. serial_times: NULL, or the serial fib's times
 * measured in the same run (swarm's program; adds serial_seconds_median and
 * overhead_ns_per_thread = (T - T_serial/W) / threads). */
void fib_report(const char *system, int n, int workers, int reps, double *times,
                long long result, long minflt, double *serial_times);

/* ---- btc ----------------------------------------------------------------- */

uint64_t btc_tasks(int depth);
void btc_report(const char *system, int depth, int workers, int reps,
                double *times, long long leaves, long minflt);

/* ---- nqueens ------------------------------------------------------------- */

#define NQUEENS_MAX 20

/* Published solution counts (OEIS A000170), -1 where not tabulated here. */
long long nqueens_reference(int n);

/* May a queen go at (row, col) given queens at rows 0..row-1 in board? */
static inline int nqueens_ok(const signed char *board, int row, int col) {
  for (int r = 0; r < row; r++) {
    int c = board[r];
    if (c == col || c - col == row - r || col - c == row - r)
      return 0;
  }
  return 1;
}

void nqueens_report(const char *system, int n, int workers, int reps,
                    double *times, long long solutions, uint64_t tasks,
                    long minflt);

/* ---- NPTL peers -----------------------------------------------------------
 */

/* Prints the JSON line of the pthread peer's create+join microbenchmark,
 * used where one kernel thread per task is not feasible (issue 3): `why`
 * says why, `pairs` create+join pairs took times[] each repetition. */
void pthread_micro_report(const char *bench, const char *params,
                          uint64_t workload_tasks, int workers, int reps,
                          double *times, uint64_t pairs, long minflt,
                          const char *why);

#ifdef __cplusplus
}
#endif
#endif /* SWARM_WORKLOADS_H */
