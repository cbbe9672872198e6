/* The readiness waits under the drop-in: poll, ppoll, select, pselect,
 * epoll_wait, epoll_pwait and epoll_pwait2 each (1) wake when another
 * thread writes the pipe 20 ms later, reporting it ready, and (2) return 0
 * after their 30 ms timeout, not before, with nothing to read. While one
 * thread waits, a second counts: the waiter must not hold its worker (CTest
 * runs this under one worker, where a wait that blocked the kernel thread
 * would leave the counter at zero). The same program passes on NPTL. */
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <time.h>
#include <unistd.h>

#include "dropin_check.h"

enum wait_kind {
  POLL,
  PPOLL,
  SELECT,
  PSELECT,
  EPOLL,
  EPOLL_PWAIT,
  EPOLL_PWAIT2
};
static const char *const names[] = {"poll",        "ppoll",      "select",
                                    "pselect",     "epoll_wait", "epoll_pwait",
                                    "epoll_pwait2"};
#define KINDS 7

static int p[2], ep;

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* One wait of the given kind on p[0] (or ep), timeout_ms < 0: none.
 * Returns what the call returned, checking the reported readiness. */
static int wait_once(enum wait_kind k, int timeout_ms) {
  struct timespec ts = {timeout_ms / 1000, (long)(timeout_ms % 1000) * 1000000};
  struct timeval tv = {timeout_ms / 1000, (long)(timeout_ms % 1000) * 1000};
  sigset_t none;
  sigemptyset(&none);
  struct pollfd pf = {p[0], POLLIN, 0};
  fd_set s;
  FD_ZERO(&s);
  FD_SET(p[0], &s);
  struct epoll_event ev = {0};
  int r = -1;
  switch (k) {
  case POLL:
    r = poll(&pf, 1, timeout_ms);
    CHECK(r != 1 || (pf.revents & POLLIN));
    break;
  case PPOLL:
    r = ppoll(&pf, 1, timeout_ms < 0 ? NULL : &ts, &none);
    CHECK(r != 1 || (pf.revents & POLLIN));
    break;
  case SELECT:
    r = select(p[0] + 1, &s, NULL, NULL, timeout_ms < 0 ? NULL : &tv);
    CHECK(r != 1 || FD_ISSET(p[0], &s));
    break;
  case PSELECT:
    r = pselect(p[0] + 1, &s, NULL, NULL, timeout_ms < 0 ? NULL : &ts, &none);
    CHECK(r != 1 || FD_ISSET(p[0], &s));
    break;
  case EPOLL:
    r = epoll_wait(ep, &ev, 1, timeout_ms);
    CHECK(r != 1 || (ev.events & EPOLLIN));
    break;
  case EPOLL_PWAIT:
    r = epoll_pwait(ep, &ev, 1, timeout_ms, &none);
    CHECK(r != 1 || (ev.events & EPOLLIN));
    break;
  case EPOLL_PWAIT2:
    r = epoll_pwait2(ep, &ev, 1, timeout_ms < 0 ? NULL : &ts, &none);
    CHECK(r != 1 || (ev.events & EPOLLIN));
    break;
  }
  return r;
}

static volatile int stop;
static volatile long counted;

static void *counter(void *a) {
  (void)a;
  while (!stop) {
    counted++;
    sched_yield();
  }
  return NULL;
}

static void *late_writer(void *a) {
  (void)a;
  usleep(20000);
  CHECK(write(p[1], "w", 1) == 1);
  return NULL;
}

int main(void) {
  report_on_swarm();
  alarm(60);
  CHECK(pipe(p) == 0);
  ep = epoll_create1(0);
  CHECK(ep >= 0);
  struct epoll_event ev = {.events = EPOLLIN};
  CHECK(epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev) == 0);
  for (int k = 0; k < KINDS; k++) {
    /* (1) woken by a write from another thread */
    stop = 0;
    counted = 0;
    pthread_t w, c;
    CHECK(pthread_create(&c, NULL, counter, NULL) == 0);
    CHECK(pthread_create(&w, NULL, late_writer, NULL) == 0);
    int r = wait_once((enum wait_kind)k, -1);
    long seen = counted;
    stop = 1;
    CHECK(pthread_join(w, NULL) == 0);
    CHECK(pthread_join(c, NULL) == 0);
    if (r != 1)
      fprintf(stderr, "%s returned %d\n", names[k], r);
    CHECK(r == 1);
    CHECK(seen > 0); /* the counter ran while we waited */
    char b;
    CHECK(read(p[0], &b, 1) == 1 && b == 'w');
    /* (2) a timeout with nothing there */
    double t0 = now();
    r = wait_once((enum wait_kind)k, 30);
    double took = now() - t0;
    CHECK(r == 0);
    CHECK(took >= 0.029);
    printf("%s: woken by a write, timed out after %.0f ms\n", names[k],
           took * 1e3);
  }
  close(ep);
  close(p[0]);
  close(p[1]);
  printf("OK waits\n");
  return 0;
}
