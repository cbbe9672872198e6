/*
 * core/fork.c — fork() while the runtime runs: the child's restart, the
 * ghosts the parent leaves in the child's memory, and swarm_atfork's hooks.
 *
 * What POSIX promises and what we keep: the child has one kernel thread,
 * the one that called fork, and only the calling flow continues there. In
 * swarm that flow is a swarm thread, possibly on a worker's swarm stack, and
 * every other thread of the parent (running on another worker, runnable in
 * a deque, sleeping on a timer, parked in a wait list) exists in the child's
 * memory only as a copy — a ghost — that must never run: it would repeat
 * side effects the parent makes too.
 *
 * The child handler, registered with pthread_atfork the first time a
 * runtime starts, so it runs inside any fork (the native API's plain libc
 * fork, the drop-in's interposer, a library's), does two things:
 *  - restarts the runtime (runtime_fork_child) with the configuration the
 *    parent's run resolved to, on the surviving kernel thread, with the
 *    calling flow as its main thread under the descriptor it had. The
 *    parent's workers, deques, ready queues and timers are abandoned with
 *    the ghosts they hold, so nothing there is ever run;
 *  - advances swarm_rt.era. A thread stamps the era when it parks
 *    (park.c), and swarm_ready drops a thread whose stamp is older: a
 *    ghost parked in a wait list that the child's flow then signals (a
 *    condition variable, a mutex, a semaphore, an fd) stays a ghost instead
 *    of running in the child. The sync layer's hand-offs (mutex unlock,
 *    cond signal and broadcast, sem post, rwlock grants, barrier rounds)
 *    read the same stamp and skip ghosts (sync_queue_drop_ghosts in
 *    sync/sync.h), so what the child hands over reaches its own threads.
 * Then the child hooks of swarm_atfork run, in registration order, on the
 * fresh runtime: they may spawn.
 *
 * Rejected: restarting lazily at the child's first swarm call (the flow
 * would keep running as a parent's worker's thread in between, with a TLS
 * worker whose peers are gone — the "children of a busy parent hang" bug);
 * marking every ghost's descriptor in the child (a walk of the whole
 * descriptor table, and a copy-on-write fault per page touched, in every
 * child of a process with a million threads).
 *
 * Race: a core lock another kernel thread held at the instant of fork stays
 * held in the child; runtime_fork_child reinitialises core's own (the
 * lifecycle lock, the descriptor table's, the stack pool's).
 */
#include <errno.h>
#include <pthread.h>

#include "core/core.h"

#define ATFORK_MAX 32

struct atfork_hook {
  void (*prepare)(void);
  void (*parent)(void);
  void (*child)(void);
};

static struct {
  struct spinlock lock; /* registration; fork itself reads under it too */
  struct atfork_hook hooks[ATFORK_MAX];
  int count;
  bool registered;   /* our pthread_atfork handlers are in */
  bool running;      /* the runtime ran when this fork began */
  int restart_error; /* the child's restart: 0 or swarm_init's error */
} fork_state = {.lock = SPINLOCK_INIT(LOCK_UNRANKED)};

int swarm_atfork(void (*prepare)(void), void (*parent)(void),
                 void (*child)(void)) {
  if (!prepare && !parent && !child)
    return EINVAL;
  spin_lock(&fork_state.lock);
  if (fork_state.count == ATFORK_MAX) {
    spin_unlock(&fork_state.lock);
    return ENOMEM;
  }
  fork_state.hooks[fork_state.count++] =
      (struct atfork_hook){prepare, parent, child};
  spin_unlock(&fork_state.lock);
  return 0;
}

/* A copy taken without the lock held: hooks may fork-safely call anything,
 * swarm_atfork included. */
static int hooks_copy(struct atfork_hook *out) {
  spin_lock(&fork_state.lock);
  int n = fork_state.count;
  for (int i = 0; i < n; i++)
    out[i] = fork_state.hooks[i];
  spin_unlock(&fork_state.lock);
  return n;
}

static void fork_prepare(void) {
  struct atfork_hook h[ATFORK_MAX];
  for (int i = hooks_copy(h) - 1; i >= 0; i--) /* reverse, as pthread_atfork */
    if (h[i].prepare)
      h[i].prepare();
  fork_state.running = atomic_load(&swarm_rt.state) == RT_RUNNING;
}

static void fork_parent(void) {
  struct atfork_hook h[ATFORK_MAX];
  int n = hooks_copy(h);
  for (int i = 0; i < n; i++)
    if (h[i].parent)
      h[i].parent();
}

static void fork_child(void) {
  /* Another kernel thread of the parent may have held it. */
  spin_init(&fork_state.lock, LOCK_UNRANKED);
  fork_state.restart_error = 0;
  if (fork_state.running) {
    swarm_config_t cfg = {.workers = swarm_rt.nworkers,
                          .stack_size = swarm_rt.default_stack,
                          .bind = swarm_rt.bind ? 1 : -1,
                          .stats = swarm_rt.print_stats ? 1 : -1};
    fork_state.restart_error = runtime_fork_child(&cfg);
  }
  struct atfork_hook h[ATFORK_MAX];
  int n = hooks_copy(h);
  for (int i = 0; i < n; i++)
    if (h[i].child)
      h[i].child();
}

void fork_hooks_register(void) {
  /* Called with the lifecycle lock held: no race on `registered`. */
  if (fork_state.registered)
    return;
  if (pthread_atfork(fork_prepare, fork_parent, fork_child) == 0)
    fork_state.registered = true;
}

int fork_child_restart_error(void) {
  return fork_state.restart_error;
}
