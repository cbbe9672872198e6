/*
 * bench/locks.c — contended locks side by side (issue 18 item 3).
 *
 * One source, built twice: `locks` is plain pthread code (not linked to
 * swarm), measured under NPTL and under swarm's drop-in; `locks-native` is
 * the same workload on swarm's native API (-DLOCKS_NATIVE). Three workloads,
 * each run by T threads for a fixed time:
 *   mutex   lock, update a shared 8-word record, unlock, then local work
 *   rwlock  9 in 10 operations read the record under a read lock (and check
 *           that no write was torn), 1 in 10 write it under a write lock
 *   cond    T/2 producers and T/2 consumers pass items through an 8-slot
 *           bounded buffer (one mutex, two condition variables)
 * For each run it prints throughput (operations per second over the whole
 * run), the longest wait of any one operation (time from the lock call, or
 * the put/get call, until it returned), the fairness share (the thread
 * that did least, as a fraction of the mean) and, in --measure's last
 * field and the JSON, operations per second of the process's CPU time (all
 * threads): wall-clock throughput on a loaded machine favours NPTL, whose
 * T kernel threads get more of the CPUs than swarm's 2 workers, while CPU
 * time charges each system only for what it ran (spinning included). Every run
 * checks its result: the mutex counter equals the operations done, no read saw
 * a torn record, every item produced was consumed; a failed check exits 1.
 *
 * Without --measure it is the driver: it runs NPTL (itself, plainly), the
 * drop-in (itself under LD_PRELOAD of ../lib/libswarm-pthread.so, or
 * $SWARMRUN_LIB) and native (locks-native beside it) for every workload and
 * thread count, each --reps times, and prints a table of medians and one
 * JSON line per (workload, threads, system) into --json FILE.
 * Timing lives here, never in a pass/fail test; the ctest `locks_check` runs
 * --measure briefly only for the result checks.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifdef LOCKS_NATIVE
#include <swarm.h>
typedef swarm_mutex_t lk_mutex_t;
typedef swarm_rwlock_t lk_rwlock_t;
typedef swarm_cond_t lk_cond_t;
typedef swarm_thread_t lk_thread_t;
#define lk_mutex_init(m) swarm_mutex_init((m), SWARM_MUTEX_NORMAL)
#define lk_mutex_destroy swarm_mutex_destroy
#define lk_mutex_lock swarm_mutex_lock
#define lk_mutex_unlock swarm_mutex_unlock
#define lk_rwlock_init(rw) swarm_rwlock_init((rw), SWARM_RWLOCK_PREFER_READER)
#define lk_rwlock_destroy swarm_rwlock_destroy
#define lk_rwlock_rdlock swarm_rwlock_rdlock
#define lk_rwlock_wrlock swarm_rwlock_wrlock
#define lk_rwlock_unlock swarm_rwlock_unlock
#define lk_cond_init(c) swarm_cond_init((c), CLOCK_REALTIME)
#define lk_cond_destroy swarm_cond_destroy
#define lk_cond_wait swarm_cond_wait
#define lk_cond_signal swarm_cond_signal
#define lk_cond_broadcast swarm_cond_broadcast
#define lk_create(t, fn, arg) swarm_spawn((t), NULL, (fn), (arg))
#define lk_join(t) swarm_join((t), NULL)
#define LOCKS_SYSTEM "native"
#else
#include <pthread.h>
typedef pthread_mutex_t lk_mutex_t;
typedef pthread_rwlock_t lk_rwlock_t;
typedef pthread_cond_t lk_cond_t;
typedef pthread_t lk_thread_t;
#define lk_mutex_init(m) pthread_mutex_init((m), NULL)
#define lk_mutex_destroy pthread_mutex_destroy
#define lk_mutex_lock pthread_mutex_lock
#define lk_mutex_unlock pthread_mutex_unlock
#define lk_rwlock_init(rw) pthread_rwlock_init((rw), NULL)
#define lk_rwlock_destroy pthread_rwlock_destroy
#define lk_rwlock_rdlock pthread_rwlock_rdlock
#define lk_rwlock_wrlock pthread_rwlock_wrlock
#define lk_rwlock_unlock pthread_rwlock_unlock
#define lk_cond_init(c) pthread_cond_init((c), NULL)
#define lk_cond_destroy pthread_cond_destroy
#define lk_cond_wait pthread_cond_wait
#define lk_cond_signal pthread_cond_signal
#define lk_cond_broadcast pthread_cond_broadcast
#define lk_create(t, fn, arg) pthread_create((t), NULL, (fn), (arg))
#define lk_join(t) pthread_join((t), NULL)
#define LOCKS_SYSTEM "pthread"
#endif

enum { MAX_THREADS = 1024, RECORD_WORDS = 8, QUEUE_SLOTS = 8, MAX_REPS = 64 };

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Work outside the lock: about a hundred dependent operations, so the lock
 * is contended but not the only thing the threads do. */
