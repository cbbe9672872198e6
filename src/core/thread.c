/*
 * core/thread.c — thread descriptors, handles, join/detach and attributes.
 *
 * Handles. A swarm_thread_t is (generation << 32 | table index << 8), the
 * descriptor's control word without its flags (core.h). Descriptors
 * live in one region that is never unmapped, indexed by the 24 index bits
 * masked with the part mapped so far, so any handle can be looked up
 * without a bound check and without touching freed or unmapped memory (a
 * masked index of a bogus handle lands on some slot whose generation does
 * not match); the generation in the handle must match the
 * one in the descriptor's control word, and releasing a descriptor advances
 * it by 2. That is how a joined (or detached-and-exited) handle answers
 * ESRCH even after its descriptor is reused. Generations are odd, so a zero
 * handle, and any slot never handed out (all zero), names no thread. The
 * generation never wraps: a slot released at the last one (2^32 - 1) is
 * retired for good (control 0, in no free list), so no handle ever names a
 * later thread, whatever the run's length.
 *
 * The control word packs the generation with the state flags (EXITED,
 * DETACHED, CLAIMED, WAITER), so every transition is one atomic operation
 * that also checks the generation — a join racing a detached thread's exit
 * cannot mark some newer thread that reused the descriptor.
 *
 * Join, the race won here. The joiner claims (CAS: +CLAIMED) and, if the
 * target has not exited, parks; its park commit, run once the joiner is off
 * its stack, sets WAITER with fetch_or. The exiting thread sets EXITED with
 * fetch_or. Whichever of the two fetch_ors comes second sees the other's flag:
 * the exiter seeing WAITER readies the joiner; the commit seeing EXITED
 * abandons the park. Exactly one of them resumes the joiner, and never
 * before it is off its stack.
 *
 * Descriptor memory: per-worker LIFO caches (owner-only, no atomics), spilled
 * to and refilled from a global list under a spinlock in batches. The region
 * behind them starts at 512 KiB at a fixed hint and doubles in place
 * (desc_region_cover); when it cannot, the free descriptors other workers
 * cache are asked back (reclaim.c) before a spawn says EAGAIN.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "core/core.h"
#include "core/limits.h"

#define DESC_BATCH 64

/* Until the region is first mapped: one zero slot, which no handle matches
 * (core.h). Read-only in practice: lookups only load from it. */
static struct swarm_thread swarm_desc_empty;
struct swarm_thread *_Atomic swarm_desc_region = &swarm_desc_empty;
_Atomic uint32_t swarm_desc_index_mask;
_Atomic uint32_t swarm_desc_next_index = 1;

/* Where the region asks to be: far from where the kernel places mappings
 * (top down from below the stack) and from the dist layer's uni-address
 * region (0x300000000000), and above ASan's shadow, so that the address
 * range after it stays free for growth in place. */
#define DESC_REGION_HINT ((uintptr_t)0x200000000000ull)
#define DESC_FIRST_SLOTS ((uint32_t)4096) /* 512 KiB when limits bound us */

static struct {
  struct spinlock lock; /* LOCK_DESC_TABLE */
  struct swarm_thread *free;
  uint32_t nfree;
  uint32_t mapped; /* slots mapped: a power of two, 0 before the first */
} desc_table = {.lock = SPINLOCK_INIT(LOCK_DESC_TABLE)};

