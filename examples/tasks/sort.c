/*
 * examples/tasks/sort.c — task parallelism on swarm: a merge sort that
 * spawns a thread for one half and sorts the other itself, joining before
 * the merge (divide and conquer, as with Cilk's spawn/sync).
 *
 *   sort [N] [CUTOFF]     N random 64-bit keys (default 10,000,000);
 *                         halves below CUTOFF (default 4,096) sort serially
 *
 * Spawning is cheap enough to do it at every level: the child runs at once
 * on the spawning worker, and idle workers steal the parents' continuations
 * (the other halves), so the work spreads over SWARM_WORKERS workers
 * without a thread pool or a task queue in the program. Checks its result
 * against qsort and prints the time of each; exits 1 if they differ.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "swarm.h"

struct job {
  uint64_t *a, *tmp;
  size_t n, cutoff;
};

static int cmp_u64(const void *x, const void *y) {
  uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
  return (a > b) - (a < b);
}

static void merge(uint64_t *a, uint64_t *tmp, size_t half, size_t n) {
  size_t i = 0, j = half, k = 0;
  while (i < half && j < n)
    tmp[k++] = a[j] < a[i] ? a[j++] : a[i++];
  while (i < half)
    tmp[k++] = a[i++];
  memcpy(a, tmp, k * sizeof *a); /* a[j..n) is already in place */
}

static void *sort(void *arg) {
  struct job *j = arg;
  if (j->n <= j->cutoff) {
    qsort(j->a, j->n, sizeof *j->a, cmp_u64);
    return NULL;
  }
  size_t half = j->n / 2;
  struct job left = {j->a, j->tmp, half, j->cutoff};
  struct job right = {j->a + half, j->tmp + half, j->n - half, j->cutoff};
  swarm_thread_t t;
  int spawned = swarm_spawn(&t, NULL, sort, &left) == 0;
  if (!spawned) /* no memory for a thread: sort it here instead */
    sort(&left);
  sort(&right);
  if (spawned)
    swarm_join(t, NULL);
  merge(j->a, j->tmp, half, j->n);
  return NULL;
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  size_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 10000000;
  size_t cutoff = argc > 2 ? strtoull(argv[2], NULL, 10) : 4096;
  if (n == 0 || cutoff == 0) {
    fprintf(stderr, "usage: %s [N > 0] [CUTOFF > 0]\n", argv[0]);
    return 2;
  }
  uint64_t *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b),
           *tmp = malloc(n * sizeof *tmp);
  if (!a || !b || !tmp) {
    fprintf(stderr, "sort: out of memory for %zu keys\n", n);
    return 1;
  }
  uint64_t x = 88172645463325252ull; /* xorshift64: the same keys each run */
  for (size_t i = 0; i < n; i++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    a[i] = b[i] = x;
  }
  double t0 = now();
  struct job all = {a, tmp, n, cutoff};
  swarm_thread_t t;
  if (swarm_spawn(&t, NULL, sort, &all) != 0 || swarm_join(t, NULL) != 0) {
    fprintf(stderr, "sort: could not start the runtime\n");
    return 1;
  }
  double t1 = now();
  qsort(b, n, sizeof *b, cmp_u64);
  double t2 = now();
  int same = memcmp(a, b, n * sizeof *a) == 0;
  printf("sort: %zu keys, %d workers: %.3f s (qsort, 1 thread: %.3f s)%s\n", n,
         swarm_num_workers(), t1 - t0, t2 - t1, same ? "" : "  RESULT DIFFERS");
  free(a), free(b), free(tmp);
  return same ? 0 : 1;
}
