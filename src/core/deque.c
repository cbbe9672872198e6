/*
 * core/deque.c — the cold paths of the work-stealing deque in deque.h:
 * creation, growth and destruction. See deque.h for the invariants.
 */
#include "core/deque.h"

#include <errno.h>
#include <stdlib.h>

static struct deque_array *array_new(int64_t capacity) {
  struct deque_array *a =
      malloc(sizeof *a + (size_t)capacity * sizeof(_Atomic(void *)));
  if (!a)
    return NULL;
  a->mask = capacity - 1;
  a->retired_next = NULL;
  return a;
}

int deque_init(struct deque *d, int64_t capacity) {
  int64_t cap = 16;
  while (cap < capacity)
    cap <<= 1;
  struct deque_array *a = array_new(cap);
  if (!a)
    return ENOMEM;
  atomic_init(&d->top, 0);
  atomic_init(&d->bottom, 0);
  atomic_init(&d->array, a);
  d->items = a->items;
  d->mask = a->mask;
  d->retired = NULL;
  return 0;
}

void deque_destroy(struct deque *d) {
  free(atomic_load_explicit(&d->array, memory_order_relaxed));
  for (struct deque_array *r = d->retired, *n; r; r = n) {
    n = r->retired_next;
    free(r);
  }
  d->retired = NULL;
}

bool deque_grow_and_push(struct deque *d, void *item) {
  int64_t b = atomic_load_explicit(&d->bottom, memory_order_relaxed);
  int64_t t = atomic_load_explicit(&d->top, memory_order_acquire);
  struct deque_array *old =
      atomic_load_explicit(&d->array, memory_order_relaxed);
  struct deque_array *a = array_new((old->mask + 1) * 2);
  if (!a)
    return false;
  for (int64_t i = t; i < b; i++)
    atomic_store_explicit(
        &a->items[i & a->mask],
        atomic_load_explicit(&old->items[i & old->mask], memory_order_relaxed),
        memory_order_relaxed);
  /* release: a thief that loads the new array sees the copied items. The old
   * array stays readable for thieves that loaded it before this store; an
   * item they read from it is the same item, and their CAS on top decides. */
  atomic_store_explicit(&d->array, a, memory_order_release);
  d->items = a->items;
  d->mask = a->mask;
  old->retired_next = d->retired;
  d->retired = old;
  return deque_try_push(d, item) != 0;
}
