/*
 * swarm.h — the native API of swarm, a runtime of lightweight user-level
 * threads scheduled by one kernel thread ("worker") per core.
 *
 * Model in one paragraph. swarm_spawn() creates a thread and runs it at once
 * on the calling worker ("work-first"); the caller's continuation is left on
 * the worker's deque where an idle worker may steal it. A thread that blocks
 * (join, and in later layers mutexes, I/O, sleep) parks and its worker runs
 * something else; a blocked swarm thread never blocks its worker. Threads are
 * cheap: a descriptor and a stack taken from per-worker caches, no system call
 * on the fast path.
 *
 * Starting. The runtime starts on the first call to any function below that
 * needs it, or explicitly with swarm_init(). The kernel thread that starts it
 * (normally main) becomes worker 0 and its flow becomes an ordinary swarm
 * thread: after a spawn its continuation may be stolen and resume on another
 * worker's kernel thread. Kernel threads that are not workers may call
 * swarm_spawn() and swarm_join() too: spawn hands the thread to a worker, join
 * blocks that kernel thread until the result is ready.
 *
 * Thread-local storage. `__thread` / `_Thread_local` variables belong to the
 * kernel thread, i.e. to the worker currently running a swarm thread. A swarm
 * thread that blocks or spawns may resume on another worker, so it must not
 * keep the address of a TLS variable across such a call.
 *
 * errno belongs to each swarm thread: the runtime saves it when a thread
 * switches away and restores it on whichever worker resumes it; a new thread
 * starts with 0. One caveat, shared by every runtime that moves threads
 * between kernel threads: glibc declares errno's accessor `const`, so within
 * one function a compiler may reuse errno's address across a call to
 * swarm_spawn/join/yield or anything that blocks. Code that sets errno before
 * such a call and reads it after, in the same function, should read it
 * through a function the compiler cannot see into, e.g. one marked
 * __attribute__((noipa)) (noinline is not enough: it is inferred const).
 *
 * Errors. Functions return 0 on success and an errno value on failure, as the
 * pthread functions do; none of them crash on bad input they can detect.
 *
 * Environment (read when the runtime starts; a swarm_config_t field that is
 * not zero takes precedence):
 *   SWARM_WORKERS=N     number of workers (default: CPUs in the affinity mask)
 *   SWARM_STACK_SIZE=S  default stack size, bytes or with K/M/G suffix
 *                       (default 128K, at least SWARM_STACK_MIN)
 *   SWARM_BIND=1        pin worker i to the i-th CPU of the affinity mask
 *   SWARM_STATS=1       print per-worker counters to stderr at exit (or at
 *                       swarm_finalize)
 *   SWARM_STATS=1s      the same, and every interval (250ms, 1s, 2m) what
 *                       each worker did since the last report (threads run,
 *                       steals, parks, sleeps) and its run-queue depth
 * A malformed value is reported on stderr, naming the variable, and ignored.
 */
