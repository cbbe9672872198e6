/*
 * pthread/thread.c — the drop-in's threads: pthread_create/join/detach/
 * exit/self/equal, deferred cancellation with cleanup handlers, thread
 * attributes and the per-thread calls (names, scheduling, affinity),
 * fork, and starting the runtime when the library is loaded.
 *
 * Starting. The constructor starts the runtime while the process is still
 * single-threaded, so main's flow is a swarm thread from its first
 * instruction and keeps one identity (pthread_self, mutex ownership, keys)
 * for its whole life. Starting lazily on the first pthread_create would give
 * main a second descriptor mid-flight and orphan whatever it owned.
 *
 * Exit. A thread ends through finish(): key destructors run (sync_thread_exit),
 * the record is marked exited and joiners are readied (or it is freed, when
 * detached), then swarm_exit ends the swarm thread. Returning from the start
 * routine, pthread_exit and acting on a cancellation all end there; the last
 * two first run the cleanup handlers.
 *
 * Cleanup handlers. glibc's pthread_cleanup_push (C, without -fexceptions)
 * saves a jump buffer with __sigsetjmp and registers it with
 * __pthread_register_cancel; pthread_cleanup_pop unregisters it. We keep
 * those buffers in a per-thread chain (linked through the buffer's spare
 * __pad[0]); to unwind, we pop the top buffer and longjmp to it, the
 * macro's code runs the handler and calls __pthread_unwind_next, which
 * continues with the next buffer and finally calls finish(). A jump buffer
 * holds no kernel-thread state, so it may be taken on one worker and
 * resumed on another.
 *
 * Forced unwinding (C++ destructors, -fexceptions cleanups), as NPTL: the
 * stack is unwound with _Unwind_ForcedUnwind, whose personality routines
 * run every frame's cleanups, up to the frame that holds the top C buffer
 * (its address lies below that frame's CFA), where the stop function jumps
 * into it as above, or to the end of the stack (the context's first frame
 * marks its return address undefined: arch/), where it finishes. Should
 * the unwinder fail (a frame without unwind data), the buffers are taken
 * without it, as before.
 *
 * Cancellation: pthread_cancel marks the record and interrupts the
 * target's interruptible wait (sync_interrupt); cancellation points check
 * the mark on entry and run their wait interruptibly. A target of
 * asynchronous type is also interrupted where it computes (signal.c,
 * dropin_signal_kick_cancel), and acts at the first safe point. An
 * interrupted wait that finds no cancellation was a signal (signal.c).
 * The race between pthread_cancel and a thread that has not published its
 * descriptor yet is won by ordering: the canceller stores cancel_pending
 * then loads desc; the thread stores desc then loads cancel_pending at its
 * first cancellation point (both seq_cst). One of them sees the other.
 *
 * fork. The child has one kernel thread: the one that called fork, running
 * the calling swarm thread on its swarm stack. Every other thread of the
 * parent exists in the child's memory only as a copy that must never run.
 * So the child forgets the parent's runtime (its workers are not there) and
 * starts a fresh one, in which the calling flow is the main thread under
 * the descriptor it had (core's runtime_fork_child): its pthread_t, keys
 * and mutex ownership carry over.
 */
#include <dlfcn.h>
#include <sched.h>
#include <setjmp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/sched.h"
#include "pthread/dropin.h"

/* ---- records ---- */

struct dropin_thread *dropin_lookup(pthread_t t) {
  struct dropin_thread *r = (struct dropin_thread *)t;
  if (!r || ((uintptr_t)r & 7) || r->magic != DROPIN_MAGIC)
    return NULL;
  return r;
}

/* ESRCH for a handle never known, EINVAL for one whose thread ended
 * detached or was joined already (join and detach only). */
static int stale_handle_error(pthread_t t) {
  const struct dropin_thread *r = (const struct dropin_thread *)t;
  if (r && !((uintptr_t)r & 7) && r->magic == DROPIN_MAGIC_ENDED)
    return EINVAL;
  return ESRCH;
}

/* Free records, cached per worker so that create + join does not pay
 * malloc and free (a third of their cost). The cache is the worker's
 * kernel thread's TLS, touched only inside these two noinline functions,
 * which never switch threads: a TLS address is never carried across a
 * switch to another worker (the compiler-cached TLS bug core.h describes).
 * Kernel threads that are not workers do not cache (their TLS would leak
 * the records when they end). */
