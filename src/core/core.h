/*
 * core/core.h — the portable scheduler's internal interface: the thread
 * descriptor, the worker, the one runtime struct, and the two calls every
 * blocking operation in swarm is built from:
 *
 *   swarm_park(commit, arg, why, deadline)
 *       block the calling thread. Once it is entirely off its stack (on the
 *       next thread's stack, or the worker's scheduler stack), commit(self,
 *       arg) runs there; it records `self` in a wait list and releases that
 *       list's lock. If commit returns false the park is abandoned and self
 *       is made runnable again at once. `why` labels the park in traces; an
 *       optional deadline ends the park by taking the thread out of its wait
 *       list again (struct swarm_deadline).
 *   swarm_ready(thread)
 *       make a parked thread runnable: onto the caller's own deque when the
 *       caller is a worker, through a worker's ready queue otherwise, waking
 *       an idle worker if one sleeps.
 *
 * Ownership invariant (the one every layer keeps): a thread is at any time
 * owned by exactly one place — running on one worker (worker.current), in one
 * deque, in one ready queue, or in one wait list (via thread.next). Ownership
 * moves only by push/take/steal, by commit (run after the switch, so the old
 * owner — the worker — has let go), and by swarm_ready.
 *
 * Kernel threads that are not workers ("external" threads) get a descriptor
 * too, so every primitive built on park/ready works from them: their park
 * runs commit at once and sleeps on a futex (until the deadline, if any);
 * ready wakes the futex.
 *
 * Layers above core (sync, io, pthread, dist) include this header and
 * nothing else of core; core includes nothing from them.
 */
#ifndef SWARM_CORE_H
#define SWARM_CORE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/deque.h"
#include "os/os.h"
#include "os/spinlock.h"
#include "swarm.h"

/* Everything declared below is internal to the library: hidden, so that
 * code in one file reaches data defined in another (swarm_rt) directly,
 * not through the GOT, which would cost a register on the hot paths. */
#pragma GCC visibility push(hidden)

#define SWARM_MAX_WORKERS 1024
#define SWARM_DEFAULT_STACK ((size_t)128 * 1024)
#define SWARM_MAX_STACK ((size_t)1 << 30)
#define SWARM_THREAD_SLOTS 2
#define SWARM_ATTR_MAGIC 0x5a7a11a7u

#if defined(__SANITIZE_ADDRESS__)
#define SWARM_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SWARM_ASAN 1
#endif
#endif

#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

/* A stack: usable memory [lo, lo + size), a guard region just below lo. */
struct stack_ref {
  char *lo;
  size_t size;
};

enum thread_kind {
  THREAD_USER = 0,     /* made by swarm_spawn; stack from the pool */
  THREAD_MAIN = 1,     /* the flow that started the runtime; its own stack */
  THREAD_EXTERNAL = 2, /* a kernel thread that is not a worker */
  THREAD_INLINE = 3,   /* inline.c: a child running as a call on its
                          parent's stack (its own stack field empty: see
                          thread_stack_owner); USER again before its exit
                          is published */
};

/* thread.control: generation (bits 63..32) | table index (30..7) | state
 * flags (6..0). A descriptor is 128 bytes, so the low 32 bits of a handle
 * with the flags masked off are its byte offset in the region. A handle is the
 * control word of a live thread with its flags cleared, so spawn copies it out
 * in one load. Generations are odd and a release adds 2 (wrapping from
 * 0xffffffff to 1), so no handle is ever 0 and a never-used table slot (all
 * zero) matches none. */
#define CTL_EXITED ((uint64_t)1 << 0)   /* result is set; never runs again */
#define CTL_DETACHED ((uint64_t)1 << 1) /* released on exit, not joinable */
#define CTL_CLAIMED ((uint64_t)1 << 2)  /* a joiner has claimed it */
#define CTL_WAITER ((uint64_t)1 << 3)   /* the joiner is parked on it */
#define CTL_SPECIAL ((uint64_t)1 << 4)  /* MAIN, EXTERNAL: desc_release */
#define CTL_FLAGS ((uint64_t)0x7fu)
#define CTL_INDEX_SHIFT 7
#define CTL_GEN_STEP ((uint64_t)2 << 32)
#define CTL_GEN(c) ((uint32_t)((c) >> 32))

struct swarm_thread {
  void *sp;                  /* saved stack pointer while not running */
  struct swarm_thread *next; /* link for the one list that owns it */
  void *(*fn)(void *);
  void *arg;
  void *result;
  _Atomic uint64_t control;    /* generation | CTL_* flags */
  struct swarm_thread *joiner; /* valid once CTL_WAITER is set */
  struct stack_ref stack;      /* THREAD_USER: from the pool; kept while
                                  free (spawn.c), else {NULL, 0} */
  uint32_t index;              /* slot in the handle table (also in control) */
  uint8_t kind;                /* enum thread_kind */
  uint8_t park_reason;         /* enum swarm_park_reason of its last park */
  int16_t pinned_worker;       /* -1, or the only worker that may run it:
                                  only swarm_finalize's waits and a yield
                                  when preempted pin, neither spawns (so
                                  spawn's and inline's fast paths skip it) */
  _Atomic uint32_t wake_word;  /* THREAD_EXTERNAL: futex for park */
  int saved_errno;             /* errno while switched out */
  uint32_t era;                /* swarm_rt.era at its last park (fork.c) */
  void *slots[SWARM_THREAD_SLOTS]; /* per-thread data of upper layers */
  /* cpuclock.c: CPU time credited to it at its switches, ns in the low
   * 56 bits, valid for the generation whose low 8 bits are the top 8 (a
   * reused descriptor starts from 0 without spawn writing anything).
   * Written by the worker it just left, in the after step, before anyone
   * else can run it. */
  _Atomic uint64_t cpu_word;
  /* inline.c: the lowest stack pointer from which a child spawned with the
   * inline opt-in and the default stack size may run inline under this
   * thread (its room test, one compare): stack.lo plus swarm_rt.inline_room
   * for a USER thread, set where a stack is bound to it (spawn.c); its
   * parent's for an inlined child; UINTPTR_MAX (never) for MAIN and
   * EXTERNAL descriptors. Stale in a free descriptor without a stack. */
  uintptr_t inline_floor;
} __attribute__((aligned(64)));
_Static_assert(
    sizeof(struct swarm_thread) == 1u << CTL_INDEX_SHIFT,
    "a descriptor's size is its handle's index unit (CTL_INDEX_SHIFT)");

