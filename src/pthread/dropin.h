/*
 * pthread/dropin.h — internal interface of the pthread drop-in
 * (libswarm-pthread.so): the per-thread record behind a pthread_t. The real
 * libc functions behind the names the drop-in defines are os/sys.h's
 * libc_X (bound with dlsym(RTLD_NEXT) in this library: os/libc_next.c).
 *
 * A pthread_t is the address of a `struct dropin_thread`. Threads made by
 * pthread_create get one at creation; threads that already existed (main,
 * kernel threads made by libc itself) get one the first time they need it
 * ("adopted"). The record is found from the running thread through its
 * descriptor's slots[SLOT_PTHREAD].
 *
 * Lifetime: a created joinable thread's record is freed by its joiner; a
 * detached one's by whichever of "exit" and "detach" comes second (both
 * decide under rec->done.lock); an adopted kernel thread's when it ends
 * (core's swarm_external_exit_hook: external_record_end in thread.c); main's
 * lives as long as the process.
 */
#ifndef SWARM_PTHREAD_DROPIN_H
#define SWARM_PTHREAD_DROPIN_H

#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/types.h>
#include <unwind.h>

#include "core/core.h"
#include "os/sys.h"
#include "sync/sync.h"

#define DROPIN_MAGIC 0x7d5a11edu
/* A record whose thread ended detached or was joined: its pthread_t is
 * stale; join and detach answer EINVAL for it (as NPTL, whose descriptor
 * outlives the thread), other calls ESRCH. */
#define DROPIN_MAGIC_ENDED 0x7d5a11e0u

struct dropin_thread {
  uint32_t magic;
  _Atomic(struct swarm_thread *) desc; /* set when it starts running */
  swarm_thread_t handle;               /* core handle; 0 when adopted */
  void *(*fn)(void *);
  void *arg;
  void *result;
  /* done.lock also guards detached, exited and joiner. */
  struct sync_event done;
  bool created;  /* by pthread_create: joinable through core */
  bool external; /* an adopted kernel thread that is not a swarm thread */
  bool detached;
  bool exited;
  struct dropin_thread *joiner;
  /* cancellation (deferred only) */
  _Atomic int cancel_pending;
  int cancel_state; /* PTHREAD_CANCEL_ENABLE / DISABLE */
  int cancel_type;  /* recorded; acted on as deferred */
  bool exiting;     /* cleanup handlers and destructors are running */
  /* blocking.c: the thread waits in the kernel on its worker, woken by the
   * interruption a kick sets; on_interrupt leaves its signals pending for
   * it to deliver when the wait ends. Only its own flow writes it. */
  bool sig_in_kernel;
  void *exit_value;
  __pthread_unwind_buf_t *cleanup_top; /* chain through __pad[0] */
  pthread_t kthread;                   /* adopted external: its NPTL handle */
  size_t stack_size;
  int sched_policy;
  struct sched_param sched_param;
  char name[16];
  /* signal.c: the thread's signal mask, its pending set, and the set it
   * waits for in sigwait/sigtimedwait (0: none); bit sig - 1 for signals
   * 1..64. A new record has all three empty. */
  _Atomic uint64_t sig_mask;
  _Atomic uint64_t sig_pending;
  _Atomic uint64_t sig_waiting;
  struct dropin_thread *cache_next; /* in a worker's free-record cache */
  /* thread.c: the forced unwinding's exception object (it must outlive
   * the frames it unwinds, so not on the stack). Last: a reused record is
   * cleared only up to it (the unwinding fills it). */
  struct _Unwind_Exception unwind_exc;
};

