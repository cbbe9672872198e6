/* An inlined child that blocks: its worker runs other threads meanwhile and
 * the parent resumes only after the child has returned, perhaps on another
 * worker (the parent waits: that is the opt-in's promise). The child waits
 * on a condition variable another thread signals, is joined by a third
 * thread while it waits (a detach then gets EINVAL), joins a thread that
 * sleeps, takes a mutex another thread holds, and sleeps. At every worker
 * count. */
#include <errno.h>
#include <stdatomic.h>
#include <swarm.h>

#include "check.h"
#include "inline_common.h"

static swarm_mutex_t m;
static swarm_cond_t cv;
static int signalled;
static atomic_int waiting;            /* the inlined child waits on cv */
static _Atomic swarm_thread_t target; /* the inlined child's handle */
static atomic_int joined_claimed;     /* the joiner thread is about to join */
static atomic_int steps;
static atomic_int join_rc = -1, detach_rc = -1;

static void *joiner(void *arg) {
  (void)arg;
  while (!atomic_load(&waiting))
    swarm_yield();
  void *r = NULL;
  atomic_store(&joined_claimed, 1);
  int rc = swarm_join(atomic_load(&target), &r);
  atomic_store(&join_rc, rc);
  if (rc == 0)
    CHECK(r == (void *)0xc0de);
  return NULL;
}

static void *signaller(void *arg) {
  (void)arg;
  while (!atomic_load(&waiting) || !atomic_load(&joined_claimed))
    swarm_yield();
  for (int i = 0; i < 50; i++) /* let the joiner park on the child */
    swarm_yield();
  /* A detach of the waiting child races the joiner's claim: exactly one
   * of them wins (the joiner has almost always parked by now; then the
   * detach is EINVAL, a thread being joined; if the detach wins, a join
   * that comes after the child's exit finds a stale handle: ESRCH). */
  atomic_store(&detach_rc, swarm_detach(atomic_load(&target)));
  CHECK_EQ(swarm_mutex_lock(&m), 0);
  signalled = 1;
  CHECK_EQ(swarm_cond_signal(&cv), 0);
  CHECK_EQ(swarm_mutex_unlock(&m), 0);
  return NULL;
}

static void *sleeper(void *arg) {
  swarm_sleep_ns(2 * 1000 * 1000);
  return arg;
}

static void *cond_child(void *arg) {
  swarm_thread_t *out = arg;
  atomic_store(&target, *out);
  CHECK_EQ(swarm_mutex_lock(&m), 0);
  atomic_store(&waiting, 1);
  while (!signalled)
    CHECK_EQ(swarm_cond_wait(&cv, &m), 0);
  CHECK_EQ(swarm_mutex_unlock(&m), 0);
  atomic_fetch_add(&steps, 1);
  return (void *)0xc0de;
}

static void *join_child(void *arg) {
  swarm_thread_t s = *(swarm_thread_t *)arg;
  void *r = NULL;
  CHECK_EQ(swarm_join(s, &r), 0);
  swarm_sleep_ns(1000 * 1000);
  atomic_fetch_add(&steps, 1);
  return r;
}

static void *holder(void *arg) {
  (void)arg;
  CHECK_EQ(swarm_mutex_lock(&m), 0);
  atomic_store(&waiting, 2);
  swarm_sleep_ns(2 * 1000 * 1000);
  CHECK_EQ(swarm_mutex_unlock(&m), 0);
  return NULL;
}

static void *lock_child(void *arg) {
  (void)arg;
  while (atomic_load(&waiting) != 2)
    swarm_yield();
  CHECK_EQ(swarm_mutex_lock(&m), 0); /* held by holder: blocks */
  CHECK_EQ(swarm_mutex_unlock(&m), 0);
  atomic_fetch_add(&steps, 1);
  return (void *)3;
}

static void *runner(void *arg) {
  (void)arg;
  swarm_thread_t me = swarm_self();
  swarm_thread_t j, s, c;
  CHECK_EQ(swarm_spawn(&j, NULL, joiner, NULL), 0);
  CHECK_EQ(swarm_spawn(&s, NULL, signaller, NULL), 0);
  errno_put(EEXIST);
  CHECK_EQ(swarm_spawn(&c, &inline_attr, cond_child, &c), 0);
  CHECK_EQ(errno_get(), EEXIST);
  CHECK_EQ(atomic_load(&steps), 1); /* the parent waited for the child */
  CHECK_EQ(swarm_self(), me);
  CHECK_EQ(swarm_join(j, NULL), 0);
  CHECK((atomic_load(&join_rc) == 0) != (atomic_load(&detach_rc) == 0),
        "join %d, detach %d: exactly one must win", atomic_load(&join_rc),
        atomic_load(&detach_rc));
  /* A joiner preempted between its flag and its join (more workers than
   * CPUs) may come after the detach won and the child exited: ESRCH. */
  CHECK(atomic_load(&join_rc) == 0 || atomic_load(&join_rc) == EINVAL ||
            (atomic_load(&join_rc) == ESRCH && atomic_load(&detach_rc) == 0),
        "join %d, detach %d", atomic_load(&join_rc), atomic_load(&detach_rc));
  CHECK(atomic_load(&detach_rc) == 0 || atomic_load(&detach_rc) == EINVAL);
  CHECK_EQ(swarm_join(s, NULL), 0);
  CHECK_EQ(swarm_join(c, NULL), ESRCH);

  swarm_thread_t sl, jc;
  void *r = NULL;
  CHECK_EQ(swarm_spawn(&sl, NULL, sleeper, (void *)77), 0);
  CHECK_EQ(swarm_spawn(&jc, &inline_attr, join_child, &sl), 0);
  CHECK_EQ(atomic_load(&steps), 2);
  CHECK_EQ(swarm_join(jc, &r), 0);
  CHECK(r == (void *)77);

  swarm_thread_t h, lc;
  CHECK_EQ(swarm_spawn(&h, NULL, holder, NULL), 0);
  CHECK_EQ(swarm_spawn(&lc, &inline_attr, lock_child, NULL), 0);
  CHECK_EQ(atomic_load(&steps), 3);
  CHECK_EQ(swarm_join(lc, &r), 0);
  CHECK(r == (void *)3);
  CHECK_EQ(swarm_join(h, NULL), 0);
  CHECK_EQ(swarm_self(), me);
  return NULL;
}

int main(void) {
  inline_setup();
  CHECK_EQ(swarm_init(NULL), 0);
  CHECK_EQ(swarm_mutex_init(&m, SWARM_MUTEX_NORMAL), 0);
  CHECK_EQ(swarm_cond_init(&cv, 0), 0);
  for (int round = 0; round < 20; round++) {
    signalled = 0;
    atomic_store(&waiting, 0);
    atomic_store(&joined_claimed, 0);
    atomic_store(&steps, 0);
    atomic_store(&join_rc, -1);
    atomic_store(&detach_rc, -1);
    swarm_thread_t t;
    CHECK_EQ(swarm_spawn(&t, NULL, runner, NULL), 0);
    CHECK_EQ(swarm_join(t, NULL), 0);
  }
  printf("blocking inlined children on %d workers\n", swarm_num_workers());
  CHECK_EQ(swarm_finalize(), 0);
  TEST_PASS("inline_block");
  return 0;
}
