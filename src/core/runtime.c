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
 *
 * One way down: a start records how far it got (struct start_progress) and
 * runtime_stop undoes exactly that, in reverse, both for a start that fails
 * halfway (out of memory, a worker's or the monitor's kernel thread that
 * cannot start: swarm_init returns EAGAIN and leaves nothing behind) and
 * for swarm_finalize, which stops a runtime that got all the way.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "arch/context.h"
#include "core/core.h"
#include "core/limits.h"
#include "core/sched.h"
#include "core/trace.h"
#include "os/os.h"
#include "os/sys.h"

/* sync/cxx_eh.c's C++ exception state per thread: a program linked with
 * libswarm.a pulls that object only if something it links refers to it,
 * and the C++ runtime's calls do not (they are the C++ runtime's own). The
 * runtime does, so every program that starts it has it. */
void *__cxa_get_globals(void);
__attribute__((used)) static void *(*const keep_cxx_eh)(void) =
    __cxa_get_globals;

void (*swarm_main_enter_hook)(struct swarm_thread *main, bool adopted);

#define SCHED_STACK_SIZE ((size_t)256 * 1024)
/* The guard region below every stack core maps. A frame that the compiler
 * emits without stack probes (gcc/clang without -fstack-clash-protection)
 * moves the stack pointer by its whole size at once, and its first access
 * may land anywhere in it: a one-page guard is skipped by any frame over
 * 4 KiB and the write lands in the neighbouring stack of the batch. 64 KiB
 * catches every frame up to 64 KiB (GCC's own assumption on aarch64 for
 * -fstack-clash-protection, and well above the largest fixed frames that
 * real code keeps). With guard markers (Linux >= 6.13) it costs no VMA and
 * no memory, only 16 page-table entries that sit in the page-table page
 * the neighbouring stack's top already uses; with the mprotect fallback it
 * is one VMA whatever its size, and 64 KiB of address space per thread
 * (64 GiB for a million threads, far below the 128 TiB there is).
 * docs/stacks.md says what -fstack-clash-protection adds. */
#define STACK_GUARD_SIZE ((size_t)64 * 1024)

struct runtime swarm_rt = {.lifecycle_lock = SPINLOCK_INIT(LOCK_LIFECYCLE)};
__thread struct worker *swarm_tls_worker
    __attribute__((tls_model("initial-exec")));

/* core.h: worker_current_or_none's answer on a kernel thread that is not
 * a worker. Its descriptor cache is empty and counts as full. */
struct worker swarm_worker_none = {.descs = {.count = UINT32_MAX},
                                   .inline_depth = INT64_MAX};
__thread struct worker *swarm_tls_worker_or_none
    __attribute__((tls_model("initial-exec"))) = &swarm_worker_none;

__attribute__((noinline, noipa)) struct worker *
swarm_worker_current_slow(void) {
  return swarm_tls_worker;
}

__attribute__((noinline, noipa)) struct worker *
swarm_worker_or_none_slow(void) {
  return swarm_tls_worker_or_none;
}

/* noipa for the reason tls_worker_clear is (below). */
__attribute__((noinline, noipa)) void tls_worker_set(struct worker *w) {
  swarm_tls_worker = w;
  swarm_tls_worker_or_none = w ? w : &swarm_worker_none;
}

/* Clears the calling kernel thread's swarm_tls_worker. Its own function for
 * the reason worker_current is: code after a switch must not write through a
 * thread pointer read before it (aarch64 may read tpidr_el0 once at a
 * function's start; swarm_finalize then cleared the TLS of the worker main
 * had run on, not of the one it returned to — test_finalize, qemu-aarch64). */
__attribute__((noinline, noipa)) void tls_worker_clear(void) {
  tls_worker_set(NULL);
}

static void stats_at_exit(void) {
  if (atomic_load(&swarm_rt.state) == RT_RUNNING && swarm_rt.print_stats)
    swarm_stats_print();
}

/* ---- start: each step records what it did; runtime_stop undoes it ---- */

/* How far a start got. runtime_stop undoes exactly that, in reverse, for a
 * start that failed halfway and for swarm_finalize (which stops a runtime
 * that got all the way), so there is one way down. */