/* inline.c's room rule: a child whose own stack would be `size` bytes may
 * run inline when at least half that, and at least 16 KiB, is left below
 * the stack pointer. */
#define INLINE_ROOM_MIN ((size_t)16384)
static inline size_t inline_room_for(size_t size) {
  return (size > 2 * INLINE_ROOM_MIN ? size : 2 * INLINE_ROOM_MIN) / 2;
}

/* The thread whose stack t runs on: t, or for an inlined child (inline.c:
 * kind THREAD_INLINE, its parent in arg) its nearest ancestor that is not
 * one. For fault.c's report and ASan's fiber bounds: an inlined child
 * records no stack of its own. */
static inline struct swarm_thread *thread_stack_owner(struct swarm_thread *t) {
  while (t->kind == THREAD_INLINE)
    t = t->arg;
  return t;
}

/* Upper layers claim a slot index for per-thread data (keys, errno, ...). */
enum {
  SLOT_SYNC = 0,
  SLOT_PTHREAD = 1
}; /* add one: also thread_has_exit_work */

/* A ready queue: FIFO under a spinlock. Used for yields, for threads made
 * runnable by kernel threads that are not workers, and for pinned threads;
 * the deque carries everything else. Thieves may take unpinned entries. */
struct ready_queue {
  struct spinlock lock; /* LOCK_READY_QUEUE */
  uint32_t count;
  struct swarm_thread *head, *tail;
};

/* A timer (timer.c). Embed it in the waiting object; it must stay valid
 * until it fires or swarm_timer_cancel returns true. */
struct swarm_timer {
  uint64_t deadline_ns; /* CLOCK_MONOTONIC */
  void (*fire)(struct swarm_timer *);
  void *arg;
  struct worker *owner;
  int32_t heap_index; /* -1 when not in a heap */
};

struct timer_heap {
  struct spinlock lock; /* LOCK_TIMERS */
  uint32_t count, capacity;
  struct swarm_timer **items;
  _Atomic uint64_t earliest_ns; /* UINT64_MAX when empty */
};

struct cache_list {
  void *head; /* intrusive singly linked list */
  uint32_t count;
};

struct worker_stats { /* written by the owner only */
  /* resumes, but for the exit's fast hand-off (exit_keep), counted as
   * stat_exited_pub - exit_runs_counted; a thread's first run is in
   * stat_spawned_pub (stats.c sums the three) */
  uint64_t run;
  uint64_t exit_runs_counted; /* exits that counted their resume in run */
  uint64_t steals_tried;
  uint64_t steals_ok;
  uint64_t parks;
  uint64_t sleeps;
  uint64_t stacks_mapped;
  uint64_t inlined;   /* inline.c: spawns that ran as a call */
  uint64_t polls_due; /* sched.c: polls the monitor asked for */
};

/* What the "after" function of the next context switch must do. */
enum after_action {
  AFTER_NONE,
  AFTER_PUSH_PARENT,   /* spawn: push handoff (the parent) on the deque */
  AFTER_PARK,          /* park: run park_commit(handoff, park_arg) */
  AFTER_RELEASE_STACK, /* exit: return dead_stack to the cache */
};

