/*
 * tests/trace/trace_workload.c — a program for the trace tests: with
 * SWARM_TRACE set it runs a mix that makes every kind of event (spawns and
 * joins that park, steals, mutex and condition-variable waits, sleeps,
 * yields, an I/O wait, idle workers sleeping), then prints one JSON line with
 * each worker's counters as the scheduler kept them (white-box: swarm_rt), read
 * once the mix is over, for check_trace.py to compare with the trace.
 * Usage: trace_workload finalize|exit — end with swarm_finalize, or return
 * from main with the runtime still running (the trace is closed at exit).
 */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "core/core.h"
#include "swarm.h"
#include "swarm/io.h"

static void *fib(void *arg) {
  long n = (long)arg;
  if (n < 2)
    return arg;
  swarm_thread_t a, b;
  void *x, *y;
  CHECK_EQ(swarm_spawn(&a, NULL, fib, (void *)(n - 1)), 0);
  CHECK_EQ(swarm_spawn(&b, NULL, fib, (void *)(n - 2)), 0);
  CHECK_EQ(swarm_join(a, &x), 0);
  CHECK_EQ(swarm_join(b, &y), 0);
  return (void *)((long)x + (long)y);
}

static swarm_mutex_t m = SWARM_MUTEX_INITIALIZER;
static swarm_cond_t c = SWARM_COND_INITIALIZER;
static long counter, turn;

static void spin_us(long us) { /* hold the CPU: others must wait for us */
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  do
    clock_gettime(CLOCK_MONOTONIC, &b);
  while ((b.tv_sec - a.tv_sec) * 1000000L + (b.tv_nsec - a.tv_nsec) / 1000 <
         us);
}

static void *contend(void *arg) {
  (void)arg;
  for (int i = 0; i < 20; i++) {
    swarm_mutex_lock(&m);
    counter++;
    /* Held across a park: others find it held past their spinning and
     * park (a barging mutex lets mere yields go without a mutex park). */
    if (i % 5 == 0)
      swarm_sleep_ns(200000);
    swarm_yield(); /* and yield parks when others are runnable here */
    swarm_mutex_unlock(&m);
  }
  return NULL;
}

static void *ping(void *arg) { /* strict alternation through a condvar */
  long me = (long)arg;
  for (int i = 0; i < 10; i++) {
    swarm_mutex_lock(&m);
    while (turn % 2 != me)
      swarm_cond_wait(&c, &m);
    turn++;
    swarm_cond_broadcast(&c);
    swarm_mutex_unlock(&m);
  }
  return NULL;
}

/* A yield parks only when something else is runnable on the worker; the
 * parent's continuation is, while its child runs (work-first), unless the
 * other worker steals it first. Exact test of whether our yield parked:
 * only the worker's owner counts parks, and if we did not park nothing else
 * ran on that worker in between. */
static void *yield_child(void *arg) {
  (void)arg;
  struct worker *w = worker_current();
  uint64_t before = __atomic_load_n(&w->stats.parks, __ATOMIC_RELAXED);
  swarm_yield();
  return (void *)(long)(__atomic_load_n(&w->stats.parks, __ATOMIC_RELAXED) !=
                        before);
}

static void *yield_parent(void *arg) { /* until a yield has parked */
  (void)arg;
  for (int i = 0; i < 100000; i++) {
    swarm_thread_t t;
    void *parked;
    CHECK_EQ(swarm_spawn(&t, NULL, yield_child, NULL), 0);
    CHECK_EQ(swarm_join(t, &parked), 0);
    if (parked)
      return (void *)1L;
  }
  return NULL;
}

static void *sleeper(void *arg) {
  (void)arg;
  swarm_sleep_ns(2000000);
  return NULL;
}

/* A read of an empty pipe parks the reader until the writer's data comes
 * (an I/O park, readied by the poller). The reader runs first (work-first
 * spawn); the writer writes only once a thread waits in the I/O layer (its
 * `waiting` hook), so the reader finds the pipe empty even when its kernel
 * thread was descheduled for longer than the writer's sleep (seen at load
 * 20 on 2 cores: a read that found the data and never parked). */
static int io_pipe[2];
static void *io_reader(void *arg) {
  (void)arg;
  char c;
  CHECK_EQ(swarm_read(io_pipe[0], &c, 1), 1);
  return (void *)(long)c;
}
static void *io_writer(void *arg) {
  (void)arg;
  swarm_sleep_ns(2000000);
  for (int i = 0; i < 10000; i++) { /* 10 s at most */
    const struct swarm_io_hooks *io =
        atomic_load_explicit(&swarm_io_hooks, memory_order_acquire);
    if (io && io->waiting())
      break;
    swarm_sleep_ns(1000000);
  }
  CHECK_EQ(swarm_write(io_pipe[1], "x", 1), 1);
  return NULL;
}

