/*
 * bench/dist/dist_run.h — what every distributed benchmark program does
 * around its timed repetitions: start libswarm-dist (which takes --steal
 * out of argv), parse the usual flags (-w is accepted and ignored: the
 * ranks are mpirun's), run warm-ups and timed repetitions of
 * swarm_dist_run on every rank, and print from rank 0 one JSON line with
 * the common fields plus ranks, nodes, window (shared or created), steal,
 * remote_steals, migrations,
 * suspensions, CPU seconds of all ranks, per rank the fraction of the
 * wall time spent in thread code and its CPU seconds (per_rank_busy_cpu),
 * and one steal's latency (median) and its breakdown.
 */
#ifndef SWARM_BENCH_DIST_RUN_H
#define SWARM_BENCH_DIST_RUN_H

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <swarm/dist.h>
#include <sys/resource.h>

#include "bench.h"

typedef struct dist_bench {
  bench_args_t args;
  double *times;
  uint64_t result;
  swarm_dist_stats_t delta; /* summed over ranks, timed repetitions only */
  swarm_dist_steal_profile_t profile; /* medians, timed repetitions */
  double cpu_seconds;  /* user+system CPU of all ranks per repetition */
  char per_rank[1024]; /* rank 0: "busy fraction/CPU s" of every rank */
} dist_bench_t;

static inline void dist_bench_init(int *argc, char ***argv) {
  int e = swarm_dist_init(argc, argv);
  if (e != 0) {
    fprintf(stderr, "%s: swarm_dist_init: %s\n", (*argv)[0], strerror(e));
    exit(1);
  }
}

/* This process's user + system CPU time so far. */
static inline double dist_cpu_seconds(void) {
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  return (double)u.ru_utime.tv_sec + 1e-6 * (double)u.ru_utime.tv_usec +
         (double)u.ru_stime.tv_sec + 1e-6 * (double)u.ru_stime.tv_usec;
}

static inline void dist_bench_run(dist_bench_t *b, void *(*root)(void *),
                                  void *arg) {
  b->times = calloc((size_t)b->args.reps, sizeof(double));
  if (!b->times) {
    fprintf(stderr, "out of memory\n");
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  void *r;
  for (int i = 0; i < b->args.warmup; i++)
    swarm_dist_run(root, arg, &r);
  swarm_dist_stats_t before, after, mine0, mine1;
  swarm_dist_stats_sum(&before);
  swarm_dist_stats_get(&mine0);
  swarm_dist_steal_profile_reset();
  double cpu0 = dist_cpu_seconds();
  for (int i = 0; i < b->args.reps; i++) {
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = bench_now();
    swarm_dist_run(root, arg, &r);
    b->times[i] = bench_now() - t0;
  }
  double cpu = dist_cpu_seconds() - cpu0;
  MPI_Allreduce(&cpu, &b->cpu_seconds, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  b->cpu_seconds /= b->args.reps;
  /* Per rank: the fraction of the timed wall time it ran thread code, and
   * its CPU seconds per repetition (is every rank kept busy?). */
  swarm_dist_stats_get(&mine1);
  double wall = 0, mine[2];
  for (int i = 0; i < b->args.reps; i++)
    wall += b->times[i];
  mine[0] =
      wall > 0 ? 1e-9 * (double)(mine1.ns_busy - mine0.ns_busy) / wall : 0;
  mine[1] = cpu / b->args.reps;
  int nr = swarm_dist_ranks(), me = swarm_dist_rank();
  double *all = me == 0 ? malloc(sizeof(double) * 2 * (size_t)nr) : NULL;
  MPI_Gather(mine, 2, MPI_DOUBLE, all, 2, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  b->per_rank[0] = 0;
  for (int i = 0; all && i < nr; i++) {
    size_t n = strlen(b->per_rank);
    snprintf(b->per_rank + n, sizeof b->per_rank - n, "%s%.2f/%.2f",
             i ? " " : "", all[2 * i], all[2 * i + 1]);
  }
  free(all);
  swarm_dist_stats_sum(&after);
  swarm_dist_steal_profile(&b->profile);
  b->result = (uint64_t)(uintptr_t)r;
  uint64_t *d = (uint64_t *)&b->delta;
  const uint64_t *x = (const uint64_t *)&after, *y = (const uint64_t *)&before;
  for (size_t i = 0; i < sizeof b->delta / sizeof(uint64_t); i++)
    d[i] = x[i] - y[i];
}

static inline double dist_avg(uint64_t sum, uint64_t n) {
  return n ? (double)sum / (double)n : 0.0;
}

/* Rank 0 prints; every rank then finalises. */
static inline void dist_bench_report(dist_bench_t *b, const char *bench,
                                     const char *params, uint64_t tasks,
                                     long long result, int correct) {
  if (swarm_dist_rank() == 0) {
    const swarm_dist_stats_t *s = &b->delta;
    int reps = b->args.reps;
    bench_result_t res;
    memset(&res, 0, sizeof res);
    res.bench = bench;
    res.system = "swarm-dist";
    res.params = params;
    res.workers = swarm_dist_ranks();
    res.reps = reps;
    res.tasks = tasks;
    res.seconds = bench_summarize(b->times, reps);
    res.result = result;
    res.correct = correct;
    bench_json_t j;
    bench_json_common(&j, &res);
    bench_json_int(&j, "ranks", swarm_dist_ranks());
    bench_json_int(&j, "nodes", swarm_dist_nodes());
    bench_json_str(&j, "window", swarm_dist_window_path());
    bench_json_str(&j, "steal", swarm_dist_steal_name(swarm_dist_steal_mode()));
    /* CPU time of all ranks (idle ones' polling included): on a machine
     * with no free core, cpu_seconds against P = 1's shows how much work
     * distribution adds, when wall time cannot show speed-up. */
    bench_json_double(&j, "cpu_seconds", b->cpu_seconds);
    /* "busy/cpu" per rank: fraction of wall time in thread code, CPU s */
    bench_json_str(&j, "per_rank_busy_cpu", b->per_rank);
    bench_json_double(&j, "remote_steals", (double)s->steals / reps);
    bench_json_double(&j, "node_steals", (double)s->node_steals / reps);
    bench_json_double(&j, "migrations", (double)s->migrations / reps);
    bench_json_double(&j, "suspensions", (double)s->suspensions / reps);
    bench_json_double(&j, "steal_attempts", (double)s->steal_attempts / reps);
    /* One steal's latency: medians over the timed repetitions' steals
     * (the means, steal_mean_ns, include steals stretched by preemption). */
    const swarm_dist_steal_profile_t *p = &b->profile;
    bench_json_double(&j, "steal_ns", p->total_ns);
    bench_json_double(&j, "steal_p90_ns", p->total_p90_ns);
    bench_json_double(&j, "steal_mean_ns",
                      dist_avg(s->ns_steal_total, s->steals));
    bench_json_double(&j, "steal_lock_ns", p->lock_ns);
    bench_json_double(&j, "steal_index_ns", p->index_ns);
    bench_json_double(&j, "steal_entry_ns", p->entry_ns);
    bench_json_double(&j, "steal_frames_ns", p->frames_ns);
    bench_json_double(&j, "steal_unlock_ns", p->unlock_ns);
    bench_json_double(&j, "steal_bytes", p->frame_bytes);
    bench_json_print(&j);
  }
  free(b->times);
  swarm_dist_finalize();
}

#endif
