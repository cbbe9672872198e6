/* swarm_init when a kernel thread cannot be started — a worker's, or the
 * monitor's, whose result swarm_init once ignored: it returns EAGAIN and
 * leaves nothing behind (the runtime is off, every kernel thread it started
 * has ended, the descriptor it took for main and stats' copy of stderr are
 * given back: ASan's leak check and the fd count see the rest), and a later
 * swarm_init starts normally.
 *
 * The runtime makes its kernel threads with libc's pthread_create (os/sys.h:
 * libc_pthread_create, bound by name in libswarm), so this program's own
 * pthread_create, which fails on request, is the one it calls. */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <swarm.h>
#include <time.h>

#include "check.h"

static _Atomic int creates, fail_at; /* fail the fail_at-th call (1-based) */

int pthread_create(pthread_t *t, const pthread_attr_t *a, void *(*fn)(void *),
                   void *arg) {
  static int (*real)(pthread_t *, const pthread_attr_t *, void *(*)(void *),
                     void *);
  if (!real)
    real = (int (*)(pthread_t *, const pthread_attr_t *, void *(*)(void *),
                    void *))dlsym(RTLD_NEXT, "pthread_create");
  int n = atomic_fetch_add(&creates, 1) + 1;
  if (n == atomic_load(&fail_at))
    return EAGAIN;
  return real(t, a, fn, arg);
}

static int count_dir(const char *path) {
  DIR *d = opendir(path);
  CHECK(d != NULL);
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)))
    n += e->d_name[0] != '.';
  closedir(d);
  return n;
}

/* The calling process's kernel threads once those that were joined have
 * gone: a joined thread may still be listed for a moment (pthread_join
 * returns when the kernel clears its tid, before the task is released;
 * under qemu-user, when qemu does), so wait for the count to come down to
 * `expected`, for at most 10 s; a thread that never ends still fails. */
static int tasks_settled(int expected) {
  int n = count_dir("/proc/self/task");
  for (int i = 0; i < 10000 && n != expected; i++) {
    struct timespec ms = {0, 1000000};
    nanosleep(&ms, NULL);
    n = count_dir("/proc/self/task");
  }
  return n;
}

static void *twice(void *arg) {
  return (void *)((long)arg * 2);
}

static void run_some_threads(void) {
  for (long i = 0; i < 100; i++) {
    swarm_thread_t t;
    void *r;
    CHECK_EQ(swarm_spawn(&t, NULL, twice, (void *)i), 0);
    CHECK_EQ(swarm_join(t, &r), 0);
    CHECK_EQ((long)r, 2 * i);
  }
}

int main(void) {
  /* 3 workers: kernel threads for workers 1 and 2, then the monitor. */
  swarm_config_t cfg = {.workers = 3, .stats = 1};
  int tasks = count_dir("/proc/self/task"), fds = count_dir("/proc/self/fd");
  for (int fail = 1; fail <= 3; fail++) {
    atomic_store(&creates, 0);
    atomic_store(&fail_at, fail);
    CHECK_EQ(swarm_init(&cfg), EAGAIN);
    CHECK_EQ(atomic_load(&creates), fail);
    CHECK(!swarm_is_running(), "failure %d left the runtime running", fail);
    CHECK_EQ(swarm_worker_id(), -1);       /* this kernel thread is no worker */
    CHECK_EQ(tasks_settled(tasks), tasks); /* all joined */
    CHECK_EQ(count_dir("/proc/self/fd"), fds); /* stats' fd closed */
  }
  /* Blocking calls of a kernel thread whose runtime could not start wait
   * on the kernel thread itself: timed ones time out, none crashes. */
  atomic_store(&creates, 0);
  atomic_store(&fail_at, 1);
  CHECK_EQ(swarm_init(&cfg), EAGAIN);
  swarm_sem_t sem;
  CHECK_EQ(swarm_sem_init(&sem, 0), 0);
  struct timespec soon;
  clock_gettime(CLOCK_REALTIME, &soon);
  soon.tv_nsec += 20 * 1000000;
  if (soon.tv_nsec >= 1000000000) {
    soon.tv_sec++;
    soon.tv_nsec -= 1000000000;
  }
  atomic_store(&creates, 0);
  atomic_store(&fail_at, 1); /* a lazy start fails too */
  CHECK_EQ(swarm_sem_timedwait(&sem, CLOCK_REALTIME, &soon), ETIMEDOUT);
  CHECK_EQ(swarm_sem_post(&sem), 0);
  CHECK_EQ(swarm_sem_timedwait(&sem, CLOCK_REALTIME, &soon), 0);
  CHECK(!swarm_is_running());
  CHECK_EQ(tasks_settled(tasks), tasks);
  atomic_store(&fail_at, 0);
  CHECK_EQ(swarm_init(&cfg), 0);
  CHECK_EQ(swarm_num_workers(), 3);
  run_some_threads();
  CHECK_EQ(swarm_finalize(), 0);
  CHECK_EQ(tasks_settled(tasks), tasks);
  TEST_PASS("init_failure");
  return 0;
}
