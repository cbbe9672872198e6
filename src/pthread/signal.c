/*
 * pthread/signal.c — signals on swarm threads: per-thread masks and pending
 * sets, pthread_kill / pthread_sigqueue / raise to a swarm thread, the
 * mask calls, sigwait / sigwaitinfo / sigtimedwait, and the signal mask a
 * process started from a swarm thread begins with (exec, posix_spawn,
 * system, popen).
 *
 * The model. A swarm thread has no kernel thread of its own, so the kernel
 * cannot keep its mask or deliver to it. The drop-in does both:
 *  - Every worker's kernel mask blocks every signal except the runtime's
 *    interrupt signal (os_interrupt_signal) and the synchronous faults
 *    (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS), which the kernel
 *    sends to the thread that faulted. A swarm thread's mask is a word in
 *    its record (sig_mask); pthread_sigmask changes only that word.
 *  - Process-directed signals (kill, the terminal, alarm) therefore wait in
 *    the process's pending set, where one kernel thread of ours, the signal
 *    thread, takes them with sigtimedwait and forwards each: to a thread
 *    waiting for it in sigwait; else, with a handler installed, to main or
 *    to a running thread that does not block it; with the default action,
 *    it raises the signal on itself, so the kernel terminates or stops the
 *    process exactly as it would. A signal every candidate blocks stays in
 *    our process-pending set until a thread unblocks it or waits for it.
 *  - A thread-directed signal (pthread_kill, or a forwarded one) is set in
 *    the target's pending set; if the target does not block it, it is
 *    "kicked": interrupted if it is parked in an interruptible call
 *    (sync_interrupt: the call returns EINTR where POSIX says so, after the
 *    handler ran; pthread/blocking.c's waits in the kernel are ended the
 *    same way, and while one lasts on_interrupt leaves the signal to it),
 *    and its worker gets the interrupt signal if it is running. The
 *    signal thread re-kicks running targets every few milliseconds while
 *    anything is outstanding, which covers a target that was queued when
 *    the signal came: it gets it once it runs.
 *  - Delivery runs on the target thread itself (so pthread_self() in the
 *    handler is the target): the thread's mask becomes mask | sa_mask |
 *    sig for the call, and the kernel runs the program's handler by a
 *    rt_tgsigqueueinfo to the worker itself with that one signal
 *    unblocked, so SA_SIGINFO, SA_RESETHAND, SA_ONSTACK and the siginfo
 *    (si_code SI_TKILL / SI_QUEUE / the forwarded sender's) are the kernel's.
 *
 * When the interrupt may deliver. The interrupt handler runs on the
 * interrupted swarm thread's stack. It delivers only when the interrupted
 * program counter is outside this library's code and the vDSO: inside
 * them the worker may be mid-switch (w->current names the next thread while
 * the old stack is live) or hold one of the runtime's spinlocks (it reads
 * clocks through the vDSO), and a handler that then
 * called pthread_self() or took a lock would see a torn state. Otherwise it
 * is a point where NPTL could deliver as well (program code or libc; the
 * handler must be async-signal-safe, as with NPTL). A refused interrupt is
 * retried by the signal thread's next re-kick. The lock of this file is
 * only tried from the handler, never waited for.
 *
 * Children. A process inherits the kernel mask of the kernel thread that
 * made it, i.e. the worker's nearly full mask. The exec family, posix_spawn,
 * posix_spawnp, system and popen therefore run with the calling thread's
 * recorded mask on its worker for the length of the call (issue 21 item 1);
 * fork leaves the mask to the exec that follows.
 *
 * Limits (docs/dropin.md): one instance of each signal is pending per
 * thread (real-time signals do not queue several), and a siginfo is kept
 * for at most INFO_SLOTS pending signals at once (beyond, a thread-directed
 * signal arrives with SI_TKILL's fields).
 */
#include <dlfcn.h>
#include <link.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include "pthread/dropin.h"

#define NSIG_SWARM 64
#define BIT(s) ((uint64_t)1 << ((s)-1))
/* An asynchronous cancellation waiting for its target to run: kept as
 * the pending bit of glibc's SIGCANCEL (32), which no program can send, so
 * the signal thread's re-kick and a thread's exit treat it as any pending
 * signal; it is never delivered as one. */
