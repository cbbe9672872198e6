/* The README's example: fib with one swarm thread per call. */
#include <stdio.h>
#include <swarm.h>

static void *fib(void *arg) {
  long n = (long)arg;
  if (n < 2)
    return arg;
  swarm_thread_t a, b;
  void *x, *y;
  swarm_spawn(&a, NULL, fib, (void *)(n - 1));
  swarm_spawn(&b, NULL, fib, (void *)(n - 2));
  swarm_join(a, &x);
  swarm_join(b, &y);
  return (void *)((long)x + (long)y);
}

int main(void) {
  printf("fib(20) = %ld\n", (long)fib((void *)20L));
  return 0;
}
