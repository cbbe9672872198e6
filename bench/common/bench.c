/*
 * bench/common/bench.c — flag parsing, timing and JSON output shared by the
 * benchmark programs (see bench.h for the contract). Nothing here runs inside
 * a timed region except bench_now().
 */
#define _GNU_SOURCE
#include "bench.h"

#include <errno.h>
#include <math.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

int bench_cpus(void) {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    int n = CPU_COUNT(&set);
    if (n > 0)
      return n;
  }
  return 1;
}

int bench_limit_cpus(int w) {
  cpu_set_t set, keep;
  if (sched_getaffinity(0, sizeof set, &set) != 0)
    return errno;
  CPU_ZERO(&keep);
  int kept = 0;
  for (int c = 0; c < CPU_SETSIZE && kept < w; c++) {
    if (CPU_ISSET(c, &set)) {
      CPU_SET(c, &keep);
      kept++;
    }
  }
  if (sched_setaffinity(0, sizeof keep, &keep) != 0)
    return errno;
  return 0;
}

static void usage(FILE *f, const char *argv0, const char *usage_line,
                  const bench_flag_t *extra, int nextra) {
  fprintf(f, "usage: %s %s\n", argv0, usage_line);
  fprintf(f,
          "  -w W         workers (default: %d, the CPUs in the affinity "
          "mask)\n",
          bench_cpus());
  fprintf(f, "  --reps R     timed repetitions (default 5)\n");
  fprintf(f, "  --warmup K   untimed repetitions first (default 1)\n");
  for (int i = 0; i < nextra; i++)
    fprintf(f, "  %-12s %s\n", extra[i].name, extra[i].help);
  fprintf(f, "Prints one JSON object per line on stdout.\n");
}

static int parse_long(const char *s, long *out) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || end == s || *end)
    return -1;
  *out = v;
  return 0;
}

void bench_parse(int argc, char **argv, const char *usage_line,
                 bench_args_t *args, const bench_flag_t *extra, int nextra) {
  args->workers = 0;
  args->reps = 5;
  args->warmup = 1;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      usage(stdout, argv[0], usage_line, extra, nextra);
      exit(0);
    }
    const bench_flag_t *f = NULL;
    long lv;
    double dv;
    int *common = NULL;
    if (!strcmp(a, "-w"))
      common = &args->workers;
    else if (!strcmp(a, "--reps"))
      common = &args->reps;
    else if (!strcmp(a, "--warmup"))
      common = &args->warmup;
    else
      for (int k = 0; k < nextra; k++)
        if (!strcmp(a, extra[k].name))
          f = &extra[k];
    if (!common && !f) {
      fprintf(stderr, "%s: unknown flag '%s'\n", argv[0], a);
      goto bad;
    }
    if (f && f->kind == BENCH_BOOL) {
      *(int *)f->value = 1;
      continue;
    }
    if (i + 1 >= argc) {
      fprintf(stderr, "%s: flag '%s' needs a value\n", argv[0], a);
      goto bad;
    }
    const char *v = argv[++i];
    if (common || f->kind != BENCH_DOUBLE) {
      if (parse_long(v, &lv) != 0) {
        fprintf(stderr, "%s: '%s' wants an integer, not '%s'\n", argv[0], a, v);
        goto bad;
      }
      if (common)
        *common = (int)lv;
      else if (f->kind == BENCH_INT)
        *(int *)f->value = (int)lv;
      else
        *(long *)f->value = lv;
    } else {
      char *end;
      dv = strtod(v, &end);
      if (end == v || *end) {
        fprintf(stderr, "%s: '%s' wants a number, not '%s'\n", argv[0], a, v);
        goto bad;
      }
      *(double *)f->value = dv;
    }
  }
  if (args->workers < 0 || args->reps < 1 || args->warmup < 0) {
    fprintf(stderr, "%s: need -w >= 0, --reps >= 1, --warmup >= 0\n", argv[0]);
    goto bad;
  }
  if (args->workers == 0)
    args->workers = bench_cpus();
  return;
bad:
  usage(stderr, argv[0], usage_line, extra, nextra);
  exit(2);
}

double bench_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

long bench_minflt(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_minflt;
}

