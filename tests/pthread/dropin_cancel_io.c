/* I/O calls are cancellation points, as in NPTL: a thread blocked in read,
 * write, recv, accept, poll, select, pselect, epoll_wait or epoll_pwait is
 * cancelled there (its
 * cleanup handler runs, its join returns PTHREAD_CANCELED); a cancellation
 * pending on entry acts before the call takes anything (the data stays for
 * others); with cancellation disabled a blocked read completes normally and
 * the cancellation acts at the next point after it is enabled. The same
 * program passes on NPTL alone. */
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <unistd.h>

#include "dropin_check.h"

static int cleanups;
static void count_cleanup(void *a) {
  (void)a;
  __atomic_add_fetch(&cleanups, 1, __ATOMIC_SEQ_CST);
}

static int fd_a; /* the descriptor the blocked thread waits on */
static volatile int entered;

enum op {
  OP_READ,
  OP_WRITE,
  OP_RECV,
  OP_ACCEPT,
  OP_POLL,
  OP_SELECT,
  OP_PSELECT,
  OP_EPOLL,
  OP_EPOLL_PWAIT
};
static const char *const op_name[] = {"read",    "write",      "recv",
                                      "accept",  "poll",       "select",
                                      "pselect", "epoll_wait", "epoll_pwait"};

static void *blocker(void *arg) {
  enum op op = (enum op)(long)arg;
  char buf[4096];
  memset(buf, 'x', sizeof buf);
  volatile long r = 0; /* kept across the cancellation longjmp */
  pthread_cleanup_push(count_cleanup, NULL);
  entered = 1;
  switch (op) {
  case OP_READ:
    r = read(fd_a, buf, sizeof buf);
    break;
  case OP_WRITE: /* the pipe is full: this blocks */
    r = write(fd_a, buf, sizeof buf);
    break;
  case OP_RECV:
    r = recv(fd_a, buf, sizeof buf, 0);
    break;
  case OP_ACCEPT:
    r = accept(fd_a, NULL, NULL);
    break;
  case OP_POLL: {
    struct pollfd p = {fd_a, POLLIN, 0};
    r = poll(&p, 1, -1);
    break;
  }
  case OP_SELECT: {
    fd_set s;
    FD_ZERO(&s);
    FD_SET(fd_a, &s);
    r = select(fd_a + 1, &s, NULL, NULL, NULL);
    break;
  }
  case OP_PSELECT: {
    fd_set s;
    FD_ZERO(&s);
    FD_SET(fd_a, &s);
    sigset_t none;
    sigemptyset(&none);
    r = pselect(fd_a + 1, &s, NULL, NULL, NULL, &none);
    break;
  }
  case OP_EPOLL_PWAIT: {
    struct epoll_event ev;
    sigset_t none;
    sigemptyset(&none);
    r = epoll_pwait(fd_a, &ev, 1, -1, &none);
    break;
  }
  case OP_EPOLL: {
    struct epoll_event ev;
    r = epoll_wait(fd_a, &ev, 1, -1);
    break;
  }
  }
  pthread_cleanup_pop(0);
  fprintf(stderr, "%s returned %ld instead of being cancelled\n", op_name[op],
          r);
  return NULL;
}

/* Blocks a thread in op on fd, cancels it, checks the outcome. */
static void cancel_blocked(enum op op, int fd) {
  fd_a = fd;
  entered = 0;
  int before = cleanups;
  pthread_t t;
  CHECK(pthread_create(&t, NULL, blocker, (void *)(long)op) == 0);
  while (!entered)
    usleep(1000);
  usleep(30000); /* parked in the call by now */
  CHECK(pthread_cancel(t) == 0);
  void *r;
  CHECK(pthread_join(t, &r) == 0);
  if (r != PTHREAD_CANCELED)
    fprintf(stderr, "%s: not cancelled\n", op_name[op]);
  CHECK(r == PTHREAD_CANCELED);
  CHECK(cleanups == before + 1);
  printf("cancelled in %s\n", op_name[op]);
}

static volatile int cancel_sent, read_result = -2;
static int pipe_r;

