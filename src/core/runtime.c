/*
 * core/runtime.c — the runtime's life: swarm_init (the calling kernel
 * thread becomes worker 0 and its flow the main swarm thread; the other
 * workers and the monitor start), swarm_finalize (main waits for every
 * other thread, comes back to worker 0, stops the workers), the fork
 * child's restart, and the small queries (swarm_self, swarm_worker_id, ...).
 *
 * The one struct of core's global state, swarm_rt, is defined here; the
 * lifecycle lock (LOCK_LIFECYCLE) serialises start and stop, and `state`
 * (OFF -> STARTING -> RUNNING -> STOPPING -> OFF) tells everyone else where
 * the runtime is without taking it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "arch/context.h"
#include "core/core.h"
#include "core/sched.h"
#include "core/trace.h"
#include "os/os.h"
#include "os/sys.h"

#define SCHED_STACK_SIZE ((size_t)256 * 1024)

struct runtime swarm_rt = {.lifecycle_lock = SPINLOCK_INIT(LOCK_LIFECYCLE)};
__thread struct worker *swarm_tls_worker
    __attribute__((tls_model("initial-exec")));

__attribute__((noinline, noipa)) struct worker *
swarm_worker_current_slow(void) {
  return swarm_tls_worker;
}

/* Clears the calling kernel thread's swarm_tls_worker. Its own function for
 * the reason worker_current is: code after a switch must not write through a
 * thread pointer read before it (aarch64 may read tpidr_el0 once at a
 * function's start; swarm_finalize then cleared the TLS of the worker main
 * had run on, not of the one it returned to — test_finalize, qemu-aarch64). */
__attribute__((noinline, noipa)) void tls_worker_clear(void) {
  swarm_tls_worker = NULL;
}

static void stats_at_exit(void) {
  if (atomic_load(&swarm_rt.state) == RT_RUNNING && swarm_rt.print_stats)
    swarm_stats_print();
}

static void workers_release(int nslots) {
  for (int i = 0; i < nslots; i++) {
    struct worker *w = &swarm_rt.workers[i];
    stack_cache_flush(w);
    desc_cache_flush(w);
    deque_destroy(&w->deque);
    timers_destroy(w);
  }
  free(swarm_rt.workers);
  swarm_rt.workers = NULL;
  stack_pool_shutdown();
}

