/* Process-shared objects (issue 16 item 4): mutexes (normal, recursive,
 * error-checking, robust), condition variables, rwlocks, barriers and
 * semaphores made with PTHREAD_PROCESS_SHARED work between the threads of
 * one process and between processes through shared memory; a robust mutex
 * whose owner process dies, or whose owner thread ends, gives EOWNERDEAD
 * to the next locker, and ENOTRECOVERABLE once unlocked without
 * pthread_mutex_consistent. A process-private condition variable works
 * with such a mutex too. Attributes report back what was set. Passes with
 * NPTL alone too. */
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdbool.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "dropin_check.h"

enum { PROCS = 3, THREADS = 4, ROUNDS = 2000 };

struct shared {
  pthread_mutex_t m;   /* normal, pshared */
  pthread_mutex_t rec; /* recursive, pshared */
  pthread_mutex_t robust;
  pthread_cond_t c;
  pthread_rwlock_t rw;
  pthread_barrier_t b;
  sem_t sem;
  long counter;     /* under m */
  long rec_counter; /* under rec */
  long rw_value;    /* under rw (written), read under it */
  int ready;        /* under m, signalled on c */
  long sem_posts;
};
static struct shared *sh;

static void init_shared(void) {
  sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE,
            MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  CHECK(sh != MAP_FAILED);
  pthread_mutexattr_t ma;
  CHECK_EQ(pthread_mutexattr_init(&ma), 0);
  CHECK_EQ(pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED), 0);
  CHECK_EQ(pthread_mutex_init(&sh->m, &ma), 0);
  CHECK_EQ(pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_RECURSIVE), 0);
  CHECK_EQ(pthread_mutex_init(&sh->rec, &ma), 0);
  CHECK_EQ(pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_ERRORCHECK), 0);
  CHECK_EQ(pthread_mutexattr_setrobust(&ma, PTHREAD_MUTEX_ROBUST), 0);
  CHECK_EQ(pthread_mutex_init(&sh->robust, &ma), 0);
  CHECK_EQ(pthread_mutexattr_destroy(&ma), 0);
  pthread_condattr_t ca;
  CHECK_EQ(pthread_condattr_init(&ca), 0);
  CHECK_EQ(pthread_condattr_setpshared(&ca, PTHREAD_PROCESS_SHARED), 0);
  CHECK_EQ(pthread_condattr_setclock(&ca, CLOCK_MONOTONIC), 0);
  CHECK_EQ(pthread_cond_init(&sh->c, &ca), 0);
  pthread_condattr_destroy(&ca);
  pthread_rwlockattr_t ra;
  CHECK_EQ(pthread_rwlockattr_init(&ra), 0);
  CHECK_EQ(pthread_rwlockattr_setpshared(&ra, PTHREAD_PROCESS_SHARED), 0);
  CHECK_EQ(pthread_rwlock_init(&sh->rw, &ra), 0);
  pthread_rwlockattr_destroy(&ra);
  pthread_barrierattr_t ba;
  CHECK_EQ(pthread_barrierattr_init(&ba), 0);
  CHECK_EQ(pthread_barrierattr_setpshared(&ba, PTHREAD_PROCESS_SHARED), 0);
  CHECK_EQ(pthread_barrier_init(&sh->b, &ba, PROCS * THREADS), 0);
  pthread_barrierattr_destroy(&ba);
  CHECK_EQ(sem_init(&sh->sem, 1, 0), 0);
}

