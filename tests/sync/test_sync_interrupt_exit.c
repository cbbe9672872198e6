/* sync_interrupt racing the end of its target's record. A thread's record
 * (made here by a key value) is freed by sync_thread_exit, which the
 * drop-in calls in every thread's finish() and core at exit; an
 * interrupter that keeps interrupting the thread meanwhile must never
 * touch the freed record. It did: sync_interrupt read the slot, the
 * thread freed the record, and the interrupter stored its flag into, and
 * locked, freed memory, where malloc's free-list link read as a held
 * lock: it spun for good (pthread_cancel in dropin_wait_any and
 * dropin_unwind, once in a few hundred CI runs). Here a kernel thread
 * calls sync_interrupt on the target over and over while the target runs
 * sync_thread_exit, until the record is gone, 200 times: the
 * old code hangs at once (CTest's timeout) or, under ASan, reports a use
 * after free. The target stays alive until the interrupter stops. */
#include <pthread.h>

#include "sync/sync.h"
#include "sync_util.h"

#define ROUNDS 200

static swarm_key_t key;
static struct swarm_thread *_Atomic target;
static _Atomic int go, stopped;
static long interrupts;

static void *exiter(void *a) {
  CHECK_EQ(swarm_setspecific(key, a), 0); /* makes the record */
  atomic_store(&target, sync_self());
  while (!atomic_load(&go))
    swarm_yield();
  sync_thread_exit(sync_self()); /* frees the record */
  CHECK(swarm_getspecific(key) == NULL);
  while (!atomic_load(&stopped))
    swarm_yield();
  return NULL;
}

static void *interrupter(void *a) {
  (void)a;
  struct swarm_thread *t;
  while (!(t = atomic_load(&target)))
    ;
  atomic_store(&go, 1);
  /* until no record is left (the low bits are the record's own flags) */
  while ((uintptr_t)__atomic_load_n(&t->slots[SLOT_SYNC], __ATOMIC_ACQUIRE) &
         ~(uintptr_t)15) {
    CHECK_EQ(sync_interrupt(t), 0);
    interrupts++;
  }
  atomic_store(&stopped, 1);
  return NULL;
}

int main(void) {
  start2();
  CHECK_EQ(swarm_key_create(&key, NULL), 0);
  for (int i = 0; i < ROUNDS; i++) {
    atomic_store(&target, NULL);
    atomic_store(&go, 0);
    atomic_store(&stopped, 0);
    pthread_t k;
    CHECK_EQ(pthread_create(&k, NULL, interrupter, NULL), 0);
    swarm_thread_t e;
    CHECK_EQ(swarm_spawn(&e, NULL, exiter, &key), 0);
    CHECK_EQ(swarm_join(e, NULL), 0);
    CHECK_EQ(pthread_join(k, NULL), 0);
  }
  printf("%d records freed, %ld interrupts while they were\n", ROUNDS,
         interrupts);
  CHECK_EQ(swarm_finalize(), 0);
  printf("OK\n");
  return 0;
}