int swarm_init(const swarm_config_t *config) {
  int nworkers;
  size_t stack;
  bool bind, stats;
  int r = config_resolve(config, &nworkers, &stack, &bind, &stats);
  if (r)
    return r;
  spin_lock(&swarm_rt.lifecycle_lock);
  if (atomic_load(&swarm_rt.state) != RT_OFF) {
    spin_unlock(&swarm_rt.lifecycle_lock);
    return EBUSY;
  }
  atomic_store(&swarm_rt.state, RT_STARTING);
  swarm_rt.nworkers = nworkers;
  swarm_rt.default_stack = stack;
  swarm_rt.bind = bind;
  swarm_rt.print_stats = stats;
  /* Programs may close stderr before exit (xz does): keep our own copy so
   * the counters printed at exit still reach the terminal. */
  swarm_rt.stats_fd = stats ? (int)sys_fcntl(2, F_DUPFD_CLOEXEC, 3) : -1;
  swarm_rt.guard_size = os_page_size();
  swarm_rt.ncpus = os_cpus_allowed(swarm_rt.cpus, SWARM_MAX_WORKERS);
  if (swarm_rt.ncpus > SWARM_MAX_WORKERS)
    swarm_rt.ncpus = SWARM_MAX_WORKERS;
  atomic_store(&swarm_rt.idle_workers, 0);
  atomic_store(&swarm_rt.external_spawned, 0);
  atomic_store(&swarm_rt.finalize_waiter, NULL);
  atomic_store(&swarm_rt.main_exited, false);

  /* Spare workers (monitor.c) follow the regular ones in the array. */
  int nslots = nworkers + monitor_spare_count(nworkers);
  swarm_rt.nslots = nslots;
  size_t bytes = sizeof(struct worker) * (size_t)nslots;
  swarm_rt.workers = aligned_alloc(64, (bytes + 63) & ~(size_t)63);
  if (!swarm_rt.workers)
    goto fail_nomem;
  memset(swarm_rt.workers, 0, bytes);
  for (int i = 0; i < nslots; i++) {
    struct worker *w = &swarm_rt.workers[i];
    w->id = i;
    atomic_init(&w->timers.earliest_ns, UINT64_MAX);
    spin_init(&w->timers.lock, LOCK_TIMERS);
    spin_init(&w->queue.lock, LOCK_READY_QUEUE);
    w->rng = 0x9e3779b97f4a7c15ull * (uint64_t)(i + 1) ^ (uint64_t)getpid();
    if (!w->rng)
      w->rng = 1;
    if (deque_init(&w->deque, 256) != 0) {
      for (int j = 0; j < i; j++)
        deque_destroy(&swarm_rt.workers[j].deque);
      free(swarm_rt.workers);
      swarm_rt.workers = NULL;
      goto fail_nomem;
    }
  }
  os_overflow_handler_install(fault_describe);
  os_errno_init();

  /* Worker 0: this kernel thread; its flow becomes the main swarm thread. */
  struct worker *w0 = &swarm_rt.workers[0];
  struct swarm_thread *main_t = desc_alloc(NULL);
  if (!main_t || stack_alloc(w0, SCHED_STACK_SIZE, &w0->sched_stack) != 0) {
    if (main_t)
      desc_release(NULL, main_t);
    workers_release(nslots);
    goto fail_nomem;
  }
  main_t->kind = THREAD_MAIN;
  atomic_fetch_or(&main_t->control, CTL_SPECIAL); /* see core.h */
  main_t->pinned_worker = -1;
  main_t->fn = NULL;
  main_t->next = NULL;
  main_t->joiner = NULL;
  for (int i = 0; i < SWARM_THREAD_SLOTS; i++)
    main_t->slots[i] = NULL;
  void *lo;
  size_t size;
  os_thread_stack_bounds(&lo, &size);
  main_t->stack.lo = lo;
  main_t->stack.size = size;
  swarm_rt.main_thread = main_t;
  w0->tid = os_thread_id(); /* the monitor reads its state */
  w0->current = main_t;
  /* Plain steps: NULL where the work is done before the switch (spawn_here,
   * exit_switch), which needs SWARM_ARCH_PUBLISH_LAST for the spawn and a
   * build without ASan for the exit (stack_release_running). */
  static const struct trace_steps plain =
                                      {
#ifdef SWARM_ARCH_PUBLISH_LAST
                                          NULL,
#else
                                          after_push_parent,
#endif
#ifdef SWARM_ASAN
                                          after_release_stack,
#else
                                          NULL,
#endif
                                          after_park},
                                  traced = {after_push_parent_traced,
                                            after_release_stack_traced,
                                            after_park_traced};
  swarm_rt.after_main_exit =
      trace_start(&plain, &traced) ? after_main_exit_traced : NULL;
  w0->altstack = os_altstack_install();
  w0->sched_sp = swarm_arch_prepare(w0->sched_stack.lo + w0->sched_stack.size,
                                    sched_entry);
  swarm_tls_worker = w0;
  if (bind)
    os_bind_self(swarm_rt.cpus[0]);
  atomic_store(&swarm_rt.state, RT_RUNNING);

  for (int i = 1; i < nworkers; i++) {
    struct worker *w = &swarm_rt.workers[i];
    if (os_thread_start(&w->kthread, worker_main, w) != 0) {
      /* Stop the ones that started, undo everything, report EAGAIN. */
      atomic_store(&swarm_rt.state, RT_STOPPING);
      for (int j = 1; j < i; j++) {
        worker_wake_sleeping(&swarm_rt.workers[j]);
        os_thread_join(swarm_rt.workers[j].kthread);
      }
      trace_stop();
      swarm_tls_worker = NULL;
      os_altstack_release(w0->altstack);
      stack_release(NULL, w0->sched_stack);
      desc_release(NULL, main_t);
      swarm_rt.main_thread = NULL;
      workers_release(nslots);
      atomic_store(&swarm_rt.state, RT_OFF);
      spin_unlock(&swarm_rt.lifecycle_lock);
      return EAGAIN;
    }
  }
  monitor_start(); /* without it, only stuck workers go unnoticed */
  static bool atexit_done;
  if (!atexit_done) {
    atexit_done = true;
    atexit(stats_at_exit);
  }
  spin_unlock(&swarm_rt.lifecycle_lock);
  return 0;

fail_nomem:
  atomic_store(&swarm_rt.state, RT_OFF);
  spin_unlock(&swarm_rt.lifecycle_lock);
  return EAGAIN;
}