#define CANCEL_BIT BIT(32)
#define INFO_SLOTS 128
#define WAITER_SLOTS 64
#define REKICK_MIN_NS ((int64_t)1000000)  /* 1 ms */
#define REKICK_MAX_NS ((int64_t)50000000) /* 50 ms */

struct info_slot {
  struct dropin_thread *r; /* NULL: free, or (sig != 0) process-pending */
  int sig;
  siginfo_t info;
};

bool dropin_masks_used;

static struct {
  int interrupt;              /* the interrupt signal; 0: not set up */
  uint64_t worker_keep;       /* what workers leave unblocked */
  uint64_t unblockable;       /* SIGKILL, SIGSTOP */
  uintptr_t text_lo, text_hi; /* this library's code */
  uint64_t initial_mask;      /* main's kernel mask when the library loaded */
  struct dropin_thread *main;
  pthread_t kthread;      /* the signal thread */
  _Atomic int signal_tid; /* 0 while none runs */
  _Atomic uint32_t
      signal_kick_queued;      /* a wake-up queued to it (kick_thread) */
  _Atomic int outstanding;     /* thread-directed signals not yet taken */
  _Atomic uint64_t fd_claimed; /* signals some signalfd was made for */
  uint32_t lock; /* infos, process_pending, waiters: tried, never waited on,
                    from the interrupt handler */
  uint64_t process_pending;
  struct info_slot infos[INFO_SLOTS];
  struct dropin_thread *waiters[WAITER_SLOTS];
} sigs;

static void kick_running(struct swarm_thread *d);
static void wake_signal_thread(void);
static int set_pending(struct dropin_thread *r, int sig, const siginfo_t *info);

/* ---- sets ---- */

static uint64_t bits_of(const sigset_t *set) {
  uint64_t b = 0;
  for (int s = 1; s <= NSIG_SWARM; s++)
    if (sigismember(set, s) == 1)
      b |= BIT(s);
  return b;
}

static void set_of(uint64_t b, sigset_t *set) {
  sigemptyset(set);
  for (int s = 1; s <= NSIG_SWARM; s++)
    if (b & BIT(s))
      sigaddset(set, s);
}

/* Signals the program may not send or wait for: glibc's own two (SIGCANCEL
 * and SIGSETXID, 32 and 33) and the runtime's interrupt. */
static bool reserved(int sig) {
  return sig == 32 || sig == 33 || (sigs.interrupt && sig == sigs.interrupt);
}

static bool default_ignored(int sig) {
  return sig == SIGCHLD || sig == SIGCONT || sig == SIGURG || sig == SIGWINCH;
}

/* ---- the lock ---- */

static bool lock_try(void) {
  return !__atomic_exchange_n(&sigs.lock, 1, __ATOMIC_ACQUIRE);
}
static void lock_take(void) {
  while (!lock_try())
    os_cpu_relax();
}
static void lock_drop(void) {
  __atomic_store_n(&sigs.lock, 0, __ATOMIC_RELEASE);
}

/* ---- siginfo kept for pending signals (under the lock) ---- */

static void info_put(struct dropin_thread *r, int sig, const siginfo_t *info) {
  for (int i = 0; i < INFO_SLOTS; i++)
    if (!sigs.infos[i].sig) {
      sigs.infos[i].r = r;
      sigs.infos[i].sig = sig;
      sigs.infos[i].info = *info;
      return;
    }
}

static void tkill_info(int sig, siginfo_t *info) {
  memset(info, 0, sizeof *info);
  info->si_signo = sig;
  info->si_code = SI_TKILL;
  info->si_pid = getpid();
  info->si_uid = getuid();
}

/* Takes the kept siginfo of (r, sig), or makes SI_TKILL's. */
static void info_take(struct dropin_thread *r, int sig, siginfo_t *out) {
  for (int i = 0; i < INFO_SLOTS; i++)
    if (sigs.infos[i].sig == sig && sigs.infos[i].r == r) {
      *out = sigs.infos[i].info;
      sigs.infos[i].sig = 0;
      sigs.infos[i].r = NULL;
      return;
    }
  tkill_info(sig, out);
}

/* Moves the process-pending signals of `want` to r (under the lock). */
static void claim_process_pending(struct dropin_thread *r, uint64_t want) {
  uint64_t b = sigs.process_pending & want;
  if (!b)
    return;
  sigs.process_pending &= ~b;
  for (int i = 0; i < INFO_SLOTS; i++)
    if (sigs.infos[i].sig && !sigs.infos[i].r && (b & BIT(sigs.infos[i].sig)))
      sigs.infos[i].r = r;
  atomic_fetch_or(&r->sig_pending, b);
  atomic_fetch_add(&sigs.outstanding, __builtin_popcountll(b));
}

