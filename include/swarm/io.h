/*
 * swarm/io.h — blocking I/O on swarm threads (optional part of libswarm).
 *
 * Each call has the semantics, return value and errno of the libc call it
 * is named after, with one difference: where the libc call would block the
 * kernel thread, these block only the calling swarm thread. The runtime
 * makes each call without blocking, parks the thread on the descriptor, and a
 * worker (an idle one; a busy one at the monitor's request; or the monitor
 * itself, within a few milliseconds, even while every worker computes)
 * performs the call when the descriptor becomes ready and makes the thread
 * runnable again.
 *
 * Descriptors:
 *  - Sockets, pipes, FIFOs, character devices that epoll accepts, eventfd,
 *    timerfd, signalfd and epoll descriptors are waited for in the kernel's
 *    epoll. swarm never changes a descriptor's O_NONBLOCK (it belongs to
 *    the open file, shared with dup()s and child processes, which must not
 *    see a flag the program did not set): each call is made non-blocking
 *    by itself (RWF_NOWAIT, MSG_DONTWAIT, or a readiness check before the
 *    call), and a descriptor the program made non-blocking gets EAGAIN as
 *    libc's calls would give. Plain read/write on the same descriptor
 *    stay as blocking as the program made it; use swarm_close to close
 *    one other threads may wait on. A blocking swarm_connect runs on a
 *    pool kernel thread while the calling thread parks.
 *  - Regular files and block devices never make epoll wait: a read or
 *    write (also positional: pread, pwrite, preadv, pwritev) first tries
 *    the page cache without blocking (RWF_NOWAIT), and what it cannot
 *    finish there, and every fsync/fdatasync, is handed to a small pool of
 *    kernel threads while the swarm thread parks, so a worker never waits
 *    for the disk.
 *  - Timeouts: SO_RCVTIMEO / SO_SNDTIMEO on sockets end the wait with
 *    EAGAIN (EINPROGRESS for connect), as in Linux; poll, ppoll, select and
 *    swarm_epoll_wait honour their timeout arguments.
 *  - swarm_close on a descriptor other threads wait on wakes them with
 *    EBADF.
 *
 * All calls also work from kernel threads that are not swarm threads: they
 * block that kernel thread (on a futex) until the descriptor is ready.
 */
#ifndef SWARM_IO_H
#define SWARM_IO_H

#include <poll.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

/* exported from the hidden-visibility library (as in swarm.h) */
#pragma GCC visibility push(default)

ssize_t swarm_read(int fd, void *buf, size_t count);
ssize_t swarm_write(int fd, const void *buf, size_t count);
ssize_t swarm_readv(int fd, const struct iovec *iov, int iovcnt);
ssize_t swarm_writev(int fd, const struct iovec *iov, int iovcnt);

/* At a file offset, which they leave as it is: on a regular file the page
 * cache is tried first, then the pool; on a pipe or socket the kernel's
 * ESPIPE. EINVAL for a negative offset. */
ssize_t swarm_pread(int fd, void *buf, size_t count, off_t offset);
ssize_t swarm_pwrite(int fd, const void *buf, size_t count, off_t offset);
ssize_t swarm_preadv(int fd, const struct iovec *iov, int iovcnt, off_t offset);
ssize_t swarm_pwritev(int fd, const struct iovec *iov, int iovcnt,
                      off_t offset);

/* sendfile(2): copies up to count bytes from in_fd (a file) to out_fd in
 * the kernel, without passing them through user space; offset NULL reads
 * at in_fd's position and moves it, otherwise reads at *offset and updates
 * *offset only. Like the kernel's blocking call it returns when count bytes
 * are sent (at most 0x7ffff000), in_fd ends (fewer), or an error comes
 * after none were sent; while a socket or pipe out_fd is full only the
 * calling thread waits (SO_SNDTIMEO honoured: EAGAIN), and an out_fd the
 * program made O_NONBLOCK gets EAGAIN (or the count so far). Errors as
 * sendfile's: EBADF, EINVAL (negative *offset, a descriptor sendfile
 * cannot use), EPIPE, ... Pages not in the page cache are read by the
 * call itself: the worker waits for the disk then. */
