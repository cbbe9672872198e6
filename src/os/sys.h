/*
 * os/sys.h — the one way from the runtime to the kernel: the only header
 * that names the system calls and libc functions swarm needs raw. os/, core/,
 * sync/ and io/ reach the kernel through it (or through os.h, built on it),
 * and so do the drop-in's interposers (src/pthread), which need the real
 * functions behind the names they define.
 *
 * Why raw. libswarm-pthread.so defines read, write, close, fcntl, pipe,
 * nanosleep, sched_yield, pthread_create, pthread_mutex_lock, ... for the
 * program it is preloaded into; inside that library a call to one of those
 * names from the runtime would bind to the drop-in's definition and enter
 * swarm from inside swarm. So the runtime calls none of them by name:
 *
 *  - sys_X(...) is the system call X made inline (sys_raw6; syscall(2) on
 *    other architectures than x86-64 and aarch64): no libc wrapper that
 *    could be interposed, and the result is the kernel's register (>= 0,
 *    or -errno, never read back from errno; errno is set as syscall(2)
 *    sets it). They are static inline: as cheap as the libc wrapper.
 *  - libc_X(...) is libc's own X, for what has no system call of its own
 *    (kernel threads are NPTL's) or must keep libc's exact behaviour (the
 *    drop-in's pass-throughs: fork, NPTL's semaphores, sleeps of kernel
 *    threads that are not swarm threads). Results and errno as libc's X.
 *    Two bindings, one list (OS_LIBC_FUNCTIONS): libswarm links
 *    os/libc_direct.c, which calls the names (libc is all there is);
 *    libswarm-pthread links os/libc_next.c, which looks each one up once
 *    with dlsym(RTLD_NEXT), i.e. in the libraries after the drop-in.
 *
 * So the runtime is compiled once, the same objects go into both
 * libraries, and none of them names a function the drop-in defines: the
 * test dropin_symbols (tests/pthread/check_symbols.sh) checks exactly that
 * against the built drop-in. Rejected: compiling the runtime a second time
 * with the names renamed by macros (what swarm did: two builds to keep in
 * step, and the io layer had to solve the same problem again by itself);
 * glibc's versioned symbol names (they differ by architecture and release);
 * dlsym in libswarm too (no dlsym in a statically linked program).
 */
#ifndef SWARM_OS_SYS_H
#define SWARM_OS_SYS_H

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

/* ---- system calls: results >= 0, or -errno ---- */

/* The kernel's result taken from its register, not read back from errno:
 * errno is the kernel thread's, and a swarm thread of the program that
 * took its address on one worker (glibc declares __errno_location const,
 * so compilers keep it across calls) and was switched to another may store
 * into it while this worker runs us, between syscall(2)'s store and our
 * read. A failed pwritev2 then read back as 0: write() returned 0 having
 * written nothing (tests/pthread/python_http.sh lost a log line; the same
 * race turned a socket's EAGAIN into 0, an end of file). errno is still
 * set as syscall(2) sets it, for callers that look at it. Other
 * architectures keep syscall(2) and errno. */
static inline long sys_raw6(long nr, long a, long b, long c, long d, long e,
                            long f) {
#if defined(__x86_64__)
  register long r10 __asm__("r10") = d;
  register long r8 __asm__("r8") = e;
  register long r9 __asm__("r9") = f;
  long r;
  __asm__ volatile("syscall"
                   : "=a"(r)
                   : "0"(nr), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
                   : "rcx", "r11", "memory");
#elif defined(__aarch64__)
  register long x8 __asm__("x8") = nr;
  register long x0 __asm__("x0") = a;
  register long x1 __asm__("x1") = b;
  register long x2 __asm__("x2") = c;
  register long x3 __asm__("x3") = d;
  register long x4 __asm__("x4") = e;
  register long x5 __asm__("x5") = f;
  __asm__ volatile("svc 0"
                   : "+r"(x0)
                   : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5)
                   : "memory");
  long r = x0;
