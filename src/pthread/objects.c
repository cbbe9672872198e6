/*
 * pthread/objects.c — the drop-in's synchronisation objects: pthread mutex,
 * condition variable, rwlock, barrier, spinlock, key and once functions
 * and their attributes, and POSIX unnamed semaphores, all mapped onto
 * src/sync.
 *
 * Layout. The program was compiled against glibc's headers, so each object
 * is glibc's size and its static initialiser is glibc's. The swarm objects
 * are built to fit (the static asserts below): all-zero is a valid unlocked
 * normal mutex, condition variable and rwlock, and the type glibc's
 * PTHREAD_*_MUTEX_INITIALIZER_NP / PTHREAD_RWLOCK_WRITER_NONRECURSIVE_
 * INITIALIZER_NP write sits where swarm keeps it (byte 16 of a mutex,
 * byte 48 of a rwlock).
 *
 * Attribute objects are only ever read and written by the functions here,
 * so they use their own encoding inside glibc's size: a "set" bit plus the
 * fields. Process-shared objects, robust mutexes and priority protocols
 * are futex-word objects (pshared.c): each function here tells them apart
 * by their mark (one load and a branch) and hands them there.
 * Process-shared and named semaphores (sem_init with pshared, sem_open)
 * are NPTL's: recognised by the missing swarm magic and handed to glibc,
 * but a swarm thread waits on them in slices (pshared.c).
 */
#include <limits.h>
#include <setjmp.h>
#include <stddef.h>
#include <string.h>

#include "pthread/pshared.h"

_Static_assert(sizeof(swarm_mutex_t) <= sizeof(pthread_mutex_t), "mutex");
_Static_assert(offsetof(swarm_mutex_t, kind_) == 16, "mutex kind offset");
_Static_assert(sizeof(swarm_cond_t) <= sizeof(pthread_cond_t), "cond");
_Static_assert(sizeof(swarm_rwlock_t) <= sizeof(pthread_rwlock_t), "rwlock");
_Static_assert(offsetof(swarm_rwlock_t, kind_) == 48, "rwlock kind offset");
_Static_assert(sizeof(swarm_barrier_t) <= sizeof(pthread_barrier_t), "barrier");
_Static_assert(sizeof(swarm_sem_t) <= sizeof(sem_t), "sem");
_Static_assert(sizeof(swarm_once_t) <= sizeof(pthread_once_t), "once");
_Static_assert(sizeof(swarm_key_t) <= sizeof(pthread_key_t), "key");
_Static_assert(sizeof(uint32_t) <= sizeof(pthread_mutexattr_t), "mattr");
_Static_assert(sizeof(uint32_t) <= sizeof(pthread_condattr_t), "cattr");
_Static_assert(sizeof(uint32_t) <= sizeof(pthread_rwlockattr_t), "rwattr");
_Static_assert(sizeof(uint32_t) <= sizeof(pthread_barrierattr_t), "battr");

/* The program's glibc-sized objects seen as the swarm objects inside them. */
#define AS_MUTEX(m) ((swarm_mutex_t *)(void *)(m))
#define AS_COND(c) ((swarm_cond_t *)(void *)(c))
#define AS_RWLOCK(r) ((swarm_rwlock_t *)(void *)(r))
#define AS_BARRIER(b) ((swarm_barrier_t *)(void *)(b))
#define AS_SEM(s) ((swarm_sem_t *)(void *)(s))

/* glibc's headers declare the object arguments nonnull, so a plain NULL
 * test would be folded away; a program may still pass NULL (misuse that
 * NPTL answers without a crash). The empty asm hides the value's origin. */
static inline bool is_null(const volatile void *p) {
  __asm__("" : "+r"(p));
  return p == NULL;
}

#define ATTR_SET 0x40000000u
static inline uint32_t *attr_word(const void *a) {
  return (uint32_t *)a;
}

/* ---- mutex attributes: type in bits 0-3 and glibc's robust, protocol
 * and pshared kind bits above (pshared.h), so the low byte is the kind a
 * mutex made from it gets; the priority ceiling in bits 8-15 ---- */

#define MATTR_CEILING_SHIFT 8
#define MATTR_CEILING_MASK 0xff00u

static inline int mattr_kind(const pthread_mutexattr_t *a) {
  return (int)(*attr_word(a) & 0xff);
}
static inline void mattr_set(pthread_mutexattr_t *a, uint32_t mask,
                             uint32_t bits) {
  *attr_word(a) = (*attr_word(a) & ~mask) | bits | ATTR_SET;
}

