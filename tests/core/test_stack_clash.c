/* Stack clashes are caught (issue 21 item 4). A frame larger than a page,
 * emitted without stack probes, moves the stack pointer past the guard in
 * one step; with the old one-page guard its first write landed in the
 * neighbouring stack of the batch (mapped, so no fault: silent corruption).
 * With the 64 KiB guard it lands in the guard and the process ends with
 * SIGSEGV and the overflow message. Also: an overflow of main's own stack
 * (main's flow under swarm) prints a message naming the main thread.
 * Each case runs in a child process; built with -fno-stack-clash-protection
 * so the compiler cannot probe the frame into the guard for us. */
#include <alloca.h>
#include <signal.h>
#include <stdint.h>
#include <swarm.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "core/core.h"

#define SKIP ((size_t)20 * 1024) /* past a 4 KiB guard, inside 64 KiB */

static void *big_frame(void *arg) {
  (void)arg;
  char *lo = worker_current()->current->stack.lo;
  char here;
  /* One frame reaching SKIP bytes below the stack's lowest byte. */
  volatile char *frame = alloca((size_t)(&here - lo) + SKIP);
  frame[0] = 1; /* the frame's first access: its lowest byte */
  return (void *)(uintptr_t)frame[0];
}

static void clash_child(void) {
  swarm_thread_t t;
  CHECK_EQ(swarm_spawn(&t, NULL, big_frame, NULL), 0);
  swarm_join(t, NULL);
}

static __attribute__((noinline)) long recurse(long n) {
  volatile char pad[1024];
  pad[0] = (char)n;
  pad[1023] = (char)n;
  if (pad[0] == (char)n)
    return recurse(n + 1) + pad[0] + pad[1023];
  return 0;
}

static void main_overflow_child(void) {
  struct rlimit r = {.rlim_cur = (rlim_t)1 << 20, .rlim_max = (rlim_t)1 << 20};
  CHECK_EQ(setrlimit(RLIMIT_STACK, &r), 0);
  CHECK_EQ(swarm_init(NULL), 0);
  recurse(0); /* main's flow, a swarm thread on the process's own stack */
}

/* Runs fn in a child; returns its stderr, checks it died of SIGSEGV. */
static void run_child(void (*fn)(void), char *buf, size_t cap) {
  int fds[2];
  CHECK_EQ(pipe(fds), 0);
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    dup2(fds[1], 2);
    close(fds[0]);
    fn();
    _exit(0); /* reached only if nothing faulted: the clash went unseen */
  }
  close(fds[1]);
  size_t len = 0;
  ssize_t n;
  while ((n = read(fds[0], buf + len, cap - 1 - len)) > 0)
    len += (size_t)n;
  buf[len] = 0;
  close(fds[0]);
  int status;
  CHECK_EQ(waitpid(pid, &status, 0), pid);
  printf("child stderr: %s", buf);
  CHECK(WIFSIGNALED(status));
  CHECK_EQ(WTERMSIG(status), SIGSEGV);
}

int main(void) {
  char buf[4096];
  run_child(clash_child, buf, sizeof buf);
  CHECK(strstr(buf, "swarm: stack overflow in thread 0x"));
  CHECK(strstr(buf, "(start routine "));
  CHECK(strstr(buf, "stack size 131072 bytes"));
  CHECK(strstr(buf, "swarm_attr_setstacksize"));
  run_child(main_overflow_child, buf, sizeof buf);
  CHECK(strstr(buf, "swarm: stack overflow in the main thread"));
  CHECK(strstr(buf, "ulimit -s"));
  TEST_PASS("stack_clash");
  return 0;
}
