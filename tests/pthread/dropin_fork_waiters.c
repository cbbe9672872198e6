/* fork while threads wait on objects (issue 16 item 5, issue 21): in the
 * child those waiters are ghosts, threads of the parent that never run
 * there, and no hand-off may go to one. The parent forks with a thread
 * queued on each of a mutex (held by main), a condition variable, a
 * semaphore, an rwlock (a writer and a reader, behind main's write lock)
 * and a barrier. The child's own threads then queue on each and must get
 * what main hands over: the mutex main unlocks, the signal, the post, the
 * write lock main releases; the barrier's round completes. Under an alarm:
 * a hand-off to a ghost hangs the child. On swarm only (NPTL's condition
 * variable can give the child's signal to the parent's waiter). */
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "dropin_check.h"

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t cm = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
static pthread_barrier_t ba;
static sem_t s;
static int waiting, go; /* under cm */
static volatile int started;

static void settle(void) {
  struct timespec t = {0, 20 * 1000000};
  while (!started)
    nanosleep(&t, NULL);
  nanosleep(&t, NULL); /* let it queue */
  started = 0;
}

static void *locker(void *arg) {
  (void)arg;
  started = 1;
  CHECK(pthread_mutex_lock(&m) == 0);
  CHECK(pthread_mutex_unlock(&m) == 0);
  return NULL;
}

static void *cond_waiter(void *arg) {
  (void)arg;
  CHECK(pthread_mutex_lock(&cm) == 0);
  waiting++;
  while (!go)
    CHECK(pthread_cond_wait(&c, &cm) == 0);
  waiting--;
  CHECK(pthread_mutex_unlock(&cm) == 0);
  return NULL;
}

static void *sem_waiter(void *arg) {
  (void)arg;
  started = 1;
  CHECK(sem_wait(&s) == 0);
  return NULL;
}

static void *writer(void *arg) {
  (void)arg;
  started = 1;
  CHECK(pthread_rwlock_wrlock(&rw) == 0);
  CHECK(pthread_rwlock_unlock(&rw) == 0);
  return NULL;
}

static void *reader(void *arg) {
  (void)arg;
  started = 1;
  CHECK(pthread_rwlock_rdlock(&rw) == 0);
  CHECK(pthread_rwlock_unlock(&rw) == 0);
  return NULL;
}

static void *barrier_waiter(void *arg) {
  (void)arg;
  started = 1;
  int r = pthread_barrier_wait(&ba);
  CHECK(r == 0 || r == PTHREAD_BARRIER_SERIAL_THREAD);
  return NULL;
}

/* With main holding m and rw (write), one thread queues on each object. */
static void queue_one_each(pthread_t t[6]) {
  CHECK(pthread_create(&t[0], NULL, locker, NULL) == 0);
  settle();
  CHECK(pthread_create(&t[1], NULL, cond_waiter, NULL) == 0);
  for (int queued = 0; !queued;) { /* waiting++ then the wait, under cm */
    CHECK(pthread_mutex_lock(&cm) == 0);
    queued = waiting > 0;
    CHECK(pthread_mutex_unlock(&cm) == 0);
    sched_yield();
  }
  CHECK(pthread_create(&t[2], NULL, sem_waiter, NULL) == 0);
  settle();
  CHECK(pthread_create(&t[3], NULL, writer, NULL) == 0);
  settle();
  CHECK(pthread_create(&t[4], NULL, reader, NULL) == 0);
  settle();
  CHECK(pthread_create(&t[5], NULL, barrier_waiter, NULL) == 0);
  settle();
}

/* Hands each object over, as the child and (for its own threads) the
 * parent do; joins t (NULL: the barrier thread is not main's partner). */
static void hand_over(pthread_t t[6]) {
  CHECK(pthread_mutex_unlock(&m) == 0);
  CHECK(pthread_mutex_lock(&cm) == 0);
  go = 1;
  CHECK(pthread_cond_signal(&c) == 0);
  CHECK(pthread_mutex_unlock(&cm) == 0);
  CHECK(sem_post(&s) == 0);
  CHECK(pthread_rwlock_unlock(&rw) == 0);
  int r = pthread_barrier_wait(&ba);
  CHECK(r == 0 || r == PTHREAD_BARRIER_SERIAL_THREAD);
  for (int i = 0; i < 6; i++)
    CHECK(pthread_join(t[i], NULL) == 0);
}

static void child(void) {
  alarm(20); /* a hand-off to a ghost hangs here */
  pthread_t t[6];
  /* The ghosts are still queued; the child's threads queue behind them.
   * Main still holds m and rw, as it did at the fork. */
  queue_one_each(t);
  hand_over(t);
  /* Everything is free and usable again. */
  CHECK(pthread_mutex_lock(&m) == 0 && pthread_mutex_unlock(&m) == 0);
  CHECK(pthread_rwlock_rdlock(&rw) == 0 && pthread_rwlock_unlock(&rw) == 0);
  CHECK(pthread_rwlock_wrlock(&rw) == 0 && pthread_rwlock_unlock(&rw) == 0);
  CHECK(sem_trywait(&s) == -1 && errno == EAGAIN);
  _exit(0);
}

int main(void) {
  report_on_swarm();
  alarm(60);
  CHECK(sem_init(&s, 0, 0) == 0);
  /* Two: a waiter and main. In the child the ghost counts as arrived (as
   * under NPTL), so main's first wait there ends a round at once. */
  CHECK(pthread_barrier_init(&ba, NULL, 2) == 0);
  pthread_t t[6];
  CHECK(pthread_mutex_lock(&m) == 0);
  CHECK(pthread_rwlock_wrlock(&rw) == 0);
  queue_one_each(t);
  pid_t p = fork();
  CHECK(p >= 0);
  if (p == 0) {
    /* The ghost's arrival completes a round with main alone. */
    CHECK(pthread_barrier_wait(&ba) == PTHREAD_BARRIER_SERIAL_THREAD);
    waiting = 0; /* the ghost's */
    child();
  }
  hand_over(t);
  int status;
  CHECK(waitpid(p, &status, 0) == p);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
        "child: status %#x (SIGALRM %d: a hand-off went to a ghost)", status,
        SIGALRM);
  printf("child handed a mutex, a signal, a post, a write lock and a barrier "
         "round past the parent's waiters\n");
  printf("OK\n");
  return 0;
}
