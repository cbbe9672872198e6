/* Deep recursion of inlined children does not overflow: a child runs
 * inline only while its parent's stack has room (half the stack it would
 * have had), so a chain far deeper than one stack holds switches to plain
 * threads, each with a fresh stack, and goes on inlining there. A child
 * asking for a stack larger than the room left runs as a plain thread. */
#include <stdatomic.h>
#include <swarm.h>

#include "check.h"
#include "inline_common.h"

static atomic_long inlined, plain;

struct link {
  long n;
  const char *parent_frame;
};

static void *chain(void *arg) {
  struct link *l = arg;
  volatile char pad[200]; /* a frame of some size */
  pad[0] = 1;
  (void)pad[0];
  if (l->parent_frame) {
    if (inline_on_parent_stack(l->parent_frame, (const char *)&l))
      atomic_fetch_add(&inlined, 1);
    else
      atomic_fetch_add(&plain, 1);
  }
  if (l->n == 0)
    return (void *)0;
  struct link next = {l->n - 1, (const char *)&l};
  swarm_thread_t h;
  void *r;
  CHECK_EQ(swarm_spawn(&h, &inline_attr, chain, &next), 0);
  CHECK_EQ(swarm_join(h, &r), 0);
  return (void *)((long)r + 1);
}

static void *big(void *arg) {
  char here;
  *(uintptr_t *)arg = (uintptr_t)&here;
  return NULL;
}

static void *runner(void *arg) {
  (void)arg;
  const long depth = test_scaled(20000, 2000);
  struct link first = {depth, NULL};
  CHECK_EQ((long)chain(&first), depth);
  printf("chain of %ld: %ld inlined, %ld plain\n", depth, atomic_load(&inlined),
         atomic_load(&plain));
  CHECK_EQ(atomic_load(&inlined) + atomic_load(&plain), depth);
  CHECK(atomic_load(&plain) > 0, "never left the first stack");
  CHECK(atomic_load(&inlined) > 10 * atomic_load(&plain),
        "inlined %ld, plain %ld", atomic_load(&inlined), atomic_load(&plain));

  /* Room: a child wanting 1 MiB of stack under a 128 KiB one is plain. */
  swarm_attr_t a = inline_attr;
  CHECK_EQ(swarm_attr_setstacksize(&a, 1 << 20), 0);
  char here;
  uintptr_t child = 0;
  swarm_thread_t h;
  CHECK_EQ(swarm_spawn(&h, &a, big, &child), 0);
  CHECK_EQ(swarm_join(h, NULL), 0);
  CHECK(child && !inline_on_parent_stack(&here, (const void *)child),
        "a 1 MiB child ran inline");
  return NULL;
}

int main(void) {
  inline_setup();
  swarm_config_t cfg = {.stack_size = 128 * 1024};
  CHECK_EQ(swarm_init(&cfg), 0);
  swarm_thread_t t;
  CHECK_EQ(swarm_spawn(&t, NULL, runner, NULL), 0);
  CHECK_EQ(swarm_join(t, NULL), 0);
  CHECK_EQ(swarm_finalize(), 0);
  TEST_PASS("inline_deep");
  return 0;
}
