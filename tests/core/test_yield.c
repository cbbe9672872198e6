/* swarm_yield: on one worker, threads that yield in a loop take turns in
 * round-robin order (each yields to all the others before running again);
 * a yield with nothing else runnable returns at once. */
#include <swarm.h>

#include "check.h"

#define N 4
#define ROUNDS 1000
static int order[N * ROUNDS];
static int pos;

static void *taker(void *arg) {
  long me = (long)arg;
  for (int r = 0; r < ROUNDS; r++) {
    order[pos++] = (int)me;
    swarm_yield();
  }
  return NULL;
}

int main(void) {
  swarm_config_t cfg = {.workers = 1};
  CHECK_EQ(swarm_init(&cfg), 0);
  swarm_yield(); /* nothing else to run: returns */
  swarm_thread_t t[N];
  for (long i = 0; i < N; i++)
    CHECK_EQ(swarm_spawn(&t[i], NULL, taker, (void *)i), 0);
  for (int i = 0; i < N; i++)
    CHECK_EQ(swarm_join(t[i], NULL), 0);
  CHECK_EQ(pos, N * ROUNDS);
  /* After the start-up, every window of N consecutive turns holds each
   * thread exactly once: nobody runs twice while another waits. */
  int counts_ok = 0;
  for (int s = 2 * N; s + N <= pos - 2 * N; s++) {
    int seen[N] = {0};
    for (int k = 0; k < N; k++)
      seen[order[s + k]]++;
    for (int k = 0; k < N; k++)
      CHECK_EQ(seen[k], 1);
    counts_ok++;
  }
  CHECK(counts_ok > 0);
  CHECK_EQ(swarm_finalize(), 0);
  printf("%d threads yielded in round-robin order\n", N);
  TEST_PASS("yield");
  return 0;
}
