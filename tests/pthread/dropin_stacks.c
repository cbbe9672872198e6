/* Stacks as NPTL sizes them, and overflows named in the program's terms
 * (issue 16 item 3, issue 21 item 4). Plain pthread code; run_stacks.sh runs
 * the same binary with and without the drop-in and compares.
 *   report    prints what the program sees of its stacks: the default attr's
 *             size, a running thread's pthread_getattr_np size and guard,
 *             and whether the thread can really use its whole stack (it
 *             fills all but 64 KiB of it; half of a small one)
 *   overflow  a thread named "deep" recurses without end; prints its
 *             pthread_t first
 *   clash     a thread makes one frame reaching 20 KiB below its stack (as
 *             pthread_getattr_np reports it): past a one-page guard
 *   main      main's own flow recurses without end */
#include <alloca.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "dropin_check.h"

static void stack_of(pthread_t t, char **lo, size_t *size, size_t *guard) {
  pthread_attr_t a;
  CHECK(pthread_getattr_np(t, &a) == 0);
  void *addr;
  CHECK(pthread_attr_getstack(&a, &addr, size) == 0);
  CHECK(pthread_attr_getguardsize(&a, guard) == 0);
  pthread_attr_destroy(&a);
  *lo = addr;
}

static __attribute__((noinline)) void fill(size_t n) {
  volatile char *p = alloca(n);
  memset((char *)p, 1, n);
  CHECK(p[n / 2] == 1);
}

static void *report(void *arg) {
  (void)arg;
  char *lo;
  size_t size, guard;
  stack_of(pthread_self(), &lo, &size, &guard);
  char here;
  CHECK(&here > lo && &here < lo + size);
  printf("thread getattr_np stacksize %zu guardsize %zu\n", size, guard);
  /* NPTL keeps its descriptor and static TLS at the top of the stack */
  fill(size > 256 * 1024 ? size - 64 * 1024 : size / 2);
  printf("thread used its stack: yes\n");
  return NULL;
}

/* Says who it is before it faults (the creator may not run again). */
static void introduce(const char *name) {
  if (name)
    CHECK(pthread_setname_np(pthread_self(), name) == 0);
  printf("pthread_t %#lx\n", (unsigned long)pthread_self());
  fflush(stdout);
}

/* Exported (the test links with -rdynamic) so dladdr can name it. */
__attribute__((noinline)) long overflow_routine_recurse(long n) {
  volatile char pad[1024];
  pad[0] = (char)n;
  pad[1023] = (char)n;
  if (pad[0] == (char)n)
    return overflow_routine_recurse(n + 1) + pad[0] + pad[1023];
  return 0;
}

void *overflow_routine(void *arg) {
  (void)arg;
  introduce("deep");
  return (void *)overflow_routine_recurse(0);
}

void *clash_routine(void *arg) {
  (void)arg;
  introduce(NULL);
  char *lo;
  size_t size, guard;
  stack_of(pthread_self(), &lo, &size, &guard);
  char here;
  volatile char *frame = alloca((size_t)(&here - lo) + 20 * 1024);
  frame[0] = 1;
  return (void *)(uintptr_t)frame[0];
}

static void run_thread(void *(*fn)(void *)) {
  pthread_t t;
  CHECK(pthread_create(&t, NULL, fn, NULL) == 0);
  pthread_join(t, NULL);
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "report";
  report_on_swarm();
  if (!strcmp(mode, "report")) {
    pthread_attr_t a;
    size_t size;
    CHECK(pthread_attr_init(&a) == 0);
    CHECK(pthread_attr_getstacksize(&a, &size) == 0);
    printf("default attr stacksize %zu\n", size);
    pthread_t t;
    CHECK(pthread_create(&t, &a, report, NULL) == 0); /* the default, given */
    CHECK(pthread_join(t, NULL) == 0);
    pthread_attr_destroy(&a);
    CHECK(pthread_create(&t, NULL, report, NULL) == 0); /* no attr at all */
    CHECK(pthread_join(t, NULL) == 0);
    printf("OK\n");
    return 0;
  }
  if (!strcmp(mode, "overflow"))
    run_thread(overflow_routine);
  else if (!strcmp(mode, "clash"))
    run_thread(clash_routine);
  else if (!strcmp(mode, "main"))
    overflow_routine_recurse(0);
  printf("not reached: no fault\n");
  return 0;
}
