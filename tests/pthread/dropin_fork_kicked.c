/* fork while another thread signals the forking one: the child must not
 * inherit the signaller's hold on the forking thread's per-thread record.
 * A signal to a thread (pthread_kill, and pthread_cancel alike) enters the
 * target's sync record (sync_interrupt: a borrow in its slot and the
 * record's lock, for a few instructions). If the target forks in that
 * window, the child's copy of the record says "held" by a thread that does
 * not exist there: the child's first cancellation-point wait (which takes
 * that lock) spun for ever, and its thread's exit would have waited for
 * the borrow to be returned. NPTL has no such state.
 *
 * main forks FORKS times while a second thread sends it SIGUSR1 (handled,
 * empty) every 20 us; each child makes timed condition waits (a
 * cancellation point, an interruptible wait), toggles its cancel state
 * (which interrupts itself) and starts and joins a thread, then exits 0.
 * The parent gives each child 10 s; a child still running then is the
 * hang (killed, reported). Paced, because each signal interrupts main's
 * worker and a storm leaves main no time to fork. The window is tens of
 * nanoseconds of each 20 us, so the test catches the hang only sometimes
 * on an idle machine; a loaded one (a signaller preempted inside the
 * record) widens it, and with a delay put in the window by hand the old
 * code hung at the 3rd fork.
 *
 * Then STORM_FORKS more with the signals unpaced (a yield after each, so
 * that one worker also runs main; with more it returns at once). Each one
 * interrupts main's worker with the runtime's interrupt signal, a real-time
 * signal that queues: sent once per pthread_kill, they outran the handler and
 * main never got through its next fork (no progress in 60 s; NPTL, whose
 * pending SIGUSR1 coalesces, made 200 forks in 2 s). A kick now sends
 * nothing while one is queued to that thread. The check is liveness, with
 * a bound (STORM_LIMIT_S) far above the 2 s it takes. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "dropin_check.h"

#define FORKS 1000
#define STORM_FORKS 100
#define STORM_LIMIT_S 120

static pthread_t main_thread;
static volatile int stop;
static volatile unsigned long sent;

static void on_usr1(int sig) {
  (void)sig;
}

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

/* A signal every PACE_US: each one interrupts main's worker, so a storm
 * would leave main too little time to fork at all. */
#define PACE_US 20.0
static volatile int paced = 1;
static void *signaller(void *arg) {
  (void)arg;
  while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
    CHECK(pthread_kill(main_thread, SIGUSR1) == 0);
    sent++;
    if (!paced) { /* with one worker, main runs in between */
      sched_yield();
      continue;
    }
    double until = now_us() + PACE_US;
    while (now_us() < until)
      ;
  }
  return NULL;
}

static void *child_thread(void *arg) {
  return arg;
}

/* What a child does: every kind of wait that takes the thread's record. */
static int child_main(void) {
  pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
  pthread_cond_t c = PTHREAD_COND_INITIALIZER;
  for (int i = 0; i < 3; i++) {
    struct timespec dl = test_time_in(CLOCK_REALTIME, 1000000);
    if (pthread_mutex_lock(&m) != 0)
      return 2;
    int r = pthread_cond_timedwait(&c, &m, &dl);
    pthread_mutex_unlock(&m);
    if (r != ETIMEDOUT && r != 0)
      return 3;
  }
  int old;
  if (pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old) != 0 ||
      pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, &old) != 0)
    return 4;
  pthread_t t;
  void *res = NULL;
  if (pthread_create(&t, NULL, child_thread, &m) != 0 ||
      pthread_join(t, &res) != 0 || res != &m)
    return 5;
  return 0;
}

/* 0: the child ended; -1: still running after limit_ms (then killed).
 * Timed by the clock: the signals cut main's sleeps short. */
static int wait_child(pid_t pid, int limit_ms, int *status) {
  double until = now_us() + limit_ms * 1000.0;
  while (now_us() < until) {
    pid_t r = waitpid(pid, status, WNOHANG);
    if (r == pid)
      return 0;
    CHECK(r == 0 || errno == EINTR);
    struct timespec ms = {0, 1000000L};
    nanosleep(&ms, NULL);
  }
  kill(pid, SIGKILL);
  while (waitpid(pid, status, 0) < 0 && errno == EINTR)
    ;
  return -1;
}

int main(void) {
  report_on_swarm();
  main_thread = pthread_self();
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_usr1;
  sa.sa_flags = SA_RESTART;
  CHECK(sigaction(SIGUSR1, &sa, NULL) == 0);
  pthread_t sig;
  CHECK(pthread_create(&sig, NULL, signaller, NULL) == 0);
  int hung = 0, failed = 0;
  double storm_until = 0;
  for (int i = 0; i < FORKS + STORM_FORKS && !hung; i++) {
    if (i == FORKS) { /* the storm: as fast as pthread_kill goes */
      paced = 0;
      storm_until = now_us() + STORM_LIMIT_S * 1e6;
    }
    if (storm_until)
      CHECK(now_us() < storm_until,
            "under the storm main forked %d times in %d s", i - FORKS,
            STORM_LIMIT_S);
    pid_t pid;
    do
      pid = fork();
    while (pid < 0 && (errno == EAGAIN || errno == EINTR));
    CHECK(pid >= 0);
    if (pid == 0)
      _exit(child_main());
    int status = 0;
    if (wait_child(pid, 10000, &status) != 0) {
      hung++;
      printf("fork %d: the child hung (killed after 10 s)\n", i);
    } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      failed++;
      printf("fork %d: the child ended with status %#x\n", i, status);
    }
  }
  __atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
  CHECK(pthread_join(sig, NULL) == 0);
  printf("signals sent: %s\n", sent > 0 ? "some" : "none");
  CHECK(sent > 0);
  CHECK(hung == 0);
  CHECK(failed == 0);
  printf("forks while signalled: %d children, none hung\n",
         FORKS + STORM_FORKS);
  printf("OK\n");
  return 0;
}
