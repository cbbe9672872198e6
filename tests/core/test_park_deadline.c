/* swarm_park with a deadline (core.h: struct swarm_deadline), from swarm
 * threads and from kernel threads that are not workers:
 *  - nobody readies the thread: the deadline's expire takes it out and the
 *    park returns ETIMEDOUT, never before the deadline;
 *  - a waker takes it out first: the park returns 0, and expire, if it runs
 *    at all (the timer fired while the waker held the list), finds nothing;
 *  - a commit that abandons the park: 0 at once, expire never succeeds;
 *  - a kernel thread's timed park needs no runtime and starts none;
 *  - wakers racing deadlines on many threads: each park is ended by exactly
 *    one party, and the park's result names that party. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <swarm.h>

#include "check.h"
#include "core/core.h"

enum { NOBODY = 0, WAKER = 1, EXPIRY = 2 };

/* A one-thread wait list under a spinlock. */
struct slot {
  struct spinlock lock;
  struct swarm_thread *waiter;
  int taken_by;
  _Atomic int expire_calls, expire_took;
};

static void slot_init(struct slot *s) {
  spin_init(&s->lock, LOCK_SYNC_OBJECT);
  s->waiter = NULL;
  s->taken_by = NOBODY;
  atomic_init(&s->expire_calls, 0);
  atomic_init(&s->expire_took, 0);
}

static bool commit_wait(struct swarm_thread *self, void *arg) {
  struct slot *s = arg; /* called with s->lock held by the parker */
  s->waiter = self;
  spin_unlock(&s->lock);
  return true;
}

static bool commit_refuse(struct swarm_thread *self, void *arg) {
  (void)self;
  spin_unlock(&((struct slot *)arg)->lock);
  return false;
}

static bool expire(struct swarm_thread *self, void *arg) {
  struct slot *s = arg;
  atomic_fetch_add(&s->expire_calls, 1);
  spin_lock(&s->lock);
  bool took = s->waiter == self;
  if (took) {
    s->waiter = NULL;
    s->taken_by = EXPIRY;
  }
  spin_unlock(&s->lock);
  if (took)
    atomic_fetch_add(&s->expire_took, 1);
  return took;
}

/* The waker: takes the waiter out if it is there, readies it. */
static bool wake(struct slot *s) {
  spin_lock(&s->lock);
  struct swarm_thread *t = s->waiter;
  if (t) {
    s->waiter = NULL;
    s->taken_by = WAKER;
  }
  spin_unlock(&s->lock);
  if (t)
    swarm_ready(t);
  return t != NULL;
}

static int park_until(struct slot *s, uint64_t ns, swarm_commit_fn commit) {
  struct swarm_deadline d = {ns, expire};
  spin_lock(&s->lock);
  return swarm_park(commit, s, SWARM_PARK_OTHER, &d);
}

/* Nobody wakes: ETIMEDOUT, not early. */
static void *times_out(void *arg) {
  (void)arg;
  struct slot s;
  slot_init(&s);
  uint64_t deadline = os_now_ns() + 20 * 1000000;
  CHECK_EQ(park_until(&s, deadline, commit_wait), ETIMEDOUT);
  CHECK(os_now_ns() >= deadline);
  CHECK_EQ(s.taken_by, EXPIRY);
  CHECK_EQ(atomic_load(&s.expire_took), 1);
  CHECK_EQ(atomic_load(&s.expire_calls), 1);
  return NULL;
}

/* Abandoned by its commit: 0 at once, expire never takes it. */
static void *abandons(void *arg) {
  (void)arg;
  struct slot s;
  slot_init(&s);
  CHECK_EQ(park_until(&s, os_now_ns() + 1000000, commit_refuse), 0);
  swarm_sleep_ns(5 * 1000000); /* past the deadline */
  CHECK_EQ(atomic_load(&s.expire_took), 0);
  return NULL;
}

/* Woken by another thread long before its deadline. */
struct woken {
  struct slot s;
  _Atomic int parked;
  int result;
};

static void *woken_waiter(void *arg) {
  struct woken *k = arg;
  spin_lock(&k->s.lock);
  atomic_store(&k->parked, 1); /* the waker spins on the list's lock */
  struct swarm_deadline d = {os_now_ns() + 60ull * 1000000000, expire};
  k->result = swarm_park(commit_wait, &k->s, SWARM_PARK_OTHER, &d);
  return NULL;
}

static void *waker(void *arg) {
  struct woken *k = arg;
  while (!atomic_load(&k->parked))
    swarm_yield();
  while (!wake(&k->s)) /* not in the list until its commit ran */
    swarm_yield();
  return NULL;
}

static void check_woken(struct woken *k) {
  CHECK_EQ(k->result, 0);
  CHECK_EQ(k->s.taken_by, WAKER);
  CHECK_EQ(atomic_load(&k->s.expire_took), 0);
}