/* Every attribute reports back what was set. */
static void attributes(void) {
  pthread_mutexattr_t ma;
  int v;
  CHECK_EQ(pthread_mutexattr_init(&ma), 0);
  CHECK_EQ(pthread_mutexattr_getpshared(&ma, &v), 0);
  CHECK_EQ(v, PTHREAD_PROCESS_PRIVATE);
  CHECK_EQ(pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED), 0);
  CHECK_EQ(pthread_mutexattr_setrobust(&ma, PTHREAD_MUTEX_ROBUST), 0);
  CHECK_EQ(pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_ERRORCHECK), 0);
  CHECK_EQ(pthread_mutexattr_getpshared(&ma, &v), 0);
  CHECK_EQ(v, PTHREAD_PROCESS_SHARED);
  CHECK_EQ(pthread_mutexattr_getrobust(&ma, &v), 0);
  CHECK_EQ(v, PTHREAD_MUTEX_ROBUST);
  CHECK_EQ(pthread_mutexattr_gettype(&ma, &v), 0);
  CHECK_EQ(v, PTHREAD_MUTEX_ERRORCHECK);
  pthread_mutexattr_destroy(&ma);
  pthread_condattr_t ca;
  CHECK_EQ(pthread_condattr_init(&ca), 0);
  CHECK_EQ(pthread_condattr_setpshared(&ca, PTHREAD_PROCESS_SHARED), 0);
  CHECK_EQ(pthread_condattr_getpshared(&ca, &v), 0);
  CHECK_EQ(v, PTHREAD_PROCESS_SHARED);
  pthread_condattr_destroy(&ca);
  pthread_rwlockattr_t ra;
  CHECK_EQ(pthread_rwlockattr_init(&ra), 0);
  CHECK_EQ(pthread_rwlockattr_setpshared(&ra, PTHREAD_PROCESS_SHARED), 0);
  CHECK_EQ(pthread_rwlockattr_getpshared(&ra, &v), 0);
  CHECK_EQ(v, PTHREAD_PROCESS_SHARED);
  pthread_rwlockattr_destroy(&ra);
  pthread_barrierattr_t ba;
  CHECK_EQ(pthread_barrierattr_init(&ba), 0);
  CHECK_EQ(pthread_barrierattr_setpshared(&ba, PTHREAD_PROCESS_SHARED), 0);
  CHECK_EQ(pthread_barrierattr_getpshared(&ba, &v), 0);
  CHECK_EQ(v, PTHREAD_PROCESS_SHARED);
  pthread_barrierattr_destroy(&ba);
}

/* Each thread of each process: barrier, then counters under the mutexes,
 * rwlock writes and reads, semaphore posts; barrier again. */
static void *worker(void *arg) {
  (void)arg;
  int r = pthread_barrier_wait(&sh->b);
  CHECK(r == 0 || r == PTHREAD_BARRIER_SERIAL_THREAD);
  for (int i = 0; i < ROUNDS; i++) {
    CHECK_EQ(pthread_mutex_lock(&sh->m), 0);
    sh->counter++;
    CHECK_EQ(pthread_mutex_unlock(&sh->m), 0);
    CHECK_EQ(pthread_mutex_lock(&sh->rec), 0);
    CHECK_EQ(pthread_mutex_lock(&sh->rec), 0);
    sh->rec_counter++;
    CHECK_EQ(pthread_mutex_unlock(&sh->rec), 0);
    CHECK_EQ(pthread_mutex_unlock(&sh->rec), 0);
    if (i % 8 == 0) {
      CHECK_EQ(pthread_rwlock_wrlock(&sh->rw), 0);
      long v = sh->rw_value;
      sh->rw_value = v + 1;
      CHECK_EQ(pthread_rwlock_unlock(&sh->rw), 0);
    } else {
      CHECK_EQ(pthread_rwlock_rdlock(&sh->rw), 0);
      CHECK(sh->rw_value >= 0);
      CHECK_EQ(pthread_rwlock_unlock(&sh->rw), 0);
    }
    if (i % 100 == 0)
      CHECK_EQ(sem_post(&sh->sem), 0);
  }
  r = pthread_barrier_wait(&sh->b);
  CHECK(r == 0 || r == PTHREAD_BARRIER_SERIAL_THREAD);
  return NULL;
}

static void run_threads(void) {
  pthread_t t[THREADS];
  for (int i = 0; i < THREADS; i++)
    CHECK_EQ(pthread_create(&t[i], NULL, worker, NULL), 0);
  for (int i = 0; i < THREADS; i++)
    CHECK_EQ(pthread_join(t[i], NULL), 0);
}

