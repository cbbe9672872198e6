/*
 * arch/portable.c — the context switch for any CPU without an assembly
 * backend (-DSWARM_CONTEXT=portable). Same contract as arch/context.h; plain
 * POSIX C, no assembly.
 *
 * Design. A context is a `struct portable_context` record living on the
 * context's own stack; the "stack pointer" that swarm_arch_switch stores in
 * *save_sp and takes as new_sp is the address of that record (core treats it
 * as opaque, so any pointer into the stack will do).
 *   - A suspended context's record is a local of its swarm_arch_switch frame
 *     and holds a sigjmp_buf filled by sigsetjmp(env, 0).
 *   - A fresh context's record sits just below stack_top and holds a
 *     ucontext_t built by getcontext + makecontext: the only way POSIX offers
 *     to move onto a stack that has never run. It is entered once with
 *     setcontext; from then on the context switches with sigsetjmp /
 *     siglongjmp like every other.
 * Signal mask: the kernel thread's, never the context's (context.h). No
 * switch saves or loads it: sigsetjmp is called with savemask = 0, and the
 * ucontext_t is built by getcontext at the first entry, on the kernel thread
 * that enters, right before setcontext, so setcontext loads back the mask it
 * found. (Built at prepare, it carried the preparer's mask onto whichever
 * kernel thread later started the context: main's mask onto a drop-in
 * worker, which must keep every signal but the interrupt blocked.)
 * Invariant: a record's `after`/`arg` fields are written only by the context
 * that is about to resume it, immediately before the jump, and read only by
 * the resumed context, on its own stack — so after(arg) runs on the new stack
 * once the old context's registers are in its sigjmp_buf, and the transfer
 * value is computed in C on the resuming side, as the contract requires.
 *
 * Rejected alternatives:
 *   - swapcontext for every switch: it saves and restores the signal mask,
 *     one rt_sigprocmask system call per switch (docs/portability.md has the
 *     measured cost). sigsetjmp with savemask = 0 and siglongjmp make no
 *     system call; only the first entry into a fresh context pays two
 *     (getcontext and setcontext each read or load the mask).
 *   - Re-using a stack's bootstrap frame across threads (PPL's one-time
 *     bootstrap per stack): it saves those calls on a reused stack but relies
 *     on core never writing below stack_top between two uses, a rule
 *     context.h does not state.
 *
 * FP control state: C exposes the rounding mode (fegetround) and, on glibc,
 * the trap enables (fegetexcept). Both are saved on every switch and set
 * back on resume only when they differ. Non-standard modes (x86 DAZ/FTZ,
 * AArch64 FZ/DN) are not carried by this backend. A fresh context inherits
 * the preparer's rounding mode and traps from its record, saved at prepare
 * and re-applied by portable_boot (setcontext loads the FP environment of
 * the entering context first).
 *
 * Limits: glibc mangles the pointers in a jmp_buf with a per-process key, so
 * a suspended context can move between kernel threads of one process (the
 * key is shared) but not between processes (src/dist needs the asm
 * backends). A process running with CET shadow stacks cannot use siglongjmp
 * between stacks; such a process must use the asm backend.
 */
/* _FORTIFY_SOURCE turns siglongjmp into __longjmp_chk, which rejects a jump
 * to a different stack ("longjmp causes uninitialized stack frame"). */
#undef _FORTIFY_SOURCE
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* fegetexcept, feenableexcept */
#endif
#include "arch/context.h"

#include <fenv.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <ucontext.h>

/* makecontext writes its frame just below the top of uc_stack and never
 * touches the rest; the context only needs to know where its stack ends, not
 * how deep it is (that is core's business, with its guard page). */
enum { PORTABLE_NOMINAL_STACK = 16384 };

enum portable_state { PORTABLE_SUSPENDED = 1, PORTABLE_FRESH = 2 };

struct portable_fp {
  int round;
  int traps; /* -1 where the C library cannot report them */
};

/* What every context has; a suspended context's lives in its
 * swarm_arch_switch frame. */
struct portable_context {
  sigjmp_buf env;                  /* valid when state == PORTABLE_SUSPENDED */
  int state;                       /* enum portable_state */
  struct portable_fp fp;           /* FP control state to run with */
  void *(*volatile after)(void *); /* written by the resumer */
  void *volatile arg;              /* written by the resumer */
};

