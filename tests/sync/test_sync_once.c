/* swarm_once: the routine runs exactly once although many threads race to
 * it, and every caller returns only after it finished (the routine parks
 * midway, so the others really wait); EINVAL for NULL arguments. */
#include "sync_util.h"

static swarm_once_t once = SWARM_ONCE_INIT;
static _Atomic int runs, finished;
static void init_routine(void) {
  atomic_fetch_add(&runs, 1);
  swarm_sleep_ns(5000000);
  atomic_store(&finished, 1);
}
static void *caller(void *a) {
  (void)a;
  CHECK_EQ(swarm_once(&once, init_routine), 0);
  CHECK_EQ(atomic_load(&finished), 1);
  return NULL;
}

int main(void) {
  start2();
  CHECK_EQ(swarm_once(NULL, init_routine), EINVAL);
  CHECK_EQ(swarm_once(&once, NULL), EINVAL);
  enum { N = 100 };
  swarm_thread_t t[N];
  for (int i = 0; i < N; i++)
    CHECK_EQ(swarm_spawn(&t[i], NULL, caller, NULL), 0);
  for (int i = 0; i < N; i++)
    CHECK_EQ(swarm_join(t[i], NULL), 0);
  CHECK_EQ(atomic_load(&runs), 1);
  caller(NULL);
  CHECK_EQ(atomic_load(&runs), 1);
  CHECK_EQ(swarm_finalize(), 0);
  TEST_PASS("sync_once");
  return 0;
}
