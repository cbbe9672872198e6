/* fork from a busy many-worker program (issue 16 item 5): 12 threads keep
 * locking, signalling, posting and waiting on their own objects while a
 * thread forks, again and again. Each child runs the pthread_atfork handlers in
 * POSIX's order (prepare handlers in reverse registration order, parent and
 * child handlers in registration order), creates threads, and uses every kind
 * of object it inherited: mutexes (the one the prepare handler took, and
 * others), recursive and error-checking ones, a condition variable, an
 * rwlock, a barrier, a semaphore, a spinlock, keys, once, and a
 * process-shared mutex and semaphore shared with the parent. The objects
 * the child uses are quiescent at the fork (no waiters): the prepare
 * handler holds the guarded one across it, and nobody else uses the rest
 * (NPTL's own child cannot unlock a write lock its forking thread took in
 * a prepare handler, nor use an rwlock whose waiters were queued at the
 * fork). Run with 4
 * workers (CTest); passes with NPTL alone too. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dropin_check.h"

enum { BUSY = 12, FORKS = 12, CHILD_THREADS = 6 };

static pthread_mutex_t guarded = PTHREAD_MUTEX_INITIALIZER; /* atfork */
static pthread_mutex_t rec = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static pthread_mutex_t chk = PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
static pthread_spinlock_t spin;
static sem_t sem;
static pthread_key_t key;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static long guarded_count; /* under guarded */
static atomic_int stop;

struct shared {
  pthread_mutex_t m; /* process-shared */
  sem_t sem;         /* process-shared */
  long children_done;
};
static struct shared *sh;

/* atfork handlers record their order in a string */
static char order[64];
static size_t order_len;
static void mark(char c) {
  if (order_len + 1 < sizeof order)
    order[order_len++] = c;
}
static void prepare1(void) {
  mark('a');
}
static void prepare2(void) {
  mark('b');
  pthread_mutex_lock(&guarded); /* nobody else holds them across the fork */
}
static void parent1(void) {
  mark('c');
}
static void parent2(void) {
  mark('d');
  pthread_mutex_unlock(&guarded);
}
static void child1(void) {
  mark('e');
}
static void child2(void) {
  mark('f');
  pthread_mutex_unlock(&guarded);
}

/* The busy threads' own objects: waited on at every fork instant, so the
 * child never touches them (docs/dropin.md: a swarm object whose waiters
 * were queued at the fork is not usable in the child). */
static pthread_mutex_t busy_m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t busy_cond = PTHREAD_COND_INITIALIZER;
static sem_t busy_sem;
static long busy_count;

static void *busy(void *arg) {
  long i = (long)arg;
  while (!atomic_load(&stop)) {
    pthread_mutex_lock(&busy_m);
    busy_count++;
    pthread_cond_broadcast(&busy_cond);
    pthread_mutex_unlock(&busy_m);
    if (i % 4 == 0) {
      sem_post(&busy_sem);
    } else if (i % 4 == 3) {
      struct timespec t;
      clock_gettime(CLOCK_REALTIME, &t);
      t.tv_sec += 1; /* signalled long before */
      pthread_mutex_lock(&busy_m);
      pthread_cond_timedwait(&busy_cond, &busy_m, &t);
      pthread_mutex_unlock(&busy_m);
    } else if (i % 4 == 1) {
      struct timespec t = test_time_in(CLOCK_REALTIME, 200000);
      sem_timedwait(&busy_sem, &t);
    }
    /* Every round sleeps: with one worker, threads that never leave it
     * idle would starve the forking thread (swarm does not preempt). */
    usleep(100);
  }
  return NULL;
}

static void once_fn(void) {}

static void *child_worker(void *arg) {
  pthread_barrier_t *b = arg;
  CHECK(pthread_getspecific(key) == NULL); /* a new thread: its own value */
  CHECK_EQ(pthread_setspecific(key, arg), 0);
  CHECK_EQ(pthread_mutex_lock(&guarded), 0);
  guarded_count++;
  CHECK_EQ(pthread_cond_signal(&cond), 0);
  CHECK_EQ(pthread_mutex_unlock(&guarded), 0);
  CHECK_EQ(pthread_rwlock_wrlock(&rw), 0);
  CHECK_EQ(pthread_rwlock_unlock(&rw), 0);
  CHECK_EQ(pthread_spin_lock(&spin), 0);
  CHECK_EQ(pthread_spin_unlock(&spin), 0);
  CHECK_EQ(pthread_mutex_lock(&sh->m), 0);
  CHECK_EQ(pthread_mutex_unlock(&sh->m), 0);
  int r = pthread_barrier_wait(b);
  CHECK(r == 0 || r == PTHREAD_BARRIER_SERIAL_THREAD);
  CHECK(pthread_getspecific(key) == arg);
  return NULL;
}