#define RECORD_CACHE_MAX 64
static __thread struct dropin_thread *record_cache
    __attribute__((tls_model("initial-exec")));
static __thread unsigned record_cache_count
    __attribute__((tls_model("initial-exec")));

static __attribute__((noinline)) struct dropin_thread *record_cache_take(void) {
  struct dropin_thread *r = record_cache;
  if (r) {
    record_cache = r->cache_next;
    record_cache_count--;
  }
  return r;
}

static __attribute__((noinline)) void record_free(struct dropin_thread *r) {
  r->magic = DROPIN_MAGIC_ENDED;
  if (worker_current() && record_cache_count < RECORD_CACHE_MAX) {
    r->cache_next = record_cache;
    record_cache = r;
    record_cache_count++;
    return;
  }
  free(r);
}

static struct dropin_thread *record_new(void) {
  struct dropin_thread *r = record_cache_take();
  if (r)
    memset(r, 0, offsetof(struct dropin_thread, unwind_exc));
  else if (!(r = calloc(1, sizeof *r)))
    return NULL;
  r->magic = DROPIN_MAGIC;
  r->cancel_state = PTHREAD_CANCEL_ENABLE;
  r->cancel_type = PTHREAD_CANCEL_DEFERRED;
  r->sched_policy = SCHED_OTHER;
  return r;
}

/* main's record: what pthread_self() answers in a signal handler on a
 * worker that runs no thread. signal.c keeps asynchronous signals off
 * workers, so only a synchronous fault in the scheduler itself lands
 * there; this keeps pthread_self() from reading through NULL even then. */
static struct dropin_thread *main_record;

struct dropin_thread *dropin_self(void) {
  struct swarm_thread *t = sync_self();
  struct dropin_thread *r =
      __atomic_load_n(&t->slots[SLOT_PTHREAD], __ATOMIC_ACQUIRE);
  if (likely(r))
    return r;
  /* Adopt main's flow or a kernel thread libc (or anyone) made directly. */
  r = record_new();
  if (!r) {
    static const char msg[] = "swarm-pthread: out of memory for a thread "
                              "record\n";
    os_write_stderr(msg, sizeof msg - 1);
    abort();
  }
  atomic_store(&r->desc, t);
  r->external = worker_current() == NULL;
  if (r->external)
    r->kthread = libc_pthread_self();
  __atomic_store_n(&t->slots[SLOT_PTHREAD], r, __ATOMIC_RELEASE);
  return r;
}

/* ---- starting ---- */

/* The runtime's configuration under the drop-in: the environment's
 * (SWARM_WORKERS, ...), with NPTL's default stack (stack.c) unless
 * SWARM_STACK_SIZE says otherwise. */
static swarm_config_t dropin_config(void) {
  swarm_config_t cfg = {0};
  const char *s = getenv("SWARM_STACK_SIZE");
  if (!s || !*s)
    cfg.stack_size = dropin_stack_for_runtime();
  return cfg;
}

static void start_failed(int r) {
  static _Atomic bool said; /* once: pthread_create retries it per call */
  if (r && r != EBUSY && !atomic_exchange(&said, true)) {
    static const char msg[] = "swarm-pthread: cannot start the runtime; "
                              "threads will fail to start\n";
    os_write_stderr(msg, sizeof msg - 1);
  }
}

void dropin_ensure_runtime(void) {
  if (swarm_is_running())
    return;
  swarm_config_t cfg = dropin_config();
  start_failed(swarm_init(&cfg));
}

/* Core's end of an adopted kernel thread (core.h: swarm_external_exit_hook),
 * after its key destructors ran: its descriptor is released next, so the
 * record that names it ends now, as a detached thread's does in finish().
 * Its pthread_t is stale from here on, as NPTL's of an ended thread. */
static void external_record_end(struct swarm_thread *t) {
  struct dropin_thread *r =
      __atomic_exchange_n(&t->slots[SLOT_PTHREAD], NULL, __ATOMIC_ACQ_REL);
  if (!r)
    return;
  sync_spin_lock(&r->done.lock);
  r->exited = true;
  if (unlikely(atomic_load_explicit(&r->sig_pending, memory_order_relaxed)))
    dropin_signal_exit(r); /* under done.lock, as signal.c posts */
  sync_spin_unlock(&r->done.lock);
  atomic_store(&r->desc, NULL);
  record_free(r);
}