enum worker_due { DUE_IO_POLL = 1, DUE_GIVE_BACK = 2, DUE_GIVE_BACK_LATE = 4 };
struct worker {
  /* ---- owner-only, hot ---- */
  struct swarm_thread *current; /* the thread running now (or NULL) */
  struct deque deque;
  struct cache_list stacks; /* free default-size stacks */
  struct cache_list descs;  /* free descriptors */
  struct swarm_thread *handoff;
  bool (*park_commit)(struct swarm_thread *, void *);
  void *park_arg;
  struct stack_ref dead_stack;
  void *sched_sp; /* the scheduler context, while a thread runs */
  uint64_t rng;
  int id;
  /* The hot path's switch steps, chosen once by trace_start (trace.h):
   * plain ones when SWARM_TRACE is off, traced twins when on. Loading one
   * from the worker costs what the lea of a constant address did, so
   * tracing off adds no instruction to spawn, exit or park. */
  void *(*after_spawn)(void *); /* push the parent (after_push_parent) */
  void *(*after_exit)(void *);  /* release the dead stack */
  /* The stack size an exiting thread puts into the cache itself
   * (stack_release_running): the default size when after_exit is NULL,
   * else 0, which no stack has. One compare on the exit path. */
  size_t exit_cache_size;
  /* How many more exiting threads may leave their stack on their
   * descriptor (STACK_KEEP_MAX, 0 when traced): a keep takes one; a spawn
   * that reuses a kept stack, or a drop of one, gives one back (on any
   * worker), so the kept stacks are at most nslots * STACK_KEEP_MAX. */
  int32_t stack_keep_room;
  /* The size of a kept stack swarm_spawn takes on its fast path: the
   * default size, or SIZE_MAX (no stack has it) when spawn has an after
   * step (traced; the portable back end): that path tests for no step. */
  size_t spawn_keep_size;
  /* inline.c: how many threads the deque must hold for a spawn with the
   * inline opt-in to run inline here (SWARM_INLINE_DEPTH, copied on the
   * worker's first such spawn); INT64_MAX, which no deque reaches, until
   * then, on a traced worker and on swarm_worker_none, so that the fast
   * path's one depth test sends those spawns the slow way. */
  int64_t inline_depth;
  void *(*after_park)(void *); /* run the park commit */
  /* The scheduler loop's step before it switches to a thread: NULL, or
   * tracing's or CPU accounting's (cpuclock.c). One load and a branch,
   * what testing w->trace there cost. */
  void (*sched_switch)(struct worker *w, struct swarm_thread *next);
  struct trace_buf *trace; /* NULL when tracing is off */
  struct worker_stats stats;
  _Atomic uint64_t stat_spawned_pub; /* published copies for quiescence */
  _Atomic uint64_t stat_exited_pub;
  /* ---- shared ---- */
  struct ready_queue queue __attribute__((aligned(64)));
  struct timer_heap timers __attribute__((aligned(64)));
  _Atomic uint32_t sleep_word __attribute__((aligned(64)));
  _Atomic uint32_t sleeping;
  pthread_t kthread; /* workers 1.. and spares: joined by swarm_finalize */
  void *altstack;
  struct stack_ref sched_stack; /* worker 0 only: the scheduler's stack */
  /* ---- monitor.c: spare workers and stall detection (issue 4) ---- */
  _Atomic uint32_t spare_word; /* spare: futex it waits on while retired */
  _Atomic bool spare_active;   /* spare: running its scheduler loop */
  bool spare_started;          /* spare: its kernel thread exists */
  uint64_t monitor_seen_run;   /* monitor-only: stats.run at the last tick */
  uint32_t monitor_stalled;    /* monitor-only: ticks without progress */
  uint32_t monitor_blocked;    /* monitor-only: of those, seen blocked */
  int tid;                     /* its kernel thread's id (for the monitor) */
  _Atomic uint32_t preempt_requested; /* preempt.c: set by the monitor */
  /* Asked of it (enum worker_due; its next park goes to sched.c's
   * sched_due): poll (the monitor: its I/O is stale while it switches
   * threads; while ready_to_queue, owner-only, is set, swarm_ready queues
   * here, behind what waits); give back free stacks and descriptors (a
   * spawn at a memory limit, reclaim.c). */
  _Atomic uint32_t due;
  bool ready_to_queue;
  /* The drop-in's signal kicks (pthread/signal.c): set when one sends the
   * runtime's interrupt signal to this kernel thread, cleared first thing
   * in its handler; while set, further kicks send nothing, as the kernel
   * coalesces a pending standard signal. */
  _Atomic uint32_t kick_queued;
  /* cpuclock.c, once CPU accounting is on: since the worker's kernel
   * thread CPU time cpu_start (ns) it has run cpu_thread (NULL: its
   * scheduler). cpu_fresh: set when accounting started while it ran
   * something unknown; then its current thread is the one. Owner-written
   * under cpu_seq (odd while it writes), read by any thread. */
  _Atomic uint32_t cpu_seq;
  _Atomic bool cpu_fresh;
  _Atomic(struct swarm_thread *) cpu_thread;
  _Atomic uint64_t cpu_start;
#ifdef SWARM_ASAN
  void *sched_fake_stack;
  const void *sched_stack_lo;
  size_t sched_stack_size;
#endif
} __attribute__((aligned(64)));

enum runtime_state { RT_OFF = 0, RT_STARTING, RT_RUNNING, RT_STOPPING };

struct runtime {
  _Atomic int state;
  int nworkers;
  struct worker *workers;
  size_t default_stack;
  /* inline.c: the room an inlined child with the default stack size needs
   * below the stack pointer, half the default stack and at least 16 KiB
   * (swarm_thread.inline_floor is a stack's lo plus this). */
  size_t inline_room;
  size_t guard_size;
  bool bind;
  bool print_stats;
  int stats_fd; /* SWARM_STATS: a duplicate of stderr taken at start-up */
  int cpus[SWARM_MAX_WORKERS];
  int ncpus;
  _Atomic int idle_workers;          /* workers asleep in worker_sleep */
  struct swarm_thread *main_thread;  /* the flow that called init */
  struct swarm_thread *main_adopted; /* main_thread, if it had a descriptor */
  _Atomic uint64_t external_spawned; /* spawns from non-workers */
  _Atomic(struct swarm_thread *) finalize_waiter;
  _Atomic bool main_exited;
  _Atomic uint32_t external_rr;     /* round robin for external spawns */
  struct spinlock lifecycle_lock;   /* init / finalize: LOCK_LIFECYCLE */
  void *(*after_main_exit)(void *); /* NULL, or its traced step (trace.h) */
  /* monitor.c. workers[nworkers .. nslots) are spare workers: started by
   * the monitor when queued threads make no progress, retired when idle. */
  int nslots;
  pthread_t monitor_kthread;
  bool monitor_started;
  _Atomic uint32_t monitor_word; /* futex the monitor sleeps on */
  _Atomic bool monitor_idle;     /* it sleeps with no deadline */
  _Atomic int spares_active;
  /* stats.c: the live view (SWARM_STATS=1s), a kernel thread that prints
   * every worker's counters each interval; none when the value is 0/1. */
  pthread_t stats_kthread;
  bool stats_started;
  _Atomic uint32_t stats_word; /* futex it sleeps on; bumped to stop it */
  bool spares_blocked_only;    /* one worker, default spares: blocked only */
  /* fork.c: advanced in a fork child; a thread parked in an older era is
   * a copy of a parent's thread and swarm_ready never runs it. */
  uint32_t era;
};