/* ---- delivery on the target thread ---- */

/* Has the kernel act on sig with *info on this kernel thread: runs the
 * program's handler, or its default action (terminate, stop). */
static void kernel_raise(int sig, const siginfo_t *info) {
  sigset_t one, old;
  sigemptyset(&one);
  sigaddset(&one, sig);
  sys_sigmask(SIG_UNBLOCK, &one, &old);
  os_thread_sigqueue(os_thread_id(), sig, info);
  sys_sigmask(SIG_SETMASK, &old, NULL);
}

static int deliver_one(struct dropin_thread *r, int sig,
                       const siginfo_t *info) {
  struct sigaction sa;
  if (sigaction(sig, NULL, &sa) != 0 || sa.sa_handler == SIG_IGN)
    return DROPIN_SIG_NONE;
  if (sa.sa_handler == SIG_DFL) {
    if (!default_ignored(sig))
      kernel_raise(sig, info); /* ends or stops the process */
    return DROPIN_SIG_NONE;
  }
  /* As the kernel would: the handler runs with the thread's mask plus its
   * sa_mask (and sig), and its return restores the mask. */
  uint64_t old = atomic_load(&r->sig_mask);
  uint64_t during = old | bits_of(&sa.sa_mask);
  if (!(sa.sa_flags & SA_NODEFER))
    during |= BIT(sig);
  __atomic_store_n(&dropin_masks_used, true, __ATOMIC_RELAXED);
  atomic_store(&r->sig_mask, during);
  kernel_raise(sig, info);
  atomic_store(&r->sig_mask, old);
  return (sa.sa_flags & SA_RESTART) ? DROPIN_SIG_RESTART : DROPIN_SIG_EINTR;
}

/* Takes sig off r's pending set with its siginfo: 1, or 0 when it was not
 * pending any more, or -1 when the lock is busy and `try` is set. */
static int take(struct dropin_thread *r, int sig, siginfo_t *info, bool try) {
  if (try) {
    if (!lock_try())
      return -1;
  } else {
    lock_take();
  }
  int got = 0;
  if (atomic_fetch_and(&r->sig_pending, ~BIT(sig)) & BIT(sig)) {
    info_take(r, sig, info);
    atomic_fetch_sub(&sigs.outstanding, 1);
    got = 1;
  }
  lock_drop();
  return got;
}

/* Delivers r's pending signals that its mask lets through, on the calling
 * thread, which must be r's. Returns the strongest DROPIN_SIG_* seen. */
static int deliver_pending(struct dropin_thread *r, bool try) {
  int result = DROPIN_SIG_NONE;
  for (;;) {
    uint64_t p =
        atomic_load(&r->sig_pending) & ~atomic_load(&r->sig_mask) & ~CANCEL_BIT;
    if (!p)
      return result;
    int sig = __builtin_ctzll(p) + 1;
    siginfo_t info;
    int got = take(r, sig, &info, try);
    if (got < 0)
      return result; /* the signal thread re-kicks */
    if (!got)
      continue;
    int d = deliver_one(r, sig, &info);
    if (d > result)
      result = d;
  }
}

/* After a delivery: the interruption that kicked a parked or queued thread
 * is spent, unless a cancellation is behind it too (the canceller stores
 * cancel_pending before it interrupts; we clear, then look). */
static void interruption_spent(struct dropin_thread *r) {
  struct swarm_thread *d = atomic_load(&r->desc);
  if (!d)
    return;
  sync_interrupt_clear(d);
  if (atomic_load_explicit(&r->cancel_pending, memory_order_seq_cst) &&
      r->cancel_state == PTHREAD_CANCEL_ENABLE && !r->exiting)
    sync_interrupt(d);
}

static bool in_runtime(uintptr_t pc) {
  return pc == 0 || (pc >= sigs.text_lo && pc < sigs.text_hi) ||
         swarm_pc_in_vdso(pc); /* the runtime's clock reads (preempt.c) */
}

