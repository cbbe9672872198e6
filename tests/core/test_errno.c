/* errno belongs to each swarm thread: a value set before a spawn, a yield
 * or a join survives it, although children ran on the same kernel thread and
 * set errno themselves, and although the thread may have moved to another
 * worker (another kernel thread, another errno) in between. New threads
 * start with errno 0. */
#include <errno.h>
#include <swarm.h>

#include "check.h"

/* errno read in a function the compiler may not analyse (noipa): glibc
 * declares __errno_location const, so inside one function the compiler may
 * keep errno's address across swarm_yield/spawn/join, and after the thread
 * moved to another worker that address is another kernel thread's errno
 * (see swarm.h). A merely noinline wrapper is inferred const too and fails
 * this test. */
static __attribute__((noipa)) int *errno_here(void) { return &errno; }
#define ERRNO (*errno_here())

static void *clobber(void *arg) {
  CHECK_EQ(ERRNO, 0);
  ERRNO = (int)(long)arg;
  swarm_yield();
  CHECK_EQ(ERRNO, (int)(long)arg);
  return NULL;
}

static void *keeper(void *arg) {
  int mine = (int)(long)arg;
  ERRNO = mine;
  for (int i = 0; i < 200; i++) {
    swarm_thread_t t;
    CHECK_EQ(swarm_spawn(&t, NULL, clobber, (void *)(long)(1000 + i)), 0);
    CHECK_EQ(ERRNO, mine);
    swarm_yield();
    CHECK_EQ(ERRNO, mine);
    CHECK_EQ(swarm_join(t, NULL), 0);
    CHECK_EQ(ERRNO, mine);
  }
  return NULL;
}

int main(void) {
  swarm_config_t cfg = {.workers = 2};
  CHECK_EQ(swarm_init(&cfg), 0);
  swarm_thread_t t[8];
  for (long i = 0; i < 8; i++)
    CHECK_EQ(swarm_spawn(&t[i], NULL, keeper, (void *)(i + 1)), 0);
  ERRNO = 77;
  for (int i = 0; i < 8; i++) {
    CHECK_EQ(swarm_join(t[i], NULL), 0);
    CHECK_EQ(ERRNO, 77);
  }
  CHECK_EQ(swarm_finalize(), 0);
  TEST_PASS("errno");
  return 0;
}
