/*
 * arch/x86_64.S — context switch for x86-64 (System V ABI). Implements the
 * contract in arch/context.h (all eight functions): save callee-saved registers (rbp, rbx, r12-r15)
 * and the FP control state (MXCSR control bits, x87 control word), switch
 * stacks, call `after(arg)` on the new stack, restore, return.
 *
 * Saved frame, from the saved stack pointer upwards (16-byte aligned):
 *   +0  MXCSR (4 bytes)   +4  x87 control word (2 bytes)   +6 unused
 *   +8  r15  +16 r14  +24 r13  +32 r12  +40 rbx  +48 rbp  +56 return address
 *
 * FP control state is stored on every switch but loaded only when it differs
 * from the running value: ldmxcsr alone costs ~50 ns, a compare ~1. The
 * running value is the one the outgoing context just stored (nothing between
 * the save and the restore changes it), kept in rbx/rbp across the after()
 * call, so it is not read a second time. MXCSR's low six bits are sticky exception
 * flags, not control; they are ignored when comparing.
 *
 * SWARM_ARCH_PUBLISH_LAST (context.h): in swarm_arch_switch and
 * swarm_arch_start the store of the saved stack pointer is the last write
 * to the outgoing stack; x86-64 stores are release stores.
 */
#include "arch/context.h" /* SWARM_ARCH_PUBLISH_NOTIFY */

/* Core's, called by name (context.h). Weak: libswarm-dist links this file
 * without core, and never calls what calls them. */
        .weak   swarm_thread_finish
        .hidden swarm_thread_finish
        .weak   swarm_thread_published
        .hidden swarm_thread_published
        .weak   inline_done
        .hidden inline_done

/* Saves the running context's callee-saved registers and FP control state
 * on its stack (the frame described above, minus the return address the
 * call already pushed). */
        .macro  SAVE_CONTEXT
        pushq   %rbp
        pushq   %rbx
        pushq   %r12
        pushq   %r13
        pushq   %r14
        pushq   %r15
        subq    $8, %rsp
        stmxcsr (%rsp)
        fnstcw  4(%rsp)
        .endm

        .text

        .globl  swarm_arch_switch
        .hidden swarm_arch_switch
        .type   swarm_arch_switch, @function
        .p2align 4
/* void *swarm_arch_switch(void **save_sp (rdi), void *new_sp (rsi),
 *                         void *(*after)(void *) (rdx), void *arg (rcx)) */
swarm_arch_switch:
        .cfi_startproc
        SAVE_CONTEXT
        /* Keep the outgoing FP control in rbx/rbp (both saved above). Two
         * loads sized like the two stores, so both forward from the store
         * buffer; one 8-byte load spanning them would stall ~15 cycles. */
        movl    (%rsp), %ebx
        movzwl  4(%rsp), %ebp
        movq    %rsp, (%rdi)
        /* From here on we are on the new context's stack. */
        movq    %rsi, %rsp
        movq    %rcx, %rax
        testq   %rdx, %rdx
        jz      1f
        movq    %rcx, %rdi
        call    *%rdx               /* rsp 16-byte aligned; rbx/rbp survive */
1:
swarm_arch_restore_internal:
        /* The FP control in force is the outgoing one (rbx/rbp): reload
         * only if the incoming context's differs. MXCSR bits 0-5 are sticky
         * exception flags, not control, and are ignored. */
        movl    (%rsp), %ecx
        xorl    %ebx, %ecx
        testl   $-64, %ecx
        jnz     3f
        movzwl  4(%rsp), %ecx
        cmpl    %ebp, %ecx
        jne     3f
        jmp     2f

/* _Noreturn void swarm_arch_resume_plain(void *new_sp (rdi), void *arg (rsi))
 * swarm_arch_resume(new_sp, NULL, arg), for exits that released their
 * stack themselves; it shares the restore below with
 * swarm_arch_resume_publish (swarm_arch_switch's path takes a jump into
 * it). Nothing is saved; the FP control in force is stored just below the
 * resumed frame (free space of a suspended stack) and compared there,
 * field by field. */
        .globl  swarm_arch_resume_plain
        .hidden swarm_arch_resume_plain
swarm_arch_resume_plain:
        movq    %rdi, %rsp
        movq    %rsi, %rax
        jmp     5f

