/* Misuse gets NPTL's answer, never a crash (issue 16 item 7): NULL and
 * destroyed attribute objects, destroyed mutexes, unlock by a non-owner,
 * relock of an error-checking mutex, destroy of a busy mutex, join and
 * detach of a thread created detached (also once it has ended), double
 * detach, self-join, bad attribute values, bad keys, bad timeouts.
 * Every expectation is what glibc 2.36's NPTL answers, so the program
 * passes with and without the drop-in; each mismatch is listed before the
 * program fails. */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <semaphore.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dropin_check.h"

static int failures;
#define EXPECT(expr, want)                                                     \
  do {                                                                         \
    long got_ = (long)(expr), want_ = (long)(want);                            \
    if (got_ != want_) {                                                       \
      fprintf(stderr, "%s:%d: %s: got %ld (%s), want %ld (%s)\n", __FILE__,    \
              __LINE__, #expr, got_, strerror((int)got_), want_,               \
              strerror((int)want_));                                           \
      failures++;                                                              \
    }                                                                          \
  } while (0)

static void null_attributes(void) {
  /* glibc's attribute destructors touch nothing; the NULL goes through a
   * volatile so the compiler neither warns nor assumes it away */
  void *volatile null = NULL;
  EXPECT(pthread_mutexattr_destroy(null), 0);
  EXPECT(pthread_condattr_destroy(null), 0);
  EXPECT(pthread_rwlockattr_destroy(null), 0);
  EXPECT(pthread_barrierattr_destroy(null), 0);
}

/* Where NPTL itself crashes (it writes through the NULL), the drop-in
 * answers EINVAL (or -1 and EINVAL): run on swarm only. */
static void null_objects(void) {
  void *volatile null = NULL;
  EXPECT(pthread_mutex_init(null, NULL), EINVAL);
  EXPECT(pthread_mutex_lock(null), EINVAL);
  EXPECT(pthread_mutex_trylock(null), EINVAL);
  EXPECT(pthread_mutex_unlock(null), EINVAL);
  EXPECT(pthread_mutex_destroy(null), EINVAL);
  EXPECT(pthread_cond_init(null, NULL), EINVAL);
  EXPECT(pthread_cond_signal(null), EINVAL);
  EXPECT(pthread_cond_broadcast(null), EINVAL);
  EXPECT(pthread_cond_destroy(null), EINVAL);
  pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
  pthread_cond_t c = PTHREAD_COND_INITIALIZER;
  EXPECT(pthread_mutex_lock(&m), 0);
  EXPECT(pthread_cond_wait(null, &m), EINVAL);
  EXPECT(pthread_cond_wait(&c, null), EINVAL);
  EXPECT(pthread_mutex_unlock(&m), 0);
  EXPECT(pthread_rwlock_init(null, NULL), EINVAL);
  EXPECT(pthread_rwlock_rdlock(null), EINVAL);
  EXPECT(pthread_rwlock_wrlock(null), EINVAL);
  EXPECT(pthread_rwlock_unlock(null), EINVAL);
  EXPECT(pthread_rwlock_destroy(null), EINVAL);
  EXPECT(pthread_barrier_init(null, NULL, 2), EINVAL);
  EXPECT(pthread_barrier_wait(null), EINVAL);
  EXPECT(pthread_barrier_destroy(null), EINVAL);
  EXPECT(pthread_spin_init(null, 0), EINVAL);
  EXPECT(pthread_spin_lock(null), EINVAL);
  EXPECT(pthread_mutexattr_init(null), EINVAL);
  EXPECT(pthread_key_create(null, NULL), EINVAL);
  void (*volatile no_fn)(void) = NULL;
  EXPECT(pthread_once(null, no_fn), EINVAL);
  EXPECT(pthread_join((pthread_t)0, NULL), ESRCH);
  EXPECT(pthread_detach((pthread_t)0), ESRCH);
  errno = 0;
  EXPECT(sem_post(null), -1);
  EXPECT(errno, EINVAL);
  EXPECT(sem_wait(null), -1);
  EXPECT(sem_trywait(null), -1);
  EXPECT(sem_destroy(null), -1);
  EXPECT(errno, EINVAL);
}

