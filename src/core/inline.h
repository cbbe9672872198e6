/*
 * core/inline.h — the opt-in inline spawn (inline.c), as spawn.c calls it.
 */
#ifndef SWARM_CORE_INLINE_H
#define SWARM_CORE_INLINE_H

#include "core/core.h"

#pragma GCC visibility push(hidden)

/* swarm_spawn for an attr with the inline opt-in: runs fn(arg) as a call
 * on the caller's stack and returns 0, or, when the rule says no (or the
 * arguments are bad), returns what spawn_plain_general does. w is
 * worker_current_or_none(). */
int inline_spawn(swarm_thread_t *out, const swarm_attr_t *attr,
                 void *(*fn)(void *), void *arg, struct worker *w);

/* spawn.c: the plain spawn of everything but swarm_spawn's common case. */
int spawn_plain_general(swarm_thread_t *out, const swarm_attr_t *attr,
                        void *(*fn)(void *), void *arg);

/* swarm_exit in an inlined child t: its exit work, then back to its spawn
 * point, where the exit is published. */
_Noreturn void inline_exit(struct swarm_thread *t, void *result);

#pragma GCC visibility pop

#endif