static void on_interrupt(int sig, siginfo_t *si, void *uc) {
  (void)sig;
  (void)si;
  struct worker *w = worker_current();
  if (w) /* before anything pending is looked at (kick_thread) */
    atomic_store_explicit(&w->kick_queued, 0, memory_order_seq_cst);
  if (os_abortable_fixup(uc)) /* a cancelled wait for any child (blocking.c) */
    return;
  struct swarm_thread *d = w ? w->current : NULL;
  if (!d || in_runtime(os_context_pc(uc)))
    return;
  struct dropin_thread *r =
      __atomic_load_n(&d->slots[SLOT_PTHREAD], __ATOMIC_ACQUIRE);
  if (!r)
    return;
  int saved = *os_errno_location();
  if (!__atomic_load_n(&r->sig_in_kernel, __ATOMIC_RELAXED) &&
      deliver_pending(r, true) != DROPIN_SIG_NONE)
    interruption_spent(r);
  if (r->cancel_type == PTHREAD_CANCEL_ASYNCHRONOUS &&
      atomic_load(&r->cancel_pending) &&
      r->cancel_state == PTHREAD_CANCEL_ENABLE && !r->exiting &&
      swarm_preempt_safe(uc) && take(r, 32, &(siginfo_t){0}, true) >= 0) {
    /* Asynchronous cancellation acts here: the thread ends from the
     * handler, with the worker's mask back in place. */
    sys_sigmask(SIG_SETMASK, &((const ucontext_t *)uc)->uc_sigmask, NULL);
    dropin_act_cancel();
  }
  swarm_preempt_point(uc);
  *os_errno_location() = saved;
}

/* pthread_cancel of an asynchronous-type thread that may be running: its
 * worker's interrupt acts on it (on_interrupt). */
void dropin_signal_kick_cancel(struct dropin_thread *r) {
  if (!sigs.interrupt)
    return;
  if (set_pending(r, 32, NULL)) /* CANCEL_BIT */
    return;
  struct swarm_thread *d = atomic_load(&r->desc);
  if (d)
    kick_running(d);
  wake_signal_thread(); /* re-kicks it once it runs */
}

/* sync_wait_interrupted_hook: a signal's handler runs before the
 * condition wait takes its mutex back; a cancellation is left to act after
 * (POSIX: its cleanup handlers run with the mutex held). */
static void in_cond_wait(void) {
  struct dropin_thread *r = dropin_self();
  if (atomic_load(&r->cancel_pending) &&
      r->cancel_state == PTHREAD_CANCEL_ENABLE && !r->exiting)
    return;
  dropin_signal_interrupted();
}

int dropin_signal_interrupted(void) {
  struct dropin_thread *r = dropin_self();
  interruption_spent(r);
  return deliver_pending(r, false);
}

/* ---- posting and kicking ---- */

/* The runtime's interrupt signal is a real-time one: every send queues
 * one more delivery. A sender that outpaced the handler (pthread_kill in a
 * loop) left the target's worker doing nothing but take them, so each
 * kick is sent only when none is queued to that kernel thread yet (flag:
 * its worker's kick_queued, or the signal thread's). The receiver clears
 * the flag before it looks at what is pending, and a sender sets the
 * pending state before it tests the flag (both seq_cst), so a kick that
 * sends nothing is seen by the one in flight. */
static void kick_thread(_Atomic uint32_t *queued, int tid) {
  if (!atomic_exchange_explicit(queued, 1, memory_order_seq_cst))
    os_thread_signal(tid, sigs.interrupt);
}

static void wake_signal_thread(void) {
  int tid = atomic_load(&sigs.signal_tid);
  if (tid && sigs.interrupt)
    kick_thread(&sigs.signal_kick_queued, tid);
}

/* Interrupts whichever worker runs d now (read racily: a miss is covered
 * by the signal thread's re-kick). */
static void kick_running(struct swarm_thread *d) {
  int n = swarm_rt.nslots;
  for (int i = 0; i < n; i++) {
    struct worker *w = &swarm_rt.workers[i];
    if (__atomic_load_n(&w->current, __ATOMIC_RELAXED) == d && w->tid)
      kick_thread(&w->kick_queued, w->tid);
  }
}

static void kick(struct dropin_thread *r, uint64_t bit) {
  if (!(bit & (~atomic_load(&r->sig_mask) | atomic_load(&r->sig_waiting))))
    return; /* blocked and not waited for: it stays pending */
  struct swarm_thread *d = atomic_load(&r->desc);
  if (d) {
    sync_interrupt(d);
    kick_running(d);
  }
  wake_signal_thread();
}

