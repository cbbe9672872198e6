/* errno belongs to each swarm thread: a value set before a spawn, a yield
 * or a join survives it, although children ran on the same kernel thread and
 * set errno themselves, and although the thread may have moved to another
 * worker (another kernel thread, another errno) in between. New threads
 * start with errno 0. */
#include <errno.h>
#include <swarm.h>

#include "check.h"

static void *clobber(void *arg) {
  CHECK_EQ(errno, 0);
  errno = (int)(long)arg;
  swarm_yield();
  CHECK_EQ(errno, (int)(long)arg);
  return NULL;
}

static void *keeper(void *arg) {
  int mine = (int)(long)arg;
  errno = mine;
  for (int i = 0; i < 200; i++) {
    swarm_thread_t t;
    CHECK_EQ(swarm_spawn(&t, NULL, clobber, (void *)(long)(1000 + i)), 0);
    CHECK_EQ(errno, mine);
    swarm_yield();
    CHECK_EQ(errno, mine);
    CHECK_EQ(swarm_join(t, NULL), 0);
    CHECK_EQ(errno, mine);
  }
  return NULL;
}

int main(void) {
  swarm_config_t cfg = {.workers = 2};
  CHECK_EQ(swarm_init(&cfg), 0);
  swarm_thread_t t[8];
  for (long i = 0; i < 8; i++)
    CHECK_EQ(swarm_spawn(&t[i], NULL, keeper, (void *)(i + 1)), 0);
  errno = 77;
  for (int i = 0; i < 8; i++) {
    CHECK_EQ(swarm_join(t[i], NULL), 0);
    CHECK_EQ(errno, 77);
  }
  CHECK_EQ(swarm_finalize(), 0);
  TEST_PASS("errno");
  return 0;
}
