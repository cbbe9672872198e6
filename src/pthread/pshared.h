/*
 * pthread/pshared.h — the drop-in's futex-word objects (pshared.c), used
 * where swarm's own objects cannot serve: mutexes that are process-shared,
 * robust or have a priority protocol, and process-shared condition
 * variables, rwlocks, barriers and semaphores. objects.c tells them apart
 * by a mark each object carries and hands them here.
 */
#ifndef SWARM_PTHREAD_PSHARED_H
#define SWARM_PTHREAD_PSHARED_H

#include "pthread/dropin.h"

/* glibc's own bits in a mutex's kind word (pthreadP.h), so the kind reads
 * the same in both: robust, priority inheritance / protection, shared. */
#define PSH_KIND_TYPE 0x0f
#define PSH_KIND_ROBUST 0x10
#define PSH_KIND_PRIO_INHERIT 0x20
#define PSH_KIND_PRIO_PROTECT 0x40
#define PSH_KIND_PSHARED 0x80
#define PSH_KIND_FUTEX                                                         \
  (PSH_KIND_ROBUST | PSH_KIND_PRIO_INHERIT | PSH_KIND_PRIO_PROTECT |           \
   PSH_KIND_PSHARED)

/* A mutex whose kind word (at glibc's offset, 16) has any of these bits (a
 * destroyed one, -1, has all) is a futex-word mutex. */
static inline bool psh_mutex_is_futex(const pthread_mutex_t *m) {
  int32_t kind;
  __builtin_memcpy(&kind, (const char *)m + 16, sizeof kind);
  return (kind & PSH_KIND_FUTEX) != 0;
}
/* kind: type | PSH_KIND_* bits; ceiling: the priority ceiling recorded. */
int psh_mutex_init(pthread_mutex_t *m, int kind, int ceiling);
int psh_mutex_destroy(pthread_mutex_t *m);
/* try: EBUSY instead of waiting; deadline: monotonic ns, 0 for none;
 * expired: the deadline was already past. */
int psh_mutex_lock(pthread_mutex_t *m, bool try, uint64_t deadline,
                   bool expired);
int psh_mutex_unlock(pthread_mutex_t *m);
int psh_mutex_consistent(pthread_mutex_t *m);
int psh_mutex_getprioceiling(const pthread_mutex_t *m, int *ceiling);
int psh_mutex_setprioceiling(pthread_mutex_t *m, int ceiling, int *old);

bool psh_cond_is_ours(const pthread_cond_t *c);
int psh_cond_init(pthread_cond_t *c, clockid_t clock);
int psh_cond_destroy(pthread_cond_t *c);
int psh_cond_wake(pthread_cond_t *c, bool all);
int psh_cond_clock(const pthread_cond_t *c);
/* A cancellation point; the mutex is any of the drop-in's. */
int psh_cond_wait(pthread_cond_t *c, pthread_mutex_t *m, uint64_t deadline);
/* A process-private (swarm) condition variable waited on with a futex-word
 * mutex; its signal and broadcast must also wake these waiters. */
int psh_private_cond_wait(pthread_cond_t *c, pthread_mutex_t *m,
                          uint64_t deadline);
bool psh_private_cond_waited(pthread_cond_t *c);
void psh_private_cond_wake(pthread_cond_t *c, bool all);

bool psh_rwlock_is_ours(const pthread_rwlock_t *rw);
int psh_rwlock_init(pthread_rwlock_t *rw);
int psh_rwlock_destroy(pthread_rwlock_t *rw);
int psh_rwlock_lock(pthread_rwlock_t *rw, bool writer, bool try,
                    uint64_t deadline, bool expired);
int psh_rwlock_unlock(pthread_rwlock_t *rw);

bool psh_barrier_is_ours(const pthread_barrier_t *b);
int psh_barrier_init(pthread_barrier_t *b, unsigned count);
int psh_barrier_destroy(pthread_barrier_t *b);
int psh_barrier_wait(pthread_barrier_t *b);

/* NPTL's semaphores (process-shared and named): glibc's object and code,
 * but a swarm thread waits in slices and lets its worker run others in
 * between. -1 with errno as sem_wait; deadline as above. */
int psh_sem_wait(sem_t *s, uint64_t deadline, bool timed);

#endif
