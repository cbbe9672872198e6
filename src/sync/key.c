/*
 * sync/key.c — thread-specific data: swarm_key_* and destructors.
 *
 * Keys are indices into a global registry of SWARM_KEYS_MAX entries, each
 * with a sequence number that changes on every create and delete. A thread
 * keeps its values in a table in its sync record (slots[SLOT_SYNC]), each
 * value stamped with the key's sequence number when it was set; a value
 * whose stamp differs from the key's current number belongs to a deleted
 * key and reads as NULL. So delete is O(1) and a reused key index never
 * shows a stale value.
 *
 * Destructors run in sync_thread_exit, on the exiting thread: core calls
 * it through `swarm_thread_exit_hook` (registered below) when a swarm
 * thread with data in a slot exits and when a kernel thread that is not a
 * worker ends (core/park.c); the drop-in calls it itself in its threads'
 * finish(). See docs/sync.md, "Which exits run destructors".
 */
#include <stdlib.h>
#include <string.h>

#include "sync/sync.h"

static struct {
  struct spinlock lock;         /* LOCK_SYNC_OBJECT */
  uint32_t seq[SWARM_KEYS_MAX]; /* odd: in use; even: free */
  void (*destructor[SWARM_KEYS_MAX])(void *);
} keys = {.lock = SPINLOCK_INIT(LOCK_SYNC_OBJECT)};

static inline uint32_t key_seq(swarm_key_t k) {
  return __atomic_load_n(&keys.seq[k], __ATOMIC_ACQUIRE);
}

int swarm_key_create(swarm_key_t *key, void (*destructor)(void *)) {
  if (!key)
    return EINVAL;
  spin_lock(&keys.lock);
  for (uint32_t k = 0; k < SWARM_KEYS_MAX; k++) {
    if ((keys.seq[k] & 1) == 0) {
      keys.destructor[k] = destructor;
      __atomic_store_n(&keys.seq[k], keys.seq[k] + 1, __ATOMIC_RELEASE);
      spin_unlock(&keys.lock);
      *key = k;
      return 0;
    }
  }
  spin_unlock(&keys.lock);
  return EAGAIN;
}

int swarm_key_delete(swarm_key_t key) {
  if (key >= SWARM_KEYS_MAX)
    return EINVAL;
  spin_lock(&keys.lock);
  int r = EINVAL;
  if (keys.seq[key] & 1) {
    keys.destructor[key] = NULL;
    __atomic_store_n(&keys.seq[key], keys.seq[key] + 1, __ATOMIC_RELEASE);
    r = 0;
  }
  spin_unlock(&keys.lock);
  return r;
}

void *swarm_getspecific(swarm_key_t key) {
  if (key >= SWARM_KEYS_MAX)
    return NULL;
  struct sync_thread *rec = sync_thread_of(sync_self(), false);
  if (!rec || key >= rec->nvalues)
    return NULL;
  struct sync_key_value *v = &rec->values[key];
  return v->seq == key_seq(key) ? v->value : NULL;
}

int swarm_setspecific(swarm_key_t key, const void *value) {
  if (key >= SWARM_KEYS_MAX)
    return EINVAL;
  uint32_t seq = key_seq(key);
  if ((seq & 1) == 0)
    return EINVAL;
  struct swarm_thread *self = sync_self();
  struct sync_thread *rec = sync_thread_of(self, value != NULL);
  if (!rec)
    return value ? ENOMEM : 0;
  if (key >= rec->nvalues) {
    if (!value)
      return 0;
    uint32_t n = rec->nvalues ? rec->nvalues : 32;
    while (n <= key)
      n *= 2;
    if (n > SWARM_KEYS_MAX)
      n = SWARM_KEYS_MAX;
    struct sync_key_value *grown = realloc(rec->values, n * sizeof *grown);
    if (!grown)
      return ENOMEM;
    memset(grown + rec->nvalues, 0, (n - rec->nvalues) * sizeof *grown);
    rec->values = grown;
    rec->nvalues = n;
  }
  rec->values[key].seq = seq;
  rec->values[key].value = (void *)value;
  return 0;
}

void sync_thread_exit(struct swarm_thread *self) {
  struct sync_thread *rec = sync_thread_of(self, false);
  if (!rec)
    return;
  for (int round = 0; round < SWARM_DESTRUCTOR_ITERATIONS; round++) {
    bool ran = false;
    for (uint32_t k = 0; k < rec->nvalues; k++) {
      struct sync_key_value *v = &rec->values[k];
      if (!v->value)
        continue;
      void (*d)(void *) = NULL;
      spin_lock(&keys.lock);
      if (keys.seq[k] == v->seq)
        d = keys.destructor[k];
      spin_unlock(&keys.lock);
      void *value = v->value;
      v->value = NULL;
      if (d) {
        /* May block, set values again (grow rec->values), create keys. */
        d(value);
        ran = true;
      }
    }
    if (!ran)
      break;
  }
  /* An interrupter may be in the record (sync_interrupt borrows it):
   * wait for it to be done, and clear the slot, before freeing. */
  sync_thread_record_drop(self);
  free(rec->values);
  free(rec);
  /* Core clears a thread's slots after its exit work, but not the main
   * flow's (core/spawn.c, main_thread_finish), whose descriptor may be
   * handed out again: no mark left there. */
  if (self->kind == THREAD_MAIN)
    __atomic_store_n(&self->slots[SLOT_SYNC], NULL, __ATOMIC_RELEASE);
}

/* Core's thread-exit hook (core.h): registering it makes native threads
 * run their destructors; core calls it only for threads that have data in
 * a slot. */
__attribute__((constructor)) static void key_register_exit_hook(void) {
  swarm_thread_exit_hook = sync_thread_exit;
}
