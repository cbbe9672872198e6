/* park/ready, the mechanism every blocking primitive is built on:
 *  - a commit that returns false abandons the park (the thread continues);
 *  - a thread parked by one worker is readied by a thread on another worker
 *    and by a kernel thread that is not a worker;
 *  - ping-pong between two parked threads many times (no lost wake-up: the
 *    commit publishes the waiter only after it is off its stack). */
#include <pthread.h>
#include <stdatomic.h>
#include <swarm.h>

#include "check.h"
#include "core/core.h"

static bool commit_refuse(struct swarm_thread *self, void *arg) {
  (void)self;
  (*(int *)arg)++;
  return false;
}

/* A one-slot mailbox: a waiter parks until a token is posted. */
struct box {
  _Atomic(struct swarm_thread *) waiter;
  _Atomic int token;
};

static bool commit_wait(struct swarm_thread *self, void *arg) {
  struct box *b = arg;
  /* Publish, then look at the token: a store-load pair that must not be
   * reordered (box_post is the mirror image). A seq_cst store and load
   * suffice in C11, but qemu-user runs aarch64's STLR/LDAR on an x86 host
   * with no StoreLoad barrier between them (lost wake-ups seen here), so the
   * store is an exchange, a read-modify-write every emulator orders. */
  atomic_exchange(&b->waiter, self);
  /* a token posted before we were published: do not sleep */
  if (atomic_load(&b->token)) {
    struct swarm_thread *me = self;
    if (atomic_compare_exchange_strong(&b->waiter, &me, NULL))
      return false;
  }
  return true;
}

static void box_wait(struct box *b) {
  while (!atomic_load(&b->token))
    swarm_park(commit_wait, b, SWARM_PARK_OTHER, NULL);
  atomic_store(&b->token, 0);
}

static void box_post(struct box *b) {
  atomic_store(&b->token, 1);
  struct swarm_thread *w = atomic_exchange(&b->waiter, NULL);
  if (w)
    swarm_ready(w);
}

static struct box ping, pong;
static long rounds;

static void *pinger(void *a) {
  (void)a;
  for (long i = 0; i < rounds; i++) {
    box_post(&ping);
    box_wait(&pong);
  }
  return NULL;
}

static void *ponger(void *a) {
  (void)a;
  for (long i = 0; i < rounds; i++) {
    box_wait(&ping);
    box_post(&pong);
  }
  return NULL;
}

static struct box ext_box;
static void *kernel_poster(void *a) {
  (void)a;
  box_post(&ext_box);
  return NULL;
}
static void *wait_ext(void *a) {
  (void)a;
  box_wait(&ext_box);
  return (void *)1L;
}

int main(void) {
  swarm_config_t cfg = {.workers = 2};
  CHECK_EQ(swarm_init(&cfg), 0);
  int calls = 0;
  swarm_park(commit_refuse, &calls, SWARM_PARK_OTHER, NULL);
  CHECK_EQ(calls, 1);

  rounds = test_scaled(200000, 5000);
  swarm_thread_t a, b;
  CHECK_EQ(swarm_spawn(&a, NULL, ponger, NULL), 0);
  CHECK_EQ(swarm_spawn(&b, NULL, pinger, NULL), 0);
  CHECK_EQ(swarm_join(a, NULL), 0);
  CHECK_EQ(swarm_join(b, NULL), 0);
  printf("%ld ping-pong rounds through park/ready\n", rounds);

  for (int i = 0; i < 200; i++) {
    swarm_thread_t t;
    void *r;
    CHECK_EQ(swarm_spawn(&t, NULL, wait_ext, NULL), 0);
    pthread_t kt;
    CHECK_EQ(pthread_create(&kt, NULL, kernel_poster, NULL), 0);
    CHECK_EQ(swarm_join(t, &r), 0);
    CHECK_EQ((long)r, 1);
    pthread_join(kt, NULL);
  }
  swarm_stats_t st;
  CHECK_EQ(swarm_stats_get(&st), 0);
  CHECK(st.parks > 0);
  CHECK_EQ(swarm_finalize(), 0);
  TEST_PASS("park_ready");
  return 0;
}