__attribute__((constructor)) static void dropin_load(void) {
  swarm_external_exit_hook = external_record_end;
  dropin_stack_init();
  dropin_warn_known_incompatible();
  dropin_signal_init_early(); /* before the workers start: they unblock it */
  dropin_ensure_runtime();
  if (swarm_is_running()) {
    main_record = dropin_self(); /* while we are single-threaded */
    dropin_signal_init_late();
  }
}

/* ---- exit ---- */

_Noreturn static void finish(struct dropin_thread *r, void *value) {
  struct swarm_thread *self = sync_self();
  r->exiting = true;
  sync_thread_exit(self);
  if (r->external)
    libc_pthread_exit(value); /* an NPTL thread: NPTL ends it */
  r->result = value;
  struct sync_waiter *list = NULL;
  sync_spin_lock(&r->done.lock);
  r->exited = true;
  if (unlikely(atomic_load_explicit(&r->sig_pending, memory_order_relaxed)))
    dropin_signal_exit(r); /* under done.lock, as signal.c posts */
  bool detached = r->detached;
  if (!detached) {
    __atomic_store_n(&r->done.done, 1, __ATOMIC_RELEASE);
    list = sync_queue_take(&r->done.queue, 0, NULL, NULL);
  }
  sync_spin_unlock(&r->done.lock);
  /* Joinable: from the unlock on, the joiner may free r. Detached: nobody
   * else can reach r any more. */
  if (detached) {
    record_free(r);
  }
  sync_ready_list(list);
  swarm_exit(value);
}

/* longjmp by its plain symbol: neither _FORTIFY_SOURCE's __longjmp_chk
 * (which refuses jumps it cannot place on the current stack) nor the
 * prototype's jmp_buf size (the cancel buffer is glibc's shorter layout). */
extern _Noreturn void dropin_longjmp(void *env, int value) __asm__("longjmp");

/* Into the top C buffer (popped), or finish. */
_Noreturn static void take_buffer_or_finish(struct dropin_thread *r) {
  __pthread_unwind_buf_t *b = r->cleanup_top;
  if (b) {
    r->cleanup_top = b->__pad[0];
    /* Into pthread_cleanup_push's __sigsetjmp (saved without the signal
     * mask, so only the registers and __mask_was_saved == 0 are read). */
    dropin_longjmp(b->__cancel_jmp_buf, 1);
  }
  finish(r, r->exit_value);
}

static _Unwind_Reason_Code unwind_stop(int version, _Unwind_Action actions,
                                       _Unwind_Exception_Class cls,
                                       struct _Unwind_Exception *exc,
                                       struct _Unwind_Context *ctx, void *arg) {
  (void)version;
  (void)cls;
  (void)exc;
  struct dropin_thread *r = arg;
  uintptr_t top = (uintptr_t)r->cleanup_top;
  if ((actions & _UA_END_OF_STACK) || (top && _Unwind_GetCFA(ctx) > top))
    take_buffer_or_finish(r);
  return _URC_NO_REASON;
}

/* A program's catch (...) that swallowed the unwinding: as NPTL, fatal. */
static void unwind_swallowed(_Unwind_Reason_Code code,
                             struct _Unwind_Exception *exc) {
  (void)code;
  (void)exc;
  static const char msg[] = "swarm-pthread: FATAL: exception not rethrown\n";
  os_write_stderr(msg, sizeof msg - 1);
  abort();
}

_Noreturn static void unwind_or_finish(struct dropin_thread *r) {
  if (!r->external) {
    memset(&r->unwind_exc, 0, sizeof r->unwind_exc);
    memcpy(&r->unwind_exc.exception_class, "SWRM\0CNC", 8);
    r->unwind_exc.exception_cleanup = unwind_swallowed;
    _Unwind_ForcedUnwind(&r->unwind_exc, unwind_stop, r);
  }
  take_buffer_or_finish(r); /* an NPTL thread, or no unwind data */
}

DROPIN_API _Noreturn void pthread_exit(void *value) {
  struct dropin_thread *r = dropin_self();
  r->exiting = true;
  r->exit_value = value;
  unwind_or_finish(r);
}

