/* An exited thread's stack stays with its descriptor until the join, a
 * bounded number per worker (core/spawn.c, kept stacks):
 *  - 20000 threads that exit before anyone joins them are all joined with
 *    their results, and the kernel mapped a bounded number of stacks (a
 *    keep without bound would map one per unjoined thread);
 *  - threads joined by a thread that is not their parent, on whichever
 *    worker it runs, and at once replaced by new threads (which may take a
 *    just-joined stack), each check a pattern on their own stack across a
 *    yield: a stack reused while its last thread still ran on it breaks it;
 *  - detached threads, detached before and after they exit, and joins
 *    that park before the exit (the published exit's notify), leave no
 *    stack behind that a later thread would share. */
#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <swarm.h>

#include "check.h"

#define UNJOINED 20000

static void *ident(void *arg) {
  return arg;
}

/* Fills a buffer on its own stack, yields, checks it. */
static void *pattern(void *arg) {
  volatile unsigned char buf[512];
  unsigned char seed = (unsigned char)(long)arg;
  for (int i = 0; i < (int)sizeof buf; i++)
    buf[i] = (unsigned char)(seed + i);
  swarm_yield();
  for (int i = 0; i < (int)sizeof buf; i++)
    CHECK_EQ(buf[i], (unsigned char)(seed + i));
  return arg;
}

#define SLOTS 64
static swarm_thread_t slot_handle[SLOTS];
static _Atomic int slot_state[SLOTS]; /* 0 empty, 1 spawning, 2 full */
static long slot_arg[SLOTS];
static _Atomic long joined;

/* Producers spawn pattern threads into free slots; consumers join whatever
 * slot is full: the joiner is seldom the parent, and often on another
 * worker than the exit. */
static void *producer(void *arg) {
  long base = (long)arg;
  for (long n = 0; n < 3000; n++) {
    int s = (int)((base + n) % SLOTS), expect = 0;
    if (!atomic_compare_exchange_strong(&slot_state[s], &expect, 1)) {
      swarm_yield();
      continue;
    }
    slot_arg[s] = base + n;
    CHECK_EQ(swarm_spawn(&slot_handle[s], NULL, pattern, (void *)(base + n)),
             0);
    atomic_store(&slot_state[s], 2);
  }
  return NULL;
}

static _Atomic int producers_done;

/* Joins full slots until the producers are done and no slot is full or
 * being filled. */
static void *consumer(void *arg) {
  (void)arg;
  for (;;) {
    bool done = atomic_load(&producers_done), busy = false;
    for (int s = 0; s < SLOTS; s++) {
      int expect = 2;
      if (atomic_compare_exchange_strong(&slot_state[s], &expect, 3)) {
        void *r;
        CHECK_EQ(swarm_join(slot_handle[s], &r), 0);
        CHECK_EQ((long)r, slot_arg[s]);
        atomic_store(&slot_state[s], 0);
        atomic_fetch_add(&joined, 1);
        busy = true;
      } else if (expect == 1) {
        busy = true;
      }
    }
    if (done && !busy)
      return NULL;
    swarm_yield();
  }
}

static _Atomic int gate;

static void *wait_gate(void *arg) {
  while (!atomic_load(&gate))
    swarm_yield();
  return arg;
}

int main(void) {
  /* 1. Many unjoined exits, then the joins. */
  static swarm_thread_t h[UNJOINED];
  for (long i = 0; i < UNJOINED; i++)
    CHECK_EQ(swarm_spawn(&h[i], NULL, ident, (void *)i), 0);
  for (long i = 0; i < UNJOINED; i++) {
    void *r;
    CHECK_EQ(swarm_join(h[i], &r), 0);
    CHECK_EQ((long)r, i);
    CHECK_EQ(swarm_join(h[i], &r), ESRCH);
  }
  swarm_stats_t st;
  CHECK_EQ(swarm_stats_get(&st), 0);
  printf("%d unjoined exits, then joined: %llu stacks mapped, %d workers\n",
         UNJOINED, (unsigned long long)st.stacks_mapped, swarm_num_workers());
  CHECK(st.stacks_mapped < 2000, "kept stacks are not bounded: %llu mapped",
        (unsigned long long)st.stacks_mapped);

  /* 2. Joined by others, replaced at once: producers and consumers run
   * together, so joins race the exits. */
  for (int round = 0; round < 5; round++) {
    swarm_thread_t p[2], c[2];
    atomic_store(&producers_done, 0);
    CHECK_EQ(swarm_spawn(&c[0], NULL, consumer, NULL), 0);
    CHECK_EQ(swarm_spawn(&p[0], NULL, producer, (void *)(long)(round * 7919)),
             0);
    CHECK_EQ(swarm_spawn(&c[1], NULL, consumer, NULL), 0);
    CHECK_EQ(swarm_spawn(&p[1], NULL, producer, (void *)(long)(round + 1000)),
             0);
    CHECK_EQ(swarm_join(p[0], NULL), 0);
    CHECK_EQ(swarm_join(p[1], NULL), 0);
    atomic_store(&producers_done, 1);
    CHECK_EQ(swarm_join(c[0], NULL), 0);
    CHECK_EQ(swarm_join(c[1], NULL), 0);
    for (int s = 0; s < SLOTS; s++)
      CHECK_EQ(atomic_load(&slot_state[s]), 0);
  }
  printf("%ld threads joined by others\n", (long)atomic_load(&joined));
  CHECK(atomic_load(&joined) > 0);

  /* 3. Detached before and after the exit; joins that park first. */
  swarm_attr_t det;
  CHECK_EQ(swarm_attr_init(&det), 0);
  CHECK_EQ(swarm_attr_setdetachstate(&det, SWARM_CREATE_DETACHED), 0);
  for (long i = 0; i < 2000; i++) {
    swarm_thread_t a, b;
    CHECK_EQ(swarm_spawn(NULL, &det, pattern, (void *)i), 0);
    CHECK_EQ(swarm_spawn(&a, NULL, ident, (void *)i), 0);
    CHECK_EQ(swarm_detach(a), 0); /* exited already (work-first) */
    atomic_store(&gate, 0);
    CHECK_EQ(swarm_spawn(&b, NULL, wait_gate, (void *)i), 0);
    atomic_store(&gate, 1);
    void *r;
    CHECK_EQ(swarm_join(b, &r), 0); /* may park before b exits */
    CHECK_EQ((long)r, i);
  }
  swarm_attr_destroy(&det);
  CHECK_EQ(swarm_stats_get(&st), 0);
  CHECK(st.stacks_mapped < 4000, "%llu stacks mapped",
        (unsigned long long)st.stacks_mapped);
  CHECK_EQ(swarm_finalize(), 0);
  TEST_PASS("stack_keep");
  return 0;
}