/* A child waits on the condition variable for the parent's go, then works. */
static void child(void) {
  CHECK_EQ(pthread_mutex_lock(&sh->m), 0);
  while (!sh->ready)
    CHECK_EQ(pthread_cond_wait(&sh->c, &sh->m), 0);
  CHECK_EQ(pthread_mutex_unlock(&sh->m), 0);
  run_threads();
  _exit(0);
}

static void across_processes(void) {
  pid_t pids[PROCS - 1];
  for (int p = 0; p < PROCS - 1; p++) {
    pids[p] = fork();
    CHECK(pids[p] >= 0);
    if (pids[p] == 0)
      child();
  }
  usleep(20 * 1000); /* let the children wait on c (a late one sees ready) */
  CHECK_EQ(pthread_mutex_lock(&sh->m), 0);
  sh->ready = 1;
  CHECK_EQ(pthread_cond_broadcast(&sh->c), 0);
  CHECK_EQ(pthread_mutex_unlock(&sh->m), 0);
  run_threads();
  long expect_posts = (long)PROCS * THREADS * ((ROUNDS + 99) / 100);
  for (long i = 0; i < expect_posts; i++)
    while (sem_wait(&sh->sem) != 0)
      CHECK_EQ(errno, EINTR);
  for (int p = 0; p < PROCS - 1; p++) {
    int st;
    CHECK_EQ(waitpid(pids[p], &st, 0), pids[p]);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %#x", st);
  }
  CHECK_EQ(sh->counter, (long)PROCS * THREADS * ROUNDS);
  CHECK_EQ(sh->rec_counter, (long)PROCS * THREADS * ROUNDS);
  CHECK_EQ(sh->rw_value, (long)PROCS * THREADS * ((ROUNDS + 7) / 8));
  CHECK_EQ(sem_trywait(&sh->sem), -1);
  CHECK_EQ(errno, EAGAIN);
}

/* The error-checking robust mutex: relock, foreign unlock. */
static void *foreign_unlock(void *arg) {
  (void)arg;
  return (void *)(long)pthread_mutex_unlock(&sh->robust);
}
static void errorcheck(void) {
  CHECK_EQ(pthread_mutex_lock(&sh->robust), 0);
  CHECK_EQ(pthread_mutex_lock(&sh->robust), EDEADLK);
  CHECK_EQ(pthread_mutex_trylock(&sh->robust), EDEADLK); /* NPTL: robust */
  pthread_t t;
  void *r;
  CHECK_EQ(pthread_create(&t, NULL, foreign_unlock, NULL), 0);
  CHECK_EQ(pthread_join(t, &r), 0);
  CHECK_EQ((long)r, EPERM);
  CHECK_EQ(pthread_mutex_consistent(&sh->robust), EINVAL); /* consistent */
  CHECK_EQ(pthread_mutex_unlock(&sh->robust), 0);
  CHECK_EQ(pthread_mutex_unlock(&sh->robust), EPERM);
}

/* A process that dies holding the robust mutex: the next locker gets
 * EOWNERDEAD; made consistent it is a mutex like before. */
static void owner_process_dies(bool make_consistent) {
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    if (pthread_mutex_lock(&sh->robust) != 0)
      _exit(2);
    _exit(0); /* dies holding it */
  }
  int st;
  CHECK_EQ(waitpid(pid, &st, 0), pid);
  CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %#x", st);
  CHECK_EQ(pthread_mutex_lock(&sh->robust), EOWNERDEAD);
  if (make_consistent) {
    CHECK_EQ(pthread_mutex_consistent(&sh->robust), 0);
    CHECK_EQ(pthread_mutex_unlock(&sh->robust), 0);
    CHECK_EQ(pthread_mutex_lock(&sh->robust), 0);
    CHECK_EQ(pthread_mutex_unlock(&sh->robust), 0);
  } else {
    CHECK_EQ(pthread_mutex_unlock(&sh->robust), 0);
    CHECK_EQ(pthread_mutex_lock(&sh->robust), ENOTRECOVERABLE);
    CHECK_EQ(pthread_mutex_trylock(&sh->robust), ENOTRECOVERABLE);
  }
}

