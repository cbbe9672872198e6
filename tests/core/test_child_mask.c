/* Issue 21 item 1 in the native API: a process started from a swarm thread
 * on any worker begins with the program's signal mask (the mask of the
 * flow that called swarm_init), never with the fully blocked mask the
 * runtime makes its kernel threads with: main blocks SIGUSR1 only, then
 * threads on every worker posix_spawn a grep of the child's SigBlk and a
 * `sleep 30` that must die of SIGTERM at once (with SIGTERM blocked it
 * would sleep 30 s and exit 0). */
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <swarm.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

extern char **environ;
static atomic_int seen_worker[64];

static unsigned long long child_sigblk(void) {
  int p[2];
  CHECK(pipe(p) == 0);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, p[1], 1);
  posix_spawn_file_actions_addclose(&fa, p[0]);
  char *const argv[] = {"grep", "SigBlk", "/proc/self/status", NULL};
  pid_t pid;
  CHECK(posix_spawnp(&pid, "grep", &fa, NULL, argv, environ) == 0);
  posix_spawn_file_actions_destroy(&fa);
  close(p[1]);
  char buf[256];
  size_t n = 0;
  ssize_t r;
  while ((r = read(p[0], buf + n, sizeof buf - 1 - n)) > 0)
    n += (size_t)r;
  buf[n] = 0;
  close(p[0]);
  int st;
  CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st));
  const char *v = strstr(buf, "SigBlk:");
  CHECK(v != NULL);
  return strtoull(v + 7, NULL, 16);
}

static void *starter(void *arg) {
  (void)arg;
  int w = swarm_worker_id();
  if (w >= 0 && w < 64)
    atomic_store(&seen_worker[w], 1);
  CHECK(child_sigblk() == 1ull << (SIGUSR1 - 1));
  pid_t pid;
  char *const argv[] = {"sleep", "30", NULL};
  CHECK(posix_spawnp(&pid, "sleep", NULL, NULL, argv, environ) == 0);
  usleep(20000);
  CHECK(kill(pid, SIGTERM) == 0);
  int st;
  CHECK(waitpid(pid, &st, 0) == pid);
  CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM);
  return NULL;
}

int main(void) {
  sigset_t s;
  sigemptyset(&s);
  sigaddset(&s, SIGUSR1);
  CHECK(pthread_sigmask(SIG_BLOCK, &s, NULL) == 0);
  swarm_config_t cfg = {0};
  cfg.workers = 4;
  CHECK(swarm_init(&cfg) == 0);
  enum { N = 16 };
  swarm_thread_t t[N];
  for (int i = 0; i < N; i++)
    CHECK(swarm_spawn(&t[i], NULL, starter, NULL) == 0);
  for (int i = 0; i < N; i++)
    CHECK(swarm_join(t[i], NULL) == 0);
  int workers = 0;
  for (int i = 0; i < 64; i++)
    workers += atomic_load(&seen_worker[i]);
  CHECK(swarm_finalize() == 0);
  printf("children of %d threads on %d workers: the program's mask\n", N,
         workers);
  return 0;
}
