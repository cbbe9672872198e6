/*
 * tests/check.h — the assertion macros every test uses. A failed check prints
 * the file, line, expression and values, and exits 1 (CTest marks it failed).
 */
#ifndef SWARM_TEST_CHECK_H
#define SWARM_TEST_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
      exit(1);                                                                 \
    }                                                                          \
  } while (0)

#define CHECK_EQ(a, b)                                                         \
  do {                                                                         \
    long long va_ = (long long)(a), vb_ = (long long)(b);                      \
    if (va_ != vb_) {                                                          \
      fprintf(stderr, "%s:%d: check failed: %s == %s (%lld != %lld)\n",        \
              __FILE__, __LINE__, #a, #b, va_, vb_);                           \
      exit(1);                                                                 \
    }                                                                          \
  } while (0)

/* Scale for long loops: SWARM_TEST_SCALE=0.1 makes slow runs (emulators)
 * shorter; counts never drop below `min`. */
static inline long test_scaled(long n, long min) {
  const char *s = getenv("SWARM_TEST_SCALE");
  if (s && *s) {
    double f = atof(s);
    if (f > 0) {
      long m = (long)(n * f);
      return m < min ? min : m;
    }
  }
  return n;
}

#define TEST_PASS(name) printf("PASS %s\n", name)

#endif