DROPIN_API int pthread_mutexattr_init(pthread_mutexattr_t *a) {
  if (is_null(a)) /* NPTL would crash */
    return EINVAL;
  memset(a, 0, sizeof *a);
  *attr_word(a) = ATTR_SET | PTHREAD_MUTEX_DEFAULT;
  return 0;
}
DROPIN_API int pthread_mutexattr_destroy(pthread_mutexattr_t *a) {
  if (!is_null(a)) /* NULL: glibc touches nothing and answers 0 */
    *attr_word(a) = 0;
  return 0;
}
DROPIN_API int pthread_mutexattr_settype(pthread_mutexattr_t *a, int type) {
  if (type != PTHREAD_MUTEX_NORMAL && type != PTHREAD_MUTEX_RECURSIVE &&
      type != PTHREAD_MUTEX_ERRORCHECK && type != PTHREAD_MUTEX_ADAPTIVE_NP)
    return EINVAL;
  mattr_set(a, PSH_KIND_TYPE, (uint32_t)type);
  return 0;
}
DROPIN_API int pthread_mutexattr_gettype(const pthread_mutexattr_t *a,
                                         int *type) {
  *type = mattr_kind(a) & PSH_KIND_TYPE;
  return 0;
}
DROPIN_API int pthread_mutexattr_setpshared(pthread_mutexattr_t *a, int ps) {
  if (ps != PTHREAD_PROCESS_PRIVATE && ps != PTHREAD_PROCESS_SHARED)
    return EINVAL;
  mattr_set(a, PSH_KIND_PSHARED,
            ps == PTHREAD_PROCESS_SHARED ? PSH_KIND_PSHARED : 0);
  return 0;
}
DROPIN_API int pthread_mutexattr_getpshared(const pthread_mutexattr_t *a,
                                            int *ps) {
  *ps = mattr_kind(a) & PSH_KIND_PSHARED ? PTHREAD_PROCESS_SHARED
                                         : PTHREAD_PROCESS_PRIVATE;
  return 0;
}
DROPIN_API int pthread_mutexattr_setrobust(pthread_mutexattr_t *a, int rb) {
  if (rb != PTHREAD_MUTEX_STALLED && rb != PTHREAD_MUTEX_ROBUST)
    return EINVAL;
  mattr_set(a, PSH_KIND_ROBUST,
            rb == PTHREAD_MUTEX_ROBUST ? PSH_KIND_ROBUST : 0);
  return 0;
}
DROPIN_API int pthread_mutexattr_getrobust(const pthread_mutexattr_t *a,
                                           int *rb) {
  *rb = mattr_kind(a) & PSH_KIND_ROBUST ? PTHREAD_MUTEX_ROBUST
                                        : PTHREAD_MUTEX_STALLED;
  return 0;
}
/* Priority protocols are recorded and reported, not applied: swarm threads
 * have no kernel priority of their own (docs/dropin.md). */
DROPIN_API int pthread_mutexattr_setprotocol(pthread_mutexattr_t *a, int p) {
  uint32_t bits;
  if (p == PTHREAD_PRIO_NONE)
    bits = 0;
  else if (p == PTHREAD_PRIO_INHERIT)
    bits = PSH_KIND_PRIO_INHERIT;
  else if (p == PTHREAD_PRIO_PROTECT)
    bits = PSH_KIND_PRIO_PROTECT;
  else
    return EINVAL;
  mattr_set(a, PSH_KIND_PRIO_INHERIT | PSH_KIND_PRIO_PROTECT, bits);
  return 0;
}
DROPIN_API int pthread_mutexattr_getprotocol(const pthread_mutexattr_t *a,
                                             int *p) {
  int k = mattr_kind(a);
  *p = k & PSH_KIND_PRIO_INHERIT   ? PTHREAD_PRIO_INHERIT
       : k & PSH_KIND_PRIO_PROTECT ? PTHREAD_PRIO_PROTECT
                                   : PTHREAD_PRIO_NONE;
  return 0;
}
DROPIN_API int pthread_mutexattr_setprioceiling(pthread_mutexattr_t *a, int c) {
  if (c < sched_get_priority_min(SCHED_FIFO) ||
      c > sched_get_priority_max(SCHED_FIFO))
    return EINVAL;
  mattr_set(a, MATTR_CEILING_MASK, (uint32_t)c << MATTR_CEILING_SHIFT);
  return 0;
}
DROPIN_API int pthread_mutexattr_getprioceiling(const pthread_mutexattr_t *a,
                                                int *c) {
  *c = (int)((*attr_word(a) & MATTR_CEILING_MASK) >> MATTR_CEILING_SHIFT);
  return 0;
}

