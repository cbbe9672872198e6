/* Work stealing on 2 workers: threads run on more than one worker, the
 * parent's continuation is stolen (steals succeed), results stay exact, and
 * the counters add up (spawned = threads made). Under heavy oversubscription
 * the monitor may start a spare worker (ids 2, 3, ...: worker_ids.h), so a
 * thread's worker is any valid id, not only 0 or 1. */
#include <stdatomic.h>
#include <swarm.h>
#include <time.h>

#include "check.h"
#include "worker_ids.h"

static _Atomic long on_worker[TEST_MAX_WORKER_IDS];

static void *spin_tree(void *arg) {
  long d = (long)arg;
  int w = swarm_worker_id();
  CHECK(worker_id_valid(w), "worker id %d", w);
  atomic_fetch_add(&on_worker[w], 1);
  if (d == 0) {
    volatile long x = 0;
    for (int i = 0; i < 2000; i++)
      x += i;
    return (void *)1L;
  }
  swarm_thread_t a, b;
  void *ra, *rb;
  CHECK_EQ(swarm_spawn(&a, NULL, spin_tree, (void *)(d - 1)), 0);
  CHECK_EQ(swarm_spawn(&b, NULL, spin_tree, (void *)(d - 1)), 0);
  CHECK_EQ(swarm_join(a, &ra), 0);
  CHECK_EQ(swarm_join(b, &rb), 0);
  return (void *)((long)ra + (long)rb);
}

int main(void) {
  swarm_config_t cfg = {.workers = 2};
  CHECK_EQ(swarm_init(&cfg), 0);
  CHECK_EQ(swarm_num_workers(), 2);
  long total = 0;
  for (int i = 0; i < 10; i++)
    total += (long)spin_tree((void *)14L);
  CHECK_EQ(total, 10L << 14);
  swarm_stats_t st;
  CHECK_EQ(swarm_stats_get(&st), 0);
  int used = 0;
  long sum = 0;
  for (int w = 0; w < TEST_MAX_WORKER_IDS; w++) {
    long n = atomic_load(&on_worker[w]);
    if (n)
      printf("threads on worker %d: %ld\n", w, n);
    used += n > 0;
    sum += n;
  }
  printf("steals %llu/%llu\n", (unsigned long long)st.steals_succeeded,
         (unsigned long long)st.steals_tried);
  CHECK(used >= 2, "threads ran on %d worker(s) only", used);
  /* every call of spin_tree counted once: the roots and every spawn */
  CHECK_EQ(sum, 10L * ((1L << 15) - 1));
  CHECK(st.steals_succeeded > 0);
  CHECK_EQ(st.threads_spawned, 10L * ((1L << 15) - 2));
  CHECK_EQ(swarm_finalize(), 0);
  TEST_PASS("steal");
  return 0;
}
