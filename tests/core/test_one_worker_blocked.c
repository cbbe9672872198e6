/* One worker, default spares (monitor.c): a swarm thread blocked in a
 * system call swarm does not intercept (a raw read on an empty pipe) must
 * not freeze the process — the spare runs the thread that writes the pipe.
 * Before, one worker had no spare and this hung (SWARM_WORKERS=1
 * test_io_echo too); the alarm turns a hang into a failure. Also: a
 * malformed SWARM_SPARES is reported, naming the variable. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <swarm.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "check.h"

static int p[2];

static void *blocked_reader(void *arg) {
  (void)arg;
  char c = 0;
  long n = syscall(SYS_read, p[0], &c, 1); /* blocks the kernel thread */
  return (void *)(n == 1 && c == 'x' ? 1L : 0L);
}

static void *writer(void *arg) {
  (void)arg;
  char c = 'x';
  return (void *)(syscall(SYS_write, p[1], &c, 1) == 1 ? 1L : 0L);
}

int main(int argc, char **argv) {
  if (argc > 1 && !strcmp(argv[1], "malformed")) {
    /* stderr goes to a pipe we read back */
    int e[2];
    CHECK_EQ(pipe(e), 0);
    CHECK(dup2(e[1], 2) == 2);
    setenv("SWARM_SPARES", "two", 1);
    swarm_config_t one = {.workers = 1};
    CHECK_EQ(swarm_init(&one), 0);
    CHECK_EQ(swarm_finalize(), 0);
    char buf[256] = {0};
    CHECK(read(e[0], buf, sizeof buf - 1) > 0);
    CHECK(strstr(buf, "SWARM_SPARES='two'") != NULL, "got: %s", buf);
    TEST_PASS("one_worker_spares_malformed");
    return 0;
  }
  unsetenv("SWARM_SPARES");
  alarm(30);
  CHECK_EQ(pipe(p), 0);
  swarm_config_t one = {.workers = 1};
  CHECK_EQ(swarm_init(&one), 0);
  swarm_thread_t r, w;
  void *rv, *wv;
  CHECK_EQ(swarm_spawn(&r, NULL, blocked_reader, NULL), 0);
  /* Work-first: the reader ran first and holds the only worker. */
  CHECK_EQ(swarm_spawn(&w, NULL, writer, NULL), 0);
  CHECK_EQ(swarm_join(w, &wv), 0);
  CHECK_EQ(swarm_join(r, &rv), 0);
  CHECK(rv == (void *)1L && wv == (void *)1L);
  CHECK_EQ(swarm_finalize(), 0);
  TEST_PASS("one_worker_blocked");
  return 0;
}