/* ---- mutexes: swarm's, or futex-word ones (pshared.c) for the
 * process-shared, robust and priority-protocol kinds ---- */

static inline bool futex_mutex(const pthread_mutex_t *m) {
  return !is_null(m) && psh_mutex_is_futex(m);
}

DROPIN_API int pthread_mutex_init(pthread_mutex_t *m,
                                  const pthread_mutexattr_t *a) {
  if (is_null(m)) /* NPTL would crash */
    return EINVAL;
  int kind = a ? mattr_kind(a) : PTHREAD_MUTEX_NORMAL;
  if (kind & PSH_KIND_FUTEX)
    return psh_mutex_init(
        m, kind,
        (int)((*attr_word(a) & MATTR_CEILING_MASK) >> MATTR_CEILING_SHIFT));
  int type = kind & PSH_KIND_TYPE;
  if (type == PTHREAD_MUTEX_ADAPTIVE_NP)
    type = PTHREAD_MUTEX_NORMAL;
  memset(m, 0, sizeof *m);
  return swarm_mutex_init(AS_MUTEX(m), type);
}
DROPIN_API int pthread_mutex_destroy(pthread_mutex_t *m) {
  if (futex_mutex(m))
    return psh_mutex_destroy(m);
  int e = swarm_mutex_destroy(AS_MUTEX(m));
  if (!e) /* as glibc: a destroyed mutex answers EINVAL until re-initialised
             (kind -1 reads as a futex mutex, which checks its kind) */
    AS_MUTEX(m)->kind_ = -1;
  return e;
}
DROPIN_API int pthread_mutex_lock(pthread_mutex_t *m) {
  if (unlikely(futex_mutex(m)))
    return psh_mutex_lock(m, false, 0, false);
  return swarm_mutex_lock(AS_MUTEX(m));
}
DROPIN_API int pthread_mutex_trylock(pthread_mutex_t *m) {
  if (unlikely(futex_mutex(m)))
    return psh_mutex_lock(m, true, 0, false);
  return swarm_mutex_trylock(AS_MUTEX(m));
}
DROPIN_API int pthread_mutex_unlock(pthread_mutex_t *m) {
  if (unlikely(futex_mutex(m)))
    return psh_mutex_unlock(m);
  int e = swarm_mutex_unlock(AS_MUTEX(m));
  /* NPTL answers 0 to unlocking a free normal (or adaptive) mutex. */
  if (unlikely(e == EPERM) && !is_null(m) &&
      (AS_MUTEX(m)->kind_ == SWARM_MUTEX_NORMAL ||
       AS_MUTEX(m)->kind_ == PTHREAD_MUTEX_ADAPTIVE_NP))
    return 0;
  return e;
}
/* As POSIX: the timespec is looked at only when the mutex is not free. */
static int futex_mutex_timedlock(pthread_mutex_t *m, clockid_t c,
                                 const struct timespec *t) {
  int e = psh_mutex_lock(m, true, 0, false);
  if (e != EBUSY)
    return e;
  uint64_t deadline;
  bool expired;
  if ((e = sync_deadline(c, t, &deadline, &expired)))
    return e;
  return psh_mutex_lock(m, false, deadline, expired);
}
DROPIN_API int pthread_mutex_timedlock(pthread_mutex_t *m,
                                       const struct timespec *t) {
  if (unlikely(futex_mutex(m)))
    return futex_mutex_timedlock(m, CLOCK_REALTIME, t);
  return swarm_mutex_timedlock(AS_MUTEX(m), CLOCK_REALTIME, t);
}
DROPIN_API int pthread_mutex_clocklock(pthread_mutex_t *m, clockid_t c,
                                       const struct timespec *t) {
  if (unlikely(futex_mutex(m)))
    return futex_mutex_timedlock(m, c, t);
  return swarm_mutex_timedlock(AS_MUTEX(m), c, t);
}
DROPIN_API int pthread_mutex_consistent(pthread_mutex_t *m) {
  return futex_mutex(m) ? psh_mutex_consistent(m) : EINVAL; /* not robust */
}
DROPIN_API int pthread_mutex_getprioceiling(const pthread_mutex_t *m, int *c) {
  return futex_mutex(m) ? psh_mutex_getprioceiling(m, c) : EINVAL;
}
DROPIN_API int pthread_mutex_setprioceiling(pthread_mutex_t *m, int c,
                                            int *old) {
  return futex_mutex(m) ? psh_mutex_setprioceiling(m, c, old) : EINVAL;
}

/* ---- condition variables: clock in bit 0 (1 = monotonic), pshared in
 * bit 1 (a futex-word one, pshared.c) ---- */

