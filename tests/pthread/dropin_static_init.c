/* Objects initialised only statically (glibc's initialisers, including the
 * non-zero recursive / error-checking / writer-preferring ones) and objects
 * initialised with attributes; their semantics and error codes as NPTL's. */
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>

#include "dropin_check.h"

static pthread_mutex_t plain = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t rec = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static pthread_mutex_t chk = PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP;
static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
static pthread_rwlock_t rww = PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static int once_runs;
static void once_fn(void) {
  once_runs++;
}
static long shared;

static void *worker(void *a) {
  (void)a;
  pthread_once(&once, once_fn);
  for (int i = 0; i < 10000; i++) {
    pthread_mutex_lock(&rec);
    pthread_mutex_lock(&rec);
    shared++;
    pthread_mutex_unlock(&rec);
    pthread_mutex_unlock(&rec);
  }
  CHECK(pthread_mutex_unlock(&chk) == EPERM); /* main holds it */
  return NULL;
}

int main(void) {
  report_on_swarm();
  CHECK(pthread_mutex_lock(&chk) == 0);
  CHECK(pthread_mutex_lock(&chk) == EDEADLK);
  pthread_t t[8];
  for (int i = 0; i < 8; i++)
    CHECK(pthread_create(&t[i], NULL, worker, NULL) == 0);
  for (int i = 0; i < 8; i++)
    CHECK(pthread_join(t[i], NULL) == 0);
  CHECK(shared == 80000 && once_runs == 1);
  CHECK(pthread_mutex_unlock(&chk) == 0);
  CHECK(pthread_mutex_trylock(&plain) == 0);
  CHECK(pthread_mutex_trylock(&plain) == EBUSY);
  CHECK(pthread_mutex_unlock(&plain) == 0);
  CHECK(pthread_rwlock_rdlock(&rw) == 0 && pthread_rwlock_rdlock(&rw) == 0);
  CHECK(pthread_rwlock_trywrlock(&rw) == EBUSY);
  CHECK(pthread_rwlock_unlock(&rw) == 0 && pthread_rwlock_unlock(&rw) == 0);
  CHECK(pthread_rwlock_wrlock(&rww) == 0);
  CHECK(pthread_rwlock_wrlock(&rww) == EDEADLK);
  CHECK(pthread_rwlock_unlock(&rww) == 0);

  pthread_mutexattr_t ma;
  pthread_mutexattr_init(&ma);
  CHECK(pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_RECURSIVE) == 0);
  CHECK(pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED) == 0);
  pthread_mutex_t dyn;
  CHECK(pthread_mutex_init(&dyn, &ma) == 0);
  CHECK(pthread_mutex_lock(&dyn) == 0 && pthread_mutex_lock(&dyn) == 0);
  CHECK(pthread_mutex_destroy(&dyn) == EBUSY);
  CHECK(pthread_mutex_unlock(&dyn) == 0 && pthread_mutex_unlock(&dyn) == 0);
  CHECK(pthread_mutex_destroy(&dyn) == 0);

  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  CHECK(pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) == 0);
  pthread_cond_t cv;
  CHECK(pthread_cond_init(&cv, &ca) == 0);
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  ts.tv_nsec += 20000000;
  if (ts.tv_nsec >= 1000000000) {
    ts.tv_sec++;
    ts.tv_nsec -= 1000000000;
  }
  pthread_mutex_lock(&plain);
  CHECK(pthread_cond_timedwait(&cv, &plain, &ts) == ETIMEDOUT);
  pthread_mutex_unlock(&plain);

  sem_t s;
  CHECK(sem_init(&s, 0, 1) == 0);
  CHECK(sem_trywait(&s) == 0);
  CHECK(sem_trywait(&s) == -1 && errno == EAGAIN);
  CHECK(sem_post(&s) == 0);
  int v;
  CHECK(sem_getvalue(&s, &v) == 0 && v == 1);
  CHECK(sem_destroy(&s) == 0);

  pthread_spinlock_t sl;
  CHECK(pthread_spin_init(&sl, PTHREAD_PROCESS_PRIVATE) == 0);
  CHECK(pthread_spin_lock(&sl) == 0);
  CHECK(pthread_spin_trylock(&sl) == EBUSY);
  CHECK(pthread_spin_unlock(&sl) == 0);
  printf("OK static_init\n");
  return 0;
}
