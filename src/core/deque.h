/*
 * core/deque.h — the per-worker work-stealing deque (Chase & Lev, SPAA 2005)
 * with the C11 memory orders proven correct by Lê, Pop, Cohen and Zappa
 * Nardelli (PPoPP 2013, "Correct and efficient work-stealing for weak memory
 * models", figure 1). The owner pushes and takes at the bottom without
 * locks; thieves take from the top with one CAS.
 *
 * Invariants:
 *  - Only the owner writes `bottom`, `array` and its copies `items` and `mask`
 *    (which only the owner reads); thieves write only `top`
 *    (by CAS). top <= bottom + 1 at all times; the items are [top, bottom).
 *  - The array grows (doubles) when full; MassiveThreads aborts at 131,072
 *    entries, we never do while memory lasts. A grown-out array may still be
 *    read by a thief that loaded the old pointer, so retired arrays are kept
 *    (total memory stays below twice the largest array) and freed only when
 *    the deque is destroyed, when no thief can be running.
 *  - Items are never NULL; NULL means "empty" and DEQUE_ABORT means a thief
 *    lost a race and may retry.
 */
#ifndef SWARM_CORE_DEQUE_H
#define SWARM_CORE_DEQUE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct deque_array {
  int64_t mask; /* capacity - 1, capacity a power of two */
  struct deque_array *retired_next;
  _Atomic(void *) items[];
};

struct deque {
  _Atomic int64_t top;
  char pad_top[64 - sizeof(int64_t)];
  _Atomic int64_t bottom;
  _Atomic(struct deque_array *) array;
  struct deque_array *retired; /* arrays replaced by growth, owner-only */
  /* Owner-only copies of array->items and array->mask: push and take index
   * them without going through the array header. */
  _Atomic(void *) *items;
  int64_t mask;
  char pad_bottom[64 - sizeof(int64_t) - 4 * sizeof(void *)];
};

#define DEQUE_ABORT ((void *)1)

/* Returns 0 or ENOMEM. */
int deque_init(struct deque *d, int64_t capacity);
void deque_destroy(struct deque *d);
/* Owner only. Returns false when memory to grow cannot be had. */
bool deque_grow_and_push(struct deque *d, void *item);

/* Owner: bottom - 1 at a take's start, returning the new value. On x86-64
 * a subtract in memory (owner-only, so it needs no lock: thieves see the
 * old or the new value, as with a store) and a reload that forwards from
 * it: one instruction fewer than load, subtract, store. (The push's
 * increment done the same way made GCC use two more registers there.) */
static inline __attribute__((always_inline)) int64_t
deque_bottom_dec(struct deque *d) {
#if defined(__x86_64__)
  __asm__("subq $1, %0" : "+m"(d->bottom));
  return atomic_load_explicit(&d->bottom, memory_order_relaxed);
#else
  int64_t b = atomic_load_explicit(&d->bottom, memory_order_relaxed) - 1;
  atomic_store_explicit(&d->bottom, b, memory_order_relaxed);
  return b;
#endif
}

/* deque_push results: 0 means no memory to grow. */
enum { DEQUE_PUSHED = 1, DEQUE_PUSHED_INTO_EMPTY = 2 };

/* Owner, at a push: b - 1 - top, top read with acquire order (it pairs
 * with the thieves' CAS on top, so a slot they emptied is really free
 * before we overwrite it). On x86-64 a subtract from memory, which GCC
 * does not make of an atomic load: top then needs no register of its own.
 * At a push top <= b (the owner is not in a take), so the value is -1
 * when the deque is empty and capacity - 1 when it is full. */
static inline __attribute__((always_inline)) int64_t
deque_push_used_less_one(struct deque *d, int64_t b) {
#if defined(__x86_64__)
  int64_t x = b - 1;
  /* volatile and "memory": later accesses stay after the read of top */
  __asm__ volatile("subq %1, %0" : "+r"(x) : "m"(d->top) : "memory");
  return x;
#else
  return b - 1 - atomic_load_explicit(&d->top, memory_order_acquire);
#endif
}

/* Owner: push an item at the bottom if the array has room; 0 if it is
 * full. Says whether the deque looked empty before (the scheduler wakes
 * sleepers differently then). One unsigned compare tells the common case
 * (neither empty nor full) from both others. */
static inline __attribute__((always_inline)) int deque_try_push(struct deque *d,
                                                                void *item) {
  int64_t b = atomic_load_explicit(&d->bottom, memory_order_relaxed);
  int64_t mask = d->mask;
  int64_t used_less_one = deque_push_used_less_one(d, b);
  int pushed = DEQUE_PUSHED;
  if (__builtin_expect((uint64_t)used_less_one >= (uint64_t)mask, 0)) {
    if (used_less_one >= 0) /* full: b - top == capacity */
      return 0;
    pushed = DEQUE_PUSHED_INTO_EMPTY;
  }
  atomic_store_explicit(&d->items[b & mask], item, memory_order_relaxed);
  /* release: a thief that sees the new bottom also sees the item. */
  atomic_thread_fence(memory_order_release);
  atomic_store_explicit(&d->bottom, b + 1, memory_order_relaxed);
  return pushed;
}