static uint64_t local_work(uint64_t x) {
  for (int i = 0; i < 48; i++)
    x = x * 6364136223846793005ull + 1442695040888963407ull;
  return x;
}

/* ---- shared state of one run -------------------------------------------- */

typedef struct {
  long ops;        /* operations this thread completed */
  double max_wait; /* its longest single wait, seconds */
  uint64_t sink;   /* keeps local_work from being optimised away */
  int failed;      /* a consistency check failed */
  int index;
  char pad[64];
} worker_stats_t;

static struct {
  lk_mutex_t mutex;
  lk_rwlock_t rwlock;
  lk_cond_t not_full, not_empty;
  uint64_t record[RECORD_WORDS];
  long counter;
  long queue[QUEUE_SLOTS];
  int queue_head, queue_count;
  int producers_left;
  long produced, consumed;
  double deadline;
  int threads;
} shared;

static worker_stats_t stats[MAX_THREADS];

static void note_wait(worker_stats_t *w, double t0, double t1) {
  if (t1 - t0 > w->max_wait)
    w->max_wait = t1 - t0;
}

static void *mutex_thread(void *arg) {
  worker_stats_t *w = arg;
  uint64_t x = (uint64_t)w->index + 1;
  for (;;) {
    double t0 = now();
    lk_mutex_lock(&shared.mutex);
    double t1 = now();
    shared.counter++;
    for (int i = 0; i < RECORD_WORDS; i++)
      shared.record[i] += (uint64_t)i + 1;
    lk_mutex_unlock(&shared.mutex);
    note_wait(w, t0, t1);
    w->ops++;
    x = local_work(x);
    if (t1 >= shared.deadline)
      break;
  }
  w->sink = x;
  return NULL;
}

static void *rwlock_thread(void *arg) {
  worker_stats_t *w = arg;
  uint64_t x = (uint64_t)w->index * 2654435761u + 1;
  for (;;) {
    x = local_work(x);
    int write = (x >> 33) % 10 == 0;
    double t0 = now();
    if (write)
      lk_rwlock_wrlock(&shared.rwlock);
    else
      lk_rwlock_rdlock(&shared.rwlock);
    double t1 = now();
    if (write) {
      for (int i = 0; i < RECORD_WORDS; i++)
        shared.record[i]++;
    } else {
      uint64_t first = shared.record[0];
      for (int i = 1; i < RECORD_WORDS; i++)
        if (shared.record[i] != first)
          w->failed = 1; /* a write was torn: the lock let a reader in */
    }
    lk_rwlock_unlock(&shared.rwlock);
    note_wait(w, t0, t1);
    w->ops++;
    if (t1 >= shared.deadline)
      break;
  }
  w->sink = x;
  return NULL;
}

/* Producers put items until the deadline; the last one to stop wakes every
 * consumer, and consumers leave once the buffer is empty and no producer is
 * left, so every item produced is consumed. */
static void *producer_thread(void *arg) {
  worker_stats_t *w = arg;
  uint64_t x = (uint64_t)w->index + 7;
  for (;;) {
    x = local_work(x);
    double t0 = now();
    lk_mutex_lock(&shared.mutex);
    while (shared.queue_count == QUEUE_SLOTS)
      lk_cond_wait(&shared.not_full, &shared.mutex);
    shared.queue[(shared.queue_head + shared.queue_count) % QUEUE_SLOTS] =
        (long)x;
    shared.queue_count++;
    shared.produced++;
    lk_cond_signal(&shared.not_empty);
    lk_mutex_unlock(&shared.mutex);
    double t1 = now();
    note_wait(w, t0, t1);
    w->ops++;
    if (t1 >= shared.deadline)
      break;
  }
  lk_mutex_lock(&shared.mutex);
  if (--shared.producers_left == 0)
    lk_cond_broadcast(&shared.not_empty);
  lk_mutex_unlock(&shared.mutex);
  w->sink = x;
  return NULL;
}

