/*
 * models/kept_stack.pml — the exit that keeps its stack (src/core/spawn.c:
 * swarm_thread_finish -> resume_publish -> swarm_arch_resume_publish) against
 * a joiner that reuses the stack at once (swarm_join's fast path puts the
 * descriptor, stack and all, in its cache; the next spawn runs on it),
 * checked with spin.
 *
 *   E  the exiting thread C, on its stack S: stores its result, takes the
 *      next thread (its own frames and the deque take's locked RMW touch
 *      S), moves to the next thread's stack (movq %rdi, %rsp), and only
 *      then adds EXITED to C's control word (lock xadd); if the word had
 *      WAITER, it readies the parked joiner, from the new stack
 *      (exit_notify_published).
 *   J  the joiner: either finds EXITED and claims C (the fast path's CAS),
 *      or claims it, parks, and sets WAITER in its park commit (fetch_add),
 *      abandoning the park if EXITED is already there; once it has C, it
 *      reads the result, then a spawn reuses S: writes to it.
 * Properties:
 *   a. nothing writes S for a new thread while E still runs on it;
 *   b. the joiner reads the result E stored;
 *   c. the joiner is resumed exactly once (no lost wake-up).
 * Variants (models/check.sh runs each and expects the stated outcome):
 *   (none)            the code as it is today: must pass
 *   -DPUBLISH_ON_S    EXITED added while still on S (the exit before kept
 *                     stacks, with the stack left on the descriptor): must
 *                     fail
 */
#define EXITED 1
#define WAITER 2

byte control = 0;
bool result_set = false;
bool e_on_s = true;
bool s_reused = false;
bool readied = false;
byte resumed = 0;

active proctype Exiter() {
  byte old;
  result_set = true;            /* t->result = result */
  assert(!s_reused);            /* (a) deque take, frames: E writes S */
#ifdef PUBLISH_ON_S
  atomic { old = control; control = control | EXITED };
  assert(!s_reused);            /* still on S: the switch's last writes */
  e_on_s = false;
#else
  e_on_s = false;               /* movq %rdi, %rsp */
  atomic { old = control; control = control | EXITED };
#endif
  if
  :: (old & WAITER) -> readied = true   /* exit_notify_published */
  :: else -> skip
  fi
}

active proctype Joiner() {
  byte old;
  if
  :: (control & EXITED) -> skip /* the fast path: one CAS claims it */
  :: else ->
     /* join_general: park; the commit runs once we are off our stack */
     atomic { old = control; control = control | WAITER };
     if
     :: (old & EXITED) -> skip  /* exited meanwhile: do not park */
     :: else -> readied         /* parked until the exit readies us */
     fi
  fi;
  resumed++;
  assert(resumed == 1);         /* (c) */
  assert(result_set);           /* (b) */
  s_reused = true;              /* a spawn runs a new thread on S */
  assert(!e_on_s)               /* (a) */
}