#else
  long r = syscall(nr, a, b, c, d, e, f);
  return r < 0 ? -(long)errno : r;
#endif
  if (r < 0 && r > -4096)
    errno = (int)-r;
  return r;
}
#define sys_call_(nr, a, b, c, d, e, f, ...)                                   \
  sys_raw6((long)(nr), (long)(a), (long)(b), (long)(c), (long)(d), (long)(e),  \
           (long)(f))
/* sys_call(SYS_x, args...): the system call, >= 0 or -errno (above). */
#define sys_call(...) sys_call_(__VA_ARGS__, 0, 0, 0, 0, 0, 0, 0)
static inline long sys_read(int fd, void *b, size_t n) {
  return sys_call(SYS_read, fd, b, n);
}
static inline long sys_write(int fd, const void *b, size_t n) {
  return sys_call(SYS_write, fd, b, n);
}
static inline long sys_readv(int fd, const struct iovec *v, int c) {
  return sys_call(SYS_readv, fd, v, c);
}
static inline long sys_writev(int fd, const struct iovec *v, int c) {
  return sys_call(SYS_writev, fd, v, c);
}
/* The raw preadv/pwritev take the offset as (low, high) halves too. */
static inline long sys_pread(int fd, void *b, size_t n, off_t off) {
  return sys_call(SYS_pread64, fd, b, n, off);
}
static inline long sys_pwrite(int fd, const void *b, size_t n, off_t off) {
  return sys_call(SYS_pwrite64, fd, b, n, off);
}
static inline long sys_preadv(int fd, const struct iovec *v, int c, off_t off) {
  return sys_call(SYS_preadv, fd, v, c, off, 0L);
}
static inline long sys_pwritev(int fd, const struct iovec *v, int c,
                               off_t off) {
  return sys_call(SYS_pwritev, fd, v, c, off, 0L);
}
/* preadv2 / pwritev2 with flags (RWF_NOWAIT); offset -1: the file's own
 * position. The raw calls take the offset as (low, high) halves; on 64-bit
 * the low word holds it all. */
