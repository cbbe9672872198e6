/*
 * test_io_sendfile: swarm_sendfile (src/io/sendfile.c) copies a file to a
 * socket or pipe with the kernel's sendfile, parking only the calling
 * thread while the peer does not read:
 *  - errors as sendfile's: EBADF (either descriptor), EINVAL (negative
 *    offset), the kernel's own for a socket as the input, 0 for count 0 or at
 * the end of file;
 *  - offset NULL reads at the file's position and moves it; non-NULL reads
 *    at *offset, updates it, and leaves the file's position alone;
 *  - 4 MiB to a TCP peer that reads slowly arrive whole and in order; with
 *    one worker, a second swarm thread runs on that same worker's kernel
 *    thread while the sender waits (the worker was not blocked in the
 *    kernel: a spare worker would be another kernel thread);
 *  - a file truncated while it is sent: the count returned is what the
 *    peer received, all of it the file's bytes;
 *  - a pipe as out_fd (one page per call), with a slow reader;
 *  - an O_NONBLOCK socket that fills: a short count or EAGAIN, no wait;
 *    SO_SNDTIMEO ends the wait with the count so far;
 *  - from a kernel thread that is not a swarm thread.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/sendfile.h>
#include <sys/syscall.h>

#include "io_test.h"

#define BIG (4 << 20)

static unsigned char *data;
static int file_fd;

static unsigned char byte_at(long i) {
  return (unsigned char)((i * 2654435761u) >> 13);
}

static int make_file(long size) {
  char path[] = "/tmp/swarm-io-sendfile-XXXXXX";
  int fd = mkstemp(path);
  CHECK(fd >= 0);
  unlink(path);
  for (long off = 0; off < size;) {
    long n = size - off < BIG ? size - off : BIG;
    CHECK_EQ(pwrite(fd, data + off, (size_t)n, off), n);
    off += n;
  }
  return fd;
}

/* Reads n bytes from fd in small pieces, pausing, and checks them against
 * the file from offset `from` (up to check_limit); returns how many came
 * before end of file. */
static long check_limit = BIG;

static long read_check(int fd, long n, long from, int pause_us) {
  unsigned char buf[4096];
  long got = 0;
  while (got < n) {
    ssize_t r = read(fd, buf, sizeof buf);
    CHECK(r >= 0);
    if (r == 0)
      break;
    for (ssize_t i = 0; i < r && from + got + i < check_limit; i++)
      CHECK_EQ(buf[i], data[from + got + i]);
    got += r;
    if (pause_us && got % (256 << 10) < (long)sizeof buf)
      usleep((useconds_t)pause_us);
  }
  return got;
}

static void tcp_pair(int sv[2]) {
  int port, ls = listen_loopback(&port, 4);
  sv[0] = connect_loopback(port);
  CHECK(sv[0] >= 0);
  sv[1] = accept(ls, NULL, NULL);
  CHECK(sv[1] >= 0);
  close(ls);
}

