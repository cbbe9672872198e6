/*
 * test_io_nonblock: swarm never sets O_NONBLOCK on a program's file (it is
 * the open file's flag, shared with other processes); each call is made
 * non-blocking by itself. Checks, through the native API:
 *  - pipe (RWF_NOWAIT path): threads that park in swarm_read and
 *    swarm_write leave both ends blocking (F_GETFL); one swarm_write of
 *    1 MiB returns 1 MiB, as a blocking write does, while a reader drains;
 *  - PIPE_BUF atomicity: writers of PIPE_BUF-byte records, racing on one
 *    pipe, never interleave inside a record;
 *  - a FIFO opened by name (no RWF_NOWAIT: readiness first, then the
 *    call): 4 readers taking single bytes get every byte once and nobody
 *    is left waiting (one edge wakes one such waiter; each that reads
 *    wakes the next), and writes larger than PIPE_BUF arrive whole;
 *  - accept (readiness first): 4 acceptors on one listening socket, each
 *    connection accepted once; swarm_connect on blocking sockets; neither
 *    the listening nor the accepted sockets become non-blocking;
 *  - a zero-length read on an empty socket returns 0 at once; an eventfd
 *    read parks until a write;
 *  - a descriptor the program made non-blocking says EAGAIN (pipe, FIFO).
 */
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <sys/eventfd.h>
#include <sys/stat.h>

#include "io_test.h"

static void check_blocking(int fd) {
  int fl = fcntl(fd, F_GETFL);
  CHECK(fl >= 0);
  CHECK(!(fl & O_NONBLOCK));
}

/* ---- pipe: parks both ways, and a long write is written whole ---- */

struct xfer {
  int fd;
  size_t bytes;
  size_t piece;
};

static void *drain(void *arg) {
  struct xfer *x = arg;
  char *buf = malloc(x->piece);
  CHECK(buf);
  size_t done = 0;
  while (done < x->bytes) {
    size_t n = x->piece < x->bytes - done ? x->piece : x->bytes - done;
    ssize_t r = swarm_read(x->fd, buf, n);
    CHECK(r > 0);
    for (ssize_t i = 0; i < r; i++)
      CHECK_EQ((unsigned char)buf[i], (done + (size_t)i) % 251);
    done += (size_t)r;
  }
  free(buf);
  return NULL;
}

static void pipe_whole_write(void) {
  int p[2];
  CHECK(pipe(p) == 0);
  size_t big = 1 << 20;
  char *buf = malloc(big);
  CHECK(buf);
  for (size_t i = 0; i < big; i++)
    buf[i] = (char)(i % 251);
  struct xfer x = {p[0], big, 3000};
  swarm_thread_t t;
  CHECK(swarm_spawn(&t, NULL, drain, &x) == 0);
  CHECK_EQ(swarm_write(p[1], buf, big), big); /* parks on a full pipe */
  CHECK(swarm_join(t, NULL) == 0);
  check_blocking(p[0]);
  check_blocking(p[1]);
  free(buf);
  swarm_close(p[0]);
  swarm_close(p[1]);
  printf("pipe: 1 MiB in one blocking write, both ends still blocking\n");
}

/* ---- PIPE_BUF records from racing writers ---- */

#define WRITERS 4
#define RECORDS 64

struct rec_writer {
  int fd;
  int id;
};

static void *write_records(void *arg) {
  struct rec_writer *w = arg;
  unsigned char rec[PIPE_BUF];
  for (int k = 0; k < RECORDS; k++) {
    int tag = w->id * RECORDS + k; /* < 256 */
    memset(rec, tag, sizeof rec);
    CHECK_EQ(swarm_write(w->fd, rec, sizeof rec), sizeof rec);
    if (k % 8 == 0)
      swarm_yield();
  }
  return NULL;
}

