/* Signals on threads, as NPTL gives them (issue 16 item 1): pthread_kill
 * and pthread_sigqueue deliver on the target thread (pthread_self() in the
 * handler is the target) whether it computes, sleeps (nanosleep ends with
 * EINTR and a remaining time) or blocks the signal (pending until it
 * unblocks); a new thread inherits its creator's mask with an empty
 * pending set; sigwait takes a process-directed signal; a storm of signals
 * to several threads neither hangs nor loses the last one. Passes on NPTL
 * alone too. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dropin_check.h"

static _Atomic(pthread_t) handled_on;
static atomic_int handled;
static atomic_int queued_value;
static atomic_int queued_code;

static void on_usr1(int sig, siginfo_t *si, void *uc) {
  (void)sig;
  (void)uc;
  atomic_store(&handled_on, pthread_self());
  atomic_store(&queued_value, si->si_value.sival_int);
  atomic_store(&queued_code, si->si_code);
  atomic_fetch_add(&handled, 1);
}

static atomic_int stop;

static void *spinner(void *arg) {
  (void)arg;
  volatile unsigned long x = 0;
  while (!atomic_load(&stop))
    x++;
  return NULL;
}

static void *sleeper(void *arg) {
  (void)arg;
  struct timespec d = {30, 0}, rem = {0, 0};
  int r = nanosleep(&d, &rem);
  CHECK(r == -1 && errno == EINTR);
  CHECK(rem.tv_sec > 0 && rem.tv_sec <= 30);
  return NULL;
}

static void *blocker(void *arg) {
  (void)arg;
  sigset_t s, p;
  sigemptyset(&s);
  sigaddset(&s, SIGUSR1);
  CHECK(pthread_sigmask(SIG_BLOCK, &s, NULL) == 0);
  atomic_store(&stop, 1);
  while (atomic_load(&stop) != 2) /* main sends the signal meanwhile */
    sched_yield();
  CHECK(sigpending(&p) == 0);
  CHECK(sigismember(&p, SIGUSR1) == 1);
  CHECK(atomic_load(&handled) == 0);
  CHECK(pthread_sigmask(SIG_UNBLOCK, &s, NULL) == 0);
  /* delivered before pthread_sigmask returned */
  CHECK(atomic_load(&handled) == 1);
  CHECK(pthread_equal(atomic_load(&handled_on), pthread_self()));
  return NULL;
}

static void *inherits(void *arg) {
  (void)arg;
  sigset_t m, p;
  CHECK(pthread_sigmask(SIG_BLOCK, NULL, &m) == 0);
  CHECK(sigismember(&m, SIGUSR2) == 1); /* the creator's mask */
  CHECK(sigpending(&p) == 0);
  CHECK(sigismember(&p, SIGUSR2) == 0); /* its pending set is empty */
  return NULL;
}

static void *waiter(void *arg) {
  (void)arg;
  sigset_t s;
  sigemptyset(&s);
  sigaddset(&s, SIGUSR2);
  int sig = 0;
  CHECK(sigwait(&s, &sig) == 0);
  CHECK(sig == SIGUSR2);
  return NULL;
}

static void wait_handled(int n) {
  for (int i = 0; i < 20000 && atomic_load(&handled) < n; i++)
    usleep(500);
  CHECK(atomic_load(&handled) >= n);
}

