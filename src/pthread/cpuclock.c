/*
 * pthread/cpuclock.c — the CPU-time clocks of swarm threads:
 * pthread_getcpuclockid, and clock_gettime, clock_getres and
 * clock_nanosleep on those clocks and on CLOCK_THREAD_CPUTIME_ID. Core
 * counts the time (core/cpuclock.c: off until the first request here, then
 * one CPU clock read per switch).
 *
 * The clock ids. A swarm thread has no kernel thread of its own, so its
 * clock cannot be the kernel's (MAKE_THREAD_CPUCLOCK(tid, ...)). Ours use
 * the encoding the kernel reserves for dynamic clocks, negative with the
 * low three bits 7: a per-thread CPU clock of type 3, which the kernel
 * answers EINVAL for in every call, so an id passed to a call not
 * interposed here (timer_create, clock_settime) fails cleanly. The other
 * 28 bits are the thread's descriptor index (24) and four bits of its
 * generation, so an id outlives its thread only as EINVAL, as a dead
 * thread's kernel clock does, until its descriptor has been reused 16
 * times (a TID is reused too).
 *
 * Every other clock id goes to glibc unchanged, with one compare on the
 * way (clock_gettime is hot in many programs).
 */
#include <time.h>

#include "pthread/dropin.h"

#define SWARM_CLOCK_TAG 7u

static clockid_t clock_of(swarm_thread_t h) {
  uint32_t index = (uint32_t)((h & CTL_INDEX_MASK) >> CTL_INDEX_SHIFT);
  uint32_t v = (index << 4) | ((CTL_GEN(h) >> 1) & 0xfu); /* < 2^28 */
  return (clockid_t)((~v << 3) | SWARM_CLOCK_TAG);
}

static bool is_swarm_clock(clockid_t c) {
  return c < 0 && ((uint32_t)c & 7u) == SWARM_CLOCK_TAG;
}

/* The thread a clock id names: its handle, or 0 when it names no live
 * thread. CLOCK_THREAD_CPUTIME_ID is the calling swarm thread's; from a
 * kernel thread that is not one, 0 with *kernel set (glibc's). */
static swarm_thread_t clock_thread(clockid_t c, bool *kernel) {
  *kernel = false;
  if (c == CLOCK_THREAD_CPUTIME_ID) {
    struct worker *w = worker_current();
    struct swarm_thread *t = w ? w->current : NULL;
    if (!t) {
      *kernel = true;
      return 0;
    }
    return desc_handle(t);
  }
  uint32_t v = ~((uint32_t)c >> 3) & 0x0fffffffu;
  swarm_thread_t h = cpuclock_handle_at(v >> 4);
  if (!h || ((CTL_GEN(h) >> 1) & 0xfu) != (v & 0xfu))
    return 0;
  return h;
}

static bool own_clock(swarm_thread_t h) {
  struct worker *w = worker_current();
  return w && w->current && desc_handle(w->current) == h;
}

/* glibc declares these arguments nonnull; NPTL's misuse answers need the
 * test the compiler would fold away (objects.c's is_null). */
static inline bool missing(const volatile void *p) {
  __asm__("" : "+r"(p));
  return p == NULL;
}

static struct timespec ns_to_ts(uint64_t ns) {
  return (struct timespec){.tv_sec = (time_t)(ns / 1000000000u),
                           .tv_nsec = (long)(ns % 1000000000u)};
}

DROPIN_API int pthread_getcpuclockid(pthread_t t, clockid_t *clock) {
  struct dropin_thread *r = dropin_lookup(t);
  if (!r || r->exited)
    return ESRCH; /* NPTL: ESRCH once the thread ended (its TID is 0) */
  if (missing(clock))
    return EINVAL;
  if (r->external)
    return libc_pthread_getcpuclockid(r->kthread, clock);
  struct swarm_thread *d = atomic_load(&r->desc);
  swarm_thread_t h = d ? desc_handle(d) : r->handle;
  if (!h)
    return ESRCH;
  cpuclock_enable();
  *clock = clock_of(h);
  return 0;
}

/* clock_gettime's and clock_getres's common part: 1 when c is glibc's
 * business (any other clock; CLOCK_THREAD_CPUTIME_ID of a kernel thread
 * that is not a swarm thread), else the thread's time into *ns and 0, or
 * -1 with errno EINVAL (an ended thread's clock). */
static inline int thread_clock(clockid_t c, uint64_t *ns) {
  if (likely(c != CLOCK_THREAD_CPUTIME_ID && !is_swarm_clock(c)))
    return 1;
  bool kernel;
  swarm_thread_t h = clock_thread(c, &kernel);
  if (kernel)
    return 1;
  if (!h || cpuclock_thread_ns(h, ns) != 0)
    return dropin_fail(EINVAL);
  return 0;
}

DROPIN_API int clock_gettime(clockid_t c, struct timespec *ts) {
  uint64_t ns;
  int r = thread_clock(c, &ns);
  if (r > 0)
    return libc_clock_gettime(c, ts);
  if (r == 0 && missing(ts))
    return dropin_fail(EFAULT);
  if (r == 0)
    *ts = ns_to_ts(ns);
  return r;
}

DROPIN_API int clock_getres(clockid_t c, struct timespec *res) {
  uint64_t ns;
  int r = thread_clock(c, &ns);
  if (r > 0)
    return libc_clock_getres(c, res);
  if (r == 0 && res)
    *res = (struct timespec){.tv_sec = 0, .tv_nsec = 1};
  return r;
}

/* clock_nanosleep on a thread's CPU clock (sleep.c), as the kernel's:
 * EINVAL for the caller's own clock, else sleeps until the thread's time
 * reaches the request. A thread's CPU time grows at most as fast as real
 * time, so it sleeps the time still missing, then looks again. Returns 0
 * when the thread ends first (its clock will not reach the time). */
int dropin_cpu_clock_nanosleep(clockid_t c, int flags,
                               const struct timespec *req,
                               struct timespec *rem) {
  bool kernel;
  swarm_thread_t h = clock_thread(c, &kernel);
  if (kernel)
    return libc_clock_nanosleep(c, flags, req, rem);
  uint64_t now;
  if (!h || own_clock(h) || cpuclock_thread_ns(h, &now) != 0)
    return EINVAL;
  if (!req || req->tv_sec < 0 || req->tv_nsec < 0 ||
      req->tv_nsec >= 1000000000L)
    return EINVAL;
  uint64_t want = (uint64_t)req->tv_sec * 1000000000u + (uint64_t)req->tv_nsec;
  uint64_t target = (flags & TIMER_ABSTIME) ? want : now + want;
  while (now < target) {
    struct timespec left = ns_to_ts(target - now);
    if (nanosleep(&left, NULL) != 0) {
      if (!(flags & TIMER_ABSTIME) && rem) {
        uint64_t at = now;
        cpuclock_thread_ns(h, &at);
        *rem = ns_to_ts(target > at ? target - at : 0);
      }
      return EINTR;
    }
    if (cpuclock_thread_ns(h, &now) != 0)
      return 0;
  }
  return 0;
}
