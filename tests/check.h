/*
 * tests/check.h — the one assertion header every test includes, in every
 * layer's folder (C and C++, native, drop-in, MPI).
 *
 *   CHECK(cond)                 fail when cond is false
 *   CHECK(cond, fmt, args...)   the same, with a printf-style explanation
 *   CHECK_EQ(a, b)              fail when two integers differ, printing both
 *
 * A failed check prints "file:line: check failed: expr[: explanation]" on
 * stderr, flushes stdout and stderr, then runs CHECK_ON_FAIL(), which is
 * exit(1) unless the test defines it before including this header: MPI tests
 * abort the whole job (a failed rank must not leave the others waiting), the
 * arch tests _exit (they may be running on a hand-made stack).
 *
 * test_scaled(n, min) shortens long loops under emulators:
 * SWARM_TEST_SCALE=0.25 makes n four times smaller, never below min.
 * test_time_in(clock, ns) is the absolute time ns from now on clock (a
 * timed wait's deadline).
 */
#ifndef SWARM_TEST_CHECK_H
#define SWARM_TEST_CHECK_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifndef CHECK_ON_FAIL
#define CHECK_ON_FAIL() exit(1)
#endif

static inline void check_report(const char *file, int line, const char *expr,
                                const char *fmt, ...) {
  fprintf(stderr, "%s:%d: check failed: %s", file, line, expr);
  if (fmt[0] != '\0') {
    va_list ap;
    va_start(ap, fmt);
    fputs(": ", stderr);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
  }
  fputc('\n', stderr);
  fflush(stdout);
  fflush(stderr);
}

/* `"" __VA_ARGS__` turns a missing explanation into the empty format. */
#define CHECK(cond, ...)                                                       \
  do {                                                                         \
    if (!(cond)) {                                                             \
      check_report(__FILE__, __LINE__, #cond, "" __VA_ARGS__);                 \
      CHECK_ON_FAIL();                                                         \
    }                                                                          \
  } while (0)

#define CHECK_EQ(a, b)                                                         \
  do {                                                                         \
    long long va_ = (long long)(a), vb_ = (long long)(b);                      \
    if (va_ != vb_) {                                                          \
      check_report(__FILE__, __LINE__, #a " == " #b, "%lld != %lld", va_,      \
                   vb_);                                                       \
      CHECK_ON_FAIL();                                                         \
    }                                                                          \
  } while (0)

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

static inline struct timespec test_time_in(int clock, long long ns) {
  struct timespec t;
  clock_gettime(clock, &t);
  t.tv_sec += (time_t)(ns / 1000000000LL);
  t.tv_nsec += (long)(ns % 1000000000LL);
  if (t.tv_nsec >= 1000000000L) {
    t.tv_sec++;
    t.tv_nsec -= 1000000000L;
  }
  return t;
}

#define TEST_PASS(name) printf("PASS %s\n", name)

#endif
