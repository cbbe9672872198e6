/* fib(n) with a swarm thread per call: the trace size test's workload
 * (check_size.py). Prints the threads it spawned. Usage: trace_fib N */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <swarm.h>

#include "check.h"

static void *fib(void *arg) {
  intptr_t n = (intptr_t)arg;
  if (n < 2)
    return (void *)n;
  swarm_thread_t a, b;
  void *ra, *rb;
  CHECK_EQ(swarm_spawn(&a, NULL, fib, (void *)(n - 1)), 0);
  CHECK_EQ(swarm_spawn(&b, NULL, fib, (void *)(n - 2)), 0);
  CHECK_EQ(swarm_join(a, &ra), 0);
  CHECK_EQ(swarm_join(b, &rb), 0);
  return (void *)((intptr_t)ra + (intptr_t)rb);
}

int main(int argc, char **argv) {
  intptr_t n = argc > 1 ? atoi(argv[1]) : 20;
  swarm_thread_t t;
  void *r;
  CHECK_EQ(swarm_spawn(&t, NULL, fib, (void *)n), 0);
  CHECK_EQ(swarm_join(t, &r), 0);
  swarm_stats_t s;
  CHECK_EQ(swarm_stats_get(&s), 0);
  CHECK_EQ(swarm_finalize(), 0);
  printf("fib %ld = %ld threads %llu\n", (long)n, (long)(intptr_t)r,
         (unsigned long long)s.threads_spawned);
  return 0;
}