DROPIN_API void __pthread_register_cancel(__pthread_unwind_buf_t *buf) {
  struct dropin_thread *r = dropin_self();
  buf->__pad[0] = r->cleanup_top;
  r->cleanup_top = buf;
}

DROPIN_API void __pthread_unregister_cancel(__pthread_unwind_buf_t *buf) {
  struct dropin_thread *r = dropin_self();
  r->cleanup_top = buf->__pad[0];
}

DROPIN_API _Noreturn void __pthread_unwind_next(__pthread_unwind_buf_t *buf) {
  (void)buf; /* already popped by unwind_or_finish */
  unwind_or_finish(dropin_self());
}

/* ---- cancellation ---- */

_Noreturn void dropin_act_cancel(void) {
  struct dropin_thread *r = dropin_self();
  r->cancel_state = PTHREAD_CANCEL_DISABLE;
  sync_interrupt_clear(sync_self());
  r->exiting = true;
  r->exit_value = PTHREAD_CANCELED;
  unwind_or_finish(r);
}

void dropin_testcancel(void) {
  struct swarm_thread *t = sync_self();
  struct dropin_thread *r =
      __atomic_load_n(&t->slots[SLOT_PTHREAD], __ATOMIC_ACQUIRE);
  if (r && atomic_load_explicit(&r->cancel_pending, memory_order_seq_cst) &&
      r->cancel_state == PTHREAD_CANCEL_ENABLE && !r->exiting)
    dropin_act_cancel();
}

DROPIN_API void pthread_testcancel(void) {
  dropin_testcancel();
}

DROPIN_API int pthread_cancel(pthread_t t) {
  struct dropin_thread *r = dropin_lookup(t);
  if (!r)
    return ESRCH;
  atomic_store_explicit(&r->cancel_pending, 1, memory_order_seq_cst);
  if (r == dropin_self()) {
    if (r->cancel_state == PTHREAD_CANCEL_ENABLE &&
        r->cancel_type == PTHREAD_CANCEL_ASYNCHRONOUS && !r->exiting)
      dropin_act_cancel();
    return 0;
  }
  struct swarm_thread *d = atomic_load_explicit(&r->desc, memory_order_seq_cst);
  if (d && r->cancel_state == PTHREAD_CANCEL_ENABLE && !r->exited &&
      !r->exiting) {
    sync_interrupt(d);
    if (r->cancel_type == PTHREAD_CANCEL_ASYNCHRONOUS)
      dropin_signal_kick_cancel(r); /* acts at once if it computes */
  }
  return 0;
}

DROPIN_API int pthread_setcancelstate(int state, int *old) {
  if (state != PTHREAD_CANCEL_ENABLE && state != PTHREAD_CANCEL_DISABLE)
    return EINVAL;
  struct dropin_thread *r = dropin_self();
  if (old)
    *old = r->cancel_state;
  r->cancel_state = state;
  if (state == PTHREAD_CANCEL_DISABLE) {
    sync_interrupt_clear(sync_self());
  } else if (atomic_load(&r->cancel_pending) && !r->exiting) {
    if (r->cancel_type == PTHREAD_CANCEL_ASYNCHRONOUS)
      dropin_act_cancel();
    sync_interrupt(sync_self()); /* the next wait ends at once */
  }
  return 0;
}

DROPIN_API int pthread_setcanceltype(int type, int *old) {
  if (type != PTHREAD_CANCEL_DEFERRED && type != PTHREAD_CANCEL_ASYNCHRONOUS)
    return EINVAL;
  struct dropin_thread *r = dropin_self();
  if (old)
    *old = r->cancel_type;
  r->cancel_type = type;
  if (type == PTHREAD_CANCEL_ASYNCHRONOUS)
    dropin_testcancel();
  return 0;
}

/* ---- create ---- */

static void *trampoline(void *arg) {
  struct dropin_thread *r = arg;
  struct swarm_thread *self = sync_self();
  __atomic_store_n(&self->slots[SLOT_PTHREAD], r, __ATOMIC_RELEASE);
  atomic_store_explicit(&r->desc, self, memory_order_seq_cst);
  void *value = r->fn(r->arg);
  r = dropin_self(); /* after fork the record is the same, but reread */
  r->exit_value = value;
  finish(r, value);
}

