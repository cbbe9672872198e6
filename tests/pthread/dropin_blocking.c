/* Blocking calls swarm does not turn into parks (pause, waitpid, wait,
 * waitid): each is a cancellation point that a pthread_cancel ends while
 * it waits, and none freezes the process on one worker (CTest runs this
 * under one worker, with the default spare: main must run while a thread
 * blocks its worker's kernel thread, or it could not cancel it). Also: a
 * waitpid for one child returns when the child ends, with its status. The
 * same program passes on NPTL. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "dropin_check.h"

static pid_t child;
static volatile int started;

static void *in_pause(void *arg) {
  (void)arg;
  started = 1;
  pause();
  return (void *)1; /* not reached: cancelled */
}

static void *in_waitpid(void *arg) {
  int how = (int)(long)arg, status;
  started = 1;
  if (how == 0)
    waitpid(child, &status, 0);
  else if (how == 1) {
    /* Cancelled on entry (dropin_wait_any: while it waits). */
    pthread_cancel(pthread_self());
    wait(&status);
  } else {
    siginfo_t si;
    waitid(P_PID, (id_t)child, &si, WEXITED);
  }
  return (void *)1;
}

static void settle(void) {
  struct timespec t = {0, 50 * 1000000};
  while (!started)
    nanosleep(&t, NULL);
  nanosleep(&t, NULL); /* let it block */
}

static void cancel_blocked(void *(*fn)(void *), void *arg, const char *what,
                           int pending_first) {
  pthread_t t;
  void *r;
  started = 0;
  CHECK(pthread_create(&t, NULL, fn, arg) == 0);
  if (pending_first) {
    CHECK(pthread_cancel(t) == 0); /* perhaps before it blocks */
  } else {
    settle();
    CHECK(pthread_cancel(t) == 0);
  }
  CHECK(pthread_join(t, &r) == 0);
  CHECK(r == PTHREAD_CANCELED, "%s: not cancelled (%p)", what, r);
  printf("cancelled in %s%s\n", what, pending_first ? " (at once)" : "");
}

static pid_t sleeper(void) {
  pid_t p = fork();
  CHECK(p >= 0);
  if (p == 0) {
    pause();
    _exit(0);
  }
  return p;
}

int main(void) {
  report_on_swarm();
  cancel_blocked(in_pause, NULL, "pause", 0);
  cancel_blocked(in_pause, NULL, "pause", 1);
  child = sleeper();
  cancel_blocked(in_waitpid, (void *)0, "waitpid", 0);
  cancel_blocked(in_waitpid, (void *)0, "waitpid", 1);
  cancel_blocked(in_waitpid, (void *)2, "waitid", 0);
  cancel_blocked(in_waitpid, (void *)1, "wait", 1);
  CHECK(kill(child, 0) == 0); /* none of them reaped it */
  /* The child still runs: reap it for real. */
  CHECK(waitpid(child, NULL, WNOHANG) == 0);
  /* SIGKILL: a child forked on another worker may start with signals
   * blocked (issue 21 item 1, another change). */
  CHECK(kill(child, SIGKILL) == 0);
  int status;
  CHECK(waitpid(child, &status, 0) == child);
  CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "status %#x",
        status);
  pid_t p = fork();
  CHECK(p >= 0);
  if (p == 0)
    _exit(7);
  CHECK(waitpid(p, &status, 0) == p);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 7);
  errno = 0;
  CHECK(waitpid(p, &status, 0) == -1 && errno == ECHILD);
  printf("OK\n");
  return 0;
}
