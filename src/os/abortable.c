/*
 * os/abortable.c — a blocking system call that another kernel thread can
 * abandon before the kernel completes it, and never after: the wait for
 * any child (wait4, waitid), which has no file descriptor to poll beside
 * an eventfd, made cancellable (pthread/blocking.c).
 *
 * The call is one instruction in a stub written here in assembly:
 *     check:   load *flag; if nonzero, go to aborted
 *     trap:    syscall (x86_64) / svc 0 (aarch64)
 *              return the kernel's result
 *     aborted: return -EINTR
 * The aborter stores *flag = 1, then sends the runtime's interrupt signal
 * to the kernel thread in the call (os_thread_signal). That signal's
 * handler is SA_RESTART, so a blocked wait4 is not ended by it: the kernel
 * rewinds the program counter onto `trap` to restart the call after the
 * handler. The handler calls os_abortable_fixup, which, when the
 * interrupted counter lies in [check, trap] and *flag is set, moves it to
 * `aborted`. So:
 *  - flag stored before `check` runs: the stub sees it and never traps;
 *  - signal delivered between `check` and `trap`, or during the call (the
 *    kernel rewound it onto `trap`): the fixup abandons it; the call had
 *    no effect, so no child's status is lost;
 *  - the call completed (the counter is past `trap`): the result stands,
 *    whatever the flag says, and the caller sees it.
 * The register that holds flag's address (x86_64 r12, aarch64 x9) is one
 * the kernel keeps across the call, so the handler reads it there.
 *
 * Other architectures have no stub: os_abortable_syscall returns
 * -ENOSYS and callers make the call uncancellably.
 */
#include <errno.h>
#include <stdint.h>
#include <ucontext.h>

#include "os/os.h"

#if defined(__x86_64__)
/* (flag rdi, nr rsi, a rdx, b rcx, c r8, d r9, e on the stack) */
__asm__(".text\n"
        ".globl os_abortable_syscall\n"
        ".hidden os_abortable_syscall\n"
        ".type os_abortable_syscall,@function\n"
        "os_abortable_syscall:\n"
        "  .cfi_startproc\n"
        "  pushq %r12\n"
        "  .cfi_adjust_cfa_offset 8\n"
        "  .cfi_rel_offset %r12, 0\n"
        "  movq %rdi, %r12\n"
        "  movq %rsi, %rax\n"
        "  movq %rdx, %rdi\n"
        "  movq %rcx, %rsi\n"
        "  movq %r8, %rdx\n"
        "  movq %r9, %r10\n"
        "  movq 16(%rsp), %r8\n"
        "os_abortable_check:\n"
        "  movl (%r12), %ecx\n"
        "  testl %ecx, %ecx\n"
        "  jnz os_abortable_aborted\n"
        "os_abortable_trap:\n"
        "  syscall\n"
        "  popq %r12\n"
        "  .cfi_adjust_cfa_offset -8\n"
        "  .cfi_restore %r12\n"
        "  ret\n"
        "  .cfi_adjust_cfa_offset 8\n"
        "  .cfi_rel_offset %r12, 0\n"
        "os_abortable_aborted:\n"
        "  movq $-4, %rax\n" /* -EINTR */
        "  popq %r12\n"
        "  .cfi_adjust_cfa_offset -8\n"
        "  .cfi_restore %r12\n"
        "  ret\n"
        "  .cfi_endproc\n"
        ".size os_abortable_syscall, .-os_abortable_syscall\n");
#define HAVE_STUB 1
#define FLAG_REG(uc) ((uc)->uc_mcontext.gregs[REG_R12])
#define PC_REG(uc) ((uc)->uc_mcontext.gregs[REG_RIP])
#elif defined(__aarch64__)
/* (flag x0, nr x1, a..e x2..x6) */
__asm__(".text\n"
        ".globl os_abortable_syscall\n"
        ".hidden os_abortable_syscall\n"
        ".type os_abortable_syscall,%function\n"
        "os_abortable_syscall:\n"
        "  .cfi_startproc\n"
        "  mov x9, x0\n"
        "  mov x8, x1\n"
        "  mov x0, x2\n"
        "  mov x1, x3\n"
        "  mov x2, x4\n"
        "  mov x3, x5\n"
        "  mov x4, x6\n"
        "os_abortable_check:\n"
        "  ldr w10, [x9]\n"
        "  cbnz w10, os_abortable_aborted\n"
        "os_abortable_trap:\n"
        "  svc 0\n"
        "  ret\n"
        "os_abortable_aborted:\n"
        "  mov x0, #-4\n" /* -EINTR */
        "  ret\n"
        "  .cfi_endproc\n"
        ".size os_abortable_syscall, .-os_abortable_syscall\n");
#define HAVE_STUB 1
#define FLAG_REG(uc) ((uc)->uc_mcontext.regs[9])
#define PC_REG(uc) ((uc)->uc_mcontext.pc)
#endif

#ifdef HAVE_STUB
extern const char os_abortable_check[], os_abortable_trap[],
    os_abortable_aborted[];
#else
long os_abortable_syscall(const int *flag, long nr, long a, long b, long c,
                          long d, long e) {
  (void)flag, (void)nr, (void)a, (void)b, (void)c, (void)d, (void)e;
  return -ENOSYS;
}
#endif

bool os_abortable_fixup(void *ucontext) {
#ifdef HAVE_STUB
  ucontext_t *uc = ucontext;
  uintptr_t pc = (uintptr_t)PC_REG(uc);
  if (pc < (uintptr_t)os_abortable_check || pc > (uintptr_t)os_abortable_trap)
    return false;
  const int *flag = (const int *)(uintptr_t)FLAG_REG(uc);
  if (!__atomic_load_n(flag, __ATOMIC_SEQ_CST))
    return false; /* another interruption: the call goes on */
  PC_REG(uc) = (uintptr_t)os_abortable_aborted;
  return true;
#else
  (void)ucontext;
  return false;
#endif
}
