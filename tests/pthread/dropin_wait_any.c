/* Waits for any child are cancellation points while they wait (issue 21):
 * a thread blocked in waitpid(-1), waitpid(0), wait(), wait3/wait4 with
 * WUNTRACED, waitid(P_ALL) or waitid(P_PGID, WSTOPPED) ends when cancelled,
 * without reaping the running child; a signal's handler without
 * SA_RESTART ends such a wait with EINTR, one with SA_RESTART lets it go
 * on and return the child's status; a cancellation that races a child's
 * exit never swallows the status (the waiter returns it, or the child is
 * still there to reap; NPTL before glibc 2.41 loses some, which this
 * reports there and fails on swarm); a wait for a process that is not a
 * child answers ECHILD. CTest runs it on swarm at 1, 2 and 4
 * workers and plain on NPTL. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "dropin_check.h"

static volatile int started;
static volatile pid_t reaped;
static volatile int reaped_status;
static volatile sig_atomic_t handled;

static void *in_wait(void *arg) {
  int how = (int)(long)arg, status = 0;
  siginfo_t si;
  struct rusage ru;
  pid_t p = -1;
  started = 1;
  switch (how) {
  case 0:
    p = waitpid(-1, &status, 0);
    break;
  case 1:
    p = waitid(P_ALL, 0, &si, WEXITED) == 0 ? si.si_pid : -1;
    status = si.si_status;
    break;
  case 2:
    p = wait(&status);
    break;
  case 3:
    p = wait4(-1, &status, WUNTRACED, &ru);
    break;
  case 4:
    p = waitpid(0, &status, WCONTINUED);
    break;
  case 5:
    p = waitid(P_PGID, (id_t)getpgid(0), &si, WEXITED | WSTOPPED) == 0
            ? si.si_pid
            : -1;
    break;
  default:
    p = wait3(&status, 0, &ru);
    break;
  }
  reaped_status = p < 0 ? errno : status;
  reaped = p;
  return (void *)2;
}

static void settle(void) {
  struct timespec t = {0, 20 * 1000000};
  while (!started)
    nanosleep(&t, NULL);
  nanosleep(&t, NULL); /* let it block */
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

static void on_usr1(int sig) {
  (void)sig;
  handled++;
}

static void handle_usr1(int flags) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_usr1;
  sa.sa_flags = flags;
  CHECK(sigaction(SIGUSR1, &sa, NULL) == 0);
}

static const char *const names[] = {
    "waitpid(-1)",      "waitid(P_ALL)",          "wait()",
    "wait4(WUNTRACED)", "waitpid(0, WCONTINUED)", "waitid(P_PGID, WSTOPPED)",
    "wait3()"};

