/*
 * bench/pthread_create_join.c — plain pthread code (not linked to swarm),
 * measured under NPTL and under swarm's drop-in in one run (issue 4):
 *   create_join        pthread_create + pthread_join of an empty thread
 *   mutex_uncontended  lock + unlock by one thread
 *   mutex_contended    lock + unlock by 4 threads on one mutex
 *   cond_pingpong      one round trip between two threads (mutex + cond)
 * Without --measure it runs itself twice, plainly and with
 * LD_PRELOAD=<dir of this program>/../../lib/libswarm-pthread.so (or
 * $SWARMRUN_LIB), and prints one JSON line per operation:
 *   {"bench":"pthread_create_join","op":..,"swarm_ns":..,"nptl_ns":..,
 *    "ratio_vs_nptl":..}   (ratio = nptl_ns / swarm_ns: >1 swarm is cheaper)
 * Each figure is the median of --reps runs (default 5). -w W sets
 * SWARM_WORKERS for the swarm run (default: all CPUs).
 */
#define _GNU_SOURCE
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static void *empty(void *a) { return a; }

static double op_create_join(long n) {
  double t = now();
  for (long i = 0; i < n; i++) {
    pthread_t th;
    if (pthread_create(&th, NULL, empty, NULL) != 0 ||
        pthread_join(th, NULL) != 0) {
      fprintf(stderr, "pthread_create/join failed\n");
      exit(1);
    }
  }
  return (now() - t) / n * 1e9;
}

static pthread_mutex_t mtx = PTHREAD_MUTEX_INITIALIZER;
static long counter;

static double op_mutex_uncontended(long n) {
  double t = now();
  for (long i = 0; i < n; i++) {
    pthread_mutex_lock(&mtx);
    counter++;
    pthread_mutex_unlock(&mtx);
  }
  return (now() - t) / n * 1e9;
}

static long contended_n;
static void *contender(void *a) {
  for (long i = 0; i < contended_n; i++) {
    pthread_mutex_lock(&mtx);
    counter++;
    pthread_mutex_unlock(&mtx);
  }
  return a;
}

static double op_mutex_contended(long n) {
  enum { T = 4 };
  pthread_t th[T];
  contended_n = n / T;
  counter = 0;
  double t = now();
  for (int i = 0; i < T; i++)
    pthread_create(&th[i], NULL, contender, NULL);
  for (int i = 0; i < T; i++)
    pthread_join(th[i], NULL);
  double ns = (now() - t) / (contended_n * T) * 1e9;
  if (counter != contended_n * T) {
    fprintf(stderr, "mutex_contended: lost updates (%ld of %ld)\n", counter,
            contended_n * T);
    exit(1);
  }
  return ns;
}

static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static long turn, rounds;
static void *ponger(void *a) {
  pthread_mutex_lock(&mtx);
  for (long i = 0; i < rounds; i++) {
    while (turn != 1)
      pthread_cond_wait(&cv, &mtx);
    turn = 0;
    pthread_cond_signal(&cv);
  }
  pthread_mutex_unlock(&mtx);
  return a;
}

static double op_cond_pingpong(long n) {
  rounds = n;
  turn = 0;
  pthread_t th;
  pthread_create(&th, NULL, ponger, NULL);
  double t = now();
  pthread_mutex_lock(&mtx);
  for (long i = 0; i < n; i++) {
    turn = 1;
    pthread_cond_signal(&cv);
    while (turn != 0)
      pthread_cond_wait(&cv, &mtx);
  }
  pthread_mutex_unlock(&mtx);
  double ns = (now() - t) / n * 1e9;
  pthread_join(th, NULL);
  return ns;
}

static const struct {
  const char *name;
  double (*fn)(long);
  long n;
} ops[] = {
    {"create_join", op_create_join, 20000},
    {"mutex_uncontended", op_mutex_uncontended, 5000000},
    {"mutex_contended", op_mutex_contended, 1000000},
    {"cond_pingpong", op_cond_pingpong, 50000},
};
enum { NOPS = sizeof ops / sizeof ops[0] };

static void measure(int reps) {
  for (int k = 0; k < NOPS; k++) {
    double v[64];
    ops[k].fn(ops[k].n / 10); /* warm-up */
    for (int r = 0; r < reps; r++)
      v[r] = ops[k].fn(ops[k].n);
    qsort(v, (size_t)reps, sizeof v[0], cmp_double);
    printf("%s %.3f\n", ops[k].name, v[reps / 2]);
  }
}

/* Runs this program in --measure mode, with `preload` (or plainly), and
 * reads back one figure per operation. */
static int run_child(const char *self, const char *preload, int reps,
                     const char *workers, double out[NOPS]) {
  char cmd[3 * PATH_MAX];
  snprintf(cmd, sizeof cmd, "%s%s%s%s%s%s '%s' --measure --reps %d",
           preload ? "LD_PRELOAD='" : "", preload ? preload : "",
           preload ? "' " : "", workers ? "SWARM_WORKERS=" : "",
           workers ? workers : "", workers ? " " : "", self, reps);
  FILE *p = popen(cmd, "r");
  if (!p)
    return -1;
  char name[64];
  double v;
  int got = 0;
  while (fscanf(p, "%63s %lf", name, &v) == 2)
    for (int k = 0; k < NOPS; k++)
      if (!strcmp(name, ops[k].name)) {
        out[k] = v;
        got++;
      }
  int st = pclose(p);
  return st == 0 && got == NOPS ? 0 : -1;
}

int main(int argc, char **argv) {
  int reps = 5, do_measure = 0;
  const char *workers = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--measure"))
      do_measure = 1;
    else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
      reps = atoi(argv[++i]);
    else if (!strcmp(argv[i], "-w") && i + 1 < argc)
      workers = argv[++i];
    else {
      fprintf(stderr, "usage: %s [-w W] [--reps R] [--measure]\n", argv[0]);
      return 2;
    }
  }
  if (reps < 1 || reps > 64) {
    fprintf(stderr, "--reps must be 1..64\n");
    return 2;
  }
  if (do_measure) {
    measure(reps);
    return 0;
  }
  char self[PATH_MAX], lib[PATH_MAX + 64];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0)
    return 1;
  self[n] = 0;
  const char *env = getenv("SWARMRUN_LIB");
  if (env && *env) {
    snprintf(lib, sizeof lib, "%s", env);
  } else {
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", self);
    char *slash = strrchr(dir, '/');
    if (slash)
      *slash = 0; /* .../build/bench */
    snprintf(lib, sizeof lib, "%s/../lib/libswarm-pthread.so", dir);
  }
  if (access(lib, R_OK) != 0) {
    fprintf(stderr, "pthread_create_join: %s not found (set SWARMRUN_LIB)\n",
            lib);
    return 1;
  }
  double nptl[NOPS], swarm[NOPS];
  if (run_child(self, NULL, reps, NULL, nptl) != 0 ||
      run_child(self, lib, reps, workers, swarm) != 0) {
    fprintf(stderr, "pthread_create_join: a measuring run failed\n");
    return 1;
  }
  for (int k = 0; k < NOPS; k++)
    printf("{\"bench\":\"pthread_create_join\",\"op\":\"%s\",\"swarm_ns\":%.1f,"
           "\"nptl_ns\":%.1f,\"ratio_vs_nptl\":%.2f}\n",
           ops[k].name, swarm[k], nptl[k], nptl[k] / swarm[k]);
  return 0;
}
