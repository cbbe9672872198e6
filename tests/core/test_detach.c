/* Detached threads: by attribute and by swarm_detach before and after the
 * thread exits. Their resources are released (the handle answers ESRCH once
 * they are gone) and finalize waits for them. */
#include <errno.h>
#include <stdatomic.h>
#include <swarm.h>

#include "check.h"

static _Atomic long finished;

static void *work(void *arg) {
  for (long i = 0; i < (long)arg; i++)
    swarm_yield();
  atomic_fetch_add(&finished, 1);
  return NULL;
}

int main(void) {
  swarm_attr_t attr;
  CHECK_EQ(swarm_attr_init(&attr), 0);
  CHECK_EQ(swarm_attr_setdetachstate(&attr, SWARM_CREATE_DETACHED), 0);
  long n = test_scaled(20000, 1000);
  swarm_thread_t last = 0;
  for (long i = 0; i < n; i++)
    CHECK_EQ(swarm_spawn(i % 2 ? &last : NULL, &attr, work, (void *)(i % 5)),
             0);
  /* detach after exit: the thread ran to completion work-first */
  swarm_thread_t t;
  CHECK_EQ(swarm_spawn(&t, NULL, work, (void *)0), 0);
  CHECK_EQ(swarm_detach(t), 0);
  CHECK_EQ(swarm_join(t, NULL), ESRCH); /* released at once */
  /* detach before exit */
  CHECK_EQ(swarm_spawn(&t, NULL, work, (void *)50), 0);
  CHECK_EQ(swarm_detach(t), 0);
  CHECK_EQ(swarm_finalize(), 0); /* waits for every detached thread */
  CHECK_EQ(atomic_load(&finished), n + 2);
  CHECK_EQ(swarm_join(last, NULL), ESRCH);
  CHECK_EQ(swarm_join(t, NULL), ESRCH);
  printf("%ld detached threads finished before finalize returned\n", n + 2);
  TEST_PASS("detach");
  return 0;
}
