/*
 * tests/arch/arch_test.h — helpers for the arch-level tests: stacks with a
 * guard page below and an inaccessible page right above stack_top (so a
 * backend that writes above stack_top faults), CHECK (tests/check.h) that
 * _exits, and the iteration scale (SWARM_TEST_SCALE, a positive
 * number, default 1; tests under an emulator may lower it).
 * These tests use only arch/context.h: no scheduler, no worker threads
 * beyond the ones a test starts itself.
 */
#ifndef SWARM_TESTS_ARCH_TEST_H
#define SWARM_TESTS_ARCH_TEST_H

#include "arch/context.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

/* A failed check _exits: the test may be on a hand-made stack. */
#define CHECK_ON_FAIL() _exit(1)
#include "check.h"

#ifdef SWARM_TEST_CONTEXT_PORTABLE
#define ARCH_TEST_BACKEND "portable"
#else
#define ARCH_TEST_BACKEND "asm"
#endif

/* A stack of `size` usable bytes: [lo, top), PROT_NONE pages at both ends. */
struct test_stack {
  char *map;
  size_t map_size;
  char *lo;
  char *top;
};

static inline struct test_stack test_stack_new(size_t size) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  size = (size + page - 1) / page * page;
  struct test_stack s;
  s.map_size = size + 2 * page;
  s.map = mmap(NULL, s.map_size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  CHECK(s.map != MAP_FAILED);
  s.lo = s.map + page;
  s.top = s.lo + size;
  CHECK(mprotect(s.lo, size, PROT_READ | PROT_WRITE) == 0);
  return s;
}

static inline void test_stack_free(struct test_stack *s) {
  munmap(s->map, s->map_size);
}

static inline int test_on_stack(const struct test_stack *s, const void *p) {
  return (const char *)p >= s->lo && (const char *)p < s->top;
}

static inline long test_scale(long n) {
  return test_scaled(n, 1);
}

/* The ABI's stack alignment as seen from inside the calling function: the
 * frame address is the stack pointer at entry adjusted by a fixed amount
 * that keeps 16-byte alignment on the CPUs we know. Must be a macro so it
 * reads the frame of the function that uses it. */
#if defined(__x86_64__) || defined(__aarch64__) || defined(__riscv) ||         \
    defined(__powerpc64__) || defined(__loongarch64)
#define TEST_HAVE_FRAME_ALIGNED 1
#define TEST_FRAME_ALIGNED()                                                   \
  ((((uintptr_t)__builtin_frame_address(0)) & 15u) == 0)
#endif

/* CTest's SKIP_RETURN_CODE: a test that cannot check what it is for on this
 * CPU says so and is reported as skipped, never as passed. */
#define TEST_SKIP 77

#endif
