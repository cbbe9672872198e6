/*
 * io/sendfile.c — swarm_sendfile (include/swarm/io.h), also the drop-in's
 * sendfile: the kernel copies from a file to a socket without the data
 * passing through user space, and only the calling swarm thread waits
 * while the socket is full.
 *
 * sendfile(2) has no per-call non-blocking form (no RWF_NOWAIT, no
 * MSG_DONTWAIT: on a socket it waits exactly when the open file lacks
 * O_NONBLOCK), and swarm never sets O_NONBLOCK (docs/io.md). So each call
 * asks the socket how much it takes without waiting and sends no more:
 *  - a socket: SO_MEMINFO gives the send buffer (SNDBUF) and what is
 *    queued in it (WMEM_QUEUED for TCP, WMEM_ALLOC for the others); the
 *    kernel's sender waits only when it starts a new buffer (skb) with the
 *    queue at or above SNDBUF, so sending half the room never waits as long
 *    as each skb carries at least its own overhead in data (TCP with
 *    segmentation offload: tens of KiB per skb; Unix sockets: half the
 *    buffer). With no room it waits for POLLOUT (swarm_fd_wait: the thread
 *    parks, the worker runs others), as the kernel's own sender would.
 *  - a pipe: POLLOUT means one free slot, and a piece of the file within
 *    one page fills one slot at most, so it sends up to the next page
 *    boundary per call.
 *  - anything else (a regular file, since Linux 2.6.33): the plain call.
 * It loops until count bytes are sent, the file ends (a call that sends
 * 0) or an error, like the kernel's blocking sendfile; an error after some
 * bytes went returns the count. A socket the program made O_NONBLOCK gets
 * EAGAIN where it would wait (checked only then, as io_call checks it:
 * kept per descriptor under swarm_io_cache_flags), and SO_SNDTIMEO ends
 * each wait with EAGAIN (or the count sent so far).
 *
 * Known limit: the file's pages are read by the sending call itself, so a
 * file not in the page cache makes the worker wait for the disk (as a page
 * fault in mmap'd data would); the page cache is what a static-file server
 * serves from.
 */
#include <fcntl.h>
#include <linux/sock_diag.h>
#include <sys/time.h>

#include "io/io.h"
#include "swarm/io.h"

enum { PAGE_PIECE = 4096 };
#define MAX_SEND ((size_t)0x7ffff000) /* sendfile's most per call */

/* Without SO_MEMINFO's answer (qemu-user answers nothing; a kernel before
 * 4.12 refuses it): POLLOUT on a stream socket says at least a third of
 * its send buffer is free (tcp_poll: free >= queued / 2), so a quarter of
 * SO_SNDBUF goes without the sender waiting. */
static long socket_room_by_poll(int fd) {
  int sndbuf = 0;
  socklen_t len = sizeof sndbuf;
  long r = sys_getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, &len);
  if (r < 0)
    return r;
  struct pollfd p = {fd, POLLOUT, 0};
  r = sys_ppoll(&p, 1, &(struct timespec){0, 0}, NULL);
  if (r < 0)
    return r == -EINTR ? 0 : r;
  if (r == 0 || !(p.revents & POLLOUT))
    return 0;
  return sndbuf >= 4 * PAGE_PIECE ? sndbuf / 4 : PAGE_PIECE;
}

/* How many bytes socket fd takes without its sender waiting (>= 0), or
 * -errno (-ENOTSOCK: not a socket). */
static long socket_room(int fd) {
  uint32_t mem[SK_MEMINFO_VARS] = {0};
  socklen_t len = sizeof mem;
  long r = sys_getsockopt(fd, SOL_SOCKET, SO_MEMINFO, mem, &len);
  if (r == -ENOTSOCK || r == -EBADF)
    return r;
  if (r < 0 || len <= SK_MEMINFO_WMEM_QUEUED * sizeof mem[0] ||
      mem[SK_MEMINFO_SNDBUF] == 0)
    return socket_room_by_poll(fd);
  uint32_t used = mem[SK_MEMINFO_WMEM_QUEUED] > mem[SK_MEMINFO_WMEM_ALLOC]
                      ? mem[SK_MEMINFO_WMEM_QUEUED]
                      : mem[SK_MEMINFO_WMEM_ALLOC];
  long room = (long)mem[SK_MEMINFO_SNDBUF] - (long)used;
  return room > 0 ? room / 2 : 0;
}

