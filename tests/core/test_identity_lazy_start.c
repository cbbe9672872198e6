/* One identity per thread from its first call (issue 21 item 6): locks
 * that main takes before the runtime starts stay its own after the lazy
 * start (here swarm_self, as any swarm call that needs the runtime) and
 * after swarm_finalize: a recursive relock nests instead of deadlocking, an
 * error-checking unlock succeeds instead of saying EPERM, a write-locked
 * rwlock is unlocked by its owner, and the handle does not change. Before,
 * the start gave main a fresh descriptor; the alarm turns the old
 * deadlock into a failure. */
#include <errno.h>
#include <swarm.h>
#include <unistd.h>

#include "check.h"

static swarm_mutex_t rec, chk;
static swarm_rwlock_t rw;

static void *other(void *arg) {
  (void)arg;
  /* Another thread is another identity: not the owner. */
  return (void *)(long)swarm_mutex_unlock(&chk);
}

int main(void) {
  alarm(30);
  CHECK(!swarm_is_running());
  CHECK_EQ(swarm_mutex_init(&rec, SWARM_MUTEX_RECURSIVE), 0);
  CHECK_EQ(swarm_mutex_init(&chk, SWARM_MUTEX_ERRORCHECK), 0);
  CHECK_EQ(swarm_rwlock_init(&rw, 0), 0);
  CHECK_EQ(swarm_mutex_lock(&rec), 0);
  CHECK_EQ(swarm_mutex_lock(&chk), 0);
  CHECK_EQ(swarm_rwlock_wrlock(&rw), 0);
  CHECK(!swarm_is_running());       /* locks alone start nothing */
  swarm_thread_t me = swarm_self(); /* starts the runtime */
  CHECK(swarm_is_running());
  CHECK(swarm_self() == me);
  CHECK_EQ(swarm_mutex_lock(&rec), 0); /* relock: nests */
  CHECK_EQ(swarm_mutex_unlock(&rec), 0);
  CHECK_EQ(swarm_mutex_lock(&chk), EDEADLK);
  swarm_thread_t t;
  void *r;
  CHECK_EQ(swarm_spawn(&t, NULL, other, NULL), 0);
  CHECK_EQ(swarm_join(t, &r), 0);
  CHECK_EQ((long)r, EPERM);
  CHECK_EQ(swarm_rwlock_unlock(&rw), 0);
  CHECK_EQ(swarm_rwlock_rdlock(&rw), 0);
  CHECK_EQ(swarm_rwlock_unlock(&rw), 0);
  CHECK_EQ(swarm_finalize(), 0);
  /* Still this thread's after the runtime stopped. */
  CHECK(swarm_self() == me); /* (starts it again) */
  CHECK_EQ(swarm_mutex_unlock(&chk), 0);
  CHECK_EQ(swarm_mutex_unlock(&rec), 0);
  CHECK_EQ(swarm_finalize(), 0);
  TEST_PASS("identity_lazy_start");
  return 0;
}
