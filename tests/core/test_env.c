/* Environment variables: SWARM_WORKERS and SWARM_STACK_SIZE (with K/M
 * suffixes) set the runtime's shape; a malformed value is reported on stderr
 * naming the variable, and the default is used. Runs itself in children with
 * different environments. */
#include <swarm.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

static void *stack_probe(void *arg) {
  /* touch most of a 256K stack: would overflow a 128K default */
  volatile char big[200 * 1024];
  big[0] = 1;
  big[sizeof big - 1] = 2;
  return (void *)(long)(big[0] + big[sizeof big - 1] + (long)arg);
}

static int child(const char *workers, const char *stack, char *err,
                 size_t cap, int *exit_code) {
  int fds[2];
  CHECK_EQ(pipe(fds), 0);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], 2);
    dup2(fds[1], 1);
    close(fds[0]);
    if (workers)
      setenv("SWARM_WORKERS", workers, 1);
    else
      unsetenv("SWARM_WORKERS");
    if (stack)
      setenv("SWARM_STACK_SIZE", stack, 1);
    else
      unsetenv("SWARM_STACK_SIZE");
    int n = swarm_num_workers();
    size_t sz = 0;
    swarm_attr_t a;
    swarm_attr_init(&a);
    swarm_attr_getstacksize(&a, &sz);
    printf("workers=%d stack=%zu\n", n, sz);
    if (sz >= 256 * 1024) {
      swarm_thread_t t;
      void *r;
      swarm_spawn(&t, NULL, stack_probe, (void *)1L);
      swarm_join(t, &r);
      printf("probe=%ld\n", (long)r);
    }
    fflush(stdout);
    _exit(0);
  }
  close(fds[1]);
  size_t len = 0;
  ssize_t k;
  while ((k = read(fds[0], err + len, cap - 1 - len)) > 0)
    len += (size_t)k;
  err[len] = 0;
  close(fds[0]);
  int st;
  waitpid(pid, &st, 0);
  *exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  return 0;
}

int main(void) {
  char out[4096];
  int code;
  child("3", "256K", out, sizeof out, &code);
  printf("%s", out);
  CHECK_EQ(code, 0);
  CHECK(strstr(out, "workers=3 stack=262144"));
  CHECK(strstr(out, "probe=4"));

  child("1", "1M", out, sizeof out, &code);
  CHECK_EQ(code, 0);
  CHECK(strstr(out, "workers=1 stack=1048576"));

  child("lots", "12Q", out, sizeof out, &code);
  printf("%s", out);
  CHECK_EQ(code, 0);
  CHECK(strstr(out, "swarm: ignoring SWARM_WORKERS='lots'"));
  CHECK(strstr(out, "swarm: ignoring SWARM_STACK_SIZE='12Q'"));
  CHECK(strstr(out, "stack=131072"));

  child("0", "1K", out, sizeof out, &code);
  CHECK_EQ(code, 0);
  CHECK(strstr(out, "swarm: ignoring SWARM_WORKERS='0'"));
  CHECK(strstr(out, "swarm: ignoring SWARM_STACK_SIZE='1K'"));
  TEST_PASS("env");
  return 0;
}