#define CATTR_PSHARED 2u

DROPIN_API int pthread_condattr_init(pthread_condattr_t *a) {
  if (is_null(a)) /* NPTL would crash */
    return EINVAL;
  memset(a, 0, sizeof *a);
  *attr_word(a) = ATTR_SET;
  return 0;
}
DROPIN_API int pthread_condattr_destroy(pthread_condattr_t *a) {
  if (!is_null(a)) /* NULL: glibc touches nothing and answers 0 */
    *attr_word(a) = 0;
  return 0;
}
DROPIN_API int pthread_condattr_setclock(pthread_condattr_t *a, clockid_t c) {
  if (c != CLOCK_REALTIME && c != CLOCK_MONOTONIC)
    return EINVAL;
  *attr_word(a) =
      ATTR_SET | (*attr_word(a) & CATTR_PSHARED) | (c == CLOCK_MONOTONIC);
  return 0;
}
DROPIN_API int pthread_condattr_getclock(const pthread_condattr_t *a,
                                         clockid_t *c) {
  *c = (*attr_word(a) & 1) ? CLOCK_MONOTONIC : CLOCK_REALTIME;
  return 0;
}
DROPIN_API int pthread_condattr_setpshared(pthread_condattr_t *a, int ps) {
  if (ps != PTHREAD_PROCESS_PRIVATE && ps != PTHREAD_PROCESS_SHARED)
    return EINVAL;
  *attr_word(a) = ATTR_SET | (*attr_word(a) & 1) |
                  (ps == PTHREAD_PROCESS_SHARED ? CATTR_PSHARED : 0);
  return 0;
}
DROPIN_API int pthread_condattr_getpshared(const pthread_condattr_t *a,
                                           int *ps) {
  *ps = *attr_word(a) & CATTR_PSHARED ? PTHREAD_PROCESS_SHARED
                                      : PTHREAD_PROCESS_PRIVATE;
  return 0;
}

DROPIN_API int pthread_cond_init(pthread_cond_t *c,
                                 const pthread_condattr_t *a) {
  if (is_null(c)) /* NPTL would crash */
    return EINVAL;
  clockid_t clock = a && (*attr_word(a) & 1) ? CLOCK_MONOTONIC : CLOCK_REALTIME;
  if (a && (*attr_word(a) & CATTR_PSHARED))
    return psh_cond_init(c, clock);
  memset(c, 0, sizeof *c);
  return swarm_cond_init(AS_COND(c), clock);
}
static inline bool futex_cond(const pthread_cond_t *c) {
  return !is_null(c) && psh_cond_is_ours(c);
}
DROPIN_API int pthread_cond_destroy(pthread_cond_t *c) {
  if (futex_cond(c))
    return psh_cond_destroy(c);
  if (!is_null(c) && psh_private_cond_waited(c))
    return EBUSY;
  return swarm_cond_destroy(AS_COND(c));
}
DROPIN_API int pthread_cond_signal(pthread_cond_t *c) {
  if (unlikely(futex_cond(c)))
    return psh_cond_wake(c, false);
  if (unlikely(!is_null(c) && psh_private_cond_waited(c)))
    psh_private_cond_wake(c, false); /* and one swarm waiter, if any */
  return swarm_cond_signal(AS_COND(c));
}
DROPIN_API int pthread_cond_broadcast(pthread_cond_t *c) {
  if (unlikely(futex_cond(c)))
    return psh_cond_wake(c, true);
  if (unlikely(!is_null(c) && psh_private_cond_waited(c)))
    psh_private_cond_wake(c, true);
  return swarm_cond_broadcast(AS_COND(c));
}

/* A cancellation point: a cancelled waiter owns the mutex again when its
 * cleanup handlers run, as POSIX requires. */
static int cond_wait(pthread_cond_t *c, pthread_mutex_t *m, int clock,
                     const struct timespec *t) {
  bool shared = futex_cond(c);
  if (unlikely(shared || futex_mutex(m))) {
    /* a futex-word condition variable, or a swarm one with a futex-word
     * mutex (whose release swarm's queue cannot make atomic) */
    uint64_t deadline = 0;
    bool expired = false;
    if (t) {
      int e = sync_deadline(clock, t, &deadline, &expired);
      if (e)
        return e;
      if (expired)
        deadline = 1; /* long past: one look, then ETIMEDOUT */
    }
    return shared ? psh_cond_wait(c, m, deadline)
                  : psh_private_cond_wait(c, m, deadline);
  }
  dropin_testcancel();
  int e = sync_cond_wait_x(AS_COND(c), AS_MUTEX(m), clock, t, true);
  if (e == ECANCELED) {
    dropin_testcancel();         /* a cancellation acts: no return */
    dropin_signal_interrupted(); /* a signal: a spurious wakeup */
    e = 0;
  }
  return e;
}
DROPIN_API int pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m) {
  return cond_wait(c, m, CLOCK_REALTIME, NULL);
}
/* glibc declares the time nonnull, so the compiler would drop a plain test:
 * launder the pointer first. */
