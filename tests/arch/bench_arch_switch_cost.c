/*
 * tests/arch/bench_arch_switch_cost.c — what a context switch costs with the
 * backend this binary is linked with, and, for reference, glibc's
 * swapcontext on the same machine. Prints ns per one-way switch for:
 *   switch        ping-pong, after == NULL
 *   switch+after  ping-pong, a trivial after() on every switch
 *   fresh         prepare + first switch into a new context + switch out
 *   swapcontext   ping-pong with ucontext (saves the signal mask: a syscall)
 * Usage: bench_arch_switch_cost [round-trips]   (default 2000000; CTest runs it
 * small, as a smoke test whose counts are checked).
 */
#include "arch_test.h"

#include <time.h>
#include <ucontext.h>

static void *main_sp;
static void *coro_sp;
static void *scratch_sp;
static long coro_count;

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void *after_count(void *arg) {
  return (char *)arg + 1;
}

static void pingpong_entry(void *transfer) {
  void *(*after)(void *) = (void *(*)(void *))transfer;
  for (;;) {
    coro_count++;
    swarm_arch_switch(&coro_sp, main_sp, after, NULL);
  }
}

static double bench_pingpong(long n, void *(*after)(void *)) {
  struct test_stack s = test_stack_new(64 * 1024);
  coro_count = 0;
  coro_sp = swarm_arch_prepare(s.top, pingpong_entry);
  swarm_arch_switch(&main_sp, coro_sp, NULL, (void *)after); /* warm up */
  double t0 = now_ns();
  for (long i = 0; i < n; i++)
    swarm_arch_switch(&main_sp, coro_sp, after, NULL);
  double t1 = now_ns();
  CHECK(coro_count == n + 1);
  test_stack_free(&s);
  return (t1 - t0) / (2.0 * (double)n);
}

static void fresh_entry(void *transfer) {
  coro_count++;
  swarm_arch_switch(&scratch_sp, main_sp, NULL, transfer);
  CHECK(!"resumed an abandoned context");
}

static double bench_fresh(long n) {
  struct test_stack s = test_stack_new(64 * 1024);
  coro_count = 0;
  double t0 = now_ns();
  for (long i = 0; i < n; i++) {
    void *sp = swarm_arch_prepare(s.top, fresh_entry);
    CHECK(swarm_arch_switch(&main_sp, sp, NULL, (void *)i) == (void *)i);
  }
  double t1 = now_ns();
  CHECK(coro_count == n);
  test_stack_free(&s);
  return (t1 - t0) / (double)n; /* per create + 2 switches */
}

static ucontext_t uc_main, uc_coro;

static void uc_entry(void) {
  for (;;) {
    coro_count++;
    swapcontext(&uc_coro, &uc_main);
  }
}

static double bench_swapcontext(long n) {
  struct test_stack s = test_stack_new(64 * 1024);
  CHECK(getcontext(&uc_coro) == 0);
  uc_coro.uc_stack.ss_sp = s.lo;
  uc_coro.uc_stack.ss_size = (size_t)(s.top - s.lo);
  uc_coro.uc_link = NULL;
  makecontext(&uc_coro, uc_entry, 0);
  coro_count = 0;
  double t0 = now_ns();
  for (long i = 0; i < n; i++)
    swapcontext(&uc_main, &uc_coro);
  double t1 = now_ns();
  CHECK(coro_count == n);
  test_stack_free(&s);
  return (t1 - t0) / (2.0 * (double)n);
}

int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 2000000;
  CHECK(n > 0);
  double sw = bench_pingpong(n, NULL);
  double swa = bench_pingpong(n, after_count);
  double fresh = bench_fresh(n / 4 + 1);
  double uc = bench_swapcontext(n / 4 + 1);
  printf("backend %-8s switch %7.1f ns  switch+after %7.1f ns  "
         "fresh (prepare+in+out) %7.1f ns  | glibc swapcontext %7.1f ns\n",
         ARCH_TEST_BACKEND, sw, swa, fresh, uc);
  return 0;
}
