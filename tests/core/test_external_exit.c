/* The end of a kernel thread that is not a worker: many short kernel
 * threads (NPTL's pthread_create, no drop-in) each call swarm_self and
 * swarm_setspecific with a destructor, half of them end by returning, half
 * by pthread_exit. When each has ended: its destructors ran once, with its
 * own values, on that kernel thread, while its handle still named it; its
 * descriptor went back (swarm_stats' descriptors_live does not grow with
 * the number of threads), and its handle answers ESRCH (join and detach),
 * also once the descriptor names a later kernel thread. A destructor that
 * sets a value again gets a second round (POSIX's iterations). */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <swarm.h>
#include <unistd.h>

#include "check.h"

#define N 2000
#define BATCH 8

struct seen {
  _Atomic int ran;          /* destructor calls with this value */
  _Atomic int rounds;       /* of them, the second-round key's */
  swarm_thread_t handle;    /* swarm_self on the kernel thread */
  _Atomic int self_matched; /* the destructor's swarm_self was the handle */
};

static struct seen seen[N];
static swarm_thread_t sorted[N];

static swarm_thread_t *handles_sorted(void) {
  for (int i = 0; i < N; i++)
    sorted[i] = seen[i].handle;
  return sorted;
}

/* By slot (the low 32 bits), then by generation. */
static int cmp_handle(const void *a, const void *b) {
  swarm_thread_t x = *(const swarm_thread_t *)a, y = *(const swarm_thread_t *)b;
  uint64_t kx = x << 32 | x >> 32, ky = y << 32 | y >> 32;
  return kx < ky ? -1 : kx > ky;
}
static swarm_key_t key, again_key;

static void destructor(void *v) {
  struct seen *s = v;
  CHECK(s >= seen && s < seen + N, "a value that was never set: %p", v);
  /* Still this kernel thread's descriptor, on the same kernel thread. */
  if (swarm_self() == s->handle)
    atomic_fetch_add(&s->self_matched, 1);
  atomic_fetch_add(&s->ran, 1);
}

/* Sets again_key once more from its own destructor: a second round. */
static void again_destructor(void *v) {
  struct seen *s = v;
  if (atomic_fetch_add(&s->rounds, 1) == 0)
    CHECK_EQ(swarm_setspecific(again_key, s), 0);
}

static void *kernel_thread(void *arg) {
  long i = (long)arg;
  CHECK_EQ(swarm_worker_id(), -1);
  swarm_thread_t me = swarm_self();
  CHECK(me != SWARM_THREAD_NONE);
  seen[i].handle = me;
  CHECK_EQ(swarm_join(me, NULL), EDEADLK);
  CHECK_EQ(swarm_setspecific(key, &seen[i]), 0);
  CHECK(swarm_getspecific(key) == &seen[i]);
  if (i % 4 == 0)
    CHECK_EQ(swarm_setspecific(again_key, &seen[i]), 0);
  /* A lock, as a native program's thread would take one. */
  static swarm_mutex_t m = SWARM_MUTEX_INITIALIZER;
  CHECK_EQ(swarm_mutex_lock(&m), 0);
  CHECK_EQ(swarm_mutex_unlock(&m), 0);
  if (i % 2)
    pthread_exit(NULL);
  return NULL;
}

static void run_batch(long from, long to) {
  pthread_t kt[BATCH];
  for (long i = from; i < to; i++)
    CHECK_EQ(pthread_create(&kt[i - from], NULL, kernel_thread, (void *)i), 0);
  for (long i = from; i < to; i++)
    CHECK_EQ(pthread_join(kt[i - from], NULL), 0);
}

static uint64_t live(void) {
  swarm_stats_t st;
  CHECK_EQ(swarm_stats_get(&st), 0);
  return st.descriptors_live;
}

int main(void) {
  CHECK_EQ(swarm_init(NULL), 0);
  CHECK_EQ(swarm_key_create(&key, destructor), 0);
  CHECK_EQ(swarm_key_create(&again_key, again_destructor), 0);
  run_batch(0, BATCH); /* the libc key and the first descriptors exist */
  uint64_t before = live();
  for (long i = BATCH; i < N; i += BATCH)
    run_batch(i, i + BATCH < N ? i + BATCH : N);
  uint64_t after = live();
  printf("descriptors live: %llu after %d kernel threads, %llu after %d\n",
         (unsigned long long)before, BATCH, (unsigned long long)after, N);
  /* Without the release every kernel thread kept one: N - BATCH more. */
  CHECK_EQ(after, before);

  for (int i = 0; i < N; i++) {
    int ran = atomic_load(&seen[i].ran);
    int matched = atomic_load(&seen[i].self_matched);
    int rounds = atomic_load(&seen[i].rounds);
    CHECK(ran == 1 && matched == 1 && rounds == (i % 4 == 0 ? 2 : 0),
          "thread %d: destructor ran %d time(s), %d with its own handle, "
          "second key %d round(s)",
          i, ran, matched, rounds);
    /* Released with a new generation: the handle names no thread. */
    int j = swarm_join(seen[i].handle, NULL), d = swarm_detach(seen[i].handle);
    CHECK(j == ESRCH && d == ESRCH, "thread %d: join %d, detach %d", i, j, d);
  }
  /* The descriptors were reused (a few slots for all N), each time under a
   * new handle (the generation). */
  qsort(handles_sorted(), N, sizeof(swarm_thread_t), cmp_handle);
  int slots = 1;
  for (int i = 1; i < N; i++) {
    CHECK(sorted[i] != sorted[i - 1], "a handle given twice");
    slots += (uint32_t)sorted[i] != (uint32_t)sorted[i - 1];
  }
  printf("%d kernel threads used %d descriptor slot(s)\n", N, slots);
  CHECK(slots < N / 2);
  CHECK_EQ(swarm_key_delete(key), 0);
  CHECK_EQ(swarm_key_delete(again_key), 0);
  CHECK_EQ(swarm_finalize(), 0);
  TEST_PASS("external_exit");
  return 0;
}