static inline bool time_missing(const struct timespec *t) {
  __asm__("" : "+r"(t));
  return t == NULL;
}

DROPIN_API int pthread_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m,
                                      const struct timespec *t) {
  if (time_missing(t))
    return EINVAL; /* as the native API; cond_wait would wait forever */
  return cond_wait(c, m, futex_cond(c) ? psh_cond_clock(c) : AS_COND(c)->clock_,
                   t);
}
DROPIN_API int pthread_cond_clockwait(pthread_cond_t *c, pthread_mutex_t *m,
                                      clockid_t clock,
                                      const struct timespec *t) {
  if (time_missing(t))
    return EINVAL;
  return cond_wait(c, m, clock, t);
}

/* ---- rwlocks: kind in bits 0-3, pshared in bit 4 (a futex-word one,
 * pshared.c) ---- */

#define RWATTR_PSHARED 0x10u

DROPIN_API int pthread_rwlockattr_init(pthread_rwlockattr_t *a) {
  if (is_null(a)) /* NPTL would crash */
    return EINVAL;
  memset(a, 0, sizeof *a);
  *attr_word(a) = ATTR_SET | PTHREAD_RWLOCK_PREFER_READER_NP;
  return 0;
}
DROPIN_API int pthread_rwlockattr_destroy(pthread_rwlockattr_t *a) {
  if (!is_null(a)) /* NULL: glibc touches nothing and answers 0 */
    *attr_word(a) = 0;
  return 0;
}
DROPIN_API int pthread_rwlockattr_setkind_np(pthread_rwlockattr_t *a,
                                             int kind) {
  if (kind != PTHREAD_RWLOCK_PREFER_READER_NP &&
      kind != PTHREAD_RWLOCK_PREFER_WRITER_NP &&
      kind != PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP)
    return EINVAL;
  *attr_word(a) = ATTR_SET | (*attr_word(a) & RWATTR_PSHARED) | (uint32_t)kind;
  return 0;
}
DROPIN_API int pthread_rwlockattr_getkind_np(const pthread_rwlockattr_t *a,
                                             int *kind) {
  *kind = (int)(*attr_word(a) & 0xf);
  return 0;
}
DROPIN_API int pthread_rwlockattr_setpshared(pthread_rwlockattr_t *a, int ps) {
  if (ps != PTHREAD_PROCESS_PRIVATE && ps != PTHREAD_PROCESS_SHARED)
    return EINVAL;
  *attr_word(a) = ATTR_SET | (*attr_word(a) & 0xf) |
                  (ps == PTHREAD_PROCESS_SHARED ? RWATTR_PSHARED : 0);
  return 0;
}
DROPIN_API int pthread_rwlockattr_getpshared(const pthread_rwlockattr_t *a,
                                             int *ps) {
  *ps = *attr_word(a) & RWATTR_PSHARED ? PTHREAD_PROCESS_SHARED
                                       : PTHREAD_PROCESS_PRIVATE;
  return 0;
}

DROPIN_API int pthread_rwlock_init(pthread_rwlock_t *rw,
                                   const pthread_rwlockattr_t *a) {
  if (is_null(rw)) /* NPTL would crash */
    return EINVAL;
  if (a && (*attr_word(a) & RWATTR_PSHARED))
    return psh_rwlock_init(rw);
  /* glibc's PREFER_WRITER_NP behaves as PREFER_READER; so does ours. */
  int kind =
      a && (*attr_word(a) & 0xf) == PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP
          ? SWARM_RWLOCK_PREFER_WRITER
          : SWARM_RWLOCK_PREFER_READER;
  memset(rw, 0, sizeof *rw);
  return swarm_rwlock_init(AS_RWLOCK(rw), kind);
}
static inline bool futex_rwlock(const pthread_rwlock_t *rw) {
  return !is_null(rw) && psh_rwlock_is_ours(rw);
}
DROPIN_API int pthread_rwlock_destroy(pthread_rwlock_t *rw) {
  if (futex_rwlock(rw))
    return psh_rwlock_destroy(rw);
  return swarm_rwlock_destroy(AS_RWLOCK(rw));
}
/* The futex-word rwlock's locks; the timespec is looked at only when the
 * lock cannot be had at once. */
