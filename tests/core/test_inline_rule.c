/* The inline opt-in's rule as the fast path tests it (one compare each:
 * the deque's depth against the worker's copy, the stack pointer against
 * the parent's inline_floor) and as the slow path does: the main thread and
 * a kernel thread that is not a worker spawn plainly; a stack size in the
 * attr is weighed against the room left on the stack the child would share
 * (an inlined parent's is its plain ancestor's); and an inlined child's
 * exit races a joiner on another thread (perhaps another worker) that got
 * its handle from the child itself: the join parks and is readied, or
 * finds it exited, and gets the result either way. At every worker
 * count. */
#include <pthread.h>
#include <stdatomic.h>
#include <swarm.h>

#include "check.h"
#include "inline_common.h"

struct probe { /* frame addresses, compared only */
  uintptr_t parent_frame;
  uintptr_t child_frame;
};

static void *probe_child(void *arg) {
  struct probe *p = arg;
  char here;
  p->child_frame = (uintptr_t)&here;
  return (void *)0x600d;
}

/* Spawns probe_child with attr from the caller's frame; returns whether it
 * ran inline (on the caller's stack) and joins it. */
static int spawn_probe(const swarm_attr_t *attr) {
  char here;
  struct probe p = {.parent_frame = (uintptr_t)&here};
  swarm_thread_t h;
  CHECK_EQ(swarm_spawn(&h, attr, probe_child, &p), 0);
  void *r = NULL;
  CHECK_EQ(swarm_join(h, &r), 0);
  CHECK(r == (void *)0x600d);
  CHECK(p.child_frame != 0);
  return inline_on_parent_stack((const void *)p.parent_frame,
                                (const void *)p.child_frame);
}

static void *from_kernel_thread(void *arg) {
  (void)arg;
  CHECK(!spawn_probe(&inline_attr), "a non-worker's child ran inline");
  return NULL;
}

/* ---- a stack size in the attr ---- */

static size_t default_stack;
static swarm_attr_t big_attr, small_attr; /* inline, 8x / half the default */

static void *sized_level2(void *arg) {
  int *out = arg;
  /* An inlined parent: the room is on its plain ancestor's stack. */
  out[0] = spawn_probe(&small_attr);
  out[1] = spawn_probe(&big_attr);
  return NULL;
}

static void *sized_runner(void *arg) {
  (void)arg;
  /* Near the top of a default stack: room for half the default (what a
   * child of the default size needs), never for half of 8x it. */
  CHECK(spawn_probe(&inline_attr), "a default-size child did not inline");
  CHECK(spawn_probe(&small_attr), "a smaller child did not inline");
  CHECK(!spawn_probe(&big_attr), "a child 8x the stack ran inline");
  int out[2] = {-1, -1};
  swarm_thread_t h;
  CHECK_EQ(swarm_spawn(&h, &inline_attr, sized_level2, out), 0);
  CHECK_EQ(swarm_join(h, NULL), 0);
  CHECK_EQ(out[0], 1);
  CHECK_EQ(out[1], 0);
  return NULL;
}

/* ---- a joiner racing the exit ---- */

#define ROUNDS 2000
static _Atomic swarm_thread_t published[ROUNDS];
static atomic_int joined_ok;

static void *racing_child(void *arg) {
  intptr_t i = (intptr_t)arg;
  atomic_store(&published[i], swarm_self());
  /* A little work, so that a joiner on another worker often arrives
   * before the exit (it parks: WAITER) and sometimes after. */
  for (volatile int k = 0; k < (int)(i % 16) * 256; k++) {
  }
  return (void *)(i + 1);
}

static void *joiner(void *arg) {
  (void)arg;
  /* With a second worker, spin: this worker stays busy, so the runner
   * (in its deque) is stolen and spawns its children on the other one,
   * concurrently with these joins. Alone, yield to it. */
  int alone = swarm_num_workers() == 1;
  for (intptr_t i = 0; i < ROUNDS; i++) {
    swarm_thread_t h;
    while ((h = atomic_load(&published[i])) == SWARM_THREAD_NONE)
      if (alone)
        swarm_yield();
    void *r = NULL;
    CHECK_EQ(swarm_join(h, &r), 0);
    CHECK(r == (void *)(i + 1), "round %ld: result %p", (long)i, r);
    CHECK_EQ(swarm_join(h, NULL), ESRCH);
    atomic_fetch_add(&joined_ok, 1);
  }
  return NULL;
}

static void *race_runner(void *arg) {
  (void)arg;
  swarm_thread_t j;
  CHECK_EQ(swarm_spawn(&j, NULL, joiner, NULL), 0);
  for (intptr_t i = 0; i < ROUNDS; i++) {
    /* In step with the joiner, so that it waits for this child's handle
     * and joins while the child still runs (or just after). */
    while (atomic_load(&joined_ok) < i)
      swarm_yield();
    swarm_thread_t h;
    CHECK_EQ(swarm_spawn(&h, &inline_attr, racing_child, (void *)i), 0);
    CHECK(h == atomic_load(&published[i]), "round %ld: handle", (long)i);
  }
  CHECK_EQ(swarm_join(j, NULL), 0);
  CHECK_EQ(atomic_load(&joined_ok), ROUNDS);
  return NULL;
}

int main(void) {
  inline_setup();
  CHECK_EQ(swarm_init(NULL), 0);
  CHECK_EQ(swarm_attr_getstacksize(&inline_attr, &default_stack), 0);

  /* The main thread's children are plain (its inline_floor says never). */
  CHECK(!spawn_probe(&inline_attr), "main's child ran inline");
  /* So are a kernel thread's that is not a worker. */
  pthread_t kt;
  CHECK_EQ(pthread_create(&kt, NULL, from_kernel_thread, NULL), 0);
  CHECK_EQ(pthread_join(kt, NULL), 0);

  big_attr = inline_attr;
  CHECK_EQ(swarm_attr_setstacksize(&big_attr, 8 * default_stack), 0);
  small_attr = inline_attr;
  CHECK_EQ(swarm_attr_setstacksize(&small_attr, default_stack / 2), 0);
  swarm_thread_t t;
  CHECK_EQ(swarm_spawn(&t, NULL, sized_runner, NULL), 0);
  CHECK_EQ(swarm_join(t, NULL), 0);

  CHECK_EQ(swarm_spawn(&t, NULL, race_runner, NULL), 0);
  CHECK_EQ(swarm_join(t, NULL), 0);
  printf("inline rule checks on %d workers\n", swarm_num_workers());
  CHECK_EQ(swarm_finalize(), 0);
  TEST_PASS("inline_rule");
  return 0;
}
