/*
 * test_io_file: regular-file reads and writes through the offload pool
 * while every worker runs a CPU hog: a file written with swarm_write and
 * swarm_writev is read back with swarm_read and swarm_readv, every byte
 * checked, by several threads at once, each on its own descriptor.
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