static inline long sys_preadv2(int fd, const struct iovec *v, int c, off_t off,
                               int flags) {
  return sys_call(SYS_preadv2, fd, v, c, (long)off, off < 0 ? -1L : 0L, flags);
}
static inline long sys_pwritev2(int fd, const struct iovec *v, int c, off_t off,
                                int flags) {
  return sys_call(SYS_pwritev2, fd, v, c, (long)off, off < 0 ? -1L : 0L, flags);
}
static inline long sys_fsync(int fd) {
  return sys_call(SYS_fsync, fd);
}
static inline long sys_fdatasync(int fd) {
  return sys_call(SYS_fdatasync, fd);
}
static inline long sys_recvfrom(int fd, void *b, size_t n, int fl,
                                struct sockaddr *a, socklen_t *al) {
  return sys_call(SYS_recvfrom, fd, b, n, fl, a, al);
}
static inline long sys_sendto(int fd, const void *b, size_t n, int fl,
                              const struct sockaddr *a, socklen_t al) {
  return sys_call(SYS_sendto, fd, b, n, fl, a, al);
}
static inline long sys_recvmsg(int fd, struct msghdr *m, int fl) {
  return sys_call(SYS_recvmsg, fd, m, fl);
}
static inline long sys_sendmsg(int fd, const struct msghdr *m, int fl) {
  return sys_call(SYS_sendmsg, fd, m, fl);
}
/* sendfile: off NULL uses and moves in's file position (io/sendfile.c) */
static inline long sys_sendfile(int out, int in, off_t *off, size_t n) {
  return sys_call(SYS_sendfile, out, in, off, n);
}
static inline long sys_getsockopt(int fd, int level, int name, void *v,
                                  socklen_t *len) {
  return sys_call(SYS_getsockopt, fd, level, name, v, len);
}
static inline long sys_lseek(int fd, off_t off, int whence) {
  return sys_call(SYS_lseek, fd, off, whence);
}
static inline long sys_accept4(int fd, struct sockaddr *a, socklen_t *al,
                               int fl) {
  return sys_call(SYS_accept4, fd, a, al, fl);
}
static inline long sys_connect(int fd, const struct sockaddr *a, socklen_t al) {
  return sys_call(SYS_connect, fd, a, al);
}
static inline long sys_openat(int dir, const char *path, int flags) {
  return sys_call(SYS_openat, dir, path, flags, 0);
}
static inline long sys_close(int fd) {
  return sys_call(SYS_close, fd);
}
static inline long sys_fcntl(int fd, int cmd, long arg) {
  return sys_call(SYS_fcntl, fd, cmd, arg);
}
static inline long sys_socket(int domain, int type, int protocol) {
  return sys_call(SYS_socket, domain, type, protocol);
}
static inline long sys_socketpair(int domain, int type, int protocol,
                                  int sv[2]) {
  return sys_call(SYS_socketpair, domain, type, protocol, sv);
}
static inline long sys_dup(int old) {
  return sys_call(SYS_dup, old);
}
static inline long sys_dup3(int old, int new, int flags) {
  return sys_call(SYS_dup3, old, new, flags);
}
static inline long sys_pipe2(int fds[2], int flags) {
  return sys_call(SYS_pipe2, fds, flags);
}
static inline long sys_eventfd2(unsigned initval, int flags) {
  return sys_call(SYS_eventfd2, initval, flags);
}
static inline long sys_epoll_create1(int flags) {
  return sys_call(SYS_epoll_create1, flags);
}
/* poll, select and epoll_wait as their p-variants: AArch64 has only those */
/* The raw ppoll writes the time left back into its timeout: pass a copy,
 * so a const (read-only) timeout is fine. Linux ignores a failed write-back,
 * but qemu-user fails the call with EFAULT. */
static inline long sys_ppoll(struct pollfd *f, nfds_t n,
                             const struct timespec *t, const sigset_t *m) {
  struct timespec left, *tp = NULL;
  if (t) {
    left = *t;
    tp = &left;
  }
  return sys_call(SYS_ppoll, f, n, tp, m, (size_t)8 /* the kernel sigset */);
}
static inline long sys_epoll_pwait(int ep, struct epoll_event *ev, int n,
                                   int ms, const sigset_t *mask) {
  return sys_call(SYS_epoll_pwait, ep, ev, n, ms, mask, (size_t)8);
}
#ifdef SYS_epoll_pwait2
static inline long sys_epoll_pwait2(int ep, struct epoll_event *ev, int n,
                                    const struct timespec *t,
                                    const sigset_t *mask) {
  return sys_call(SYS_epoll_pwait2, ep, ev, n, t, mask, (size_t)8);
}
#endif
/* The raw pselect6 writes the time left back into its timeout (the caller
 * passes a copy) and takes the mask as {mask, size} (NULL: none). */
static inline long sys_pselect6(int nfds, fd_set *r, fd_set *w, fd_set *x,
                                struct timespec *t, const sigset_t *mask) {
  struct {
    const sigset_t *ss;
    size_t len;
  } sig = {mask, 8}; /* the kernel's sigset size */
  return sys_call(SYS_pselect6, nfds, r, w, x, t, mask ? &sig : NULL);
}
static inline long sys_epoll_ctl(int ep, int op, int fd,
                                 struct epoll_event *ev) {
  return sys_call(SYS_epoll_ctl, ep, op, fd, ev);
}
static inline long sys_sched_yield(void) {
  return sys_call(SYS_sched_yield);
}
/* The calling kernel thread's affinity (pid 0: itself). */
static inline long sys_sched_setaffinity_self(size_t size,
                                              const cpu_set_t *set) {
  return sys_call(SYS_sched_setaffinity, 0, size, set);
}
/* The calling kernel thread's signal mask. glibc's sigfillset leaves out
 * the signals NPTL keeps for itself, so a full set from it is safe here. */