/* Maps [addr, addr + len) exactly there, or fails (EEXIST if taken). */
static bool map_exactly(char *addr, size_t len) {
  void *p = mmap(
      addr, len, PROT_READ | PROT_WRITE,
      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
  if (p == MAP_FAILED)
    return false;
  if (p != addr) { /* a kernel before 4.17 took the flag as a hint */
    munmap(p, len);
    errno = EEXIST;
    return false;
  }
  return true;
}

/* Makes slot idx mappable (under desc_table.lock): the first mapping, 512
 * KiB at the hint if it is free, else where the kernel puts it; later,
 * doubling in place. Starting small with or without a limit keeps the
 * process's address space honest (a program under the drop-in that lowers
 * its own RLIMIT_AS in main, after the runtime started, can still make
 * threads; schedulers that watch VSZ see what is used). false (errno set) when
 * the kernel refuses: the caller's spawn answers EAGAIN, after limits_refused
 * has said why. */
static bool desc_region_cover(uint32_t idx, bool report) {
  const size_t slot = sizeof(struct swarm_thread);
  if (desc_table.mapped == 0) {
    size_t bytes = (size_t)DESC_FIRST_SLOTS * slot;
    char *base = (char *)DESC_REGION_HINT;
    if (!map_exactly(base, bytes)) {
      /* The hint is taken: growth in place is unlikely wherever the kernel
       * puts us, so map all of it at once unless a limit forbids. */
      bytes = limits_desc_first_map((size_t)DESC_MAX * slot, bytes);
      base = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
                  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
      if (base == MAP_FAILED) {
        if (report)
          limits_refused("thread descriptors", bytes, LIMIT_KERNEL);
        return false;
      }
    }
    desc_table.mapped = (uint32_t)(bytes / slot);
    atomic_store_explicit(&swarm_desc_region, (struct swarm_thread *)base,
                          memory_order_release);
    atomic_store_explicit(&swarm_desc_index_mask,
                          (desc_table.mapped - 1) << CTL_INDEX_SHIFT,
                          memory_order_release);
  }
  while (idx >= desc_table.mapped) {
    char *base =
        (char *)atomic_load_explicit(&swarm_desc_region, memory_order_relaxed);
    size_t have = (size_t)desc_table.mapped * slot;
    if (!map_exactly(base + have, have)) {
      if (report)
        limits_refused("thread descriptors", have,
                       errno == EEXIST ? LIMIT_ADDRESS_TAKEN : LIMIT_KERNEL);
      return false;
    }
    desc_table.mapped *= 2;
    atomic_store_explicit(&swarm_desc_index_mask,
                          (desc_table.mapped - 1) << CTL_INDEX_SHIFT,
                          memory_order_release);
  }
  return true;
}

static struct swarm_thread *desc_fresh_locked(bool report) {
  uint32_t idx =
      atomic_load_explicit(&swarm_desc_next_index, memory_order_relaxed);
  if (idx >= DESC_MAX || !desc_region_cover(idx, report))
    return NULL;
  struct swarm_thread *base =
      atomic_load_explicit(&swarm_desc_region, memory_order_relaxed);
  struct swarm_thread *t = &base[idx];
  t->index = idx;
  t->kind = THREAD_USER;
  t->pinned_worker = -1;
  atomic_store_explicit(&t->control,
                        ((uint64_t)1 << 32) | (uint64_t)idx << CTL_INDEX_SHIFT,
                        memory_order_release);
  atomic_store_explicit(&swarm_desc_next_index, idx + 1, memory_order_release);
  return t;
}

struct swarm_thread *desc_lookup_checked(swarm_thread_t h) {
  if ((uint32_t)h & ~CTL_INDEX_MASK || !((h >> 32) & 1))
    return NULL;
  uint32_t idx = ((uint32_t)h & CTL_INDEX_MASK) >> CTL_INDEX_SHIFT;
  /* acquire: a slot below next_index is mapped and initialised */
  if (idx == 0 ||
      idx >= atomic_load_explicit(&swarm_desc_next_index, memory_order_acquire))
    return NULL;
  struct swarm_thread *base =
      atomic_load_explicit(&swarm_desc_region, memory_order_relaxed);
  return &base[idx];
}

/* Takes up to `want` descriptors from the global list (or fresh ones) and
 * returns them as a list; *got says how many. A refused growth of the
 * region is reported (limits.h) when `report`. */
static struct swarm_thread *desc_take_global(uint32_t want, uint32_t *got,
                                             bool report) {
  struct swarm_thread *list = NULL;
  uint32_t n = 0;
  spin_lock(&desc_table.lock);
  while (n < want && desc_table.free) {
    struct swarm_thread *t = desc_table.free;
    desc_table.free = t->next;
    desc_table.nfree--;
    t->next = list;
    list = t;
    n++;
  }
  while (n < want) {
    struct swarm_thread *t = desc_fresh_locked(report);
    if (!t)
      break;
    t->next = list;
    list = t;
    n++;
  }
  spin_unlock(&desc_table.lock);
  *got = n;
  return list;
}

/* A free descriptor leaving a worker's cache gives back the stack it kept
 * (spawn.c), to w's stack cache or (w NULL) the pool: the global list
 * holds no stacks. The keep is given back too (worker.stack_keep_room),
 * or the worker that kept it could keep one fewer from then on. */
static void desc_drop_stack(struct worker *w, struct swarm_thread *t) {
  if (t->stack.size) {
    stack_release(w, t->stack);
    t->stack.lo = NULL;
    t->stack.size = 0;
    if (w)
      w->stack_keep_room++;
  }
}

/* Owner only: the stacks kept on w's free descriptors go to its stack
 * cache (stack.c gives them to the pool at a memory limit). */
void desc_cache_drop_stacks(struct worker *w) {
  for (struct swarm_thread *t = w->descs.head; t; t = t->next)
    desc_drop_stack(w, t);
}

static void desc_give_global(struct worker *w, struct swarm_thread *list,
                             uint32_t n) {
  if (!list)
    return;
  struct swarm_thread *last = list;
  desc_drop_stack(w, last);
  while (last->next) {
    last = last->next;
    desc_drop_stack(w, last);
  }
  spin_lock(&desc_table.lock);
  last->next = desc_table.free;
  desc_table.free = list;
  desc_table.nfree += n;
  spin_unlock(&desc_table.lock);
}

static bool desc_global_has_free(void) { /* a glance, without the lock */
  return __atomic_load_n(&desc_table.nfree, __ATOMIC_RELAXED) > 0;
}

/* An empty cache (w NULL: none) refills from the global list or fresh
 * slots; when the region cannot grow, the free descriptors other workers
 * cache come back first (reclaim.c), and only then is it NULL (EAGAIN),
 * reported once. */
struct swarm_thread *desc_alloc_slow(struct worker *w) {
  uint32_t want = w ? DESC_BATCH : 1, got;
  struct swarm_thread *t = desc_take_global(want, &got, false);
  if (!t) {
    reclaim_from_workers(w, desc_global_has_free);
    t = desc_take_global(want, &got, true);
  }
  if (!t || !w)
    return t;
  w->descs.head = t->next;
  w->descs.count = got - 1;
  return t;
}

/* t already has its new generation. */
void desc_release_slow(struct worker *w, struct swarm_thread *t) {
  if (!w) {
    t->next = NULL;
    desc_give_global(NULL, t, 1);
    return;
  }
  /* Cache full: keep t, spill the older half to the global list so other
   * workers can use them. */
  t->next = w->descs.head;
  w->descs.head = t;
  struct swarm_thread *keep = t;
  for (uint32_t i = 1; i < DESC_CACHE_MAX / 2; i++)
    keep = keep->next;
  struct swarm_thread *spill = keep->next;
  keep->next = NULL;
  uint32_t n = w->descs.count + 1 - DESC_CACHE_MAX / 2;
  w->descs.count = DESC_CACHE_MAX / 2;
  desc_give_global(w, spill, n);
}

void desc_cache_flush(struct worker *w) {
  /* NULL: w's stack cache is flushed already (workers_release) */
  desc_give_global(NULL, w->descs.head, w->descs.count);
  w->descs.head = NULL;
  w->descs.count = 0;
}

_Atomic uint64_t swarm_desc_retired;

void desc_retire_last_generation(struct swarm_thread *t) {
  desc_drop_stack(NULL, t);
  /* release: whoever reads 0 sees the slot's last use finished. The slot
   * is abandoned (16 MiB of handle space holds 2^24 of them; at one retired
   * slot per 2^31 spawns the region never runs out). */
  atomic_store_explicit(&t->control, 0, memory_order_release);
  atomic_fetch_add_explicit(&swarm_desc_retired, 1, memory_order_relaxed);
}

uint64_t desc_live_count(void) {
  /* acquire: the slots below next_index were handed out */
  uint64_t made =
      atomic_load_explicit(&swarm_desc_next_index, memory_order_acquire) - 1;
  spin_lock(&desc_table.lock);
  uint64_t idle = desc_table.nfree;
  spin_unlock(&desc_table.lock);
  for (int i = 0; i < swarm_rt.nslots; i++) /* owner-written: a snapshot */
    idle += __atomic_load_n(&swarm_rt.workers[i].descs.count, __ATOMIC_RELAXED);
  idle += atomic_load_explicit(&swarm_desc_retired, memory_order_relaxed);
  return made > idle ? made - idle : 0;
}

void desc_table_after_fork(void) {
  spin_init(&desc_table.lock, LOCK_DESC_TABLE);
}

/* ---- join / detach ---- */

static bool join_commit(struct swarm_thread *self, void *arg) {
  (void)self;
  struct swarm_thread *t = arg;
  /* acq_rel: publishes t->joiner (written before the park) to the exiting
   * thread, and if it already exited, acquires its result. */
  uint64_t old = /* WAITER is set once: the add is the or, without a loop */
      atomic_fetch_add_explicit(&t->control, CTL_WAITER, memory_order_acq_rel);
  return !(old & CTL_EXITED); /* exited already: do not park after all */
}

static __attribute__((noinline)) int join_general(swarm_thread_t h,
                                                  void **result) {
  struct swarm_thread *t = desc_lookup_checked(h);
  if (!t)
    return ESRCH;
  uint32_t gen = (uint32_t)(h >> 32);
  struct worker *w = worker_current();
  uint64_t c = atomic_load_explicit(&t->control, memory_order_acquire);
  if (CTL_GEN(c) != gen)
    return ESRCH;
  struct swarm_thread *self = w ? w->current : swarm_current_thread();
  if (t == self)
    return EDEADLK;
  for (;;) {
    if (CTL_GEN(c) != gen)
      return ESRCH;
    if (c & (CTL_DETACHED | CTL_CLAIMED))
      return EINVAL;
    /* acq_rel: if it has exited, acquire its result. */
    if (atomic_compare_exchange_weak_explicit(&t->control, &c, c | CTL_CLAIMED,
                                              memory_order_acq_rel,
                                              memory_order_acquire))
      break;
  }
  if (c & CTL_EXITED) { /* fast path: it is done, nothing to wait for */
    if (result)
      *result = t->result;
    desc_release(w, t);
    return 0;
  }
  if (!self)
    self = swarm_current_thread();
  if (!self) {
    /* No descriptor for this kernel thread: undo the claim. */
    atomic_fetch_and_explicit(&t->control, ~CTL_CLAIMED, memory_order_relaxed);
    return EAGAIN;
  }
  t->joiner = self;
  swarm_park(join_commit, t, SWARM_PARK_JOIN, NULL);
  /* Resumed: the exiter set EXITED (acq_rel) before readying us. */
  atomic_thread_fence(memory_order_acquire);
  if (result)
    *result = t->result;
  desc_release(worker_current(), t);
  return 0;
}

int swarm_detach(swarm_thread_t h) {
  struct swarm_thread *t = desc_lookup_checked(h);
  if (!t)
    return ESRCH;
  uint32_t gen = (uint32_t)(h >> 32);
  uint64_t c = atomic_load_explicit(&t->control, memory_order_acquire);
  for (;;) {
    if (CTL_GEN(c) != gen)
      return ESRCH;
    if (c & (CTL_DETACHED | CTL_CLAIMED))
      return EINVAL;
    if (atomic_compare_exchange_weak_explicit(&t->control, &c, c | CTL_DETACHED,
                                              memory_order_acq_rel,
                                              memory_order_acquire))
      break;
  }
  if (c & CTL_EXITED) /* it exited before it was detached: release now */
    desc_release(worker_current(), t);
  return 0;
}

int swarm_join(swarm_thread_t h, void **result) {
  /* Fast path: the thread has exited, nobody else claimed or detached it.
   * One CAS both claims it and retires the descriptor (the next generation);
   * the result is read after it (acquire: the exit's release published it;
   * the descriptor is ours then). No plain compare before the CAS: when it
   * fails (not exited yet, a stale handle) join_general follows, whose
   * park costs far more than the locked instruction. */
  struct swarm_thread *t = desc_lookup(h);
  uint64_t next;
  /* A handle of the last generation goes the general way (desc_release
   * retires its slot): the add's carry is the test, one branch. */
  if (likely(!(h & CTL_FLAGS)) &&
      likely(!__builtin_add_overflow(h, CTL_GEN_STEP, &next)) &&
      likely(control_cas(&t->control, h + CTL_EXITED, next))) {
    if (result)
      *result = t->result;
    desc_cache_put_or_none(worker_current_or_none(), t); /* no NULL test */
    return 0;
  }
  return join_general(h, result);
}

/* ---- attributes ---- */

int swarm_attr_init(swarm_attr_t *attr) {
  if (!attr)
    return EINVAL;
  memset(attr, 0, sizeof *attr);
  attr->magic_ = SWARM_ATTR_MAGIC;
  return 0;
}

int swarm_attr_destroy(swarm_attr_t *attr) {
  if (!attr || attr->magic_ != SWARM_ATTR_MAGIC)
    return EINVAL;
  attr->magic_ = 0;
  return 0;
}

int swarm_attr_setstacksize(swarm_attr_t *attr, size_t size) {
  if (!attr || attr->magic_ != SWARM_ATTR_MAGIC || size < SWARM_STACK_MIN ||
      size > SWARM_MAX_STACK)
    return EINVAL;
  attr->stack_size_ = size;
  return 0;
}

int swarm_attr_getstacksize(const swarm_attr_t *attr, size_t *size) {
  if (!attr || attr->magic_ != SWARM_ATTR_MAGIC || !size)
    return EINVAL;
  *size = attr->stack_size_ ? attr->stack_size_ : swarm_rt.default_stack;
  if (!*size)
    *size = SWARM_DEFAULT_STACK;
  return 0;
}

int swarm_attr_setdetachstate(swarm_attr_t *attr, int state) {
  if (!attr || attr->magic_ != SWARM_ATTR_MAGIC ||
      (state != SWARM_CREATE_JOINABLE && state != SWARM_CREATE_DETACHED))
    return EINVAL;
  attr->detached_ = (uint32_t)state;
  return 0;
}

int swarm_attr_getdetachstate(const swarm_attr_t *attr, int *state) {
  if (!attr || attr->magic_ != SWARM_ATTR_MAGIC || !state)
    return EINVAL;
  *state = (int)attr->detached_;
  return 0;
}