static void bad_attribute_values(void) {
  pthread_mutexattr_t ma;
  EXPECT(pthread_mutexattr_init(&ma), 0);
  EXPECT(pthread_mutexattr_settype(&ma, 99), EINVAL);
  EXPECT(pthread_mutexattr_settype(&ma, -1), EINVAL);
  EXPECT(pthread_mutexattr_setpshared(&ma, 7), EINVAL);
  EXPECT(pthread_mutexattr_setrobust(&ma, 7), EINVAL);
  EXPECT(pthread_mutexattr_setprotocol(&ma, 7), EINVAL);
  EXPECT(pthread_mutexattr_destroy(&ma), 0);
  pthread_condattr_t ca;
  EXPECT(pthread_condattr_init(&ca), 0);
  EXPECT(pthread_condattr_setclock(&ca, CLOCK_PROCESS_CPUTIME_ID), EINVAL);
  EXPECT(pthread_condattr_setclock(&ca, CLOCK_THREAD_CPUTIME_ID), EINVAL);
  EXPECT(pthread_condattr_setpshared(&ca, 7), EINVAL);
  EXPECT(pthread_condattr_destroy(&ca), 0);
  pthread_rwlockattr_t ra;
  EXPECT(pthread_rwlockattr_init(&ra), 0);
  EXPECT(pthread_rwlockattr_setkind_np(&ra, 99), EINVAL);
  EXPECT(pthread_rwlockattr_setpshared(&ra, 7), EINVAL);
  EXPECT(pthread_rwlockattr_destroy(&ra), 0);
  pthread_barrierattr_t ba;
  EXPECT(pthread_barrierattr_init(&ba), 0);
  EXPECT(pthread_barrierattr_setpshared(&ba, 7), EINVAL);
  EXPECT(pthread_barrierattr_destroy(&ba), 0);
  pthread_barrier_t b;
  EXPECT(pthread_barrier_init(&b, NULL, 0), EINVAL);
  pthread_attr_t ta;
  EXPECT(pthread_attr_init(&ta), 0);
  EXPECT(pthread_attr_setdetachstate(&ta, 7), EINVAL);
  EXPECT(pthread_attr_setstacksize(&ta, 1), EINVAL);
  EXPECT(pthread_attr_setscope(&ta, 7), EINVAL);
  EXPECT(pthread_attr_setscope(&ta, PTHREAD_SCOPE_PROCESS), ENOTSUP);
  EXPECT(pthread_attr_setinheritsched(&ta, 7), EINVAL);
  EXPECT(pthread_attr_setschedpolicy(&ta, 77), EINVAL);
  EXPECT(pthread_attr_destroy(&ta), 0);
  int old;
  EXPECT(pthread_setcancelstate(7, &old), EINVAL);
  EXPECT(pthread_setcanceltype(7, &old), EINVAL);
  EXPECT(pthread_setname_np(pthread_self(), "a-name-longer-than-15"), ERANGE);
  char small[4];
  EXPECT(pthread_getname_np(pthread_self(), small, sizeof small), ERANGE);
}

static void errorcheck_and_recursive(void) {
  pthread_mutexattr_t ma;
  pthread_mutex_t m;
  static const int types[] = {PTHREAD_MUTEX_ERRORCHECK,
                              PTHREAD_MUTEX_RECURSIVE};
  for (int i = 0; i < 2; i++) {
    EXPECT(pthread_mutexattr_init(&ma), 0);
    EXPECT(pthread_mutexattr_settype(&ma, types[i]), 0);
    EXPECT(pthread_mutex_init(&m, &ma), 0);
    EXPECT(pthread_mutexattr_destroy(&ma), 0);
    EXPECT(pthread_mutex_unlock(&m), EPERM); /* nobody holds it */
    EXPECT(pthread_mutex_lock(&m), 0);
    if (types[i] == PTHREAD_MUTEX_ERRORCHECK) {
      EXPECT(pthread_mutex_lock(&m), EDEADLK);
      EXPECT(pthread_mutex_trylock(&m), EBUSY);
    }
    EXPECT(pthread_mutex_destroy(&m), EBUSY); /* busy: still usable */
    EXPECT(pthread_mutex_unlock(&m), 0);
    EXPECT(pthread_mutex_unlock(&m), EPERM);
    EXPECT(pthread_mutex_destroy(&m), 0);
  }
}

