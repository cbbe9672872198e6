/*
 * models/park_ready.pml — the park/ready handshake of src/core/sched.c
 * (swarm_park -> switch_to(..., after_park) -> commit on the new stack;
 * swarm_ready -> make_runnable -> deque_push + wake_if_idle; worker_sleep)
 * checked with spin. Three workers' worth of actors:
 *   P   a swarm thread on worker W1 that waits for an event: park(commit)
 *       where commit locks the wait list, abandons the park if the event
 *       already happened, or enqueues P, then unlocks (sync's pattern).
 *   W2  a worker running the waker: lock list; if P is queued, dequeue it
 *       and ready(P) (deque push on W2, then wake an idle worker if the
 *       idle count says one sleeps); else record the event; unlock. Then
 *       W2 either runs what its deque holds or stays busy forever with its
 *       current thread (a CPU-bound thread), nondeterministically.
 *   W1  after switching away from P (P is saved: its context is complete
 *       before after_park runs the commit), looks for work: its own deque
 *       (P, if the commit was abandoned), W2's deque (steal), else sleeps:
 *       sleeping = 1, idle++ (seq_cst RMW), re-check the deques, futex-wait.
 * Properties:
 *   a. P is never resumed before it is saved (asserted at every resume),
 *      and is resumed exactly once (assert on the count).
 *   b. no lost wake-up: when no step is possible any more, P has been
 *      resumed; a W1 asleep in the futex while P sits in W2's deque and W2
 *      is busy forever fails the final assertion. (The real worker_sleep has
 *      a timeout of up to SLEEP_MAX_NS = 256 ms; the model makes it
 *      infinite, so a lost wake-up shows as an error instead of as a stall.)
 *
 * Weak memory: as in deque.pml, W2's plain (relaxed/release) stores to its
 * deque's bottom wait in a store buffer until drained; seq_cst RMWs drain.
 * Locks are acquire/release and modelled as atomic sections.
 * Variants (models/check.sh runs each and expects the stated outcome):
 *   (none)               the code as it is in sched.c today
 *   -DNO_WAKER_FENCE     drop the seq_cst fence make_runnable issues before
 *                        reading idle_workers after a push into an empty deque
 *   -DCOMMIT_BEFORE_SAVE commit runs before the switch completes (the bug
 *                        switch-then-call exists to prevent): must fail (a)
 */
bool p_saved = false;
byte p_resumed = 0;
bool event = false;           /* the event P waits for */
bool p_queued = false;        /* P is in the wait list */
bool list_locked = false;

/* W1's and W2's deques reduced to "holds P": bottom as others see it. */
bool w1_has_p = false;        /* W1 pushes/takes only itself: no buffer */
bool w2_bottom_p = false;     /* W2's deque, as memory holds it */
chan w2_sb = [2] of { bool }; /* W2's pending store to its bottom */

byte idle = 0;                /* swarm_rt.idle_workers */
bool w1_sleeping = false;
byte sleep_word = 0;          /* W1's futex word */

inline lock() { atomic { !list_locked -> list_locked = true } }
inline unlock() { list_locked = false }

inline resume_p() {
  assert(p_saved);            /* (a) never resumed while being saved */
  p_resumed++;
  assert(p_resumed == 1)
}

active proctype memory() {
  bool v;
end:
  do
  :: atomic { w2_sb?v -> w2_bottom_p = v }
  od
}

active proctype W1() {
  byte seq;
  /* P runs on W1 and parks. */
#ifdef COMMIT_BEFORE_SAVE
  goto commit;
saved:
  p_saved = true;
  goto look;
commit:
#else
  p_saved = true;             /* swarm_arch_switch saved P; now on W1's
                                 scheduler stack, after_park runs commit */
#endif
  lock();
  if
  :: event -> unlock(); w1_has_p = true   /* abandoned: make_runnable */
  :: else -> p_queued = true; unlock()
  fi;
#ifdef COMMIT_BEFORE_SAVE
  goto saved;
#endif
look:
  if
  :: w1_has_p -> w1_has_p = false; resume_p(); goto done
  :: else -> skip
  fi;
  /* steal from W2 (top is CAS'd: an atomic, draining step) */
  atomic {
    if
    :: w2_bottom_p -> w2_bottom_p = false; resume_p(); goto done
    :: else -> skip
    fi
  }
  /* worker_sleep */
  seq = sleep_word;
  w1_sleeping = true;         /* seq_cst store (no stores of ours buffered) */
  idle++;                     /* seq_cst RMW (our own stores: none buffered) */
  if
  :: w2_bottom_p -> goto unsleep                       /* work_visible */
  :: else -> skip
  fi;
end_asleep:
  sleep_word != seq;          /* futex wait, no timeout in the model */
unsleep:
  atomic {
    if
    :: w1_sleeping -> w1_sleeping = false; idle--
    :: else -> skip
    fi
  }
  goto look;
done:
  skip
}

active proctype W2() {
  bool pushed = false;
  lock();
  if
  :: p_queued -> p_queued = false; unlock();
     /* ready(P): deque_push: store bottom (release fence, then relaxed) */
     w2_sb!true; pushed = true;
#ifndef NO_WAKER_FENCE
     empty(w2_sb);            /* fence(seq_cst) in make_runnable */
#endif
     if                       /* wake_if_idle: relaxed load of idle */
     :: idle > 0 ->
        atomic {              /* worker_wake_if_sleeping: CAS sleeping */
          empty(w2_sb);
          if
          :: w1_sleeping -> w1_sleeping = false; idle--; sleep_word++
          :: else -> skip
          fi
        }
     :: else -> skip
     fi
  :: else -> event = true; unlock()
  fi;
  if
  :: pushed ->                /* local_next: take P back ourselves */
     atomic { empty(w2_sb);
              if :: w2_bottom_p -> w2_bottom_p = false; resume_p()
                 :: else -> skip fi }
  :: pushed -> skip           /* or stay busy with the current thread */
  :: !pushed -> skip
  fi;
end_busy:
  skip
}

/* When nothing can move any more (W1 asleep or done, W2 done or busy
 * forever, store buffer drained), P must have been resumed: otherwise it is
 * stranded in W2's deque with W1 asleep — a lost wake-up. */
active proctype check() {
  timeout -> assert(p_resumed == 1)
}
