/*
 * core/stats.c — per-worker counters: summed for swarm_stats_get, printed
 * per worker by swarm_stats_print (SWARM_STATS=1 prints them at exit).
 * Counters are written by their worker only; readers see values that may
 * be a little stale while workers run.
 */
#include <errno.h>
#include <stdio.h>

#include "core/core.h"
#include "os/os.h"

static void worker_counters(struct worker *w, swarm_stats_t *s) {
  s->threads_spawned =
      atomic_load_explicit(&w->stat_spawned_pub, memory_order_relaxed);
  /* A work-first spawn runs its child at once without counting a run. */
  s->threads_run =
      __atomic_load_n(&w->stats.run, __ATOMIC_RELAXED) + s->threads_spawned;
  s->steals_tried = __atomic_load_n(&w->stats.steals_tried, __ATOMIC_RELAXED);
  s->steals_succeeded = __atomic_load_n(&w->stats.steals_ok, __ATOMIC_RELAXED);
  s->parks = __atomic_load_n(&w->stats.parks, __ATOMIC_RELAXED);
  s->worker_sleeps = __atomic_load_n(&w->stats.sleeps, __ATOMIC_RELAXED);
  s->stacks_mapped = __atomic_load_n(&w->stats.stacks_mapped, __ATOMIC_RELAXED);
}

int swarm_stats_get(swarm_stats_t *stats) {
  if (!stats)
    return EINVAL;
  if (atomic_load(&swarm_rt.state) != RT_RUNNING)
    return ESRCH;
  swarm_stats_t sum = {0};
  for (int i = 0; i < swarm_rt.nslots; i++) { /* spares too */
    swarm_stats_t s;
    worker_counters(&swarm_rt.workers[i], &s);
    sum.threads_spawned += s.threads_spawned;
    sum.threads_run += s.threads_run;
    sum.steals_tried += s.steals_tried;
    sum.steals_succeeded += s.steals_succeeded;
    sum.parks += s.parks;
    sum.worker_sleeps += s.worker_sleeps;
    sum.stacks_mapped += s.stacks_mapped;
  }
  sum.threads_spawned +=
      atomic_load_explicit(&swarm_rt.external_spawned, memory_order_relaxed);
  *stats = sum;
  return 0;
}

void swarm_stats_print(void) {
  if (atomic_load(&swarm_rt.state) != RT_RUNNING)
    return;
  /* stats_fd: stderr as it was when the runtime started (see swarm_init) */
  int fd =
      swarm_rt.print_stats && swarm_rt.stats_fd >= 0 ? swarm_rt.stats_fd : 2;
  fflush(stderr);
  dprintf(fd, "swarm stats: %-6s %12s %12s %12s %12s %10s %8s %8s\n", "worker",
          "spawned", "run", "steal_tries", "steals", "parks", "sleeps",
          "stacks");
  for (int i = 0; i < swarm_rt.nslots; i++) { /* spares too */
    swarm_stats_t s;
    worker_counters(&swarm_rt.workers[i], &s);
    dprintf(fd,
            "swarm stats: %-6d %12llu %12llu %12llu %12llu %10llu %8llu "
            "%8llu\n",
            i, (unsigned long long)s.threads_spawned,
            (unsigned long long)s.threads_run,
            (unsigned long long)s.steals_tried,
            (unsigned long long)s.steals_succeeded, (unsigned long long)s.parks,
            (unsigned long long)s.worker_sleeps,
            (unsigned long long)s.stacks_mapped);
  }
  dprintf(fd, "swarm stats: guard pages by %s, default stack %zu bytes\n",
          os_guard_kind(), swarm_rt.default_stack);
}
