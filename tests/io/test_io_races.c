/*
 * test_io_races: the readiness-edge races of the I/O layer.
 *  - many readers on one pipe: 64 threads each read single bytes until the
 *    writer's total is consumed; every byte is read exactly once and
 *    nobody is left waiting (a lost edge would hang a reader);
 *  - close while waited on: threads parked in swarm_read and swarm_poll on
 *    one descriptor all return EBADF when another thread closes it (ten
 *    rounds: a waiter woken before the kernel closed the file once
 *    registered it anew and waited for ever). The close waits until all
 *    of them are on the descriptor's list: one that came after it could
 *    find the number taken by a worker's new io_uring ring (it read
 *    EINVAL or polled POLLIN there, under load);
 *  - a number closed behind the layer's back while a thread is parked on
 *    it, then reused by a new pipe: the parked read ends with EBADF, the
 *    new pipe's byte goes to its own reader;
 *  - a descriptor passed between threads: a socket first waited on by one
 *    thread (registering it in that worker's epoll) is then used by other
 *    threads, on whatever worker they run, in a ping-pong of 2,000 rounds.
 */
#include <fcntl.h>
#include <poll.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "io/io.h"
#include "io_test.h"

#define READERS 64

static int pipe_fd[2];
static long per_reader;
static atomic_long bytes_read, byte_sum;

static void *reader(void *arg) {
  (void)arg;
  for (long i = 0; i < per_reader; i++) {
    unsigned char c;
    CHECK_EQ(swarm_read(pipe_fd[0], &c, 1), 1);
    atomic_fetch_add(&bytes_read, 1);
    atomic_fetch_add(&byte_sum, c);
  }
  return NULL;
}

static void many_readers(void) {
  CHECK(pipe(pipe_fd) == 0);
  per_reader = test_scaled(200, 20);
  swarm_thread_t t[READERS];
  for (int i = 0; i < READERS; i++)
    CHECK(swarm_spawn(&t[i], NULL, reader, NULL) == 0);
  long total = per_reader * READERS, expect_sum = 0;
  unsigned char buf[97];
  for (long sent = 0; sent < total;) {
    long n = total - sent < (long)sizeof buf ? total - sent : (long)sizeof buf;
    for (long i = 0; i < n; i++) {
      buf[i] = (unsigned char)(sent + i);
      expect_sum += buf[i];
    }
    CHECK(write_full(pipe_fd[1], buf, (size_t)n) == 0);
    sent += n;
    if (sent % 7 == 0)
      swarm_yield();
  }
  for (int i = 0; i < READERS; i++)
    CHECK(swarm_join(t[i], NULL) == 0);
  CHECK_EQ(atomic_load(&bytes_read), total);
  CHECK_EQ(atomic_load(&byte_sum), expect_sum);
  swarm_close(pipe_fd[0]);
  swarm_close(pipe_fd[1]);
}

static atomic_int parked;

static void *read_until_closed(void *arg) {
  int fd = (int)(intptr_t)arg;
  char c;
  atomic_fetch_add(&parked, 1);
  ssize_t r = swarm_read(fd, &c, 1);
  CHECK_EQ(r, -1);
  CHECK_EQ(ERRNO, EBADF);
  return NULL;
}

static void *poll_until_closed(void *arg) {
  int fd = (int)(intptr_t)arg;
  atomic_fetch_add(&parked, 1);
  int r = swarm_fd_wait(fd, POLLIN, -1);
  CHECK_EQ(r, -1);
  CHECK_EQ(ERRNO, EBADF);
  return NULL;
}

/* Threads parked reading (or polling for input) on fd. */
static int readers_parked_on(int fd) {
  struct io_fd *e = io_fd_entry(fd);
  int k = 0;
  spin_lock(&e->lock);
  for (struct io_node *n = e->head[0]; n; n = n->next)
    k++;
  spin_unlock(&e->lock);
  return k;
}

static void close_while_waited(void) {
  int sv[2];
  CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
  enum { N = 16 };
  swarm_thread_t t[N];
  atomic_store(&parked, 0);
  for (int i = 0; i < N; i++)
    CHECK(swarm_spawn(&t[i], NULL,
                      i % 2 ? poll_until_closed : read_until_closed,
                      (void *)(intptr_t)sv[0]) == 0);
  while (atomic_load(&parked) < N)
    swarm_sleep_ns(1000000);
  for (int i = 0; i < 10000 && readers_parked_on(sv[0]) < N; i++)
    swarm_sleep_ns(1000000); /* until they all wait */
  CHECK_EQ(readers_parked_on(sv[0]), N);
  CHECK_EQ(swarm_close(sv[0]), 0);
  for (int i = 0; i < N; i++)
    CHECK(swarm_join(t[i], NULL) == 0);
  swarm_close(sv[1]);
}