extern struct runtime swarm_rt;

/* A USER thread's inline_floor for a stack starting at lo. */
static inline uintptr_t thread_inline_floor(const char *lo) {
  return (uintptr_t)lo + swarm_rt.inline_room;
}

/* The worker running the calling kernel thread, or NULL. Read through this
 * function only: a swarm thread may resume on another worker after any
 * switch, and a compiler may otherwise keep a TLS address across the call
 * that switched (MassiveThreads' bug). On x86-64 the read is a volatile asm
 * with the initial-exec TLS sequence, which the compiler cannot cache. */
extern __thread struct worker *swarm_tls_worker
    __attribute__((tls_model("initial-exec")));
struct worker *swarm_worker_current_slow(void);
static inline struct worker *worker_current(void) {
#if defined(__x86_64__)
  struct worker *w;
  __asm__ volatile("movq swarm_tls_worker@gottpoff(%%rip), %0\n\t"
                   "movq %%fs:(%0), %0"
                   : "=r"(w));
  return w;
#else
  return swarm_worker_current_slow();
#endif
}

/* worker_current for the fast paths of spawn and join, which test a cache
 * of the worker before anything else: on a kernel thread that is not a
 * worker it is swarm_worker_none, never started, whose descriptor cache is
 * empty (descs.head NULL: spawn goes the general way) and full (descs.count
 * at its maximum: join's put goes the slow way, which reads worker_current
 * again), and whose inline_depth is INT64_MAX (an inline spawn goes the slow
 * way), so those paths need no test for NULL. tls_worker_set (runtime.c)
 * keeps it in step with swarm_tls_worker; it starts as &swarm_worker_none. */
extern __thread struct worker *swarm_tls_worker_or_none
    __attribute__((tls_model("initial-exec")));
extern struct worker swarm_worker_none __attribute__((visibility("hidden")));
struct worker *swarm_worker_or_none_slow(void);
static inline struct worker *worker_current_or_none(void) {
#if defined(__x86_64__)
  struct worker *w;
  __asm__ volatile("movq swarm_tls_worker_or_none@gottpoff(%%rip), %0\n\t"
                   "movq %%fs:(%0), %0"
                   : "=r"(w));
  return w;
#else
  return swarm_worker_or_none_slow();
#endif
}
/* Makes w (NULL: none) the calling kernel thread's worker: both TLS words. */
void tls_worker_set(struct worker *w);

/* ---- park / ready: the one way to block and to wake ---- */
typedef bool (*swarm_commit_fn)(struct swarm_thread *self, void *arg);
/* The calling thread's descriptor (a worker's current thread, or the
 * external descriptor of a kernel thread). Starts nothing; NULL only when
 * memory for an external descriptor cannot be had. */
struct swarm_thread *swarm_current_thread(void);
/* Why a thread parks: recorded in the trace (SWARM_TRACE) with its park and
 * its ready. Add a reason at the end and its name in trace.c. */
enum swarm_park_reason {
  SWARM_PARK_OTHER = 0,
  SWARM_PARK_JOIN,
  SWARM_PARK_MUTEX,
  SWARM_PARK_COND,
  SWARM_PARK_RWLOCK,
  SWARM_PARK_SEM,
  SWARM_PARK_BARRIER,
  SWARM_PARK_ONCE,
  SWARM_PARK_SLEEP,
  SWARM_PARK_IO,
  SWARM_PARK_YIELD,
  SWARM_PARK_FINALIZE,
  SWARM_PARK_REASONS
};
/* A park's deadline. At or after `ns` (CLOCK_MONOTONIC), on whichever
 * kernel thread notices first (the worker's timer, the monitor firing a
 * stuck worker's timers, or the parked kernel thread itself when it is not
 * a worker), core calls expire(self, arg) with the park's commit argument,
 * once. expire takes the thread out of its wait list if it is still there
 * and returns true; false if a waker took it out first (that waker readies
 * it). It may run before the commit has returned, so it must take the lock
 * the commit releases, as every waker does; it must not block, nor ready
 * `self` (core does, when it returns true). */
struct swarm_deadline {
  uint64_t ns;
  bool (*expire)(struct swarm_thread *self, void *arg);
};
/* Parks the calling thread (see the top of this file). deadline may be
 * NULL. Returns 0 when a waker readied it (or the commit abandoned the
 * park), ETIMEDOUT when the deadline's expire took it out, ENOMEM when no
 * timer could be had: the park then expired at once (commit ran, then
 * expire). Aborts when a kernel thread that is not a worker can get no
 * descriptor (no memory): it could not be woken. */
int swarm_park(swarm_commit_fn commit, void *arg, enum swarm_park_reason why,
               const struct swarm_deadline *deadline);
void swarm_ready(struct swarm_thread *t);