/* _Noreturn void swarm_arch_resume_publish(void *new_sp (rdi), void *arg (rsi),
 *                                          _Atomic uint64_t *word (rdx))
 * The exit's fast path, so it falls through into the restore: off the old
 * stack first, then the locked add (a full barrier on x86-64), then
 * swarm_arch_resume_plain's check and restore. Core's notify,
 * swarm_thread_published(arg, old, word), runs at the resumed frame's
 * stack pointer (16-byte aligned), like an after step; the resumed
 * context's callee-saved registers are popped afterwards, so rbx may carry
 * arg across the call. */
        .globl  swarm_arch_resume_publish
        .hidden swarm_arch_resume_publish
swarm_arch_resume_publish:
        movq    %rsi, %rax
        leaq    -SWARM_ARCH_PUBLISH_WORD_OFFSET(%rdx), %rcx
/* swarm_arch_resume_publish_rax: the same with arg in rax and, instead of
 * the word, the object it is in, in rcx, the word at
 * SWARM_ARCH_PUBLISH_WORD_OFFSET (new_sp in rdi): where core's exit has
 * them. Not a C calling convention, so core reaches it by a jump from
 * inline assembly (spawn.c). Not part of the switch contract (context.h:
 * SWARM_ARCH_RESUME_PUBLISH_RAX). */
        .globl  swarm_arch_resume_publish_rax
        .hidden swarm_arch_resume_publish_rax
swarm_arch_resume_publish_rax:
        movq    %rdi, %rsp
        movl    $1, %edx
        lock xaddq %rdx, SWARM_ARCH_PUBLISH_WORD_OFFSET(%rcx)
        testb   $SWARM_ARCH_PUBLISH_NOTIFY, %dl
        jnz     4f
5:
        stmxcsr -8(%rsp)
        movl    -8(%rsp), %ecx
        xorl    (%rsp), %ecx
        testl   $-64, %ecx          /* MXCSR control bits; flags ignored */
        jnz     3f
        fnstcw  -8(%rsp)
        movzwl  -8(%rsp), %ecx
        cmpw    4(%rsp), %cx
        jne     3f
2:
        addq    $8, %rsp
        popq    %r15
        popq    %r14
        popq    %r13
        popq    %r12
        popq    %rbx
        popq    %rbp
        ret
3:
        ldmxcsr (%rsp)
        fldcw   4(%rsp)
        jmp     2b
4:                                  /* publish: a joiner or a detach */
        movq    %rax, %rbx
        movq    %rax, %rdi
        movq    %rdx, %rsi
        leaq    SWARM_ARCH_PUBLISH_WORD_OFFSET(%rcx), %rdx
        call    swarm_thread_published /* hidden: a direct call */
        movq    %rbx, %rax
        jmp     5b
        .cfi_endproc
        .size   swarm_arch_switch, .-swarm_arch_switch

        .globl  swarm_arch_resume
        .hidden swarm_arch_resume
        .type   swarm_arch_resume, @function
        .p2align 4
/* _Noreturn void swarm_arch_resume(void *new_sp (rdi),
 *                                  void *(*after)(void *) (rsi), void *arg (rdx))
 * swarm_arch_switch for a context that will never run again: nothing is
 * saved. Without an after step it is swarm_arch_resume_plain; with one,
 * the outgoing FP control is kept in ebx/ebp across the call as in
 * swarm_arch_switch. */
swarm_arch_resume:
        .cfi_startproc
        testq   %rsi, %rsi
        jnz     1f
        movq    %rdx, %rsi
        jmp     swarm_arch_resume_plain
1:
        subq    $8, %rsp
        stmxcsr (%rsp)
        fnstcw  4(%rsp)
        movl    (%rsp), %ebx        /* outgoing FP control, as in switch */
        movzwl  4(%rsp), %ebp
        movq    %rdi, %rsp
        movq    %rdx, %rdi
        call    *%rsi
        jmp     swarm_arch_restore_internal
        .cfi_endproc
        .size   swarm_arch_resume, .-swarm_arch_resume

        .globl  swarm_arch_start
        .hidden swarm_arch_start
        .type   swarm_arch_start, @function
        .p2align 4
/* void *swarm_arch_start(void **save_sp (rdi), void *stack_top (rsi),
 *                        void (*entry)(void *) (rdx),
 *                        void *(*after)(void *) (rcx), void *arg (r8))
 * "Returns" when the saved context is resumed, through the restore path of
 * swarm_arch_switch, with the transferred value in rax.
 * swarm_arch_prepare + swarm_arch_switch in one, for a context that starts
 * now: no frame is written to be read back, no registers are restored, and
 * FP control needs no check (a fresh context inherits it). */
