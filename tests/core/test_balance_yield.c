/* Balancing (issue 18): a thread that yields on a busy worker while other
 * workers sleep is woken for: the yield leaves it in its worker's ready
 * queue, where an idle worker may steal it, and wakes a sleeping worker
 * (Go's wakep), which then runs it while the busy worker goes on with its
 * own. Before, the yield pushed without a wake and the thread waited for a
 * sleeper's timeout (up to 256 ms) or for the busy worker.
 *
 * The scene, on the worker W that main runs on: every other worker has
 * slept a while; Y, parked, is readied pinned to W (its ready queue, no
 * wake); main yields, so W runs Y. When Y starts, main's yield has been
 * committed: some other worker's sleep_word (advanced only by a waker,
 * never by a sleeper's timeout) must have moved. Y then keeps W busy until
 * main has run again, and main must have run on another worker. At one
 * worker only the order is checked (nobody to wake). White-box: reads the
 * workers' sleep state, as the monitor does. Passes at SWARM_WORKERS=1, 2
 * and 4 (swarm_init(NULL) takes the variable). */
#include <stdatomic.h>
#include <swarm.h>

#include "check.h"
#include "core/core.h"

#define MAX_W 64
#define ROUNDS 3

static _Atomic(struct swarm_thread *) y_parked;
static _Atomic int main_ran_on = -2;
static _Atomic int y_ran_on = -2;
static _Atomic int y_saw_wake = -1;
static uint32_t seq_before[MAX_W];
static uint64_t sleeps_at_start[MAX_W];

static bool commit_publish(struct swarm_thread *self, void *arg) {
  (void)arg;
  atomic_store(&y_parked, self);
  return true;
}

static bool some_sleeper_woken(int self_worker) {
  for (int i = 0; i < swarm_rt.nworkers && i < MAX_W; i++)
    if (i != self_worker &&
        atomic_load(&swarm_rt.workers[i].sleep_word) != seq_before[i])
      return true;
  return false;
}

static void *y_thread(void *arg) {
  (void)arg;
  swarm_park(commit_publish, NULL, SWARM_PARK_OTHER, NULL);
  /* Readied by main, pinned to main's worker, run when main yielded. */
  int me = swarm_worker_id();
  atomic_store(&y_ran_on, me);
  if (swarm_num_workers() == 1)
    return NULL; /* nobody to wake: only the order is checked */
  atomic_store(&y_saw_wake, some_sleeper_woken(me));
  /* Keep this worker busy until main has run: only another worker can
   * run it now. */
  while (atomic_load(&main_ran_on) == -2)
    ;
  return NULL;
}

/* Every worker but `self` asleep, each having slept a few times (its
 * timeout has grown to tens of ms, so none is between two sleeps now). */
static bool others_asleep(int self) {
  for (int i = 0; i < swarm_rt.nworkers; i++) {
    struct worker *v = &swarm_rt.workers[i];
    if (i != self && (!atomic_load(&v->sleeping) ||
                      __atomic_load_n(&v->stats.sleeps, __ATOMIC_RELAXED) <
                          sleeps_at_start[i] + 6))
      return false;
  }
  return true;
}

static void one_round(void) {
  atomic_store(&y_parked, NULL);
  atomic_store(&main_ran_on, -2);
  atomic_store(&y_ran_on, -2);
  atomic_store(&y_saw_wake, -1);
  for (int i = 0; i < swarm_rt.nworkers && i < MAX_W; i++)
    sleeps_at_start[i] =
        __atomic_load_n(&swarm_rt.workers[i].stats.sleeps, __ATOMIC_RELAXED);
  swarm_thread_t y;
  CHECK_EQ(swarm_spawn(&y, NULL, y_thread, NULL), 0);
  struct swarm_thread *yt;
  while (!(yt = atomic_load(&y_parked)))
    ;
  /* From here main does not switch, so its worker stays the same. */
  int w = swarm_worker_id();
  CHECK(w >= 0);
  while (!others_asleep(w))
    ;
  for (int i = 0; i < swarm_rt.nworkers && i < MAX_W; i++)
    seq_before[i] = atomic_load(&swarm_rt.workers[i].sleep_word);
  yt->pinned_worker = (int16_t)w; /* parked: nobody else reads it now */
  swarm_ready(yt);                /* our ready queue, no wake */
  swarm_yield();                  /* we go behind Y: it runs here */
  atomic_store(&main_ran_on, swarm_worker_id());
  CHECK_EQ(swarm_join(y, NULL), 0);
  CHECK_EQ(atomic_load(&y_ran_on), w);
  if (swarm_num_workers() > 1) {
    CHECK(atomic_load(&y_saw_wake) == 1,
          "the yield left main runnable on busy worker %d and woke nobody", w);
    CHECK(atomic_load(&main_ran_on) != w,
          "main ran on worker %d again, not on the woken one", w);
  }
}

int main(void) {
  CHECK_EQ(swarm_init(NULL), 0);
  CHECK(swarm_num_workers() <= MAX_W);
  int n = swarm_num_workers();
  for (int r = 0; r < ROUNDS; r++)
    one_round();
  CHECK_EQ(swarm_finalize(), 0);
  if (n > 1)
    printf("%d workers, %d rounds: a thread that yielded on a busy worker "
           "was run by a woken one\n",
           n, ROUNDS);
  else
    printf("1 worker, %d rounds: the yield ran the readied thread first\n",
           ROUNDS);
  TEST_PASS("balance_yield");
  return 0;
}
