/*
 * io/opts.c — what a blocking call must know of a descriptor before it
 * parks: the open file's O_NONBLOCK and the socket's SO_RCVTIMEO /
 * SO_SNDTIMEO, asked of the kernel or cached (struct io_fd.opts).
 *
 * Both belong to the open file (or socket), which dups and other
 * processes share, and swarm never sets them: they are the program's. So
 * a call asks the kernel before it parks (F_GETFL; SO_RCVTIMEO or
 * SO_SNDTIMEO for a socket): two system calls per park, most of what
 * swarm paid beyond the epoll loop per ping-pong round trip (docs/io.md,
 * "Accounting"). Under the drop-in every call of the process that changes
 * them is interposed (fcntl/fcntl64 F_SETFL, ioctl FIONBIO, setsockopt at
 * SOL_SOCKET) and calls io_fd_opts_changed, which moves one global epoch;
 * an entry keeps what the kernel said, stamped with the epoch read before
 * asking, and the answer holds while the epoch stands (a change after the
 * epoch was read moves it past the stamp; one before it is seen by the
 * question). A new file at the number (classify) starts unknown. Limits:
 * another process sharing the open file (a child after fork, SCM_RIGHTS)
 * that changes the flag is not seen until this process changes one; nor
 * is a file opened at a number whose old file was closed behind swarm's
 * back (stdio's fclose: the entry is stale anyway, docs/io.md). The native
 * API sees none of the program's fcntl calls: it asks every time, unless
 * the program calls swarm_io_cache_flags() and promises to report its
 * changes with swarm_io_flags_changed() (include/swarm/io.h).
 *
 * Races: a filler stamps the epoch it read before its questions, so an
 * answer older than a change is never stamped with the epoch after it;
 * two fillers store the same answers. A fill racing with a close of the
 * same descriptor by another thread may stamp the new file's entry with
 * the old file's answer: the program's own race (it used a number while
 * closing it), as in the kernel.
 */
#include <fcntl.h>

#include "io/io.h"
#include "swarm/io.h"

struct io_opts_state io_opts = {.epoch = 1};

void io_fd_opts_watch(void) {
  atomic_store(&io_opts.watched, true);
}

void io_fd_opts_changed(void) {
  atomic_fetch_add(&io_opts.epoch, 1);
}

void swarm_io_cache_flags(void) {
  io_fd_opts_watch();
}

void swarm_io_flags_changed(void) {
  io_fd_opts_changed();
}

static int64_t sockopt_timeout(int fd, int dir) {
  struct timeval tv = {0, 0};
  socklen_t len = sizeof tv;
  if (getsockopt(fd, SOL_SOCKET, dir ? SO_SNDTIMEO : SO_RCVTIMEO, &tv, &len) !=
      0)
    return -1;
  if (tv.tv_sec == 0 && tv.tv_usec == 0)
    return -1;
  return (int64_t)tv.tv_sec * 1000000000 + (int64_t)tv.tv_usec * 1000;
}

/* Asks the kernel everything and caches it (when watched). */
static uint64_t opts_fill(struct io_fd *e, int fd) {
  uint32_t epoch = atomic_load_explicit(&io_opts.epoch, memory_order_acquire);
  long fl = sys_fcntl(fd, F_GETFL, 0);
  uint64_t w = epoch | IO_OPTS_VALID;
  if (fl >= 0 && (fl & O_NONBLOCK))
    w |= IO_OPTS_NONBLOCK;
  for (int d = 0; d < 2 && e->socket; d++) {
    int64_t t = sockopt_timeout(fd, d);
    atomic_store_explicit(&io_fd_timeo(fd)[d], t, memory_order_relaxed);
    if (t > 0)
      w |= IO_OPTS_TIMEO(d);
  }
  if (fl >= 0)
    atomic_store_explicit(&e->opts, w, memory_order_release);
  return w;
}

bool io_fd_nonblock_ask(struct io_fd *e, int fd) {
  if (!atomic_load_explicit(&io_opts.watched, memory_order_relaxed)) {
    long fl = sys_fcntl(fd, F_GETFL, 0);
    return fl >= 0 && (fl & O_NONBLOCK);
  }
  return opts_fill(e, fd) & IO_OPTS_NONBLOCK;
}

int64_t io_fd_timeout_ask(struct io_fd *e, int fd, int dir) {
  if (!atomic_load_explicit(&io_opts.watched, memory_order_relaxed))
    return sockopt_timeout(fd, dir);
  return opts_fill(e, fd) & IO_OPTS_TIMEO(dir)
             ? atomic_load_explicit(&io_fd_timeo(fd)[dir], memory_order_relaxed)
             : -1;
}