static void pipe_atomic_records(void) {
  int p[2];
  CHECK(pipe(p) == 0);
  swarm_thread_t t[WRITERS];
  struct rec_writer w[WRITERS];
  for (int i = 0; i < WRITERS; i++) {
    w[i] = (struct rec_writer){p[1], i};
    CHECK(swarm_spawn(&t[i], NULL, write_records, &w[i]) == 0);
  }
  static unsigned char stream[WRITERS * RECORDS * PIPE_BUF];
  size_t total = sizeof stream, done = 0;
  while (done < total) { /* odd read sizes: records span reads */
    size_t n = total - done < 1000 ? total - done : 1000;
    ssize_t r = swarm_read(p[0], stream + done, n);
    CHECK(r > 0);
    done += (size_t)r;
  }
  for (int i = 0; i < WRITERS; i++)
    CHECK(swarm_join(t[i], NULL) == 0);
  int seen[WRITERS * RECORDS] = {0};
  for (size_t r = 0; r < WRITERS * RECORDS; r++) {
    unsigned char *rec = stream + r * PIPE_BUF;
    for (size_t i = 1; i < PIPE_BUF; i++)
      CHECK_EQ(rec[i], rec[0]); /* no other write inside a record */
    seen[rec[0]]++;
  }
  for (int i = 0; i < WRITERS * RECORDS; i++)
    CHECK_EQ(seen[i], 1);
  check_blocking(p[0]);
  check_blocking(p[1]);
  swarm_close(p[0]);
  swarm_close(p[1]);
  printf("pipe: %d racing PIPE_BUF writes, none interleaved\n",
         WRITERS * RECORDS);
}

/* ---- a FIFO opened by name: readiness first ---- */

#define FIFO_READERS 4

static int fifo_r;
static long fifo_per_reader;
static atomic_long fifo_sum;

static void *fifo_reader(void *arg) {
  (void)arg;
  for (long i = 0; i < fifo_per_reader; i++) {
    unsigned char c;
    CHECK_EQ(swarm_read(fifo_r, &c, 1), 1);
    atomic_fetch_add(&fifo_sum, c);
  }
  return NULL;
}

static void fifo_by_name(void) {
  char path[64];
  snprintf(path, sizeof path, "/tmp/swarm_io_nonblock_%d", (int)getpid());
  unlink(path);
  CHECK(mkfifo(path, 0600) == 0);
  fifo_r = open(path, O_RDWR); /* Linux: does not wait for a writer */
  CHECK(fifo_r >= 0);
  int fifo_w = open(path, O_WRONLY);
  CHECK(fifo_w >= 0);
  unlink(path);

  /* single bytes to racing readers */
  fifo_per_reader = test_scaled(500, 50);
  long total = fifo_per_reader * FIFO_READERS, want = 0;
  swarm_thread_t t[FIFO_READERS];
  for (int i = 0; i < FIFO_READERS; i++)
    CHECK(swarm_spawn(&t[i], NULL, fifo_reader, NULL) == 0);
  unsigned char chunk[100];
  for (long done = 0; done < total;) {
    long n = total - done < 100 ? total - done : 100;
    for (long i = 0; i < n; i++) {
      chunk[i] = (unsigned char)((done + i) % 251);
      want += chunk[i];
    }
    CHECK_EQ(swarm_write(fifo_w, chunk, (size_t)n), n);
    done += n;
    if (done % 1000 == 0)
      swarm_yield();
  }
  for (int i = 0; i < FIFO_READERS; i++)
    CHECK(swarm_join(t[i], NULL) == 0);
  CHECK_EQ(atomic_load(&fifo_sum), want);

  /* writes over PIPE_BUF and over the FIFO's size, whole */
  size_t big = 300000;
  char *buf = malloc(big);
  CHECK(buf);
  for (size_t i = 0; i < big; i++)
    buf[i] = (char)(i % 251);
  struct xfer x = {fifo_r, big, 7000};
  swarm_thread_t d;
  CHECK(swarm_spawn(&d, NULL, drain, &x) == 0);
  CHECK_EQ(swarm_write(fifo_w, buf, big), big);
  CHECK(swarm_join(d, NULL) == 0);
  free(buf);
  check_blocking(fifo_r);
  check_blocking(fifo_w);

  /* the program's own O_NONBLOCK */
  CHECK(fcntl(fifo_r, F_SETFL, O_RDWR | O_NONBLOCK) == 0);
  char c;
  CHECK_EQ(swarm_read(fifo_r, &c, 1), -1);
  CHECK_EQ(ERRNO, EAGAIN);
  swarm_close(fifo_r);
  swarm_close(fifo_w);
  printf("fifo: %ld single bytes to %d readers, 300000 bytes whole\n", total,
         FIFO_READERS);
}

