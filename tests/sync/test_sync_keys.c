/* Thread-specific data: values are per swarm thread (not per worker) and
 * survive migration across workers; a deleted key reads NULL and its index
 * may be reused without showing stale values; EINVAL for bad keys; EAGAIN
 * when all keys are taken. Destructors run in sync_thread_exit (called here
 * directly, as the drop-in does on every pthread exit, and by core's exit
 * hook when a native thread returns), repeat while destructors set values,
 * and stop after SWARM_DESTRUCTOR_ITERATIONS. */
#include "sync/sync.h"
#include "sync_util.h"

static swarm_key_t key, key2;
static _Atomic int dtor_calls, resets;
static void dtor(void *v) {
  CHECK(v != NULL);
  atomic_fetch_add(&dtor_calls, 1);
}
static void dtor_resetting(void *v) {
  /* sets a value again: another round follows */
  atomic_fetch_add(&resets, 1);
  swarm_setspecific(key2, v);
}

static void *own_value(void *a) {
  CHECK(swarm_getspecific(key) == NULL);
  CHECK_EQ(swarm_setspecific(key, a), 0);
  for (int i = 0; i < 50; i++) {
    swarm_yield(); /* may move to another worker */
    CHECK(swarm_getspecific(key) == a);
  }
  sync_thread_exit(sync_self());
  CHECK(swarm_getspecific(key) == NULL);
  return NULL;
}

/* Sets a value and just returns: core's exit hook must run the destructor. */
static swarm_key_t key3;
static _Atomic long native_dtor_sum;
static void dtor_native(void *v) {
  atomic_fetch_add(&native_dtor_sum, (long)v);
}
static void *plain_exit(void *a) {
  CHECK_EQ(swarm_setspecific(key3, a), 0);
  swarm_yield();
  return NULL;
}

static void *resetter(void *a) {
  CHECK_EQ(swarm_setspecific(key2, a), 0);
  sync_thread_exit(sync_self());
  return NULL;
}

int main(void) {
  start2();
  CHECK_EQ(swarm_key_create(NULL, NULL), EINVAL);
  CHECK_EQ(swarm_key_create(&key, dtor), 0);
  CHECK_EQ(swarm_setspecific(SWARM_KEYS_MAX, NULL), EINVAL);
  CHECK_EQ(swarm_key_delete(SWARM_KEYS_MAX + 5), EINVAL);
  enum { N = 40 };
  swarm_thread_t t[N];
  for (long i = 0; i < N; i++)
    CHECK_EQ(swarm_spawn(&t[i], NULL, own_value, (void *)(i + 1)), 0);
  for (int i = 0; i < N; i++)
    CHECK_EQ(swarm_join(t[i], NULL), 0);
  CHECK_EQ(atomic_load(&dtor_calls), N);

  /* deleted keys read NULL; a reused index shows no stale value */
  CHECK_EQ(swarm_setspecific(key, (void *)7), 0);
  CHECK_EQ(swarm_key_delete(key), 0);
  CHECK_EQ(swarm_key_delete(key), EINVAL);
  CHECK(swarm_getspecific(key) == NULL);
  CHECK_EQ(swarm_setspecific(key, (void *)1), EINVAL);
  swarm_key_t again;
  CHECK_EQ(swarm_key_create(&again, NULL), 0);
  CHECK_EQ(again, key);
  CHECK(swarm_getspecific(again) == NULL);
  CHECK_EQ(swarm_key_delete(again), 0);

  CHECK_EQ(swarm_key_create(&key2, dtor_resetting), 0);
  swarm_thread_t r;
  CHECK_EQ(swarm_spawn(&r, NULL, resetter, (void *)3), 0);
  CHECK_EQ(swarm_join(r, NULL), 0);
  CHECK_EQ(atomic_load(&resets), SWARM_DESTRUCTOR_ITERATIONS);
  CHECK_EQ(swarm_key_delete(key2), 0);

  /* all keys taken */
  static swarm_key_t all[SWARM_KEYS_MAX];
  int n = 0;
  while (swarm_key_create(&all[n], NULL) == 0)
    n++;
  CHECK_EQ(n, SWARM_KEYS_MAX);
  swarm_key_t extra;
  CHECK_EQ(swarm_key_create(&extra, NULL), EAGAIN);
  for (int i = 0; i < n; i++)
    CHECK_EQ(swarm_key_delete(all[i]), 0);
  /* native threads that simply return run their destructors (core's exit
   * hook), with their own values */
  CHECK_EQ(swarm_key_create(&key3, dtor_native), 0);
  swarm_thread_t pt[10];
  for (long i = 0; i < 10; i++)
    CHECK_EQ(swarm_spawn(&pt[i], NULL, plain_exit, (void *)(i + 1)), 0);
  for (int i = 0; i < 10; i++)
    CHECK_EQ(swarm_join(pt[i], NULL), 0);
  CHECK_EQ(atomic_load(&native_dtor_sum), 55);
  CHECK_EQ(swarm_key_delete(key3), 0);
  /* main's own record (it set a value above): core has no exit hook for the
   * main flow either, so release it as its exit would. */
  sync_thread_exit(sync_self());
  CHECK_EQ(swarm_finalize(), 0);
  TEST_PASS("sync_keys");
  return 0;
}
