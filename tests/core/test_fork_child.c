/* fork in the native API (core/fork.c, a plain libc fork): in the child of
 * a fork made while the runtime runs, the calling flow is already, when fork
 * returns, the main thread of a fresh runtime on the one kernel thread that
 * survived, under the descriptor it had: swarm_self() is the same handle, a
 * key's value (its sync record) and a mutex it held carry over (ownership is
 * recorded by descriptor), threads spawn and join, and swarm_finalize ends the
 * runtime. Forked from a swarm thread on a worker, from the main thread, and
 * from a kernel thread that is not a worker. None of the parent's other threads
 * runs in the child: not the sleeping ones, and not one parked on a condition
 * variable that the child then signals (a ghost, never readied). swarm_atfork's
 * hooks run in order, the child's on the fresh runtime. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <swarm.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "core/core.h"

static void *twice_hook(void *arg);
static swarm_key_t key;
static swarm_mutex_t held;
static volatile int in_child;
static swarm_mutex_t gate_lock;
static swarm_cond_t gate;
static int gate_open;
static char hook_log[64];
static int hook_len;

static void log_hook(char c) {
  if (hook_len < (int)sizeof hook_log - 1)
    hook_log[hook_len++] = c;
}
static void prepare_a(void) {
  log_hook('a');
}
static void prepare_b(void) {
  log_hook('b');
}
static void parent_a(void) {
  log_hook('P');
}
static void child_a(void) {
  /* On the fresh runtime: it may spawn and join. */
  swarm_thread_t t;
  void *r = NULL;
  /* First: this kernel thread is worker 0 (a spawn may move us later). */
  if (swarm_is_running() && swarm_worker_id() == 0 &&
      swarm_spawn(&t, NULL, twice_hook, (void *)21) == 0 &&
      swarm_join(t, &r) == 0 && (long)r == 42)
    log_hook('C');
  else
    log_hook('x');
}
static void child_b(void) {
  log_hook('D');
}

/* Parked on a condition variable in the parent; the child signals it. */
static void *waiter(void *arg) {
  (void)arg;
  swarm_mutex_lock(&gate_lock);
  while (!gate_open)
    swarm_cond_wait(&gate, &gate_lock);
  swarm_mutex_unlock(&gate_lock);
  if (in_child)
    _exit(98);
  return NULL;
}

static void *twice(void *arg) {
  return (void *)((long)arg * 2);
}
static void *twice_hook(void *arg) {
  return (void *)((long)arg * 2);
}

/* Copies of the parent's other threads must never run in the child. */
static void *background(void *arg) {
  (void)arg;
  swarm_sleep_ns(100 * 1000000);
  if (in_child)
    _exit(99);
  return NULL;
}

/* Forks; in the child checks what must carry over and returns the exit
 * status it would give; in the parent, the child's. */
static int fork_and_check(const char *who, bool with_key) {
  swarm_thread_t me = swarm_self();
  /* Only a swarm thread's record is freed when it ends: main's and a
   * kernel thread's would show as leaks (docs/sync.md). */
  if (with_key)
    CHECK_EQ(swarm_setspecific(key, (void *)who), 0);
  CHECK_EQ(swarm_mutex_lock(&held), 0);
  fflush(stdout);
  hook_len = 0;
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    in_child = 1;
    hook_log[hook_len] = 0;
    CHECK(strcmp(hook_log, "baCD") == 0, "%s: child hooks ran as '%s'", who,
          hook_log);
    CHECK(swarm_is_running());
    CHECK_EQ(swarm_num_workers(), 2);
    /* The parent's waiter is a ghost here: waking it does nothing. */
    CHECK_EQ(swarm_mutex_lock(&gate_lock), 0);
    gate_open = 1;
    CHECK_EQ(swarm_cond_broadcast(&gate), 0);
    CHECK_EQ(swarm_mutex_unlock(&gate_lock), 0);
    CHECK(swarm_self() == me, "%s: handle %#llx became %#llx", who,
          (unsigned long long)me, (unsigned long long)swarm_self());
    CHECK(swarm_getspecific(key) == (with_key ? (void *)who : NULL));
    CHECK_EQ(swarm_mutex_unlock(&held), 0); /* errorcheck: still ours */
    long sum = 0;
    for (long i = 0; i < 50; i++) {
      swarm_thread_t t;
      void *r;
      CHECK_EQ(swarm_spawn(&t, NULL, twice, (void *)i), 0);
      CHECK_EQ(swarm_join(t, &r), 0);
      sum += (long)r;
    }
    CHECK_EQ(sum, 2450);
    swarm_sleep_ns(150 * 1000000); /* time for a stray copy to show */
    CHECK_EQ(swarm_finalize(), 0);
    CHECK(!swarm_is_running());
    _exit(42);
  }
  hook_log[hook_len] = 0;
  CHECK(strcmp(hook_log, "baP") == 0, "%s: parent hooks ran as '%s'", who,
        hook_log);
  CHECK_EQ(swarm_mutex_unlock(&held), 0);
  int status;
  CHECK(waitpid(pid, &status, 0) == pid);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 42, "%s: child status %#x",
        who, status);
  return 0;
}

static void *from_swarm_thread(void *arg) {
  (void)arg;
  fork_and_check("a swarm thread", true);
  return NULL;
}

static void *from_kernel_thread(void *arg) {
  (void)arg;
  CHECK_EQ(swarm_worker_id(), -1);
  fork_and_check("a kernel thread", false);
  return NULL;
}

int main(void) {
  swarm_config_t cfg = {.workers = 2};
  CHECK_EQ(swarm_init(&cfg), 0);
  CHECK_EQ(swarm_key_create(&key, NULL), 0);
  CHECK_EQ(swarm_mutex_init(&held, SWARM_MUTEX_ERRORCHECK), 0);
  CHECK_EQ(swarm_mutex_init(&gate_lock, SWARM_MUTEX_NORMAL), 0);
  CHECK_EQ(swarm_cond_init(&gate, 0), 0);
  CHECK_EQ(swarm_atfork(NULL, NULL, NULL), EINVAL);
  CHECK_EQ(swarm_atfork(prepare_a, parent_a, child_a), 0);
  CHECK_EQ(swarm_atfork(prepare_b, NULL, child_b), 0);
  swarm_thread_t bg[3], t, w;
  CHECK_EQ(swarm_spawn(&w, NULL, waiter, NULL), 0);
  for (int i = 0; i < 3; i++)
    CHECK_EQ(swarm_spawn(&bg[i], NULL, background, NULL), 0);
  CHECK_EQ(swarm_spawn(&t, NULL, from_swarm_thread, NULL), 0);
  CHECK_EQ(swarm_join(t, NULL), 0);
  pthread_t kt;
  CHECK_EQ(pthread_create(&kt, NULL, from_kernel_thread, NULL), 0);
  CHECK_EQ(pthread_join(kt, NULL), 0);
  fork_and_check("the main thread", false);
  for (int i = 0; i < 3; i++)
    CHECK_EQ(swarm_join(bg[i], NULL), 0);
  swarm_mutex_lock(&gate_lock);
  gate_open = 1;
  swarm_cond_broadcast(&gate);
  swarm_mutex_unlock(&gate_lock);
  CHECK_EQ(swarm_join(w, NULL), 0);
  CHECK_EQ(swarm_finalize(), 0);
  TEST_PASS("fork_child");
  return 0;
}