static int futex_rwlock_lock(pthread_rwlock_t *rw, bool writer, int clock,
                             const struct timespec *t) {
  if (!t)
    return psh_rwlock_lock(rw, writer, false, 0, false);
  int e = psh_rwlock_lock(rw, writer, true, 0, false);
  if (e != EBUSY)
    return e;
  uint64_t deadline;
  bool expired;
  if ((e = sync_deadline(clock, t, &deadline, &expired)))
    return e;
  return psh_rwlock_lock(rw, writer, false, deadline, expired);
}
DROPIN_API int pthread_rwlock_rdlock(pthread_rwlock_t *rw) {
  if (unlikely(futex_rwlock(rw)))
    return futex_rwlock_lock(rw, false, 0, NULL);
  return swarm_rwlock_rdlock(AS_RWLOCK(rw));
}
DROPIN_API int pthread_rwlock_tryrdlock(pthread_rwlock_t *rw) {
  if (unlikely(futex_rwlock(rw)))
    return psh_rwlock_lock(rw, false, true, 0, false);
  return swarm_rwlock_tryrdlock(AS_RWLOCK(rw));
}
DROPIN_API int pthread_rwlock_timedrdlock(pthread_rwlock_t *rw,
                                          const struct timespec *t) {
  if (unlikely(futex_rwlock(rw)))
    return futex_rwlock_lock(rw, false, CLOCK_REALTIME, t);
  return swarm_rwlock_timedrdlock(AS_RWLOCK(rw), CLOCK_REALTIME, t);
}
DROPIN_API int pthread_rwlock_clockrdlock(pthread_rwlock_t *rw, clockid_t c,
                                          const struct timespec *t) {
  if (unlikely(futex_rwlock(rw)))
    return futex_rwlock_lock(rw, false, c, t);
  return swarm_rwlock_timedrdlock(AS_RWLOCK(rw), c, t);
}
DROPIN_API int pthread_rwlock_wrlock(pthread_rwlock_t *rw) {
  if (unlikely(futex_rwlock(rw)))
    return futex_rwlock_lock(rw, true, 0, NULL);
  return swarm_rwlock_wrlock(AS_RWLOCK(rw));
}
DROPIN_API int pthread_rwlock_trywrlock(pthread_rwlock_t *rw) {
  if (unlikely(futex_rwlock(rw)))
    return psh_rwlock_lock(rw, true, true, 0, false);
  return swarm_rwlock_trywrlock(AS_RWLOCK(rw));
}
DROPIN_API int pthread_rwlock_timedwrlock(pthread_rwlock_t *rw,
                                          const struct timespec *t) {
  if (unlikely(futex_rwlock(rw)))
    return futex_rwlock_lock(rw, true, CLOCK_REALTIME, t);
  return swarm_rwlock_timedwrlock(AS_RWLOCK(rw), CLOCK_REALTIME, t);
}
DROPIN_API int pthread_rwlock_clockwrlock(pthread_rwlock_t *rw, clockid_t c,
                                          const struct timespec *t) {
  if (unlikely(futex_rwlock(rw)))
    return futex_rwlock_lock(rw, true, c, t);
  return swarm_rwlock_timedwrlock(AS_RWLOCK(rw), c, t);
}
DROPIN_API int pthread_rwlock_unlock(pthread_rwlock_t *rw) {
  if (unlikely(futex_rwlock(rw)))
    return psh_rwlock_unlock(rw);
  return swarm_rwlock_unlock(AS_RWLOCK(rw));
}

/* ---- barriers: pshared in bit 0 (a futex-word one, pshared.c) ---- */

