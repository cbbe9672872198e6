/* An inlined child that spawns a plain thread has its continuation pushed
 * like any parent: a thief may take it — with its inlined parent's frames
 * under it on the same stack — and run it on another worker. The results,
 * identities and the order (the parent resumes only after its inlined
 * child returned) hold wherever it resumed. How often a steal happened is
 * printed, not checked (at 1 worker it never does). */
#include <stdatomic.h>
#include <swarm.h>

#include "check.h"
#include "inline_common.h"

struct round {
  atomic_int a_resumed; /* A ran on after spawning B */
  int a_returned;
  int moved; /* A resumed on another worker than it spawned B on */
};

static void *b_thread(void *arg) {
  struct round *r = arg;
  /* Busy a while, so that an idle worker may steal A's continuation;
   * then yield, which at 1 worker lets it run here. */
  for (long i = 0; i < 200000 && !atomic_load(&r->a_resumed); i++)
    __asm__ volatile("" ::: "memory");
  while (!atomic_load(&r->a_resumed))
    swarm_yield();
  return (void *)7;
}

static void *a_inline(void *arg) {
  struct round *r = arg;
  swarm_thread_t me = swarm_self(), b;
  int before = swarm_worker_id();
  CHECK_EQ(swarm_spawn(&b, NULL, b_thread, r), 0);
  r->moved = swarm_worker_id() != before;
  CHECK_EQ(swarm_self(), me);
  atomic_store(&r->a_resumed, 1);
  void *res = NULL;
  CHECK_EQ(swarm_join(b, &res), 0);
  CHECK(res == (void *)7);
  r->a_returned = 1;
  return (void *)11;
}

static void *parent(void *arg) {
  long *moved = arg;
  swarm_thread_t me = swarm_self();
  for (int i = 0; i < 200; i++) {
    struct round r = {0};
    swarm_thread_t a;
    CHECK_EQ(swarm_spawn(&a, &inline_attr, a_inline, &r), 0);
    CHECK(r.a_returned, "the parent resumed before its inlined child ended");
    CHECK_EQ(swarm_self(), me);
    void *res = NULL;
    CHECK_EQ(swarm_join(a, &res), 0);
    CHECK(res == (void *)11);
    *moved += r.moved;
  }
  return NULL;
}

int main(void) {
  inline_setup();
  CHECK_EQ(swarm_init(NULL), 0);
  long moved = 0;
  swarm_thread_t t;
  CHECK_EQ(swarm_spawn(&t, NULL, parent, &moved), 0);
  CHECK_EQ(swarm_join(t, NULL), 0);
  printf("%ld of 200 inlined children resumed on another worker (%d "
         "workers)\n",
         moved, swarm_num_workers());
  CHECK_EQ(swarm_finalize(), 0);
  TEST_PASS("inline_steal");
  return 0;
}