static void errors(void) {
  int sv[2];
  tcp_pair(sv);
  off_t off = 0;
  CHECK_EQ(swarm_sendfile(-1, file_fd, &off, 10), -1);
  CHECK_EQ(ERRNO, EBADF);
  CHECK_EQ(swarm_sendfile(sv[0], -1, &off, 10), -1);
  CHECK_EQ(ERRNO, EBADF);
  off = -1;
  CHECK_EQ(swarm_sendfile(sv[0], file_fd, &off, 10), -1);
  CHECK_EQ(ERRNO, EINVAL);
  off = 0;
  /* a socket as the input: the kernel's own error (ESPIPE on Linux 6) */
  CHECK_EQ(sendfile(sv[0], sv[1], &off, 10), -1);
  int kernel_errno = ERRNO;
  CHECK(kernel_errno == EINVAL || kernel_errno == ESPIPE);
  CHECK_EQ(swarm_sendfile(sv[0], sv[1], &off, 10), -1);
  CHECK_EQ(ERRNO, kernel_errno);
  CHECK_EQ(swarm_sendfile(sv[0], file_fd, &off, 0), 0);
  off = BIG;
  CHECK_EQ(swarm_sendfile(sv[0], file_fd, &off, 10), 0); /* at the end */
  CHECK_EQ(off, BIG);
  /* offset NULL: the file's own position, which moves */
  CHECK_EQ(lseek(file_fd, 1000, SEEK_SET), 1000);
  CHECK_EQ(swarm_sendfile(sv[0], file_fd, NULL, 3000), 3000);
  CHECK_EQ(lseek(file_fd, 0, SEEK_CUR), 4000);
  CHECK_EQ(read_check(sv[1], 3000, 1000, 0), 3000);
  /* offset given: *offset moves, the position does not */
  off = 123;
  CHECK_EQ(swarm_sendfile(sv[0], file_fd, &off, 5000), 5000);
  CHECK_EQ(off, 5123);
  CHECK_EQ(lseek(file_fd, 0, SEEK_CUR), 4000);
  CHECK_EQ(read_check(sv[1], 5000, 123, 0), 5000);
  /* asking for more than the file has: what there is */
  off = BIG - 777;
  CHECK_EQ(swarm_sendfile(sv[0], file_fd, &off, 100000), 777);
  CHECK_EQ(read_check(sv[1], 777, BIG - 777, 0), 777);
  swarm_close(sv[0]);
  swarm_close(sv[1]);
}

/* ---- a slow TCP reader, with one worker shared by two swarm threads ---- */

static atomic_long sender_tid, other_tid;
static atomic_int sender_done;
static int big_sv[2];

static long tid(void) {
  return syscall(SYS_gettid);
}

static void *sender(void *arg) {
  (void)arg;
  off_t off = 0;
  atomic_store(&sender_tid, tid());
  ssize_t n = swarm_sendfile(big_sv[0], file_fd, &off, BIG);
  CHECK_EQ(n, BIG);
  CHECK_EQ(off, BIG);
  atomic_store(&sender_done, 1);
  return NULL;
}

static void *other(void *arg) {
  (void)arg;
  while (!atomic_load(&sender_tid))
    swarm_yield();
  atomic_store(&other_tid, tid());
  return NULL;
}

