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
 * cannot be honoured by swarm threads: their setters return ENOTSUP.
 * Process-shared and named semaphores (sem_init with pshared, sem_open)
 * are NPTL's: recognised by the missing swarm magic and handed to glibc.
 */
#include <limits.h>
#include <setjmp.h>
#include <stddef.h>
#include <string.h>

#include "pthread/dropin.h"

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

#define M(m) ((swarm_mutex_t *)(void *)(m))
#define C(c) ((swarm_cond_t *)(void *)(c))
#define RW(r) ((swarm_rwlock_t *)(void *)(r))
#define B(b) ((swarm_barrier_t *)(void *)(b))
#define S(s) ((swarm_sem_t *)(void *)(s))

#define ATTR_SET 0x40000000u
static inline uint32_t *attr_word(const void *a) {
  return (uint32_t *)a;
}

/* ---- mutex attributes: type in bits 0-3 ---- */

DROPIN_API int pthread_mutexattr_init(pthread_mutexattr_t *a) {
  memset(a, 0, sizeof *a);
  *attr_word(a) = ATTR_SET | PTHREAD_MUTEX_DEFAULT;
  return 0;
}
DROPIN_API int pthread_mutexattr_destroy(pthread_mutexattr_t *a) {
  *attr_word(a) = 0;
  return 0;
}
DROPIN_API int pthread_mutexattr_settype(pthread_mutexattr_t *a, int type) {
  if (type != PTHREAD_MUTEX_NORMAL && type != PTHREAD_MUTEX_RECURSIVE &&
      type != PTHREAD_MUTEX_ERRORCHECK && type != PTHREAD_MUTEX_ADAPTIVE_NP)
    return EINVAL;
  *attr_word(a) = ATTR_SET | (uint32_t)type;
  return 0;
}
DROPIN_API int pthread_mutexattr_gettype(const pthread_mutexattr_t *a,
                                         int *type) {
  *type = (int)(*attr_word(a) & 0xf);
  return 0;
}
DROPIN_API int pthread_mutexattr_setpshared(pthread_mutexattr_t *a, int ps) {
  (void)a;
  if (ps == PTHREAD_PROCESS_PRIVATE)
    return 0;
  return ps == PTHREAD_PROCESS_SHARED ? ENOTSUP : EINVAL;
}
DROPIN_API int pthread_mutexattr_getpshared(const pthread_mutexattr_t *a,
                                            int *ps) {
  (void)a;
  *ps = PTHREAD_PROCESS_PRIVATE;
  return 0;
}
DROPIN_API int pthread_mutexattr_setrobust(pthread_mutexattr_t *a, int rb) {
  (void)a;
  if (rb == PTHREAD_MUTEX_STALLED)
    return 0;
  return rb == PTHREAD_MUTEX_ROBUST ? ENOTSUP : EINVAL;
}
DROPIN_API int pthread_mutexattr_getrobust(const pthread_mutexattr_t *a,
                                           int *rb) {
  (void)a;
  *rb = PTHREAD_MUTEX_STALLED;
  return 0;
}
DROPIN_API int pthread_mutexattr_setprotocol(pthread_mutexattr_t *a, int p) {
  (void)a;
  if (p == PTHREAD_PRIO_NONE)
    return 0;
  return p == PTHREAD_PRIO_INHERIT || p == PTHREAD_PRIO_PROTECT ? ENOTSUP
                                                                : EINVAL;
}
DROPIN_API int pthread_mutexattr_getprotocol(const pthread_mutexattr_t *a,
                                             int *p) {
  (void)a;
  *p = PTHREAD_PRIO_NONE;
  return 0;
}

/* ---- mutexes ---- */

