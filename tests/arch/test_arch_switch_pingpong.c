/*
 * tests/arch/test_arch_switch_pingpong.c — two contexts switch back and forth
 * many times; every value live across a switch (integers in callee-saved
 * registers, doubles in d8-d15 on AArch64) survives, while the other context
 * fills the same registers with different values; the transfer value of each
 * switch arrives intact.
 */
#include "arch_test.h"

static void *main_sp;
static void *coro_sp;
static long rounds;

/* Many values live across the call force the compiler to keep them in
 * callee-saved registers (integer and, on AArch64, d8-d15). The seeds differ
 * per side so a register the backend forgot to save shows up as a wrong sum. */
static long churn(long seed, long round, void **save, void **to) {
  volatile long v = seed;
  long a = v + 1, b = v * 3, c = v ^ 0x5555, d = v - 7, e = v * v, f = v + 11;
  long g = v * 13, h = v ^ 0x3c3c, i = v + 101, j = v * 17;
  double x0 = (double)v * 0.5, x1 = (double)v + 0.25, x2 = (double)v * 3.5;
  double x3 = (double)v - 9.0, x4 = (double)v * 1.5, x5 = (double)v + 7.75;
  double x6 = (double)v * 0.125, x7 = (double)v - 0.5;
  void *got = swarm_arch_switch(save, *to, NULL, (void *)(round + 1));
  CHECK(got == (void *)(round + 2)); /* what the other side sent */
  CHECK(a == v + 1 && b == v * 3 && c == (v ^ 0x5555) && d == v - 7);
  CHECK(e == v * v && f == v + 11 && g == v * 13 && h == (v ^ 0x3c3c));
  CHECK(i == v + 101 && j == v * 17);
  CHECK(x0 == (double)v * 0.5 && x1 == (double)v + 0.25);
  CHECK(x2 == (double)v * 3.5 && x3 == (double)v - 9.0);
  CHECK(x4 == (double)v * 1.5 && x5 == (double)v + 7.75);
  CHECK(x6 == (double)v * 0.125 && x7 == (double)v - 0.5);
  return a + b + c + d + e + f + g + h + i + j +
         (long)(x0 + x1 + x2 + x3 + x4 + x5 + x6 + x7);
}

static void coro_entry(void *transfer) {
  CHECK(transfer == (void *)1);
  for (long r = 1;; r += 2)
    churn(0x7000 + r, r, &coro_sp, &main_sp);
}

int main(void) {
  rounds = test_scale(1000000);
  struct test_stack stack = test_stack_new(64 * 1024);
  coro_sp = swarm_arch_prepare(stack.top, coro_entry);
  CHECK(coro_sp != NULL);
  for (long r = 0; r < 2 * rounds; r += 2)
    churn(0x100 + r, r, &main_sp, &coro_sp);
  printf("%s backend: %ld round trips OK\n", ARCH_TEST_BACKEND, rounds);
  test_stack_free(&stack);
  return 0;
}