/* In the child: handlers ran in order, objects usable, threads work. */
static void child_main(void) {
  CHECK(strcmp(order, "baef") == 0, "child's atfork order \"%s\"", order);
  CHECK(pthread_getspecific(key) == &key); /* the forker's value */
  CHECK_EQ(pthread_mutex_lock(&rec), 0);
  CHECK_EQ(pthread_mutex_lock(&rec), 0);
  CHECK_EQ(pthread_mutex_unlock(&rec), 0);
  CHECK_EQ(pthread_mutex_unlock(&rec), 0);
  CHECK_EQ(pthread_mutex_lock(&chk), 0);
  CHECK_EQ(pthread_mutex_lock(&chk), EDEADLK);
  CHECK_EQ(pthread_mutex_unlock(&chk), 0);
  CHECK_EQ(pthread_once(&once, once_fn), 0);
  while (sem_trywait(&sem) == 0) { /* drain what the busy threads posted */
  }
  CHECK_EQ(sem_post(&sem), 0);
  CHECK_EQ(sem_wait(&sem), 0);
  pthread_barrier_t b;
  CHECK_EQ(pthread_barrier_init(&b, NULL, CHILD_THREADS + 1), 0);
  pthread_t t[CHILD_THREADS];
  for (int i = 0; i < CHILD_THREADS; i++)
    CHECK_EQ(pthread_create(&t[i], NULL, child_worker, &b), 0);
  int r = pthread_barrier_wait(&b);
  CHECK(r == 0 || r == PTHREAD_BARRIER_SERIAL_THREAD);
  for (int i = 0; i < CHILD_THREADS; i++)
    CHECK_EQ(pthread_join(t[i], NULL), 0);
  CHECK_EQ(pthread_barrier_destroy(&b), 0);
  CHECK_EQ(pthread_mutex_lock(&sh->m), 0);
  sh->children_done++;
  CHECK_EQ(pthread_mutex_unlock(&sh->m), 0);
  CHECK_EQ(sem_post(&sh->sem), 0);
  _exit(0);
}

static void *forker(void *arg) {
  (void)arg;
  CHECK_EQ(pthread_setspecific(key, &key), 0);
  for (int i = 0; i < FORKS; i++) {
    order_len = 0;
    memset(order, 0, sizeof order);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0)
      child_main();
    CHECK(strcmp(order, "bacd") == 0, "parent's atfork order \"%s\"", order);
    int st;
    CHECK_EQ(waitpid(pid, &st, 0), pid);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %#x", st);
  }
  return NULL;
}

int main(void) {
  report_on_swarm();
  sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE,
            MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  CHECK(sh != MAP_FAILED);
  pthread_mutexattr_t ma;
  pthread_mutexattr_init(&ma);
  CHECK_EQ(pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED), 0);
  CHECK_EQ(pthread_mutex_init(&sh->m, &ma), 0);
  pthread_mutexattr_destroy(&ma);
  CHECK_EQ(sem_init(&sh->sem, 1, 0), 0);
  CHECK_EQ(sem_init(&sem, 0, 0), 0);
  CHECK_EQ(sem_init(&busy_sem, 0, 0), 0);
  CHECK_EQ(pthread_spin_init(&spin, PTHREAD_PROCESS_PRIVATE), 0);
  CHECK_EQ(pthread_key_create(&key, NULL), 0);
  CHECK_EQ(pthread_atfork(prepare1, parent1, child1), 0);
  CHECK_EQ(pthread_atfork(prepare2, parent2, child2), 0);
  pthread_t b[BUSY], f;
  for (long i = 0; i < BUSY; i++)
    CHECK_EQ(pthread_create(&b[i], NULL, busy, (void *)i), 0);
  usleep(10000); /* let them get going */
  CHECK_EQ(pthread_create(&f, NULL, forker, NULL), 0);
  CHECK_EQ(pthread_join(f, NULL), 0);
  atomic_store(&stop, 1);
  for (int i = 0; i < BUSY; i++)
    CHECK_EQ(pthread_join(b[i], NULL), 0);
  for (int i = 0; i < FORKS; i++)
    CHECK_EQ(sem_trywait(&sh->sem), 0);
  CHECK_EQ(sh->children_done, FORKS);
  printf("%d children forked from %d busy threads\n", FORKS, BUSY);
  printf("OK\n");
  return 0;
}