ssize_t swarm_sendfile(int out_fd, int in_fd, off_t *offset, size_t count);

/* On a regular file or block device they run on the pool (a flush to the
 * disk may take tens of milliseconds); elsewhere the plain call. */
int swarm_fsync(int fd);
int swarm_fdatasync(int fd);

ssize_t swarm_recv(int fd, void *buf, size_t len, int flags);
ssize_t swarm_send(int fd, const void *buf, size_t len, int flags);
ssize_t swarm_recvfrom(int fd, void *buf, size_t len, int flags,
                       struct sockaddr *src, socklen_t *addrlen);
ssize_t swarm_sendto(int fd, const void *buf, size_t len, int flags,
                     const struct sockaddr *dest, socklen_t addrlen);
ssize_t swarm_recvmsg(int fd, struct msghdr *msg, int flags);
ssize_t swarm_sendmsg(int fd, const struct msghdr *msg, int flags);

/* The new descriptor is blocking unless SOCK_NONBLOCK was given to
 * swarm_accept4, as with accept4; swarm_* calls on it park the thread. */
int swarm_accept(int fd, struct sockaddr *addr, socklen_t *addrlen);
int swarm_accept4(int fd, struct sockaddr *addr, socklen_t *addrlen, int flags);

int swarm_connect(int fd, const struct sockaddr *addr, socklen_t addrlen);
int swarm_poll(struct pollfd *fds, nfds_t nfds, int timeout_ms);

/* sigmask applies to the readiness check only: a parked swarm thread
 * receives no signals. */
int swarm_ppoll(struct pollfd *fds, nfds_t nfds, const struct timespec *tmo,
                const sigset_t *sigmask);

/* Like select(2), except that *timeout is not updated. */
int swarm_select(int nfds, fd_set *readfds, fd_set *writefds, fd_set *exceptfds,
                 struct timeval *timeout);

int swarm_epoll_wait(int epfd, struct epoll_event *events, int maxevents,
                     int timeout_ms);

/* Waits until fd is ready for `events` (POLLIN, POLLOUT, ...) or timeout_ms
 * passes (< 0: no limit). Returns the ready events (> 0), 0 on timeout, or
 * -1 with errno (EBADF, also when fd is closed while waited on). */
int swarm_fd_wait(int fd, short events, int timeout_ms);

/* Closes fd, waking threads that wait on it with EBADF, and forgets what
 * swarm knew about it. */
int swarm_close(int fd);

/* O_NONBLOCK and the socket timeouts. Before a call parks its thread it
 * must know whether the program made the descriptor non-blocking (then it
 * returns EAGAIN instead) and, on a socket, SO_RCVTIMEO / SO_SNDTIMEO.
 * Both belong to the open file, which dup()s and other processes share,
 * and the program changes them with libc's fcntl, ioctl and setsockopt,
 * which swarm does not see; so by default every wait asks the kernel (two
 * system calls per wait, exact whatever changed them).
 *
 * swarm_io_cache_flags() lets swarm keep, per descriptor, what the kernel
 * said at its first wait, until the descriptor is closed with swarm_close
 * (or made anew by swarm_accept/swarm_accept4) or swarm_io_flags_changed()
 * is called. A program that calls it promises to call
 * swarm_io_flags_changed() after every change of O_NONBLOCK (fcntl F_SETFL,
 * ioctl FIONBIO) or of SO_RCVTIMEO / SO_SNDTIMEO on a descriptor some
 * swarm call may already have waited on, in any of its copies; changes
 * made before a descriptor's first wait need nothing. Another process
 * sharing the open file that changes the flag is not seen. Under the
 * drop-in (swarmrun) this is automatic: its fcntl, ioctl and setsockopt
 * tell swarm of every change the process makes. Both calls are cheap and
 * may be made at any time, from any thread. */
void swarm_io_cache_flags(void);
void swarm_io_flags_changed(void);

#pragma GCC visibility pop

#ifdef __cplusplus
}
#endif
#endif
