/* swarm_attr_setinline / getinline: 0 and 1 only (EINVAL otherwise, the
 * attr unchanged), EINVAL for an attr never initialised or destroyed and
 * for NULL pointers; swarm_attr_init leaves it 0; the attr keeps its size
 * (the flag took a reserved word); a spawn with an uninitialised attr is
 * EINVAL whatever it holds. */
#include <errno.h>
#include <string.h>
#include <swarm.h>

#include "check.h"

static void *noop(void *arg) {
  return arg;
}

int main(void) {
  CHECK_EQ(sizeof(swarm_attr_t),
           2 * sizeof(uint32_t) + sizeof(size_t) + 4 * sizeof(uintptr_t));
  swarm_attr_t a;
  int v = -7;
  CHECK_EQ(swarm_attr_init(&a), 0);
  CHECK_EQ(swarm_attr_getinline(&a, &v), 0);
  CHECK_EQ(v, 0);
  CHECK_EQ(swarm_attr_setinline(&a, 1), 0);
  CHECK_EQ(swarm_attr_getinline(&a, &v), 0);
  CHECK_EQ(v, 1);
  CHECK_EQ(swarm_attr_setinline(&a, 2), EINVAL);
  CHECK_EQ(swarm_attr_setinline(&a, -1), EINVAL);
  CHECK_EQ(swarm_attr_getinline(&a, &v), 0);
  CHECK_EQ(v, 1); /* unchanged by the refused values */
  CHECK_EQ(swarm_attr_setinline(&a, 0), 0);
  CHECK_EQ(swarm_attr_getinline(&a, &v), 0);
  CHECK_EQ(v, 0);
  CHECK_EQ(swarm_attr_setinline(NULL, 1), EINVAL);
  CHECK_EQ(swarm_attr_getinline(NULL, &v), EINVAL);
  CHECK_EQ(swarm_attr_getinline(&a, NULL), EINVAL);

  /* Not initialised (garbage), and destroyed. */
  swarm_attr_t junk;
  memset(&junk, 0xa5, sizeof junk);
  CHECK_EQ(swarm_attr_setinline(&junk, 1), EINVAL);
  CHECK_EQ(swarm_attr_getinline(&junk, &v), EINVAL);
  CHECK_EQ(swarm_attr_setinline(&a, 1), 0);
  CHECK_EQ(swarm_attr_destroy(&a), 0);
  CHECK_EQ(swarm_attr_setinline(&a, 1), EINVAL);
  CHECK_EQ(swarm_attr_getinline(&a, &v), EINVAL);

  /* Spawns: an uninitialised attr with the flag word set, a NULL fn, no
   * handle for a joinable child: EINVAL, inline or not. */
  CHECK_EQ(swarm_init(NULL), 0);
  swarm_thread_t t;
  memset(&junk, 0, sizeof junk);
  junk.inline_ = 1;
  CHECK_EQ(swarm_spawn(&t, &junk, noop, NULL), EINVAL);
  CHECK_EQ(swarm_spawn(&t, &a, noop, NULL), EINVAL); /* destroyed */
  swarm_attr_t ok;
  CHECK_EQ(swarm_attr_init(&ok), 0);
  CHECK_EQ(swarm_attr_setinline(&ok, 1), 0);
  CHECK_EQ(swarm_spawn(&t, &ok, NULL, NULL), EINVAL);
  CHECK_EQ(swarm_spawn(NULL, &ok, noop, NULL), EINVAL);
  /* From main (not a swarm thread the rule inlines under): plain, works. */
  void *r = NULL;
  CHECK_EQ(swarm_spawn(&t, &ok, noop, (void *)9), 0);
  CHECK_EQ(swarm_join(t, &r), 0);
  CHECK(r == (void *)9);
  CHECK_EQ(swarm_finalize(), 0);
  TEST_PASS("inline_attr");
  return 0;
}
