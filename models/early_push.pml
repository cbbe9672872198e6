/*
 * models/early_push.pml — the spawn fast path of src/core/sched.c
 * (spawn_here -> push_parent_early -> swarm_arch_spawn) against a thief
 * (steal_round -> thread_wait_saved -> resume), checked with spin.
 *
 *   O  the owner worker, spawning on behalf of parent P: clears P's saved
 *      sp, pushes P on its deque (the push publishes the item), then runs
 *      swarm_arch_spawn: writes P's saved frame (FRAME words: the callee-
 *      saved registers, FP control), stores the saved sp (release; the
 *      last write to P's stack, SWARM_ARCH_PUBLISH_LAST), then moves to the
 *      child's stack and never touches P's stack again.
 *   T  a thief: steals P once the push is visible, waits until P's saved
 *      sp is non-NULL, then resumes P: reads the frame (asserting it is
 *      complete) and from then on P's own code writes its stack.
 * Properties:
 *   a. the thief never resumes P from an incomplete frame;
 *   b. no write to P's stack by the owner after P runs again elsewhere.
 * Weak memory: the saved sp is stored with release order, so the frame's
 * words are visible before it (x86-64: every store; aarch64: stlr). The
 * NO_RELEASE variant lets the sp store overtake the last frame word, as a
 * plain str could on a weakly ordered CPU.
 * Variants (models/check.sh runs each and expects the stated outcome):
 *   (none)              the code as it is today: must pass
 *   -DNO_WAIT           the thief resumes P without waiting for its sp
 *   -DPUBLISH_EARLY     the sp is stored before the last frame word
 *   -DNO_RELEASE        the sp store may become visible before the frame
 *   -DWRITE_AFTER       the owner writes P's stack after publishing
 * each of which must fail.
 */
#define FRAME 3

byte frame = 0;         /* frame words of P written and visible */
bool sp_set = true;     /* P->sp != NULL (stale from P's last switch) */
bool pushed = false;    /* P is in the owner's deque */
bool stolen = false;
bool p_running_elsewhere = false;

active proctype Owner() {
  sp_set = false;       /* __atomic_store_n(&parent->sp, NULL) */
  pushed = true;        /* deque_try_push: item, release fence, bottom */
  /* swarm_arch_spawn: SAVE_CONTEXT, then the sp store */
  do
  :: frame < FRAME - 1 -> frame++
  :: else -> break
  od;
#if defined(PUBLISH_EARLY)
  sp_set = true;
  frame++;
#elif defined(NO_RELEASE)
  if
  :: frame++; sp_set = true
  :: sp_set = true; frame++ /* the store buffer drained sp first */
  fi;
#else
  frame++;
  sp_set = true;        /* release: after every frame word */
#endif
#ifdef WRITE_AFTER
  assert(!p_running_elsewhere); /* the owner writes P's stack */
#endif
  /* movq %rsi, %rsp: the child runs on its own stack from here */
}

active proctype Thief() {
  pushed;               /* deque_steal sees the item */
  atomic { !stolen -> stolen = true };
#ifndef NO_WAIT
  sp_set;               /* thread_wait_saved */
#endif
  assert(frame == FRAME);      /* (a) resumed from a complete frame */
  p_running_elsewhere = true;  /* P's code now writes its stack */
}
