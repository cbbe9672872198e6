/* A handle never names a later thread, however often its descriptor slot is
 * reused. The generation a slot carries is advanced by 2 on each reuse and
 * would wrap after 2^31 reuses (83 s of spawn+join on one worker); here a
 * slot is brought to the last generations directly (the test reaches into
 * core's descriptor), then reused through every path that retires a
 * descriptor: join after exit (the fast path), join before exit (the joiner
 * parks) and detach. After the last generation the slot must be retired:
 * every handle it ever carried answers ESRCH from join and detach, and no
 * new thread gets any of those handles. */
#include <errno.h>
#include <stdint.h>
#include <swarm.h>

#include "check.h"
#include "core/core.h"

#define LAST_GENS 4 /* handles of the last four generations of one slot */

static void *returns_arg(void *arg) {
  return arg;
}

static void *yields_then_returns(void *arg) {
  swarm_yield(); /* so that the join below finds it not yet exited */
  return arg;
}

static _Atomic int detached_ran;
static void *detached_body(void *arg) {
  (void)arg;
  atomic_fetch_add(&detached_ran, 1);
  return NULL;
}

/* Sets the free slot at the head of this worker's cache to generation gen
 * (odd); the next spawn on this worker takes it. Returns the slot. */
static struct swarm_thread *next_slot_at_generation(uint32_t gen) {
  struct worker *w = worker_current();
  CHECK(w && w->descs.head, "the worker's descriptor cache is empty");
  struct swarm_thread *t = w->descs.head;
  uint64_t c = atomic_load(&t->control);
  CHECK_EQ(c & CTL_FLAGS, 0);
  atomic_store(&t->control, ((uint64_t)gen << 32) | (uint32_t)c);
  return t;
}

enum retire_way { JOIN_AFTER_EXIT, JOIN_BEFORE_EXIT, DETACH };

/* Spawns once on the slot, then retires the descriptor the given way;
 * returns the handle the thread had. */
static swarm_thread_t use_once(enum retire_way way, long value) {
  swarm_thread_t h;
  void *r = NULL;
  switch (way) {
  case JOIN_AFTER_EXIT: /* one worker, work-first: the child ran already */
    CHECK_EQ(swarm_spawn(&h, NULL, returns_arg, (void *)value), 0);
    CHECK_EQ(swarm_join(h, &r), 0);
    CHECK_EQ((long)r, value);
    break;
  case JOIN_BEFORE_EXIT:
    CHECK_EQ(swarm_spawn(&h, NULL, yields_then_returns, (void *)value), 0);
    CHECK_EQ(swarm_join(h, &r), 0);
    CHECK_EQ((long)r, value);
    break;
  case DETACH: {
    int before = atomic_load(&detached_ran);
    CHECK_EQ(swarm_spawn(&h, NULL, detached_body, NULL), 0);
    CHECK_EQ(swarm_detach(h), 0);
    while (atomic_load(&detached_ran) == before)
      swarm_yield();
    break;
  }
  }
  return h;
}

static void run_way(enum retire_way way) {
  uint64_t retired_before = atomic_load(&swarm_desc_retired);
  use_once(JOIN_AFTER_EXIT, 1); /* the worker's cache has a free slot */
  struct swarm_thread *slot =
      next_slot_at_generation(UINT32_MAX - 2 * (LAST_GENS - 1));
  swarm_thread_t old[LAST_GENS];
  for (int i = 0; i < LAST_GENS; i++) {
    if (i > 0) /* the slot is back at the head of the cache */
      CHECK(worker_current()->descs.head == slot,
            "way %d: slot not reused at %d", way, i);
    old[i] = use_once(way, 100 + i);
    CHECK_EQ((uint32_t)(old[i] >> 32), UINT32_MAX - 2 * (LAST_GENS - 1 - i));
  }
  /* The slot's first generation: where a wrapped generation would go. */
  swarm_thread_t first = ((uint64_t)1 << 32) | (uint32_t)old[0];
  /* The last generation was used: the slot is out of service. */
  CHECK_EQ(atomic_load(&swarm_desc_retired), retired_before + 1);
  CHECK_EQ(atomic_load(&slot->control), 0);
  /* No later thread gets the slot, so none gets a handle it ever had. */
  for (int round = 0; round < 1000; round++) {
    swarm_thread_t h = use_once(way, round);
    CHECK((uint32_t)h != (uint32_t)old[0],
          "way %d: a new thread got a retired slot (handle %#llx)", way,
          (unsigned long long)h);
  }
  for (int i = 0; i < LAST_GENS; i++) {
    CHECK_EQ(swarm_join(old[i], NULL), ESRCH);
    CHECK_EQ(swarm_detach(old[i]), ESRCH);
  }
  CHECK_EQ(swarm_join(first, NULL), ESRCH);
}

int main(void) {
  /* One worker: every spawn and join below runs on it, so the slot a join
   * frees is the one the next spawn takes (the cache is LIFO). */
  swarm_config_t config = {.workers = 1};
  CHECK_EQ(swarm_init(&config), 0);
  run_way(JOIN_AFTER_EXIT);
  run_way(JOIN_BEFORE_EXIT);
  run_way(DETACH);
  CHECK_EQ(swarm_finalize(), 0);
  return 0;
}
