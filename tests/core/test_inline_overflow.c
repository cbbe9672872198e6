/* An inlined child that overflows the stack it shares with its parent hits
 * the parent's guard page and ends the process with the overflow report
 * naming the inlined child (its handle) and the stack it ran on (the
 * parent's) — never silent.
 * Runs the overflow in a child process and checks both. */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <swarm.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "inline_common.h"

static __attribute__((noinline)) long recurse(long n) {
  volatile char pad[1024];
  pad[0] = (char)n;
  pad[1023] = (char)n;
  if (pad[0] == (char)n) /* always true; keeps it from being infinite */
    return recurse(n + 1) + pad[0] + pad[1023];
  return 0;
}

static void *inline_overflow(void *arg) {
  (void)arg;
  printf("handle 0x%llx\n", (unsigned long long)swarm_self());
  fflush(stdout);
  return (void *)recurse(0);
}

static void *parent(void *arg) {
  (void)arg;
  swarm_thread_t t;
  swarm_spawn(&t, &inline_attr, inline_overflow, NULL);
  swarm_join(t, NULL);
  return NULL;
}

int main(void) {
  int fds[2], outs[2];
  CHECK_EQ(pipe(fds), 0);
  CHECK_EQ(pipe(outs), 0);
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    dup2(fds[1], 2);
    dup2(outs[1], 1);
    close(fds[0]);
    close(outs[0]);
    inline_setup();
    swarm_thread_t t;
    swarm_spawn(&t, NULL, parent, NULL);
    swarm_join(t, NULL);
    _exit(0); /* not reached */
  }
  close(fds[1]);
  close(outs[1]);
  char buf[4096], out[256];
  size_t len = 0, olen = 0;
  ssize_t n;
  while ((n = read(fds[0], buf + len, sizeof buf - 1 - len)) > 0)
    len += (size_t)n;
  buf[len] = 0;
  while ((n = read(outs[0], out + olen, sizeof out - 1 - olen)) > 0)
    olen += (size_t)n;
  out[olen] = 0;
  int status;
  CHECK_EQ(waitpid(pid, &status, 0), pid);
  printf("child stdout: %schild stderr: %s", out, buf);
  CHECK(WIFSIGNALED(status));
  CHECK_EQ(WTERMSIG(status), SIGSEGV);
  char *h = strstr(out, "handle ");
  CHECK(h != NULL, "the inlined child never ran");
  char want[64];
  snprintf(want, sizeof want, "stack overflow in thread %s",
           h + strlen("handle "));
  want[strcspn(want, "\n")] = 0;
  CHECK(strstr(buf, want), "no report naming the inlined child (%s)", want);
  CHECK(strstr(buf, "stack size 131072 bytes"), "not the parent's stack");
  TEST_PASS("inline_overflow");
  return 0;
}