static int sched_check(int policy, int prio);

DROPIN_API int pthread_create(pthread_t *out, const pthread_attr_t *attr,
                              void *(*fn)(void *), void *arg) {
  dropin_ensure_runtime();
  int detach = PTHREAD_CREATE_JOINABLE;
  size_t stack = 0;
  if (attr) {
    if (pthread_attr_getdetachstate(attr, &detach) ||
        pthread_attr_getstacksize(attr, &stack))
      return EINVAL;
    if (stack == dropin_default_stack())
      stack = 0; /* not chosen by the program: swarm's default */
    else if (stack < SWARM_STACK_MIN)
      stack = SWARM_STACK_MIN;
    else if (stack > ((size_t)1 << 30))
      return EAGAIN; /* NPTL's answer: its mmap of such a stack fails */
  }
  /* Scheduling: the creator's unless the attribute says explicit. Without a
   * running runtime (it could not start) there is no record to adopt: the
   * create below answers EAGAIN, so defaults do. */
  struct dropin_thread *self = sync_self() ? dropin_self() : NULL;
  int policy = self ? self->sched_policy : SCHED_OTHER;
  int inherit = PTHREAD_INHERIT_SCHED;
  struct sched_param param = {0};
  if (self)
    param = self->sched_param;
  if (attr && !pthread_attr_getinheritsched(attr, &inherit) &&
      inherit == PTHREAD_EXPLICIT_SCHED &&
      (pthread_attr_getschedpolicy(attr, &policy) ||
       pthread_attr_getschedparam(attr, &param) ||
       sched_check(policy, param.sched_priority)))
    return EINVAL;
  struct dropin_thread *r = record_new();
  if (!r)
    return EAGAIN;
  r->sched_policy = policy;
  r->sched_param = param;
  dropin_signal_inherit(r); /* the creator's mask; nothing pending */
  r->fn = fn;
  r->arg = arg;
  r->created = true;
  r->detached = detach == PTHREAD_CREATE_DETACHED;
  r->stack_size = stack;
  /* NPTL stores *out before the thread runs; programs read it from the
   * new thread. With work-first spawn the child runs before we return. */
  *out = (pthread_t)r;
  /* The handle lands in r before the child runs (swarm_spawn's promise).
   * Default attributes take swarm_spawn's fast path. */
  int e;
  if (!stack && !r->detached) {
    e = swarm_spawn(&r->handle, NULL, trampoline, r);
  } else {
    swarm_attr_t sa;
    swarm_attr_init(&sa);
    if (stack)
      swarm_attr_setstacksize(&sa, stack);
    if (r->detached)
      swarm_attr_setdetachstate(&sa, SWARM_CREATE_DETACHED);
    e = swarm_spawn(&r->handle, &sa, trampoline, r);
    swarm_attr_destroy(&sa);
  }
  if (e) {
    record_free(r);
    return EAGAIN;
  }
  return 0;
}

/* ---- join / detach ---- */

static int join_common(pthread_t t, void **ret, bool try, int clock,
                       const struct timespec *abstime) {
  struct dropin_thread *r = dropin_lookup(t);
  if (!r)
    return stale_handle_error(t);
  struct dropin_thread *self = dropin_self();
  if (r == self)
    return EDEADLK;
  uint64_t deadline = 0;
  bool expired = false;
  if (abstime) {
    int e = sync_deadline(clock, abstime, &deadline, &expired);
    if (e)
      return e;
  }
  if (!try)
    dropin_testcancel();
  sync_spin_lock(&r->done.lock);
  if (r->detached || r->joiner) {
    sync_spin_unlock(&r->done.lock);
    return EINVAL;
  }
  if (self->joiner == r) { /* it is joining us: both would wait forever */
    sync_spin_unlock(&r->done.lock);
    return EDEADLK;
  }
  if (try && !r->exited) {
    sync_spin_unlock(&r->done.lock);
    return EBUSY;
  }
  r->joiner = self;
  sync_spin_unlock(&r->done.lock);
  if (!try) {
    int e;
    while ((e = expired
                    ? (r->done.done ? 0 : ETIMEDOUT)
                    : sync_event_wait(&r->done, deadline, true)) == ECANCELED) {
      dropin_testcancel();         /* a cancellation acts: no return */
      dropin_signal_interrupted(); /* a signal's handler ran: wait on */
    }
    if (e) {
      sync_spin_lock(&r->done.lock);
      r->joiner = NULL;
      sync_spin_unlock(&r->done.lock);
      if (e == ECANCELED)
        dropin_act_cancel();
      return e;
    }
  }
  if (r->created)
    swarm_join(r->handle, NULL); /* the swarm thread is ending: brief */
  if (ret)
    *ret = r->result;
  if (r->created) {
    record_free(r);
  }
  return 0;
}