static void *busy_leaf(void *arg) {
  /* Hold this worker until the other one has stolen (the parent waits in
   * our deque): steals happen however loaded the machine is. */
  swarm_stats_t s;
  for (int i = 0; i < 50000; i++) { /* 10 s at most */
    CHECK_EQ(swarm_stats_get(&s), 0);
    if (s.steals_succeeded > 0)
      break;
    spin_us(200);
  }
  spin_us(200);
  return arg;
}

static void *wide(void *arg) { /* children pile up in the deque: steals */
  (void)arg;
  swarm_thread_t t[16];
  for (int i = 0; i < 16; i++)
    CHECK_EQ(swarm_spawn(&t[i], NULL, busy_leaf, NULL), 0);
  for (int i = 0; i < 16; i++)
    CHECK_EQ(swarm_join(t[i], NULL), 0);
  return NULL;
}

int main(int argc, char **argv) {
  CHECK(argc == 2);
  bool finalize = !strcmp(argv[1], "finalize");
  swarm_config_t cfg = {0};
  cfg.workers = 2;
  CHECK_EQ(swarm_init(&cfg), 0);
  swarm_thread_t t[8];
  void *r;
  CHECK_EQ(swarm_spawn(&t[0], NULL, fib, (void *)14L), 0);
  CHECK_EQ(swarm_join(t[0], &r), 0);
  CHECK_EQ((long)r, 377);
  for (int i = 0; i < 4; i++)
    CHECK_EQ(swarm_spawn(&t[i], NULL, contend, NULL), 0);
  for (int i = 0; i < 4; i++)
    CHECK_EQ(swarm_join(t[i], NULL), 0);
  CHECK_EQ(counter, 80);
  for (long i = 0; i < 2; i++)
    CHECK_EQ(swarm_spawn(&t[i], NULL, ping, (void *)i), 0);
  for (int i = 0; i < 2; i++)
    CHECK_EQ(swarm_join(t[i], NULL), 0);
  CHECK_EQ(swarm_spawn(&t[0], NULL, yield_parent, NULL), 0);
  CHECK_EQ(swarm_join(t[0], &r), 0);
  CHECK(r == (void *)1L); /* a yield parked within 100000 tries */
  CHECK_EQ(swarm_spawn(&t[0], NULL, sleeper, NULL), 0);
  CHECK_EQ(swarm_join(t[0], NULL), 0);
  CHECK_EQ(pipe(io_pipe), 0);
  CHECK_EQ(swarm_spawn(&t[0], NULL, io_reader, NULL), 0);
  CHECK_EQ(swarm_spawn(&t[1], NULL, io_writer, NULL), 0);
  CHECK_EQ(swarm_join(t[0], &r), 0);
  CHECK_EQ((long)r, 'x');
  CHECK_EQ(swarm_join(t[1], NULL), 0);
  CHECK_EQ(swarm_spawn(&t[0], NULL, wide, NULL), 0);
  CHECK_EQ(swarm_join(t[0], NULL), 0);
  /* every worker idle long enough to sleep on its futex */
  struct timespec nap = {0, 20000000};
  nanosleep(&nap, NULL);

  /* The mix is over: only idle workers move now (their sleeps and runs of
   * nothing), and main's own park in swarm_finalize comes later. */
  /* Every slot: the monitor may have run threads on spare workers when
   * the machine was busy enough to make the workers look stuck. */
  printf("{\"regular\":%d,\"workers\":[", swarm_rt.nworkers);
  for (int i = 0; i < swarm_rt.nslots; i++) {
    struct worker *w = &swarm_rt.workers[i];
    printf(
        "%s{\"spawned\":%llu,\"run\":%llu,\"steals\":%llu,\"parks\":%llu,"
        "\"sleeps\":%llu}",
        i ? "," : "", (unsigned long long)atomic_load(&w->stat_spawned_pub),
        (unsigned long long)__atomic_load_n(&w->stats.run, __ATOMIC_RELAXED),
        (unsigned long long)__atomic_load_n(&w->stats.steals_ok,
                                            __ATOMIC_RELAXED),
        (unsigned long long)__atomic_load_n(&w->stats.parks, __ATOMIC_RELAXED),
        (unsigned long long)__atomic_load_n(&w->stats.sleeps,
                                            __ATOMIC_RELAXED));
  }
  printf("]}\n");
  fflush(stdout);
  if (finalize)
    CHECK_EQ(swarm_finalize(), 0);
  return 0;
}
