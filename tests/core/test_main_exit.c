/* swarm_exit from main's flow: the process lives until every other thread
 * has exited, then exits with status 0 (as pthread_exit in main does). The
 * scenario runs in a child; the children's work is checked through a pipe. */
#include <swarm.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

static int out_fd;

static void *worker_fn(void *arg) {
  long id = (long)arg;
  for (int i = 0; i < 200; i++)
    swarm_yield();
  char c = (char)('a' + id);
  CHECK_EQ(write(out_fd, &c, 1), 1);
  return NULL;
}

int main(void) {
  int fds[2];
  CHECK_EQ(pipe(fds), 0);
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    out_fd = fds[1];
    swarm_config_t cfg = {.workers = 2};
    swarm_init(&cfg);
    swarm_attr_t at;
    swarm_attr_init(&at);
    swarm_attr_setdetachstate(&at, SWARM_CREATE_DETACHED);
    for (long i = 0; i < 8; i++)
      swarm_spawn(NULL, &at, worker_fn, (void *)i);
    swarm_exit(NULL);
  }
  close(fds[1]);
  char buf[64];
  size_t len = 0;
  ssize_t n;
  while ((n = read(fds[0], buf + len, sizeof buf - len)) > 0)
    len += (size_t)n;
  int st;
  CHECK_EQ(waitpid(pid, &st, 0), pid);
  CHECK(WIFEXITED(st));
  CHECK_EQ(WEXITSTATUS(st), 0);
  CHECK_EQ(len, 8);
  int seen[8] = {0};
  for (size_t i = 0; i < len; i++)
    seen[buf[i] - 'a']++;
  for (int i = 0; i < 8; i++)
    CHECK_EQ(seen[i], 1);
  TEST_PASS("main_exit");
  return 0;
}