static void *consumer_thread(void *arg) {
  worker_stats_t *w = arg;
  uint64_t x = 0;
  for (;;) {
    double t0 = now();
    lk_mutex_lock(&shared.mutex);
    while (shared.queue_count == 0 && shared.producers_left > 0)
      lk_cond_wait(&shared.not_empty, &shared.mutex);
    if (shared.queue_count == 0) {
      lk_mutex_unlock(&shared.mutex);
      break;
    }
    x ^= (uint64_t)shared.queue[shared.queue_head];
    shared.queue_head = (shared.queue_head + 1) % QUEUE_SLOTS;
    shared.queue_count--;
    shared.consumed++;
    lk_cond_signal(&shared.not_full);
    lk_mutex_unlock(&shared.mutex);
    note_wait(w, t0, now());
    w->ops++;
    x = local_work(x);
  }
  w->sink = x;
  return NULL;
}

/* ---- one measured run ------------------------------------------------- */

typedef struct {
  double ops_per_s, max_wait_us, min_share, ops_per_cpu_s;
} run_result_t;

/* CPU time of the whole process (every thread), seconds. */
static double cpu_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void die(const char *what, int e) {
  fprintf(stderr, "locks (%s): %s: %s\n", LOCKS_SYSTEM, what, strerror(e));
  exit(1);
}

static run_result_t run_once(const char *workload, int threads,
                             double seconds) {
  memset(&shared, 0, sizeof shared);
  memset(stats, 0, sizeof stats);
  int e;
  if ((e = lk_mutex_init(&shared.mutex)) != 0 ||
      (e = lk_rwlock_init(&shared.rwlock)) != 0 ||
      (e = lk_cond_init(&shared.not_full)) != 0 ||
      (e = lk_cond_init(&shared.not_empty)) != 0)
    die("init", e);
  shared.threads = threads;
  shared.producers_left = threads / 2;
  static lk_thread_t th[MAX_THREADS];
  double cpu_start = cpu_now();
  double start = now();
  shared.deadline = start + seconds;
  for (int i = 0; i < threads; i++) {
    void *(*fn)(void *) = NULL;
    if (!strcmp(workload, "mutex"))
      fn = mutex_thread;
    else if (!strcmp(workload, "rwlock"))
      fn = rwlock_thread;
    else
      fn = i < threads / 2 ? producer_thread : consumer_thread;
    stats[i].index = i;
    if ((e = lk_create(&th[i], fn, &stats[i])) != 0)
      die("thread create", e);
  }
  long total = 0, least = LONG_MAX;
  double max_wait = 0;
  int failed = 0;
  for (int i = 0; i < threads; i++) {
    if ((e = lk_join(th[i])) != 0)
      die("thread join", e);
  }
  double elapsed = now() - start;
  double cpu = cpu_now() - cpu_start;
  for (int i = 0; i < threads; i++) {
    total += stats[i].ops;
    failed |= stats[i].failed;
    if (stats[i].max_wait > max_wait)
      max_wait = stats[i].max_wait;
  }
  /* Fairness among the threads that do the same thing: for cond, only the
   * producers (consumers' counts follow theirs). */
  int peers = !strcmp(workload, "cond") ? threads / 2 : threads;
  long peer_total = 0;
  for (int i = 0; i < peers; i++) {
    peer_total += stats[i].ops;
    if (stats[i].ops < least)
      least = stats[i].ops;
  }
  if (!strcmp(workload, "mutex") && shared.counter != total) {
    fprintf(stderr, "locks (%s): mutex lost updates: counter %ld, ops %ld\n",
            LOCKS_SYSTEM, shared.counter, total);
    exit(1);
  }
  if (failed) {
    fprintf(stderr, "locks (%s): rwlock: a reader saw a torn write\n",
            LOCKS_SYSTEM);
    exit(1);
  }
  if (!strcmp(workload, "cond") && shared.produced != shared.consumed) {
    fprintf(stderr, "locks (%s): cond: %ld items produced, %ld consumed\n",
            LOCKS_SYSTEM, shared.produced, shared.consumed);
    exit(1);
  }
  lk_cond_destroy(&shared.not_empty);
  lk_cond_destroy(&shared.not_full);
  lk_rwlock_destroy(&shared.rwlock);
  lk_mutex_destroy(&shared.mutex);
  run_result_t r;
  double done = (double)(!strcmp(workload, "cond") ? shared.consumed : total);
  r.ops_per_s = done / elapsed;
  r.ops_per_cpu_s = cpu > 0 ? done / cpu : 0;
  r.max_wait_us = max_wait * 1e6;
  r.min_share = peer_total ? (double)least * peers / (double)peer_total : 0;
  return r;
}