/* Owner: push an item at the bottom, growing the array when full; 0 only
 * when memory to grow cannot be had. */
static inline __attribute__((always_inline)) int deque_push(struct deque *d,
                                                            void *item) {
  int pushed = deque_try_push(d, item);
  if (__builtin_expect(pushed != 0, 1))
    return pushed;
  return deque_grow_and_push(d, item) ? DEQUE_PUSHED : 0;
}

/* top < b, read after the take's fence; relaxed, like any read of top
 * there. On x86-64 the compare reads top from memory itself: GCC keeps an
 * atomic load as a load of its own (one instruction fewer). */
static inline __attribute__((always_inline)) bool
deque_top_below(struct deque *d, int64_t b) {
#if defined(__x86_64__) && defined(__GCC_ASM_FLAG_OUTPUTS__)
  bool below;
  __asm__("cmpq %2, %1" : "=@ccl"(below) : "m"(d->top), "r"(b));
  return below;
#else
  return atomic_load_explicit(&d->top, memory_order_relaxed) < b;
#endif
}

/* Owner: deque_take in two halves, for a caller whose fast path wants only
 * the common case. deque_take_begin claims the bottom slot and returns its
 * item when no thief can reach it (not the last one); otherwise NULL, and
 * the caller must finish with deque_take_end(d, *b). */
static inline __attribute__((always_inline)) void *
deque_take_begin(struct deque *d, int64_t *b_out) {
  int64_t b = deque_bottom_dec(d);
  /* seq_cst fence: the store to bottom must be visible before we read top,
   * or a thief and we could both take the last item (store-load order; the
   * thief has the matching fence between its loads of top and bottom). */
  atomic_thread_fence(memory_order_seq_cst);
  *b_out = b;
  if (__builtin_expect(deque_top_below(d, b), 1)) {
    /* Items are never NULL; saying so lets the caller's NULL test fold
     * into the compare above. */
    void *item =
        atomic_load_explicit(&d->items[b & d->mask], memory_order_relaxed);
    if (item == NULL)
      __builtin_unreachable();
    return item;
  }
  return NULL;
}

/* The rest of a take that deque_take_begin left (top >= b): the last item,
 * raced for with the thieves' CAS, or none. NULL when empty or lost. It
 * reads top again: still after the fence, and top only grows, so if a
 * thief took the last item in between this read says empty, as it is. */
static inline __attribute__((always_inline)) void *
deque_take_end(struct deque *d, int64_t b) {
  int64_t t = atomic_load_explicit(&d->top, memory_order_relaxed);
  void *item = NULL;
  if (t == b) {
    item = atomic_load_explicit(&d->items[b & d->mask], memory_order_relaxed);
    if (!atomic_compare_exchange_strong_explicit(
            &d->top, &t, t + 1, memory_order_seq_cst, memory_order_relaxed))
      item = NULL;
  }
  atomic_store_explicit(&d->bottom, b + 1, memory_order_relaxed);
  return item;
}

/* Owner: take the most recently pushed item, or NULL when empty. */
static inline __attribute__((always_inline)) void *deque_take(struct deque *d) {
  int64_t b;
  void *item = deque_take_begin(d, &b);
  return item ? item : deque_take_end(d, b);
}

/* Thief: take the oldest item. NULL when empty, DEQUE_ABORT on a lost race. */
static inline void *deque_steal(struct deque *d) {
  int64_t t = atomic_load_explicit(&d->top, memory_order_acquire);
  /* seq_cst fence: pairs with the owner's in deque_take (see there). */
  atomic_thread_fence(memory_order_seq_cst);
  int64_t b = atomic_load_explicit(&d->bottom, memory_order_acquire);
  if (t >= b)
    return NULL;
  /* acquire (Lê et al. use consume): we need the items the owner published
   * in the array it installed, so this pairs with its release store. */
  struct deque_array *a = atomic_load_explicit(&d->array, memory_order_acquire);
  void *item =
      atomic_load_explicit(&a->items[t & a->mask], memory_order_relaxed);
  if (!atomic_compare_exchange_strong_explicit(
          &d->top, &t, t + 1, memory_order_seq_cst, memory_order_relaxed))
    return DEQUE_ABORT;
  return item;
}

/* Approximate number of items; any thread. */
static inline int64_t deque_size(struct deque *d) {
  int64_t b = atomic_load_explicit(&d->bottom, memory_order_relaxed);
  int64_t t = atomic_load_explicit(&d->top, memory_order_relaxed);
  return b > t ? b - t : 0;
}

#endif
