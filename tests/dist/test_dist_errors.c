/*
 * test_dist_errors.c — swarm_spawn and swarm_join of libswarm-dist refuse
 * bad calls with the errno the API documents, on their fast paths too
 * (the spawn's single combined test, the join's range check on a local
 * handle): EINVAL (no handle or function), ENOTSUP (attributes), EPERM
 * (outside a run), ESRCH (not a thread handle, or a record index this rank
 * never handed out), EDEADLK (joining oneself); and a normal spawn and
 * join still work after each refusal.
 */
#include <errno.h>
#include <stdint.h>
#include <swarm.h>

#include "dist_test.h"

static void *leaf(void *a) {
  return (void *)((intptr_t)a + 1);
}

static void *root(void *unused) {
  (void)unused;
  swarm_thread_t t;
  swarm_attr_t attr;
  memset(&attr, 0, sizeof attr);
  CHECK(swarm_spawn(NULL, NULL, leaf, NULL) == EINVAL, "spawn, no handle");
  CHECK(swarm_spawn(&t, NULL, NULL, NULL) == EINVAL, "spawn, no function");
  CHECK(swarm_spawn(&t, &attr, leaf, NULL) == ENOTSUP, "spawn, attributes");
  CHECK(swarm_spawn(&t, NULL, leaf, (void *)41) == 0, "spawn");
  void *r = NULL;
  CHECK(swarm_join(t, &r) == 0 && (intptr_t)r == 42, "join: %ld",
        (long)(intptr_t)r);
  CHECK(swarm_join(0, &r) == ESRCH, "join of 0");
  CHECK(swarm_join(12345, &r) == ESRCH, "join of a non-handle");
  /* Same rank bits as a real handle, a record index never handed out. */
  CHECK(swarm_join(t + ((swarm_thread_t)1 << 30), &r) == ESRCH,
        "join of an index beyond those allocated");
  CHECK(swarm_join(swarm_self(), &r) == EDEADLK, "join of oneself");
  CHECK(swarm_spawn(&t, NULL, leaf, (void *)1) == 0, "spawn after errors");
  CHECK(swarm_join(t, &r) == 0 && (intptr_t)r == 2, "join after errors");
  return (void *)7;
}

int main(int argc, char **argv) {
  dist_test_init(&argc, &argv);
  swarm_thread_t t = 0;
  CHECK(swarm_spawn(&t, NULL, leaf, NULL) == EPERM, "spawn outside a run");
  CHECK(swarm_join(t, NULL) == ESRCH, "join of 0 outside a run");
  void *r;
  CHECK(swarm_dist_run(root, NULL, &r) == 0 && (intptr_t)r == 7, "run");
  CHECK(swarm_spawn(&t, NULL, leaf, NULL) == EPERM, "spawn after the run");
  if (swarm_dist_rank() == 0)
    printf("errors: spawn and join refuse bad calls, on %d rank(s)\n",
           swarm_dist_ranks());
  swarm_dist_finalize();
  return 0;
}