DROPIN_API int pthread_mutex_init(pthread_mutex_t *m,
                                  const pthread_mutexattr_t *a) {
  int type = a ? (int)(*attr_word(a) & 0xf) : PTHREAD_MUTEX_NORMAL;
  if (type == PTHREAD_MUTEX_ADAPTIVE_NP)
    type = PTHREAD_MUTEX_NORMAL;
  memset(m, 0, sizeof *m);
  return swarm_mutex_init(M(m), type);
}
DROPIN_API int pthread_mutex_destroy(pthread_mutex_t *m) {
  return swarm_mutex_destroy(M(m));
}
DROPIN_API int pthread_mutex_lock(pthread_mutex_t *m) {
  return swarm_mutex_lock(M(m));
}
DROPIN_API int pthread_mutex_trylock(pthread_mutex_t *m) {
  return swarm_mutex_trylock(M(m));
}
DROPIN_API int pthread_mutex_unlock(pthread_mutex_t *m) {
  return swarm_mutex_unlock(M(m));
}
DROPIN_API int pthread_mutex_timedlock(pthread_mutex_t *m,
                                       const struct timespec *t) {
  return swarm_mutex_timedlock(M(m), CLOCK_REALTIME, t);
}
DROPIN_API int pthread_mutex_clocklock(pthread_mutex_t *m, clockid_t c,
                                       const struct timespec *t) {
  return swarm_mutex_timedlock(M(m), c, t);
}
DROPIN_API int pthread_mutex_consistent(pthread_mutex_t *m) {
  (void)m;
  return EINVAL; /* never robust */
}
DROPIN_API int pthread_mutex_getprioceiling(const pthread_mutex_t *m, int *c) {
  (void)m;
  (void)c;
  return EINVAL; /* never PTHREAD_PRIO_PROTECT */
}
DROPIN_API int pthread_mutex_setprioceiling(pthread_mutex_t *m, int c,
                                            int *old) {
  (void)m;
  (void)c;
  (void)old;
  return EINVAL;
}

/* ---- condition variables: clock in bit 0 (1 = monotonic) ---- */

DROPIN_API int pthread_condattr_init(pthread_condattr_t *a) {
  memset(a, 0, sizeof *a);
  *attr_word(a) = ATTR_SET;
  return 0;
}
DROPIN_API int pthread_condattr_destroy(pthread_condattr_t *a) {
  *attr_word(a) = 0;
  return 0;
}
DROPIN_API int pthread_condattr_setclock(pthread_condattr_t *a, clockid_t c) {
  if (c != CLOCK_REALTIME && c != CLOCK_MONOTONIC)
    return EINVAL;
  *attr_word(a) = ATTR_SET | (c == CLOCK_MONOTONIC);
  return 0;
}
DROPIN_API int pthread_condattr_getclock(const pthread_condattr_t *a,
                                         clockid_t *c) {
  *c = (*attr_word(a) & 1) ? CLOCK_MONOTONIC : CLOCK_REALTIME;
  return 0;
}
DROPIN_API int pthread_condattr_setpshared(pthread_condattr_t *a, int ps) {
  (void)a;
  if (ps == PTHREAD_PROCESS_PRIVATE)
    return 0;
  return ps == PTHREAD_PROCESS_SHARED ? ENOTSUP : EINVAL;
}
DROPIN_API int pthread_condattr_getpshared(const pthread_condattr_t *a,
                                           int *ps) {
  (void)a;
  *ps = PTHREAD_PROCESS_PRIVATE;
  return 0;
}

DROPIN_API int pthread_cond_init(pthread_cond_t *c,
                                 const pthread_condattr_t *a) {
  memset(c, 0, sizeof *c);
  return swarm_cond_init(C(c), a && (*attr_word(a) & 1) ? CLOCK_MONOTONIC
                                                        : CLOCK_REALTIME);
}
DROPIN_API int pthread_cond_destroy(pthread_cond_t *c) {
  return swarm_cond_destroy(C(c));
}
DROPIN_API int pthread_cond_signal(pthread_cond_t *c) {
  return swarm_cond_signal(C(c));
}
DROPIN_API int pthread_cond_broadcast(pthread_cond_t *c) {
  return swarm_cond_broadcast(C(c));
}

/* A cancellation point: a cancelled waiter owns the mutex again when its
 * cleanup handlers run, as POSIX requires. */
static int cond_wait(pthread_cond_t *c, pthread_mutex_t *m, int clock,
                     const struct timespec *t) {
  dropin_testcancel();
  int e = sync_cond_wait_x(C(c), M(m), clock, t, true);
  if (e == ECANCELED)
    dropin_act_cancel();
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
  return cond_wait(c, m, C(c)->clock_, t);
}
DROPIN_API int pthread_cond_clockwait(pthread_cond_t *c, pthread_mutex_t *m,
                                      clockid_t clock,
                                      const struct timespec *t) {
  if (time_missing(t))
    return EINVAL;
  return cond_wait(c, m, clock, t);
}

/* ---- rwlocks: kind in bits 0-3 ---- */