static void slow_peer(void) {
  tcp_pair(big_sv);
  int small = 16384;
  setsockopt(big_sv[1], SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
  swarm_thread_t s, o;
  CHECK_EQ(swarm_spawn(&s, NULL, sender, NULL), 0);
  CHECK_EQ(swarm_spawn(&o, NULL, other, NULL), 0);
  /* nobody reads until the other thread ran: the 4 MiB cannot all fit */
  while (!atomic_load(&other_tid))
    usleep(1000);
  CHECK(!atomic_load(&sender_done));
  if (swarm_num_workers() == 1)
    CHECK_EQ(atomic_load(&other_tid), atomic_load(&sender_tid));
  CHECK_EQ(read_check(big_sv[1], BIG, 0, 2000), BIG);
  CHECK_EQ(swarm_join(s, NULL), 0);
  CHECK_EQ(swarm_join(o, NULL), 0);
  swarm_close(big_sv[0]);
  swarm_close(big_sv[1]);
}

/* ---- truncated while sent ---- */

static atomic_long trunc_sent = -2;

/* sends, then closes its end so that the reader sees where it stopped */
static void *trunc_sender(void *arg) {
  int f = *(int *)arg;
  off_t off = 0;
  atomic_store(&trunc_sent, -1);
  ssize_t n = swarm_sendfile(big_sv[0], f, &off, BIG);
  CHECK_EQ(off, n);
  atomic_store(&trunc_sent, n);
  swarm_close(big_sv[0]);
  return NULL;
}

static void truncated(void) {
  int f = make_file(BIG);
  tcp_pair(big_sv);
  int small = 16384;
  setsockopt(big_sv[1], SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
  swarm_thread_t s;
  CHECK_EQ(swarm_spawn(&s, NULL, trunc_sender, &f), 0);
  while (atomic_load(&trunc_sent) == -2)
    usleep(1000);
  usleep(20000); /* let it fill the socket and wait */
  CHECK_EQ(ftruncate(f, 1 << 20), 0);
  /* what was queued before the truncation may have been cut from the
   * page cache under the socket (tmpfs zeroes it): only the bytes below
   * the new size are the file's for sure */
  check_limit = 1 << 20;
  long got = read_check(big_sv[1], BIG, 0, 0);
  check_limit = BIG;
  CHECK_EQ(swarm_join(s, NULL), 0);
  CHECK_EQ(got, atomic_load(&trunc_sent));
  CHECK(got >= 1 << 20 && got < BIG);
  swarm_close(big_sv[1]);
  close(f);
}

/* ---- a pipe ---- */

static int pipe_fds[2];

static void *pipe_sender(void *arg) {
  (void)arg;
  off_t off = 100; /* not page-aligned */
  CHECK_EQ(swarm_sendfile(pipe_fds[1], file_fd, &off, 1 << 20), 1 << 20);
  CHECK_EQ(off, 100 + (1 << 20));
  swarm_close(pipe_fds[1]);
  return NULL;
}

static void to_pipe(void) {
  CHECK_EQ(pipe(pipe_fds), 0);
  swarm_thread_t s;
  CHECK_EQ(swarm_spawn(&s, NULL, pipe_sender, NULL), 0);
  CHECK_EQ(read_check(pipe_fds[0], 1 << 20, 100, 1000), 1 << 20);
  CHECK_EQ(swarm_join(s, NULL), 0);
  swarm_close(pipe_fds[0]);
}

/* ---- nobody reads: O_NONBLOCK and SO_SNDTIMEO ---- */

static void *full_sender(void *arg) {
  int *mode = arg;
  int sv[2], small = 16384, sndbuf = 65536;
  tcp_pair(sv);
  setsockopt(sv[1], SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
  setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf);
  if (*mode == 0) {
    CHECK_EQ(fcntl(sv[0], F_SETFL, O_NONBLOCK), 0);
  } else {
    struct timeval t = {0, 50000};
    CHECK_EQ(setsockopt(sv[0], SOL_SOCKET, SO_SNDTIMEO, &t, sizeof t), 0);
  }
  off_t off = 0;
  long total = 0;
  ssize_t n;
  /* each call ends without a reader: first with some bytes, at last with
   * EAGAIN once the buffers are full */
  while ((n = swarm_sendfile(sv[0], file_fd, &off, BIG)) > 0) {
    CHECK(n < BIG);
    total += n;
    CHECK(total < BIG);
  }
  CHECK_EQ(n, -1);
  CHECK_EQ(ERRNO, EAGAIN);
  CHECK_EQ(off, total);
  CHECK_EQ(shutdown(sv[0], SHUT_WR), 0);
  CHECK_EQ(read_check(sv[1], BIG, 0, 0), total);
  swarm_close(sv[0]);
  swarm_close(sv[1]);
  return NULL;
}

static void nobody_reads(int mode) {
  swarm_thread_t s;
  CHECK_EQ(swarm_spawn(&s, NULL, full_sender, &mode), 0);
  CHECK_EQ(swarm_join(s, NULL), 0);
}

/* ---- from a kernel thread ---- */

static void *kernel_sender(void *arg) {
  (void)arg;
  off_t off = 0;
  CHECK_EQ(swarm_sendfile(big_sv[0], file_fd, &off, BIG), BIG);
  return NULL;
}

static void from_kernel_thread(void) {
  tcp_pair(big_sv);
  pthread_t t;
  CHECK_EQ(pthread_create(&t, NULL, kernel_sender, NULL), 0);
  CHECK_EQ(read_check(big_sv[1], BIG, 0, 1000), BIG);
  CHECK_EQ(pthread_join(t, NULL), 0);
  swarm_close(big_sv[0]);
  swarm_close(big_sv[1]);
}

int main(void) {
  data = malloc(BIG);
  CHECK(data != NULL);
  for (long i = 0; i < BIG; i++)
    data[i] = byte_at(i);
  file_fd = make_file(BIG);
  CHECK_EQ(swarm_init(NULL), 0);
  errors();
  slow_peer();
  truncated();
  to_pipe();
  nobody_reads(0);
  nobody_reads(1);
  from_kernel_thread();
  printf("test_io_sendfile: ok (%d workers)\n", swarm_num_workers());
  return 0;
}