DROPIN_API int pthread_join(pthread_t t, void **ret) {
  return join_common(t, ret, false, CLOCK_REALTIME, NULL);
}
DROPIN_API int pthread_tryjoin_np(pthread_t t, void **ret) {
  return join_common(t, ret, true, CLOCK_REALTIME, NULL);
}
DROPIN_API int pthread_timedjoin_np(pthread_t t, void **ret,
                                    const struct timespec *abstime) {
  if (!abstime)
    return join_common(t, ret, false, CLOCK_REALTIME, NULL);
  return join_common(t, ret, false, CLOCK_REALTIME, abstime);
}
DROPIN_API int pthread_clockjoin_np(pthread_t t, void **ret, clockid_t clock,
                                    const struct timespec *abstime) {
  if (!abstime)
    return join_common(t, ret, false, CLOCK_REALTIME, NULL);
  return join_common(t, ret, false, clock, abstime);
}

DROPIN_API int pthread_detach(pthread_t t) {
  struct dropin_thread *r = dropin_lookup(t);
  if (!r)
    return stale_handle_error(t);
  sync_spin_lock(&r->done.lock);
  if (r->detached || r->joiner) {
    sync_spin_unlock(&r->done.lock);
    return EINVAL;
  }
  r->detached = true;
  bool exited = r->exited, created = r->created;
  swarm_thread_t h = r->handle;
  sync_spin_unlock(&r->done.lock);
  /* From the unlock on, a thread still running frees r when it exits. */
  if (created)
    swarm_detach(h);
  if (exited && created) {
    record_free(r);
  }
  return 0;
}

DROPIN_API pthread_t pthread_self(void) {
  if (unlikely(!sync_self())) /* a worker that runs no thread */
    return (pthread_t)main_record;
  return (pthread_t)dropin_self();
}

DROPIN_API int pthread_equal(pthread_t a, pthread_t b) {
  return a == b;
}

/* ---- per-thread properties ---- */

DROPIN_API int pthread_getattr_np(pthread_t t, pthread_attr_t *attr) {
  struct dropin_thread *r = dropin_lookup(t);
  if (!r)
    return ESRCH;
  struct swarm_thread *d = atomic_load(&r->desc);
  if (!r->created) {
    /* main or an NPTL kernel thread: its own kernel stack. */
    if (r->external)
      return libc_pthread_getattr_np(r->kthread, attr);
    if (r == dropin_self())
      return libc_pthread_getattr_np(libc_pthread_self(), attr);
  }
  int e = pthread_attr_init(attr);
  if (e)
    return e;
  pthread_attr_setdetachstate(attr, r->detached ? PTHREAD_CREATE_DETACHED
                                                : PTHREAD_CREATE_JOINABLE);
  if (d && d->stack.lo && d->stack.size)
    pthread_attr_setstack(attr, d->stack.lo, d->stack.size);
  else if (r->stack_size)
    pthread_attr_setstacksize(attr, r->stack_size);
  return 0;
}

DROPIN_API int pthread_setname_np(pthread_t t, const char *name) {
  struct dropin_thread *r = dropin_lookup(t);
  if (!r)
    return ESRCH;
  size_t n = strlen(name);
  if (n >= sizeof r->name)
    return ERANGE;
  memcpy(r->name, name, n + 1);
  return 0;
}

DROPIN_API int pthread_getname_np(pthread_t t, char *buf, size_t len) {
  struct dropin_thread *r = dropin_lookup(t);
  if (!r)
    return ESRCH;
  size_t n = strnlen(r->name, sizeof r->name);
  if (len < sizeof r->name || len < n + 1) /* NPTL: at least 16 bytes */
    return ERANGE;
  memcpy(buf, r->name, n);
  buf[n] = 0;
  return 0;
}

