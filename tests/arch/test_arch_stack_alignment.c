/*
 * tests/arch/test_arch_stack_alignment.c — the stack is aligned as the ABI
 * requires (16 bytes on every CPU we check) wherever the backend hands over
 * control: at a fresh context's entry, inside after(), and after a resume;
 * for stack tops at every 16-byte offset within a 64-byte line, with an
 * inaccessible page right above stack_top (a backend writing above
 * stack_top faults) and a 16 KiB stack (nothing assumes a large one).
 * The check reads the frame pointer of the function itself, so the compiler
 * cannot assume it away.
 */
#include "arch_test.h"

#ifndef TEST_HAVE_FRAME_ALIGNED
int main(void) {
  printf("SKIP: frame layout of this CPU unknown to the test\n");
  return TEST_SKIP;
}
#else

static void *main_sp;
static void *coro_sp;
static struct test_stack stack;
static int checks;

__attribute__((noinline)) static void check_aligned_here(void) {
  CHECK(TEST_FRAME_ALIGNED());
  checks++;
}

static void *after_check(void *arg) {
  CHECK(TEST_FRAME_ALIGNED());
  check_aligned_here();
  return arg;
}

static void coro_entry(void *transfer) {
  CHECK(TEST_FRAME_ALIGNED());
  char here = 0;
  CHECK(test_on_stack(&stack, &here));
  check_aligned_here();
  for (;;) {
    swarm_arch_switch(&coro_sp, main_sp, after_check, transfer);
    CHECK(TEST_FRAME_ALIGNED());
    check_aligned_here();
  }
}

int main(void) {
  for (int offset = 0; offset < 64; offset += 16) {
    stack = test_stack_new(16 * 1024);
    coro_sp = swarm_arch_prepare(stack.top - offset, coro_entry);
    for (int i = 0; i < 3; i++) {
      swarm_arch_switch(&main_sp, coro_sp, after_check, NULL);
      check_aligned_here();
    }
    test_stack_free(&stack);
  }
  CHECK(checks == 4 * 12); /* per stack top: 3 round trips of 4 checks */
  printf("%s backend: stack 16-byte aligned at entry, in after(), on resume "
         "(%d checks)\n",
         ARCH_TEST_BACKEND, checks);
  return 0;
}
#endif
