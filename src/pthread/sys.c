/*
 * pthread/sys.c — the real (NPTL / libc) functions the drop-in needs:
 * for the runtime underneath it (see sys_names.h) and for the cases the
 * drop-in hands back to NPTL (process-shared and named semaphores, kernel
 * threads that are not swarm threads, fork).
 *
 * Each is looked up once with dlsym(RTLD_NEXT, name): the next definition
 * after this library in the lookup order, i.e. glibc's, wherever that
 * glibc keeps it (libpthread.so.0 before 2.34, libc.so.6 since). Nothing
 * here depends on glibc's internal or versioned names. A missing function is
 * fatal and says which.
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "pthread/dropin.h"

static void *resolve(const char *name) {
  void *p = dlsym(RTLD_NEXT, name);
  if (!p) {
    static const char a[] = "swarm-pthread: cannot find the real ";
    os_write_stderr(a, sizeof a - 1);
    os_write_stderr(name, strlen(name));
    os_write_stderr("\n", 1);
    abort();
  }
  return p;
}

/* A lazily resolved pointer to the real `name`, typed like it. Racing
 * first calls store the same value. */
#define REAL(name)                                                             \
  static __typeof__(&name) real_##name(void) {                                 \
    static __typeof__(&name) p;                                                \
    __typeof__(&name) f = __atomic_load_n(&p, __ATOMIC_RELAXED);               \
    if (!f) {                                                                  \
      f = (__typeof__(&name))resolve(#name);                                   \
      __atomic_store_n(&p, f, __ATOMIC_RELAXED);                               \
    }                                                                          \
    return f;                                                                  \
  }

REAL(pthread_create)
REAL(pthread_join)
REAL(pthread_self)
REAL(pthread_mutex_lock)
REAL(pthread_mutex_unlock)
REAL(pthread_mutex_trylock)
REAL(pthread_once)
REAL(pthread_sigmask)
REAL(pthread_setaffinity_np)
REAL(pthread_getattr_np)
REAL(pthread_kill)
REAL(pthread_exit)
REAL(sched_yield)
REAL(nanosleep)
REAL(clock_nanosleep)
REAL(usleep)
REAL(sleep)
REAL(fork)
REAL(sem_init)
REAL(sem_destroy)
REAL(sem_wait)
REAL(sem_trywait)
REAL(sem_timedwait)
REAL(sem_clockwait)
REAL(sem_post)
REAL(sem_getvalue)
REAL(close)
REAL(write)
REAL(fcntl)
REAL(pipe)
REAL(read)

int swarm_sys_pthread_create(pthread_t *t, const pthread_attr_t *a,
                             void *(*fn)(void *), void *arg) {
  return real_pthread_create()(t, a, fn, arg);
}
int swarm_sys_pthread_join(pthread_t t, void **r) {
  return real_pthread_join()(t, r);
}
pthread_t swarm_sys_pthread_self(void) {
  return real_pthread_self()();
}
int swarm_sys_pthread_mutex_lock(pthread_mutex_t *m) {
  return real_pthread_mutex_lock()(m);
}
int swarm_sys_pthread_mutex_unlock(pthread_mutex_t *m) {
  return real_pthread_mutex_unlock()(m);
}
int swarm_sys_pthread_mutex_trylock(pthread_mutex_t *m) {
  return real_pthread_mutex_trylock()(m);
}
int swarm_sys_pthread_once(pthread_once_t *o, void (*fn)(void)) {
  return real_pthread_once()(o, fn);
}
int swarm_sys_pthread_sigmask(int how, const sigset_t *set, sigset_t *old) {
  return real_pthread_sigmask()(how, set, old);
}
int swarm_sys_pthread_setaffinity_np(pthread_t t, size_t n,
                                     const cpu_set_t *set) {
  return real_pthread_setaffinity_np()(t, n, set);
}
int swarm_sys_pthread_getattr_np(pthread_t t, pthread_attr_t *a) {
  return real_pthread_getattr_np()(t, a);
}
int swarm_sys_pthread_kill(pthread_t t, int sig) {
  return real_pthread_kill()(t, sig);
}
_Noreturn void swarm_sys_pthread_exit(void *v) {
  real_pthread_exit()(v);
  __builtin_unreachable();
}
int swarm_sys_sched_yield(void) {
  return real_sched_yield()();
}
int swarm_sys_nanosleep(const struct timespec *req, struct timespec *rem) {
  return real_nanosleep()(req, rem);
}
int swarm_sys_clock_nanosleep(clockid_t c, int flags,
                              const struct timespec *req,
                              struct timespec *rem) {
  return real_clock_nanosleep()(c, flags, req, rem);
}
int swarm_sys_usleep(useconds_t us) {
  return real_usleep()(us);
}
unsigned swarm_sys_sleep(unsigned s) {
  return real_sleep()(s);
}
pid_t swarm_sys_fork(void) {
  return real_fork()();
}
int swarm_sys_sem_init(sem_t *s, int pshared, unsigned v) {
  return real_sem_init()(s, pshared, v);
}
int swarm_sys_sem_destroy(sem_t *s) {
  return real_sem_destroy()(s);
}
int swarm_sys_sem_wait(sem_t *s) {
  return real_sem_wait()(s);
}
int swarm_sys_sem_trywait(sem_t *s) {
  return real_sem_trywait()(s);
}
int swarm_sys_sem_timedwait(sem_t *s, const struct timespec *t) {
  return real_sem_timedwait()(s, t);
}
int swarm_sys_sem_clockwait(sem_t *s, clockid_t c, const struct timespec *t) {
  return real_sem_clockwait()(s, c, t);
}
int swarm_sys_sem_post(sem_t *s) {
  return real_sem_post()(s);
}
int swarm_sys_sem_getvalue(sem_t *s, int *v) {
  return real_sem_getvalue()(s, v);
}
int swarm_sys_close(int fd) {
  return real_close()(fd);
}
ssize_t swarm_sys_write(int fd, const void *b, size_t n) {
  return real_write()(fd, b, n);
}
int swarm_sys_fcntl(int fd, int cmd, ...) {
  va_list ap;
  va_start(ap, cmd);
  long arg = va_arg(ap, long); /* int or pointer: both fit in a long */
  va_end(ap);
  return real_fcntl()(fd, cmd, arg);
}
int swarm_sys_pipe(int fds[2]) {
  return real_pipe()(fds);
}
ssize_t swarm_sys_read(int fd, void *b, size_t n) {
  return real_read()(fd, b, n); /* trace.c reads its spill file back */
}
