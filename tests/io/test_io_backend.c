/*
 * test_io_backend: SWARM_IO picks the poller's back end (src/io/backend.h)
 * and an unusable choice falls back to epoll with its reason, never a
 * failure. The first argument says what must run:
 *   uring    SWARM_IO=uring on a kernel that has what it needs (skipped,
 *            exit 77 with the reason printed, only where the kernel refuses
 *            io_uring);
 *   epoll    the default, or a malformed SWARM_IO;
 *   refused  SWARM_IO=uring in a process whose seccomp filter refuses
 *            io_uring_setup with EPERM (as container runtimes do): epoll,
 *            and the note says why;
 *   --probe  only say whether this kernel gives io_uring what the back end
 *            needs (0) or not (77, the reason on stdout): with_uring.sh asks
 *            before running a test under SWARM_IO=uring.
 * Each mode parks a thread in a socket read, which creates a worker poller,
 * and the data must arrive through it.
 */
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include "core/core.h"
#include "io/backend.h"
#include "io_test.h"

static const char *note(void) {
  const struct swarm_io_hooks *h = atomic_load(&swarm_io_hooks);
  CHECK(h && h->describe);
  return h->describe();
}

static void *reader(void *arg) {
  int fd = *(int *)arg;
  char buf[8];
  CHECK(swarm_read(fd, buf, sizeof buf) == 5); /* parks: nothing there yet */
  CHECK(memcmp(buf, "hello", 5) == 0);
  return NULL;
}

/* A read that parks, then its data through the poller. */
static void round_trip(void) {
  int sv[2];
  CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
  swarm_thread_t t;
  CHECK(swarm_spawn(&t, NULL, reader, &sv[0]) == 0);
  for (int i = 0; i < 1000 && !note(); i++)
    usleep(1000); /* until the reader parked and a poller exists */
  CHECK(write(sv[1], "hello", 5) == 5);
  CHECK(swarm_join(t, NULL) == 0);
  close(sv[0]);
  close(sv[1]);
}

static void refuse_io_uring(void) {
  struct sock_filter f[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_setup, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  struct sock_fprog prog = {sizeof f / sizeof f[0], f};
  CHECK(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0);
  CHECK(prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) == 0);
}

int main(int argc, char **argv) {
  CHECK(argc == 2);
  const char *mode = argv[1];
  char why[128] = "built without liburing";
  bool usable = false;
#ifdef SWARM_HAVE_URING
  usable = io_uring_usable(why, sizeof why);
#endif
  if (strcmp(mode, "--probe") == 0) {
    printf("%s\n", usable ? "io_uring usable" : why);
    return usable ? 0 : 77;
  }
  if (strcmp(mode, "uring") == 0 && !usable) {
    printf("SKIP: the kernel refuses io_uring here: %s\n", why);
    return 77;
  }
  if (strcmp(mode, "refused") == 0 && usable)
    refuse_io_uring(); /* (without liburing there is nothing to refuse) */
  round_trip();
  const char *got = note();
  printf("io back end %s\n", got);
  if (strcmp(mode, "uring") == 0) { /* reads in the ring unless told */
    const char *rv = getenv("SWARM_URING_RECV");
    CHECK(strcmp(got, rv && strcmp(rv, "0") == 0
                          ? "uring (reads by poll: SWARM_URING_RECV=0)"
                          : "uring (reads in the ring)") == 0);
  } else if (strcmp(mode, "epoll") == 0)
    CHECK(strcmp(got, "epoll") == 0);
  else if (strcmp(mode, "refused") == 0 && usable)
    CHECK(strcmp(got, "epoll (SWARM_IO=uring unusable here: io_uring_setup: "
                      "Operation not permitted)") == 0);
  else if (strcmp(mode, "refused") == 0) /* refused already, or no liburing */
    CHECK(strncmp(got, "epoll (SWARM_IO=uring", 21) == 0);
  else
    CHECK(!"mode: uring, epoll, refused or --probe");
  printf("OK\n");
  return 0;
}