/* A number closed behind the I/O layer's back (as stdio's fclose does, by
 * the raw system call) while a thread is parked reading it, then reused
 * by a new pipe that the layer is told of (io_fd_created, as the drop-in's
 * pipe() does): the parked read ends with EBADF instead of staying on the
 * list, where the new pipe's first edge performed it on the new file (the
 * new pipe's byte read by the old waiter), and the new pipe works. */
static atomic_int old_reader_done;

static void *read_old_file(void *arg) {
  int fd = (int)(intptr_t)arg;
  char c = 0;
  ssize_t r = swarm_read(fd, &c, 1);
  CHECK(r == -1, "the old file's reader got %zd byte(s) ('%c')", r, c);
  CHECK_EQ(ERRNO, EBADF);
  atomic_store(&old_reader_done, 1);
  return NULL;
}

static void number_reborn(void) {
  atomic_store(&old_reader_done, 0);
  int old[2], fresh[2];
  CHECK(pipe(old) == 0);
  swarm_thread_t t;
  CHECK(swarm_spawn(&t, NULL, read_old_file, (void *)(intptr_t)old[0]) == 0);
  for (int i = 0; i < 10000 && readers_parked_on(old[0]) < 1; i++)
    swarm_sleep_ns(1000000);
  CHECK_EQ(readers_parked_on(old[0]), 1);
  CHECK_EQ(syscall(SYS_close, old[0]), 0); /* not through swarm */
  CHECK(pipe(fresh) == 0);
  CHECK_EQ(fresh[0], old[0]); /* the lowest free number, as POSIX says */
  io_fd_created(fresh[0]);
  for (int i = 0; i < 10000 && !atomic_load(&old_reader_done); i++)
    swarm_sleep_ns(1000000);
  CHECK(atomic_load(&old_reader_done),
        "the old file's reader still parked after 10 s");
  CHECK(swarm_join(t, NULL) == 0);
  CHECK_EQ(swarm_write(fresh[1], "N", 1), 1);
  char c = 0;
  CHECK_EQ(swarm_read(fresh[0], &c, 1), 1);
  CHECK_EQ(c, 'N');
  swarm_close(fresh[0]);
  swarm_close(fresh[1]);
  swarm_close(old[1]);
}

static int pass_fd[2];
static long rounds;

static void *pong(void *arg) {
  (void)arg;
  for (long i = 0; i < rounds; i++) {
    long v;
    CHECK(read_full(pass_fd[1], &v, sizeof v) == 0);
    CHECK_EQ(v, i);
    v = -i;
    CHECK(write_full(pass_fd[1], &v, sizeof v) == 0);
  }
  return NULL;
}

static void *ping_some(void *arg) {
  long *next = arg;
  for (int k = 0; k < 10 && *next < rounds; k++, (*next)++) {
    long v = *next;
    CHECK(write_full(pass_fd[0], &v, sizeof v) == 0);
    CHECK(read_full(pass_fd[0], &v, sizeof v) == 0);
    CHECK_EQ(v, -*next);
  }
  return NULL;
}

static void passed_between_threads(void) {
  CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, pass_fd) == 0);
  rounds = test_scaled(2000, 100);
  /* the first waiter registers pass_fd[1] in its worker's epoll */
  CHECK_EQ(swarm_fd_wait(pass_fd[1], POLLOUT, 0) > 0, 1);
  swarm_thread_t p;
  CHECK(swarm_spawn(&p, NULL, pong, NULL) == 0);
  long next = 0;
  while (next < rounds) { /* a fresh thread for every ten rounds */
    swarm_thread_t t;
    CHECK(swarm_spawn(&t, NULL, ping_some, &next) == 0);
    CHECK(swarm_join(t, NULL) == 0);
  }
  CHECK(swarm_join(p, NULL) == 0);
  swarm_close(pass_fd[0]);
  swarm_close(pass_fd[1]);
}

static void *body(void *arg) {
  (void)arg;
  /* phases on stderr: a hang says where it hangs */
  fprintf(stderr, "many readers on one pipe\n");
  many_readers();
  fprintf(stderr, "close while waited on\n");
  for (int round = 0; round < 10; round++)
    close_while_waited();
  fprintf(stderr, "a number closed behind our back and reused\n");
  number_reborn();
  fprintf(stderr, "a descriptor passed between threads\n");
  passed_between_threads();
  return NULL;
}

int main(void) {
  swarm_thread_t t;
  CHECK(swarm_spawn(&t, NULL, body, NULL) == 0);
  CHECK(swarm_join(t, NULL) == 0);
  TEST_PASS("io_races");
  return 0;
}