#ifndef SWARM_H
#define SWARM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
#define SWARM_NORETURN [[noreturn]]
extern "C" {
#else
#define SWARM_NORETURN _Noreturn
#endif

/* The library is built with hidden visibility; what this header declares is
 * its exported API. */
#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif

#define SWARM_VERSION_MAJOR 0
#define SWARM_VERSION_MINOR 1
#define SWARM_VERSION_PATCH 0

/* A handle naming one thread. It stays valid until the thread is joined (or,
 * when detached, until it exits); after that every call given it returns
 * ESRCH, even when the runtime reuses the thread's memory for a new thread.
 * The value 0 (SWARM_THREAD_NONE) never names a thread. */
typedef uint64_t swarm_thread_t;
#define SWARM_THREAD_NONE ((swarm_thread_t)0)

/* Smallest stack a thread may ask for. */
#define SWARM_STACK_MIN ((size_t)16384)

enum { SWARM_CREATE_JOINABLE = 0, SWARM_CREATE_DETACHED = 1 };

/* Thread attributes. Initialise with swarm_attr_init() before use; an
 * attribute object that was not initialised is rejected with EINVAL. */
typedef struct swarm_attr {
  uint32_t magic_;    /* set by swarm_attr_init; do not touch */
  uint32_t detached_; /* SWARM_CREATE_JOINABLE or SWARM_CREATE_DETACHED */
  size_t stack_size_; /* 0: the runtime's default */
  uintptr_t inline_;  /* 0 or 1: swarm_attr_setinline */
  uintptr_t reserved_[3];
} swarm_attr_t;

/* Runtime configuration for swarm_init(). A zero field means "use the
 * environment variable, else the default". */
typedef struct swarm_config {
  int workers;       /* number of workers; 0 = SWARM_WORKERS or CPU count */
  size_t stack_size; /* default stack size; 0 = SWARM_STACK_SIZE or 128K */
  int bind;          /* 1 = pin workers to CPUs, -1 = do not, 0 = SWARM_BIND */
  int stats; /* 1 = print counters at exit, -1 = do not, 0 = SWARM_STATS */
} swarm_config_t;

/* ---- Runtime lifetime ------------------------------------------------- */

/* Starts the runtime with `config` (NULL: environment and defaults). The
 * calling kernel thread becomes worker 0. Its flow keeps the identity it had
 * if it used swarm before (a lock taken, swarm_self): locks it holds stay
 * its own, its handle does not change, and both outlive swarm_finalize.
 * Any swarm call that needs the runtime starts it the same way.
 * Returns 0; EBUSY if the runtime is already running; EINVAL if a config field
 * is out of range (workers < 0 or > 1024, stack_size below SWARM_STACK_MIN);
 * EAGAIN if kernel threads or memory for the workers cannot be had. */
int swarm_init(const swarm_config_t *config);

/* Waits until every thread spawned so far has exited, stops the workers and
 * returns on the kernel thread that called swarm_init(), now an ordinary
 * kernel thread again. The runtime may be started again afterwards. Call it
 * from the flow that started the runtime. If that flow belongs to a kernel
 * thread other than main, it must call swarm_finalize() before that kernel
 * thread exits.
 * Returns 0; EPERM when called from another thread; ESRCH when the runtime is
 * not running. */
int swarm_finalize(void);

/* fork() while the runtime runs (the plain libc call; nothing to wrap).
 * As POSIX says, only the calling thread continues in the child. There the
 * runtime is restarted before fork returns, with the parent's worker count,
 * stack size, binding and stats settings, on the one kernel thread the
 * child has: the calling flow is its main thread and keeps its handle
 * (swarm_self()), its keys' values and the mutexes it held; it may spawn,
 * join, block, and end the runtime with swarm_finalize() (or simply exit or
 * exec). No other thread of the parent ever runs in the child: threads that
 * were running, runnable, sleeping or blocked in the parent stay copies in
 * memory, and waking one does nothing: signalling a condition variable,
 * posting a semaphore, unlocking a mutex or rwlock that one of them waits
 * on passes over it to the child's own waiters. Joining one of them, or
 * taking a lock one of them held, waits forever, as with NPTL. If the
 * restart fails (no memory or kernel threads), the flow continues as an
 * ordinary kernel thread and the next swarm call starts the runtime.
 * system(), posix_spawn() and exec are unaffected.
 *
 * swarm_atfork registers hooks around every fork of the process, like
 * pthread_atfork: `prepare` (in the parent before the fork, last registered
 * first), `parent` (in the parent after it) and `child` (in the child, after
 * the runtime has restarted, so it may spawn and block), each in
 * registration order otherwise; any of them may be NULL. Hooks are never
 * removed. Returns 0; EINVAL if all three are NULL; ENOMEM after 32
 * registrations. Handlers registered with pthread_atfork before the runtime
 * first started run in the child before the restart: they must not call
 * swarm. */
int swarm_atfork(void (*prepare)(void), void (*parent)(void),
                 void (*child)(void));

/* 1 when the runtime is running, else 0. Does not start it. */
int swarm_is_running(void);

/* ---- Threads ---------------------------------------------------------- */

/* Creates a thread running fn(arg) and stores its handle in *thread (before
 * the thread starts running). `attr` may be NULL for the defaults; `thread`
 * may be NULL only for a detached thread. Called from a swarm thread, the new
 * thread runs at once on the calling worker and the caller continues when the
 * child blocks or exits, or earlier on another worker that steals it.
 * Returns 0; EINVAL for an uninitialised `attr`, a NULL `fn`, or a NULL
 * `thread` for a joinable thread; EAGAIN when memory for the stack or the
 * descriptor cannot be had. */
int swarm_spawn(swarm_thread_t *thread, const swarm_attr_t *attr,
                void *(*fn)(void *), void *arg);

/* Waits for `thread` to exit and stores its result (the value fn returned or
 * passed to swarm_exit) in *result unless `result` is NULL. The thread's
 * resources are then released and the handle becomes invalid.
 * Returns 0; ESRCH if no such thread exists (never created, already joined,
 * or detached and exited); EINVAL if it is detached or another thread is
 * already joining it; EDEADLK if it is the calling thread. */
int swarm_join(swarm_thread_t thread, void **result);

/* Marks `thread` detached: its resources are released when it exits and it
 * cannot be joined. Returns 0; ESRCH if no such thread; EINVAL if it is
 * already detached or being joined. */
int swarm_detach(swarm_thread_t thread);

/* Lets other runnable threads run first; the caller is resumed after them. */
void swarm_yield(void);

/* Ends the calling swarm thread with `result`, as returning from its start
 * function does. Ending the thread that started the runtime (main's flow)
 * keeps the process alive until every other thread has exited, then the
 * process exits with status 0, as pthread_exit in main does. Called from a
 * kernel thread that is not a swarm thread, it writes a message and aborts. */
SWARM_NORETURN void swarm_exit(void *result);

/* The calling thread's handle. On a kernel thread that is not a worker it
 * names that kernel thread (it cannot be joined: EINVAL) until the kernel
 * thread ends (returns from its start routine or calls pthread_exit); from
 * then on the handle answers ESRCH, as a joined thread's does. Starts the
 * runtime. */
swarm_thread_t swarm_self(void);

/* 1 if the two handles name the same thread. */
static inline int swarm_equal(swarm_thread_t a, swarm_thread_t b) {
  return a == b;
}

/* Index of the worker running the caller (0 .. swarm_num_workers()-1), or -1
 * on a kernel thread that is not a worker. A spare worker, which the monitor
 * starts while a worker is stuck (blocked in the kernel, or descheduled on a
 * busy machine), has an index from swarm_num_workers() up. The answer may be
 * stale as soon as the caller blocks, spawns or yields. Does not start the
 * runtime. */
int swarm_worker_id(void);

/* Number of workers. Starts the runtime; 1 (the calling kernel thread)
 * when it cannot be started. */
int swarm_num_workers(void);

/* ---- Attributes ------------------------------------------------------- */

int swarm_attr_init(swarm_attr_t *attr);    /* EINVAL if attr is NULL */
int swarm_attr_destroy(swarm_attr_t *attr); /* EINVAL if not initialised */

/* Stack size in bytes, rounded up to whole pages when the thread is made.
 * EINVAL if below SWARM_STACK_MIN or above 1 GiB, or attr not initialised. */
int swarm_attr_setstacksize(swarm_attr_t *attr, size_t size);
int swarm_attr_getstacksize(const swarm_attr_t *attr, size_t *size);

/* SWARM_CREATE_JOINABLE or SWARM_CREATE_DETACHED; EINVAL otherwise. */
int swarm_attr_setdetachstate(swarm_attr_t *attr, int state);
int swarm_attr_getdetachstate(const swarm_attr_t *attr, int *state);

/* Whether a child may run as a plain call on its spawner's stack: 1 lets
 * it (an opt-in), 0 (the default) never. EINVAL for other values, for NULL
 * and for an attr not initialised.
 *
 * The promise the spawner makes: the child needs no concurrency with its
 * parent. The parent waits while an inlined child runs — it resumes only
 * once the child has returned (or called swarm_exit), so a child that waits
 * for something its parent would do later deadlocks (OpenMP's undeferred
 * tasks make the same promise). Inlining happens only when the spawning
 * worker already holds enough stealable work (its deque holds at least
 * SWARM_INLINE_DEPTH threads, default 4; 0 inlines always), the parent is
 * an ordinary swarm thread that is not pinned, and its stack has room left
 * (at least half the stack the child would have been given); otherwise the
 * child is spawned as a plain thread.
 *
 * An inlined child is a thread all the same: it has its own handle
 * (swarm_self), result, errno, thread-specific data and detach state;
 * swarm_join and swarm_detach treat it as any other thread; swarm_exit
 * ends it (back at its spawn point). It may block (locks, condition
 * variables, joins, I/O, sleeps): its worker runs other threads meanwhile,
 * and it may resume, with its parent after it, on another worker. A steal
 * can take it only once it has spawned a plain child. It shares the
 * parent's stack and guard page; an overflow is reported as the parent's
 * stack would be. SWARM_STATS counts it in "spawned" and in "inlined". */
int swarm_attr_setinline(swarm_attr_t *attr, int may_inline);
int swarm_attr_getinline(const swarm_attr_t *attr, int *may_inline);

/* ---- Statistics ------------------------------------------------------- */

/* Counters summed over all workers since the runtime started. */
typedef struct swarm_stats {
  uint64_t threads_spawned;  /* swarm_spawn calls that succeeded */
  uint64_t threads_run;      /* times a worker started or resumed a thread */
  uint64_t steals_tried;     /* steal attempts on another worker */
  uint64_t steals_succeeded; /* of those, how many got a thread */
  uint64_t parks;            /* threads that blocked */
  uint64_t worker_sleeps;    /* times a worker went to sleep while idle */
  uint64_t stacks_mapped;    /* stacks obtained from the kernel (mmap) */
  /* Thread descriptors in use now, not a sum: threads not yet joined (or,
   * detached, not yet exited), the main thread, and kernel threads that
   * are not workers and have called swarm (until they end). */
  uint64_t descriptors_live;
} swarm_stats_t;

/* Fills *stats (approximate while workers run). EINVAL if stats is NULL;
 * ESRCH when the runtime is not running. */
int swarm_stats_get(swarm_stats_t *stats);

/* Writes the per-worker counters to stderr (what SWARM_STATS=1 prints). */
void swarm_stats_print(void);

/* ==== Synchronisation (src/sync/) ======================================
 *
 * Mutexes, condition variables, reader-writer locks, barriers, counting
 * semaphores, one-time initialisation, thread-specific keys and sleeping,
 * all for swarm threads. A thread that has to wait parks: its worker runs
 * other threads meanwhile. Short waits spin briefly first. Every function
 * also works on a kernel thread that is not a worker (it then sleeps on a
 * futex while it waits).
 *
 * The objects are plain memory: all-zero is a valid unlocked object for
 * mutexes (normal), condition variables (CLOCK_REALTIME), reader-writer
 * locks and once flags, which is what the *_INITIALIZER macros give. None
 * may be copied or moved while in use. Functions return 0 or an errno value
 * as the pthread functions do. Timed functions take an absolute deadline on
 * the named clock (CLOCK_REALTIME or CLOCK_MONOTONIC); a CLOCK_REALTIME
 * deadline is converted to a monotonic one when the wait starts, so a later
 * change of the system clock does not move it. A deadline whose tv_nsec is
 * outside [0, 1e9) gives EINVAL; one already past gives ETIMEDOUT once the
 * non-blocking attempt failed. Clocks are named by <time.h>'s CLOCK_*. */
struct timespec;

/* ---- Mutexes ---- */
enum {
  SWARM_MUTEX_NORMAL = 0,    /* relocking deadlocks; cheapest */
  SWARM_MUTEX_RECURSIVE = 1, /* the owner may lock it again; count kept */
  SWARM_MUTEX_ERRORCHECK = 2 /* relock: EDEADLK; unlock by non-owner: EPERM */
};

typedef struct swarm_mutex {
  uint32_t state_; /* 0: free and uncontended (sync/mutex.c) */
  uint32_t count_; /* recursion depth beyond the first lock */
  uint64_t owner_; /* the owning thread, 0 when free */
  int32_t kind_;   /* SWARM_MUTEX_*; at the offset glibc keeps its kind */
  uint32_t lock_;  /* spinlock guarding the waiter queue */
  void *head_;     /* waiter queue */
  void *tail_;
} swarm_mutex_t;

#define SWARM_MUTEX_INITIALIZER                                                \
  { 0, 0, 0, SWARM_MUTEX_NORMAL, 0, 0, 0 }
#define SWARM_RECURSIVE_MUTEX_INITIALIZER                                      \
  { 0, 0, 0, SWARM_MUTEX_RECURSIVE, 0, 0, 0 }
#define SWARM_ERRORCHECK_MUTEX_INITIALIZER                                     \
  { 0, 0, 0, SWARM_MUTEX_ERRORCHECK, 0, 0, 0 }

/* EINVAL if m is NULL or type is not a SWARM_MUTEX_* value. */
int swarm_mutex_init(swarm_mutex_t *m, int type);
/* EBUSY if locked or waited on. */
int swarm_mutex_destroy(swarm_mutex_t *m);
/* EDEADLK: an error-checking mutex the caller holds. EAGAIN: a recursive
 * mutex locked 2^32-1 times. EINVAL: m NULL or of an unknown type. */
int swarm_mutex_lock(swarm_mutex_t *m);
/* As lock, but EBUSY instead of waiting (a recursive mutex the caller
 * holds is locked again). */
int swarm_mutex_trylock(swarm_mutex_t *m);
/* As lock, but ETIMEDOUT once `abstime` on `clock` has passed. */
int swarm_mutex_timedlock(swarm_mutex_t *m, int clock,
                          const struct timespec *abstime);
/* EPERM: a recursive or error-checking mutex the caller does not hold, or a
 * mutex nobody holds. A normal mutex may be unlocked by another thread. */
int swarm_mutex_unlock(swarm_mutex_t *m);

/* ---- Condition variables ---- */
typedef struct swarm_cond {
  uint32_t lock_; /* spinlock guarding the waiter queue */
  int32_t clock_; /* CLOCK_REALTIME (0) or CLOCK_MONOTONIC */
  void *head_;    /* waiter queue */
  void *tail_;
  uint64_t reserved_[3];
} swarm_cond_t;

/* The nested braces on one line (clang-format would take six). */
/* clang-format off */
#define SWARM_COND_INITIALIZER {0, 0, 0, 0, {0, 0, 0}}
/* clang-format on */

/* `clock` is the clock swarm_cond_timedwait's deadlines are on:
 * CLOCK_REALTIME or CLOCK_MONOTONIC, else EINVAL. */
int swarm_cond_init(swarm_cond_t *c, int clock);
int swarm_cond_destroy(swarm_cond_t *c); /* EBUSY while waited on */
/* Atomically unlocks m and waits for a signal; m is locked again on return,
 * whatever the outcome. EPERM if m is a recursive or error-checking mutex
 * the caller does not hold (a recursive mutex is released entirely and its
 * depth restored). Wake-ups may be spurious: wait in a loop. */
int swarm_cond_wait(swarm_cond_t *c, swarm_mutex_t *m);
/* ETIMEDOUT once `abstime` on the condition variable's clock passed. */
int swarm_cond_timedwait(swarm_cond_t *c, swarm_mutex_t *m,
                         const struct timespec *abstime);
/* The same against an explicit clock (CLOCK_REALTIME or CLOCK_MONOTONIC). */
int swarm_cond_clockwait(swarm_cond_t *c, swarm_mutex_t *m, int clock,
                         const struct timespec *abstime);
int swarm_cond_signal(swarm_cond_t *c);    /* wakes one waiter, if any */
int swarm_cond_broadcast(swarm_cond_t *c); /* wakes every waiter */

/* ---- Reader-writer locks ---- */
enum {
  SWARM_RWLOCK_PREFER_READER = 0, /* readers enter while writers wait (a
                                     reader may lock recursively) */
  SWARM_RWLOCK_PREFER_WRITER = 2  /* a waiting writer holds new readers back */
};

typedef struct swarm_rwlock {
  uint32_t lock_;    /* spinlock guarding everything below */
  uint32_t readers_; /* readers holding it */
  uint64_t writer_;  /* the writer holding it, 0 if none */
  void *head_;       /* waiter queue */
  void *tail_;
  uint32_t writers_waiting_;
  uint32_t asleep_;  /* holders admitted while parked, not yet run */
  uint32_t woken_;   /* waiters readied to compete, not yet run */
  uint32_t handoff_; /* a waiter starves: unlock hands the lock over */
  uint32_t kind_;    /* SWARM_RWLOCK_*; at the offset glibc keeps its flags */
  uint32_t pad2_;    /* zero (the drop-in's process-shared mark) */
} swarm_rwlock_t;

#define SWARM_RWLOCK_INITIALIZER                                               \
  { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0 }

int swarm_rwlock_init(swarm_rwlock_t *rw, int kind); /* EINVAL: bad kind */
int swarm_rwlock_destroy(swarm_rwlock_t *rw);        /* EBUSY while held */
/* EDEADLK if the caller holds it for writing; EAGAIN when 2^32-1 readers
 * hold it. */
int swarm_rwlock_rdlock(swarm_rwlock_t *rw);
int swarm_rwlock_tryrdlock(swarm_rwlock_t *rw); /* EBUSY */
int swarm_rwlock_timedrdlock(swarm_rwlock_t *rw, int clock,
                             const struct timespec *abstime);
/* EDEADLK if the caller holds it for writing. */
int swarm_rwlock_wrlock(swarm_rwlock_t *rw);
int swarm_rwlock_trywrlock(swarm_rwlock_t *rw); /* EBUSY */
int swarm_rwlock_timedwrlock(swarm_rwlock_t *rw, int clock,
                             const struct timespec *abstime);
/* Releases the caller's write lock, else one read lock. EPERM if it is not
 * held at all or held for writing by another thread. */
int swarm_rwlock_unlock(swarm_rwlock_t *rw);

/* ---- Barriers ---- */
#define SWARM_BARRIER_SERIAL_THREAD (-1)

typedef struct swarm_barrier {
  uint32_t lock_;
  uint32_t count_;   /* threads per round */
  uint32_t arrived_; /* threads waiting in this round */
  uint32_t round_;
  void *head_;
  void *tail_;
} swarm_barrier_t;

/* EINVAL if count is 0. */
int swarm_barrier_init(swarm_barrier_t *b, unsigned count);
int swarm_barrier_destroy(swarm_barrier_t *b); /* EBUSY while a round runs */
/* Waits until `count` threads have called it; then one of them gets
 * SWARM_BARRIER_SERIAL_THREAD and the others 0, and the barrier is ready for
 * the next round. */
int swarm_barrier_wait(swarm_barrier_t *b);

/* ---- Counting semaphores ---- */
#define SWARM_SEM_VALUE_MAX 0x7fffffffu

typedef struct swarm_sem {
  uint32_t lock_;
  uint32_t value_;
  void *head_;
  void *tail_;
  uint32_t magic_; /* set by swarm_sem_init */
  uint32_t pad_;
} swarm_sem_t;

int swarm_sem_init(swarm_sem_t *s, unsigned value); /* EINVAL: > VALUE_MAX */
int swarm_sem_destroy(swarm_sem_t *s);              /* EBUSY while waited on */
int swarm_sem_wait(swarm_sem_t *s);
int swarm_sem_trywait(swarm_sem_t *s); /* EAGAIN when the value is 0 */
int swarm_sem_timedwait(swarm_sem_t *s, int clock,
                        const struct timespec *abstime);
int swarm_sem_post(swarm_sem_t *s); /* EOVERFLOW at SWARM_SEM_VALUE_MAX */
int swarm_sem_getvalue(swarm_sem_t *s, int *value);
/* Every swarm_sem_* function returns EINVAL for an object that was not
 * initialised with swarm_sem_init (or was destroyed). */

/* ---- One-time initialisation ---- */
typedef uint32_t swarm_once_t;
#define SWARM_ONCE_INIT 0u
/* Runs fn exactly once per `once` object; concurrent callers wait until it
 * has returned. In a fork child, a run a thread of the parent had not
 * finished at the fork is started again by the child's first caller (as
 * glibc's pthread_once does). EINVAL if once or fn is NULL. */
int swarm_once(swarm_once_t *once, void (*fn)(void));

/* ---- Thread-specific data ---- */
typedef uint32_t swarm_key_t;
#define SWARM_KEYS_MAX 1024
#define SWARM_DESTRUCTOR_ITERATIONS 4

/* Creates a key; every thread's value for it starts NULL. When a thread
 * exits with a non-NULL value, the value is set to NULL and destructor(value)
 * runs on that thread (up to SWARM_DESTRUCTOR_ITERATIONS rounds while
 * destructors set values again). EAGAIN when SWARM_KEYS_MAX keys exist.
 * A kernel thread that is not a worker runs them when it returns from its
 * start routine or calls pthread_exit (not in exit(), as POSIX keys).
 * See docs/sync.md for which thread exits run destructors. */
int swarm_key_create(swarm_key_t *key, void (*destructor)(void *));
/* EINVAL if the key does not exist. Destructors do not run. */
int swarm_key_delete(swarm_key_t key);
/* The calling thread's value, NULL if none or the key does not exist. */
void *swarm_getspecific(swarm_key_t key);
/* EINVAL: no such key; ENOMEM: no memory for the thread's value table. */
int swarm_setspecific(swarm_key_t key, const void *value);

/* ---- Sleeping ---- */
/* Parks the calling thread for at least `ns` nanoseconds (0: yields). On a
 * kernel thread that is not a worker it sleeps that kernel thread. */
void swarm_sleep_ns(uint64_t ns);

/* ==== end of Synchronisation ========================================== */

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#ifdef __cplusplus
}
#endif
#endif /* SWARM_H */
