/*
 * tests/arch/test_arch_transfer_value.c — the value a resumed context sees:
 * `arg` itself when `after` is NULL, after(arg)'s return value otherwise,
 * both for a suspended context (as swarm_arch_switch's return value) and for
 * a fresh one (as its entry argument); after runs exactly once per switch,
 * receives `arg`, and finds *save_sp already written.
 */
#include "arch_test.h"

static void *main_sp;
static void *coro_sp;
static void *scratch_sp;
static void **after_save_slot;

/* What each after() call saw, in call order. */
static struct {
  void *arg;
  void *saved;
} seen[8];
static int after_calls;

static void *after_plus_1000(void *arg) {
  CHECK(after_calls < 8);
  seen[after_calls].arg = arg;
  seen[after_calls].saved = *after_save_slot;
  after_calls++;
  return (char *)arg + 1000;
}

static void *after_returns_null(void *arg) {
  CHECK(after_calls < 8);
  seen[after_calls].arg = arg;
  seen[after_calls].saved = NULL;
  after_calls++;
  return NULL;
}

static void coro_entry(void *transfer) {
  /* Entered with after == NULL: transfer is the arg. */
  CHECK(transfer == (void *)11);
  /* Back to main with after == NULL. */
  void *got = swarm_arch_switch(&coro_sp, main_sp, NULL, (void *)22);
  CHECK(got == (void *)(33 + 1000)); /* main used after_plus_1000 */
  after_save_slot = &coro_sp;
  got = swarm_arch_switch(&coro_sp, main_sp, after_plus_1000, (void *)44);
  CHECK(got == (void *)55); /* main used NULL after with 55 */
  /* A context that will never run again passes a scratch slot. */
  swarm_arch_switch(&scratch_sp, main_sp, after_returns_null, (void *)66);
  CHECK(!"resumed a context that was abandoned");
}

static void fresh_entry(void *transfer) {
  CHECK(transfer == (void *)(77 + 1000));
  swarm_arch_switch(&scratch_sp, main_sp, NULL, (void *)88);
  CHECK(!"resumed a context that was abandoned");
}

int main(void) {
  struct test_stack s1 = test_stack_new(64 * 1024);
  struct test_stack s2 = test_stack_new(64 * 1024);

  coro_sp = swarm_arch_prepare(s1.top, coro_entry);
  void *got = swarm_arch_switch(&main_sp, coro_sp, NULL, (void *)11);
  CHECK(got == (void *)22);

  after_calls = 0;
  after_save_slot = &main_sp;
  main_sp = NULL;
  got = swarm_arch_switch(&main_sp, coro_sp, after_plus_1000, (void *)33);
  /* Ours ran first, on the way in; coro's on the way back. */
  CHECK(after_calls == 2);
  CHECK(seen[0].arg == (void *)33);
  CHECK(seen[0].saved != NULL && seen[0].saved == main_sp);
  CHECK(seen[1].arg == (void *)44);
  CHECK(seen[1].saved != NULL && seen[1].saved == coro_sp);
  CHECK(got == (void *)(44 + 1000));

  got = swarm_arch_switch(&main_sp, coro_sp, NULL, (void *)55);
  /* coro abandoned itself with after_returns_null(66): NULL is a value too. */
  CHECK(after_calls == 3 && seen[2].arg == (void *)66);
  CHECK(got == NULL);
  CHECK(scratch_sp != NULL);

  /* A fresh context entered through an after(). */
  after_save_slot = &main_sp;
  void *fresh_sp = swarm_arch_prepare(s2.top, fresh_entry);
  got = swarm_arch_switch(&main_sp, fresh_sp, after_plus_1000, (void *)77);
  CHECK(after_calls == 4 && seen[3].arg == (void *)77);
  CHECK(seen[3].saved == main_sp);
  CHECK(got == (void *)88);

  printf("%s backend: transfer values OK\n", ARCH_TEST_BACKEND);
  test_stack_free(&s1);
  test_stack_free(&s2);
  return 0;
}