struct start_progress {
  int deques;                   /* workers[0 .. deques) are initialised */
  bool worker0;                 /* this kernel thread is worker 0 */
  struct swarm_thread *adopted; /* main is the caller's own descriptor */
  int threads;                  /* workers[1 .. threads] have kernel threads */
  bool monitor;                 /* the monitor runs */
};

/* The worker array, regular workers then spares (monitor.c). */
static int workers_make(int nslots, struct start_progress *p) {
  size_t bytes = sizeof(struct worker) * (size_t)nslots;
  swarm_rt.workers = aligned_alloc(64, (bytes + 63) & ~(size_t)63);
  if (!swarm_rt.workers)
    return EAGAIN;
  memset(swarm_rt.workers, 0, bytes);
  for (int i = 0; i < nslots; i++) {
    struct worker *w = &swarm_rt.workers[i];
    w->id = i;
    w->inline_depth = INT64_MAX; /* inline.c: SWARM_INLINE_DEPTH not read */
    atomic_init(&w->timers.earliest_ns, UINT64_MAX);
    spin_init(&w->timers.lock, LOCK_TIMERS);
    spin_init(&w->queue.lock, LOCK_READY_QUEUE);
    w->rng = 0x9e3779b97f4a7c15ull * (uint64_t)(i + 1) ^ (uint64_t)getpid();
    if (!w->rng)
      w->rng = 1;
    if (deque_init(&w->deque, 256) != 0)
      return EAGAIN;
    p->deques = i + 1;
  }
  return 0;
}

