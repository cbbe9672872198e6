/*
 * dropin_sendfile: a plain pthread program that sends a file over TCP with
 * libc's sendfile, knowing nothing of swarm (run under swarmrun by
 * run_dropin.sh). 16 connections, each a sender thread and a reader
 * thread that reads slowly and checks every byte, so each sender waits on
 * a full socket many times; offset NULL (the file's position, which moves,
 * on a descriptor of its own) and non-NULL (the position stays) are both
 * checked. With DROPIN_WORKERS=1 (run_dropin.sh: swarmrun -w 1) it checks
 * too that while a sender waits another thread runs on the same kernel
 * thread:
 * the interposed sendfile parked the thread, not the worker.
 */
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../pthread/dropin_check.h"

#define CONNS 16
#define SIZE (2 << 20)

static unsigned char *data;
static char path[] = "/tmp/swarm-dropin-sendfile-XXXXXX";
static int listen_fd;
static struct sockaddr_in addr;

static void *sender(void *arg) {
  int c = socket(AF_INET, SOCK_STREAM, 0);
  CHECK(c >= 0);
  CHECK_EQ(connect(c, (struct sockaddr *)&addr, sizeof addr), 0);
  int f = open(path, O_RDONLY);
  CHECK(f >= 0);
  ssize_t n;
  if ((intptr_t)arg % 2) { /* the file's own position */
    n = sendfile(c, f, NULL, SIZE);
    CHECK_EQ(lseek(f, 0, SEEK_CUR), SIZE);
  } else {
    off_t off = 0;
    n = sendfile(c, f, &off, SIZE);
    CHECK_EQ(off, SIZE);
    CHECK_EQ(lseek(f, 0, SEEK_CUR), 0);
  }
  CHECK_EQ(n, SIZE);
  close(f);
  close(c);
  return NULL;
}

static void *reader(void *arg) {
  int fd = (int)(intptr_t)arg;
  unsigned char *buf = malloc(4096);
  long got = 0;
  ssize_t r;
  while ((r = read(fd, buf, 4096)) > 0) {
    CHECK(got + r <= SIZE);
    CHECK(memcmp(buf, data + got, (size_t)r) == 0);
    got += r;
    if (got % (128 << 10) < 4096)
      usleep(500);
  }
  CHECK_EQ(r, 0);
  CHECK_EQ(got, SIZE);
  free(buf);
  close(fd);
  return NULL;
}

/* One worker: a thread other than the waiting sender runs on its kernel
 * thread while the sender waits on a socket nobody reads yet. */
static atomic_long sender_tid, other_tid;
static atomic_int sent;

static void *lone_sender(void *arg) {
  int c = (int)(intptr_t)arg;
  int f = open(path, O_RDONLY);
  CHECK(f >= 0);
  atomic_store(&sender_tid, syscall(SYS_gettid));
  CHECK_EQ(sendfile(c, f, NULL, SIZE), SIZE);
  atomic_store(&sent, 1);
  close(f);
  close(c);
  return NULL;
}

static void *other(void *arg) {
  (void)arg;
  while (!atomic_load(&sender_tid))
    sched_yield();
  atomic_store(&other_tid, syscall(SYS_gettid));
  return NULL;
}

static void one_worker(void) {
  int c = socket(AF_INET, SOCK_STREAM, 0), small = 16384, sndbuf = 65536;
  CHECK(c >= 0);
  setsockopt(c, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf);
  CHECK_EQ(connect(c, (struct sockaddr *)&addr, sizeof addr), 0);
  int s = accept(listen_fd, NULL, NULL);
  CHECK(s >= 0);
  setsockopt(s, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
  pthread_t ts, to, tr;
  CHECK_EQ(pthread_create(&ts, NULL, lone_sender, (void *)(intptr_t)c), 0);
  CHECK_EQ(pthread_create(&to, NULL, other, NULL), 0);
  CHECK_EQ(pthread_join(to, NULL), 0);
  CHECK(!atomic_load(&sent));
  CHECK_EQ(atomic_load(&other_tid), atomic_load(&sender_tid));
  CHECK_EQ(pthread_create(&tr, NULL, reader, (void *)(intptr_t)s), 0);
  CHECK_EQ(pthread_join(ts, NULL), 0);
  CHECK_EQ(pthread_join(tr, NULL), 0);
}

int main(void) {
  report_on_swarm();
  data = malloc(SIZE);
  CHECK(data != NULL);
  for (long i = 0; i < SIZE; i++)
    data[i] = (unsigned char)((i * 2654435761u) >> 11);
  int f = mkstemp(path);
  CHECK(f >= 0);
  CHECK_EQ(write(f, data, SIZE), SIZE);
  close(f);
  listen_fd = socket(AF_INET, SOCK_STREAM, 0);
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  CHECK_EQ(bind(listen_fd, (struct sockaddr *)&addr, sizeof addr), 0);
  CHECK_EQ(listen(listen_fd, CONNS), 0);
  CHECK_EQ(getsockname(listen_fd, (struct sockaddr *)&addr, &len), 0);
  const char *one = getenv("DROPIN_WORKERS");
  if (one && strcmp(one, "1") == 0)
    one_worker();
  pthread_t s[CONNS], r[CONNS];
  for (intptr_t i = 0; i < CONNS; i++) {
    CHECK_EQ(pthread_create(&s[i], NULL, sender, (void *)i), 0);
    int fd = accept(listen_fd, NULL, NULL);
    CHECK(fd >= 0);
    CHECK_EQ(pthread_create(&r[i], NULL, reader, (void *)(intptr_t)fd), 0);
  }
  for (int i = 0; i < CONNS; i++) {
    CHECK_EQ(pthread_join(s[i], NULL), 0);
    CHECK_EQ(pthread_join(r[i], NULL), 0);
  }
  unlink(path);
  printf("OK\n");
  return 0;
}