/* Sets the pending bit of sig on r, with info (NULL: none kept). ESRCH
 * if r has ended. Under r's done.lock, which finish() holds while it marks
 * r exited and drops what is pending (dropin_signal_exit): a bit is never
 * set on a record that has let go of its signals. */
static int set_pending(struct dropin_thread *r, int sig,
                       const siginfo_t *info) {
  sync_spin_lock(&r->done.lock);
  if (r->exited) {
    sync_spin_unlock(&r->done.lock);
    return ESRCH;
  }
  lock_take();
  if (!(atomic_fetch_or(&r->sig_pending, BIT(sig)) & BIT(sig))) {
    if (info)
      info_put(r, sig, info);
    atomic_fetch_add(&sigs.outstanding, 1);
  }
  lock_drop();
  sync_spin_unlock(&r->done.lock);
  return 0;
}

/* Sets sig pending on r and kicks it. ESRCH if r has ended. */
static int post(struct dropin_thread *r, int sig, const siginfo_t *info) {
  int e = set_pending(r, sig, info);
  if (!e)
    kick(r, BIT(sig));
  return e;
}

static int send_to(pthread_t t, int sig, const siginfo_t *info) {
  struct dropin_thread *r = dropin_lookup(t);
  if (!r)
    return ESRCH;
  if (sig < 0 || sig >= NSIG || (sig && reserved(sig)))
    return EINVAL;
  if (r->exited)
    return ESRCH;
  if (sig == 0)
    return 0;
  if (r->external || !sigs.interrupt || !worker_current())
    return libc_pthread_kill(r->external ? r->kthread : libc_pthread_self(),
                             sig);
  int e = post(r, sig, info);
  if (!e && r == dropin_self() && /* delivered before the call returns */
      deliver_pending(r, false) != DROPIN_SIG_NONE)
    interruption_spent(r); /* the kick's, or the next wait ends at once */
  return e;
}

DROPIN_API int pthread_kill(pthread_t t, int sig) {
  siginfo_t info;
  tkill_info(sig, &info);
  return send_to(t, sig, &info);
}

DROPIN_API int pthread_sigqueue(pthread_t t, int sig, const union sigval v) {
  siginfo_t info;
  tkill_info(sig, &info);
  info.si_code = SI_QUEUE;
  info.si_value = v;
  return send_to(t, sig, &info);
}

DROPIN_API int raise(int sig) {
  int e = pthread_kill(pthread_self(), sig);
  return e ? dropin_fail(e) : 0;
}

/* ---- masks ---- */

static int mask_change(int how, const sigset_t *set, sigset_t *old) {
  if (!sigs.interrupt || !worker_current())
    return libc_pthread_sigmask(how, set, old);
  struct dropin_thread *r = dropin_self();
  uint64_t cur = atomic_load(&r->sig_mask), next = cur;
  if (set) {
    uint64_t b = bits_of(set) & ~sigs.unblockable;
    if (how == SIG_BLOCK)
      next = cur | b;
    else if (how == SIG_UNBLOCK)
      next = cur & ~b;
    else if (how == SIG_SETMASK)
      next = b;
    else
      return EINVAL;
  }
  if (old)
    set_of(cur, old);
  if (next == cur)
    return 0;
  if (next)
    __atomic_store_n(&dropin_masks_used, true, __ATOMIC_RELAXED);
  atomic_store(&r->sig_mask, next);
  if (cur & ~next) { /* unblocked: what waited for it comes now */
    lock_take();
    claim_process_pending(r, cur & ~next);
    lock_drop();
    if (deliver_pending(r, false) != DROPIN_SIG_NONE)
      interruption_spent(r);
  }
  return 0;
}

DROPIN_API int pthread_sigmask(int how, const sigset_t *set, sigset_t *old) {
  return mask_change(how, set, old);
}

DROPIN_API int sigprocmask(int how, const sigset_t *set, sigset_t *old) {
  int e = mask_change(how, set, old);
  return e ? dropin_fail(e) : 0;
}

/* The thread's pending signals and the process's (NPTL: the kernel
 * thread's and the process's). */
