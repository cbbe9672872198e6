/*
 * core/stack.c — thread stacks: mmap'd with a guard region below, cached.
 *
 * Page faults on fresh stacks were the scaling killer the MassiveThreads
 * paper measured, so a stack is reused while its pages are still mapped:
 *  - each worker keeps a LIFO cache of free default-size stacks (owner-only,
 *    no atomics; the most recently used, cache-hot stack comes back first);
 *  - an exiting thread leaves its stack on its descriptor for the next spawn
 *    that takes that descriptor (spawn.c: kept stacks, a bounded number per
 *    worker); past the bound, a stack returns to the cache when its thread
 *    exits, not when the thread is joined (the exiting context frees it in
 *    the "after" step of its last switch, once nothing runs on it);
 *  - a cache above STACK_CACHE_MAX spills half to a global pool; an empty
 *    cache refills a batch from the pool, or maps a batch of STACK_BATCH
 *    stacks with one mmap;
 *  - the global pool keeps at most STACK_POOL_MAX stacks, fewer under a
 *    memory limit (limits_stack_pool_max: 1/8 of it), and unmaps the rest,
 *    so a burst of threads does not pin its memory for ever;
 *  - at the edge (core/limits.h) a refused batch is retried as one stack,
 *    a memory cgroup is asked for room before stacks are mapped; a single
 *    stack refused brings back the free stacks other workers hold
 *    (reclaim.c: their caches and the stacks kept on their free
 *    descriptors, which only their owners touch, so each is asked and
 *    gives them to the pool at its next park or scheduler round), so that
 *    a limit's room is not stranded in a cache the spawning worker cannot
 *    reach; only then is it EAGAIN, with one line on stderr naming the
 *    limit.
 * Stacks of other sizes (swarm_attr_setstacksize) are mapped and unmapped one
 * at a time.
 *
 * The free-list link of a cached stack is kept in its own top bytes.
 */
#include <errno.h>
#include <pthread.h>

#include "core/core.h"
#include "core/limits.h"
#include "os/os.h"

#ifdef SWARM_ASAN
#include <sanitizer/asan_interface.h>
#endif

#define STACK_BATCH 16
#define STACK_POOL_MAX 4096

static struct {
  struct spinlock lock; /* LOCK_STACK_POOL */
  void *head;
  uint32_t count;
  size_t size; /* the default size the pooled stacks have */
} stack_pool = {.lock = SPINLOCK_INIT(LOCK_STACK_POOL)};

static void stack_unmap(char *lo, size_t size) {
  os_unmap(lo - swarm_rt.guard_size, size + swarm_rt.guard_size);
}

/* Maps `count` stacks (a batch, or one); NULL if refused, which is
 * reported (limits.h: once per process, naming the limit) when `report`. */
static char *stack_map(size_t size, int count, bool report) {
  size_t bytes = (size + swarm_rt.guard_size) * (size_t)count;
  if (!limits_cgroup_room(bytes)) {
    if (report)
      limits_refused("thread stacks", bytes, LIMIT_CGROUP);
    return NULL;
  }
  char *base = os_map_stacks(size, swarm_rt.guard_size, count);
  if (!base && report)
    limits_refused("thread stacks", bytes, LIMIT_KERNEL);
  return base;
}

static bool pool_has_stacks(void) { /* a glance, without the lock */
  return __atomic_load_n(&stack_pool.count, __ATOMIC_RELAXED) > 0;
}

/* Unmaps every stack in the pool. */
static void pool_drain(void) {
  spin_lock(&stack_pool.lock);
  while (stack_pool.head) {
    char *lo = stack_pool.head;
    stack_pool.head = *stack_link(lo, stack_pool.size);
    stack_unmap(lo, stack_pool.size);
  }
  stack_pool.count = 0;
  spin_unlock(&stack_pool.lock);
}

/* A stack of `size` could not be mapped at a limit: brings back the free
 * stacks the other workers hold (reclaim.c; self's own kept ones to its
 * cache), and for a size other than the default also unmaps the pool's,
 * to make room. self may be NULL (a kernel thread that is not a worker). */
static void stack_reclaim(struct worker *self, size_t size) {
  bool other_size = size != swarm_rt.default_stack;
  if (self)
    desc_cache_drop_stacks(self);
  if (self && other_size)
    stack_cache_flush(self);
  reclaim_from_workers(self, other_size ? NULL : pool_has_stacks);
  if (other_size)
    pool_drain();
}

/* Moves up to a batch of the pool's stacks to w's cache; how many. */
static uint32_t pool_take_batch(struct worker *w, size_t size) {
  spin_lock(&stack_pool.lock);
  if (stack_pool.size != size) {
    /* Pool holds stacks of an earlier default (runtime restarted with
     * another size): drop them. */
    while (stack_pool.head) {
      char *lo = stack_pool.head;
      stack_pool.head = *stack_link(lo, stack_pool.size);
      stack_unmap(lo, stack_pool.size);
    }
    stack_pool.count = 0;
    stack_pool.size = size;
  }
  uint32_t n = 0;
  while (n < STACK_BATCH && stack_pool.head) {
    char *lo = stack_pool.head;
    stack_pool.head = *stack_link(lo, size);
    stack_pool.count--;
    *stack_link(lo, size) = w->stacks.head;
    w->stacks.head = lo;
    n++;
  }
  spin_unlock(&stack_pool.lock);
  w->stacks.count += n;
  return n;
}

