/*
 * test_io_file: regular-file reads and writes through the offload pool
 * while every worker runs a CPU hog: a file written with swarm_write and
 * swarm_writev is read back with swarm_read and swarm_readv, every byte
 * checked, by several threads at once, each on its own descriptor. Then
 * the positional calls: threads pread/preadv one shared descriptor at
 * scattered offsets (its position stays put), pwrite/pwritev past the end
 * grow the file, fsync/fdatasync, and the errors (EINVAL for a negative
 * offset, ESPIPE on a pipe, EBADF, EINVAL for fsync on a pipe).
 */
#include <fcntl.h>
#include <stdlib.h>

#include "io_test.h"

#define READERS 4
#define SIZE (1 << 20)

static char path[64];
static unsigned char *expect;

static void *reader(void *arg) {
  (void)arg;
  int fd = open(path, O_RDONLY);
  CHECK(fd >= 0);
  unsigned char *got = malloc(SIZE);
  size_t off = 0;
  while (off < SIZE) {
    size_t chunk = 4096 + (off * 7) % 60000;
    if (chunk > SIZE - off)
      chunk = SIZE - off;
    ssize_t r;
    if (off % 2) {
      r = swarm_read(fd, got + off, chunk);
    } else {
      struct iovec v[2] = {{got + off, chunk / 2},
                           {got + off + chunk / 2, chunk - chunk / 2}};
      r = swarm_readv(fd, v, 2);
    }
    CHECK(r > 0);
    off += (size_t)r;
  }
  char extra;
  CHECK_EQ(swarm_read(fd, &extra, 1), 0); /* end of file */
  CHECK(memcmp(got, expect, SIZE) == 0);
  free(got);
  swarm_close(fd);
  return NULL;
}

static int shared_fd;

static void *positional_reader(void *arg) {
  long seed = (long)arg;
  unsigned char *got = malloc(70000);
  for (int i = 0; i < 64; i++) {
    size_t off = (size_t)((seed * 7919 + i * 104729) % (SIZE - 1));
    size_t len = 1 + (size_t)((seed + i) * 4099 % 69999);
    size_t want = len > SIZE - off ? SIZE - off : len;
    ssize_t r;
    if (i % 2) {
      r = swarm_pread(shared_fd, got, len, (off_t)off);
    } else {
      struct iovec v[2] = {{got, len / 2}, {got + len / 2, len - len / 2}};
      r = swarm_preadv(shared_fd, v, 2, (off_t)off);
    }
    CHECK_EQ(r, (ssize_t)want); /* a regular file gives it all */
    CHECK(memcmp(got, expect + off, want) == 0);
  }
  free(got);
  return NULL;
}

static void positional(void) {
  shared_fd = open(path, O_RDWR);
  CHECK(shared_fd >= 0);
  CHECK_EQ(lseek(shared_fd, 100, SEEK_SET), 100);
  swarm_thread_t t[READERS];
  for (long i = 0; i < READERS; i++)
    CHECK(swarm_spawn(&t[i], NULL, positional_reader, (void *)(i + 1)) == 0);
  for (int i = 0; i < READERS; i++)
    CHECK(swarm_join(t[i], NULL) == 0);
  CHECK_EQ(lseek(shared_fd, 0, SEEK_CUR), 100); /* position untouched */
  char c;
  CHECK_EQ(swarm_pread(shared_fd, &c, 1, SIZE), 0); /* end of file */

  /* grow the file: 10 bytes over the end, then 10 more from two pieces */
  unsigned char patch[20];
  for (int i = 0; i < 20; i++)
    patch[i] = (unsigned char)(0xA0 + i);
  CHECK_EQ(swarm_pwrite(shared_fd, patch, 10, SIZE - 4), 10);
  struct iovec wv[2] = {{patch + 10, 3}, {patch + 13, 7}};
  CHECK_EQ(swarm_pwritev(shared_fd, wv, 2, SIZE + 6), 10);
  unsigned char back[24];
  CHECK_EQ(swarm_pread(shared_fd, back, sizeof back, SIZE - 4), 20);
  CHECK(memcmp(back, patch, 20) == 0);
  CHECK_EQ(lseek(shared_fd, 0, SEEK_END), SIZE + 16);
  CHECK_EQ(swarm_fsync(shared_fd), 0);
  CHECK_EQ(swarm_fdatasync(shared_fd), 0);
  CHECK(ftruncate(shared_fd, SIZE) == 0);

  /* errors, as the kernel gives them */
  CHECK_EQ(swarm_pread(shared_fd, &c, 1, -1), -1);
  CHECK_EQ(ERRNO, EINVAL);
  CHECK_EQ(swarm_pwrite(shared_fd, &c, 1, -5), -1);
  CHECK_EQ(ERRNO, EINVAL);
  int p[2];
  CHECK(pipe(p) == 0);
  CHECK_EQ(swarm_write(p[1], "x", 1), 1);
  CHECK_EQ(swarm_pread(p[0], &c, 1, 0), -1);
  CHECK_EQ(ERRNO, ESPIPE);
  CHECK_EQ(swarm_read(p[0], &c, 1), 1); /* the byte is still there */
  CHECK_EQ(swarm_fsync(p[1]), -1);
  CHECK_EQ(ERRNO, EINVAL);
  swarm_close(p[0]);
  swarm_close(p[1]);
  CHECK_EQ(swarm_pread(-1, &c, 1, 0), -1);
  CHECK_EQ(ERRNO, EBADF);
  CHECK_EQ(swarm_fsync(-1), -1);
  CHECK_EQ(ERRNO, EBADF);
  swarm_close(shared_fd);
}

int main(void) {
  /* spare workers even on one worker (none by default there) */
  setenv("SWARM_SPARES", "2", 0);
  snprintf(path, sizeof path, "/tmp/swarm-io-file-%d", (int)getpid());
  expect = malloc(SIZE);
  for (size_t i = 0; i < SIZE; i++)
    expect[i] = (unsigned char)(i * 131 + (i >> 9));
  int nw = swarm_num_workers();
  swarm_thread_t *hogs = calloc((size_t)nw, sizeof *hogs);
  for (int i = 0; i < nw; i++)
    CHECK(swarm_spawn(&hogs[i], NULL, hog, NULL) == 0);
  while (atomic_load(&hogs_running) < nw)
    swarm_yield();
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  CHECK(fd >= 0);
  CHECK(write_full(fd, expect, SIZE / 2) == 0);
  struct iovec v[2] = {{expect + SIZE / 2, SIZE / 4},
                       {expect + SIZE / 2 + SIZE / 4, SIZE / 4}};
  CHECK_EQ(swarm_writev(fd, v, 2), SIZE / 2);
  CHECK_EQ(swarm_close(fd), 0);
  swarm_thread_t t[READERS];
  for (int i = 0; i < READERS; i++)
    CHECK(swarm_spawn(&t[i], NULL, reader, NULL) == 0);
  for (int i = 0; i < READERS; i++)
    CHECK(swarm_join(t[i], NULL) == 0);
  positional();
  CHECK_EQ(atomic_load(&hogs_running), nw);
  atomic_store(&hogs_stop, 1);
  for (int i = 0; i < nw; i++)
    CHECK(swarm_join(hogs[i], NULL) == 0);
  free(hogs);
  free(expect);
  unlink(path);
  TEST_PASS("io_file");
  return 0;
}
