/* fork while a thread of the parent runs a pthread_once routine (issue 16
 * item 5): in the child that thread is a ghost that never finishes it, so
 * the child's first caller must run the routine itself, as glibc's
 * pthread_once does by its fork generation, and the child's later callers
 * wait for that run, not for the ghost's (a second parent thread waits on
 * the once object at the fork: its ghost is skipped when the child's run
 * wakes the waiters). Without that the child's calls wait forever and the
 * alarm fails the child. NPTL behaves the same. */
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "dropin_check.h"

static pthread_once_t once = PTHREAD_ONCE_INIT;
static volatile int runs, in_init, release, finished, waiter_started;

static void pause_ms(int ms) {
  struct timespec t = {0, ms * 1000000L};
  nanosleep(&t, NULL);
}

static void init(void) {
  __atomic_add_fetch(&runs, 1, __ATOMIC_SEQ_CST);
  in_init = 1;
  while (!release)
    pause_ms(2);
  finished = 1;
}

static void *runner(void *arg) {
  (void)arg;
  CHECK(pthread_once(&once, init) == 0);
  CHECK(finished);
  return NULL;
}

static void *waiter(void *arg) {
  (void)arg;
  waiter_started = 1;
  CHECK(pthread_once(&once, init) == 0); /* waits: the routine runs */
  CHECK(finished);
  return NULL;
}

/* Starts a runner, lets it enter init, then a waiter and lets it wait. */
static void run_and_wait(pthread_t t[2]) {
  CHECK(pthread_create(&t[0], NULL, runner, NULL) == 0);
  while (!in_init)
    pause_ms(2);
  CHECK(pthread_create(&t[1], NULL, waiter, NULL) == 0);
  while (!waiter_started)
    pause_ms(2);
  pause_ms(20); /* let it queue */
}

/* Lets the routine end; both threads return after it did, once. */
static void finish(pthread_t t[2]) {
  release = 1;
  CHECK(pthread_join(t[0], NULL) == 0);
  CHECK(pthread_join(t[1], NULL) == 0);
  CHECK_EQ(runs, 1);
  CHECK(pthread_once(&once, init) == 0);
  CHECK_EQ(runs, 1);
}

static void child(void) {
  alarm(20); /* a routine left running by a ghost hangs here */
  runs = in_init = release = finished = waiter_started = 0;
  pthread_t t[2];
  run_and_wait(t); /* the runner takes the ghost's run over */
  finish(t);
  _exit(0);
}

int main(void) {
  report_on_swarm();
  alarm(60);
  pthread_t t[2];
  run_and_wait(t);
  pid_t p = fork(); /* with the routine running, and a thread waiting */
  CHECK(p >= 0);
  if (p == 0)
    child();
  finish(t);
  int status;
  CHECK(waitpid(p, &status, 0) == p);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
        "child: status %#x (SIGALRM %d: the ghost's run was waited for)",
        status, SIGALRM);
  printf("the child ran the once routine a thread of the parent was running "
         "at the fork, once\n");
  printf("OK\n");
  return 0;
}