/* Workers' caches, deques and timers, the array, the stack pool. */
static void workers_release(int deques) {
  for (int i = 0; i < deques; i++) {
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

/* The main thread's descriptor: a fresh one running on this kernel
 * thread's own stack, or `adopt`, the caller's own (a fork child keeps its
 * identity: its handle, its upper layers' data, the objects it owns). */
static struct swarm_thread *main_thread_make(struct swarm_thread *adopt) {
  struct swarm_thread *t = adopt ? adopt : desc_alloc(NULL);
  if (!t)
    return NULL;
  uint64_t c = atomic_load_explicit(&t->control, memory_order_relaxed);
  /* MAIN carries CTL_SPECIAL (core.h) and none of a joiner's flags: the
   * joiner of an adopted thread stayed in the parent. */
  atomic_store_explicit(&t->control, (c & ~CTL_FLAGS) | CTL_SPECIAL,
                        memory_order_relaxed);
  t->kind = THREAD_MAIN;
  t->pinned_worker = -1;
  t->inline_floor = UINTPTR_MAX; /* its children never run inline */
  t->next = NULL;
  t->joiner = NULL;
  if (!adopt) {
    t->fn = NULL;
    for (int i = 0; i < SWARM_THREAD_SLOTS; i++)
      t->slots[i] = NULL;
  }
  if (!adopt || !t->stack.lo) { /* else it keeps running on the stack it had */
    void *lo;
    size_t size;
    os_thread_stack_bounds(&lo, &size);
    t->stack.lo = lo;
    t->stack.size = size;
  }
  return t;
}

/* This kernel thread becomes worker 0 and its flow the main thread. */
static int worker0_enter(struct swarm_thread *adopt, struct start_progress *p) {
  struct worker *w0 = &swarm_rt.workers[0];
  if (stack_alloc(w0, SCHED_STACK_SIZE, &w0->sched_stack) != 0)
    return EAGAIN;
  struct swarm_thread *main_t = main_thread_make(adopt);
  if (!main_t) {
    stack_release(NULL, w0->sched_stack);
    return EAGAIN;
  }
  p->worker0 = true;
  p->adopted = adopt;
  swarm_rt.main_adopted = adopt;
  swarm_rt.main_thread = main_t;
  if (swarm_main_enter_hook)
    swarm_main_enter_hook(main_t, adopt != NULL);
  w0->tid = os_thread_id(); /* the monitor reads its state */
  os_program_mask_save();   /* workers run with it (issue 21 item 1) */
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
  cpuclock_reset(); /* a fork child's threads count from its next request */
  swarm_rt.after_main_exit =
      trace_start(&plain, &traced) ? after_main_exit_traced : NULL;
  w0->altstack = os_altstack_install();
  w0->sched_sp = swarm_arch_prepare(w0->sched_stack.lo + w0->sched_stack.size,
                                    sched_entry);
  tls_worker_set(w0);
  if (swarm_rt.bind)
    os_bind_self(swarm_rt.cpus[0]);
  atomic_store(&swarm_rt.state, RT_RUNNING);
  return 0;
}

/* This kernel thread stops being worker 0. The main descriptor is retired,
 * or, for a start that failed with an adopted descriptor, handed back to
 * the kernel thread as its own (external) descriptor: it keeps its
 * identity. */
static void worker0_leave(struct swarm_thread *adopted) {
  struct worker *w0 = &swarm_rt.workers[0];
  struct swarm_thread *main_t = swarm_rt.main_thread;
  trace_stop();
  tls_worker_clear();
  os_altstack_release(w0->altstack);
  w0->altstack = NULL;
  stack_release(NULL, w0->sched_stack);
  swarm_rt.main_thread = NULL;
  swarm_rt.main_adopted = NULL;
  if (adopted) {
    external_thread_adopt(adopted);
    return;
  }
  main_t->pinned_worker = -1;
  atomic_fetch_or(&main_t->control, CTL_EXITED);
  desc_release(NULL, main_t);
}

/* Worker kernel threads 1 .. nworkers-1. */
static int workers_start(struct start_progress *p) {
  for (int i = 1; i < swarm_rt.nworkers; i++) {
    struct worker *w = &swarm_rt.workers[i];
    int r = os_thread_start(&w->kthread, worker_main, w);
    if (r != 0) {
      errno =
          r; /* pthread_create's answer, not a stale errno, for the message */
      limits_refused("a worker's kernel thread", OS_THREAD_STACK, LIMIT_KERNEL);
      return EAGAIN;
    }
    p->threads = i;
  }
  return 0;
}

/* Undoes what p says was done, in reverse; leaves the runtime OFF. Called
 * with the lifecycle lock held. */
static void runtime_stop(const struct start_progress *p) {
  atomic_store(&swarm_rt.state, RT_STOPPING);
  stats_live_stop();
  for (int i = 1; i <= p->threads; i++) {
    struct worker *v = &swarm_rt.workers[i];
    worker_wake_sleeping(v);
    atomic_fetch_add(&v->sleep_word, 1);
    os_futex_wake(&v->sleep_word, 1);
  }
  for (int i = 1; i <= p->threads; i++)
    os_thread_join(swarm_rt.workers[i].kthread);
  if (p->monitor)
    monitor_stop(); /* and the spares it started */
  if (p->worker0)
    worker0_leave(p->adopted);
  workers_release(p->deques);
  if (swarm_rt.stats_fd >= 0)
    sys_close(swarm_rt.stats_fd);
  swarm_rt.stats_fd = -1;
  swarm_rt.nworkers = 0;
  swarm_rt.nslots = 0;
  atomic_store(&swarm_rt.state, RT_OFF);
}

/* Reads the configuration into swarm_rt (state STARTING, lock held). */
static void runtime_configure(int nworkers, size_t stack, bool bind,
                              bool stats) {
  swarm_rt.nworkers = nworkers;
  swarm_rt.nslots = nworkers + monitor_spare_count(nworkers);
  swarm_rt.default_stack = stack;
  swarm_rt.inline_room = inline_room_for(stack);
  swarm_rt.bind = bind;
  swarm_rt.print_stats = stats;
  /* Programs may close stderr before exit (xz does): keep our own copy so
   * the counters printed at exit still reach the terminal. */
  swarm_rt.stats_fd = stats ? (int)sys_fcntl(2, F_DUPFD_CLOEXEC, 3) : -1;
  swarm_rt.guard_size =
      STACK_GUARD_SIZE > os_page_size() ? STACK_GUARD_SIZE : os_page_size();
  swarm_rt.ncpus = os_cpus_allowed(swarm_rt.cpus, SWARM_MAX_WORKERS);
  if (swarm_rt.ncpus > SWARM_MAX_WORKERS)
    swarm_rt.ncpus = SWARM_MAX_WORKERS;
  atomic_store(&swarm_rt.idle_workers, 0);
  atomic_store(&swarm_rt.external_spawned, 0);
  atomic_store(&swarm_rt.finalize_waiter, NULL);
  atomic_store(&swarm_rt.main_exited, false);
}

/* swarm_init, and the fork child's restart with the caller's descriptor
 * (adopt). 0, EBUSY (running or starting), EINVAL (configuration) or
 * EAGAIN (out of memory or kernel threads: nothing is left behind). */
static int runtime_start(const swarm_config_t *config,
                         struct swarm_thread *adopt) {
  int nworkers;
  size_t stack;
  bool bind, stats;
  int r = config_resolve(config, &nworkers, &stack, &bind, &stats);
  if (r)
    return r;
  limits_read(); /* what the reservations below are sized from */
  spin_lock(&swarm_rt.lifecycle_lock);
  if (atomic_load(&swarm_rt.state) != RT_OFF) {
    spin_unlock(&swarm_rt.lifecycle_lock);
    return EBUSY;
  }
  atomic_store(&swarm_rt.state, RT_STARTING);
  runtime_configure(nworkers, stack, bind, stats);
  os_overflow_handler_install(fault_describe);
  os_errno_init();
  limits_malloc(swarm_rt.nslots); /* glibc's arena per worker (limits.c) */
  struct start_progress p = {0};
  /* One identity per thread from its first call: a kernel thread that used
   * swarm before the start (a lock taken, swarm_self) has an external
   * descriptor, and it stays this thread's as the main thread, so what it
   * owns stays its (a recursive relock, an error-checking unlock). */
  if (!adopt)
    adopt = external_thread_current();
  r = workers_make(swarm_rt.nslots, &p);
  if (!r)
    r = worker0_enter(adopt, &p);
  if (!r)
    r = workers_start(&p);
  if (!r && !(r = monitor_start()))
    p.monitor = true;
  if (!r)
    stats_live_start(); /* SWARM_STATS=1s: the live view, else nothing */
  if (r) {
    runtime_stop(&p);
    spin_unlock(&swarm_rt.lifecycle_lock);
    return EAGAIN;
  }
  fork_hooks_register();
  static bool atexit_done;
  if (!atexit_done) {
    atexit_done = true;
    atexit(stats_at_exit);
  }
  spin_unlock(&swarm_rt.lifecycle_lock);
  return 0;
}

int swarm_init(const swarm_config_t *config) {
  return runtime_start(config, NULL);
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

/* ---- fork ---- */

/* In a fork child: the parent's workers did not survive (only the calling
 * kernel thread did), their memory is abandoned with the threads it held,
 * and locks another kernel thread held at the fork are made free. */
static void runtime_forget_parent(void) {
  tls_worker_clear();
  external_thread_forget();
  swarm_rt.workers = NULL;
  swarm_rt.nworkers = 0;
  swarm_rt.nslots = 0;
  monitor_after_fork();
  stats_live_after_fork();
  swarm_rt.main_thread = NULL;
  swarm_rt.main_adopted = NULL;
  atomic_store(&swarm_rt.idle_workers, 0);
  atomic_store(&swarm_rt.finalize_waiter, NULL);
  atomic_store(&swarm_rt.main_exited, false);
  atomic_store(&swarm_rt.external_spawned, 0);
  spin_init(&swarm_rt.lifecycle_lock, LOCK_LIFECYCLE);
  swarm_rt.era++; /* every thread parked so far is a ghost (fork.c) */
  desc_table_after_fork();
  stack_pool_after_fork();
  atomic_store(&swarm_rt.state, RT_OFF);
}

int runtime_fork_child(const swarm_config_t *config) {
  /* Read before anything is reset: the parent's worker struct, as this
   * kernel thread's TLS still names it, is intact in the child's memory. */
  struct worker *w = worker_current();
  struct swarm_thread *self = w ? w->current : external_thread_current();
  runtime_forget_parent();
  return runtime_start(config, self);
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
  if (swarm_rt.print_stats) /* SWARM_STATS: this run's counters, now */
    swarm_stats_print();
  spin_lock(&swarm_rt.lifecycle_lock);
  /* An adopted main (runtime_start) goes back to being this kernel thread's
   * own descriptor: its identity outlives the runtime. */
  struct start_progress all = {.deques = swarm_rt.nslots,
                               .worker0 = true,
                               .adopted = swarm_rt.main_adopted,
                               .threads = swarm_rt.nworkers - 1,
                               .monitor = true};
  runtime_stop(&all);
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