/* A context that has never run: the record plus what boots it. Sits just
 * below stack_top; the context's frames grow below it. */
struct portable_fresh {
  struct portable_context context;
  void (*entry)(void *);
  ucontext_t boot;
};

static inline void portable_fp_save(struct portable_fp *fp) {
  fp->round = fegetround();
#ifdef __GLIBC__
  fp->traps = fegetexcept();
#else
  fp->traps = -1;
#endif
}

static inline void portable_fp_restore(const struct portable_fp *want) {
  if (fegetround() != want->round)
    fesetround(want->round);
#ifdef __GLIBC__
  if (want->traps >= 0) {
    int now = fegetexcept();
    if (now != want->traps) {
      fedisableexcept(now & ~want->traps);
      feenableexcept(want->traps & ~now);
    }
  }
#endif
}

/* The resumed side of a switch, on the resumed context's own stack. */
static inline void *portable_arrive(struct portable_context *self) {
  void *(*after)(void *) = self->after;
  void *transfer = self->arg;
  if (after != NULL)
    transfer = after(transfer);
  return transfer;
}

/* First code a fresh context runs (via setcontext). makecontext passes int
 * arguments only, so the record's address arrives split in two halves. */
static void portable_boot(unsigned int lo, unsigned int hi) {
  uintptr_t addr = ((uintptr_t)hi << 16 << 16) | (uintptr_t)lo;
  struct portable_fresh *self = (struct portable_fresh *)addr;
  void *transfer = portable_arrive(&self->context);
  portable_fp_restore(&self->context.fp);
  self->entry(transfer);
  abort(); /* entry must not return */
}

void *swarm_arch_prepare(void *stack_top, void (*entry)(void *)) {
  uintptr_t top = (uintptr_t)stack_top;
  uintptr_t rec = (top - sizeof(struct portable_fresh)) & ~(uintptr_t)63;
  struct portable_fresh *fresh = (struct portable_fresh *)rec;
  fresh->context.state = PORTABLE_FRESH;
  fresh->context.after = NULL;
  fresh->context.arg = NULL;
  portable_fp_save(&fresh->context.fp);
  fresh->entry = entry;
  return &fresh->context; /* boot is built on first entry: portable_enter */
}

/* Enters a fresh context. getcontext runs here, on the kernel thread that
 * switches, not in swarm_arch_prepare: setcontext loads the signal mask
 * getcontext saw, and a switch must leave the kernel thread's mask as it is
 * (a context may be prepared by one kernel thread, with its mask, and
 * started on another, or after the mask changed). */
static _Noreturn void portable_enter(struct portable_fresh *fresh) {
  uintptr_t rec = (uintptr_t)fresh;
  if (getcontext(&fresh->boot) != 0)
    abort();
  /* The fresh context's stack ends below its record (rec is 64-aligned);
   * makecontext aligns the entry frame as the ABI requires. */
  fresh->boot.uc_stack.ss_sp = (char *)rec - PORTABLE_NOMINAL_STACK;
  fresh->boot.uc_stack.ss_size = PORTABLE_NOMINAL_STACK;
  fresh->boot.uc_link = NULL;
  makecontext(&fresh->boot, (void (*)(void))portable_boot, 2,
              (unsigned int)(rec & 0xffffffffu),
              (unsigned int)((uint64_t)rec >> 32));
  setcontext(&fresh->boot);
  abort(); /* setcontext returns only on failure */
}

void *swarm_arch_switch(void **save_sp, void *new_sp, void *(*after)(void *),
                        void *arg) {
  struct portable_context self;
  struct portable_context *next = new_sp;
  self.state = PORTABLE_SUSPENDED;
  portable_fp_save(&self.fp);
  if (sigsetjmp(self.env, 0) != 0) {
    /* Resumed, on our own stack: run after() here, then our FP state. */
    void *transfer = portable_arrive(&self);
    portable_fp_restore(&self.fp);
    return transfer;
  }
  *save_sp = &self;
  /* `next` is suspended or fresh and nobody else may resume it (core's
   * one-owner rule), so its record is ours to write until we jump. */
  next->after = after;
  next->arg = arg;
  if (next->state == PORTABLE_SUSPENDED)
    siglongjmp(next->env, 1);
  /* Fresh: the record is the first member of its portable_fresh. */
  portable_enter((struct portable_fresh *)next);
}
