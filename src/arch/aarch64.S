/*
 * arch/aarch64.S — context switch for 64-bit ARM (AAPCS64, Linux). Implements
 * the contract in arch/context.h: save the callee-saved state (x19-x28, fp =
 * x29, lr = x30, the low halves d8-d15 of v8-v15, and FPCR), switch stacks,
 * call `after(arg)` on the new stack, restore, return after's result.
 *
 * Saved frame, from the saved stack pointer upwards (176 bytes, so sp stays
 * 16-byte aligned as AArch64 requires for every sp-based access):
 *   +0   x19 x20   +16  x21 x22   +32  x23 x24   +48  x25 x26   +64 x27 x28
 *   +80  x29 x30   +96  d8  d9    +112 d10 d11   +128 d12 d13   +144 d14 d15
 *   +160 FPCR (8 bytes)           +168 unused
 *
 * FPCR (rounding mode, flush-to-zero, default-NaN, trap enables) is stored on
 * every switch and written back only when it differs from the running value:
 * an MSR to FPCR is context-synchronising on many cores and costs far more
 * than an MRS and a compare. FPSR holds only the sticky exception flags, which
 * the AAPCS64 does not treat as part of a call's preserved state, so it is
 * neither saved nor restored (the x86-64 backend likewise ignores MXCSR's
 * flag bits when comparing).
 *
 * A fresh context (swarm_arch_prepare) is a frame whose x30 is the trampoline
 * and whose x19 is `entry`; restoring it and executing `ret` lands in the
 * trampoline with x0 = the transfer value and sp = stack_top. x29 = 0 ends
 * frame-pointer walks and the trampoline's CFI marks the return address
 * undefined, so DWARF unwinders (gdb, libgcc, perf) stop there.
 *
 * Both entry points begin with `bti c` (a NOP without FEAT_BTI) so that they
 * remain valid indirect-branch targets in a BTI-enabled process; the
 * trampoline is reached by `ret`, which BTI does not check.
 */
        .text