/* ---- timers (timer.c) ---- */
/* Starts t: at deadline_ns (CLOCK_MONOTONIC) fire(t) runs on the worker
 * that started it (worker 0 for a non-worker kernel thread). fire must not
 * block; it typically readies a parked thread. 0 or ENOMEM. */
int swarm_timer_start(struct swarm_timer *t, uint64_t deadline_ns,
                      void (*fire)(struct swarm_timer *), void *arg);
/* true if t was removed before firing; false if it fired or is firing. */
bool swarm_timer_cancel(struct swarm_timer *t);
uint64_t timers_earliest(struct worker *w);
void timers_run_due(struct worker *w, uint64_t now);
void timers_destroy(struct worker *w);
static inline void timers_poll(struct worker *w) {
  uint64_t e = timers_earliest(w);
  if (unlikely(e != UINT64_MAX)) {
    uint64_t now = os_now_ns_inline();
    if (e <= now)
      timers_run_due(w, now);
  }
}

/* ---- hooks for upper layers ---- */
/* Called at the start of a thread's exit, on its own stack, for a thread
 * that holds upper-layer data in any of its slots[]; it may block. The sync
 * layer registers one (key destructors, its per-thread record). */
extern void (*swarm_thread_exit_hook)(struct swarm_thread *self);
/* Called at the end of a kernel thread that is not a worker (park.c), after
 * swarm_thread_exit_hook, just before its descriptor is released: the
 * drop-in's (its record of an adopted kernel thread names the descriptor). */
extern void (*swarm_external_exit_hook)(struct swarm_thread *self);
/* On the kernel thread that starts the runtime, its flow now main (adopted:
 * a fork child's, with its descriptor): sync/cxx_eh.c's main C++ state. */
extern void (*swarm_main_enter_hook)(struct swarm_thread *main, bool adopted);
/* In a child of fork() (called by the drop-in): forget the parent's
 * runtime, whose workers did not survive the fork, and start a fresh one
 * (swarm_init's config and results) on this kernel thread, in which the
 * calling flow is the main thread with the descriptor it had: its handle,
 * its upper layers' slots, and the objects that record it as owner carry
 * over. Locks other kernel threads held at the fork are made free. If the
 * start fails the descriptor stays the kernel thread's own (external). */
int runtime_fork_child(const swarm_config_t *config);
/* fork.c: registers the pthread_atfork handlers that restart the runtime
 * in every fork child (once; lifecycle lock held), and the child's restart
 * result (0, or swarm_init's error: the flow then stays external). */
void fork_hooks_register(void);
int fork_child_restart_error(void);
/* Their part of the fork child's reset (thread.c, stack.c). */
void desc_table_after_fork(void);
void stack_pool_after_fork(void);

/* The I/O layer's hooks into the scheduler (src/io registers them from a
 * constructor; NULL when it is not linked in). Core calls them at its poll
 * points and never includes io headers. */
struct swarm_io_hooks {
  /* Worker w, in its scheduler loop with no local work (or `due`: the
   * monitor's DUE_IO_POLL, never skipped): performs the I/O that became
   * possible, readies the threads whose call completed. Cheap when idle. */
  void (*poll)(struct worker *w, bool due);
  /* Idle worker w sleeps here instead of on its futex (an epoll_wait that
   * I/O readiness or ->wake ends), at most timeout_ns, and not at all if
   * w->sleep_word no longer equals seq. false: it cannot (nothing
   * registered yet); the caller uses the futex. */
  bool (*sleep)(struct worker *w, uint32_t seq, int64_t timeout_ns);
  /* Called after w->sleep_word was advanced: wakes w if it sleeps in
   * ->sleep. true if w was inside ->sleep (the futex wake is unneeded). */
  bool (*wake)(struct worker *w);
  /* The monitor: whether w's I/O is stale (threads wait for I/O, w does
   * not sleep in its own poll and nobody polled it for stale_ns): -1 when
   * not (the monitor need not look again soon for w's I/O); when it is,
   * with `poll` it polls it and returns the number of threads made
   * runnable, without it returns 0. */
  int (*poll_stale)(struct worker *w, uint64_t now_ns, uint64_t stale_ns,
                    bool poll);
  /* true while threads are parked waiting for I/O: the monitor's tick
   * backs off no further than MONITOR_TICK_IO_MAX_NS. */
  bool (*waiting)(void);
  /* In a fork child, before the runtime restarts. */
  void (*after_fork)(void);
  /* Which I/O back end runs and why (SWARM_STATS); NULL: none yet. */
  const char *(*describe)(void);
};
extern const struct swarm_io_hooks *_Atomic swarm_io_hooks;

/* ---- the monitor and spare workers (monitor.c) ---- */
int monitor_start(void);       /* at swarm_init, after the workers */
void monitor_stop(void);       /* at swarm_finalize: joins it and spares */
void monitor_kick(void);       /* a worker woke: leave the idle sleep */
void monitor_after_fork(void); /* forget the parent's monitor and spares */
void spare_retire(struct worker *w); /* a spare with nothing to do */
int monitor_spare_count(int nworkers);
void *worker_main(void *arg); /* sched.c: a worker's kernel thread */
/* sched.c: wakes w if it sleeps; true if it did. Callers that just
 * published work issue a seq_cst fence first (sched.c's file comment). */
bool worker_wake_sleeping(struct worker *w);

