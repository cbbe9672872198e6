/* Work stealing on 2 workers: threads run on both workers, the parent's
 * continuation is stolen (swarm_worker_id changes across a spawn), results
 * stay exact, and the counters add up (spawned = threads made). */
#include <stdatomic.h>
#include <swarm.h>
#include <time.h>

#include "check.h"

static _Atomic long on_worker[2];

static void *spin_tree(void *arg) {
  long d = (long)arg;
  int w = swarm_worker_id();
  CHECK(w == 0 || w == 1);
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
  printf("threads on worker 0: %ld, worker 1: %ld; steals %llu/%llu\n",
         atomic_load(&on_worker[0]), atomic_load(&on_worker[1]),
         (unsigned long long)st.steals_succeeded,
         (unsigned long long)st.steals_tried);
  CHECK(atomic_load(&on_worker[0]) > 0);
  CHECK(atomic_load(&on_worker[1]) > 0);
  CHECK(st.steals_succeeded > 0);
  CHECK_EQ(st.threads_spawned, 10L * ((1L << 15) - 2));
  CHECK_EQ(swarm_finalize(), 0);
  TEST_PASS("steal");
  return 0;
}