/* Cancelled while disabled; enables (deferred: nothing happens yet), then
 * reads a pipe that holds a byte: read acts on entry, leaving the byte. */
static void *pending_on_entry(void *arg) {
  (void)arg;
  pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
  entered = 1;
  while (!cancel_sent)
    usleep(1000);
  pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, NULL);
  char c;
  read_result = (int)read(pipe_r, &c, 1);
  return NULL;
}

/* Blocked in read with cancellation disabled: the read completes with the
 * byte written later; the cancellation acts at pthread_testcancel. */
static void *disabled_read(void *arg) {
  (void)arg;
  pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
  entered = 1;
  char c = 0;
  read_result = (int)read(pipe_r, &c, 1);
  if (c != 'd')
    read_result = -3;
  pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, NULL);
  pthread_testcancel();
  return NULL;
}

int main(void) {
  report_on_swarm();
  alarm(60); /* a call that cannot be cancelled hangs: fail instead */
  int p[2];

  CHECK(pipe(p) == 0);
  cancel_blocked(OP_READ, p[0]);
  cancel_blocked(OP_POLL, p[0]);
  cancel_blocked(OP_SELECT, p[0]);
  cancel_blocked(OP_PSELECT, p[0]);
  char fill[4096];
  memset(fill, 'f', sizeof fill);
  /* fill the pipe (blocking writes until full would hang: count its size) */
  for (int free_space = fcntl(p[1], F_GETPIPE_SZ); free_space > 0;
       free_space -= (int)sizeof fill)
    CHECK(write(p[1], fill, sizeof fill) == (ssize_t)sizeof fill);
  cancel_blocked(OP_WRITE, p[1]);
  close(p[0]);
  close(p[1]);

  int sv[2];
  CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
  cancel_blocked(OP_RECV, sv[0]);
  close(sv[0]);
  close(sv[1]);

  int l = socket(AF_INET, SOCK_STREAM, 0);
  CHECK(l >= 0);
  struct sockaddr_in a = {.sin_family = AF_INET,
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  CHECK(bind(l, (struct sockaddr *)&a, sizeof a) == 0);
  CHECK(listen(l, 4) == 0);
  cancel_blocked(OP_ACCEPT, l);
  close(l);

  int ep = epoll_create1(0);
  CHECK(ep >= 0 && pipe(p) == 0);
  struct epoll_event ev = {.events = EPOLLIN};
  CHECK(epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev) == 0);
  cancel_blocked(OP_EPOLL, ep);
  cancel_blocked(OP_EPOLL_PWAIT, ep);
  close(ep);

  /* pending on entry: the byte stays in the pipe */
  pipe_r = p[0];
  CHECK(write(p[1], "e", 1) == 1);
  entered = 0;
  pthread_t t;
  void *r;
  CHECK(pthread_create(&t, NULL, pending_on_entry, NULL) == 0);
  while (!entered)
    usleep(1000);
  CHECK(pthread_cancel(t) == 0);
  cancel_sent = 1;
  CHECK(pthread_join(t, &r) == 0 && r == PTHREAD_CANCELED);
  CHECK(read_result == -2); /* read never returned */
  char c = 0;
  CHECK(read(p[0], &c, 1) == 1 && c == 'e');
  printf("pending on entry: read acted first, the byte stayed\n");

  /* disabled while blocked: the read completes, the cancel acts later */
  entered = 0;
  CHECK(pthread_create(&t, NULL, disabled_read, NULL) == 0);
  while (!entered)
    usleep(1000);
  usleep(30000);
  CHECK(pthread_cancel(t) == 0);
  usleep(30000); /* still blocked: a disabled cancel does not end it */
  CHECK(read_result == -2);
  CHECK(write(p[1], "d", 1) == 1);
  CHECK(pthread_join(t, &r) == 0 && r == PTHREAD_CANCELED);
  CHECK(read_result == 1);
  printf("disabled: the read completed, the cancel acted after\n");
  close(p[0]);
  close(p[1]);
  printf("OK cancel_io\n");
  return 0;
}