static pthread_mutex_t held;
static void *unlock_foreign(void *arg) {
  (void)arg;
  return (void *)(long)pthread_mutex_unlock(&held);
}
static void *cond_wait_unheld(void *arg) {
  pthread_cond_t *c = arg;
  struct timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  t.tv_sec += 5;
  return (void *)(long)pthread_cond_timedwait(c, &held, &t);
}

/* A recursive or error-checking mutex held by main answers EPERM to another
 * thread's unlock and to its condition wait. */
static void foreign_unlock(void) {
  static const int types[] = {PTHREAD_MUTEX_ERRORCHECK,
                              PTHREAD_MUTEX_RECURSIVE};
  for (int i = 0; i < 2; i++) {
    pthread_mutexattr_t ma;
    pthread_mutexattr_init(&ma);
    pthread_mutexattr_settype(&ma, types[i]);
    EXPECT(pthread_mutex_init(&held, &ma), 0);
    pthread_mutexattr_destroy(&ma);
    EXPECT(pthread_mutex_lock(&held), 0);
    pthread_t t;
    void *r;
    EXPECT(pthread_create(&t, NULL, unlock_foreign, NULL), 0);
    EXPECT(pthread_join(t, &r), 0);
    EXPECT((long)r, EPERM);
    pthread_cond_t c = PTHREAD_COND_INITIALIZER;
    EXPECT(pthread_create(&t, NULL, cond_wait_unheld, &c), 0);
    EXPECT(pthread_join(t, &r), 0);
    EXPECT((long)r, EPERM);
    EXPECT(pthread_mutex_unlock(&held), 0);
    EXPECT(pthread_mutex_destroy(&held), 0);
    EXPECT(pthread_cond_destroy(&c), 0);
  }
}

/* glibc marks a destroyed mutex's kind invalid: every later call on it is
 * EINVAL, not a hang or a crash. A busy mutex refuses destruction. */
static void destroyed_mutex(void) {
  pthread_mutex_t m;
  EXPECT(pthread_mutex_init(&m, NULL), 0);
  EXPECT(pthread_mutex_lock(&m), 0);
  EXPECT(pthread_mutex_destroy(&m), EBUSY);
  EXPECT(pthread_mutex_unlock(&m), 0);
  EXPECT(pthread_mutex_destroy(&m), 0);
  EXPECT(pthread_mutex_lock(&m), EINVAL);
  EXPECT(pthread_mutex_trylock(&m), EINVAL);
  struct timespec t = {0, 0};
  EXPECT(pthread_mutex_timedlock(&m, &t), EINVAL);
  EXPECT(pthread_mutex_unlock(&m), EINVAL);
  EXPECT(pthread_mutex_init(&m, NULL), 0); /* re-initialised: usable */
  EXPECT(pthread_mutex_lock(&m), 0);
  EXPECT(pthread_mutex_unlock(&m), 0);
  EXPECT(pthread_mutex_destroy(&m), 0);
}