swarm_arch_start:
        .cfi_startproc
        SAVE_CONTEXT
        movq    %rsp, (%rdi)
        movq    %rsi, %rsp          /* the fresh stack; 16-byte aligned */
        movq    %rdx, %r12          /* entry survives the after() call */
        movq    %r8, %rax
        testq   %rcx, %rcx
        jz      swarm_arch_start_entry
        movq    %r8, %rdi
        call    *%rcx
        jmp     swarm_arch_start_entry
        .cfi_endproc
        .size   swarm_arch_start, .-swarm_arch_start

        .type   swarm_arch_start_entry, @function
        .p2align 4
/* Calls entry(transfer) at the bottom of a fresh stack. Its own CFI marks
 * the return address undefined, so unwinders stop here. */
swarm_arch_start_entry:
        .cfi_startproc
        .cfi_undefined rip
        xorl    %ebp, %ebp          /* frame-pointer walks end here too */
        movq    %rax, %rdi
        call    *%r12
        ud2                         /* entry must not return */
        .cfi_endproc
        .size   swarm_arch_start_entry, .-swarm_arch_start_entry

        .globl  swarm_arch_spawn
        .hidden swarm_arch_spawn
        .type   swarm_arch_spawn, @function
        .p2align 4
/* void *swarm_arch_spawn(void **save_sp (rdi), void *stack_top (rsi),
 *                        void *(*fn)(void *) (rdx), void *arg (rcx),
 *                        void (*finish)(void *) (r8))
 * swarm_arch_start without an after step, whose fresh context runs
 * finish(fn(arg)) directly: no entry function in between. */
swarm_arch_spawn:
        .cfi_startproc
        SAVE_CONTEXT
        movq    %rsp, (%rdi)        /* published last (PUBLISH_LAST) */
        movq    %rsi, %rsp          /* the fresh stack; 16-byte aligned */
        /* From here on this is the bottom frame of the new context: its
         * return address is undefined, so unwinders stop here, as at
         * swarm_arch_start_entry. */
        .cfi_undefined rip
        movq    %r8, %r12           /* finish survives the call of fn */
        movq    %rcx, %rdi
        xorl    %ebp, %ebp          /* frame-pointer walks end here too */
        call    *%rdx
        movq    %rax, %rdi
        call    *%r12
        ud2                         /* finish must not return */
        .cfi_endproc
        .size   swarm_arch_spawn, .-swarm_arch_spawn

        .globl  swarm_arch_spawn_core
        .hidden swarm_arch_spawn_core
        .type   swarm_arch_spawn_core, @function
        .p2align 4
/* void *swarm_arch_spawn_core(void **save_sp (rdi), void *stack_top (rsi),
 *                             void *(*fn)(void *) (rdx), void *arg (rcx))
 * swarm_arch_spawn with core's swarm_thread_finish called by name: nothing
 * to pass in or keep across fn (two instructions fewer per spawn). */
swarm_arch_spawn_core:
        .cfi_startproc
        SAVE_CONTEXT
        movq    %rsp, (%rdi)        /* published last (PUBLISH_LAST) */
        movq    %rsi, %rsp          /* the fresh stack; 16-byte aligned */
        .cfi_undefined rip          /* the new context's bottom frame */
        movq    %rcx, %rdi
        xorl    %ebp, %ebp          /* frame-pointer walks end here too */
        call    *%rdx
        movq    %rax, %rdi
        call    swarm_thread_finish /* hidden: a direct call */
        ud2                         /* it never returns */
        .cfi_endproc
        .size   swarm_arch_spawn_core, .-swarm_arch_spawn_core

        .globl  swarm_arch_prepare
        .hidden swarm_arch_prepare
        .type   swarm_arch_prepare, @function
        .p2align 4
/* void *swarm_arch_prepare(void *stack_top (rdi), void (*entry)(void *) (rsi)) */
swarm_arch_prepare:
        .cfi_startproc
        leaq    -64(%rdi), %rax
        stmxcsr (%rax)              /* the child inherits FP control state */
        fnstcw  4(%rax)
        movq    $0, 8(%rax)         /* r15 */
        movq    $0, 16(%rax)        /* r14 */
        movq    $0, 24(%rax)        /* r13 */
        movq    %rsi, 32(%rax)      /* r12 = entry */
        movq    $0, 40(%rax)        /* rbx */
        movq    $0, 48(%rax)        /* rbp = 0 ends frame-pointer walks */
        leaq    swarm_arch_trampoline(%rip), %rcx
        movq    %rcx, 56(%rax)
        ret
        .cfi_endproc
        .size   swarm_arch_prepare, .-swarm_arch_prepare

        .type   swarm_arch_trampoline, @function
        .p2align 4