DROPIN_API int sigpending(sigset_t *set) {
  if (!sigs.interrupt || !worker_current())
    return (int)syscall(SYS_rt_sigpending, set, (size_t)8);
  struct dropin_thread *r = dropin_self();
  lock_take();
  uint64_t p =
      (atomic_load(&r->sig_pending) & ~CANCEL_BIT) | sigs.process_pending;
  lock_drop();
  set_of(p, set);
  return 0;
}

/* ---- waiting for signals ---- */

static void waiter_set(struct dropin_thread *r, bool on) {
  for (int i = 0; i < WAITER_SLOTS; i++)
    if (sigs.waiters[i] == (on ? NULL : r)) {
      sigs.waiters[i] = on ? r : NULL;
      return;
    }
}

/* The signal taken (info filled), or -errno: EAGAIN at the deadline
 * (0: none), EINTR when a handler ran for another signal and `eintr`. */
static int wait_for(uint64_t want, siginfo_t *info, uint64_t deadline,
                    bool eintr) {
  struct dropin_thread *r = dropin_self();
  lock_take();
  waiter_set(r, true);
  atomic_store(&r->sig_waiting, want);
  claim_process_pending(r, want);
  lock_drop();
  int result;
  for (;;) {
    uint64_t p = atomic_load(&r->sig_pending) & want;
    if (p) {
      int sig = __builtin_ctzll(p) + 1;
      if (take(r, sig, info, false) > 0) {
        result = sig;
        break;
      }
      continue;
    }
    int e = sync_sleep_until(deadline ? deadline : UINT64_MAX, true);
    if (e == ECANCELED) {
      dropin_testcancel();
      if (dropin_signal_interrupted() != DROPIN_SIG_NONE && eintr) {
        result = -EINTR;
        break;
      }
    } else if (deadline && sync_now_ns() >= deadline) {
      result = -EAGAIN;
      break;
    }
  }
  lock_take();
  atomic_store(&r->sig_waiting, 0);
  waiter_set(r, false);
  lock_drop();
  return result;
}

static int wait_entry(const sigset_t *set, siginfo_t *info,
                      const struct timespec *timeout, bool eintr) {
  uint64_t deadline = 0;
  if (timeout) {
    if (timeout->tv_sec < 0 || timeout->tv_nsec < 0 ||
        timeout->tv_nsec >= 1000000000L)
      return -EINVAL;
    uint64_t ns =
        (uint64_t)timeout->tv_sec * 1000000000u + (uint64_t)timeout->tv_nsec;
    deadline = sync_now_ns() + (ns ? ns : 1);
  }
  siginfo_t scratch;
  dropin_testcancel();
  return wait_for(bits_of(set) & ~sigs.unblockable & ~CANCEL_BIT,
                  info ? info : &scratch, deadline, eintr);
}

static bool waits_here(void) {
  return sigs.interrupt && worker_current();
}

DROPIN_API int sigwait(const sigset_t *set, int *sig) {
  if (!waits_here()) {
    int s = (int)syscall(SYS_rt_sigtimedwait, set, NULL, NULL, (size_t)8);
    if (s < 0)
      return errno;
    *sig = s;
    return 0;
  }
  int s = wait_entry(set, NULL, NULL, false);
  if (s < 0)
    return -s;
  *sig = s;
  return 0;
}

DROPIN_API int sigtimedwait(const sigset_t *set, siginfo_t *info,
                            const struct timespec *timeout) {
  if (!waits_here())
    return (int)syscall(SYS_rt_sigtimedwait, set, info, timeout, (size_t)8);
  int s = wait_entry(set, info, timeout, true);
  return s < 0 ? dropin_fail(-s) : s;
}

DROPIN_API int sigwaitinfo(const sigset_t *set, siginfo_t *info) {
  return sigtimedwait(set, info, NULL);
}

/* signalfd: the signal thread stops taking the fd's signals, so that
 * process-directed ones stay pending in the kernel (every kernel thread of
 * ours blocks them), where the descriptor reads them. A thread-directed
 * signal (pthread_kill) is the target thread's and never reaches a
 * signalfd (docs/dropin.md). */