/* ---- asynchronous preemption (preempt.c) ---- */
/* Turns preemption on: from now on the monitor interrupts a worker whose
 * thread has computed for a time slice while others wait, with the
 * interrupt signal (os.h), whose handler calls swarm_preempt_point.
 * worker_mask is the kernel mask every worker runs with (signals 1..64 as
 * bits sig - 1): an interrupted context with another mask is inside a
 * signal handler or a mask window and is not preempted. false when no
 * safe point can be told apart (the runtime's code not found). */
bool swarm_preempt_enable(uint64_t worker_mask);
/* The monitor, once per tick, for a worker that has switched no thread
 * for `stalled` ticks. */
void preempt_tick(struct worker *w, uint32_t stalled, bool queued);
/* In the interrupt signal's handler, on the interrupted thread's stack:
 * whether the interrupted context (a ucontext_t) is one where the thread
 * may be switched away from or ended: its program counter is in none of
 * the runtime, the C library and the dynamic loader, and its signal mask
 * is the worker's. */
bool swarm_preempt_safe(const void *ucontext);
/* The same handler: if the monitor asked for it and the context is safe,
 * switches to another thread of this worker; the interrupted one resumes
 * here, on this worker, later. */
void swarm_preempt_point(const void *ucontext);
/* Whether pc is in the vDSO's code (known once preemption is enabled;
 * false before, and under ASan). The runtime reads clocks there, at times
 * holding a lock, so interrupts treat it as the runtime's own code. */
bool swarm_pc_in_vdso(uintptr_t pc);

/* ---- per-thread CPU time (cpuclock.c) ----
 * Off until first asked for: then every switch reads its worker's kernel
 * thread CPU clock and credits the thread switched away from. */
/* Turns accounting on (idempotent, any thread). A thread's time counts
 * from then. */
void cpuclock_enable(void);
/* The CPU time of the thread with handle h into *ns: 0, or EINVAL when h
 * names no live thread (ended, or never was). Turns accounting on. */
int cpuclock_thread_ns(swarm_thread_t h, uint64_t *ns);
/* The handle of the live thread in descriptor slot `index`, or 0. */
swarm_thread_t cpuclock_handle_at(uint32_t index);
/* runtime.c: a new runtime (start, fork child) starts with it off. */
void cpuclock_reset(void);

/* ---- internal services used across core files ---- */
int runtime_ensure_started(void);
void ready_queue_push(struct ready_queue *q, struct swarm_thread *t);
struct swarm_thread *ready_queue_pop(struct ready_queue *q, bool unpinned_only);
void worker_wake(struct worker *w);

/* CAS of *p from `expected` to `desired` (acquire when it succeeds; a
 * full barrier on x86-64). There the lock cmpxchg addresses the word
 * itself: GCC's builtin computes its address into a register first. */
static inline bool control_cas(_Atomic uint64_t *p, uint64_t expected,
                               uint64_t desired) {
#if defined(__x86_64__) && defined(__GCC_ASM_FLAG_OUTPUTS__)
  bool ok;
  __asm__ volatile("lock cmpxchgq %3, %1"
                   : "=@ccz"(ok), "+m"(*p), "+a"(expected)
                   : "r"(desired)
                   : "memory");
  return ok;
#else
  return atomic_compare_exchange_strong_explicit(
      p, &expected, desired, memory_order_acquire, memory_order_relaxed);
#endif
}

/* *p > 0, a relaxed read (a hot path's test for idle workers). On x86-64
 * a compare in memory, which GCC does not make of an atomic load. */
static inline bool atomic_int_positive(_Atomic int *p) {
#if defined(__x86_64__) && defined(__GCC_ASM_FLAG_OUTPUTS__)
  bool gt;
  __asm__ volatile("cmpl $0, %1" : "=@ccg"(gt) : "m"(*p));
  return gt;
#else
  return atomic_load_explicit(p, memory_order_relaxed) > 0;
#endif
}

/* A cache's count, owner-only: compared and advanced in memory. Compilers
 * keep a load, add and store around the compare otherwise (two more
 * instructions on the exit and join paths). */
static inline bool cache_count_below(const uint32_t *count, uint32_t max) {
#if defined(__x86_64__) && defined(__GCC_ASM_FLAG_OUTPUTS__)
  /* The volatile read below still gave a load and a register compare. */
  bool below;
  __asm__("cmpl %2, %1" : "=@ccb"(below) : "m"(*count), "ir"(max));
  return below;
#else
  return *(const volatile uint32_t *)count < max;
#endif
}
static inline void cache_count_inc(uint32_t *count) {
#if defined(__x86_64__)
  __asm__("addl $1, %0" : "+m"(*count));
#else
  (*count)++;
#endif
}

/* ---- descriptor and stack caches: inline fast paths; the cold halves
 * (refill, spill, mapping) are in thread.c and stack.c ---- */
#define DESC_MAX ((uint32_t)1 << 24) /* the 24 index bits of a handle */
#define CTL_INDEX_MASK ((DESC_MAX - 1) << CTL_INDEX_SHIFT) /* bits 30..7 */
#define DESC_CACHE_MAX 256
#define STACK_CACHE_MAX 64
/* Exited threads whose stack stays on their descriptor until the join
 * (spawn.c), per worker. Not in ASan builds, which must unpoison a stack
 * when its thread ends (stack_release). */
#ifdef SWARM_ASAN
#define STACK_KEEP_MAX 0
#else
#define STACK_KEEP_MAX 64
#endif