void bench_time_reps(const bench_args_t *args, void (*fn)(void *ctx), void *ctx,
                     double *times, long *minflt) {
  for (int i = 0; i < args->warmup; i++)
    fn(ctx);
  long f0 = bench_minflt();
  for (int i = 0; i < args->reps; i++) {
    double t0 = bench_now();
    fn(ctx);
    times[i] = bench_now() - t0;
  }
  *minflt = bench_minflt() - f0;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

bench_stats_t bench_summarize(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  bench_stats_t s;
  s.min = v[0];
  s.max = v[n - 1];
  s.median = (n % 2) ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  return s;
}

/* ---- JSON ---------------------------------------------------------------- */

static void jput(bench_json_t *j, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  size_t room = sizeof j->buf - j->len;
  int n = vsnprintf(j->buf + j->len, room, fmt, ap);
  va_end(ap);
  if (n > 0)
    j->len += ((size_t)n < room) ? (size_t)n : room - 1;
}

static void jkey(bench_json_t *j, const char *key) {
  jput(j, "%s\"%s\":", j->first ? "" : ",", key);
  j->first = 0;
}

void bench_json_begin(bench_json_t *j) {
  j->len = 0;
  j->first = 1;
  j->buf[0] = 0;
  jput(j, "{");
}

void bench_json_str(bench_json_t *j, const char *key, const char *value) {
  jkey(j, key);
  jput(j, "\"");
  for (const char *p = value; *p; p++) {
    if (*p == '"' || *p == '\\')
      jput(j, "\\%c", *p);
    else if ((unsigned char)*p < 0x20)
      jput(j, "\\u%04x", (unsigned char)*p);
    else
      jput(j, "%c", *p);
  }
  jput(j, "\"");
}

void bench_json_int(bench_json_t *j, const char *key, long long value) {
  jkey(j, key);
  jput(j, "%lld", value);
}

void bench_json_double(bench_json_t *j, const char *key, double value) {
  jkey(j, key);
  if (isfinite(value))
    jput(j, "%.9g", value);
  else
    jput(j, "null");
}

void bench_json_bool(bench_json_t *j, const char *key, int value) {
  jkey(j, key);
  jput(j, value ? "true" : "false");
}

void bench_json_null(bench_json_t *j, const char *key) {
  jkey(j, key);
  jput(j, "null");
}

void bench_json_raw(bench_json_t *j, const char *key, const char *raw) {
  jkey(j, key);
  jput(j, "%s", raw);
}

void bench_json_print(bench_json_t *j) {
  jput(j, "}");
  fputs(j->buf, stdout);
  fputc('\n', stdout);
  fflush(stdout);
}

static struct {
  const char *key;
  const char *str; /* NULL: integer */
  long long value;
} extras[8];
static int nextras;

void bench_extra_int(const char *key, long long value) {
  if (nextras < 8)
    extras[nextras++] = (__typeof__(extras[0])){key, NULL, value};
}

void bench_extra_str(const char *key, const char *value) {
  if (nextras < 8)
    extras[nextras++] = (__typeof__(extras[0])){key, value, 0};
}

void bench_json_common(bench_json_t *j, const bench_result_t *r) {
  bench_json_begin(j);
  bench_json_str(j, "bench", r->bench);
  bench_json_str(j, "system", r->system);
  bench_json_raw(j, "params", r->params);
  bench_json_int(j, "workers", r->workers);
  bench_json_int(j, "reps", r->reps);
  bench_json_int(j, "tasks", (long long)r->tasks);
  bench_json_double(j, "seconds_median", r->seconds.median);
  bench_json_double(j, "seconds_min", r->seconds.min);
  bench_json_double(j, "seconds_max", r->seconds.max);
  bench_json_double(j, "ns_per_task",
                    r->tasks ? 1e9 * r->seconds.median / (double)r->tasks
                             : NAN);
  if (r->no_result)
    bench_json_null(j, "result");
  else
    bench_json_int(j, "result", r->result);
  if (r->correct < 0)
    bench_json_null(j, "correct");
  else
    bench_json_bool(j, "correct", r->correct);
  bench_json_int(j, "minflt", r->minflt);
  for (int i = 0; i < nextras; i++) {
    if (extras[i].str)
      bench_json_str(j, extras[i].key, extras[i].str);
    else
      bench_json_int(j, extras[i].key, extras[i].value);
  }
}

void bench_print_unavailable(const char *bench, const char *system,
                             const char *params, const char *why) {
  bench_json_t j;
  bench_json_begin(&j);
  bench_json_str(&j, "bench", bench);
  bench_json_str(&j, "system", system);
  bench_json_raw(&j, "params", params);
  bench_json_bool(&j, "available", 0);
  bench_json_str(&j, "note", why);
  bench_json_print(&j);
}
