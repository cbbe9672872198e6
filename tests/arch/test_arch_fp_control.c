/*
 * tests/arch/test_arch_fp_control.c — FP control state is per context:
 *   - a context that changes the rounding mode does not leak it into the
 *     context it switches to, and finds its own mode again when resumed;
 *   - a fresh context starts with the mode of the context that called
 *     swarm_arch_prepare, as it was at that call;
 *   - (asm backends) the non-standard control bits too: MXCSR's FTZ/DAZ and
 *     the x87 precision control on x86-64, FPCR.FZ on AArch64.
 * Rounding is checked both with fegetround and by arithmetic.
 */
#include "arch_test.h"

#include <fenv.h>

static void *main_sp;
static void *coro_sp;
static void *scratch_sp;

/* The rounding actually applied, by arithmetic: 1/3 rounds down to nearest
 * and upward to above it, so 3 * (1/3) lands above 1 only when rounding up,
 * below 1 only when rounding down or toward zero, on 1 when to nearest. */
static int arith_mode(void) {
  volatile double one = 1.0, three = 3.0;
  volatile double q = one / three;
  volatile double p = q * three;
  return p > one ? +1 : p < one ? -1 : 0;
}

/* A control bit outside C's view, read and written by the backend's CPU. */
#if !defined(SWARM_TEST_CONTEXT_PORTABLE) && defined(__x86_64__)
#include <xmmintrin.h>
#define HAVE_EXTRA_BITS 1
static unsigned extra_get(void) {
  unsigned short cw;
  __asm__ volatile("fnstcw %0" : "=m"(cw));
  return (_mm_getcsr() & 0x8040u) | ((unsigned)(cw & 0x0300u) << 16);
}
static void extra_set(unsigned bits) {
  _mm_setcsr((_mm_getcsr() & ~0x8040u) | (bits & 0x8040u));
  unsigned short cw;
  __asm__ volatile("fnstcw %0" : "=m"(cw));
  cw = (unsigned short)((cw & ~0x0300u) | ((bits >> 16) & 0x0300u));
  __asm__ volatile("fldcw %0" : : "m"(cw));
}
static const unsigned extra_on = 0x8040u | (0x0200u << 16); /* FTZ DAZ PC53 */
static const unsigned extra_off = 0x0300u << 16;            /* PC64 default */
#elif !defined(SWARM_TEST_CONTEXT_PORTABLE) && defined(__aarch64__)
#define HAVE_EXTRA_BITS 1
static unsigned extra_get(void) {
  unsigned long fpcr;
  __asm__ volatile("mrs %0, fpcr" : "=r"(fpcr));
  return (unsigned)(fpcr & (1ul << 24)); /* FZ */
}
static void extra_set(unsigned bits) {
  unsigned long fpcr;
  __asm__ volatile("mrs %0, fpcr" : "=r"(fpcr));
  fpcr = (fpcr & ~(1ul << 24)) | (bits & (1ul << 24));
  __asm__ volatile("msr fpcr, %0" : : "r"(fpcr));
}
static const unsigned extra_on = 1u << 24;
static const unsigned extra_off = 0;
#endif

static void coro_entry(void *transfer) {
  (void)transfer;
  /* Prepared while main was in FE_DOWNWARD; main is now FE_TONEAREST. */
  CHECK(fegetround() == FE_DOWNWARD);
  CHECK(arith_mode() == -1);
  CHECK(fesetround(FE_UPWARD) == 0);
#ifdef HAVE_EXTRA_BITS
  CHECK(extra_get() == extra_off);
  extra_set(extra_on);
#endif
  for (;;) {
    swarm_arch_switch(&coro_sp, main_sp, NULL, NULL);
    CHECK(fegetround() == FE_UPWARD);
    CHECK(arith_mode() == +1);
#ifdef HAVE_EXTRA_BITS
    CHECK(extra_get() == extra_on);
#endif
  }
}

static void fresh_entry(void *transfer) {
  (void)transfer;
  CHECK(fegetround() == FE_TOWARDZERO);
  CHECK(arith_mode() == -1);
#ifdef HAVE_EXTRA_BITS
  CHECK(extra_get() == extra_on); /* inherited from main at prepare */
  extra_set(extra_off);
#endif
  CHECK(fesetround(FE_UPWARD) == 0);
  swarm_arch_switch(&scratch_sp, main_sp, NULL, NULL);
  CHECK(!"resumed an abandoned context");
}

int main(void) {
  struct test_stack s1 = test_stack_new(64 * 1024);
  struct test_stack s2 = test_stack_new(64 * 1024);
  CHECK(fegetround() == FE_TONEAREST);
#ifdef HAVE_EXTRA_BITS
  extra_set(extra_off);
#endif

  CHECK(fesetround(FE_DOWNWARD) == 0);
  coro_sp = swarm_arch_prepare(s1.top, coro_entry);
  CHECK(fesetround(FE_TONEAREST) == 0);
  for (int i = 0; i < 1000; i++) {
    swarm_arch_switch(&main_sp, coro_sp, NULL, NULL);
    CHECK(fegetround() == FE_TONEAREST);
    CHECK(arith_mode() == 0);
#ifdef HAVE_EXTRA_BITS
    CHECK(extra_get() == extra_off);
#endif
    /* A mode main sets while coro is suspended is main's alone. */
    CHECK(fesetround(i % 2 ? FE_TONEAREST : FE_DOWNWARD) == 0);
    swarm_arch_switch(&main_sp, coro_sp, NULL, NULL);
    CHECK(fegetround() == (i % 2 ? FE_TONEAREST : FE_DOWNWARD));
    CHECK(fesetround(FE_TONEAREST) == 0);
  }

  CHECK(fesetround(FE_TOWARDZERO) == 0);
#ifdef HAVE_EXTRA_BITS
  extra_set(extra_on);
#endif
  void *fresh_sp = swarm_arch_prepare(s2.top, fresh_entry);
  CHECK(fesetround(FE_TONEAREST) == 0);
#ifdef HAVE_EXTRA_BITS
  extra_set(extra_off);
#endif
  /* The fresh context inherits what main had at prepare, not what it has
   * now: switch in with TONEAREST, expect TOWARDZERO inside. */
  swarm_arch_switch(&main_sp, fresh_sp, NULL, NULL);
  CHECK(fegetround() == FE_TONEAREST);
  CHECK(arith_mode() == 0);
#ifdef HAVE_EXTRA_BITS
  CHECK(extra_get() == extra_off);
#endif

#ifdef HAVE_EXTRA_BITS
  printf("%s backend: rounding mode and extra control bits per context OK\n",
         ARCH_TEST_BACKEND);
#else
  printf("%s backend: rounding mode per context OK (backend carries no "
         "non-standard control bits)\n",
         ARCH_TEST_BACKEND);
#endif
  test_stack_free(&s1);
  test_stack_free(&s2);
  return 0;
}