/* First code a fresh context runs: entry(transfer). rsp is 16-aligned. */
swarm_arch_trampoline:
        .cfi_startproc
        .cfi_undefined rip          /* unwinders stop here */
        movq    %rax, %rdi
        call    *%r12
        ud2                         /* entry must not return */
        .cfi_endproc
        .size   swarm_arch_trampoline, .-swarm_arch_trampoline


        .globl  swarm_arch_inline_run
        .hidden swarm_arch_inline_run
        .type   swarm_arch_inline_run, @function
        .p2align 4
/* int swarm_arch_inline_run(swarm_thread_t *out (rdi), int parent_errno (esi),
 *                           void *(*fn)(void *) (rdx), void *arg (rcx),
 *                           struct worker *w (r8), void **unwind (r9))
 * Not part of the switch contract: core's inline opt-in (core/inline.c).
 * Calls fn(arg) as a plain call on this stack with an unwind point for
 * swarm_arch_inline_unwind: the callee-saved registers are pushed in the
 * switch's frame layout (no FP control: a call keeps none), parent_errno
 * below them (the slot that aligns the stack for the call), and the stack
 * pointer stored in *unwind. fn returns with those registers intact, so
 * the common path never reloads them. Either way it ends with a tail call
 * of core's inline_done(result, parent_errno), whose value it returns.
 * The arguments are where inline_spawn has its own (out and w, unused here,
 * hold their registers so that GCC moves nothing; fn, arg) or can put them
 * without a move (the errno it reads, the parent's sp). */
swarm_arch_inline_run:
        .cfi_startproc
        pushq   %rbp
        .cfi_adjust_cfa_offset 8
        .cfi_rel_offset rbp, 0
        pushq   %rbx
        .cfi_adjust_cfa_offset 8
        .cfi_rel_offset rbx, 0
        pushq   %r12
        .cfi_adjust_cfa_offset 8
        .cfi_rel_offset r12, 0
        pushq   %r13
        .cfi_adjust_cfa_offset 8
        .cfi_rel_offset r13, 0
        pushq   %r14
        .cfi_adjust_cfa_offset 8
        .cfi_rel_offset r14, 0
        pushq   %r15
        .cfi_adjust_cfa_offset 8
        .cfi_rel_offset r15, 0
        pushq   %rsi                /* parent_errno; 16-byte aligned now */
        .cfi_adjust_cfa_offset 8
        movq    %rsp, (%r9)
        movq    %rcx, %rdi
        call    *%rdx
.Linline_returned:                  /* rax: fn's result; rsp as stored */
        movq    %rax, %rdi
        popq    %rsi                /* parent_errno */
        .cfi_adjust_cfa_offset -8
        addq    $48, %rsp
        .cfi_adjust_cfa_offset -48
        .cfi_restore rbp
        .cfi_restore rbx
        .cfi_restore r12
        .cfi_restore r13
        .cfi_restore r14
        .cfi_restore r15
        jmp     inline_done         /* hidden: a direct jump */
        .cfi_endproc
        .size   swarm_arch_inline_run, .-swarm_arch_inline_run

        .globl  swarm_arch_inline_unwind
        .hidden swarm_arch_inline_unwind
        .type   swarm_arch_inline_unwind, @function
        .p2align 4
/* _Noreturn void swarm_arch_inline_unwind(void *sp (rdi), void *result (rsi))
 * Leaves every frame below an unwind point that swarm_arch_inline_run
 * stored (sp) as if its fn had returned result: the callee-saved
 * registers back from the frame, then inline_done(result, parent_errno). */
swarm_arch_inline_unwind:
        .cfi_startproc
        movq    %rdi, %rsp
        movq    8(%rsp), %r15
        movq    16(%rsp), %r14
        movq    24(%rsp), %r13
        movq    32(%rsp), %r12
        movq    40(%rsp), %rbx
        movq    48(%rsp), %rbp
        movq    %rsi, %rax
        jmp     .Linline_returned
        .cfi_endproc
        .size   swarm_arch_inline_unwind, .-swarm_arch_inline_unwind

        .section .note.GNU-stack,"",@progbits
