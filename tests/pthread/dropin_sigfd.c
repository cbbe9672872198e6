/* A thread that reads a signalfd gets the process-directed signals it was
 * made for (issue 16 item 1), and sigtimedwait times out with EAGAIN when
 * nothing comes and returns a signal sent to the waiting thread. Passes on
 * NPTL alone too. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include "dropin_check.h"

static int sfd;

static void *reader(void *arg) {
  (void)arg;
  struct signalfd_siginfo si;
  CHECK(read(sfd, &si, sizeof si) == (ssize_t)sizeof si);
  CHECK(si.ssi_signo == SIGUSR1);
  CHECK(si.ssi_pid == (uint32_t)getpid());
  return NULL;
}

/* Set once the timed thread's first wait has timed out: main sends
 * SIGUSR2 only then (a fixed sleep raced that first wait on a loaded
 * machine, where it could take longer than the sleep and get the signal). */
static _Atomic int timed_out_once;

static void *timed(void *arg) {
  (void)arg;
  sigset_t s;
  sigemptyset(&s);
  sigaddset(&s, SIGUSR2);
  struct timespec t = {0, 20000000};
  siginfo_t info;
  CHECK(sigtimedwait(&s, &info, &t) == -1 && errno == EAGAIN);
  timed_out_once = 1; /* SIGUSR2 stays pending on us until the next wait */
  t.tv_sec = 30;
  CHECK(sigtimedwait(&s, &info, &t) == SIGUSR2);
  CHECK(info.si_signo == SIGUSR2);
  return NULL;
}

int main(void) {
  report_on_swarm();
  sigset_t s;
  sigemptyset(&s);
  sigaddset(&s, SIGUSR1);
  sigaddset(&s, SIGUSR2);
  CHECK(pthread_sigmask(SIG_BLOCK, &s, NULL) == 0); /* inherited */
  sigdelset(&s, SIGUSR2);
  sfd = signalfd(-1, &s, SFD_CLOEXEC);
  CHECK(sfd >= 0);
  pthread_t t;
  CHECK(pthread_create(&t, NULL, reader, NULL) == 0);
  usleep(20000);
  CHECK(kill(getpid(), SIGUSR1) == 0);
  CHECK(pthread_join(t, NULL) == 0);
  printf("signalfd: a process-directed signal read by a thread\n");
  CHECK(pthread_create(&t, NULL, timed, NULL) == 0);
  while (!timed_out_once)
    usleep(1000);
  usleep(10000); /* most often into the second wait, sometimes pending */
  CHECK(pthread_kill(t, SIGUSR2) == 0);
  CHECK(pthread_join(t, NULL) == 0);
  printf("sigtimedwait: EAGAIN, then the thread's signal\n");
  printf("OK\n");
  return 0;
}
