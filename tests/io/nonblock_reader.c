/*
 * nonblock_reader: the child of dropin_nonblock_child, an ordinary program
 * (run with or without the drop-in) that reads its standard input the
 * ordinary way. Usage: nonblock_reader BYTES | nonblock_reader nonblock.
 * BYTES: stdin must be blocking (fcntl says so, and no read says EAGAIN)
 * and deliver exactly BYTES bytes of the pattern (offset % 251) until EOF.
 * "nonblock": stdin must show O_NONBLOCK (the parent program set it).
 * Exit 0 when all holds; 2: stdin is non-blocking, 3: a read said EAGAIN,
 * 4: another error, 5: wrong data or count, 6: O_NONBLOCK missing.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv) {
  if (argc != 2)
    return 64;
  int fl = fcntl(0, F_GETFL);
  if (strcmp(argv[1], "nonblock") == 0) {
    if (fl < 0 || !(fl & O_NONBLOCK)) {
      fprintf(stderr, "nonblock_reader: O_NONBLOCK the parent set is gone\n");
      return 6;
    }
    return 0;
  }
  long want = atol(argv[1]);
  if (fl < 0 || (fl & O_NONBLOCK)) {
    fprintf(stderr, "nonblock_reader: stdin is O_NONBLOCK, nobody asked\n");
    return 2;
  }
  static char buf[8192];
  long got = 0;
  for (;;) {
    ssize_t r = read(0, buf, sizeof buf);
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0 && errno == EAGAIN) {
      fprintf(stderr, "nonblock_reader: EAGAIN from a blocking read\n");
      return 3;
    }
    if (r < 0) {
      perror("nonblock_reader: read");
      return 4;
    }
    if (r == 0)
      break;
    for (ssize_t i = 0; i < r; i++)
      if ((unsigned char)buf[i] != (unsigned char)((got + i) % 251)) {
        fprintf(stderr, "nonblock_reader: wrong byte at %ld\n", got + i);
        return 5;
      }
    got += r;
  }
  if (got != want) {
    fprintf(stderr, "nonblock_reader: %ld bytes, expected %ld\n", got, want);
    return 5;
  }
  return 0;
}