/* The saved frame's registers (layout above): all of them stored at sp,
 * and all but fp and lr (x29, x30 at +80, which each user loads where it
 * needs them) loaded back. */
        .macro SAVE_CALLEE_SAVED
        stp     x19, x20, [sp, #0]
        stp     x21, x22, [sp, #16]
        stp     x23, x24, [sp, #32]
        stp     x25, x26, [sp, #48]
        stp     x27, x28, [sp, #64]
        stp     x29, x30, [sp, #80]
        stp     d8, d9, [sp, #96]
        stp     d10, d11, [sp, #112]
        stp     d12, d13, [sp, #128]
        stp     d14, d15, [sp, #144]
        .endm

        .macro LOAD_CALLEE_SAVED
        ldp     x19, x20, [sp, #0]
        ldp     x21, x22, [sp, #16]
        ldp     x23, x24, [sp, #32]
        ldp     x25, x26, [sp, #48]
        ldp     x27, x28, [sp, #64]
        ldp     d8, d9, [sp, #96]
        ldp     d10, d11, [sp, #112]
        ldp     d12, d13, [sp, #128]
        ldp     d14, d15, [sp, #144]
        .endm

        .globl  swarm_arch_switch
        .hidden swarm_arch_switch
        .type   swarm_arch_switch, %function
        .p2align 4
/* void *swarm_arch_switch(void **save_sp (x0), void *new_sp (x1),
 *                         void *(*after)(void *) (x2), void *arg (x3)) */
swarm_arch_switch:
        .cfi_startproc
        hint    #34                 /* bti c */
        sub     sp, sp, #176
        .cfi_def_cfa_offset 176
        SAVE_CALLEE_SAVED
        .cfi_offset x29, -96
        .cfi_offset x30, -88
        mrs     x9, fpcr
        str     x9, [sp, #160]
        mov     x9, sp
        /* *save_sp, before after() runs; release: the frame above is
         * visible to whoever acquires it (SWARM_ARCH_PUBLISH_LAST). */
        stlr    x9, [x0]
        /* From here on we are on the new context's stack. Its saved frame
         * has the same layout, so the CFI above stays true: an unwinder
         * stopped inside after() walks into the context being resumed (or
         * stops at the trampoline of a fresh one). */
        mov     sp, x1
        mov     x0, x3              /* transfer = arg ... */
        cbz     x2, 1f
        blr     x2                  /* ... or after(arg); sp 16-aligned */
1:
        /* Reload FPCR only if it differs. x0 holds the transfer value;
         * x9/x10 are caller-saved scratch. */
        ldr     x9, [sp, #160]
        mrs     x10, fpcr
        cmp     x9, x10
        b.ne    3f
2:
        LOAD_CALLEE_SAVED
        ldp     x29, x30, [sp, #80]
        .cfi_remember_state
        add     sp, sp, #176
        .cfi_def_cfa_offset 0
        .cfi_restore x29
        .cfi_restore x30
        ret
        .cfi_restore_state
3:
        msr     fpcr, x9
        b       2b
        .cfi_endproc
        .size   swarm_arch_switch, .-swarm_arch_switch

        .globl  swarm_arch_prepare
        .hidden swarm_arch_prepare
        .type   swarm_arch_prepare, %function
        .p2align 4
/* void *swarm_arch_prepare(void *stack_top (x0), void (*entry)(void *) (x1)) */
swarm_arch_prepare:
        .cfi_startproc
        hint    #34                 /* bti c */
        sub     x0, x0, #176
        stp     x1, xzr, [x0, #0]   /* x19 = entry, x20 */
        stp     xzr, xzr, [x0, #16]
        stp     xzr, xzr, [x0, #32]
        stp     xzr, xzr, [x0, #48]
        stp     xzr, xzr, [x0, #64]
        adr     x9, swarm_arch_trampoline
        stp     xzr, x9, [x0, #80]  /* x29 = 0 ends frame walks; x30 */
        stp     xzr, xzr, [x0, #96]
        stp     xzr, xzr, [x0, #112]
        stp     xzr, xzr, [x0, #128]
        stp     xzr, xzr, [x0, #144]
        mrs     x9, fpcr            /* the child inherits FP control state */
        stp     x9, xzr, [x0, #160]
        ret
        .cfi_endproc
        .size   swarm_arch_prepare, .-swarm_arch_prepare

        .type   swarm_arch_trampoline, %function
        .p2align 4
/* First code a fresh context runs: entry(transfer), with x0 = transfer,
 * x19 = entry and sp = stack_top (16-byte aligned). */
swarm_arch_trampoline:
        .cfi_startproc
        .cfi_undefined x30          /* unwinders stop here */
        blr     x19
        brk     #0x5a               /* entry must not return */
        .cfi_endproc
        .size   swarm_arch_trampoline, .-swarm_arch_trampoline


/* Core's inline_done (core/inline.c), reached by name. Weak: libswarm-dist
 * links this file without core, and never calls what calls it. */
        .weak   inline_done
        .hidden inline_done

        .globl  swarm_arch_inline_run
        .hidden swarm_arch_inline_run
        .type   swarm_arch_inline_run, %function
        .p2align 4
/* int swarm_arch_inline_run(swarm_thread_t *out (x0, unused),
 *                           int parent_errno (w1), void *(*fn)(void *) (x2),
 *                           void *arg (x3), struct worker *w (x4, unused),
 *                           void **unwind (x5))
 * Not part of the switch contract: core's inline opt-in (core/inline.c).
 * Calls fn(arg) as a plain call on this stack with an unwind point for
 * swarm_arch_inline_unwind: the callee-saved registers stored in the
 * switch's frame layout (no FPCR: a call keeps none), parent_errno above
 * them, and sp stored in *unwind. fn returns with x19-x28, d8-d15 and fp
 * intact, so the common path reloads only fp and lr. Either way it ends
 * with a tail call of core's inline_done(result, parent_errno), whose value
 * it returns. */
swarm_arch_inline_run:
        .cfi_startproc
        hint    #34                 /* bti c */
        sub     sp, sp, #176
        .cfi_def_cfa_offset 176
        SAVE_CALLEE_SAVED
        .cfi_offset x29, -96
        .cfi_offset x30, -88
        str     w1, [sp, #160]
        mov     x9, sp
        str     x9, [x5]
        mov     x0, x3
        blr     x2
.Linline_returned:                  /* x0: fn's result; sp as stored */
        ldp     x29, x30, [sp, #80]
        ldr     w1, [sp, #160]
        add     sp, sp, #176
        .cfi_def_cfa_offset 0
        .cfi_restore x29
        .cfi_restore x30
        b       inline_done         /* hidden: a direct branch */
        .cfi_endproc
        .size   swarm_arch_inline_run, .-swarm_arch_inline_run

        .globl  swarm_arch_inline_unwind
        .hidden swarm_arch_inline_unwind
        .type   swarm_arch_inline_unwind, %function
        .p2align 4
/* _Noreturn void swarm_arch_inline_unwind(void *sp (x0), void *result (x1))
 * Leaves every frame below an unwind point that swarm_arch_inline_run
 * stored (sp) as if its fn had returned result: the callee-saved
 * registers back from the frame, then inline_done(result, parent_errno). */
swarm_arch_inline_unwind:
        .cfi_startproc
        hint    #34                 /* bti c */
        mov     sp, x0
        LOAD_CALLEE_SAVED
        mov     x0, x1
        b       .Linline_returned
        .cfi_endproc
        .size   swarm_arch_inline_unwind, .-swarm_arch_inline_unwind

        .section .note.GNU-stack,"",%progbits
