/* swarm_init when a kernel thread cannot be started — a worker's, or the
 * monitor's, whose result swarm_init once ignored: it returns EAGAIN and
 * leaves nothing behind (the runtime is off, every kernel thread it started
 * has ended, the descriptor it took for main and stats' copy of stderr are
 * given back: ASan's leak check and the fd count see the rest), and a later
 * swarm_init starts normally. Meanwhile every public entry point, called
 * while each start fails, answers as swarm.h says and none crashes (issue
 * 21: swarm_sem_timedwait once segfaulted there).
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
static _Atomic int fail_all;         /* fail every call */

int pthread_create(pthread_t *t, const pthread_attr_t *a, void *(*fn)(void *),
                   void *arg) {
  static int (*real)(pthread_t *, const pthread_attr_t *, void *(*)(void *),
                     void *);
  if (!real)
    real = (int (*)(pthread_t *, const pthread_attr_t *, void *(*)(void *),
                    void *))dlsym(RTLD_NEXT, "pthread_create");
  int n = atomic_fetch_add(&creates, 1) + 1;
  if (n == atomic_load(&fail_at) || atomic_load(&fail_all))
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

static int once_runs;
static void once_fn(void) {
  once_runs++;
}

static struct timespec in_ms(int ms) {
  struct timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  t.tv_nsec += ms * 1000000L;
  if (t.tv_nsec >= 1000000000) {
    t.tv_sec++;
    t.tv_nsec -= 1000000000;
  }
  return t;
}

/* Every public entry point, called while every start of the runtime fails
 * (each lazy start's first kernel thread is refused): each answers as
 * swarm.h says (EAGAIN where it needs the runtime, the plain result where
 * the calling kernel thread can do the work itself), none crashes or
 * hangs. */
static void every_entry_point_without_runtime(void) {
  swarm_config_t cfg = {.workers = 3};
  atomic_store(&fail_all, 1);
  CHECK_EQ(swarm_init(&cfg), EAGAIN);
  /* Threads: a spawn needs the runtime. */
  swarm_thread_t t = 0;
  CHECK_EQ(swarm_spawn(&t, NULL, twice, NULL), EAGAIN);
  CHECK_EQ(swarm_spawn(NULL, NULL, NULL, NULL), EINVAL);
  swarm_thread_t me = swarm_self();
  CHECK(me != 0);
  CHECK(swarm_equal(me, swarm_self()));
  CHECK_EQ(swarm_join(me, NULL), EDEADLK);
  CHECK_EQ(swarm_worker_id(), -1);
  swarm_yield();
  swarm_sleep_ns(1000000);
  swarm_sleep_ns(0);
  CHECK_EQ(swarm_finalize(), ESRCH);
  swarm_stats_t st;
  CHECK_EQ(swarm_stats_get(&st), ESRCH);
  swarm_stats_print();
  CHECK_EQ(swarm_atfork(NULL, NULL, NULL), EINVAL);
  /* Mutexes: a kernel thread locks, times out and unlocks by itself. */
  swarm_mutex_t m;
  CHECK_EQ(swarm_mutex_init(&m, SWARM_MUTEX_ERRORCHECK), 0);
  CHECK_EQ(swarm_mutex_lock(&m), 0);
  CHECK_EQ(swarm_mutex_lock(&m), EDEADLK);
  CHECK_EQ(swarm_mutex_trylock(&m), EBUSY);
  struct timespec soon = in_ms(10);
  CHECK_EQ(swarm_mutex_timedlock(&m, CLOCK_REALTIME, &soon), EDEADLK);
  CHECK_EQ(swarm_mutex_destroy(&m), EBUSY);
  CHECK_EQ(swarm_mutex_unlock(&m), 0);
  CHECK_EQ(swarm_mutex_unlock(&m), EPERM);
  CHECK_EQ(swarm_mutex_destroy(&m), 0);
  swarm_mutex_t n;
  CHECK_EQ(swarm_mutex_init(&n, SWARM_MUTEX_NORMAL), 0);
  CHECK_EQ(swarm_mutex_lock(&n), 0);
  soon = in_ms(10);
  CHECK_EQ(swarm_mutex_timedlock(&n, CLOCK_REALTIME, &soon), ETIMEDOUT);
  CHECK_EQ(swarm_mutex_unlock(&n), 0);
  /* Condition variables. */
  swarm_cond_t c;
  CHECK_EQ(swarm_cond_init(&c, CLOCK_REALTIME), 0);
  CHECK_EQ(swarm_cond_signal(&c), 0);
  CHECK_EQ(swarm_cond_broadcast(&c), 0);
  CHECK_EQ(swarm_mutex_lock(&n), 0);
  soon = in_ms(10);
  CHECK_EQ(swarm_cond_timedwait(&c, &n, &soon), ETIMEDOUT);
  soon = in_ms(10);
  CHECK_EQ(swarm_cond_clockwait(&c, &n, CLOCK_REALTIME, &soon), ETIMEDOUT);
  CHECK_EQ(swarm_mutex_unlock(&n), 0);
  CHECK_EQ(swarm_cond_destroy(&c), 0);
  CHECK_EQ(swarm_mutex_destroy(&n), 0);
  /* Read-write locks. */
  swarm_rwlock_t rw;
  CHECK_EQ(swarm_rwlock_init(&rw, SWARM_RWLOCK_PREFER_READER), 0);
  CHECK_EQ(swarm_rwlock_rdlock(&rw), 0);
  CHECK_EQ(swarm_rwlock_tryrdlock(&rw), 0);
  CHECK_EQ(swarm_rwlock_trywrlock(&rw), EBUSY);
  soon = in_ms(10);
  CHECK_EQ(swarm_rwlock_timedwrlock(&rw, CLOCK_REALTIME, &soon), ETIMEDOUT);
  CHECK_EQ(swarm_rwlock_unlock(&rw), 0);
  CHECK_EQ(swarm_rwlock_unlock(&rw), 0);
  CHECK_EQ(swarm_rwlock_wrlock(&rw), 0);
  soon = in_ms(10);
  CHECK_EQ(swarm_rwlock_timedrdlock(&rw, CLOCK_REALTIME, &soon), EDEADLK);
  CHECK_EQ(swarm_rwlock_destroy(&rw), EBUSY);
  CHECK_EQ(swarm_rwlock_unlock(&rw), 0);
  CHECK_EQ(swarm_rwlock_destroy(&rw), 0);
  /* A barrier of one, semaphores, once, keys. */
  swarm_barrier_t b;
  CHECK_EQ(swarm_barrier_init(&b, 1), 0);
  CHECK_EQ(swarm_barrier_wait(&b), SWARM_BARRIER_SERIAL_THREAD);
  CHECK_EQ(swarm_barrier_destroy(&b), 0);
  swarm_sem_t s;
  CHECK_EQ(swarm_sem_init(&s, 1), 0);
  CHECK_EQ(swarm_sem_wait(&s), 0);
  CHECK_EQ(swarm_sem_trywait(&s), EAGAIN);
  soon = in_ms(10);
  CHECK_EQ(swarm_sem_timedwait(&s, CLOCK_REALTIME, &soon), ETIMEDOUT);
  CHECK_EQ(swarm_sem_post(&s), 0);
  int v = -1;
  CHECK_EQ(swarm_sem_getvalue(&s, &v), 0);
  CHECK_EQ(v, 1);
  CHECK_EQ(swarm_sem_destroy(&s), 0);
  swarm_once_t once = SWARM_ONCE_INIT;
  CHECK_EQ(swarm_once(&once, once_fn), 0);
  CHECK_EQ(swarm_once(&once, once_fn), 0);
  CHECK_EQ(once_runs, 1);
  swarm_key_t k;
  CHECK_EQ(swarm_key_create(&k, NULL), 0);
  CHECK(swarm_getspecific(k) == NULL);
  /* (No swarm_setspecific: a kernel thread's values are never freed, its
   * descriptor living as long as the process, which ASan's leak check
   * would report.) */
  CHECK_EQ(swarm_key_delete(k), 0);
  /* Needs the runtime, so tries to start it: the start fails again. */
  int w = swarm_num_workers();
  CHECK(!swarm_is_running(), "swarm_num_workers left it running (%d)", w);
  CHECK_EQ(w, 1); /* the calling kernel thread (swarm.h) */
  atomic_store(&fail_all, 0);
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
  every_entry_point_without_runtime();
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
