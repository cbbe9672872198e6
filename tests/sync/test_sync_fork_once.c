/* swarm_once after a fork made while a thread of the parent ran the
 * routine and another waited for it (sync/once.c, "Fork"): in the child
 * both are ghosts, so the child's first caller must run the routine itself
 * and the child's later callers wait for that run (the ghost waiter is
 * skipped when it ends); the routine runs once in each process. Without
 * the era in the running state the child waits forever (the alarm fails
 * it). Run with the worker count as argument. */
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sync_util.h"

static swarm_once_t once = SWARM_ONCE_INIT;
static _Atomic int runs, in_init, release, finished, waiter_started;

static void init(void) {
  atomic_fetch_add(&runs, 1);
  atomic_store(&in_init, 1);
  while (!atomic_load(&release))
    swarm_sleep_ns(2000000);
  atomic_store(&finished, 1);
}

static void *caller(void *a) {
  if (a)
    atomic_store(&waiter_started, 1);
  CHECK_EQ(swarm_once(&once, init), 0);
  CHECK(atomic_load(&finished));
  return NULL;
}

/* A thread runs the routine and parks in it; another waits for it. */
static void run_and_wait(swarm_thread_t t[2]) {
  CHECK_EQ(swarm_spawn(&t[0], NULL, caller, NULL), 0);
  while (!atomic_load(&in_init))
    swarm_sleep_ns(2000000);
  CHECK_EQ(swarm_spawn(&t[1], NULL, caller, (void *)1), 0);
  while (!atomic_load(&waiter_started))
    swarm_sleep_ns(2000000);
  swarm_sleep_ns(20000000); /* let it queue */
}

static void finish(swarm_thread_t t[2]) {
  atomic_store(&release, 1);
  CHECK_EQ(swarm_join(t[0], NULL), 0);
  CHECK_EQ(swarm_join(t[1], NULL), 0);
  CHECK_EQ(atomic_load(&runs), 1);
  CHECK_EQ(swarm_once(&once, init), 0);
  CHECK_EQ(atomic_load(&runs), 1);
}

static void *driver(void *a) {
  (void)a;
  swarm_thread_t t[2];
  run_and_wait(t);
  pid_t p = fork();
  CHECK(p >= 0);
  if (p == 0) {
    alarm(20);
    atomic_store(&runs, 0);
    atomic_store(&in_init, 0);
    atomic_store(&release, 0);
    atomic_store(&finished, 0);
    atomic_store(&waiter_started, 0);
    run_and_wait(t); /* the first caller takes the ghost's run over */
    finish(t);
    _exit(0);
  }
  finish(t);
  int status;
  CHECK_EQ(waitpid(p, &status, 0), p);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
        "child: status %#x (SIGALRM %d: the ghost's run was waited for)",
        status, SIGALRM);
  return NULL;
}

int main(int argc, char **argv) {
  alarm(60);
  int workers = argc > 1 ? atoi(argv[1]) : 2;
  CHECK(workers >= 1 && workers <= 16);
  swarm_config_t cfg = {.workers = workers};
  CHECK_EQ(swarm_init(&cfg), 0);
  CHECK_EQ(run(driver, NULL), 0);
  CHECK_EQ(swarm_finalize(), 0);
  printf("OK\n");
  return 0;
}