int main(void) {
  report_on_swarm();
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_usr1;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  CHECK(sigaction(SIGUSR1, &sa, NULL) == 0);

  /* 1. a thread that computes: the handler runs on it */
  pthread_t t;
  CHECK(pthread_create(&t, NULL, spinner, NULL) == 0);
  usleep(20000);
  CHECK(pthread_kill(t, SIGUSR1) == 0);
  wait_handled(1);
  CHECK(pthread_equal(atomic_load(&handled_on), t));
  CHECK(atomic_load(&queued_code) == SI_TKILL);
  atomic_store(&stop, 1);
  CHECK(pthread_join(t, NULL) == 0);
  printf("running thread: handled on it\n");

  /* 2. pthread_sigqueue carries its value */
  atomic_store(&stop, 0);
  atomic_store(&handled, 0);
  CHECK(pthread_create(&t, NULL, spinner, NULL) == 0);
  usleep(10000);
  CHECK(pthread_sigqueue(t, SIGUSR1, (union sigval){.sival_int = 4242}) == 0);
  wait_handled(1);
  CHECK(pthread_equal(atomic_load(&handled_on), t));
  CHECK(atomic_load(&queued_value) == 4242);
  CHECK(atomic_load(&queued_code) == SI_QUEUE);
  atomic_store(&stop, 1);
  CHECK(pthread_join(t, NULL) == 0);
  printf("sigqueue: value and SI_QUEUE\n");

  /* 3. a sleeping thread: EINTR after its handler ran */
  atomic_store(&handled, 0);
  CHECK(pthread_create(&t, NULL, sleeper, NULL) == 0);
  usleep(50000);
  CHECK(pthread_kill(t, SIGUSR1) == 0);
  CHECK(pthread_join(t, NULL) == 0);
  CHECK(atomic_load(&handled) == 1);
  CHECK(pthread_equal(atomic_load(&handled_on), t));
  printf("sleeping thread: EINTR\n");

  /* 4. blocked: pending until unblocked */
  atomic_store(&handled, 0);
  atomic_store(&stop, 0);
  CHECK(pthread_create(&t, NULL, blocker, NULL) == 0);
  while (!atomic_load(&stop))
    usleep(1000);
  CHECK(pthread_kill(t, SIGUSR1) == 0);
  usleep(20000);
  atomic_store(&stop, 2);
  CHECK(pthread_join(t, NULL) == 0);
  printf("blocked: pending, then delivered on unblock\n");

  /* 5. a new thread: the creator's mask, nothing pending */
  sigset_t s2, old;
  sigemptyset(&s2);
  sigaddset(&s2, SIGUSR2);
  CHECK(pthread_sigmask(SIG_BLOCK, &s2, &old) == 0);
  CHECK(pthread_kill(pthread_self(), SIGUSR2) == 0); /* pending on main */
  CHECK(pthread_create(&t, NULL, inherits, NULL) == 0);
  CHECK(pthread_join(t, NULL) == 0);
  int sig = 0;
  CHECK(sigwait(&s2, &sig) == 0 && sig == SIGUSR2); /* main's own */
  printf("new thread: mask inherited, pending empty\n");

  /* 6. sigwait takes a process-directed signal */
  CHECK(pthread_create(&t, NULL, waiter, NULL) == 0);
  usleep(20000);
  CHECK(kill(getpid(), SIGUSR2) == 0);
  CHECK(pthread_join(t, NULL) == 0);
  /* and one sent to the waiting thread itself */
  CHECK(pthread_create(&t, NULL, waiter, NULL) == 0);
  usleep(20000);
  CHECK(pthread_kill(t, SIGUSR2) == 0);
  CHECK(pthread_join(t, NULL) == 0);
  printf("sigwait: process- and thread-directed\n");

  /* 7. a storm to computing threads: no hang, the last one lands */
  enum { N = 4, ROUNDS = 2000 };
  pthread_t ts[N];
  atomic_store(&stop, 0);
  for (int i = 0; i < N; i++)
    CHECK(pthread_create(&ts[i], NULL, spinner, NULL) == 0);
  for (int r = 0; r < ROUNDS; r++)
    for (int i = 0; i < N; i++)
      CHECK(pthread_kill(ts[i], SIGUSR1) == 0);
  atomic_store(&handled, 0);
  for (int i = 0; i < N; i++)
    CHECK(pthread_kill(ts[i], SIGUSR1) == 0);
  wait_handled(N);
  atomic_store(&stop, 1);
  for (int i = 0; i < N; i++)
    CHECK(pthread_join(ts[i], NULL) == 0);
  printf("storm: %d signals, no hang\n", N * (ROUNDS + 1));
  printf("OK\n");
  return 0;
}