/* A thread that ends holding a (process-private) robust mutex. */
static pthread_mutex_t private_robust;
static void *lock_and_end(void *arg) {
  (void)arg;
  return (void *)(long)pthread_mutex_lock(&private_robust);
}
static void owner_thread_ends(void) {
  pthread_mutexattr_t ma;
  pthread_mutexattr_init(&ma);
  CHECK_EQ(pthread_mutexattr_setrobust(&ma, PTHREAD_MUTEX_ROBUST), 0);
  CHECK_EQ(pthread_mutex_init(&private_robust, &ma), 0);
  pthread_mutexattr_destroy(&ma);
  pthread_t t;
  void *r;
  CHECK_EQ(pthread_create(&t, NULL, lock_and_end, NULL), 0);
  CHECK_EQ(pthread_join(t, &r), 0);
  CHECK_EQ((long)r, 0);
  CHECK_EQ(pthread_mutex_lock(&private_robust), EOWNERDEAD);
  CHECK_EQ(pthread_mutex_consistent(&private_robust), 0);
  CHECK_EQ(pthread_mutex_unlock(&private_robust), 0);
  CHECK_EQ(pthread_mutex_destroy(&private_robust), 0);
}

/* A process-private condition variable with a robust (futex-word) mutex:
 * turns passed by broadcast and by signal, and a timed wait that times
 * out holding the mutex. */
static pthread_mutex_t turn_m;
static pthread_cond_t turn_c = PTHREAD_COND_INITIALIZER;
static int turn, served;
static void *take_turns(void *arg) {
  int me = (int)(long)arg;
  for (int round = 0; round < 50; round++) {
    CHECK_EQ(pthread_mutex_lock(&turn_m), 0);
    while (turn != round * 4 + me)
      CHECK_EQ(pthread_cond_wait(&turn_c, &turn_m), 0);
    turn++;
    served++;
    CHECK_EQ(pthread_cond_broadcast(&turn_c), 0);
    CHECK_EQ(pthread_mutex_unlock(&turn_m), 0);
  }
  return NULL;
}
static void private_cond_with_futex_mutex(void) {
  pthread_mutexattr_t ma;
  pthread_mutexattr_init(&ma);
  CHECK_EQ(pthread_mutexattr_setrobust(&ma, PTHREAD_MUTEX_ROBUST), 0);
  CHECK_EQ(pthread_mutex_init(&turn_m, &ma), 0);
  pthread_mutexattr_destroy(&ma);
  pthread_t t[4];
  for (long i = 0; i < 4; i++)
    CHECK_EQ(pthread_create(&t[i], NULL, take_turns, (void *)i), 0);
  for (int i = 0; i < 4; i++)
    CHECK_EQ(pthread_join(t[i], NULL), 0);
  CHECK_EQ(served, 200);
  struct timespec ts = test_time_in(CLOCK_REALTIME, 2000000);
  CHECK_EQ(pthread_mutex_lock(&turn_m), 0);
  CHECK_EQ(pthread_cond_timedwait(&turn_c, &turn_m, &ts), ETIMEDOUT);
  CHECK_EQ(pthread_mutex_unlock(&turn_m), 0); /* held again after it */
  CHECK_EQ(pthread_cond_destroy(&turn_c), 0);
  CHECK_EQ(pthread_mutex_destroy(&turn_m), 0);
}

int main(void) {
  report_on_swarm();
  attributes();
  init_shared();
  across_processes();
  errorcheck();
  owner_process_dies(true);
  owner_thread_ends();
  owner_process_dies(false);
  private_cond_with_futex_mutex();
  CHECK_EQ(pthread_cond_destroy(&sh->c), 0);
  CHECK_EQ(pthread_rwlock_destroy(&sh->rw), 0);
  CHECK_EQ(pthread_barrier_destroy(&sh->b), 0);
  CHECK_EQ(pthread_mutex_destroy(&sh->m), 0);
  CHECK_EQ(pthread_mutex_destroy(&sh->rec), 0);
  CHECK_EQ(sem_destroy(&sh->sem), 0);
  printf("OK\n");
  return 0;
}
