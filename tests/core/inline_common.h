/* tests/core/inline_common.h — what the inline-spawn tests share: an attr
 * with the opt-in, SWARM_INLINE_DEPTH=0 (inline whenever the rest of the
 * rule allows, so the tests see it at every worker count), and the check
 * that a child ran on its parent's stack (its frame lies just below the
 * parent's; a plain child's stack is another mapping, at least a stack
 * away). */
#ifndef SWARM_TEST_INLINE_COMMON_H
#define SWARM_TEST_INLINE_COMMON_H

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <swarm.h>

#include "check.h"

static swarm_attr_t inline_attr;

/* errno through functions the compiler cannot see into: a thread may
 * resume on another kernel thread after a spawn (swarm.h on errno). */
static __attribute__((noipa, unused)) int errno_get(void) {
  return errno;
}
static __attribute__((noipa, unused)) void errno_put(int v) {
  errno = v;
}

static inline void inline_setup(void) {
  setenv("SWARM_INLINE_DEPTH", "0", 1);
  CHECK_EQ(swarm_attr_init(&inline_attr), 0);
  CHECK_EQ(swarm_attr_setinline(&inline_attr, 1), 0);
}

/* Whether a frame at `child` lies on the stack of the frame at `parent`,
 * just below it. */
static inline int inline_on_parent_stack(const void *parent,
                                         const void *child) {
  uintptr_t p = (uintptr_t)parent, c = (uintptr_t)child;
  return c < p && p - c < 48 * 1024;
}

#endif
