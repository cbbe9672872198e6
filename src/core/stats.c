/*
 * core/stats.c — per-worker counters: summed for swarm_stats_get, printed
 * per worker by swarm_stats_print (SWARM_STATS=1 prints them at exit), and
 * the live view (SWARM_STATS=1s, swarmrun --stats=1s): a kernel thread that
 * prints, every interval, what each worker did in it (threads run, steals,
 * parks, sleeps) and its run-queue depth now.
 *
 * Counters are written by their worker only; readers see values that may
 * be a little stale while workers run. The live view only reads them (and
 * the deques' top/bottom and the inboxes' counts, racy but harmless: a
 * depth is a snapshot), so it costs the workers nothing but the cache
 * misses of its reads once per interval; and when SWARM_STATS names no
 * interval there is no thread at all — nothing on any hot path tests for
 * it. The thread is not a worker and runs no swarm thread: it sleeps on
 * stats_word with a timeout, and stats_live_stop bumps the word, wakes and
 * joins it before the workers stop (runtime_stop), so it never reads a
 * worker being torn down.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/core.h"
#include "os/os.h"
#include "os/sys.h"

static void worker_counters(struct worker *w, swarm_stats_t *s) {
  s->threads_spawned =
      atomic_load_explicit(&w->stat_spawned_pub, memory_order_relaxed);
  /* A work-first spawn runs its child at once without counting a run, and
   * the exit's fast hand-off to the next thread does not count one either:
   * exits less those that counted theirs (worker_stats.run). */
  s->threads_run =
      __atomic_load_n(&w->stats.run, __ATOMIC_RELAXED) + s->threads_spawned +
      atomic_load_explicit(&w->stat_exited_pub, memory_order_relaxed) -
      __atomic_load_n(&w->stats.exit_runs_counted, __ATOMIC_RELAXED);
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
  sum.descriptors_live = desc_live_count();
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
  dprintf(fd, "swarm stats: %-6s %12s %12s %12s %12s %10s %8s %8s %12s %10s\n",
          "worker", "spawned", "run", "steal_tries", "steals", "parks",
          "sleeps", "stacks", "inlined", "polls_due");
  for (int i = 0; i < swarm_rt.nslots; i++) { /* spares too */
    swarm_stats_t s;
    worker_counters(&swarm_rt.workers[i], &s);
    dprintf(fd,
            "swarm stats: %-6d %12llu %12llu %12llu %12llu %10llu %8llu "
            "%8llu %12llu %10llu\n",
            i, (unsigned long long)s.threads_spawned,
            (unsigned long long)s.threads_run,
            (unsigned long long)s.steals_tried,
            (unsigned long long)s.steals_succeeded, (unsigned long long)s.parks,
            (unsigned long long)s.worker_sleeps,
            (unsigned long long)s.stacks_mapped,
            (unsigned long long)__atomic_load_n(
                &swarm_rt.workers[i].stats.inlined, __ATOMIC_RELAXED),
            (unsigned long long)__atomic_load_n(
                &swarm_rt.workers[i].stats.polls_due, __ATOMIC_RELAXED));
  }
  dprintf(fd, "swarm stats: guard pages by %s, default stack %zu bytes\n",
          os_guard_kind(), swarm_rt.default_stack);
  dprintf(fd, "swarm stats: thread descriptors live %llu\n",
          (unsigned long long)desc_live_count());
  const struct swarm_io_hooks *io =
      atomic_load_explicit(&swarm_io_hooks, memory_order_acquire);
  const char *io_note = io && io->describe ? io->describe() : NULL;
  if (io_note)
    dprintf(fd, "swarm stats: io back end %s\n", io_note);
}

/* ---- SWARM_STATS's value and the live view ---- */

#define STATS_INTERVAL_MIN_NS 1000000ull       /* 1 ms */
#define STATS_INTERVAL_MAX_NS 3600000000000ull /* 1 h */

/* "1s", "0.5s", "250ms", "100us": 0 and *ns set, else EINVAL (a bare
 * number is the on/off switch, not an interval). */
static int stats_parse_interval(const char *v, uint64_t *ns) {
  if (!v || !*v || !((*v >= '0' && *v <= '9') || *v == '.'))
    return EINVAL;
  char *end;
  errno = 0;
  double x = strtod(v, &end);
  double unit;
  if (errno || end == v)
    return EINVAL;
  if (!strcmp(end, "s"))
    unit = 1e9;
  else if (!strcmp(end, "ms"))
    unit = 1e6;
  else if (!strcmp(end, "us"))
    unit = 1e3;
  else if (!strcmp(end, "m") || !strcmp(end, "min"))
    unit = 60e9;
  else
    return EINVAL;
  double t = x * unit;
  if (!(t >= (double)STATS_INTERVAL_MIN_NS &&
        t <= (double)STATS_INTERVAL_MAX_NS))
    return EINVAL;
  *ns = (uint64_t)t;
  return 0;
}

