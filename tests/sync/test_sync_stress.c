/* Contention on 2 workers with many more threads: counts stay exact.
 *  - 64 threads increment one counter under one mutex;
 *  - producers and consumers pass items through a bounded buffer guarded
 *    by a mutex and two condition variables; every item arrives once;
 *  - readers check an invariant writers keep under a rwlock;
 *  - barrier rounds where every thread checks everyone arrived. */
#include "sync_util.h"

#define THREADS 64
static long iters;

static swarm_mutex_t m = SWARM_MUTEX_INITIALIZER;
static long counter;
static void *incr(void *a) {
  (void)a;
  for (long i = 0; i < iters; i++) {
    CHECK_EQ(swarm_mutex_lock(&m), 0);
    counter++;
    if (i % 64 == 0)
      swarm_yield(); /* held across a switch: others must park */
    CHECK_EQ(swarm_mutex_unlock(&m), 0);
  }
  return NULL;
}

#define CAP 8
static swarm_mutex_t bm = SWARM_MUTEX_INITIALIZER;
static swarm_cond_t not_full = SWARM_COND_INITIALIZER;
static swarm_cond_t not_empty = SWARM_COND_INITIALIZER;
static long buf[CAP];
static int head, count;
static long total_in, total_out, items;
static void *producer(void *a) {
  long base = (long)a;
  for (long i = 0; i < items; i++) {
    swarm_mutex_lock(&bm);
    while (count == CAP)
      swarm_cond_wait(&not_full, &bm);
    buf[(head + count++) % CAP] = base + i;
    total_in += base + i;
    swarm_cond_signal(&not_empty);
    swarm_mutex_unlock(&bm);
  }
  return NULL;
}
static void *consumer(void *a) {
  (void)a;
  for (long i = 0; i < items; i++) {
    swarm_mutex_lock(&bm);
    while (count == 0)
      swarm_cond_wait(&not_empty, &bm);
    total_out += buf[head];
    head = (head + 1) % CAP;
    count--;
    swarm_cond_signal(&not_full);
    swarm_mutex_unlock(&bm);
  }
  return NULL;
}

static swarm_rwlock_t rw = SWARM_RWLOCK_INITIALIZER;
static long pair_a, pair_b; /* writers keep a == b */
static _Atomic int readers_in, writers_in;
static void *rw_thread(void *a) {
  long id = (long)a;
  for (long i = 0; i < iters / 4; i++) {
    if ((i + id) % 5 == 0) {
      CHECK_EQ(swarm_rwlock_wrlock(&rw), 0);
      CHECK_EQ(atomic_fetch_add(&writers_in, 1), 0);
      CHECK_EQ(atomic_load(&readers_in), 0);
      pair_a++;
      swarm_yield();
      pair_b++;
      atomic_fetch_sub(&writers_in, 1);
      CHECK_EQ(swarm_rwlock_unlock(&rw), 0);
    } else {
      CHECK_EQ(swarm_rwlock_rdlock(&rw), 0);
      atomic_fetch_add(&readers_in, 1);
      CHECK_EQ(atomic_load(&writers_in), 0);
      CHECK_EQ(pair_a, pair_b);
      atomic_fetch_sub(&readers_in, 1);
      CHECK_EQ(swarm_rwlock_unlock(&rw), 0);
    }
  }
  return NULL;
}

static swarm_barrier_t bar;
static _Atomic long arrived;
static _Atomic int serials;
static long rounds;
static void *bar_thread(void *a) {
  (void)a;
  for (long r = 0; r < rounds; r++) {
    atomic_fetch_add(&arrived, 1);
    int s = swarm_barrier_wait(&bar);
    CHECK(s == 0 || s == SWARM_BARRIER_SERIAL_THREAD);
    if (s)
      atomic_fetch_add(&serials, 1);
    CHECK(atomic_load(&arrived) >= (r + 1) * THREADS);
    swarm_barrier_wait(&bar); /* nobody starts round r+1 early */
  }
  return NULL;
}

static void run_all(void *(*fn)(void *), int n, long arg_base) {
  swarm_thread_t t[THREADS];
  for (int i = 0; i < n; i++)
    CHECK_EQ(swarm_spawn(&t[i], NULL, fn, (void *)(arg_base * i)), 0);
  for (int i = 0; i < n; i++)
    CHECK_EQ(swarm_join(t[i], NULL), 0);
}

int main(void) {
  start2();
  iters = test_scaled(20000, 500);
  run_all(incr, THREADS, 0);
  CHECK_EQ(counter, THREADS * iters);

  items = test_scaled(5000, 200);
  swarm_thread_t p[THREADS / 2], c[THREADS / 2];
  for (int i = 0; i < THREADS / 2; i++) {
    CHECK_EQ(swarm_spawn(&c[i], NULL, consumer, NULL), 0);
    CHECK_EQ(swarm_spawn(&p[i], NULL, producer, (void *)(long)(i * 1000000)),
             0);
  }
  for (int i = 0; i < THREADS / 2; i++) {
    CHECK_EQ(swarm_join(p[i], NULL), 0);
    CHECK_EQ(swarm_join(c[i], NULL), 0);
  }
  CHECK_EQ(total_in, total_out);
  CHECK_EQ(count, 0);

  run_all(rw_thread, THREADS, 1);
  CHECK_EQ(pair_a, pair_b);
  CHECK(pair_a > 0);

  rounds = test_scaled(200, 20);
  CHECK_EQ(swarm_barrier_init(&bar, THREADS), 0);
  run_all(bar_thread, THREADS, 0);
  CHECK_EQ(atomic_load(&serials), rounds);
  CHECK_EQ(swarm_barrier_destroy(&bar), 0);

  swarm_stats_t st;
  CHECK_EQ(swarm_stats_get(&st), 0);
  CHECK(st.parks > 0);
  CHECK_EQ(swarm_finalize(), 0);
  TEST_PASS("sync_stress");
  return 0;
}
