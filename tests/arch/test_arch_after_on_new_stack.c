/*
 * tests/arch/test_arch_after_on_new_stack.c — after(arg) runs on the new
 * context's stack, once the old context is entirely saved:
 *   1. in after(), a local lives on the new stack, never on the old one, and
 *      *save_sp already holds the old context;
 *   2. (asm backends) after() may overwrite everything below the old
 *      context's saved stack pointer without harming it;
 *   3. the park pattern core relies on, under real parallelism: a context
 *      parks by switching to its worker's home context with an after() that
 *      publishes it; the other kernel thread resumes it at once, possibly
 *      while the first is still inside after(). Thousands of such hand-offs
 *      between two threads keep every live register intact.
 */
#include "arch_test.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

/* ---- 1 and 2: single thread ---- */

static struct test_stack coro_stack;
static void *main_sp;
static void *coro_sp;
static int after_ran_on_coro_stack;
static int after_ran_on_main_stack;

static void *after_entering_coro(void *arg) {
  char here = 0;
  after_ran_on_coro_stack = test_on_stack(&coro_stack, &here);
  CHECK(main_sp != NULL && main_sp == *(void **)arg);
  return arg;
}

static void *after_leaving_coro(void *arg) {
  char here = 0;
  /* We are back on main's stack: below main's saved context and near it. */
  after_ran_on_main_stack = !test_on_stack(&coro_stack, &here) &&
                            (char *)&here < (char *)main_sp &&
                            (char *)main_sp - (char *)&here < 64 * 1024;
  CHECK(coro_sp != NULL && coro_sp == *(void **)arg);
  CHECK(test_on_stack(&coro_stack, coro_sp));
#ifndef SWARM_TEST_CONTEXT_PORTABLE
  /* Everything below the saved stack pointer is free: scribble over it. */
  memset(coro_stack.lo, 0xa5, (size_t)((char *)coro_sp - coro_stack.lo));
#endif
  return arg;
}

static void coro_entry(void *transfer) {
  CHECK(transfer == &main_sp);
  for (;;) {
    volatile long canary = 0x1234567;
    long keep = canary * 3;
    swarm_arch_switch(&coro_sp, main_sp, after_leaving_coro, &coro_sp);
    CHECK(canary == 0x1234567 && keep == 0x1234567 * 3);
  }
}

static void single_thread_checks(void) {
  coro_stack = test_stack_new(64 * 1024);
  coro_sp = swarm_arch_prepare(coro_stack.top, coro_entry);
  main_sp = NULL;
  for (int i = 0; i < 100; i++) {
    after_ran_on_coro_stack = after_ran_on_main_stack = 0;
    swarm_arch_switch(&main_sp, coro_sp, after_entering_coro, &main_sp);
    CHECK(after_ran_on_coro_stack);
    CHECK(after_ran_on_main_stack);
  }
  test_stack_free(&coro_stack);
}

/* ---- 3: hand-offs between two kernel threads ---- */

enum { MIGRANTS = 2, HOMES = 2 };
#define FINISHED ((void *)-1)

struct home {
  void *sp; /* the kernel thread's own context while a migrant runs */
  int id;
  long resumed;
};

struct migrant {
  _Atomic(void *) parked; /* saved context, published by park_publish */
  void *sp;
  struct test_stack stack;
  long hops;
  int last_home;
  long migrations;
};

static struct migrant migrants[MIGRANTS];
static struct home homes[HOMES];
static atomic_int finished;
static long hops_each;

/* Runs on the home's stack, after the migrant is saved: publish it. Then
 * keep using this stack for a while, so that a backend running after() on
 * the migrant's stack would be caught by the other thread running it. */
static void *park_publish(void *arg) {
  struct migrant *m = arg;
  atomic_store_explicit(&m->parked, m->sp, memory_order_release);
  volatile char scratch[2048];
  for (size_t i = 0; i < sizeof scratch; i += 64)
    scratch[i] = (char)i;
  return NULL;
}

static void migrant_entry(void *transfer) {
  struct home *home = transfer;
  struct migrant *m = NULL;
  for (int i = 0; i < MIGRANTS; i++)
    if (test_on_stack(&migrants[i].stack, &i))
      m = &migrants[i];
  CHECK(m != NULL);
  volatile long seed = (long)(m - migrants) * 1000003;
  long a = seed + 1, b = seed * 7, c = seed ^ 0x77, d = seed - 5, e = seed * 9;
  double x = (double)seed * 0.5, y = (double)seed + 0.75;
  while (m->hops < hops_each) {
    m->hops++;
    home = swarm_arch_switch(&m->sp, home->sp, park_publish, m);
    /* Resumed by whichever home took us; it passed itself. */
    CHECK(home != NULL && home >= homes && home < homes + HOMES);
    CHECK(a == seed + 1 && b == seed * 7 && c == (seed ^ 0x77));
    CHECK(d == seed - 5 && e == seed * 9);
    CHECK(x == (double)seed * 0.5 && y == (double)seed + 0.75);
    if (home->id != m->last_home)
      m->migrations++;
    m->last_home = home->id;
  }
  atomic_fetch_add(&finished, 1);
  swarm_arch_switch(&m->sp, home->sp, NULL, FINISHED);
  CHECK(!"a finished migrant was resumed");
}

static void *home_main(void *arg) {
  struct home *home = arg;
  while (atomic_load(&finished) < MIGRANTS) {
    for (int i = 0; i < MIGRANTS; i++) {
      void *sp = atomic_exchange_explicit(&migrants[i].parked, NULL,
                                          memory_order_acquire);
      if (sp == NULL)
        continue;
      void *got = swarm_arch_switch(&home->sp, sp, NULL, home);
      CHECK(got == NULL || got == FINISHED); /* park_publish returns NULL */
      home->resumed++;
    }
  }
  return NULL;
}

static void two_thread_handoffs(void) {
  hops_each = test_scale(100000);
  for (int i = 0; i < MIGRANTS; i++) {
    struct migrant *m = &migrants[i];
    m->stack = test_stack_new(64 * 1024);
    m->last_home = -1;
    atomic_init(&m->parked, swarm_arch_prepare(m->stack.top, migrant_entry));
  }
  pthread_t threads[HOMES];
  for (int i = 0; i < HOMES; i++) {
    homes[i].id = i;
    CHECK(pthread_create(&threads[i], NULL, home_main, &homes[i]) == 0);
  }
  for (int i = 0; i < HOMES; i++)
    CHECK(pthread_join(threads[i], NULL) == 0);
  long migrations = 0, resumed = 0;
  for (int i = 0; i < MIGRANTS; i++) {
    CHECK(migrants[i].hops == hops_each);
    migrations += migrants[i].migrations;
    test_stack_free(&migrants[i].stack);
  }
  for (int i = 0; i < HOMES; i++)
    resumed += homes[i].resumed;
  CHECK(resumed == MIGRANTS * (hops_each + 1));
  CHECK(migrations > 0); /* both threads really took part */
  printf("%s backend: %ld hand-offs, %ld between kernel threads\n",
         ARCH_TEST_BACKEND, resumed, migrations);
}

int main(void) {
  single_thread_checks();
  two_thread_handoffs();
  return 0;
}
