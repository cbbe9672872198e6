/*
 * bench/peers/nqueens-serial.c — N-Queens by plain backtracking, the serial
 * baseline: one board updated in place (the threaded versions copy it per
 * placement, a cost of parallelism the ratios should show). Counts the same
 * tasks as they do: the root plus every legal placement.
 */
#include "workloads.h"

#include <stdlib.h>

static uint64_t tasks;

static long long solve(int n, int row, signed char *board) {
  if (row == n)
    return 1;
  long long s = 0;
  for (int col = 0; col < n; col++) {
    if (!nqueens_ok(board, row, col))
      continue;
    board[row] = (signed char)col;
    tasks++;
    s += solve(n, row + 1, board);
  }
  return s;
}

static int n = 12;
static long long solutions;

static void rep(void *ctx) {
  (void)ctx;
  signed char board[NQUEENS_MAX];
  tasks = 1;
  solutions = solve(n, 0, board);
}

int main(int argc, char **argv) {
  bench_args_t args;
  bench_flag_t flags[] = {{"-n", BENCH_INT, &n, "board size (default 12)"}};
  bench_parse(argc, argv, "[-n N]", &args, flags, 1);
  if (n < 1 || n > NQUEENS_MAX)
    return 2;
  double *times = calloc(args.reps, sizeof(double));
  long minflt;
  bench_time_reps(&args, rep, NULL, times, &minflt);
  nqueens_report("serial", n, 1, args.reps, times, solutions, tasks, minflt);
  free(times);
  return 0;
}
