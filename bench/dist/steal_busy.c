/*
 * bench/dist/steal_busy.c — how long work waits for a thief when its
 * victim computes without calling the runtime (issue 14 item 3). Rank 0's
 * root spawns a child that computes for -m milliseconds (a clock loop, no
 * spawn, no MPI), leaving the root's continuation on rank 0's deque; an
 * idle rank steals it. Printed (rank 0, one JSON line): the median over the
 * repetitions of the wait from the child's start to the continuation
 * running on the thief (CLOCK_MONOTONIC on both sides: valid for ranks on
 * one machine, simulated nodes included), and the steals' own latency and
 * breakdown. On the shared window the thief needs nothing from the victim;
 * on the created one the victim's progress thread (SWARM_DIST_PROGRESS_US)
 * lets the thief's RMA through; message stealing waits for the victim's
 * next safe point, here the end of the computation.
 */
#include <stdint.h>
#include <time.h>

#include "dist_run.h"

static long compute_ms = 1000;

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Writes its start time into the parent's frame, then computes. */
static void *busy(void *arg) {
  uint64_t t0 = now_ns();
  *(volatile uint64_t *)arg = t0;
  while (now_ns() - t0 < (uint64_t)compute_ms * 1000000ull)
    __asm__ volatile("pause");
  return NULL;
}

/* Returns the wait (ns) from the child's start to this continuation running
 * elsewhere, or 0 when nobody stole it. */
static void *root(void *unused) {
  (void)unused;
  uint64_t started = 0; /* in this frame: copied by the thief */
  int here = swarm_dist_rank();
  swarm_thread_t t;
  swarm_spawn(&t, NULL, busy, (void *)&started);
  uint64_t wait = swarm_dist_rank() != here ? now_ns() - started : 0;
  swarm_join(t, NULL);
  return (void *)(uintptr_t)wait;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
  dist_bench_init(&argc, &argv);
  dist_bench_t b;
  bench_flag_t flags[] = {
      {"-m", BENCH_LONG, &compute_ms,
       "the child computes this many ms "
       "(default 1000)"},
  };
  bench_parse(argc, argv, "[-m MS] [--steal rma|msg]", &b.args, flags, 1);
  if (swarm_dist_ranks() < 2) {
    fprintf(stderr, "steal_busy: needs 2 or more ranks\n");
    swarm_dist_finalize();
    return 2;
  }
  int reps = b.args.reps;
  uint64_t *waits = calloc((size_t)reps, sizeof *waits);
  swarm_dist_steal_profile_reset();
  int stolen = 0;
  for (int i = 0; i < reps; i++) {
    void *r;
    swarm_dist_run(root, NULL, &r);
    waits[i] = (uint64_t)(uintptr_t)r;
    stolen += waits[i] != 0;
  }
  swarm_dist_steal_profile_t p;
  swarm_dist_steal_profile(&p);
  if (swarm_dist_rank() == 0) {
    qsort(waits, (size_t)reps, sizeof *waits, cmp_u64);
    printf("{\"bench\":\"steal_busy\",\"system\":\"swarm-dist\",\"ranks\":%d,"
           "\"nodes\":%d,\"window\":\"%s\",\"steal\":\"%s\",\"compute_ms\":%ld,"
           "\"reps\":%d,\"stolen\":%d,\"wait_us_median\":%.1f,"
           "\"wait_us_max\":%.1f,\"steal_us\":%.1f,\"steal_lock_us\":%.1f,"
           "\"steal_index_us\":%.1f,\"steal_entry_us\":%.1f,"
           "\"steal_frames_us\":%.1f,\"steal_unlock_us\":%.1f}\n",
           swarm_dist_ranks(), swarm_dist_nodes(), swarm_dist_window_path(),
           swarm_dist_steal_name(swarm_dist_steal_mode()), compute_ms, reps,
           stolen, 1e-3 * (double)waits[reps / 2],
           1e-3 * (double)waits[reps - 1], 1e-3 * p.total_ns, 1e-3 * p.lock_ns,
           1e-3 * p.index_ns, 1e-3 * p.entry_ns, 1e-3 * p.frames_ns,
           1e-3 * p.unlock_ns);
  }
  free(waits);
  swarm_dist_finalize();
  return 0; /* "stolen" says whether the thief got the work */
}