/* --measure: the median over reps of each figure, one line. */
static int measure(const char *workload, int threads, double seconds, int reps,
                   int workers) {
#ifdef LOCKS_NATIVE
  swarm_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.workers = workers;
  int e = swarm_init(&cfg);
  if (e != 0)
    die("swarm_init", e);
#else
  (void)workers;
#endif
  double ops[MAX_REPS], wait[MAX_REPS], share[MAX_REPS], cpu[MAX_REPS];
  for (int r = 0; r < reps; r++) {
    run_result_t x = run_once(workload, threads, seconds);
    ops[r] = x.ops_per_s;
    wait[r] = x.max_wait_us;
    share[r] = x.min_share;
    cpu[r] = x.ops_per_cpu_s;
  }
#ifdef LOCKS_NATIVE
  swarm_finalize();
#endif
  qsort(ops, (size_t)reps, sizeof ops[0], cmp_double);
  qsort(wait, (size_t)reps, sizeof wait[0], cmp_double);
  qsort(share, (size_t)reps, sizeof share[0], cmp_double);
  qsort(cpu, (size_t)reps, sizeof cpu[0], cmp_double);
  printf("%s %d %.0f %.1f %.3f %.0f\n", workload, threads, ops[reps / 2],
         wait[reps / 2], share[reps / 2], cpu[reps / 2]);
  return 0;
}

/* ---- driver ------------------------------------------------------------ */

#ifndef LOCKS_NATIVE
typedef struct {
  double ops_per_s, max_wait_us, min_share, ops_per_cpu_s;
  int ok;
} figure_t;

static figure_t run_child(const char *env, const char *exe,
                          const char *workload, int threads, double seconds,
                          int reps) {
  char cmd[4 * PATH_MAX];
  snprintf(cmd, sizeof cmd,
           "%s '%s' --measure --workload %s --threads %d --seconds %g "
           "--reps %d",
           env, exe, workload, threads, seconds, reps);
  figure_t f = {0, 0, 0, 0, 0};
  FILE *p = popen(cmd, "r");
  if (!p)
    return f;
  char name[32];
  int t;
  if (fscanf(p, "%31s %d %lf %lf %lf %lf", name, &t, &f.ops_per_s,
             &f.max_wait_us, &f.min_share, &f.ops_per_cpu_s) == 6)
    f.ok = 1;
  if (pclose(p) != 0)
    f.ok = 0;
  return f;
}