DROPIN_API int pthread_rwlockattr_init(pthread_rwlockattr_t *a) {
  memset(a, 0, sizeof *a);
  *attr_word(a) = ATTR_SET | PTHREAD_RWLOCK_PREFER_READER_NP;
  return 0;
}
DROPIN_API int pthread_rwlockattr_destroy(pthread_rwlockattr_t *a) {
  *attr_word(a) = 0;
  return 0;
}
DROPIN_API int pthread_rwlockattr_setkind_np(pthread_rwlockattr_t *a,
                                             int kind) {
  if (kind != PTHREAD_RWLOCK_PREFER_READER_NP &&
      kind != PTHREAD_RWLOCK_PREFER_WRITER_NP &&
      kind != PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP)
    return EINVAL;
  *attr_word(a) = ATTR_SET | (uint32_t)kind;
  return 0;
}
DROPIN_API int pthread_rwlockattr_getkind_np(const pthread_rwlockattr_t *a,
                                             int *kind) {
  *kind = (int)(*attr_word(a) & 0xf);
  return 0;
}
DROPIN_API int pthread_rwlockattr_setpshared(pthread_rwlockattr_t *a, int ps) {
  (void)a;
  if (ps == PTHREAD_PROCESS_PRIVATE)
    return 0;
  return ps == PTHREAD_PROCESS_SHARED ? ENOTSUP : EINVAL;
}
DROPIN_API int pthread_rwlockattr_getpshared(const pthread_rwlockattr_t *a,
                                             int *ps) {
  (void)a;
  *ps = PTHREAD_PROCESS_PRIVATE;
  return 0;
}

DROPIN_API int pthread_rwlock_init(pthread_rwlock_t *rw,
                                   const pthread_rwlockattr_t *a) {
  /* glibc's PREFER_WRITER_NP behaves as PREFER_READER; so does ours. */
  int kind =
      a && (*attr_word(a) & 0xf) == PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP
          ? SWARM_RWLOCK_PREFER_WRITER
          : SWARM_RWLOCK_PREFER_READER;
  memset(rw, 0, sizeof *rw);
  return swarm_rwlock_init(RW(rw), kind);
}
DROPIN_API int pthread_rwlock_destroy(pthread_rwlock_t *rw) {
  return swarm_rwlock_destroy(RW(rw));
}
DROPIN_API int pthread_rwlock_rdlock(pthread_rwlock_t *rw) {
  return swarm_rwlock_rdlock(RW(rw));
}
DROPIN_API int pthread_rwlock_tryrdlock(pthread_rwlock_t *rw) {
  return swarm_rwlock_tryrdlock(RW(rw));
}
DROPIN_API int pthread_rwlock_timedrdlock(pthread_rwlock_t *rw,
                                          const struct timespec *t) {
  return swarm_rwlock_timedrdlock(RW(rw), CLOCK_REALTIME, t);
}
DROPIN_API int pthread_rwlock_clockrdlock(pthread_rwlock_t *rw, clockid_t c,
                                          const struct timespec *t) {
  return swarm_rwlock_timedrdlock(RW(rw), c, t);
}
DROPIN_API int pthread_rwlock_wrlock(pthread_rwlock_t *rw) {
  return swarm_rwlock_wrlock(RW(rw));
}
DROPIN_API int pthread_rwlock_trywrlock(pthread_rwlock_t *rw) {
  return swarm_rwlock_trywrlock(RW(rw));
}
DROPIN_API int pthread_rwlock_timedwrlock(pthread_rwlock_t *rw,
                                          const struct timespec *t) {
  return swarm_rwlock_timedwrlock(RW(rw), CLOCK_REALTIME, t);
}
DROPIN_API int pthread_rwlock_clockwrlock(pthread_rwlock_t *rw, clockid_t c,
                                          const struct timespec *t) {
  return swarm_rwlock_timedwrlock(RW(rw), c, t);
}
DROPIN_API int pthread_rwlock_unlock(pthread_rwlock_t *rw) {
  return swarm_rwlock_unlock(RW(rw));
}

/* ---- barriers ---- */

