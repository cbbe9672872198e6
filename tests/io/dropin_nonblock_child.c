/*
 * dropin_nonblock_child: a plain pthread program (run under swarmrun by
 * run_dropin.sh) whose threads block in read and write on a pipe and on a
 * socketpair, and which then hands the same descriptor, as stdin, to a
 * child: by fork+exec without the drop-in (an ordinary child), by
 * posix_spawn (vfork-like; the child inherits the drop-in: two swarm
 * processes share the open file) and by system() (a shell, then the
 * reader). O_NONBLOCK belongs to the open file the processes share, so
 * each child must find its stdin blocking, never read EAGAIN, and read
 * every byte the parent's thread writes while the parent keeps its own
 * copy open. A descriptor the program made non-blocking itself must say
 * EAGAIN to the program and show O_NONBLOCK to a child.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <spawn.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../pthread/dropin_check.h"

#ifndef NONBLOCK_READER
#error "NONBLOCK_READER: the path of the nonblock_reader helper"
#endif

#define CHILD_BYTES 300000L /* several pipe and socket buffers */

extern char **environ;

enum { PIPE, SOCKET };
enum { FORK_EXEC, POSIX_SPAWN, SYSTEM, NMETHODS };
static const char *method_name[] = {"fork+exec (no drop-in)", "posix_spawn",
                                    "system"};

struct xfer {
  int fd;
  long bytes;
  long start; /* pattern offset */
};

static void fill(char *b, long off, size_t n) {
  for (size_t i = 0; i < n; i++)
    b[i] = (char)((off + (long)i) % 251);
}

/* Writes x->bytes of the pattern in uneven pieces, some over PIPE_BUF. */
static void *writer(void *arg) {
  struct xfer *x = arg;
  static const size_t sizes[] = {1, 4096, 10000, 70000, 333, 4095, 65536};
  char *buf = malloc(70000);
  CHECK(buf);
  long done = 0;
  for (int i = 0; done < x->bytes; i++) {
    size_t n = sizes[i % 7];
    if ((long)n > x->bytes - done)
      n = (size_t)(x->bytes - done);
    fill(buf, x->start + done, n);
    ssize_t w = write(x->fd, buf, n);
    CHECK(w == (ssize_t)n); /* a blocking write writes everything */
    done += w;
  }
  free(buf);
  return NULL;
}

/* Reads exactly x->bytes and checks them. */
static void *reader(void *arg) {
  struct xfer *x = arg;
  char buf[5000];
  long done = 0;
  while (done < x->bytes) {
    size_t n = sizeof buf;
    if ((long)n > x->bytes - done)
      n = (size_t)(x->bytes - done);
    ssize_t r = read(x->fd, buf, n);
    CHECK(r > 0);
    for (ssize_t i = 0; i < r; i++)
      CHECK((unsigned char)buf[i] ==
            (unsigned char)((x->start + done + i) % 251));
    done += r;
  }
  return NULL;
}

static void channel(int kind, int *rfd, int *wfd) {
  int fds[2];
  if (kind == PIPE)
    CHECK(pipe2(fds, O_CLOEXEC) == 0);
  else
    CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) == 0);
  *rfd = fds[0];
  *wfd = fds[1];
}

static void check_blocking(int fd) {
  int fl = fcntl(fd, F_GETFL);
  CHECK(fl >= 0 && !(fl & O_NONBLOCK));
}

/* Threads of ours block on the channel both ways: a reader waits for data
 * a writer sends after a pause, then a writer fills the buffer past its
 * size while the reader drains it. */
static void use_in_threads(int rfd, int wfd) {
  pthread_t r, w;
  struct xfer rx = {rfd, 1000, 0}, wx = {wfd, 1000, 0};
  CHECK(pthread_create(&r, NULL, reader, &rx) == 0);
  usleep(2000); /* likely parked by now; nothing depends on it */
  CHECK(pthread_create(&w, NULL, writer, &wx) == 0);
  CHECK(pthread_join(w, NULL) == 0 && pthread_join(r, NULL) == 0);
  struct xfer wx2 = {wfd, 400000, 0}, rx2 = {rfd, 400000, 0};
  CHECK(pthread_create(&w, NULL, writer, &wx2) == 0);
  usleep(2000); /* likely blocked on a full buffer by now */
  CHECK(pthread_create(&r, NULL, reader, &rx2) == 0);
  CHECK(pthread_join(w, NULL) == 0 && pthread_join(r, NULL) == 0);
  check_blocking(rfd);
  check_blocking(wfd);
}

static char **env_without_preload(void) {
  int n = 0;
  while (environ[n])
    n++;
  char **env = calloc((size_t)n + 1, sizeof *env);
  CHECK(env);
  int k = 0;
  for (int i = 0; i < n; i++)
    if (strncmp(environ[i], "LD_PRELOAD=", 11) != 0)
      env[k++] = environ[i];
  return env;
}

/* Starts the reader with stdin = fd (fork+exec or posix_spawn); returns
 * its pid. */
