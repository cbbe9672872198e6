/*
 * bench/common/bench.h — what every C/C++ benchmark program of the suite
 * shares: flag parsing, the timing loop (warm-up, repetitions, median/min/max,
 * minor faults), and the one-JSON-object-per-line output format of issue 3.
 *
 * Every program (swarm's in bench/, the peers' in bench/peers/) takes
 *   -w W        workers (default: all CPUs in the affinity mask)
 *   --reps R    timed repetitions (default 5)
 *   --warmup K  untimed repetitions run first (default 1), so that stacks,
 *               caches and thread pools are warm and minflt shows steady state
 * plus its own size flags, registered with a bench_flag_t table. Output
 * fields common to all: bench, system, params, workers, reps, tasks,
 * seconds_median, seconds_min, seconds_max, ns_per_task, result, correct,
 * minflt; a program appends its own with the bench_json_* calls.
 *
 * The Go peer (bench/peers/go) re-implements this format in Go; keep the two
 * in step.
 */
#ifndef SWARM_BENCH_H
#define SWARM_BENCH_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum bench_flag_kind { BENCH_INT, BENCH_LONG, BENCH_DOUBLE, BENCH_BOOL };

/* One program-specific flag: "-n" or "--max-tasks"; `value` points at an
 * int, long or double (BENCH_BOOL: an int set to 1, takes no value). */
typedef struct bench_flag {
  const char *name;
  enum bench_flag_kind kind;
  void *value;
  const char *help;
} bench_flag_t;

typedef struct bench_args {
  int workers; /* -w; 0 until parsed, then >= 1 */
  int reps;    /* --reps */
  int warmup;  /* --warmup */
} bench_args_t;

/* Parses argv into *args and the extra flags (defaults must already be in
 * place). Prints usage and exits on -h/--help (0) or a bad flag (2). */
void bench_parse(int argc, char **argv, const char *usage_line,
                 bench_args_t *args, const bench_flag_t *extra, int nextra);

/* CPUs in this process's affinity mask (the default worker count). */
int bench_cpus(void);

/* Restricts the calling process to the first `w` CPUs of its affinity mask
 * (sched_setaffinity; threads created later inherit it). Returns 0 or errno. */
int bench_limit_cpus(int w);

/* Monotonic time in seconds. */
double bench_now(void);

/* Minor page faults of the process so far (getrusage). */
long bench_minflt(void);

/* Runs fn(ctx) args->warmup times untimed, then args->reps times timed,
 * storing each duration in times[0..reps-1] (caller allocates) and the minor
 * faults of the timed repetitions in *minflt. */
void bench_time_reps(const bench_args_t *args, void (*fn)(void *ctx), void *ctx,
                     double *times, long *minflt);

/* Median, minimum and maximum of n values (n >= 1; sorts v in place). */
typedef struct bench_stats {
  double median, min, max;
} bench_stats_t;
bench_stats_t bench_summarize(double *v, int n);

/* ---- JSON output ------------------------------------------------------- */

typedef struct bench_json {
  char buf[4096];
  size_t len;
  int first;
} bench_json_t;

void bench_json_begin(bench_json_t *j);
void bench_json_str(bench_json_t *j, const char *key, const char *value);
void bench_json_int(bench_json_t *j, const char *key, long long value);
void bench_json_double(bench_json_t *j, const char *key, double value);
void bench_json_bool(bench_json_t *j, const char *key, int value);
void bench_json_null(bench_json_t *j, const char *key);
/* `raw` is already JSON (an object, say). */
void bench_json_raw(bench_json_t *j, const char *key, const char *raw);
/* Writes the object and a newline to stdout and flushes. */
void bench_json_print(bench_json_t *j);

/* The fields every program prints. correct: 1 true, 0 false, -1 null (no
 * reference for these parameters). */
typedef struct bench_result {
  const char *bench;  /* "fib", "uts", "btc", "nqueens" */
  const char *system; /* "swarm", "serial", "omp", "tbb", "pthread" */
  const char *params; /* JSON object of the size flags, e.g. {"n":30} */
  int workers;
  int reps;
  uint64_t tasks; /* tasks (threads) created per repetition */
  bench_stats_t seconds;
  long long result;
  int no_result; /* 1: print result as null (nothing was computed) */
  int correct;
  long minflt;
} bench_result_t;

/* Begins *j with the common fields of *r (ns_per_task derived). */
void bench_json_common(bench_json_t *j, const bench_result_t *r);

/* Extra fields every later bench_json_common() appends (at most 8; keys
 * must be string literals). For facts found while running, such as the
 * pthread peer's failed creates. */
void bench_extra_int(const char *key, long long value);
void bench_extra_str(const char *key, const char *value);

/* Prints a one-line JSON object saying this system cannot run this
 * workload, and why (issue 3: never leave a peer out silently). */
void bench_print_unavailable(const char *bench, const char *system,
                             const char *params, const char *why);

#ifdef __cplusplus
}
#endif
#endif /* SWARM_BENCH_H */