DROPIN_API int pthread_barrierattr_init(pthread_barrierattr_t *a) {
  if (is_null(a)) /* NPTL would crash */
    return EINVAL;
  memset(a, 0, sizeof *a);
  *attr_word(a) = ATTR_SET;
  return 0;
}
DROPIN_API int pthread_barrierattr_destroy(pthread_barrierattr_t *a) {
  if (!is_null(a)) /* NULL: glibc touches nothing and answers 0 */
    *attr_word(a) = 0;
  return 0;
}
DROPIN_API int pthread_barrierattr_setpshared(pthread_barrierattr_t *a,
                                              int ps) {
  if (ps != PTHREAD_PROCESS_PRIVATE && ps != PTHREAD_PROCESS_SHARED)
    return EINVAL;
  *attr_word(a) = ATTR_SET | (ps == PTHREAD_PROCESS_SHARED);
  return 0;
}
DROPIN_API int pthread_barrierattr_getpshared(const pthread_barrierattr_t *a,
                                              int *ps) {
  *ps = *attr_word(a) & 1 ? PTHREAD_PROCESS_SHARED : PTHREAD_PROCESS_PRIVATE;
  return 0;
}
DROPIN_API int pthread_barrier_init(pthread_barrier_t *b,
                                    const pthread_barrierattr_t *a,
                                    unsigned count) {
  if (is_null(b)) /* NPTL would crash */
    return EINVAL;
  if (a && (*attr_word(a) & 1))
    return psh_barrier_init(b, count);
  memset(b, 0, sizeof *b);
  return swarm_barrier_init(AS_BARRIER(b), count);
}
static inline bool futex_barrier(const pthread_barrier_t *b) {
  return !is_null(b) && psh_barrier_is_ours(b);
}
DROPIN_API int pthread_barrier_destroy(pthread_barrier_t *b) {
  if (futex_barrier(b))
    return psh_barrier_destroy(b);
  return swarm_barrier_destroy(AS_BARRIER(b));
}
DROPIN_API int pthread_barrier_wait(pthread_barrier_t *b) {
  if (futex_barrier(b))
    return psh_barrier_wait(b);
  return swarm_barrier_wait(AS_BARRIER(b)); /* SERIAL is -1 in both */
}

/* ---- spinlocks: a test-and-set word; a waiter yields its worker so a
 * holder queued on the same worker can run and let go ---- */

DROPIN_API int pthread_spin_init(pthread_spinlock_t *l, int pshared) {
  if (is_null(l)) /* NPTL would crash */
    return EINVAL;
  if (pshared != PTHREAD_PROCESS_PRIVATE && pshared != PTHREAD_PROCESS_SHARED)
    return EINVAL;
  __atomic_store_n(l, 0, __ATOMIC_RELEASE);
  return 0;
}
DROPIN_API int pthread_spin_destroy(pthread_spinlock_t *l) {
  if (is_null(l)) /* NPTL would crash */
    return EINVAL;
  (void)l;
  return 0;
}
DROPIN_API int pthread_spin_lock(pthread_spinlock_t *l) {
  if (is_null(l)) /* NPTL would crash */
    return EINVAL;
  unsigned spins = 0;
  while (__atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE)) {
    while (__atomic_load_n(l, __ATOMIC_RELAXED)) {
      if (++spins % 128 == 0)
        sched_yield();
      else
        os_cpu_relax();
    }
  }
  return 0;
}
DROPIN_API int pthread_spin_trylock(pthread_spinlock_t *l) {
  if (is_null(l)) /* NPTL would crash */
    return EINVAL;
  return __atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE) ? EBUSY : 0;
}
DROPIN_API int pthread_spin_unlock(pthread_spinlock_t *l) {
  if (is_null(l)) /* NPTL would crash */
    return EINVAL;
  __atomic_store_n(l, 0, __ATOMIC_RELEASE);
  return 0;
}

/* ---- keys ---- */

DROPIN_API int pthread_key_create(pthread_key_t *k, void (*d)(void *)) {
  if (is_null(k)) /* NPTL would crash */
    return EINVAL;
  swarm_key_t key;
  int e = swarm_key_create(&key, d);
  if (!e)
    *k = key;
  return e;
}
DROPIN_API int pthread_key_delete(pthread_key_t k) {
  return swarm_key_delete(k);
}
DROPIN_API void *pthread_getspecific(pthread_key_t k) {
  return swarm_getspecific(k);
}
/* glibc declares v access(none), which makes GCC think passing it on reads
 * an uninitialised object. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
DROPIN_API int pthread_setspecific(pthread_key_t k, const void *v) {
  return swarm_setspecific(k, v);
}
#pragma GCC diagnostic pop

/* ---- once: a cancelled init routine leaves the object not run ---- */

/* What pthread_cleanup_push uses, by its plain symbol (the prototype in
 * <setjmp.h> wants a full jmp_buf; the cancel buffer is shorter). */
extern int dropin_sigsetjmp(void *env, int savemask) __asm__("__sigsetjmp")
    __attribute__((returns_twice));

DROPIN_API int pthread_once(pthread_once_t *o, void (*fn)(void)) {
  if (is_null(o)) /* NPTL would crash */
    return EINVAL;
  if (__atomic_load_n(o, __ATOMIC_ACQUIRE) == 2)
    return 0;
  __pthread_unwind_buf_t buf;
  if (dropin_sigsetjmp(buf.__cancel_jmp_buf, 0)) {
    sync_once_abort((swarm_once_t *)o);
    __pthread_unwind_next(&buf);
  }
  __pthread_register_cancel(&buf);
  int e = swarm_once((swarm_once_t *)o, fn);
  __pthread_unregister_cancel(&buf);
  return e;
}