/* ---- accept and connect ---- */

#define ACCEPTORS 4
#define CONNS 40

static int listen_fd;
static atomic_int conn_seen[CONNS];

static void *acceptor(void *arg) {
  (void)arg;
  for (int i = 0; i < CONNS / ACCEPTORS; i++) {
    int fd = swarm_accept(listen_fd, NULL, NULL);
    CHECK(fd >= 0);
    check_blocking(fd);
    unsigned char id;
    CHECK(read_full(fd, &id, 1) == 0);
    CHECK(id < CONNS);
    atomic_fetch_add(&conn_seen[id], 1);
    CHECK_EQ(swarm_write(fd, &id, 1), 1);
    swarm_close(fd);
  }
  return NULL;
}

static int port;

static void *connector(void *arg) {
  unsigned char id = (unsigned char)(uintptr_t)arg;
  int fd = connect_loopback(port);
  CHECK(fd >= 0);
  check_blocking(fd);
  CHECK_EQ(swarm_write(fd, &id, 1), 1);
  unsigned char back;
  CHECK(read_full(fd, &back, 1) == 0);
  CHECK_EQ(back, id);
  swarm_close(fd);
  return NULL;
}

static void accept_connect(void) {
  listen_fd = listen_loopback(&port, CONNS);
  swarm_thread_t a[ACCEPTORS], c[CONNS];
  for (int i = 0; i < ACCEPTORS; i++)
    CHECK(swarm_spawn(&a[i], NULL, acceptor, NULL) == 0);
  for (int i = 0; i < CONNS; i++)
    CHECK(swarm_spawn(&c[i], NULL, connector, (void *)(uintptr_t)i) == 0);
  for (int i = 0; i < CONNS; i++)
    CHECK(swarm_join(c[i], NULL) == 0);
  for (int i = 0; i < ACCEPTORS; i++)
    CHECK(swarm_join(a[i], NULL) == 0);
  for (int i = 0; i < CONNS; i++)
    CHECK_EQ(atomic_load(&conn_seen[i]), 1);
  check_blocking(listen_fd);
  swarm_close(listen_fd);
  printf("accept: %d connections to %d acceptors, each once\n", CONNS,
         ACCEPTORS);
}

/* ---- zero-length socket reads, eventfd ---- */

static void *post_event(void *arg) {
  uint64_t one = 1;
  swarm_sleep_ns(1000000);
  CHECK_EQ(swarm_write((int)(intptr_t)arg, &one, sizeof one), sizeof one);
  return NULL;
}

static void small_cases(void) {
  int sv[2];
  CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
  char c;
  CHECK_EQ(swarm_read(sv[0], &c, 0), 0); /* no data, no wait */
  check_blocking(sv[0]);
  swarm_close(sv[0]);
  swarm_close(sv[1]);

  int ev = eventfd(0, 0);
  CHECK(ev >= 0);
  swarm_thread_t t;
  CHECK(swarm_spawn(&t, NULL, post_event, (void *)(intptr_t)ev) == 0);
  uint64_t v = 0;
  CHECK_EQ(swarm_read(ev, &v, sizeof v), sizeof v);
  CHECK_EQ(v, 1);
  CHECK(swarm_join(t, NULL) == 0);
  check_blocking(ev);
  swarm_close(ev);

  int p[2];
  CHECK(pipe2(p, O_NONBLOCK) == 0); /* the program's own */
  CHECK_EQ(swarm_read(p[0], &c, 1), -1);
  CHECK_EQ(ERRNO, EAGAIN);
  swarm_close(p[0]);
  swarm_close(p[1]);
  printf("zero-length read, eventfd, own O_NONBLOCK: ok\n");
}

static void *body(void *arg) {
  (void)arg;
  pipe_whole_write();
  pipe_atomic_records();
  fifo_by_name();
  accept_connect();
  small_cases();
  return NULL;
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0); /* a hang shows how far it came */
  swarm_thread_t t;
  CHECK(swarm_spawn(&t, NULL, body, NULL) == 0);
  CHECK(swarm_join(t, NULL) == 0);
  TEST_PASS("io_nonblock");
  return 0;
}