static void rwlocks_and_timeouts(void) {
  pthread_rwlock_t rw;
  EXPECT(pthread_rwlock_init(&rw, NULL), 0);
  EXPECT(pthread_rwlock_wrlock(&rw), 0);
  EXPECT(pthread_rwlock_wrlock(&rw), EDEADLK);
  EXPECT(pthread_rwlock_rdlock(&rw), EDEADLK);
  EXPECT(pthread_rwlock_trywrlock(&rw), EBUSY);
  EXPECT(pthread_rwlock_tryrdlock(&rw), EBUSY);
  EXPECT(pthread_rwlock_unlock(&rw), 0);
  EXPECT(pthread_rwlock_destroy(&rw), 0);
  pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
  EXPECT(pthread_mutex_unlock(&m), 0); /* a free normal mutex: NPTL says 0 */
  EXPECT(pthread_mutex_lock(&m), 0);
  struct timespec bad = {0, 2000000000L};
  EXPECT(pthread_mutex_timedlock(&m, &bad), EINVAL);
  EXPECT(pthread_mutex_unlock(&m), 0);
  sem_t s;
  errno = 0;
  EXPECT(sem_init(&s, 0, (unsigned)SEM_VALUE_MAX + 1u), -1);
  EXPECT(errno, EINVAL);
  EXPECT(sem_init(&s, 0, 0), 0);
  errno = 0;
  EXPECT(sem_timedwait(&s, &bad), -1);
  EXPECT(errno, EINVAL);
  errno = 0;
  EXPECT(sem_trywait(&s), -1);
  EXPECT(errno, EAGAIN);
  EXPECT(sem_destroy(&s), 0);
}

static void keys(void) {
  pthread_key_t k;
  EXPECT(pthread_key_create(&k, NULL), 0);
  EXPECT(pthread_key_delete(k), 0);
  EXPECT(pthread_key_delete(k), EINVAL);
  EXPECT(pthread_setspecific(k, &k), EINVAL);
  EXPECT(pthread_setspecific((pthread_key_t)PTHREAD_KEYS_MAX + 5, &k), EINVAL);
  EXPECT(pthread_key_delete((pthread_key_t)PTHREAD_KEYS_MAX + 5), EINVAL);
  CHECK(pthread_getspecific((pthread_key_t)PTHREAD_KEYS_MAX + 5) == NULL);
}

static sem_t detached_done;
static void *detached_body(void *arg) {
  (void)arg;
  sem_post(&detached_done);
  return NULL;
}
static void *joinable_body(void *arg) {
  return arg;
}

/* A thread created detached answers EINVAL to join and detach, while it
 * runs and once it has ended (NPTL keeps the descriptor). */
static void handles(void) {
  EXPECT(pthread_join(pthread_self(), NULL), EDEADLK);
  pthread_attr_t a;
  pthread_attr_init(&a);
  pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
  sem_init(&detached_done, 0, 0);
  pthread_t t;
  EXPECT(pthread_create(&t, &a, detached_body, NULL), 0);
  pthread_attr_destroy(&a);
  while (sem_wait(&detached_done) != 0) {
  }
  usleep(50 * 1000); /* let it finish exiting */
  EXPECT(pthread_join(t, NULL), EINVAL);
  EXPECT(pthread_detach(t), EINVAL);
  sem_destroy(&detached_done);
  /* detaching twice: the second answers EINVAL */
  EXPECT(pthread_create(&t, NULL, joinable_body, NULL), 0);
  EXPECT(pthread_detach(t), 0);
  EXPECT(pthread_detach(t), EINVAL);
  EXPECT(pthread_join(t, NULL), EINVAL);
  /* an ended joinable thread may still be detached or joined */
  EXPECT(pthread_create(&t, NULL, joinable_body, (void *)7L), 0);
  usleep(20 * 1000);
  void *r = NULL;
  EXPECT(pthread_join(t, &r), 0);
  EXPECT((long)r, 7);
}

int main(void) {
  report_on_swarm();
  null_attributes();
  if (dlsym(RTLD_DEFAULT, "swarm_self"))
    null_objects();
  bad_attribute_values();
  errorcheck_and_recursive();
  foreign_unlock();
  destroyed_mutex();
  rwlocks_and_timeouts();
  keys();
  handles();
  CHECK(failures == 0, "%d misuse answers differ from NPTL's", failures);
  printf("OK\n");
  return 0;
}