DROPIN_API int signalfd(int fd, const sigset_t *mask, int flags) {
  typedef int (*signalfd_fn)(int, const sigset_t *, int);
  static signalfd_fn _Atomic real_signalfd;
  signalfd_fn real = atomic_load(&real_signalfd);
  if (!real) {
    real = (signalfd_fn)dlsym(RTLD_NEXT, "signalfd");
    if (!real)
      return dropin_fail(ENOSYS);
    atomic_store(&real_signalfd, real);
  }
  int r = real(fd, mask, flags);
  if (r >= 0 && sigs.interrupt && mask) {
    atomic_fetch_or(&sigs.fd_claimed, bits_of(mask) & ~sigs.unblockable);
    wake_signal_thread();
  }
  return r;
}

/* ---- the signal thread: process-directed signals ---- */

/* A thread to take a process-directed sig (under the lock), or NULL. */
static struct dropin_thread *forward_target(int sig, bool *waiter) {
  *waiter = true;
  for (int i = 0; i < WAITER_SLOTS; i++) {
    struct dropin_thread *r = sigs.waiters[i];
    if (r && (atomic_load(&r->sig_waiting) & BIT(sig)))
      return r;
  }
  *waiter = false;
  struct dropin_thread *m = sigs.main;
  if (m && !m->exited && !(atomic_load(&m->sig_mask) & BIT(sig)))
    return m;
  for (int i = 0; i < swarm_rt.nslots; i++) {
    struct swarm_thread *d =
        __atomic_load_n(&swarm_rt.workers[i].current, __ATOMIC_RELAXED);
    struct dropin_thread *r =
        d ? __atomic_load_n(&d->slots[SLOT_PTHREAD], __ATOMIC_ACQUIRE) : NULL;
    if (r && !r->exited && !(atomic_load(&r->sig_mask) & BIT(sig)))
      return r;
  }
  return NULL;
}

/* A process-directed signal, as the kernel would treat it: a thread
 * waiting for it in sigwait takes it whatever its disposition; otherwise an
 * ignored one is dropped, one that every thread blocks stays pending for
 * the process, the default action is the kernel's, and a handler runs on a
 * thread that does not block it. */
static void forward(int sig, const siginfo_t *info) {
  struct sigaction sa;
  if (sigaction(sig, NULL, &sa) != 0)
    return;
  bool waiter;
  lock_take();
  struct dropin_thread *r = forward_target(sig, &waiter);
  if (!r) {
    if (!(sigs.process_pending & BIT(sig))) {
      sigs.process_pending |= BIT(sig); /* every thread blocks it */
      info_put(NULL, sig, info);
    }
    lock_drop();
    return;
  }
  if (!waiter && (sa.sa_handler == SIG_IGN || sa.sa_handler == SIG_DFL)) {
    lock_drop();
    if (sa.sa_handler == SIG_DFL && !default_ignored(sig))
      kernel_raise(sig, info); /* the default action, as the kernel's */
    return;
  }
  /* A waiter unregisters, and main's record lives on, under or after
   * this lock; a running thread found by forward_target may end meanwhile
   * (post then finds it exited, or, if its record was reused, gives a new
   * thread a signal meant for the process, which NPTL could too). */
  lock_drop();
  post(r, sig, info);
}

/* Interrupts every worker whose running thread has a deliverable signal. */
static void rekick(void) {
  for (int i = 0; i < swarm_rt.nslots; i++) {
    struct worker *w = &swarm_rt.workers[i];
    struct swarm_thread *d = __atomic_load_n(&w->current, __ATOMIC_RELAXED);
    struct dropin_thread *r =
        d ? __atomic_load_n(&d->slots[SLOT_PTHREAD], __ATOMIC_ACQUIRE) : NULL;
    if (r && (atomic_load(&r->sig_pending) & ~atomic_load(&r->sig_mask)) &&
        w->tid)
      kick_thread(&w->kick_queued, w->tid);
  }
}

static void *signal_main(void *arg) {
  (void)arg;
  atomic_store(&sigs.signal_tid, os_thread_id());
  sigset_t set;
  uint64_t claimed = UINT64_MAX; /* the fd_claimed the set was made for */
  int64_t backoff = REKICK_MIN_NS;
  for (;;) {
    uint64_t now_claimed = atomic_load(&sigs.fd_claimed);
    if (now_claimed != claimed) { /* signalfd's signals stay for the fd */
      claimed = now_claimed;
      sigfillset(&set); /* glibc leaves out its own two */
      uint64_t keep = (sigs.worker_keep & ~BIT(sigs.interrupt)) | claimed;
      for (int s = 1; s <= NSIG_SWARM; s++)
        if (keep & BIT(s))
          sigdelset(&set, s);
    }
    struct timespec ts = {0, (long)backoff};
    siginfo_t info;
    bool waiting = atomic_load(&sigs.outstanding) > 0;
    long s = syscall(SYS_rt_sigtimedwait, &set, &info, waiting ? &ts : NULL,
                     (size_t)8);
    /* before forward and rekick look at what is pending (kick_thread) */
    atomic_store_explicit(&sigs.signal_kick_queued, 0, memory_order_seq_cst);
    if (s > 0 && s != sigs.interrupt)
      forward((int)s, &info);
    rekick();
    if (s > 0)
      backoff = REKICK_MIN_NS;
    else if (backoff < REKICK_MAX_NS)
      backoff *= 2;
  }
  return NULL;
}

