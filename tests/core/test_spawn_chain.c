/* A chain of nested spawns far deeper than a deque's first array (256
 * entries): each thread spawns the next and only then joins it, so every
 * ancestor waits in its worker's deque as a published parent. The deque
 * must grow under the spawn (its fast path hands a full deque to the
 * general path, which grows it) while thieves steal ancestors from the top
 * on the other workers, waiting for their saved context; every level's
 * result must come back. Run on 1 worker and on all. */
#include <stdint.h>
#include <swarm.h>

#include "check.h"

#define DEPTH 3000

static void *level(void *arg) {
  intptr_t n = (intptr_t)arg;
  if (n == 0)
    return (void *)(intptr_t)swarm_worker_id(); /* any worker will do */
  swarm_thread_t t;
  void *r;
  CHECK_EQ(swarm_spawn(&t, NULL, level, (void *)(n - 1)), 0);
  CHECK_EQ(swarm_join(t, &r), 0);
  (void)r;
  return (void *)(n + 0); /* the parent sees its own level back */
}

static void *chain(void *arg) {
  (void)arg;
  swarm_thread_t t;
  void *r;
  CHECK_EQ(swarm_spawn(&t, NULL, level, (void *)(intptr_t)DEPTH), 0);
  CHECK_EQ(swarm_join(t, &r), 0);
  CHECK_EQ((intptr_t)r, DEPTH);
  return NULL;
}

static void run(int workers) {
  swarm_config_t cfg = {.workers = workers};
  CHECK_EQ(swarm_init(&cfg), 0);
  for (int round = 0; round < 20; round++) {
    swarm_thread_t t[4];
    for (int i = 0; i < 4; i++)
      CHECK_EQ(swarm_spawn(&t[i], NULL, chain, NULL), 0);
    for (int i = 0; i < 4; i++)
      CHECK_EQ(swarm_join(t[i], NULL), 0);
  }
  CHECK_EQ(swarm_finalize(), 0);
}

int main(void) {
  run(1);
  run(0); /* all workers */
  TEST_PASS("spawn_chain");
  return 0;
}
