/* FP control state belongs to each thread: a thread that changes its
 * rounding mode keeps it across switches and does not leak it to the
 * threads it switches to; a new thread inherits its creator's mode. */
#include <fenv.h>
#include <swarm.h>

#include "check.h"

static void *expect_mode(void *arg) {
  int want = (int)(long)arg;
  for (int i = 0; i < 100; i++) {
    CHECK_EQ(fegetround(), want);
    swarm_yield();
  }
  return NULL;
}

static void *change_mode(void *arg) {
  int mode = (int)(long)arg;
  CHECK_EQ(fesetround(mode), 0);
  swarm_thread_t child;
  /* a child inherits the mode of its creator */
  CHECK_EQ(swarm_spawn(&child, NULL, expect_mode, (void *)(long)mode), 0);
  for (int i = 0; i < 100; i++) {
    CHECK_EQ(fegetround(), mode);
    swarm_yield();
  }
  CHECK_EQ(swarm_join(child, NULL), 0);
  CHECK_EQ(fegetround(), mode);
  return NULL;
}

int main(void) {
  swarm_config_t cfg = {.workers = 2};
  CHECK_EQ(swarm_init(&cfg), 0);
  CHECK_EQ(fegetround(), FE_TONEAREST);
  swarm_thread_t t[6];
  int modes[3] = {FE_UPWARD, FE_DOWNWARD, FE_TOWARDZERO};
  for (int i = 0; i < 3; i++) {
    CHECK_EQ(swarm_spawn(&t[2 * i], NULL, change_mode, (void *)(long)modes[i]),
             0);
    CHECK_EQ(swarm_spawn(&t[2 * i + 1], NULL, expect_mode,
                         (void *)(long)FE_TONEAREST),
             0);
    CHECK_EQ(fegetround(), FE_TONEAREST);
  }
  for (int i = 0; i < 6; i++) {
    CHECK_EQ(swarm_join(t[i], NULL), 0);
    CHECK_EQ(fegetround(), FE_TONEAREST);
  }
  /* rounding really differs: 1/3 rounded up and down */
  CHECK_EQ(swarm_finalize(), 0);
  TEST_PASS("fp_mode");
  return 0;
}
