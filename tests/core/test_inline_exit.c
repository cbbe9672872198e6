/* swarm_exit inside an inlined child, from a nested call: the child ends
 * there, its result is what it passed, its thread-specific data's
 * destructor runs (on the child, before the parent resumes), the parent
 * goes on after its swarm_spawn with its own identity and errno; nested
 * inlined children exit one level at a time; a detached one too. */
#include <errno.h>
#include <stdatomic.h>
#include <string.h>
#include <swarm.h>

#include "check.h"
#include "inline_common.h"

static swarm_key_t key;
static atomic_int destroyed;
static swarm_thread_t destroyed_by;

static void dtor(void *v) {
  CHECK(v == (void *)&key);
  destroyed_by = swarm_self();
  atomic_fetch_add(&destroyed, 1);
}

/* swarm_exit from 8 frames of 256 bytes below the child's function. */
static __attribute__((noinline)) void deep_exit(int n, void *result) {
  if (n < 0)
    return;
  char pad[256];
  memset(pad, n, sizeof pad);
  __asm__ volatile("" : : "r"(pad) : "memory");
  if (n > 0)
    deep_exit(n - 1, result);
  else
    swarm_exit(result);
  __asm__ volatile("" : : : "memory"); /* not a tail call */
}

static void *exiter(void *arg) {
  CHECK_EQ(swarm_setspecific(key, &key), 0);
  errno_put(EBADF);
  deep_exit(8, arg);
  CHECK(0, "swarm_exit returned");
  return NULL;
}

/* Spawns an inlined exiter below itself, checks it, then exits too. */
static void *middle(void *arg) {
  swarm_thread_t me = swarm_self(), h;
  void *r = NULL;
  int before = atomic_load(&destroyed);
  CHECK_EQ(swarm_spawn(&h, &inline_attr, exiter, (void *)0x1111), 0);
  CHECK_EQ(atomic_load(&destroyed), before + 1);
  CHECK(destroyed_by == h);
  CHECK_EQ(swarm_self(), me);
  CHECK_EQ(swarm_join(h, &r), 0);
  CHECK(r == (void *)0x1111);
  swarm_exit(arg);
}

static void *runner(void *arg) {
  (void)arg;
  char here;
  (void)here;
  swarm_thread_t me = swarm_self(), h;
  void *r = NULL;
  for (int i = 0; i < 100; i++) {
    int before = atomic_load(&destroyed);
    errno_put(ENOENT);
    CHECK_EQ(swarm_spawn(&h, &inline_attr, exiter, (void *)(intptr_t)i), 0);
    CHECK_EQ(errno_get(), ENOENT);
    CHECK_EQ(atomic_load(&destroyed), before + 1);
    CHECK(destroyed_by == h);
    CHECK_EQ(swarm_self(), me);
    CHECK_EQ(swarm_join(h, &r), 0);
    CHECK(r == (void *)(intptr_t)i);
    CHECK(swarm_getspecific(key) == NULL); /* the child's, not ours */
  }
  /* Nested: middle (inlined) spawns an inlined exiter, then exits. */
  int before = atomic_load(&destroyed);
  CHECK_EQ(swarm_spawn(&h, &inline_attr, middle, (void *)0x2222), 0);
  CHECK_EQ(atomic_load(&destroyed), before + 1);
  CHECK_EQ(swarm_join(h, &r), 0);
  CHECK(r == (void *)0x2222);
  /* Detached. */
  swarm_attr_t det = inline_attr;
  CHECK_EQ(swarm_attr_setdetachstate(&det, SWARM_CREATE_DETACHED), 0);
  before = atomic_load(&destroyed);
  CHECK_EQ(swarm_spawn(&h, &det, exiter, NULL), 0);
  CHECK_EQ(atomic_load(&destroyed), before + 1);
  CHECK_EQ(swarm_join(h, NULL), ESRCH);
  return NULL;
}

int main(void) {
  inline_setup();
  CHECK_EQ(swarm_init(NULL), 0);
  CHECK_EQ(swarm_key_create(&key, dtor), 0);
  swarm_thread_t t;
  CHECK_EQ(swarm_spawn(&t, NULL, runner, NULL), 0);
  CHECK_EQ(swarm_join(t, NULL), 0);
  CHECK_EQ(atomic_load(&destroyed), 102);
  CHECK_EQ(swarm_finalize(), 0);
  TEST_PASS("inline_exit");
  return 0;
}
