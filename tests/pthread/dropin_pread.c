/* Positional file I/O from many threads on one descriptor: each thread
 * pwrites its own blocks (pwritev for half of them), fsync and fdatasync
 * flush, then each thread preads (preadv) and checks another thread's
 * blocks; the shared file position never moves. Built with
 * _FILE_OFFSET_BITS=64, so the calls are pread64 and friends, which the
 * drop-in must catch as well as pread (check_symbols.sh checks both). */
#define _FILE_OFFSET_BITS 64
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "dropin_check.h"

#define THREADS 8
#define BLOCKS 16
#define BLOCK 8192

static int fd;

static unsigned char byte_at(long block, long i) {
  return (unsigned char)(block * 31 + i * 7 + (i >> 8));
}

static void *writer(void *arg) {
  long t = (long)arg;
  unsigned char buf[BLOCK];
  for (long b = t; b < THREADS * BLOCKS; b += THREADS) {
    for (long i = 0; i < BLOCK; i++)
      buf[i] = byte_at(b, i);
    off_t at = (off_t)b * BLOCK;
    if (b % 2) {
      CHECK(pwrite(fd, buf, BLOCK, at) == BLOCK);
    } else {
      struct iovec v[2] = {{buf, 100}, {buf + 100, BLOCK - 100}};
      CHECK(pwritev(fd, v, 2, at) == BLOCK);
    }
  }
  return NULL;
}

static void *reader(void *arg) {
  long t = ((long)arg + 3) % THREADS; /* another thread's blocks */
  unsigned char buf[BLOCK];
  for (long b = t; b < THREADS * BLOCKS; b += THREADS) {
    off_t at = (off_t)b * BLOCK;
    if (b % 3) {
      CHECK(pread(fd, buf, BLOCK, at) == BLOCK);
    } else {
      struct iovec v[2] = {{buf, BLOCK - 5}, {buf + BLOCK - 5, 5}};
      CHECK(preadv(fd, v, 2, at) == BLOCK);
    }
    for (long i = 0; i < BLOCK; i++)
      CHECK(buf[i] == byte_at(b, i));
  }
  return NULL;
}

static void run(void *(*fn)(void *)) {
  pthread_t t[THREADS];
  for (long i = 0; i < THREADS; i++)
    CHECK(pthread_create(&t[i], NULL, fn, (void *)i) == 0);
  for (int i = 0; i < THREADS; i++)
    CHECK(pthread_join(t[i], NULL) == 0);
}

int main(void) {
  report_on_swarm();
  char path[64];
  snprintf(path, sizeof path, "/tmp/swarm-dropin-pread-%d", (int)getpid());
  fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
  CHECK(fd >= 0);
  CHECK(lseek(fd, 12345, SEEK_SET) == 12345);
  run(writer);
  CHECK(fsync(fd) == 0);
  CHECK(fdatasync(fd) == 0);
  run(reader);
  CHECK(lseek(fd, 0, SEEK_CUR) == 12345);
  CHECK(lseek(fd, 0, SEEK_END) == (off_t)THREADS * BLOCKS * BLOCK);
  char c;
  CHECK(pread(fd, &c, 1, -1) == -1);
  unlink(path);
  close(fd);
  printf("%d threads: pwrite/pwritev, fsync, pread/preadv checked\n",
         THREADS * 2);
  printf("OK pread\n");
  return 0;
}
