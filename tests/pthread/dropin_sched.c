/* Scheduling attributes (issue 16 item 6) are accepted, recorded per thread
 * and reported back exactly as set: policies and priorities through
 * pthread_setschedparam / setschedprio, inheritance at pthread_create
 * (inherited by default, the attribute's with PTHREAD_EXPLICIT_SCHED),
 * mutex priority protocols and ceilings; invalid ones answer EINVAL.
 * Passes with NPTL alone too; where NPTL lacks the privilege for a
 * real-time policy (EPERM) those checks are skipped. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>

#include "dropin_check.h"

struct seen {
  int policy;
  int prio;
};

static void *report(void *arg) {
  struct seen *s = arg;
  struct sched_param p;
  CHECK_EQ(pthread_getschedparam(pthread_self(), &s->policy, &p), 0);
  s->prio = p.sched_priority;
  return NULL;
}

/* Creates a thread with attr and returns what it saw of itself; false if
 * pthread_create answered EPERM (NPTL without the privilege). */
static bool spawn_and_see(pthread_attr_t *attr, struct seen *s) {
  pthread_t t;
  int e = pthread_create(&t, attr, report, s);
  if (e == EPERM)
    return false;
  CHECK_EQ(e, 0);
  CHECK_EQ(pthread_join(t, NULL), 0);
  return true;
}

static void invalid(void) {
  struct sched_param p = {0};
  pthread_t self = pthread_self();
  CHECK_EQ(pthread_setschedparam(self, 12345, &p), EINVAL);
  p.sched_priority = 0;
  CHECK_EQ(pthread_setschedparam(self, SCHED_FIFO, &p), EINVAL);
  p.sched_priority = 100;
  CHECK_EQ(pthread_setschedparam(self, SCHED_RR, &p), EINVAL);
  p.sched_priority = 5;
  CHECK_EQ(pthread_setschedparam(self, SCHED_OTHER, &p), EINVAL);
  CHECK_EQ(pthread_setschedprio(self, 5), EINVAL); /* SCHED_OTHER: 0 only */
  int policy;
  CHECK_EQ(pthread_getschedparam(self, &policy, &p), 0);
  CHECK_EQ(policy, SCHED_OTHER);
  CHECK_EQ(p.sched_priority, 0);
}

static void inheritance(void) {
  struct sched_param p = {0};
  struct seen s;
  /* a normal policy other than the default, inherited by default */
  CHECK_EQ(pthread_setschedparam(pthread_self(), SCHED_BATCH, &p), 0);
  CHECK(spawn_and_see(NULL, &s));
  CHECK_EQ(s.policy, SCHED_BATCH);
  CHECK_EQ(s.prio, 0);
  pthread_attr_t a;
  CHECK_EQ(pthread_attr_init(&a), 0);
  CHECK(spawn_and_see(&a, &s)); /* default attribute: inherit too */
  CHECK_EQ(s.policy, SCHED_BATCH);
  /* explicit: the attribute's */
  CHECK_EQ(pthread_attr_setinheritsched(&a, PTHREAD_EXPLICIT_SCHED), 0);
  CHECK_EQ(pthread_attr_setschedpolicy(&a, SCHED_OTHER), 0);
  CHECK(spawn_and_see(&a, &s));
  CHECK_EQ(s.policy, SCHED_OTHER);
  int v;
  CHECK_EQ(pthread_attr_getinheritsched(&a, &v), 0);
  CHECK_EQ(v, PTHREAD_EXPLICIT_SCHED);
  CHECK_EQ(pthread_setschedparam(pthread_self(), SCHED_OTHER, &p), 0);
  /* a real-time policy and priority, if NPTL may */
  CHECK_EQ(pthread_attr_setschedpolicy(&a, SCHED_FIFO), 0);
  p.sched_priority = 7;
  CHECK_EQ(pthread_attr_setschedparam(&a, &p), 0);
  if (spawn_and_see(&a, &s)) {
    CHECK_EQ(s.policy, SCHED_FIFO);
    CHECK_EQ(s.prio, 7);
  } else {
    printf("real-time policies not permitted here: skipped\n");
  }
  pthread_attr_destroy(&a);
}

static void *idle_thread(void *arg) {
  pthread_barrier_t *b = arg;
  pthread_barrier_wait(b); /* started */
  pthread_barrier_wait(b); /* checked */
  return NULL;
}