int main(void) {
  /* Line by line: the alarm's kill keeps what was printed, so a hang
   * names the step it hung in (ctest's log showed nothing once). */
  setvbuf(stdout, NULL, _IOLBF, 0);
  report_on_swarm();
  alarm(120); /* a wait that cannot be cancelled fails, not hangs */
  pid_t child = sleeper();
  for (int how = 0; how < 7; how++) {
    pthread_t t;
    void *r;
    started = 0;
    CHECK(pthread_create(&t, NULL, in_wait, (void *)(long)how) == 0);
    settle();
    CHECK(pthread_cancel(t) == 0);
    CHECK(pthread_join(t, &r) == 0);
    CHECK(r == PTHREAD_CANCELED, "%s: not cancelled (%p)", names[how], r);
    CHECK(waitpid(child, NULL, WNOHANG) == 0, "%s reaped the child",
          names[how]);
    printf("cancelled in %s\n", names[how]);
  }

  /* A handler without SA_RESTART: EINTR; the child stays. */
  handle_usr1(0);
  pthread_t t;
  void *r;
  started = 0;
  CHECK(pthread_create(&t, NULL, in_wait, (void *)0L) == 0);
  settle();
  CHECK(pthread_kill(t, SIGUSR1) == 0);
  CHECK(pthread_join(t, &r) == 0);
  CHECK(r == (void *)2 && reaped == -1 && reaped_status == EINTR,
        "waitpid(-1) after a handler: %d (%s)", (int)reaped,
        strerror(reaped_status));
  CHECK(handled == 1, "handler ran %d times", (int)handled);
  CHECK(waitpid(child, NULL, WNOHANG) == 0);
  printf("EINTR in waitpid(-1) after a handler\n");

  /* With SA_RESTART it waits on and reaps the child's status. */
  handle_usr1(SA_RESTART);
  started = 0;
  reaped = 0;
  CHECK(pthread_create(&t, NULL, in_wait, (void *)2L) == 0);
  settle();
  CHECK(pthread_kill(t, SIGUSR1) == 0);
  struct timespec ms = {0, 50 * 1000000};
  while (handled < 2)
    nanosleep(&ms, NULL);
  nanosleep(&ms, NULL);
  CHECK(reaped == 0, "wait() ended after an SA_RESTART handler: %d",
        (int)reaped);
  CHECK(kill(child, SIGKILL) == 0);
  CHECK(pthread_join(t, &r) == 0);
  CHECK(r == (void *)2 && reaped == child, "wait() after SA_RESTART: %d",
        (int)reaped);
  CHECK(WIFSIGNALED(reaped_status) && WTERMSIG(reaped_status) == SIGKILL,
        "status %#x", reaped_status);
  printf("wait() went on after an SA_RESTART handler and reaped\n");

  /* A cancellation racing a child's exit: the status is returned by the
   * waiter or still there to reap, never lost. */
  int returned = 0, cancelled = 0, lost = 0;
  bool on_swarm = dlsym(RTLD_DEFAULT, "swarm_self") != NULL;
  for (int i = 0; i < 200; i++) {
    int go[2];
    CHECK(pipe(go) == 0);
    pid_t p = fork();
    CHECK(p >= 0);
    if (p == 0) {
      char c;
      close(go[1]);
      (void)!read(go[0], &c, 1); /* until the parent closes it */
      _exit(3);
    }
    close(go[0]);
    started = 0;
    reaped = 0;
    CHECK(pthread_create(&t, NULL, in_wait, (void *)(long)(i % 2 ? 2 : 0)) ==
          0);
    while (!started)
      sched_yield();
    close(go[1]); /* the child exits */
    if (i % 3)
      nanosleep(&(struct timespec){0, (i % 7) * 100000}, NULL);
    CHECK(pthread_cancel(t) == 0);
    CHECK(pthread_join(t, &r) == 0);
    int status;
    if (r == PTHREAD_CANCELED) {
      cancelled++;
      if (waitpid(p, &status, 0) != p) {
        /* glibc before 2.41 (bug 12683) acts on a cancellation that
         * arrives after the kernel reaped: NPTL loses the status here. */
        CHECK(!on_swarm && errno == ECHILD, "child %d lost (%s)", (int)p,
              strerror(errno));
        lost++;
        continue;
      }
    } else {
      returned++;
      CHECK(reaped == p, "waiter returned %d, child %d", (int)reaped, (int)p);
      status = reaped_status;
    }
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 3, "status %#x", status);
  }
  printf("cancel racing exit: %d returned, %d cancelled, %d lost%s\n", returned,
         cancelled, lost, lost ? " (NPTL: glibc bug 12683)" : "");

  /* Nothing left: a plain exit status is reaped by a later wait. */
  pid_t p = fork();
  CHECK(p >= 0);
  if (p == 0)
    _exit(7);
  int status;
  CHECK(wait(&status) == p);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 7);
  errno = 0;
  CHECK(wait(&status) == -1 && errno == ECHILD);
  /* A process that is not our child: ECHILD at once, not a wait for it. */
  errno = 0;
  CHECK(waitpid(getppid(), &status, 0) == -1 && errno == ECHILD);
  siginfo_t si;
  errno = 0;
  CHECK(waitid(P_PID, (id_t)getppid(), &si, WEXITED) == -1 && errno == ECHILD);
  printf("OK\n");
  return 0;
}
