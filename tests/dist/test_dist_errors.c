/*
 * test_dist_errors.c — swarm_spawn and swarm_join of libswarm-dist refuse
 * bad calls with the errno the API documents, on their fast paths too
 * (the spawn's single combined test, the join's range check on a local
 * handle): EINVAL (no handle or function), ENOTSUP (attributes), EPERM
 * (outside a run), ESRCH (not a thread handle, or a record index this rank
 * never handed out), EDEADLK (joining oneself); and a normal spawn and
 * join still work after each refusal.
 *
 * Handles never name another thread: a second join of a joined thread, a
 * stale handle whose record was reused by a newer thread, one from an
 * earlier run, and (2 ranks) a remote record's stale or twice-joined
 * handle all answer ESRCH, while the newer threads still join with their
 * own results and the record free list stays intact (many threads live at
 * once after a double join all get their own results). A join of a thread
 * another thread is already waiting for answers EINVAL.
 */
#include <errno.h>
#include <stdint.h>
#include <swarm.h>

#include "dist_test.h"

static void *leaf(void *a) {
  return (void *)((intptr_t)a + 1);
}

/* Double join, then many threads live at once: a record pushed twice on
 * the free list would be handed to two of them, one result lost. */
static void check_double_join(void) {
  swarm_thread_t t, many[200];
  void *r = NULL;
  CHECK(swarm_spawn(&t, NULL, leaf, (void *)9) == 0, "spawn");
  CHECK(swarm_join(t, &r) == 0 && (intptr_t)r == 10, "first join");
  r = (void *)1;
  CHECK(swarm_join(t, &r) == ESRCH, "second join of a thread");
  CHECK(r == (void *)1, "a refused join left *result alone");
  for (int k = 0; k < 200; k++)
    CHECK(swarm_spawn(&many[k], NULL, leaf, (void *)(intptr_t)(1000 + k)) == 0,
          "spawn %d", k);
  for (int k = 0; k < 200; k++)
    for (int j = 0; j < k; j++)
      CHECK(many[j] != many[k], "threads %d and %d share a handle", j, k);
  for (int k = 0; k < 200; k++)
    CHECK(swarm_join(many[k], &r) == 0 && (intptr_t)r == 1001 + k,
          "join %d after a double join: %ld", k, (long)(intptr_t)r);
}

/* The newest thread reuses the record just freed (free list, LIFO): the
 * old handle must not name it. */
static void check_stale_reused(void) {
  swarm_thread_t old, young;
  void *r = NULL;
  CHECK(swarm_spawn(&old, NULL, leaf, (void *)19) == 0, "spawn old");
  CHECK(swarm_join(old, &r) == 0 && (intptr_t)r == 20, "join old");
  CHECK(swarm_spawn(&young, NULL, leaf, (void *)29) == 0, "spawn young");
  CHECK(young != old, "a new thread got a joined thread's handle");
  CHECK(swarm_join(old, &r) == ESRCH, "stale handle, record reused");
  CHECK(swarm_join(young, &r) == 0 && (intptr_t)r == 30,
        "the new thread's own join: %ld", (long)(intptr_t)r);
}

static void *joiner(void *h) {
  void *r = NULL;
  int e = swarm_join((swarm_thread_t)(uintptr_t)h, &r);
  return e ? (void *)(intptr_t)-e : r;
}

/* One joiner per thread: c is placed on this rank (swarm_spawn_on), so it
 * runs only once this rank's deque is empty; j1 joins it first and waits.
 * A second join meanwhile answers EINVAL (a join taking it for finished
 * would return a result c never gave and free a live thread's record).
 * With more ranks the root may be stolen while j1 waits and c may have
 * been joined already: ESRCH then. */
static void check_second_joiner(void) {
  swarm_thread_t c, j1, j2;
  void *r = NULL;
  int one = swarm_dist_ranks() == 1;
  CHECK(swarm_spawn_on(swarm_dist_rank(), &c, leaf, (void *)79) == 0,
        "spawn_on here");
  CHECK(swarm_spawn(&j1, NULL, joiner, (void *)(uintptr_t)c) == 0, "j1");
  int e = swarm_join(c, &r);
  CHECK(e == EINVAL || (!one && e == ESRCH), "join while j1 waits: %d", e);
  CHECK(swarm_spawn(&j2, NULL, joiner, (void *)(uintptr_t)c) == 0, "j2");
  CHECK(swarm_join(j2, &r) == 0, "join j2");
  CHECK((intptr_t)r == -EINVAL || (!one && (intptr_t)r == -ESRCH),
        "j2 joining while j1 waits: %ld", (long)(intptr_t)r);
  CHECK(swarm_join(j1, &r) == 0 && (intptr_t)r == 80, "j1 got c's result: %ld",
        (long)(intptr_t)r);
  CHECK(swarm_join(c, &r) == ESRCH, "c after j1 joined it");
}