/* Another thread's policy and priority, set and read back. */
static void other_thread(void) {
  pthread_barrier_t b;
  CHECK_EQ(pthread_barrier_init(&b, NULL, 2), 0);
  pthread_t t;
  CHECK_EQ(pthread_create(&t, NULL, idle_thread, &b), 0);
  pthread_barrier_wait(&b);
  struct sched_param p = {.sched_priority = 3};
  int e = pthread_setschedparam(t, SCHED_RR, &p);
  if (e == EPERM) {
    printf("real-time policies not permitted here: skipped\n");
  } else {
    CHECK_EQ(e, 0);
    int policy;
    CHECK_EQ(pthread_getschedparam(t, &policy, &p), 0);
    CHECK_EQ(policy, SCHED_RR);
    CHECK_EQ(p.sched_priority, 3);
    CHECK_EQ(pthread_setschedprio(t, 9), 0);
    CHECK_EQ(pthread_getschedparam(t, &policy, &p), 0);
    CHECK_EQ(policy, SCHED_RR);
    CHECK_EQ(p.sched_priority, 9);
    CHECK_EQ(pthread_setschedprio(t, 0), EINVAL); /* RR: 1..99 */
    p.sched_priority = 0;
    CHECK_EQ(pthread_setschedparam(t, SCHED_OTHER, &p), 0);
  }
  pthread_barrier_wait(&b);
  CHECK_EQ(pthread_join(t, NULL), 0);
  pthread_barrier_destroy(&b);
}

static void mutex_protocols(void) {
  pthread_mutexattr_t ma;
  int v;
  CHECK_EQ(pthread_mutexattr_init(&ma), 0);
  CHECK_EQ(pthread_mutexattr_getprotocol(&ma, &v), 0);
  CHECK_EQ(v, PTHREAD_PRIO_NONE);
  CHECK_EQ(pthread_mutexattr_setprotocol(&ma, PTHREAD_PRIO_INHERIT), 0);
  CHECK_EQ(pthread_mutexattr_getprotocol(&ma, &v), 0);
  CHECK_EQ(v, PTHREAD_PRIO_INHERIT);
  pthread_mutex_t m;
  CHECK_EQ(pthread_mutex_init(&m, &ma), 0);
  CHECK_EQ(pthread_mutex_lock(&m), 0);
  CHECK_EQ(pthread_mutex_unlock(&m), 0);
  CHECK_EQ(pthread_mutex_getprioceiling(&m, &v), EINVAL); /* not PROTECT */
  CHECK_EQ(pthread_mutex_destroy(&m), 0);
  CHECK_EQ(pthread_mutexattr_setprotocol(&ma, PTHREAD_PRIO_PROTECT), 0);
  CHECK_EQ(pthread_mutexattr_getprotocol(&ma, &v), 0);
  CHECK_EQ(v, PTHREAD_PRIO_PROTECT);
  CHECK_EQ(pthread_mutexattr_setprioceiling(&ma, 0), EINVAL);
  CHECK_EQ(pthread_mutexattr_setprioceiling(&ma, 100), EINVAL);
  CHECK_EQ(pthread_mutexattr_setprioceiling(&ma, 20), 0);
  CHECK_EQ(pthread_mutexattr_getprioceiling(&ma, &v), 0);
  CHECK_EQ(v, 20);
  CHECK_EQ(pthread_mutex_init(&m, &ma), 0);
  CHECK_EQ(pthread_mutex_getprioceiling(&m, &v), 0);
  CHECK_EQ(v, 20);
  int old = -1;
  int e = pthread_mutex_setprioceiling(&m, 30, &old);
  if (e == EPERM || e == EINVAL) { /* NPTL: the lock boosts to FIFO 20 */
    printf("priority ceilings not permitted here: skipped\n");
  } else {
    CHECK_EQ(e, 0);
    CHECK_EQ(old, 20);
    CHECK_EQ(pthread_mutex_getprioceiling(&m, &v), 0);
    CHECK_EQ(v, 30);
    CHECK_EQ(pthread_mutex_setprioceiling(&m, 100, &old), EINVAL);
  }
  CHECK_EQ(pthread_mutex_destroy(&m), 0);
  CHECK_EQ(pthread_mutexattr_destroy(&ma), 0);
}

int main(void) {
  report_on_swarm();
  invalid();
  inheritance();
  other_thread();
  mutex_protocols();
  printf("OK\n");
  return 0;
}
