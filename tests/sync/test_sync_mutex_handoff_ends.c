/* A mutex's hand-off mode (entered when a queued thread starves) ends as
 * soon as a waiter that has not starved is handed the mutex, even while
 * others are still queued: kept until the queue emptied, it never ended
 * with more threads than workers, and every unlock became a park, a ready
 * and a switch (issue 18: a lock convoy at 0.4x NPTL's speed).
 *
 * One worker (set in the config, so the order below is the scheduler's,
 * not a race): the main thread holds the mutex while A queues, waits past
 * the 1 ms starvation threshold, then lets B and C queue. Its unlock
 * readies A, it barges back in and yields; A loses, has starved, and asks
 * for hand-off mode. A is handed the mutex (the mode stays: B and C are
 * queued and A starved), then B, which has not starved, ends the mode with
 * C still queued. The test reads the mode's bit in the mutex's state word
 * (M_STARVING in src/sync/mutex.c) where A and B get the mutex. A kernel
 * thread descheduled for over 1 ms between B's queueing and its turn makes
 * B starve too; such a round proves nothing and is run again. */
#include <stdbool.h>

#include "sync_util.h"

enum { M_STARVING_BIT = 4, ROUNDS = 8 };

static swarm_mutex_t m;
static unsigned state_seen[3]; /* the state word as A, B, C got the mutex */

static void *waiter(void *arg) {
  long who = (long)arg;
  CHECK_EQ(swarm_mutex_lock(&m), 0);
  state_seen[who] = __atomic_load_n(&m.state_, __ATOMIC_RELAXED);
  CHECK_EQ(swarm_mutex_unlock(&m), 0);
  return NULL;
}

/* One round; true if it showed the mode entered by A and ended by B. */
static bool round_shows_end(void) {
  CHECK_EQ(swarm_mutex_init(&m, SWARM_MUTEX_NORMAL), 0);
  swarm_thread_t t[3];
  CHECK_EQ(swarm_mutex_lock(&m), 0);
  CHECK_EQ(swarm_spawn(&t[0], NULL, waiter, (void *)0), 0); /* A queues */
  long long until = mono_ms() + 3;
  while (mono_ms() < until)
    ; /* hold it: A starves (no park, so A cannot run) */
  CHECK_EQ(swarm_spawn(&t[1], NULL, waiter, (void *)1), 0); /* B queues */
  CHECK_EQ(swarm_spawn(&t[2], NULL, waiter, (void *)2), 0); /* C queues */
  CHECK_EQ(swarm_mutex_unlock(&m), 0); /* readies A to compete */
  CHECK_EQ(swarm_mutex_lock(&m), 0);   /* and beats it */
  swarm_yield();                       /* A loses, asks for hand-off */
  CHECK_EQ(swarm_mutex_unlock(&m), 0); /* hands over to A */
  for (int i = 0; i < 3; i++)
    CHECK_EQ(swarm_join(t[i], NULL), 0);
  /* Whatever the timing, everyone got through and the mutex is free. */
  CHECK_EQ(swarm_mutex_destroy(&m), 0);
  return (state_seen[0] & M_STARVING_BIT) && !(state_seen[1] & M_STARVING_BIT);
}

int main(void) {
  swarm_config_t cfg = {.workers = 1};
  CHECK_EQ(swarm_init(&cfg), 0);
  bool shown = false;
  for (int i = 0; i < ROUNDS && !shown; i++)
    shown = round_shows_end();
  CHECK(shown);
  CHECK_EQ(swarm_finalize(), 0);
  return 0;
}