static void *pthread_woken_waiter(void *arg) {
  return woken_waiter(arg);
}
static void *pthread_times_out(void *arg) {
  return times_out(arg);
}

/* Races: each thread parks with a deadline a few hundred microseconds out;
 * a waker tries to take each one out at about that time. */
#define RACERS 64
static struct slot racers[RACERS];
static int racer_result[RACERS];
static _Atomic int racers_parked;
static long ended_by[3]; /* how many races each party won (printed) */

static void *racer(void *arg) {
  long i = (long)arg;
  struct slot *s = &racers[i];
  spin_lock(&s->lock);
  atomic_fetch_add(&racers_parked, 1);
  struct swarm_deadline d = {os_now_ns() + 200000 + (uint64_t)(i % 8) * 50000,
                             expire};
  racer_result[i] = swarm_park(commit_wait, s, SWARM_PARK_OTHER, &d);
  return NULL;
}

static void *race_waker(void *arg) {
  (void)arg;
  while (atomic_load(&racers_parked) < RACERS)
    swarm_yield();
  uint64_t t0 = os_now_ns();
  for (int i = 0; i < RACERS; i++) {
    while (os_now_ns() < t0 + 150000 + (uint64_t)(i % 8) * 50000)
      swarm_yield();
    wake(&racers[i]);
  }
  return NULL;
}

static void race_round(void) {
  atomic_store(&racers_parked, 0);
  for (int i = 0; i < RACERS; i++)
    slot_init(&racers[i]);
  swarm_thread_t t[RACERS + 1];
  for (long i = 0; i < RACERS; i++)
    CHECK_EQ(swarm_spawn(&t[i], NULL, racer, (void *)i), 0);
  CHECK_EQ(swarm_spawn(&t[RACERS], NULL, race_waker, NULL), 0);
  for (int i = 0; i <= RACERS; i++)
    CHECK_EQ(swarm_join(t[i], NULL), 0);
  for (int i = 0; i < RACERS; i++) {
    struct slot *s = &racers[i];
    /* Exactly one party ended it, and the result says which. */
    CHECK(s->taken_by == WAKER || s->taken_by == EXPIRY, "racer %d", i);
    CHECK_EQ(racer_result[i], s->taken_by == EXPIRY ? ETIMEDOUT : 0);
    CHECK_EQ(atomic_load(&s->expire_took), s->taken_by == EXPIRY);
    ended_by[s->taken_by]++;
  }
}

int main(void) {
  /* A kernel thread's timed park, with no runtime: it times out and the
   * runtime stays off. */
  pthread_t kt;
  CHECK_EQ(pthread_create(&kt, NULL, pthread_times_out, NULL), 0);
  CHECK_EQ(pthread_join(kt, NULL), 0);
  CHECK(!swarm_is_running(), "a timed wait started the runtime");

  swarm_config_t cfg = {.workers = 2};
  CHECK_EQ(swarm_init(&cfg), 0);
  swarm_thread_t t, u;
  CHECK_EQ(swarm_spawn(&t, NULL, times_out, NULL), 0);
  CHECK_EQ(swarm_spawn(&u, NULL, abandons, NULL), 0);
  CHECK_EQ(swarm_join(t, NULL), 0);
  CHECK_EQ(swarm_join(u, NULL), 0);
  times_out(NULL); /* the main thread, on worker 0 or 1 */

  /* woken by a swarm thread: a swarm thread and a kernel thread */
  struct woken k = {.parked = 0};
  slot_init(&k.s);
  CHECK_EQ(swarm_spawn(&t, NULL, woken_waiter, &k), 0);
  CHECK_EQ(swarm_spawn(&u, NULL, waker, &k), 0);
  CHECK_EQ(swarm_join(t, NULL), 0);
  CHECK_EQ(swarm_join(u, NULL), 0);
  check_woken(&k);
  struct woken e = {.parked = 0};
  slot_init(&e.s);
  CHECK_EQ(pthread_create(&kt, NULL, pthread_woken_waiter, &e), 0);
  CHECK_EQ(swarm_spawn(&u, NULL, waker, &e), 0);
  CHECK_EQ(swarm_join(u, NULL), 0);
  CHECK_EQ(pthread_join(kt, NULL), 0);
  check_woken(&e);
  /* and a kernel thread's timeout while the runtime runs */
  CHECK_EQ(pthread_create(&kt, NULL, pthread_times_out, NULL), 0);
  CHECK_EQ(pthread_join(kt, NULL), 0);

  int rounds = test_scaled(50, 5);
  for (int r = 0; r < rounds; r++)
    race_round();
  printf("%d racing parks: %ld ended by the waker, %ld by the deadline\n",
         rounds * RACERS, ended_by[WAKER], ended_by[EXPIRY]);
  CHECK_EQ(swarm_finalize(), 0);
  TEST_PASS("park_deadline");
  return 0;
}
