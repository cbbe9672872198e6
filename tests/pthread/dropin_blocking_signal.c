/* A handled signal sent to a thread blocked in pause or waitpid (calls the
 * drop-in makes block their kernel thread): its handler runs on that
 * thread; pause then fails with EINTR, as does a waitpid whose handler has
 * no SA_RESTART, and a waitpid whose handler has SA_RESTART goes on
 * waiting and returns the child when it ends. Nothing else (the runtime's
 * own interrupts) ends them. CTest runs it under one worker, with the
 * default spare. The same program passes on NPTL. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "dropin_check.h"

static pid_t child;
static pthread_t target;
static volatile sig_atomic_t handled, wrong_thread, done;
static volatile long result, result_errno;

static void on_signal(int sig) {
  (void)sig;
  if (!pthread_equal(pthread_self(), target))
    wrong_thread = 1;
  handled++;
}

static void handle(int sig, int flags) {
  struct sigaction sa = {.sa_handler = on_signal, .sa_flags = flags};
  sigemptyset(&sa.sa_mask);
  CHECK(sigaction(sig, &sa, NULL) == 0);
}

static void *in_pause(void *arg) {
  (void)arg;
  errno = 0;
  result = pause();
  result_errno = errno;
  done = 1;
  return NULL;
}

static void *in_waitpid(void *arg) {
  (void)arg;
  int status = 0;
  errno = 0;
  result = waitpid(child, &status, 0);
  result_errno = errno;
  if (result == child)
    CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "status %#x",
          status);
  done = 1;
  return NULL;
}

static void nap(void) {
  struct timespec t = {0, 20 * 1000000};
  nanosleep(&t, NULL);
}

static pid_t sleeper(void) {
  pid_t p = fork();
  CHECK(p >= 0);
  if (p == 0) {
    for (;;)
      pause();
  }
  return p;
}

/* Starts fn, signals it until it has returned (a signal that came before
 * it blocked is handled and the next one ends the wait); the call must
 * have failed with EINTR. */
static void interrupted(void *(*fn)(void *), const char *what) {
  handled = wrong_thread = done = 0;
  CHECK(pthread_create(&target, NULL, fn, NULL) == 0);
  while (!done) {
    nap();
    int e = pthread_kill(target, SIGUSR1);
    CHECK(e == 0 || (e == ESRCH && done), "pthread_kill: %d", e);
  }
  CHECK(pthread_join(target, NULL) == 0);
  CHECK(handled >= 1 && !wrong_thread, "%s: handler ran %d, on another %d",
        what, (int)handled, (int)wrong_thread);
  CHECK(result == -1 && result_errno == EINTR, "%s: %ld (errno %ld)", what,
        result, result_errno);
  printf("%s ended by a handled signal\n", what);
}

int main(void) {
  report_on_swarm();
  handle(SIGUSR1, 0);
  handle(SIGUSR2, SA_RESTART);
  interrupted(in_pause, "pause");
  child = sleeper();
  interrupted(in_waitpid, "waitpid");
  /* SA_RESTART: the handler runs, the wait goes on until the child ends. */
  handled = wrong_thread = done = 0;
  CHECK(pthread_create(&target, NULL, in_waitpid, NULL) == 0);
  for (int i = 0; i < 5; i++) {
    nap();
    CHECK(pthread_kill(target, SIGUSR2) == 0);
    while (handled <= i)
      nap();
  }
  nap();
  CHECK(!done, "waitpid returned %ld (errno %ld) before the child ended",
        result, result_errno);
  CHECK(kill(child, SIGKILL) == 0);
  CHECK(pthread_join(target, NULL) == 0);
  CHECK(!wrong_thread);
  CHECK(result == child, "waitpid: %ld (errno %ld)", result, result_errno);
  printf("waitpid went on after SA_RESTART handlers\n");
  printf("OK\n");
  return 0;
}