/* On the rank it runs on: a finished child left unjoined (or, with
 * `joined`, already joined there and its record reused), for another rank
 * to join through the record in this rank's window. */
static void *make_remote(void *joined) {
  swarm_thread_t t, u;
  void *r;
  CHECK(swarm_spawn(&t, NULL, leaf, (void *)39) == 0, "spawn there");
  if (joined) {
    CHECK(swarm_join(t, &r) == 0 && (intptr_t)r == 40, "join there");
    CHECK(swarm_spawn(&u, NULL, leaf, (void *)49) == 0, "reuse there");
    CHECK(swarm_join(u, &r) == 0 && (intptr_t)r == 50, "join reuse there");
  }
  return (void *)(uintptr_t)t;
}

static void *join_there(void *h) {
  return (void *)(intptr_t)swarm_join((swarm_thread_t)(uintptr_t)h, NULL);
}

/* Runs fn(arg) on rank 1 (swarm_spawn_on) and returns its result. */
static void *on_rank1(void *(*fn)(void *), void *arg) {
  swarm_thread_t t;
  void *r;
  CHECK(swarm_spawn_on(1, &t, fn, arg) == 0, "spawn_on 1");
  CHECK(swarm_join(t, &r) == 0, "join of the placed thread");
  return r;
}

static void check_remote(void) {
  void *r = NULL;
  swarm_thread_t stale = (swarm_thread_t)(uintptr_t)on_rank1(make_remote, "");
  CHECK(swarm_dist_creator(stale) == 1, "made on rank 1");
  CHECK(swarm_join(stale, &r) == ESRCH, "remote stale handle");
  swarm_thread_t t = (swarm_thread_t)(uintptr_t)on_rank1(make_remote, NULL);
  CHECK(swarm_join(t, &r) == 0 && (intptr_t)r == 40, "remote join: %ld",
        (long)(intptr_t)r);
  CHECK(swarm_join(t, &r) == ESRCH, "second remote join");
  CHECK((intptr_t)on_rank1(join_there, (void *)(uintptr_t)t) == ESRCH,
        "a join on the owner after a remote join");
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
  /* Same rank and generation bits as a real handle, a record index never
   * handed out (the index is the low bits). */
  CHECK(swarm_join(t + 1000, &r) == ESRCH,
        "join of an index beyond those allocated");
  CHECK(swarm_join(swarm_self(), &r) == EDEADLK, "join of oneself");
  CHECK(swarm_spawn(&t, NULL, leaf, (void *)1) == 0, "spawn after errors");
  CHECK(swarm_join(t, &r) == 0 && (intptr_t)r == 2, "join after errors");
  check_double_join();
  check_stale_reused();
  check_second_joiner();
  if (swarm_dist_ranks() > 1)
    check_remote();
  return (void *)7;
}

/* A run that leaves a finished thread unjoined and returns its handle... */
static void *leave_one(void *unused) {
  (void)unused;
  swarm_thread_t t;
  CHECK(swarm_spawn(&t, NULL, leaf, (void *)59) == 0, "spawn to leave");
  return (void *)(uintptr_t)t;
}

/* ...which names nothing in the next run, whose threads reuse the records. */
static void *next_run(void *h) {
  swarm_thread_t t;
  void *r;
  CHECK(swarm_spawn(&t, NULL, leaf, (void *)69) == 0, "spawn in next run");
  CHECK(swarm_join((swarm_thread_t)(uintptr_t)h, &r) == ESRCH,
        "handle from an earlier run");
  CHECK(swarm_join(t, &r) == 0 && (intptr_t)r == 70, "join in next run");
  return (void *)8;
}

int main(int argc, char **argv) {
  /* Shaped like a handle of rank 0, record 1: no records exist yet. */
  swarm_thread_t like = ((swarm_thread_t)1 << 63) | 1;
  CHECK(swarm_join(like, NULL) == ESRCH, "join before init");
  dist_test_init(&argc, &argv);
  swarm_thread_t t = 0;
  CHECK(swarm_spawn(&t, NULL, leaf, NULL) == EPERM, "spawn outside a run");
  CHECK(swarm_join(t, NULL) == ESRCH, "join of 0 outside a run");
  void *r;
  CHECK(swarm_dist_run(root, NULL, &r) == 0 && (intptr_t)r == 7, "run");
  CHECK(swarm_dist_run(leave_one, NULL, &r) == 0, "run leaving a thread");
  CHECK(swarm_dist_run(next_run, r, &r) == 0 && (intptr_t)r == 8, "next run");
  CHECK(swarm_spawn(&t, NULL, leaf, NULL) == EPERM, "spawn after the run");
  if (swarm_dist_rank() == 0)
    printf("errors: spawn and join refuse bad calls and stale handles, on %d "
           "rank(s)\n",
           swarm_dist_ranks());
  swarm_dist_finalize();
  CHECK(swarm_join(like, NULL) == ESRCH, "join after finalize");
  return 0;
}
