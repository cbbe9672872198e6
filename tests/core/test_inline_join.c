/* The inline opt-in (swarm_attr_setinline), an inlined child as a thread:
 * it runs on its parent's stack, before swarm_spawn returns; it has its own
 * handle (swarm_self), result and errno; joins and detach answer as for any
 * thread (result, ESRCH for a stale or detached-and-exited handle, EDEADLK
 * for itself); swarm_stats counts it. At every worker count. */
#include <errno.h>
#include <swarm.h>

#include "check.h"
#include "inline_common.h"

struct probe {
  const char *parent_frame;
  const char *child_frame;
  swarm_thread_t *handle; /* where the parent's swarm_spawn stores it */
  swarm_thread_t self;
  int errno_at_start;
  int self_join;
  int done;
};

static void *child(void *arg) {
  struct probe *p = arg;
  char here;
  p->child_frame = &here;
  p->self = swarm_self();
  p->errno_at_start = errno_get();
  errno_put(EIO); /* must not leak into the parent */
  p->self_join = swarm_join(swarm_self(), NULL);
  p->done = 1;
  return (void *)0x5eed;
}

static void *runner(void *arg) {
  (void)arg;
  char here;
  swarm_thread_t me = swarm_self();
  struct probe p = {.parent_frame = &here};
  swarm_thread_t h = SWARM_THREAD_NONE;
  p.handle = &h;
  errno_put(ERANGE);
  CHECK_EQ(swarm_spawn(&h, &inline_attr, child, &p), 0);
  CHECK_EQ(errno_get(), ERANGE); /* the parent's errno, kept */
  CHECK(p.done, "the parent resumed before its inlined child returned");
  CHECK(inline_on_parent_stack(p.parent_frame, p.child_frame),
        "child frame %p, parent frame %p: not run inline",
        (const void *)p.child_frame, (const void *)p.parent_frame);
  CHECK(p.self == h, "swarm_self in the child is not its handle");
  CHECK(p.self != me);
  CHECK_EQ(swarm_self(), me); /* the parent is itself again */
  CHECK_EQ(p.errno_at_start, 0);
  CHECK_EQ(p.self_join, EDEADLK);
  void *r = NULL;
  CHECK_EQ(swarm_join(h, &r), 0);
  CHECK(r == (void *)0x5eed);
  CHECK_EQ(swarm_join(h, &r), ESRCH); /* joined: stale */
  CHECK_EQ(swarm_detach(h), ESRCH);

  /* Detached: released at its exit; the handle then names nothing. */
  swarm_attr_t det = inline_attr;
  CHECK_EQ(swarm_attr_setdetachstate(&det, SWARM_CREATE_DETACHED), 0);
  struct probe q = {.parent_frame = &here};
  swarm_thread_t hd = SWARM_THREAD_NONE;
  q.handle = &hd;
  CHECK_EQ(swarm_spawn(&hd, &det, child, &q), 0);
  CHECK(q.done && inline_on_parent_stack(q.parent_frame, q.child_frame));
  CHECK_EQ(swarm_join(hd, NULL), ESRCH);
  CHECK_EQ(swarm_spawn(NULL, &det, child, &q), 0); /* no handle wanted */

  /* Detached after the fact, once exited: released by the detach. */
  struct probe d2 = {.parent_frame = &here};
  swarm_thread_t h2;
  d2.handle = &h2;
  CHECK_EQ(swarm_spawn(&h2, &inline_attr, child, &d2), 0);
  CHECK_EQ(swarm_detach(h2), 0);
  CHECK_EQ(swarm_join(h2, NULL), ESRCH);

  /* Many, counted by the stats as spawns. */
  swarm_stats_t before, after;
  CHECK_EQ(swarm_stats_get(&before), 0);
  const int n = 1000;
  for (int i = 0; i < n; i++) {
    struct probe pi = {.parent_frame = &here};
    swarm_thread_t hi;
    pi.handle = &hi;
    CHECK_EQ(swarm_spawn(&hi, &inline_attr, child, &pi), 0);
    CHECK(inline_on_parent_stack(pi.parent_frame, pi.child_frame));
    CHECK_EQ(swarm_join(hi, &r), 0);
    CHECK(r == (void *)0x5eed);
  }
  CHECK_EQ(swarm_stats_get(&after), 0);
  CHECK(after.threads_spawned - before.threads_spawned >= (uint64_t)n,
        "%llu spawns counted for %d",
        (unsigned long long)(after.threads_spawned - before.threads_spawned),
        n);
  return NULL;
}

int main(void) {
  inline_setup();
  CHECK_EQ(swarm_init(NULL), 0);
  swarm_thread_t t;
  CHECK_EQ(swarm_spawn(&t, NULL, runner, NULL), 0);
  CHECK_EQ(swarm_join(t, NULL), 0);
  printf("inline join checks on %d workers\n", swarm_num_workers());
  CHECK_EQ(swarm_finalize(), 0);
  TEST_PASS("inline_join");
  return 0;
}
