/* swarm_exit in an inlined child gives its parent back every callee-saved
 * register as it was at the spawn: the exit leaves the child's frames
 * without their epilogues (core/inline.c's unwind point, x86-64's in
 * arch/x86_64.S), so the child first fills those registers with garbage.
 * The parent keeps values live in them across swarm_spawn (checked: see
 * keep()); a plain return of the same child is the control. */
#include <stdint.h>
#include <swarm.h>

#include "check.h"
#include "inline_common.h"

/* Garbage in every callee-saved register (but the frame pointer, which the
 * compiler may own), then swarm_exit: no epilogue restores them. */
static __attribute__((noinline)) void clobber_and_exit(void *result, int exit) {
#if defined(__x86_64__)
  __asm__ volatile("movq $0x5a5a5a5a5a, %%rbx\n\t"
                   "movq $0x5a5a5a5a5b, %%r12\n\t"
                   "movq $0x5a5a5a5a5c, %%r13\n\t"
                   "movq $0x5a5a5a5a5d, %%r14\n\t"
                   "movq $0x5a5a5a5a5e, %%r15"
                   :
                   :
                   : "rbx", "r12", "r13", "r14", "r15");
#elif defined(__aarch64__)
  __asm__ volatile("mov x19, #0x5a5a\n\tmov x20, #0x5a5b\n\t"
                   "mov x21, #0x5a5c\n\tmov x22, #0x5a5d\n\t"
                   "mov x23, #0x5a5e\n\tmov x24, #0x5a5f\n\t"
                   "mov x25, #0x5a60\n\tmov x26, #0x5a61\n\t"
                   "mov x27, #0x5a62\n\tmov x28, #0x5a63\n\t"
                   "fmov d8, x19\n\tfmov d9, x20\n\tfmov d10, x21\n\t"
                   "fmov d11, x22\n\tfmov d12, x23\n\tfmov d13, x24\n\t"
                   "fmov d14, x25\n\tfmov d15, x26"
                   :
                   :
                   : "x19", "x20", "x21", "x22", "x23", "x24", "x25", "x26",
                     "x27", "x28", "d8", "d9", "d10", "d11", "d12", "d13",
                     "d14", "d15");
#endif
  if (exit)
    swarm_exit(result);
}

static const char *child_frame; /* where the last child ran */

static void *exiter(void *arg) {
  char here;
  child_frame = &here;
  clobber_and_exit(arg, 1);
  CHECK(0, "swarm_exit returned");
  return NULL;
}

static void *returner(void *arg) {
  char here;
  child_frame = &here;
  clobber_and_exit(NULL, 0);
  return arg;
}

static volatile uint64_t seed = 0x9e3779b97f4a7c15u;

/* Six values live across swarm_spawn, in callee-saved registers where the
 * compiler has them (it prefers them for values live across a call), each
 * checked against a second computation afterwards. */
static __attribute__((noinline)) void keep(void *(*fn)(void *), int i) {
  uint64_t s = seed + (uint64_t)i;
  uint64_t a = s * 3, b = s ^ 0x1234, c = s + 77, d = s * 5 + 1, e = s >> 3,
           f = ~s;
  /* Opaque: the compiler must keep all six, not recompute them. */
  __asm__ volatile("" : "+r"(a), "+r"(b), "+r"(c), "+r"(d), "+r"(e), "+r"(f));
  swarm_thread_t h;
  void *r = NULL;
  char here;
  child_frame = NULL;
  CHECK_EQ(swarm_spawn(&h, &inline_attr, fn, (void *)(intptr_t)(i + 1)), 0);
  uint64_t s2 = seed + (uint64_t)i;
  CHECK(a == s2 * 3 && b == (s2 ^ 0x1234) && c == s2 + 77 && d == s2 * 5 + 1 &&
            e == s2 >> 3 && f == ~s2,
        "a callee-saved register changed across the inlined child");
  CHECK(inline_on_parent_stack(&here, child_frame), "the child ran inline");
  CHECK_EQ(swarm_join(h, &r), 0);
  CHECK(r == (void *)(intptr_t)(i + 1));
}

static void *runner(void *arg) {
  (void)arg;
  for (int i = 0; i < 200; i++) {
    keep(returner, i);
    keep(exiter, i);
  }
  return NULL;
}

int main(void) {
  inline_setup();
  CHECK_EQ(swarm_init(NULL), 0);
  swarm_thread_t t;
  CHECK_EQ(swarm_spawn(&t, NULL, runner, NULL), 0);
  CHECK_EQ(swarm_join(t, NULL), 0);
  CHECK_EQ(swarm_finalize(), 0);
  TEST_PASS("inline_exit_regs");
  return 0;
}