/* ---- POSIX unnamed semaphores (return -1 and set errno) ---- */

DROPIN_API int sem_init(sem_t *s, int pshared, unsigned value) {
  if (is_null(s))
    return dropin_fail(EINVAL);
  if (pshared)
    return libc_sem_init(s, pshared, value);
  if (value > SEM_VALUE_MAX)
    return dropin_fail(EINVAL);
  memset(s, 0, sizeof *s);
  int e = swarm_sem_init(AS_SEM(s), value);
  return e ? dropin_fail(e) : 0;
}
DROPIN_API int sem_destroy(sem_t *s) {
  if (is_null(s))
    return dropin_fail(EINVAL);
  if (!sync_sem_is_ours(s))
    return libc_sem_destroy(s);
  int e = swarm_sem_destroy(AS_SEM(s));
  return e ? dropin_fail(e) : 0;
}
static int sem_wait_common(sem_t *s, uint64_t deadline) {
  dropin_testcancel();
  int e = sync_sem_wait_x(AS_SEM(s), deadline, true);
  if (e == ECANCELED) {
    dropin_testcancel();         /* a cancellation acts: no return */
    dropin_signal_interrupted(); /* a signal's handler ran */
    e = EINTR;
  }
  return e ? dropin_fail(e) : 0;
}
/* NPTL's semaphore (process-shared or named): a swarm thread waits in
 * slices, so its worker runs the others between them (pshared.c). */
static int nptl_sem_wait(sem_t *s, clockid_t clock, const struct timespec *t) {
  if (!worker_current())
    return t ? libc_sem_clockwait(s, clock, t) : libc_sem_wait(s);
  uint64_t deadline = 0;
  bool expired = false;
  if (t && libc_sem_trywait(s) == 0)
    return 0;
  if (t) {
    int e = sync_deadline(clock, t, &deadline, &expired);
    if (e)
      return dropin_fail(e);
    if (expired) {
      dropin_testcancel();
      return dropin_fail(ETIMEDOUT);
    }
  }
  return psh_sem_wait(s, deadline, t != NULL);
}
DROPIN_API int sem_wait(sem_t *s) {
  if (is_null(s))
    return dropin_fail(EINVAL);
  if (!sync_sem_is_ours(s))
    return nptl_sem_wait(s, CLOCK_REALTIME, NULL);
  return sem_wait_common(s, 0);
}
DROPIN_API int sem_trywait(sem_t *s) {
  if (is_null(s))
    return dropin_fail(EINVAL);
  if (!sync_sem_is_ours(s))
    return libc_sem_trywait(s);
  int e = swarm_sem_trywait(AS_SEM(s));
  return e ? dropin_fail(e) : 0;
}
static int sem_timed(sem_t *s, int clock, const struct timespec *t) {
  if (swarm_sem_trywait(AS_SEM(s)) == 0)
    return 0;
  uint64_t deadline;
  bool expired;
  int e = sync_deadline(clock, t, &deadline, &expired);
  if (e)
    return dropin_fail(e);
  if (expired) {
    dropin_testcancel();
    return dropin_fail(ETIMEDOUT);
  }
  return sem_wait_common(s, deadline);
}
DROPIN_API int sem_timedwait(sem_t *s, const struct timespec *t) {
  if (is_null(s))
    return dropin_fail(EINVAL);
  if (!sync_sem_is_ours(s))
    return nptl_sem_wait(s, CLOCK_REALTIME, t);
  return sem_timed(s, CLOCK_REALTIME, t);
}
DROPIN_API int sem_clockwait(sem_t *s, clockid_t c, const struct timespec *t) {
  if (is_null(s))
    return dropin_fail(EINVAL);
  if (!sync_sem_is_ours(s))
    return nptl_sem_wait(s, c, t);
  return sem_timed(s, c, t);
}
DROPIN_API int sem_post(sem_t *s) {
  if (is_null(s))
    return dropin_fail(EINVAL);
  if (!sync_sem_is_ours(s))
    return libc_sem_post(s);
  int e = swarm_sem_post(AS_SEM(s));
  return e ? dropin_fail(e) : 0;
}
DROPIN_API int sem_getvalue(sem_t *s, int *v) {
  if (is_null(s) || is_null(v))
    return dropin_fail(EINVAL);
  if (!sync_sem_is_ours(s))
    return libc_sem_getvalue(s, v);
  int e = swarm_sem_getvalue(AS_SEM(s), v);
  return e ? dropin_fail(e) : 0;
}