/* The calling thread's record (adopting it if needed); never NULL. */
struct dropin_thread *dropin_self(void);
/* The record named by a pthread_t, or NULL if it does not look like one. */
struct dropin_thread *dropin_lookup(pthread_t t);
/* A cancellation point: acts on a pending, enabled cancellation. */
void dropin_testcancel(void);
/* Ends the calling thread as cancelled (cleanup handlers, destructors). */
_Noreturn void dropin_act_cancel(void);
/* stack.c: NPTL's default stack size (glibc's default attribute, from
 * RLIMIT_STACK), the same clamped to what swarm can map, and the setup of
 * the overflow message's names (the constructor calls it first). */
size_t dropin_default_stack(void);
size_t dropin_stack_for_runtime(void);
void dropin_stack_init(void);
/* Makes sure the runtime runs (the constructor starts it). */
void dropin_ensure_runtime(void);
/* compat.c: a warning on stderr for each loaded library the drop-in knows
 * its threads cannot run (the constructor calls it). */
void dropin_warn_known_incompatible(void);
/* signal.c: per-thread signals (docs/dropin.md). init_early claims the
 * interrupt signal before the runtime starts (its workers unblock it);
 * init_late, on main's flow once it runs, gives main the process's mask and
 * starts the signal thread. inherit gives a new thread its creator's mask;
 * exit drops what is pending for an ending thread (finish() calls it under
 * done.lock once `exited` is set, only when sig_pending is not 0: signal.c
 * sets bits under the same lock); fork_child resets the machinery in a
 * fork child and starts its signal thread. */
void dropin_signal_init_early(void);
void dropin_signal_init_late(void);
void dropin_signal_exit(struct dropin_thread *r);
void dropin_signal_fork_child(void);
/* After an interruptible wait ended with ECANCELED and no cancellation
 * acted: clears the interruption and delivers the calling thread's pending
 * signals. Returns 0 when nothing was delivered (the wait may go on),
 * DROPIN_SIG_RESTART when every handler that ran had SA_RESTART, else
 * DROPIN_SIG_EINTR. */
enum { DROPIN_SIG_NONE = 0, DROPIN_SIG_RESTART = 1, DROPIN_SIG_EINTR = 2 };
int dropin_signal_interrupted(void);
/* The calling swarm thread's mask, for process.c; false when the kernel
 * thread's own mask is the caller's. */
bool dropin_signal_thread_mask(sigset_t *out);
/* pthread_cancel of a thread of asynchronous type: interrupts its worker
 * if it runs, so the cancellation acts at once (signal.c). */
void dropin_signal_kick_cancel(struct dropin_thread *r);

/* pthread_create (signal.c's model): the new thread's mask is its
 * creator's; its pending set, zeroed with the record, is empty. On
 * pthread_create's fast path, so it costs a load and a branch until some
 * thread has had a non-empty mask (dropin_masks_used, set by signal.c and
 * never cleared). Relaxed: the thread's start publishes the record. A
 * creator that is not a worker's thread gives the empty mask. */
extern bool dropin_masks_used;
static inline void dropin_signal_inherit(struct dropin_thread *child) {
  if (likely(!__atomic_load_n(&dropin_masks_used, __ATOMIC_RELAXED)))
    return;
  struct worker *w = worker_current();
  struct swarm_thread *t = w ? w->current : NULL;
  struct dropin_thread *me =
      t ? __atomic_load_n(&t->slots[SLOT_PTHREAD], __ATOMIC_RELAXED) : NULL;
  uint64_t m =
      me ? atomic_load_explicit(&me->sig_mask, memory_order_relaxed) : 0;
  if (m)
    atomic_store_explicit(&child->sig_mask, m, memory_order_relaxed);
}

/* clock_nanosleep on a thread's CPU clock (cpuclock.c); an errno. */
int dropin_cpu_clock_nanosleep(clockid_t c, int flags,
                               const struct timespec *req,
                               struct timespec *rem);

/* Sets errno of the running kernel thread; safe after a context switch. */
static inline int dropin_fail(int e) {
  *os_errno_location() = e;
  return -1;
}

/* The drop-in's exported functions have default visibility. */
#define DROPIN_API __attribute__((visibility("default")))

#endif