/* Waits for out to take more: 0, or -errno (EAGAIN for a descriptor the
 * program made non-blocking or a send timeout, EBADF when it is closed). */
static long wait_room(int out, bool sock) {
  /* O_NONBLOCK and SO_SNDTIMEO as io_call asks them: from the kernel, or
   * kept per descriptor under swarm_io_cache_flags / the drop-in. */
  struct io_fd *e = io_fd_get(out, true);
  if (!e)
    return -*os_errno_location();
  if (io_fd_nonblock(e, out))
    return -EAGAIN;
  int ms = -1;
  int64_t ns = sock ? io_fd_timeout(e, out, 1) : -1;
  if (ns > 0)
    ms =
        ns / 1000000 > 1000000000 ? 1000000000 : (int)((ns + 999999) / 1000000);
  int r = swarm_fd_wait(out, POLLOUT, ms);
  if (r < 0)
    return -*os_errno_location();
  return r == 0 ? -EAGAIN : 0;
}

/* The most the next call may send to a pipe: up to the next page boundary
 * of the file (one pipe slot), or -errno. */
static long pipe_piece(int in, const off_t *offset, size_t count) {
  off_t at = offset ? *offset : (off_t)sys_lseek(in, 0, SEEK_CUR);
  if (at < 0)
    return offset ? -EINVAL : (long)at;
  size_t room = PAGE_PIECE - (size_t)(at % PAGE_PIECE);
  return (long)(count < room ? count : room);
}

enum out_kind { OUT_UNKNOWN, OUT_SOCKET, OUT_PIPE, OUT_OTHER };

/* How much the next call may send without waiting: > 0, 0 (wait for
 * POLLOUT first), or -errno. Decides *kind on first use. */
static long room_for(int out, int in, const off_t *offset, size_t count,
                     enum out_kind *kind) {
  if (*kind == OUT_UNKNOWN || *kind == OUT_SOCKET) {
    long room = socket_room(out);
    if (room != -ENOTSOCK) {
      *kind = OUT_SOCKET;
      return room >= 0 && (size_t)room > count ? (long)count : room;
    }
    *kind = sys_fcntl(out, F_GETPIPE_SZ, 0) >= 0 ? OUT_PIPE : OUT_OTHER;
  }
  if (*kind == OUT_OTHER)
    return (long)count;
  struct pollfd p = {out, POLLOUT, 0};
  long r = sys_ppoll(&p, 1, &(struct timespec){0, 0}, NULL);
  if (r < 0)
    return r == -EINTR ? 0 : r;
  if (r == 0)
    return 0;
  return pipe_piece(in, offset, count);
}

ssize_t swarm_sendfile(int out_fd, int in_fd, off_t *offset, size_t count) {
  if (count == 0 || (offset && *offset < 0))
    return io_fail(sys_sendfile(out_fd, in_fd, offset, count));
  if (count > MAX_SEND)
    count = MAX_SEND; /* the kernel's limit per call */
  enum out_kind kind = OUT_UNKNOWN;
  size_t total = 0;
  while (total < count) {
    long r = room_for(out_fd, in_fd, offset, count - total, &kind);
    long piece = r;
    if (r > 0)
      r = sys_sendfile(out_fd, in_fd, offset, (size_t)piece);
    if (r == 0 || r == -EAGAIN) { /* no room, or it was taken meanwhile */
      if (r == 0 && piece > 0)
        break; /* the file ended */
      r = wait_room(out_fd, kind == OUT_SOCKET);
      if (r == 0 || r == -EINTR)
        continue;
    }
    if (r == -EINTR)
      continue;
    if (r < 0)
      return total ? (ssize_t)total : io_fail(r);
    /* A short count is most often the file's end, which the next call
     * says with 0; asking again costs one call there, and keeps a count
     * a signal cut short from ending the transfer. */
    total += (size_t)r;
  }
  return (ssize_t)total;
}