/* ---- set-up ---- */

static int find_text(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size;
  uintptr_t pc = (uintptr_t)arg;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *p = &info->dlpi_phdr[i];
    if (p->p_type != PT_LOAD || !(p->p_flags & PF_X))
      continue;
    uintptr_t lo = info->dlpi_addr + p->p_vaddr;
    if (pc >= lo && pc < lo + p->p_memsz) {
      sigs.text_lo = lo;
      sigs.text_hi = lo + p->p_memsz;
      return 1;
    }
  }
  return 0;
}

void dropin_signal_init_early(void) {
  sigset_t cur;
  sys_sigmask(SIG_BLOCK, NULL, &cur);
  sigs.initial_mask = bits_of(&cur);
  sigs.unblockable = BIT(SIGKILL) | BIT(SIGSTOP) | CANCEL_BIT;
  dl_iterate_phdr(find_text, (void *)(uintptr_t)on_interrupt);
  if (!sigs.text_hi)
    return; /* cannot tell the runtime's code: no per-thread signals */
  int sig = os_interrupt_signal_claim(on_interrupt);
  if (!sig)
    return;
  sigs.worker_keep = ~os_worker_mask();
  sigs.interrupt = sig;
}

static void start_signal_thread(void) {
  if (os_thread_start(&sigs.kthread, signal_main, NULL) != 0) {
    static const char msg[] = "swarm-pthread: no signal thread; "
                              "process-directed signals stay pending\n";
    os_write_stderr(msg, sizeof msg - 1);
  }
}

void dropin_signal_init_late(void) {
  if (!sigs.interrupt || !worker_current())
    return;
  sigs.main = dropin_self();
  sync_wait_interrupted_hook = in_cond_wait;
  atomic_store(&sigs.main->sig_mask, sigs.initial_mask & ~sigs.unblockable);
  if (atomic_load(&sigs.main->sig_mask))
    dropin_masks_used = true;
  os_worker_mask_install(); /* main's kernel thread is worker 0 */
  swarm_preempt_enable(os_worker_mask());
  start_signal_thread();
}

void dropin_signal_exit(struct dropin_thread *r) {
  lock_take();
  uint64_t p = atomic_exchange(&r->sig_pending, 0);
  for (int s = 1; p && s <= NSIG_SWARM; s++)
    if (p & BIT(s)) {
      siginfo_t drop;
      info_take(r, s, &drop);
      atomic_fetch_sub(&sigs.outstanding, 1);
    }
  lock_drop();
}

void dropin_signal_fork_child(void) {
  if (!sigs.interrupt)
    return;
  /* The parent's other threads and its signal thread are gone here. */
  memset(sigs.infos, 0, sizeof sigs.infos);
  memset(sigs.waiters, 0, sizeof sigs.waiters);
  sigs.process_pending = 0;
  sigs.lock = 0;
  atomic_store(&sigs.signal_tid, 0);
  atomic_store(&sigs.signal_kick_queued, 0); /* for a thread not here */
  struct dropin_thread *r = dropin_self();
  atomic_store(&sigs.outstanding,
               __builtin_popcountll(atomic_load(&r->sig_pending)));
  sigs.main = r;
  if (worker_current())
    start_signal_thread();
}

/* The calling swarm thread's mask as a kernel set (for the calls that
 * start processes: process.c); false when the kernel thread's own mask is
 * the caller's (not a swarm thread, or no per-thread signals). */
bool dropin_signal_thread_mask(sigset_t *out) {
  if (!sigs.interrupt || !worker_current())
    return false;
  set_of(atomic_load(&dropin_self()->sig_mask), out);
  return true;
}
