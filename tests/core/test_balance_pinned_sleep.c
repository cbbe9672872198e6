/* Balancing (issue 18): a worker with nothing it may run sleeps, even when
 * another worker's ready queue holds threads pinned there (a preempted
 * thread is pinned to its worker until it resumes: core/preempt.c). Such a
 * thread only its own worker may run, so an idle worker that counted it as
 * work in its last look before sleeping never slept: it spun, stealing
 * nothing, at 100% of a core, beside the worker that round-robins its
 * preempted threads.
 *
 * The scene, on the worker W that main runs on: Y, parked, is readied
 * pinned to W (its ready queue, no wake); main then computes without
 * switching, so Y stays queued. Every other worker must go to sleep (its
 * own sleep counter, bumped only when it really waits) before it has made
 * STEAL_TRIES_LIMIT steal attempts (a count, not a time: an idle worker
 * makes at most about 2000 rounds of attempts before each sleep). Then main
 * yields and Y runs on W. At one worker only Y's run is checked.
 * White-box: reads the workers' counters, as the monitor does. Passes at
 * SWARM_WORKERS=1, 2 and 4 (swarm_init(NULL) takes the variable). */
#include <stdatomic.h>
#include <swarm.h>

#include "check.h"
#include "core/core.h"

#define MAX_W 64
#define STEAL_TRIES_LIMIT 20000000ull

static _Atomic(struct swarm_thread *) y_parked;
static _Atomic int y_ran_on = -2;

static bool commit_publish(struct swarm_thread *self, void *arg) {
  (void)arg;
  atomic_store(&y_parked, self);
  return true;
}

static void *y_thread(void *arg) {
  (void)arg;
  swarm_park(commit_publish, NULL, SWARM_PARK_OTHER, NULL);
  atomic_store(&y_ran_on, swarm_worker_id());
  return NULL;
}

static uint64_t counter(int i, int which) {
  struct worker_stats *s = &swarm_rt.workers[i].stats;
  return __atomic_load_n(which ? &s->steals_tried : &s->sleeps,
                         __ATOMIC_RELAXED);
}

int main(void) {
  CHECK_EQ(swarm_init(NULL), 0);
  int n = swarm_num_workers();
  CHECK(n <= MAX_W);
  swarm_thread_t y;
  CHECK_EQ(swarm_spawn(&y, NULL, y_thread, NULL), 0);
  struct swarm_thread *yt;
  while (!(yt = atomic_load(&y_parked)))
    ;
  /* From here main does not switch until its yield: its worker stays. */
  int w = swarm_worker_id();
  CHECK(w >= 0);
  yt->pinned_worker = (int16_t)w; /* parked: nobody else reads it now */
  swarm_ready(yt);                /* our ready queue, no wake */
  uint64_t sleeps0[MAX_W], tries0[MAX_W];
  for (int i = 0; i < n; i++) {
    sleeps0[i] = counter(i, 0);
    tries0[i] = counter(i, 1);
  }
  for (int i = 0; i < n; i++) {
    if (i == w)
      continue;
    /* Two sleeps: the first may have begun before the ready. */
    while (counter(i, 0) < sleeps0[i] + 2 &&
           counter(i, 1) < tries0[i] + STEAL_TRIES_LIMIT)
      ;
    CHECK(counter(i, 0) >= sleeps0[i] + 2,
          "worker %d kept spinning (%llu steal attempts, no sleep) while "
          "the only queued thread was pinned to worker %d",
          i, (unsigned long long)(counter(i, 1) - tries0[i]), w);
  }
  CHECK_EQ(atomic_load(&y_ran_on), -2); /* still queued behind us */
  swarm_yield();                        /* Y runs now, on W */
  CHECK_EQ(swarm_join(y, NULL), 0);
  CHECK_EQ(atomic_load(&y_ran_on), w);
  CHECK_EQ(swarm_finalize(), 0);
  printf("%d workers: idle workers slept while a thread pinned elsewhere "
         "waited\n",
         n);
  TEST_PASS("balance_pinned_sleep");
  return 0;
}