int stats_env(const char *v) {
  uint64_t ns;
  if (!v || !*v)
    return 0;
  if (!strcmp(v, "1") || !strcasecmp(v, "yes") || !strcasecmp(v, "true") ||
      stats_parse_interval(v, &ns) == 0)
    return 1;
  if (!strcmp(v, "0") || !strcasecmp(v, "no") || !strcasecmp(v, "false"))
    return -1;
  fprintf(stderr,
          "swarm: ignoring SWARM_STATS='%s': expected 0, 1 or an interval "
          "from 1ms to 1h (e.g. 1s, 250ms)\n",
          v);
  return 0;
}

struct live_row {
  uint64_t run, steals, parks, sleeps;
};

/* Threads waiting to run on w: its deque's items and its inbox. */
static uint64_t queue_depth(struct worker *w) {
  int64_t b = atomic_load_explicit(&w->deque.bottom, memory_order_relaxed);
  int64_t t = atomic_load_explicit(&w->deque.top, memory_order_relaxed);
  uint64_t n = b > t ? (uint64_t)(b - t) : 0;
  return n + __atomic_load_n(&w->queue.count, __ATOMIC_RELAXED);
}

static void live_print(struct live_row *prev, uint64_t t0) {
  int fd = swarm_rt.stats_fd >= 0 ? swarm_rt.stats_fd : 2;
  double at = (double)(os_now_ns() - t0) / 1e9;
  char line[160];
  int len = snprintf(line, sizeof line,
                     "swarm live %8.2fs: %-6s %10s %8s %8s %8s %6s\n", at,
                     "worker", "run", "steals", "parks", "sleeps", "queue");
  (void)!sys_write(fd, line, (size_t)len);
  for (int i = 0; i < swarm_rt.nslots; i++) {
    struct worker *w = &swarm_rt.workers[i];
    if (i >= swarm_rt.nworkers && !w->spare_started)
      continue; /* a spare the monitor never started */
    swarm_stats_t s;
    worker_counters(w, &s);
    struct live_row now = {s.threads_run, s.steals_succeeded, s.parks,
                           s.worker_sleeps};
    len = snprintf(line, sizeof line,
                   "swarm live %8.2fs: %-6d %10llu %8llu %8llu %8llu %6llu\n",
                   at, i, (unsigned long long)(now.run - prev[i].run),
                   (unsigned long long)(now.steals - prev[i].steals),
                   (unsigned long long)(now.parks - prev[i].parks),
                   (unsigned long long)(now.sleeps - prev[i].sleeps),
                   (unsigned long long)queue_depth(w));
    (void)!sys_write(fd, line, (size_t)len);
    prev[i] = now;
  }
}

static void *live_main(void *arg) {
  uint64_t interval = (uint64_t)(uintptr_t)arg;
  struct live_row *prev = calloc((size_t)swarm_rt.nslots, sizeof *prev);
  if (!prev)
    return NULL;
  uint64_t t0 = os_now_ns(), next = t0 + interval;
  while (atomic_load(&swarm_rt.state) == RT_RUNNING) {
    uint32_t seq =
        atomic_load_explicit(&swarm_rt.stats_word, memory_order_acquire);
    uint64_t now = os_now_ns();
    if (now < next) {
      os_futex_wait(&swarm_rt.stats_word, seq, (int64_t)(next - now));
      continue; /* woken early: a stop, or a spurious wake */
    }
    live_print(prev, t0);
    next += interval;
    if (next <= now) /* fell behind (the machine was busy): skip ahead */
      next = now + interval;
  }
  free(prev);
  return NULL;
}

void stats_live_start(void) {
  uint64_t ns;
  if (!swarm_rt.print_stats ||
      stats_parse_interval(getenv("SWARM_STATS"), &ns) != 0)
    return; /* no interval: no thread, nothing to pay */
  int r = os_thread_start(&swarm_rt.stats_kthread, live_main,
                          (void *)(uintptr_t)ns);
  swarm_rt.stats_started = r == 0;
  if (r)
    fprintf(stderr, "swarm: SWARM_STATS: cannot start the live view (%s)\n",
            strerror(r));
}

void stats_live_stop(void) {
  if (!swarm_rt.stats_started)
    return;
  atomic_fetch_add(&swarm_rt.stats_word, 1);
  os_futex_wake(&swarm_rt.stats_word, 1);
  os_thread_join(swarm_rt.stats_kthread);
  swarm_rt.stats_started = false;
}

void stats_live_after_fork(void) {
  swarm_rt.stats_started = false;
}
