/*
 * io/epoll.c — the epoll back end of the poller (io/backend.h): one epoll
 * per worker, descriptors registered once, edge-triggered, for both
 * directions; an eventfd in it (token IO_WAKE_TOKEN) carries the
 * scheduler's wake-ups to a worker asleep in epoll_wait.
 *
 * Races kept here: only the owning worker drains the wake-up eventfd. It
 * is level-triggered, so a monitor or spare that polls the same epoll
 * simply sees it again; had one drained it between the owner's "in_sleep"
 * store and its epoll_wait, a wake meant for the owner would be lost.
 */
#include <sys/epoll.h>
#include <sys/eventfd.h>

#include "io/backend.h"
#include "io/io.h"

static int ep_open(struct io_worker *iw) {
  int epfd = (int)sys_epoll_create1(EPOLL_CLOEXEC);
  int evfd = (int)sys_eventfd2(0, EFD_CLOEXEC | EFD_NONBLOCK);
  struct epoll_event ev = {.events = EPOLLIN, .data.u64 = IO_WAKE_TOKEN};
  long r = epfd < 0 ? epfd : evfd < 0 ? evfd : 0;
  if (r == 0)
    r = sys_epoll_ctl(epfd, EPOLL_CTL_ADD, evfd, &ev);
  if (r == 0) {
    iw->fd = epfd;
    iw->evfd = evfd;
    return 0;
  }
  if (epfd >= 0)
    sys_close(epfd);
  if (evfd >= 0)
    sys_close(evfd);
  return (int)r;
}

static void ep_drop(struct io_worker *iw) {
  sys_close(iw->fd);
  sys_close(iw->evfd);
}

static long ep_add(struct io_worker *iw, int fd, uint64_t token, bool owner) {
  (void)owner;
  struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP |
                                     EPOLLPRI | EPOLLET,
                           .data.u64 = token};
  long r = sys_epoll_ctl(iw->fd, EPOLL_CTL_ADD, fd, &ev);
  if (r == -EEXIST) /* a stale registration of an old generation */
    r = sys_epoll_ctl(iw->fd, EPOLL_CTL_MOD, fd, &ev);
  return r;
}

static void ep_del(struct io_worker *iw, int fd, uint64_t token) {
  (void)token;
  sys_epoll_ctl(iw->fd, EPOLL_CTL_DEL, fd, NULL);
}

static int ep_wait(struct io_worker *iw, int64_t timeout_ns, bool owner,
                   int *readied) {
  struct epoll_event ev[IO_EVENT_BATCH];
  int ms = timeout_ns <= 0 ? 0 : (int)((timeout_ns + 999999) / 1000000);
  long n = sys_epoll_pwait(iw->fd, ev, IO_EVENT_BATCH, ms, NULL);
  /* Memory the deliveries will wait on, fetched ahead (io.h): the batch's
   * entries at once, then each event's parked reader while the call of
   * the event before it runs. */
  for (long i = 0; i < n; i++)
    io_prefetch_entry(ev[i].data.u64);
  for (long i = 0; i < n; i++) {
    if (i + 1 < n)
      io_prefetch_waiter(ev[i + 1].data.u64);
    if (ev[i].data.u64 == IO_WAKE_TOKEN) {
      uint64_t v;
      if (owner)
        sys_read(iw->evfd, &v, sizeof v);
      continue;
    }
    *readied += io_deliver(ev[i].data.u64, ev[i].events);
  }
  return (int)n;
}

static void ep_wake(struct io_worker *iw) {
  uint64_t one = 1;
  sys_write(iw->evfd, &one, sizeof one);
}

const struct io_backend io_backend_epoll = {
    .name = "epoll",
    .poll_is_free = false,
    .open = ep_open,
    .drop = ep_drop,
    .add = ep_add,
    .del = ep_del,
    .wait = ep_wait,
    .wake = ep_wake,
};
