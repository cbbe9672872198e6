/*
 * models/rwlock_wake.pml — who lets a waiter of src/sync/rwlock.c in:
 * rw_wake after every unlock and after every queueing, woken_ (waiters
 * readied to compete that have not tried yet), asleep_ (holders granted
 * while parked, not yet run), handoff_ (a starving waiter: unlocks hand
 * over, writers stop barging), prefer-writer's writers_waiting_.
 * Everything rwlock.c decides under the object's spinlock is one atomic
 * step here; a park is a wait for st[i] to leave QUEUED; spinning is only
 * a later attempt, which the interleavings cover. A waiter that is woken
 * and loses queues again at the front and may be starving (waited over
 * 1 ms), which sets handoff_ (nondeterministic here).
 * Each of N threads takes the lock twice, each time as a reader or a
 * writer (nondeterministic), and unlocks. Properties:
 *   a. a writer holds alone; a reader never beside a writer (asserts);
 *   b. no lost wake-up: every thread finishes (a thread parked for ever
 *      is an invalid end state).
 * Variants (models/check.sh runs each and expects the stated outcome):
 *   (none)                 the code as it is (reader-preferring)
 *   -DPREFER_WRITER        the prefer-writer kind
 *   -DOLD_GRANT            with -DPREFER_WRITER: the first rwlock's rule,
 *                          no reader admitted while a writer waits and only
 *                          a writer at the head admitted: must fail (b)
 *   -DNO_WAKE_AFTER_QUEUE  with -DPREFER_WRITER: no rw_wake when a waiter
 *                          queues while the lock is free: must fail (b)
 *   -DNO_WOKEN_DEC         a woken waiter's attempt does not give back its
 *                          woken_ count: unlocks stop waking: must fail (b)
 */
#define N 3
#define NONE 255
#define RUNNING 0
#define QUEUED 1
#define WOKEN 2
#define GRANTED 3

byte readers = 0;
byte writer = NONE;
byte q[N];          /* the FIFO of waiters, q[0] first */
byte qlen = 0;
bool isw[N];        /* the thread's current attempt is a writer's */
byte st[N];
byte woken = 0;
byte asleep = 0;
bool handoff = false;
byte wwait = 0;     /* writers_waiting_: queued writers */

inline remove_at(k) {
  j = k;
  do
  :: j + 1 < qlen -> q[j] = q[j + 1]; j++
  :: else -> break
  od;
  qlen--
}

/* rw_wake: under the lock. */
inline rw_wake() {
  if
  :: writer != NONE -> skip
  :: else ->
    if
    :: qlen == 0 -> handoff = false
    :: qlen > 0 && !handoff && (woken > 0 || asleep > 0) -> skip
    :: qlen > 0 && (handoff || (woken == 0 && asleep == 0)) ->
      k = 0;
#ifdef PREFER_WRITER
#ifndef OLD_GRANT
      if
      :: wwait > 0 ->
        do
        :: !isw[q[k]] -> k++
        :: else -> break
        od
      :: else -> skip
      fi;
#endif
#endif
      if
      :: isw[q[k]] && readers > 0 -> skip
      :: isw[q[k]] && readers == 0 ->
        w = q[k];
        remove_at(k);
        wwait--;
        if
        :: handoff -> writer = w; asleep++; handoff = false; st[w] = GRANTED
        :: else -> woken++; st[w] = WOKEN
        fi
      :: !isw[q[k]] ->
#ifdef OLD_GRANT
        if
        :: wwait > 0 -> goto wake_done
        :: else -> skip
        fi;
#endif
        /* every queued reader, as one batch */
        k = 0;
        took = false;
        do
        :: k < qlen && !isw[q[k]] ->
          w = q[k];
          remove_at(k);
          took = true;
          if
          :: handoff -> readers++; asleep++; st[w] = GRANTED
          :: else -> woken++; st[w] = WOKEN
          fi
        :: k < qlen && isw[q[k]] -> k++
        :: k >= qlen -> break
        od;
        if
        :: took -> handoff = false
        :: else -> skip
        fi
      fi
    fi
  fi;
wake_done: skip
}

/* rw_enter, plus rw_attempt's no-barging rule; entered set if in. */
inline rw_enter(i) {
  entered = false;
  if
  :: writer != NONE -> skip
  :: writer == NONE && isw[i] && handoff && qlen > 0 -> skip
  :: writer == NONE && isw[i] && !(handoff && qlen > 0) ->
    if
    :: readers == 0 -> writer = i; entered = true
    :: else -> skip
    fi
  :: writer == NONE && !isw[i] ->
#ifdef PREFER_WRITER
    if
    :: wwait > 0 -> skip
    :: else -> readers++; entered = true
    fi
#else
    readers++; entered = true
#endif
  fi
}

proctype T(byte i) {
  byte round = 0, j, k, w;
  bool entered, took, requeue, was_woken;
  do
  :: round == 2 -> break
  :: round < 2 ->
    if
    :: isw[i] = true
    :: isw[i] = false
    fi;
    requeue = false;
    was_woken = false;
again:
    atomic {
      if
#ifndef NO_WOKEN_DEC
      :: was_woken -> woken--
#else
      :: was_woken -> skip
#endif
      :: else -> skip
      fi;
      rw_enter(i);
      if
      :: entered -> skip
      :: !entered ->
        /* rw_queue_and_park */
        if
        :: requeue -> handoff = true /* starving */
        :: requeue -> skip
        :: !requeue -> skip
        fi;
        if
        :: isw[i] -> wwait++
        :: else -> skip
        fi;
        st[i] = QUEUED;
        if
        :: requeue && qlen > 0 ->
          j = qlen;
          do
          :: j > 0 -> q[j] = q[j - 1]; j--
          :: else -> break
          od;
          q[0] = i
        :: else -> q[qlen] = i
        fi;
        qlen++;
#ifndef NO_WAKE_AFTER_QUEUE
        rw_wake()
#endif
      fi
    }
    if
    :: entered -> skip
    :: !entered ->
      (st[i] != QUEUED); /* parked until readied */
      if
      :: st[i] == GRANTED -> atomic { asleep--; st[i] = RUNNING }
      :: st[i] == WOKEN ->
        st[i] = RUNNING;
        was_woken = true;
        requeue = true;
        goto again
      fi
    fi;
    /* holding */
    if
    :: isw[i] -> assert(writer == i && readers == 0)
    :: else -> assert(writer == NONE && readers > 0)
    fi;
    atomic {
      if
      :: isw[i] -> writer = NONE
      :: else -> readers--
      fi;
      if
      :: qlen > 0 -> rw_wake()
      :: else -> skip
      fi
    }
    round++
  od
}

init {
  atomic {
    run T(0);
    run T(1);
    run T(2)
  }
}
