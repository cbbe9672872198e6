/*
 * arch/context.h — the machine-dependent context switch, the whole interface
 * between the portable scheduler (core) and the CPU (PPL's "VP layer").
 * Eight functions, declared at the end. A port to a new CPU implements two of
 * them, swarm_arch_switch and swarm_arch_prepare, and nothing else in core
 * changes: start_generic.c builds the other six from those two. A back end
 * may implement any of the six directly to make a hot path shorter
 * (x86_64.S implements all eight; aarch64.S and portable.c, ucontext, the
 * two). The back end is chosen by CMake (-DSWARM_CONTEXT=asm|portable).
 *
 * Contract ("switch, then call", MassiveThreads / Go's gopark):
 *
 *   void *swarm_arch_switch(void **save_sp, void *new_sp,
 *                           void *(*after)(void *), void *arg);
 *
 *   1. saves the callee-saved registers of the running context (and its FP
 *      control state: MXCSR / x87 control word, FPCR) on its own stack and
 *      stores the resulting stack pointer in *save_sp;
 *   2. moves to new_sp, a value stored by an earlier swarm_arch_switch or
 *      returned by swarm_arch_prepare;
 *   3. there, on the new stack, calls after(arg) if `after` is not NULL;
 *   4. resumes the context saved at new_sp. That context sees, as the return
 *      value of its own swarm_arch_switch call (or as the argument of its
 *      entry function when it is fresh), after's return value, or `arg`
 *      itself when `after` is NULL.
 *
 *   Because step 3 runs only once the old context is entirely off its stack,
 *   `after` may publish the old context (push it on a deque, put it in a wait
 *   list, release the lock guarding that list) with no window in which
 *   another worker could resume it while it is still being switched away
 *   from. core relies on this for every park.
 *
 *   *save_sp is written before `after` runs. A context that will never be
 *   resumed may pass a scratch slot.
 *
 *   FP control state is per context: it is always saved, and on resume it is
 *   reloaded only when it differs from the current one (loading MXCSR costs
 *   ~50 ns; comparing costs ~1 ns).
 *
 *   The signal mask is not: it belongs to the kernel thread, and no switch,
 *   into a suspended or a fresh context, changes it (the drop-in keeps its
 *   workers' masks itself: docs/dropin.md, "Signals").
 *
 *   void *swarm_arch_prepare(void *stack_top, void (*entry)(void *));
 *
 *   Builds a fresh context on the stack whose highest address (exclusive) is
 *   stack_top and returns its stack pointer for swarm_arch_switch. When first
 *   switched to, it calls entry(transfer) where transfer is the value of step
 *   4, with FP control state inherited from the context that called
 *   swarm_arch_prepare. entry must never return.
 *
 *   void *swarm_arch_start(void **save_sp, void *stack_top,
 *                          void (*entry)(void *), void *(*after)(void *),
 *                          void *arg);
 *
 *   Exactly swarm_arch_switch(save_sp, swarm_arch_prepare(stack_top, entry),
 *   after, arg) (returning, like it, when the saved context is resumed, the
 *   value its resumer transferred), for the common case of a context that
 *   starts at once (a work-first spawn). A back end may implement it
 *   directly to skip writing and reading back the fresh frame;
 *   start_generic.c implements it from the other two for back ends that do
 *   not.
 *
 *   void *swarm_arch_spawn(void **save_sp, void *stack_top,
 *                          void *(*fn)(void *), void *arg,
 *                          void (*finish)(void *));
 *
 *   swarm_arch_start with no after step, for a fresh context that runs
 *   finish(fn(arg)) (finish must not return) — the work-first spawn's fast
 *   path, without an entry function in between. start_generic.c builds it
 *   from swarm_arch_start, keeping fn, arg and finish at the stack's top.
 *
 *   void *swarm_arch_spawn_core(void **save_sp, void *stack_top,
 *                               void *(*fn)(void *), void *arg);
 *
 *   swarm_arch_spawn(save_sp, stack_top, fn, arg, swarm_thread_finish),
 *   with core's thread end called by name: no pointer to pass in and keep
 *   across fn (core's spawn; dist passes its own finish to
 *   swarm_arch_spawn). start_generic.c builds it from swarm_arch_spawn.
 *
 *   _Noreturn void swarm_arch_resume(void *new_sp, void *(*after)(void *),
 *                                    void *arg);
 *
 *   swarm_arch_switch for a running context that will never resume (a
 *   thread that exits): nothing of it is saved. start_generic.c implements
 *   it as a switch with a scratch save slot.
 *
 *   _Noreturn void swarm_arch_resume_plain(void *new_sp, void *arg);
 *
 *   swarm_arch_resume(new_sp, NULL, arg), without testing for an after
 *   step.
 *
 *   _Noreturn void swarm_arch_resume_publish(void *new_sp, void *arg,
 *                                            _Atomic uint64_t *word);
 *
 *   swarm_arch_resume_plain(new_sp, arg) for a context whose last act is to
 *   say it is done (the exit's fast path): once on the new stack, and only
 *   then, it adds 1 to *word (a fetch_add, acquire-release); if the value
 *   before, old, has a bit of SWARM_ARCH_PUBLISH_NOTIFY set it calls core's
 *   swarm_thread_published(arg, old, word) there, on the new stack, before
 *   resuming. So whoever sees the add may reuse the old stack at once
 *   (core keeps an exited thread's stack with its descriptor until the
 *   join). The mask and the notify are core's, fixed here so that the
 *   exit's fast path passes neither (core.h asserts the mask is its
 *   CTL_WAITER | CTL_DETACHED). start_generic.c builds it from
 *   swarm_arch_resume with an after step.
 *
 * All are called with the stack 16-byte aligned as the ABI says;
 * stack_top must be 16-byte aligned.
 *
 * SWARM_ARCH_PUBLISH_LAST (defined by the build for the assembly back ends):
 * swarm_arch_switch and swarm_arch_start store *save_sp with release order,
 * and that store is the last write the outgoing context makes to its own
 * stack. Whoever reads a non-NULL *save_sp with acquire order may then
 * resume the context, even while the old kernel thread is still executing
 * the few instructions that move it to the new stack. Core uses this to push
 * a spawning parent on its deque before the switch, with thieves waiting for
 * the saved stack pointer (core/spawn.c). The portable back end writes its
 * old stack after *save_sp (siglongjmp) and does not define it.
 *
 * SWARM_ARCH_RESUME_PUBLISH_RAX (below, the x86-64 assembly back end only;
 * optional, not part of the contract): swarm_arch_resume_publish_rax is
 * swarm_arch_resume_publish with arg in rax, the register the exit's fast
 * path has its worker in after the TLS read, and in rcx the object whose
 * word at SWARM_ARCH_PUBLISH_WORD_OFFSET is the one to add to (core's
 * thread descriptor, where the exit has it; new_sp in rdi).
 * That is no C calling convention: core reaches it with a jump from inline
 * assembly (core/spawn.c), which it may since nothing of the jumping
 * frame is ever used again.
 */