static int drive(const char *self, int reps, double seconds, int workers,
                 const char *thread_list, const char *json_path) {
  char dir[PATH_MAX], lib[PATH_MAX + 64], native[PATH_MAX + 64];
  snprintf(dir, sizeof dir, "%s", self);
  char *slash = strrchr(dir, '/');
  if (slash)
    *slash = 0;
  const char *env_lib = getenv("SWARMRUN_LIB");
  if (env_lib && *env_lib)
    snprintf(lib, sizeof lib, "%s", env_lib);
  else
    snprintf(lib, sizeof lib, "%s/../lib/libswarm-pthread.so", dir);
  snprintf(native, sizeof native, "%s/locks-native", dir);
  if (access(lib, R_OK) != 0 || access(native, X_OK) != 0) {
    fprintf(stderr, "locks: %s or %s not found (set SWARMRUN_LIB)\n", lib,
            native);
    return 1;
  }
  FILE *json = json_path ? fopen(json_path, "w") : NULL;
  if (json_path && !json) {
    fprintf(stderr, "locks: cannot write %s: %s\n", json_path, strerror(errno));
    return 1;
  }
  char preload[2 * PATH_MAX], plain[64];
  snprintf(preload, sizeof preload, "SWARM_WORKERS=%d LD_PRELOAD='%s'", workers,
           lib);
  snprintf(plain, sizeof plain, "SWARM_WORKERS=%d", workers);
  const char *workloads[] = {"mutex", "rwlock", "cond"};
  printf("locks: %d workers, %g s per run, median of %d; ops/s (x NPTL), "
         "longest wait in us, least thread's share of the mean\n",
         workers, seconds, reps);
  printf("%-7s %4s | %-30s | %-30s | %-30s\n", "", "T", "NPTL", "drop-in",
         "native");
  int status = 0;
  for (int k = 0; k < 3; k++) {
    char list[256];
    snprintf(list, sizeof list, "%s", thread_list);
    for (char *save = NULL, *tok = strtok_r(list, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
      int t = atoi(tok);
      figure_t f[3] = {
          run_child("", self, workloads[k], t, seconds, reps),
          run_child(preload, self, workloads[k], t, seconds, reps),
          run_child(plain, native, workloads[k], t, seconds, reps)};
      const char *sys[3] = {"nptl", "dropin", "native"};
      printf("%-7s %4d", workloads[k], t);
      for (int s = 0; s < 3; s++) {
        if (!f[s].ok) {
          printf(" | %-30s", "failed");
          status = 1;
          continue;
        }
        char cell[64];
        snprintf(cell, sizeof cell, "%9.0f (%4.2fx) %7.0f %5.2f",
                 f[s].ops_per_s,
                 f[0].ok ? f[s].ops_per_s / f[0].ops_per_s : 0.0,
                 f[s].max_wait_us, f[s].min_share);
        printf(" | %-30s", cell);
        if (json)
          fprintf(json,
                  "{\"bench\":\"locks\",\"workload\":\"%s\",\"threads\":%d,"
                  "\"workers\":%d,\"system\":\"%s\",\"ops_per_s\":%.0f,"
                  "\"ratio_vs_nptl\":%.3f,\"max_wait_us\":%.1f,"
                  "\"min_share\":%.3f,\"ops_per_cpu_s\":%.0f}\n",
                  workloads[k], t, workers, sys[s], f[s].ops_per_s,
                  f[0].ok ? f[s].ops_per_s / f[0].ops_per_s : 0.0,
                  f[s].max_wait_us, f[s].min_share, f[s].ops_per_cpu_s);
      }
      printf("\n");
      fflush(stdout);
    }
  }
  if (json)
    fclose(json);
  return status;
}
#endif

static void usage(const char *prog) {
  fprintf(stderr,
          "usage: %s [--reps R] [--seconds S] [-w WORKERS] [--threads LIST] "
          "[--json FILE]\n"
          "       %s --measure --workload mutex|rwlock|cond --threads T "
          "[--seconds S] [--reps R]\n",
          prog, prog);
  exit(2);
}

int main(int argc, char **argv) {
  int reps = 3, do_measure = 0, workers = 2;
  double seconds = 0.5;
  const char *workload = NULL, *threads = "2,4,8,16,64", *json = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--measure"))
      do_measure = 1;
    else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
      reps = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
      seconds = atof(argv[++i]);
    else if (!strcmp(argv[i], "-w") && i + 1 < argc)
      workers = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--workload") && i + 1 < argc)
      workload = argv[++i];
    else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
      threads = argv[++i];
    else if (!strcmp(argv[i], "--json") && i + 1 < argc)
      json = argv[++i];
    else
      usage(argv[0]);
  }
  if (reps < 1 || reps > MAX_REPS || !(seconds > 0 && seconds <= 60) ||
      workers < 1) {
    fprintf(stderr,
            "locks: --reps must be 1..%d, --seconds in (0, 60], "
            "-w at least 1\n",
            MAX_REPS);
    return 2;
  }
  if (do_measure) {
    int t = atoi(threads);
    if (!workload || (strcmp(workload, "mutex") && strcmp(workload, "rwlock") &&
                      strcmp(workload, "cond")))
      usage(argv[0]);
    if (t < 2 || t > MAX_THREADS) {
      fprintf(stderr, "locks: --threads must be 2..%d\n", MAX_THREADS);
      return 2;
    }
    const char *w = getenv("SWARM_WORKERS");
    return measure(workload, t, seconds, reps, w ? atoi(w) : workers);
  }
#ifdef LOCKS_NATIVE
  (void)json;
  fprintf(stderr, "locks-native: run it with --measure (the driver is "
                  "build/bench/locks)\n");
  return 2;
#else
  char self[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) {
    fprintf(stderr, "locks: cannot read /proc/self/exe\n");
    return 1;
  }
  self[n] = 0;
  return drive(self, reps, seconds, workers, threads, json);
#endif
}
