/* A swarm thread that overflows its stack ends the process with SIGSEGV and
 * a message naming the thread, its stack size and how to raise it — never
 * silent corruption. Runs the overflow in a child process and checks both. */
#include <signal.h>
#include <stdint.h>
#include <swarm.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

static __attribute__((noinline)) long recurse(long n) {
  volatile char pad[1024];
  pad[0] = (char)n;
  pad[1023] = (char)n;
  if (pad[0] == (char)n) /* always true; keeps the compiler from calling it infinite */
    return recurse(n + 1) + pad[0] + pad[1023];
  return 0;
}

static void *overflow(void *arg) {
  (void)arg;
  return (void *)recurse(0);
}

int main(void) {
  int fds[2];
  CHECK_EQ(pipe(fds), 0);
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    dup2(fds[1], 2);
    close(fds[0]);
    swarm_attr_t attr;
    swarm_attr_init(&attr);
    swarm_attr_setstacksize(&attr, 65536);
    swarm_thread_t t;
    swarm_spawn(&t, &attr, overflow, NULL);
    swarm_join(t, NULL);
    _exit(0); /* not reached */
  }
  close(fds[1]);
  char buf[4096];
  size_t len = 0;
  ssize_t n;
  while ((n = read(fds[0], buf + len, sizeof buf - 1 - len)) > 0)
    len += (size_t)n;
  buf[len] = 0;
  int status;
  CHECK_EQ(waitpid(pid, &status, 0), pid);
  printf("child stderr: %s", buf);
  CHECK(WIFSIGNALED(status));
  CHECK_EQ(WTERMSIG(status), SIGSEGV);
  CHECK(strstr(buf, "swarm: stack overflow in thread 0x"));
  CHECK(strstr(buf, "stack size 65536 bytes"));
  CHECK(strstr(buf, "SWARM_STACK_SIZE"));
  CHECK(strstr(buf, "swarm_attr_setstacksize"));
  TEST_PASS("stack_overflow");
  return 0;
}