#ifndef SWARM_ARCH_CONTEXT_H
#define SWARM_ARCH_CONTEXT_H

/* swarm_arch_resume_publish's mask (an immediate in the assembly). */
#define SWARM_ARCH_PUBLISH_NOTIFY 0xa

/* swarm_arch_resume_publish_rax's offset of the word in its object: core's
 * descriptor's control word (spawn.c asserts). */
#define SWARM_ARCH_PUBLISH_WORD_OFFSET 40

#if defined(__x86_64__) && defined(SWARM_ARCH_PUBLISH_LAST)
#define SWARM_ARCH_RESUME_PUBLISH_RAX 1
#endif

#ifndef __ASSEMBLER__
#include <stdint.h>

void *swarm_arch_switch(void **save_sp, void *new_sp, void *(*after)(void *),
                        void *arg);
void *swarm_arch_prepare(void *stack_top, void (*entry)(void *));
void *swarm_arch_start(void **save_sp, void *stack_top, void (*entry)(void *),
                       void *(*after)(void *), void *arg);
_Noreturn void swarm_arch_resume(void *new_sp, void *(*after)(void *),
                                 void *arg);
_Noreturn void swarm_arch_resume_plain(void *new_sp, void *arg);
_Noreturn void swarm_arch_resume_publish(void *new_sp, void *arg,
                                         _Atomic uint64_t *word);
void *swarm_arch_spawn(void **save_sp, void *stack_top, void *(*fn)(void *),
                       void *arg, void (*finish)(void *));
void *swarm_arch_spawn_core(void **save_sp, void *stack_top,
                            void *(*fn)(void *), void *arg);
/* Core's (spawn.c), called by swarm_arch_spawn_core's fresh context with
 * fn's result; never returns. */
void swarm_thread_finish(void *result) __attribute__((visibility("hidden")));
/* Core's (spawn.c), called by swarm_arch_resume_publish on the new stack
 * when the add found a bit of SWARM_ARCH_PUBLISH_NOTIFY set. */
void swarm_thread_published(void *arg, uint64_t old, _Atomic uint64_t *word)
    __attribute__((visibility("hidden")));
#endif /* __ASSEMBLER__ */

#endif
