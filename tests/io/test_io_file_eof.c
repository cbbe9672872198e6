/*
 * test_io_file_eof: a read from a cached regular file that ends at the end
 * of the file (a 1,000-byte file read into a 16 KiB buffer: swarm_read,
 * swarm_pread, swarm_preadv) completes from the page cache, without a trip
 * through the offload pool; the data, the counts and the end of file (0)
 * are checked. That no pool kernel thread ("swarm-io-pool") was ever
 * started proves the path; an fsync at the end, which always goes to the
 * pool, proves the check can see one.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "io_test.h"

#define SIZE 1000

static int pool_threads(void) {
  DIR *d = opendir("/proc/self/task");
  CHECK(d != NULL);
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    char path[300], comm[32] = "";
    snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
    FILE *f = fopen(path, "r");
    if (!f)
      continue;
    if (fgets(comm, sizeof comm, f) && strncmp(comm, "swarm-io-pool", 13) == 0)
      n++;
    fclose(f);
  }
  closedir(d);
  return n;
}

int main(void) {
  char path[] = "/tmp/swarm-io-eof-XXXXXX";
  int fd = mkstemp(path);
  CHECK(fd >= 0);
  unlink(path);
  unsigned char data[SIZE], buf[16384];
  for (int i = 0; i < SIZE; i++)
    data[i] = (unsigned char)(i * 131 + 7);
  CHECK_EQ(pwrite(fd, data, SIZE, 0), SIZE);
  /* Without RWF_NOWAIT (kernels before 4.14, qemu-user's missing
   * preadv2) there is no page-cache path: every read goes to the pool, so
   * only the data is checked. */
  struct iovec probe = {buf, 1};
  bool nowait = preadv2(fd, &probe, 1, 0, RWF_NOWAIT) == 1;
  if (!nowait)
    printf("test_io_file_eof: no RWF_NOWAIT here (%s): data only\n",
           strerror(errno));
  CHECK_EQ(swarm_init(NULL), 0);
  CHECK_EQ(pool_threads(), 0);
  for (int i = 0; i < 200; i++) {
    memset(buf, 0, sizeof buf);
    off_t at = i % 7;
    CHECK_EQ(swarm_pread(fd, buf, sizeof buf, at), SIZE - at);
    CHECK(memcmp(buf, data + at, (size_t)(SIZE - at)) == 0);
    struct iovec v[2] = {{buf, 100}, {buf + 100, sizeof buf - 100}};
    CHECK_EQ(swarm_preadv(fd, v, 2, 0), SIZE);
    CHECK_EQ(lseek(fd, at, SEEK_SET), at);
    CHECK_EQ(swarm_read(fd, buf, sizeof buf), SIZE - at);
    CHECK(memcmp(buf, data + at, (size_t)(SIZE - at)) == 0);
    CHECK_EQ(swarm_read(fd, buf, sizeof buf), 0);
    CHECK_EQ(swarm_pread(fd, buf, sizeof buf, SIZE), 0);
  }
  if (nowait)
    CHECK_EQ(pool_threads(), 0);
  CHECK_EQ(swarm_fsync(fd), 0);
  CHECK(pool_threads() >= 1, "the fsync went through no pool thread?");
  swarm_close(fd);
  CHECK_EQ(swarm_finalize(), 0);
  printf("test_io_file_eof: passed\n");
  return 0;
}
