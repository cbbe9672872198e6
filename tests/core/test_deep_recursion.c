/* Deep recursion within the stack limit works: a thread with a 1 MiB stack
 * recurses through ~900 KiB of frames; the default 128 KiB stack takes
 * ~100 KiB; both across spawns and yields on the way down. */
#include <swarm.h>

#include "check.h"

static __attribute__((noinline)) long dive(long depth, long bytes_left) {
  volatile char frame[512];
  frame[0] = (char)depth;
  frame[511] = (char)(depth >> 8);
  if (depth % 64 == 0)
    swarm_yield();
  if (bytes_left <= 600)
    return depth;
  return dive(depth + 1, bytes_left - 600) + (frame[0] - (char)depth) +
         (frame[511] - (char)(depth >> 8));
}

static void *run(void *arg) { return (void *)dive(0, (long)arg); }

int main(void) {
  swarm_attr_t big;
  CHECK_EQ(swarm_attr_init(&big), 0);
  CHECK_EQ(swarm_attr_setstacksize(&big, 1 << 20), 0);
  swarm_thread_t t1, t2;
  void *r1, *r2;
  CHECK_EQ(swarm_spawn(&t1, &big, run, (void *)(900L * 1024)), 0);
  CHECK_EQ(swarm_spawn(&t2, NULL, run, (void *)(100L * 1024)), 0);
  CHECK_EQ(swarm_join(t1, &r1), 0);
  CHECK_EQ(swarm_join(t2, &r2), 0);
  printf("depths: %ld (1 MiB stack), %ld (default stack)\n", (long)r1,
         (long)r2);
  CHECK((long)r1 >= 900L * 1024 / 600 - 1);
  CHECK((long)r2 >= 100L * 1024 / 600 - 1);
  TEST_PASS("deep_recursion");
  return 0;
}
