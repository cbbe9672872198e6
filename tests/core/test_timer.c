/* Core timers: a thread parks until its timer fires (about on time, never
 * early); one worker's timers fire in deadline order; a cancelled timer never
 * fires and cancel reports whether it won; timers started from a kernel thread
 * that is not a worker fire too; an idle worker wakes for its timer. */
#include <pthread.h>
#include <stdatomic.h>
#include <swarm.h>

#include "check.h"
#include "core/core.h"

struct sleeper {
  struct swarm_timer timer;
  struct swarm_thread *self;
  _Atomic int fired;
};

static void wake_sleeper(struct swarm_timer *t) {
  struct sleeper *s = t->arg;
  atomic_store(&s->fired, 1);
  swarm_ready(s->self);
}

static bool commit_sleep(struct swarm_thread *self, void *arg) {
  struct sleeper *s = arg;
  s->self = self;
  return swarm_timer_start(&s->timer, s->timer.deadline_ns, wake_sleeper, s) ==
         0;
}

static void sleep_ns(uint64_t ns) {
  struct sleeper s = {.fired = 0};
  s.timer.deadline_ns = os_now_ns() + ns;
  swarm_park(commit_sleep, &s, SWARM_PARK_SLEEP, NULL);
  CHECK_EQ(atomic_load(&s.fired), 1);
}

static _Atomic int order_pos;
static int order[8];
static void *sleep_then_record(void *arg) {
  long k = (long)arg;
  uint64_t t0 = os_now_ns();
  sleep_ns((uint64_t)k * 20 * 1000000);
  uint64_t slept = os_now_ns() - t0;
  CHECK(slept >= (uint64_t)k * 20 * 1000000); /* never early */
  return NULL;
}

/* Timers of one worker fire in deadline order, whatever the start order.
 * (Threads sleeping on two workers may wake in either order when the
 * kernel delays one worker, so the order is checked on one heap.) */
static void record_fire(struct swarm_timer *t) {
  order[atomic_fetch_add(&order_pos, 1)] = (int)(long)t->arg;
}

static _Atomic int never;
static void never_fire(struct swarm_timer *t) {
  (void)t;
  atomic_store(&never, 1);
}

static _Atomic int external_done;
static void *external_sleep(void *arg) {
  (void)arg;
  uint64_t t0 = os_now_ns();
  sleep_ns(30 * 1000000); /* parks this kernel thread on its futex */
  CHECK(os_now_ns() - t0 >= 30 * 1000000);
  atomic_store(&external_done, 1);
  return NULL;
}

int main(void) {
  swarm_config_t cfg = {.workers = 2};
  CHECK_EQ(swarm_init(&cfg), 0);
  /* sleepers wake, never early */
  swarm_thread_t t[4];
  long ks[4] = {3, 1, 4, 2};
  for (int i = 0; i < 4; i++)
    CHECK_EQ(swarm_spawn(&t[i], NULL, sleep_then_record, (void *)ks[i]), 0);
  for (int i = 0; i < 4; i++)
    CHECK_EQ(swarm_join(t[i], NULL), 0);

  /* deadline order on one worker's heap, regardless of start order; the
   * firing worker may run them late, all in one go, but in order */
  struct swarm_timer ord[4];
  uint64_t base = os_now_ns();
  for (int i = 0; i < 4; i++)
    CHECK_EQ(swarm_timer_start(&ord[i], base + (uint64_t)ks[i] * 5000000,
                               record_fire, (void *)ks[i]),
             0);
  while (atomic_load(&order_pos) < 4)
    sleep_ns(10 * 1000000);
  for (int i = 0; i < 4; i++)
    CHECK_EQ(order[i], i + 1);

  /* cancel before firing */
  struct swarm_timer c;
  CHECK_EQ(swarm_timer_start(&c, os_now_ns() + 50 * 1000000, never_fire, NULL),
           0);
  CHECK(swarm_timer_cancel(&c));
  CHECK(!swarm_timer_cancel(&c));
  sleep_ns(80 * 1000000);
  CHECK_EQ(atomic_load(&never), 0);

  /* many timers at once, fired by idle workers */
  enum { N = 2000 };
  swarm_thread_t many[N];
  for (long i = 0; i < N; i++)
    CHECK_EQ(swarm_spawn(&many[i], NULL, sleep_then_record, (void *)0L), 0);
  for (long i = 0; i < N; i++)
    CHECK_EQ(swarm_join(many[i], NULL), 0);

  /* The external thread's timer lives on worker 0: main must not block a
   * worker in a kernel call meanwhile, so it waits by sleeping (parking). */
  pthread_t kt;
  CHECK_EQ(pthread_create(&kt, NULL, external_sleep, NULL), 0);
  while (!atomic_load(&external_done))
    sleep_ns(1000000);
  pthread_join(kt, NULL);
  CHECK_EQ(swarm_finalize(), 0);
  TEST_PASS("timer");
  return 0;
}