DROPIN_API int pthread_barrierattr_init(pthread_barrierattr_t *a) {
  memset(a, 0, sizeof *a);
  *attr_word(a) = ATTR_SET;
  return 0;
}
DROPIN_API int pthread_barrierattr_destroy(pthread_barrierattr_t *a) {
  *attr_word(a) = 0;
  return 0;
}
DROPIN_API int pthread_barrierattr_setpshared(pthread_barrierattr_t *a,
                                              int ps) {
  (void)a;
  if (ps == PTHREAD_PROCESS_PRIVATE)
    return 0;
  return ps == PTHREAD_PROCESS_SHARED ? ENOTSUP : EINVAL;
}
DROPIN_API int pthread_barrierattr_getpshared(const pthread_barrierattr_t *a,
                                              int *ps) {
  (void)a;
  *ps = PTHREAD_PROCESS_PRIVATE;
  return 0;
}
DROPIN_API int pthread_barrier_init(pthread_barrier_t *b,
                                    const pthread_barrierattr_t *a,
                                    unsigned count) {
  (void)a;
  memset(b, 0, sizeof *b);
  return swarm_barrier_init(B(b), count);
}
DROPIN_API int pthread_barrier_destroy(pthread_barrier_t *b) {
  return swarm_barrier_destroy(B(b));
}
DROPIN_API int pthread_barrier_wait(pthread_barrier_t *b) {
  return swarm_barrier_wait(B(b)); /* SERIAL is -1 in both */
}

/* ---- spinlocks: a test-and-set word; a waiter yields its worker so a
 * holder queued on the same worker can run and let go ---- */

DROPIN_API int pthread_spin_init(pthread_spinlock_t *l, int pshared) {
  if (pshared != PTHREAD_PROCESS_PRIVATE && pshared != PTHREAD_PROCESS_SHARED)
    return EINVAL;
  __atomic_store_n(l, 0, __ATOMIC_RELEASE);
  return 0;
}
DROPIN_API int pthread_spin_destroy(pthread_spinlock_t *l) {
  (void)l;
  return 0;
}
DROPIN_API int pthread_spin_lock(pthread_spinlock_t *l) {
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
  return __atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE) ? EBUSY : 0;
}
DROPIN_API int pthread_spin_unlock(pthread_spinlock_t *l) {
  __atomic_store_n(l, 0, __ATOMIC_RELEASE);
  return 0;
}

/* ---- keys ---- */

DROPIN_API int pthread_key_create(pthread_key_t *k, void (*d)(void *)) {
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
  if (pshared)
    return libc_sem_init(s, pshared, value);
  if (value > SEM_VALUE_MAX)
    return dropin_fail(EINVAL);
  memset(s, 0, sizeof *s);
  int e = swarm_sem_init(S(s), value);
  return e ? dropin_fail(e) : 0;
}
DROPIN_API int sem_destroy(sem_t *s) {
  if (!sync_sem_is_ours(s))
    return libc_sem_destroy(s);
  int e = swarm_sem_destroy(S(s));
  return e ? dropin_fail(e) : 0;
}
static int sem_wait_common(sem_t *s, uint64_t deadline) {
  dropin_testcancel();
  int e = sync_sem_wait_x(S(s), deadline, true);
  if (e == ECANCELED)
    dropin_act_cancel();
  return e ? dropin_fail(e) : 0;
}
DROPIN_API int sem_wait(sem_t *s) {
  if (!sync_sem_is_ours(s))
    return libc_sem_wait(s);
  return sem_wait_common(s, 0);
}
DROPIN_API int sem_trywait(sem_t *s) {
  if (!sync_sem_is_ours(s))
    return libc_sem_trywait(s);
  int e = swarm_sem_trywait(S(s));
  return e ? dropin_fail(e) : 0;
}
static int sem_timed(sem_t *s, int clock, const struct timespec *t) {
  if (swarm_sem_trywait(S(s)) == 0)
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
  if (!sync_sem_is_ours(s))
    return libc_sem_timedwait(s, t);
  return sem_timed(s, CLOCK_REALTIME, t);
}
DROPIN_API int sem_clockwait(sem_t *s, clockid_t c, const struct timespec *t) {
  if (!sync_sem_is_ours(s))
    return libc_sem_clockwait(s, c, t);
  return sem_timed(s, c, t);
}
DROPIN_API int sem_post(sem_t *s) {
  if (!sync_sem_is_ours(s))
    return libc_sem_post(s);
  int e = swarm_sem_post(S(s));
  return e ? dropin_fail(e) : 0;
}
DROPIN_API int sem_getvalue(sem_t *s, int *v) {
  if (!sync_sem_is_ours(s))
    return libc_sem_getvalue(s, v);
  int e = swarm_sem_getvalue(S(s), v);
  return e ? dropin_fail(e) : 0;
}