static pid_t spawn_reader(int method, int fd, const char *arg) {
  char *argv[] = {NONBLOCK_READER, (char *)arg, NULL};
  if (method == FORK_EXEC) {
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
      if (dup2(fd, 0) != 0)
        _exit(120);
      execve(argv[0], argv, env_without_preload());
      _exit(127);
    }
    return pid;
  }
  pid_t pid;
  posix_spawn_file_actions_t fa;
  CHECK(posix_spawn_file_actions_init(&fa) == 0);
  CHECK(posix_spawn_file_actions_adddup2(&fa, fd, 0) == 0);
  CHECK(posix_spawn(&pid, argv[0], &fa, NULL, argv, environ) == 0);
  posix_spawn_file_actions_destroy(&fa);
  return pid;
}

static void check_exit(int status, const char *what) {
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    fprintf(stderr, "%s: reader child failed (status %#x)\n", what, status);
    exit(1); /* at once: our writer may be waiting for a dead reader */
  }
}

struct sys_job {
  int fd;
  const char *arg;
  pid_t pid; /* 0: system() */
  const char *what;
};

/* system() with the descriptor as the shell's stdin (our own stdin moved
 * aside meanwhile); run in a thread so that the writer runs beside it. */
static void *run_system(void *arg) {
  struct sys_job *j = arg;
  char cmd[4096];
  snprintf(cmd, sizeof cmd, "exec '%s' %s", NONBLOCK_READER, j->arg);
  int saved = dup(0);
  CHECK(saved >= 0 && dup2(j->fd, 0) == 0);
  int status = system(cmd);
  CHECK(dup2(saved, 0) == 0 && close(saved) == 0);
  check_exit(status, j->what);
  return NULL;
}

/* Waits for a spawned reader beside the writer. */
static void *wait_child(void *arg) {
  struct sys_job *j = arg;
  int status;
  CHECK(waitpid(j->pid, &status, 0) == j->pid);
  check_exit(status, j->what);
  return NULL;
}

static void one(int kind, int method) {
  int rfd, wfd;
  channel(kind, &rfd, &wfd);
  use_in_threads(rfd, wfd);
  char bytes[32], what[128];
  snprintf(bytes, sizeof bytes, "%ld", CHILD_BYTES);
  snprintf(what, sizeof what, "%s, %s", kind == PIPE ? "pipe" : "socket",
           method_name[method]);
  struct xfer wx = {wfd, CHILD_BYTES, 0};
  struct sys_job job = {rfd, bytes, 0, what};
  pthread_t w, c;
  if (method != SYSTEM)
    job.pid = spawn_reader(method, rfd, bytes);
  CHECK(pthread_create(&c, NULL, method == SYSTEM ? run_system : wait_child,
                       &job) == 0);
  CHECK(pthread_create(&w, NULL, writer, &wx) == 0);
  CHECK(pthread_join(w, NULL) == 0);
  CHECK(close(wfd) == 0); /* the child's EOF (it never had wfd) */
  CHECK(pthread_join(c, NULL) == 0);
  check_blocking(rfd); /* still blocking in the program's eyes */
  CHECK(close(rfd) == 0);
  printf("%s: child saw a blocking descriptor and all data\n", what);
}

/* The program's own O_NONBLOCK: EAGAIN for it, visible to a child. */
static void own_nonblock(int kind) {
  int rfd, wfd;
  channel(kind, &rfd, &wfd);
  use_in_threads(rfd, wfd);
  char c;
  if (kind == PIPE) {
    CHECK(fcntl(rfd, F_SETFL, fcntl(rfd, F_GETFL) | O_NONBLOCK) == 0);
  } else {
    int on = 1;
    CHECK(ioctl(rfd, FIONBIO, &on) == 0);
  }
  CHECK(fcntl(rfd, F_GETFL) & O_NONBLOCK);
  CHECK(read(rfd, &c, 1) == -1 && errno == EAGAIN);
  int status;
  pid_t pid = spawn_reader(FORK_EXEC, rfd, "nonblock");
  CHECK(waitpid(pid, &status, 0) == pid);
  check_exit(status, "own O_NONBLOCK");
  /* and back to blocking: a blocked reader wakes for a later write */
  if (kind == PIPE) {
    CHECK(fcntl(rfd, F_SETFL, fcntl(rfd, F_GETFL) & ~O_NONBLOCK) == 0);
  } else {
    int off = 0;
    CHECK(ioctl(rfd, FIONBIO, &off) == 0);
  }
  check_blocking(rfd);
  use_in_threads(rfd, wfd);
  close(rfd);
  close(wfd);
  printf("%s: own O_NONBLOCK says EAGAIN and is seen by a child\n",
         kind == PIPE ? "pipe" : "socket");
}

int main(void) {
  report_on_swarm();
  /* children on swarm would print their stats first (run_dropin.sh reads
   * the first table as ours); ours were configured at start-up */
  unsetenv("SWARM_STATS");
  for (int kind = PIPE; kind <= SOCKET; kind++) {
    for (int m = 0; m < NMETHODS; m++)
      one(kind, m);
    own_nonblock(kind);
  }
  printf("OK\n");
  return 0;
}