int runtime_ensure_started(void) {
  if (likely(atomic_load_explicit(&swarm_rt.state, memory_order_acquire) ==
             RT_RUNNING))
    return 0;
  int r = swarm_init(NULL);
  if (r != EBUSY)
    return r;
  /* Another kernel thread is starting it: wait until it is up. */
  int s;
  while ((s = atomic_load_explicit(&swarm_rt.state, memory_order_acquire)) ==
         RT_STARTING)
    os_yield();
  return s == RT_RUNNING ? 0 : EAGAIN;
}

void runtime_reset_after_fork(void) {
  swarm_tls_worker = NULL;
  external_thread_forget();
  swarm_rt.workers = NULL; /* the parent's, abandoned with their threads */
  swarm_rt.nworkers = 0;
  swarm_rt.nslots = 0;
  monitor_after_fork();
  swarm_rt.main_thread = NULL;
  atomic_store(&swarm_rt.idle_workers, 0);
  atomic_store(&swarm_rt.finalize_waiter, NULL);
  atomic_store(&swarm_rt.main_exited, false);
  atomic_store(&swarm_rt.external_spawned, 0);
  spin_init(&swarm_rt.lifecycle_lock, LOCK_LIFECYCLE);
  desc_table_after_fork();
  stack_pool_after_fork();
  atomic_store(&swarm_rt.state, RT_OFF);
}

static bool commit_finalize_wait(struct swarm_thread *self, void *arg) {
  (void)arg;
  atomic_store_explicit(&swarm_rt.finalize_waiter, self, memory_order_release);
  return true;
}

int swarm_finalize(void) {
  if (atomic_load(&swarm_rt.state) != RT_RUNNING)
    return ESRCH;
  struct worker *w = worker_current();
  if (!w || w->current != swarm_rt.main_thread)
    return EPERM;
  struct swarm_thread *self = swarm_rt.main_thread;
  /* Come back to worker 0, the kernel thread that called swarm_init, and
   * stay there: after this we are that kernel thread again. */
  self->pinned_worker = 0;
  if (w->id != 0)
    swarm_park(commit_requeue, NULL, SWARM_PARK_FINALIZE, NULL);
  /* Wait until every other thread has exited (an idle worker readies us). */
  swarm_park(commit_finalize_wait, NULL, SWARM_PARK_FINALIZE, NULL);
  w = worker_current();
  if (swarm_rt.print_stats) { /* SWARM_STATS: this run's counters, now */
    swarm_stats_print();
    if (swarm_rt.stats_fd >= 0)
      sys_close(swarm_rt.stats_fd);
    swarm_rt.stats_fd = -1;
  }
  spin_lock(&swarm_rt.lifecycle_lock);
  atomic_store(&swarm_rt.state, RT_STOPPING);
  for (int i = 1; i < swarm_rt.nworkers; i++) {
    struct worker *v = &swarm_rt.workers[i];
    worker_wake_sleeping(v);
    atomic_fetch_add(&v->sleep_word, 1);
    os_futex_wake(&v->sleep_word, 1);
  }
  for (int i = 1; i < swarm_rt.nworkers; i++)
    os_thread_join(swarm_rt.workers[i].kthread);
  monitor_stop(); /* and the spares it started */
  trace_stop();
  tls_worker_clear();
  os_altstack_release(w->altstack);
  w->altstack = NULL;
  stack_release(NULL, w->sched_stack);
  self->pinned_worker = -1;
  atomic_fetch_or(&self->control, CTL_EXITED);
  desc_release(NULL, self);
  swarm_rt.main_thread = NULL;
  workers_release(swarm_rt.nslots);
  swarm_rt.nworkers = 0;
  swarm_rt.nslots = 0;
  atomic_store(&swarm_rt.state, RT_OFF);
  spin_unlock(&swarm_rt.lifecycle_lock);
  return 0;
}

/* ---- small queries ---- */

int swarm_is_running(void) {
  return atomic_load(&swarm_rt.state) == RT_RUNNING;
}

swarm_thread_t swarm_self(void) {
  struct worker *w = worker_current();
  if (!w && runtime_ensure_started() == 0)
    w = worker_current();
  struct swarm_thread *t = w ? w->current : swarm_current_thread();
  return t ? desc_handle(t) : SWARM_THREAD_NONE;
}

int swarm_worker_id(void) {
  struct worker *w = worker_current();
  return w ? w->id : -1;
}

int swarm_num_workers(void) {
  if (runtime_ensure_started() != 0)
    return 1;
  return swarm_rt.nworkers;
}
