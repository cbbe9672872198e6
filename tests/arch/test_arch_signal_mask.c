/*
 * tests/arch/test_arch_signal_mask.c — a switch never changes the kernel
 * thread's signal mask (arch/context.h): the mask belongs to the kernel
 * thread, and the drop-in keeps the workers' masks itself (every signal
 * blocked but the interrupt signal). Checked for both kinds of switch:
 *   1. into a fresh context, prepared while the kernel thread had another
 *      mask (the portable backend once entered fresh contexts with the mask
 *      of the swarm_arch_prepare call, and so unblocked, on a worker,
 *      signals that main had unblocked when it prepared worker 0's
 *      scheduler context);
 *   2. back into a suspended context, after the mask changed;
 *   3. into a fresh context prepared on another kernel thread, whose mask
 *      differs.
 */
#include "arch_test.h"

#include <pthread.h>
#include <signal.h>

static struct test_stack coro_stack;
static void *main_sp;
static void *coro_sp;
static sigset_t seen_in_coro;

static sigset_t mask_of(int sig) {
  sigset_t s;
  sigemptyset(&s);
  if (sig)
    sigaddset(&s, sig);
  return s;
}

static void set_mask(int sig) {
  sigset_t s = mask_of(sig);
  CHECK(pthread_sigmask(SIG_SETMASK, &s, NULL) == 0);
}

/* Whether the kernel thread's mask blocks exactly `sig` of the three. */
static int mask_is(int sig) {
  sigset_t now;
  CHECK(pthread_sigmask(SIG_SETMASK, NULL, &now) == 0);
  return sigismember(&now, SIGUSR1) == (sig == SIGUSR1) &&
         sigismember(&now, SIGUSR2) == (sig == SIGUSR2) &&
         sigismember(&now, SIGHUP) == (sig == SIGHUP);
}

static void coro_entry(void *transfer) {
  (void)transfer;
  CHECK(pthread_sigmask(SIG_SETMASK, NULL, &seen_in_coro) == 0);
  set_mask(SIGHUP);
  swarm_arch_switch(&coro_sp, main_sp, NULL, NULL);
  CHECK(!"resumed");
}

static void one_thread(void) {
  coro_stack = test_stack_new(64 * 1024);
  set_mask(SIGUSR1);
  coro_sp = swarm_arch_prepare(coro_stack.top, coro_entry);
  set_mask(SIGUSR2);
  swarm_arch_switch(&main_sp, coro_sp, NULL, NULL);
  /* 1: the fresh context ran with the mask of the switch, not of prepare. */
  CHECK(!sigismember(&seen_in_coro, SIGUSR1));
  CHECK(sigismember(&seen_in_coro, SIGUSR2));
  /* 2: the suspended context is resumed with the mask set meanwhile. */
  CHECK(mask_is(SIGHUP));
  test_stack_free(&coro_stack);
}

static void *prepare_elsewhere(void *arg) {
  set_mask(SIGUSR1);
  *(void **)arg = swarm_arch_prepare(coro_stack.top, coro_entry);
  return NULL;
}

static void other_thread(void) {
  coro_stack = test_stack_new(64 * 1024);
  set_mask(0);
  pthread_t t;
  CHECK(pthread_create(&t, NULL, prepare_elsewhere, &coro_sp) == 0);
  CHECK(pthread_join(t, NULL) == 0);
  set_mask(SIGUSR2);
  swarm_arch_switch(&main_sp, coro_sp, NULL, NULL);
  /* 3: the preparing thread's mask did not come along. */
  CHECK(!sigismember(&seen_in_coro, SIGUSR1));
  CHECK(sigismember(&seen_in_coro, SIGUSR2));
  CHECK(mask_is(SIGHUP));
  test_stack_free(&coro_stack);
}

int main(void) {
#if defined(__SANITIZE_ADDRESS__) && defined(SWARM_TEST_CONTEXT_PORTABLE)
  /* ASan cannot follow setcontext onto a hand-made stack ("ASan is ignoring
   * requested __asan_handle_no_return ... False positive error reports may
   * follow"), and its stale stack poison then fails libc calls made there.
   * The plain build runs this variant; the ASan build runs the assembly
   * one. */
  printf("portable backend under ASan: not run (ucontext stacks)\n");
  return 77;
#endif
  one_thread();
  other_thread();
  printf("%s backend: switches leave the signal mask alone\n",
         ARCH_TEST_BACKEND);
  return 0;
}