static inline long sys_sigmask(int how, const sigset_t *set, sigset_t *old) {
  return sys_call(SYS_rt_sigprocmask, how, set, old, (size_t)8);
}
/* Sleeps until `until` on `clock` (TIMER_ABSTIME). */
static inline long sys_sleep_until(clockid_t clock,
                                   const struct timespec *until) {
  return sys_call(SYS_clock_nanosleep, clock, TIMER_ABSTIME, until, NULL);
}
static inline long sys_gettid(void) {
  return syscall(SYS_gettid);
}

/* ---- libc's own functions, never an interposer ---- */

/* X(return type, name, parameters, arguments), one entry per function. */
#define OS_LIBC_FUNCTIONS(X)                                                   \
  /* the runtime's kernel threads (os.c) */                                    \
  X(int, pthread_create,                                                       \
    (pthread_t * t, const pthread_attr_t *a, void *(*fn)(void *), void *arg),  \
    (t, a, fn, arg))                                                           \
  X(int, pthread_join, (pthread_t t, void **r), (t, r))                        \
  X(pthread_t, pthread_self, (void), ())                                       \
  X(int, pthread_getattr_np, (pthread_t t, pthread_attr_t * a), (t, a))        \
  /* libc's own key: its destructor ends a non-worker's descriptor (park.c) */ \
  X(int, pthread_key_create, (pthread_key_t * k, void (*d)(void *)), (k, d))   \
  X(int, pthread_setspecific, (pthread_key_t k, const void *v), (k, v))        \
  /* the drop-in's pass-throughs (src/pthread) */                              \
  X(int, pthread_sigmask, (int how, const sigset_t *set, sigset_t *old),       \
    (how, set, old))                                                           \
  X(int, pthread_kill, (pthread_t t, int sig), (t, sig))                       \
  X(int, pthread_getcpuclockid, (pthread_t t, clockid_t * c), (t, c))          \
  X(int, nanosleep, (const struct timespec *req, struct timespec *rem),        \
    (req, rem))                                                                \
  X(int, clock_nanosleep,                                                      \
    (clockid_t c, int flags, const struct timespec *req,                       \
     struct timespec *rem),                                                    \
    (c, flags, req, rem))                                                      \
  X(int, usleep, (useconds_t us), (us))                                        \
  /* the runtime's clock reads too: the drop-in defines clock_gettime */       \
  X(int, clock_gettime, (clockid_t c, struct timespec * ts), (c, ts))          \
  X(int, clock_getres, (clockid_t c, struct timespec * ts), (c, ts))           \
  X(unsigned, sleep, (unsigned s), (s))                                        \
  X(pid_t, fork, (void), ())                                                   \
  X(int, sem_init, (sem_t * s, int pshared, unsigned v), (s, pshared, v))      \
  X(int, sem_destroy, (sem_t * s), (s))                                        \
  X(int, sem_wait, (sem_t * s), (s))                                           \
  X(int, sem_trywait, (sem_t * s), (s))                                        \
  X(int, sem_timedwait, (sem_t * s, const struct timespec *t), (s, t))         \
  X(int, sem_clockwait, (sem_t * s, clockid_t c, const struct timespec *t),    \
    (s, c, t))                                                                 \
  X(int, sem_post, (sem_t * s), (s))                                           \
  X(int, sem_getvalue, (sem_t * s, int *v), (s, v))

#define OS_LIBC_DECLARE(ret, name, params, args) ret libc_##name params;
OS_LIBC_FUNCTIONS(OS_LIBC_DECLARE)
#undef OS_LIBC_DECLARE
/* and one that does not return, outside the list */
_Noreturn void libc_pthread_exit(void *value);

#endif