/* Fills w's empty cache: from the pool, else a new batch; near a limit
 * one stack, else what other workers give back (stack_reclaim). */
static int stack_refill(struct worker *w, size_t size) {
  if (pool_take_batch(w, size) > 0)
    return 0;
  size_t guard = swarm_rt.guard_size;
  int count = STACK_BATCH;
  char *base = stack_map(size, count, false);
  if (!base && !(base = stack_map(size, count = 1, false))) {
    stack_reclaim(w, size); /* may give w's kept stacks to its cache */
    if (w->stacks.count > 0 || pool_take_batch(w, size) > 0)
      return 0;
    if (!(base = stack_map(size, count, true)))
      return EAGAIN;
  }
  for (int i = 0; i < count; i++) {
    char *lo = base + (size_t)i * (size + guard) + guard;
    *stack_link(lo, size) = w->stacks.head;
    w->stacks.head = lo;
  }
  w->stacks.count += (uint32_t)count;
  w->stats.stacks_mapped += (uint64_t)count;
  return 0;
}

/* One default-size stack from the pool, if it has one. */
static bool pool_take_one(size_t size, struct stack_ref *out) {
  spin_lock(&stack_pool.lock);
  char *lo = stack_pool.size == size ? stack_pool.head : NULL;
  if (lo) {
    stack_pool.head = *stack_link(lo, size);
    stack_pool.count--;
  }
  spin_unlock(&stack_pool.lock);
  out->lo = lo;
  out->size = lo ? size : 0;
  return lo != NULL;
}

int stack_alloc_slow(struct worker *w, size_t size, struct stack_ref *out) {
  bool default_size = size == swarm_rt.default_stack;
  if (w && default_size) {
    if (stack_refill(w, size) != 0)
      return EAGAIN;
    return stack_alloc(w, size, out);
  }
  /* No worker cache (a kernel thread that is not a worker), or a size of
   * its own: the pool, else one mapping; at a limit, what other workers
   * hold comes back first (and for another size, the pool is unmapped). */
  if (default_size && pool_take_one(size, out))
    return 0;
  char *base = stack_map(size, 1, false);
  if (!base) {
    stack_reclaim(w, size);
    if (default_size && pool_take_one(size, out))
      return 0;
    if (!(base = stack_map(size, 1, true)))
      return EAGAIN;
  }
  out->lo = base + swarm_rt.guard_size;
  out->size = size;
  return 0;
}

static void pool_put_list(void *head, uint32_t n, size_t size) {
  spin_lock(&stack_pool.lock);
  if (stack_pool.size != size && stack_pool.count == 0)
    stack_pool.size = size;
  uint32_t max = limits_stack_pool_max(size + swarm_rt.guard_size,
                                       STACK_POOL_MAX, STACK_BATCH);
  while (head) {
    char *lo = head;
    head = *stack_link(lo, size);
    if (stack_pool.size == size && stack_pool.count < max) {
      *stack_link(lo, size) = stack_pool.head;
      stack_pool.head = lo;
      stack_pool.count++;
    } else {
      stack_unmap(lo, size);
    }
  }
  spin_unlock(&stack_pool.lock);
  (void)n;
}

#ifdef SWARM_ASAN
void stack_unpoison(struct stack_ref s) {
  /* Frames left by switching away were never unwound: clear their poison so
   * the next thread on this stack starts clean. */
  __asan_unpoison_memory_region(s.lo, s.size);
}
#endif

void stack_release_slow(struct worker *w, struct stack_ref s) {
  if (w && s.size == swarm_rt.default_stack) {
    /* Cache full: keep s, spill the older half (colder) to the pool. */
    *stack_link(s.lo, s.size) = w->stacks.head;
    w->stacks.head = s.lo;
    char *keep = s.lo;
    for (int i = 1; i < STACK_CACHE_MAX / 2; i++)
      keep = *stack_link(keep, s.size);
    void *spill = *stack_link(keep, s.size);
    *stack_link(keep, s.size) = NULL;
    uint32_t n = w->stacks.count + 1 - STACK_CACHE_MAX / 2;
    w->stacks.count = STACK_CACHE_MAX / 2;
    pool_put_list(spill, n, s.size);
    return;
  }
  if (s.size == swarm_rt.default_stack) {
    *stack_link(s.lo, s.size) = NULL;
    pool_put_list(s.lo, 1, s.size);
    return;
  }
  stack_unmap(s.lo, s.size);
}

void stack_cache_flush(struct worker *w) {
  pool_put_list(w->stacks.head, w->stacks.count, swarm_rt.default_stack);
  w->stacks.head = NULL;
  w->stacks.count = 0;
}

void stack_pool_after_fork(void) {
  spin_init(&stack_pool.lock, LOCK_STACK_POOL);
}

void stack_pool_shutdown(void) {
  pool_drain();
}