/* Every descriptor lives in one region with room for DESC_MAX slots, never
 * unmapped, so a handle's slot can be read without touching freed memory.
 * It is mapped lazily (thread.c): 512 KiB at first, grown in place by
 * doubling (all at once, MAP_NORESERVE, only if its fixed address is taken
 * and no rlimit bounds the address space).
 * swarm_desc_index_mask covers the slots mapped so far, as a mask of a
 * handle's index bits; until the first mapping the region is a single
 * all-zero slot (swarm_desc_empty) and the mask 0, so a lookup needs no
 * NULL test: a slot never handed out is zero and matches no handle.
 * Growth stores the region (once), then the larger mask, both release;
 * desc_lookup loads the mask (acquire) first, so with a mask it always
 * sees a region that big. A stale, smaller mask only folds a valid
 * handle onto a slot whose control differs: the fast path falls back to
 * join_general, whose checked lookup bounds the index by next_index. */
extern struct swarm_thread *_Atomic swarm_desc_region
    __attribute__((visibility("hidden")));
extern _Atomic uint32_t swarm_desc_index_mask
    __attribute__((visibility("hidden")));
extern _Atomic uint32_t swarm_desc_next_index;
/* Slots retired at their last generation (desc_retire_last_generation). */
extern _Atomic uint64_t swarm_desc_retired;
/* Descriptors in use (handed out, not free, not retired): swarm_stats_get's
 * descriptors_live; a snapshot while workers run (workers[] must exist). */
uint64_t desc_live_count(void);
struct swarm_thread *desc_alloc_slow(struct worker *w); /* reclaims too */
void desc_release_slow(struct worker *w, struct swarm_thread *t);
void desc_cache_flush(struct worker *w);
void desc_cache_drop_stacks(struct worker *w); /* the kept ones, to w's */

/* A free descriptor; w may be NULL. */
static inline struct swarm_thread *desc_alloc(struct worker *w) {
  struct swarm_thread *t;
  if (likely(w && (t = w->descs.head))) {
    w->descs.head = t->next;
    w->descs.count--;
    return t;
  }
  return desc_alloc_slow(w);
}

/* Free descriptors (caches, the global list, fresh ones) have no flags in
 * control, kind THREAD_USER and pinned_worker -1, so spawn need not write
 * them. desc_release resets the two. swarm_join's fast path puts the
 * descriptor straight into the cache, so it must only see USER threads:
 * MAIN and EXTERNAL descriptors carry CTL_SPECIAL, which no handle has, and
 * take join_general (only swarm_finalize pins a thread, and unpins it).
 * A free descriptor in a worker's cache may carry the stack its last
 * thread exited on (spawn.c: kept stacks); one in the global list never
 * does (desc_give_global returns them), and desc_release drops the stack
 * of a MAIN or EXTERNAL one, which is not swarm's. Its slots are NULL
 * (user_thread_exit_slow, desc_release), so spawn need not clear them. */

/* Puts t, already retired (a new generation, no flags), into w's cache;
 * w from worker_current_or_none (never NULL): swarm_worker_none's cache
 * counts as full. */
static inline void desc_cache_put_or_none(struct worker *w,
                                          struct swarm_thread *t) {
  if (likely(cache_count_below(&w->descs.count, DESC_CACHE_MAX))) {
    t->next = w->descs.head;
    w->descs.head = t;
    cache_count_inc(&w->descs.count);
    return;
  }
  desc_release_slow(w == &swarm_worker_none ? NULL : w, t);
}

/* The same for w from worker_current (w may be NULL). */
static inline void desc_cache_put(struct worker *w, struct swarm_thread *t) {
  desc_cache_put_or_none(w ? w : &swarm_worker_none, t);
}

/* A slot whose generation is the last one (2^32 - 1) is never reused: its
 * control becomes 0, which no handle matches, and it stays out of every
 * free list (thread.c), so a handle can never name a later thread even
 * after 2^31 reuses of one slot (83 s of spawn+join on one worker). */
void desc_retire_last_generation(struct swarm_thread *t);

/* The control word of t's next generation (no flags); false when c's
 * generation is the last one (the add carries out of bit 63): retire t. */
static inline bool desc_next_generation(uint64_t c, uint64_t *next) {
  return !__builtin_add_overflow(c & ~CTL_FLAGS, CTL_GEN_STEP, next);
}

/* Retires t: the next generation invalidates every handle to it, then it
 * goes back to w's cache (w may be NULL). */
static inline void desc_release(struct worker *w, struct swarm_thread *t) {
  uint64_t c = atomic_load_explicit(&t->control, memory_order_relaxed);
  uint64_t next;
  if (unlikely(t->kind != THREAD_USER)) { /* its stack is not ours */
    t->stack.lo = NULL;
    t->stack.size = 0;
    for (int i = 0; i < SWARM_THREAD_SLOTS; i++) /* as a USER exit does */
      __atomic_store_n(&t->slots[i], NULL, __ATOMIC_RELAXED);
  }
  t->kind = THREAD_USER;
  t->pinned_worker = -1;
  if (unlikely(!desc_next_generation(c, &next))) {
    desc_retire_last_generation(t);
    return;
  }
  atomic_store_explicit(&t->control, next, memory_order_release);
  desc_cache_put(w, t);
}

/* The descriptor slot a handle's index names (within the mapped part of
 * the region; a zero slot before any is mapped); the caller compares the
 * whole handle (swarm_join's fast path) or uses desc_lookup_checked. A slot
 * never handed out is zero: its generation, 0, is one no handle carries,
 * since generations are odd. */
