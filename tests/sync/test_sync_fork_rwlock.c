/* swarm_rwlock after a fork made between an unlock and the run of the
 * reader it woke (sync/rwlock.c, "Fork"): in the child that reader is a
 * ghost and the lock's count of woken waiters not yet run (woken_) still
 * counts it. The child's own waiter must still be woken by the next unlock,
 * and the free lock must destroy with 0 (not EBUSY). Without the era check
 * the child hangs (the alarm fails it). Run with the worker count as argument:
 * a spinning thread keeps each other worker busy so that the readied
 * waiter can run only on the forking thread's worker, after the fork. */
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sync_util.h"

#define MISSED 3 /* child's status: the waiter ran before the fork */

static swarm_rwlock_t m = SWARM_RWLOCK_INITIALIZER;
static _Atomic int started, took, stop, spinning;

static void *spinner(void *a) {
  (void)a;
  atomic_fetch_add(&spinning, 1);
  while (!atomic_load(&stop))
    ;
  return NULL;
}

static void *locker(void *a) {
  (void)a;
  atomic_store(&started, 1);
  CHECK_EQ(swarm_rwlock_rdlock(&m), 0);
  atomic_store(&took, 1);
  CHECK_EQ(swarm_rwlock_unlock(&m), 0);
  return NULL;
}

/* With the caller holding m for writing: a reader that has queued on it. */
static swarm_thread_t queue_locker(void) {
  swarm_thread_t t;
  atomic_store(&started, 0);
  CHECK_EQ(swarm_spawn(&t, NULL, locker, NULL), 0);
  while (!atomic_load(&started))
    swarm_sleep_ns(2000000);
  swarm_sleep_ns(20000000); /* let it queue */
  return t;
}

static void child(bool destroy) {
  alarm(20);
  if (atomic_load(&took))
    _exit(MISSED);
  /* The case is set up: the count is the ghost's. */
  CHECK_EQ(atomic_load((_Atomic uint32_t *)&m.woken_), 1);
  if (destroy) {
    CHECK_EQ(swarm_rwlock_destroy(&m), 0);
    _exit(0);
  }
  CHECK_EQ(swarm_rwlock_wrlock(&m), 0);
  swarm_thread_t t = queue_locker();
  CHECK(!atomic_load(&took));
  CHECK_EQ(swarm_rwlock_unlock(&m), 0); /* must wake t */
  CHECK_EQ(swarm_join(t, NULL), 0);
  CHECK(atomic_load(&took));
  CHECK_EQ(swarm_rwlock_destroy(&m), 0);
  _exit(0);
}

/* One fork right after an unlock readied a waiter; the child's status. */
static int try_once(int nspin, bool destroy) {
  swarm_thread_t sp[16];
  atomic_store(&stop, 0);
  atomic_store(&spinning, 0);
  atomic_store(&took, 0);
  CHECK_EQ(swarm_rwlock_wrlock(&m), 0);
  for (int i = 0; i < nspin; i++)
    CHECK_EQ(swarm_spawn(&sp[i], NULL, spinner, NULL), 0);
  while (atomic_load(&spinning) < nspin)
    swarm_sleep_ns(2000000);
  swarm_thread_t t = queue_locker();
  CHECK_EQ(swarm_rwlock_unlock(&m), 0); /* readies t ... */
  pid_t p = fork();                     /* ... which has not run yet */
  CHECK(p >= 0);
  if (p == 0)
    child(destroy);
  atomic_store(&stop, 1);
  for (int i = 0; i < nspin; i++)
    CHECK_EQ(swarm_join(sp[i], NULL), 0);
  CHECK_EQ(swarm_join(t, NULL), 0);
  int status;
  CHECK_EQ(waitpid(p, &status, 0), p);
  CHECK(WIFEXITED(status) &&
            (WEXITSTATUS(status) == 0 || WEXITSTATUS(status) == MISSED),
        "child: status %#x (SIGALRM %d: the unlock woke nobody)", status,
        SIGALRM);
  return WEXITSTATUS(status);
}

static void *driver(void *a) {
  int nspin = (int)(long)a, hit = 0, missed = 0;
  for (int i = 0; i < 20 && hit < 4; i++) {
    if (try_once(nspin, hit == 3) == MISSED)
      missed++;
    else
      hit++;
  }
  printf("forks with the readied waiter not yet run: %d (missed %d)\n", hit,
         missed);
  CHECK_EQ(hit, 4);
  return NULL;
}

int main(int argc, char **argv) {
  alarm(120);
  int workers = argc > 1 ? atoi(argv[1]) : 2;
  CHECK(workers >= 1 && workers <= 16);
  swarm_config_t cfg = {.workers = workers};
  CHECK_EQ(swarm_init(&cfg), 0);
  CHECK_EQ(run(driver, (void *)(long)(workers - 1)), 0);
  CHECK_EQ(swarm_finalize(), 0);
  printf("OK\n");
  return 0;
}
