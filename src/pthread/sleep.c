/*
 * pthread/sleep.c — the sleeping calls (nanosleep, clock_nanosleep, usleep,
 * sleep): on a swarm thread they park the thread until a timer on its
 * worker fires, so the worker runs other threads meanwhile; on a kernel
 * thread that is not a worker they are NPTL's. All are cancellation points.
 * Sleeps end only at their deadline: with no signal ever delivered to a
 * parked swarm thread, EINTR and a remaining time never arise.
 */
#include <time.h>
#include <unistd.h>

#include "pthread/dropin.h"

static uint64_t after_ns(uint64_t ns) {
  uint64_t now = sync_now_ns();
  return ns > UINT64_MAX - now ? UINT64_MAX : now + ns;
}

static void park_until(uint64_t deadline) {
  dropin_testcancel();
  if (sync_sleep_until(deadline, true) == ECANCELED)
    dropin_act_cancel();
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
  park_until(after_ns(ns));
  return 0;
}

DROPIN_API int clock_nanosleep(clockid_t clock, int flags,
                               const struct timespec *req,
                               struct timespec *rem) {
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
    park_until(deadline);
    return 0;
  }
  return nanosleep(req, rem) ? *os_errno_location() : 0;
}

DROPIN_API int usleep(useconds_t us) {
  if (!worker_current())
    return libc_usleep(us);
  park_until(after_ns((uint64_t)us * 1000u));
  return 0;
}

DROPIN_API unsigned sleep(unsigned s) {
  if (!worker_current())
    return libc_sleep(s);
  park_until(after_ns((uint64_t)s * 1000000000u));
  return 0;
}
