/* swarm_mutex after a fork made between an unlock and the run of the waiter
 * it readied (sync/mutex.c, "Fork"): in the child that waiter is a ghost
 * and the mutex's "a waiter is awake" flag (M_WOKEN) is still set for it.
 * The child's own waiter must still be woken by the next unlock, and the
 * free mutex must destroy with 0 (not EBUSY). Without the era check the
 * child hangs (the alarm fails it). With "rwlock" as second argument the
 * same for swarm_rwlock (sync/rwlock.c, "Fork"): a write holder's unlock
 * wakes a queued reader, and the lock's count of woken waiters not yet run
 * (woken_) counts the ghost. Run with the worker count as argument:
 * a spinning thread keeps each other worker busy so that the readied
 * waiter can run only on the forking thread's worker, after the fork. */
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sync_util.h"

#define M_WOKEN 2u /* sync/mutex.c */
#define MISSED 3   /* child's status: the waiter ran before the fork */

static swarm_mutex_t m = SWARM_MUTEX_INITIALIZER;
static swarm_rwlock_t rw = SWARM_RWLOCK_INITIALIZER;
static bool use_rw; /* the rwlock, not the mutex */

/* The holder's lock (a mutex, or the rwlock for writing) and the waiter's
 * (the mutex, or the rwlock for reading); one unlock and destroy. */
static int hold(void) {
  return use_rw ? swarm_rwlock_wrlock(&rw) : swarm_mutex_lock(&m);
}
static int wait_lock(void) {
  return use_rw ? swarm_rwlock_rdlock(&rw) : swarm_mutex_lock(&m);
}
static int release(void) {
  return use_rw ? swarm_rwlock_unlock(&rw) : swarm_mutex_unlock(&m);
}
static int destroy_lock(void) {
  return use_rw ? swarm_rwlock_destroy(&rw) : swarm_mutex_destroy(&m);
}
/* The readied waiter's mark that a ghost leaves. */
static bool ghost_mark_set(void) {
  if (use_rw)
    return atomic_load((_Atomic uint32_t *)&rw.woken_) == 1;
  return atomic_load((_Atomic uint32_t *)&m.state_) & M_WOKEN;
}
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
  CHECK_EQ(wait_lock(), 0);
  atomic_store(&took, 1);
  CHECK_EQ(release(), 0);
  return NULL;
}

/* With the caller holding m: a locker that has queued on it. */
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
  /* The case is set up: the mark is the ghost's. */
  CHECK(ghost_mark_set());
  if (destroy) {
    CHECK_EQ(destroy_lock(), 0);
    _exit(0);
  }
  CHECK_EQ(hold(), 0);
  swarm_thread_t t = queue_locker();
  CHECK(!atomic_load(&took));
  CHECK_EQ(release(), 0); /* must wake t */
  CHECK_EQ(swarm_join(t, NULL), 0);
  CHECK(atomic_load(&took));
  CHECK_EQ(destroy_lock(), 0);
  _exit(0);
}

/* One fork right after an unlock readied a waiter; the child's status. */
static int try_once(int nspin, bool destroy) {
  swarm_thread_t sp[16];
  atomic_store(&stop, 0);
  atomic_store(&spinning, 0);
  atomic_store(&took, 0);
  CHECK_EQ(hold(), 0);
  for (int i = 0; i < nspin; i++)
    CHECK_EQ(swarm_spawn(&sp[i], NULL, spinner, NULL), 0);
  while (atomic_load(&spinning) < nspin)
    swarm_sleep_ns(2000000);
  swarm_thread_t t = queue_locker();
  CHECK_EQ(release(), 0); /* readies t ... */
  pid_t p = fork();       /* ... which has not run yet */
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
  use_rw = argc > 2 && !strcmp(argv[2], "rwlock");
  CHECK(workers >= 1 && workers <= 16);
  swarm_config_t cfg = {.workers = workers};
  CHECK_EQ(swarm_init(&cfg), 0);
  CHECK_EQ(run(driver, (void *)(long)(workers - 1)), 0);
  CHECK_EQ(swarm_finalize(), 0);
  printf("OK\n");
  return 0;
}