/* Scheduling and affinity of a swarm thread are the runtime's: accepted,
 * recorded and reported back, not applied (docs/dropin.md). */
/* EINVAL unless prio is valid for policy (the kernel's ranges: 0 for the
 * normal policies, sched_get_priority_min..max for FIFO and RR). */
static int sched_check(int policy, int prio) {
  int lo = sched_get_priority_min(policy), hi = sched_get_priority_max(policy);
  if (lo < 0 || hi < 0 || prio < lo || prio > hi)
    return EINVAL;
  return 0;
}

DROPIN_API int pthread_setschedparam(pthread_t t, int policy,
                                     const struct sched_param *p) {
  struct dropin_thread *r = dropin_lookup(t);
  if (!r)
    return ESRCH;
  int e = sched_check(policy, p->sched_priority);
  if (e)
    return e;
  r->sched_policy = policy;
  r->sched_param = *p;
  return 0;
}

DROPIN_API int pthread_getschedparam(pthread_t t, int *policy,
                                     struct sched_param *p) {
  struct dropin_thread *r = dropin_lookup(t);
  if (!r)
    return ESRCH;
  *policy = r->sched_policy;
  *p = r->sched_param;
  return 0;
}

DROPIN_API int pthread_setschedprio(pthread_t t, int prio) {
  struct dropin_thread *r = dropin_lookup(t);
  if (!r)
    return ESRCH;
  int e = sched_check(r->sched_policy, prio);
  if (!e)
    r->sched_param.sched_priority = prio;
  return e;
}

DROPIN_API int pthread_setaffinity_np(pthread_t t, size_t size,
                                      const cpu_set_t *set) {
  (void)size;
  (void)set;
  if (!dropin_lookup(t))
    return ESRCH;
  return 0;
}

DROPIN_API int pthread_getaffinity_np(pthread_t t, size_t size,
                                      cpu_set_t *set) {
  if (!dropin_lookup(t))
    return ESRCH;
  return sched_getaffinity(0, size, set) ? errno : 0;
}

/* pthread_getcpuclockid: cpuclock.c */

/* ---- signals: signal.c ---- */

/* ---- yield ---- */

/* With other swarm threads runnable here, they run; with none, the worker's
 * kernel thread yields to the kernel, as NPTL's sched_yield does (another
 * process, or a kernel thread of this one, may be waiting for the CPU). */
DROPIN_API int sched_yield(void) {
  struct worker *w = worker_current();
  bool others = w && (deque_size(&w->deque) > 0 || queue_count(&w->queue) > 0);
  if (w)
    swarm_yield(); /* also fires due timers, which may ready others */
  if (!others)
    os_yield();
  return 0;
}

/* glibc >= 2.34's header redirects pthread_yield to sched_yield (the change
 * that broke MassiveThreads' drop-in build); programs built against older
 * glibc still call the symbol pthread_yield. Define the symbol by its
 * assembler name so neither header version matters. */
DROPIN_API int dropin_pthread_yield(void) __asm__("pthread_yield");
DROPIN_API int dropin_pthread_yield(void) {
  return sched_yield();
}

/* ---- fork ---- */

/* In the child: core restarts the runtime on this kernel thread with the
 * calling flow, under the descriptor it had, as its main thread
 * (runtime_fork_child), so its keys, its sync record and the objects it
 * owns carry over untouched. Only the record changes: the child's main
 * thread has no core handle to join. */
static void fork_child_restart(void) {
  start_failed(fork_child_restart_error()); /* core's atfork handler ran */
  /* a parent thread signalling or cancelling the caller at the fork may
   * have been inside its sync record: a ghost's hold, let go */
  sync_thread_after_fork(sync_self());
  main_record = NULL; /* the caller's record is the child's main */
  struct dropin_thread *r =
      __atomic_load_n(&sync_self()->slots[SLOT_PTHREAD], __ATOMIC_ACQUIRE);
  if (r) {
    r->created = false;
    r->handle = 0;
    r->external = worker_current() == NULL;
    if (r->external)
      r->kthread = libc_pthread_self();
  }
}

DROPIN_API pid_t fork(void) {
  bool running = swarm_is_running();
  pid_t pid = libc_fork();
  if (pid == 0 && running) {
    fork_child_restart();
    main_record = dropin_self();
    dropin_signal_fork_child();
  }
  return pid;
}
