/* The lock-order check of debug builds (os/spinlock.h): locks taken in
 * the order of enum lock_rank pass; taking one while holding a lock of the
 * same or a later rank aborts the process with a message naming both.
 * Built and registered only where the check is compiled in. */
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "os/spinlock.h"

#ifndef SWARM_LOCK_ORDER_CHECK
#error "test_lock_order needs a build with SWARM_LOCK_ORDER_CHECK"
#endif

/* Runs fn in a child with stderr in a pipe; returns its wait status and
 * leaves what it wrote in buf. */
static int in_child(void (*fn)(void), char *buf, size_t cap) {
  int fds[2];
  CHECK(pipe(fds) == 0);
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    dup2(fds[1], 2);
    fn();
    _exit(0);
  }
  close(fds[1]);
  size_t n = 0;
  ssize_t r;
  while (n < cap - 1 && (r = read(fds[0], buf + n, cap - 1 - n)) > 0)
    n += (size_t)r;
  buf[n] = 0;
  close(fds[0]);
  int status;
  CHECK(waitpid(pid, &status, 0) == pid);
  return status;
}

static struct spinlock lifecycle = SPINLOCK_INIT(LOCK_LIFECYCLE);
static struct spinlock timers = SPINLOCK_INIT(LOCK_TIMERS);
static struct spinlock timers2 = SPINLOCK_INIT(LOCK_TIMERS);
static struct spinlock queue = SPINLOCK_INIT(LOCK_READY_QUEUE);

static void in_order(void) {
  spin_lock(&lifecycle);
  spin_lock(&timers);
  spin_lock(&queue);
  spin_unlock(&queue);
  spin_unlock(&timers);
  /* released: the same rank may be taken again, and unranked locks
   * never count */
  uint32_t word = 0;
  spin_lock(&timers2);
  spin_lock_as(spinlock_of_word(&word), LOCK_UNRANKED);
  spin_unlock_as(spinlock_of_word(&word), LOCK_UNRANKED);
  spin_unlock(&timers2);
  spin_unlock(&lifecycle);
}

static void backwards(void) {
  spin_lock(&queue);
  spin_lock(&timers); /* aborts */
}

static void same_rank(void) {
  spin_lock(&timers);
  spin_lock(&timers2); /* aborts: two of one rank could deadlock */
}

int main(void) {
  char out[512];
  int st = in_child(in_order, out, sizeof out);
  CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "in-order locking: %s", out);
  CHECK(out[0] == 0, "unexpected output: %s", out);

  st = in_child(backwards, out, sizeof out);
  CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT, "status %#x", st);
  CHECK(strstr(out, "lock order violated: taking the timer heap lock while "
                    "holding the ready queue lock"),
        "message: %s", out);

  st = in_child(same_rank, out, sizeof out);
  CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT, "status %#x", st);
  CHECK(strstr(out, "taking the timer heap lock while holding the timer heap "
                    "lock"),
        "message: %s", out);
  printf("PASS lock_order\n");
  return 0;
}
