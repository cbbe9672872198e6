/*
 * pthread/sleep.c — the sleeping calls (nanosleep, clock_nanosleep, usleep,
 * sleep): on a swarm thread they park the thread until a timer on its
 * worker fires, so the worker runs other threads meanwhile; on a kernel
 * thread that is not a worker they are NPTL's. All are cancellation points.
 * A signal delivered to the sleeping thread (signal.c) ends the sleep after
 * its handler ran: EINTR, with the remaining time where the call reports
 * one, as POSIX says (SA_RESTART does not restart a sleep).
 */
#include <time.h>
#include <unistd.h>

#include "pthread/dropin.h"

static uint64_t after_ns(uint64_t ns) {
  uint64_t now = sync_now_ns();
  return ns > UINT64_MAX - now ? UINT64_MAX : now + ns;
}

/* 0 at the deadline, EINTR when a signal's handler ran. */
static int park_until(uint64_t deadline) {
  dropin_testcancel();
  for (;;) {
    if (sync_sleep_until(deadline, true) != ECANCELED)
      return 0;
    dropin_testcancel(); /* a cancellation acts here */
    if (dropin_signal_interrupted() != DROPIN_SIG_NONE)
      return EINTR;
  }
}

/* The time left until deadline, into rem (if any). */
static void remaining(uint64_t deadline, struct timespec *rem) {
  if (!rem)
    return;
  uint64_t now = sync_now_ns(), left = deadline > now ? deadline - now : 0;
  rem->tv_sec = (time_t)(left / 1000000000u);
  rem->tv_nsec = (long)(left % 1000000000u);
}

static bool valid(const struct timespec *t) {
  return t && t->tv_sec >= 0 && t->tv_nsec >= 0 && t->tv_nsec < 1000000000L;
}

DROPIN_API int nanosleep(const struct timespec *req, struct timespec *rem) {
  if (!worker_current())
    return libc_nanosleep(req, rem);
  if (!valid(req))
    return dropin_fail(EINVAL);
  uint64_t ns = (uint64_t)req->tv_nsec;
  if ((uint64_t)req->tv_sec > (UINT64_MAX - ns) / 1000000000u)
    ns = UINT64_MAX;
  else
    ns += (uint64_t)req->tv_sec * 1000000000u;
  uint64_t deadline = after_ns(ns);
  if (park_until(deadline) == EINTR) {
    remaining(deadline, rem);
    return dropin_fail(EINTR);
  }
  return 0;
}

DROPIN_API int clock_nanosleep(clockid_t clock, int flags,
                               const struct timespec *req,
                               struct timespec *rem) {
  if (clock == CLOCK_THREAD_CPUTIME_ID || (clock < 0 && (clock & 7) == 7))
    return dropin_cpu_clock_nanosleep(clock, flags, req, rem);
  if (!worker_current() ||
      (clock != CLOCK_REALTIME && clock != CLOCK_MONOTONIC))
    return libc_clock_nanosleep(clock, flags, req, rem);
  if (!valid(req))
    return EINVAL;
  if (flags & TIMER_ABSTIME) {
    uint64_t deadline;
    bool expired;
    int e = sync_deadline(clock, req, &deadline, &expired);
    if (e)
      return e;
    if (expired) {
      dropin_testcancel();
      return 0;
    }
    return park_until(deadline); /* an absolute sleep reports no rem */
  }
  return nanosleep(req, rem) ? *os_errno_location() : 0;
}

DROPIN_API int usleep(useconds_t us) {
  if (!worker_current())
    return libc_usleep(us);
  if (park_until(after_ns((uint64_t)us * 1000u)) == EINTR)
    return dropin_fail(EINTR);
  return 0;
}

DROPIN_API unsigned sleep(unsigned s) {
  if (!worker_current())
    return libc_sleep(s);
  uint64_t deadline = after_ns((uint64_t)s * 1000000000u);
  if (park_until(deadline) == EINTR) {
    uint64_t now = sync_now_ns(), left = deadline > now ? deadline - now : 0;
    return (unsigned)((left + 999999999u) / 1000000000u);
  }
  return 0;
}
