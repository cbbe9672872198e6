/* Spawn and join at volume: 10 million threads in total in binary trees
 * (each thread spawns two children and joins them), results summed exactly;
 * on 1 worker after warm-up no minor page faults (stacks are reused). */
#include <swarm.h>
#include <sys/resource.h>

#include "check.h"

static void *tree(void *arg) {
  long depth = (long)arg;
  if (depth == 0)
    return (void *)1L;
  swarm_thread_t a, b;
  void *ra, *rb;
  CHECK_EQ(swarm_spawn(&a, NULL, tree, (void *)(depth - 1)), 0);
  CHECK_EQ(swarm_spawn(&b, NULL, tree, (void *)(depth - 1)), 0);
  CHECK_EQ(swarm_join(a, &ra), 0);
  CHECK_EQ(swarm_join(b, &rb), 0);
  return (void *)((long)ra + (long)rb + 1);
}

static long minflt(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_minflt;
}

int main(void) {
  /* depth 20: 2^21 - 1 threads per tree (the root runs as main's call). */
  const long depth = 20, per_tree = (1L << 21) - 2;
  long total = test_scaled(10 * 1000 * 1000, 2 * per_tree);
  long trees = (total + per_tree - 1) / per_tree, done = 0;
  for (long i = 0; i < trees; i++) {
    long r = (long)tree((void *)depth);
    CHECK_EQ(r, per_tree + 1);
    done += per_tree;
  }
  printf("spawned and joined %ld threads on %d workers\n", done,
         swarm_num_workers());
  CHECK(done >= total);
  CHECK_EQ(swarm_finalize(), 0);

  /* Page faults after warm-up, on one worker (deterministic). */
  swarm_config_t one = {.workers = 1};
  CHECK_EQ(swarm_init(&one), 0);
  tree((void *)14L);
  long before = minflt();
  for (int i = 0; i < 4; i++)
    tree((void *)14L);
  long faults = minflt() - before;
  printf("minor faults for %ld warm spawn+join: %ld\n", 4 * ((1L << 15) - 2),
         faults);
  CHECK(faults < 8);
  CHECK_EQ(swarm_finalize(), 0);
  TEST_PASS("spawn_join");
  return 0;
}