static inline struct swarm_thread *desc_lookup(swarm_thread_t h) {
#if defined(__x86_64__)
  /* The mask and the base read by the and and the add themselves (three
   * instructions, not four: GCC keeps an atomic load a load of its own).
   * x86-64 loads are acquire loads; the two are read in this order. */
  uint64_t p = h;
  __asm__("andl %1, %k0\n\t"
          "addq %2, %0"
          : "+&r"(p)
          : "m"(swarm_desc_index_mask), "m"(swarm_desc_region));
  return (struct swarm_thread *)p;
#else
  uint32_t mask =
      atomic_load_explicit(&swarm_desc_index_mask, memory_order_acquire);
  struct swarm_thread *base =
      atomic_load_explicit(&swarm_desc_region, memory_order_relaxed);
  return (struct swarm_thread *)((char *)base + ((uint32_t)h & mask));
#endif
}

/* desc_lookup for paths that then compare only the generation: NULL for a
 * value that cannot be a handle (flag bits, an even generation) or whose
 * index was never handed out (thread.c). */
struct swarm_thread *desc_lookup_checked(swarm_thread_t h);

/* The handle of a descriptor just taken from a free list (no flags). */
static inline swarm_thread_t desc_handle_free(struct swarm_thread *t) {
  return atomic_load_explicit(&t->control, memory_order_relaxed);
}

static inline swarm_thread_t desc_handle(struct swarm_thread *t) {
  return atomic_load_explicit(&t->control, memory_order_relaxed) & ~CTL_FLAGS;
}

/* A cached stack's free-list link lives in its own top bytes. A thread's
 * frames start STACK_TOP_RESERVE bytes below the top (thread_stack_top), so
 * the link never overlaps them: an exiting thread can put the stack it still
 * runs on into its worker's cache before it switches away (sched.c). */
#define STACK_TOP_RESERVE 64
static inline void **stack_link(char *lo, size_t size) {
  return (void **)(lo + size - STACK_TOP_RESERVE);
}
static inline char *thread_stack_top(struct stack_ref s) {
  return s.lo + s.size - STACK_TOP_RESERVE;
}
int stack_alloc_slow(struct worker *w, size_t size, struct stack_ref *out);
void stack_release_slow(struct worker *w, struct stack_ref s);
void stack_cache_flush(struct worker *w);
/* reclaim.c: at a memory limit, the free stacks and descriptors other
 * workers cache come back (worker_give_back: the owner's answer). */
void worker_give_back(struct worker *w);
void reclaim_from_workers(struct worker *self, bool (*enough)(void));
void stack_pool_shutdown(void);
#ifdef SWARM_ASAN
void stack_unpoison(struct stack_ref s);
#endif

/* A stack of `size` bytes (w may be NULL). 0 or EAGAIN. */
static inline int stack_alloc(struct worker *w, size_t size,
                              struct stack_ref *out) {
  char *lo;
  if (likely(w && size == swarm_rt.default_stack && (lo = w->stacks.head))) {
    w->stacks.head = *stack_link(lo, size);
    w->stacks.count--;
    out->lo = lo;
    out->size = size;
    return 0;
  }
  return stack_alloc_slow(w, size, out);
}

/* Puts the stack the calling thread is exiting from into w's cache, if it
 * fits there and w's steps allow it (worker.exit_cache_size); false if not
 * (then it must be released once the thread is off it). Safe while still
 * running on s: the link is in the reserved top bytes, and only w takes stacks
 * from its cache. Not in ASan builds, which unpoison a released stack
 * (stack_release). */
static inline bool stack_release_running(struct worker *w, struct stack_ref s) {
  if (likely(s.size == w->exit_cache_size &&
             cache_count_below(&w->stacks.count, STACK_CACHE_MAX))) {
    *stack_link(s.lo, s.size) = w->stacks.head;
    w->stacks.head = s.lo;
    cache_count_inc(&w->stacks.count);
    return true;
  }
  return false;
}

/* Returns a stack nothing runs on any more (w may be NULL). */
static inline void stack_release(struct worker *w, struct stack_ref s) {
#ifdef SWARM_ASAN
  stack_unpoison(s);
#endif
  if (likely(w && s.size == swarm_rt.default_stack &&
             w->stacks.count < STACK_CACHE_MAX)) {
    *stack_link(s.lo, s.size) = w->stacks.head;
    w->stacks.head = s.lo;
    w->stacks.count++;
    return;
  }
  stack_release_slow(w, s);
}

/* config.c */
int config_resolve(const swarm_config_t *in, int *workers, size_t *stack,
                   bool *bind, bool *stats);
int config_parse_size(const char *s, size_t *out);

/* stats.c: SWARM_STATS's value: 1 for 1/yes/true or an interval ("1s",
 * "250ms": the live view), -1 for 0/no/false, 0 when unset or malformed
 * (reported). The live view starts after the workers and stops first. */
int stats_env(const char *value);
void stats_live_start(void);
void stats_live_stop(void);
void stats_live_after_fork(void); /* forget the parent's live view */

/* fault.c: guard-page recognition for the overflow handler */
size_t fault_describe(void *addr, char *buf, size_t cap);
/* An upper layer's name for thread t in the program's terms (at most cap
 * bytes, no newline; continues "stack overflow in thread "), or 0 when t is
 * not one of its threads. Called in the SIGSEGV handler: async-signal-safe
 * apart from os_describe_code. */
typedef size_t (*fault_namer_fn)(struct swarm_thread *t, char *buf, size_t cap);
/* Registers namer and the advice line printed after its names ("...\n"). */
void fault_set_namer(fault_namer_fn namer, const char *advice);

#pragma GCC visibility pop

#endif
