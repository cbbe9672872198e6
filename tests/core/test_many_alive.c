/* 100,000 threads alive at once, two shapes:
 *  - a chain: each thread spawns the next and joins it, so all are blocked
 *    in join when the last one starts;
 *  - a fan: main spawns 100,000 threads that each park on a gate (core's
 *    park/ready), and the last one to arrive opens the gate.
 * Stacks keep their guard pages (madvise guard markers, no VMA each). */
#include <stdatomic.h>
#include <swarm.h>

#include "check.h"
#include "core/core.h"

static long chain_n;
static _Atomic long chain_max_depth;

static void *chain(void *arg) {
  long i = (long)arg;
  long prev = atomic_load(&chain_max_depth);
  while (i > prev && !atomic_compare_exchange_weak(&chain_max_depth, &prev, i))
    ;
  if (i + 1 >= chain_n)
    return (void *)i;
  swarm_thread_t t;
  void *r;
  CHECK_EQ(swarm_spawn(&t, NULL, chain, (void *)(i + 1)), 0);
  CHECK_EQ(swarm_join(t, &r), 0);
  return r;
}

/* A gate: a locked list of parked threads. */
static struct {
  _Atomic int lock;
  struct swarm_thread *waiters;
  long arrived;
  long expected;
  bool open;
} gate;

static void gate_lock(void) {
  while (atomic_exchange(&gate.lock, 1))
    ;
}
static void gate_unlock(void) {
  atomic_store(&gate.lock, 0);
}

static bool gate_commit(struct swarm_thread *self, void *arg) {
  (void)arg;
  /* Runs after self is off its stack; the lock was taken before parking. */
  self->next = gate.waiters;
  gate.waiters = self;
  gate_unlock();
  return true;
}

static void *fan_member(void *arg) {
  (void)arg;
  gate_lock();
  gate.arrived++;
  if (gate.arrived == gate.expected) {
    gate.open = true;
    struct swarm_thread *w = gate.waiters;
    gate.waiters = NULL;
    gate_unlock();
    while (w) {
      struct swarm_thread *n = w->next;
      swarm_ready(w);
      w = n;
    }
    return (void *)1L;
  }
  swarm_park(gate_commit, NULL, SWARM_PARK_OTHER,
             NULL); /* unlocks in the commit */
  CHECK(gate.open);
  return (void *)1L;
}

int main(void) {
  long n = test_scaled(100000, 2000);
  chain_n = n;
  void *r = chain((void *)0L);
  CHECK_EQ((long)r, n - 1);
  CHECK_EQ(atomic_load(&chain_max_depth), n - 1);
  printf("chain: %ld threads alive at once\n", n);

  gate.expected = n;
  swarm_thread_t *ts = malloc(sizeof *ts * (size_t)n);
  CHECK(ts);
  for (long i = 0; i < n; i++)
    CHECK_EQ(swarm_spawn(&ts[i], NULL, fan_member, NULL), 0);
  long sum = 0;
  for (long i = 0; i < n; i++) {
    void *x;
    CHECK_EQ(swarm_join(ts[i], &x), 0);
    sum += (long)x;
  }
  CHECK_EQ(sum, n);
  CHECK_EQ(gate.arrived, n);
  printf("fan: %ld threads parked at once, all resumed\n", n);
  free(ts);
  TEST_PASS("many_alive");
  return 0;
}
