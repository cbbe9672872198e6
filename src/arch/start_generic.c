/*
 * arch/start_generic.c — swarm_arch_start, swarm_arch_spawn,
 * swarm_arch_spawn_core, swarm_arch_resume, swarm_arch_resume_plain and
 * swarm_arch_resume_publish for back ends that implement only
 * swarm_arch_prepare and swarm_arch_switch (aarch64.S, portable.c): prepare the
 * fresh frame, then switch to it; switch with a save slot nobody reads.
 * x86_64.S has direct versions.
 */
#include <stdatomic.h>
#include <stdint.h>

#include "arch/context.h"

/* swarm_arch_spawn's fn, arg and finish, kept at the top of the fresh
 * stack, above the frames of the context that reads them. */
struct spawn_record {
  void *(*fn)(void *);
  void *arg;
  void (*finish)(void *);
  void *pad; /* 32 bytes: the stack below stays 16-byte aligned */
};

static void spawn_entry(void *transfer) {
  struct spawn_record *r = transfer;
  r->finish(r->fn(r->arg));
  __builtin_unreachable();
}

void *swarm_arch_spawn(void **save_sp, void *stack_top, void *(*fn)(void *),
                       void *arg, void (*finish)(void *)) {
  struct spawn_record *r = (struct spawn_record *)stack_top - 1;
  r->fn = fn;
  r->arg = arg;
  r->finish = finish;
  return swarm_arch_start(save_sp, r, spawn_entry, 0, r);
}

/* Weak: libswarm-dist links this file without core, and never calls
 * swarm_arch_spawn_core or swarm_arch_resume_publish. */
#pragma weak swarm_thread_finish
#pragma weak swarm_thread_published

void *swarm_arch_spawn_core(void **save_sp, void *stack_top,
                            void *(*fn)(void *), void *arg) {
  return swarm_arch_spawn(save_sp, stack_top, fn, arg, swarm_thread_finish);
}

void *swarm_arch_start(void **save_sp, void *stack_top, void (*entry)(void *),
                       void *(*after)(void *), void *arg) {
  return swarm_arch_switch(save_sp, swarm_arch_prepare(stack_top, entry), after,
                           arg);
}

_Noreturn void swarm_arch_resume_plain(void *new_sp, void *arg) {
  swarm_arch_resume(new_sp, 0, arg);
}

_Noreturn void swarm_arch_resume(void *new_sp, void *(*after)(void *),
                                 void *arg) {
  void *scratch;
  swarm_arch_switch(&scratch, new_sp, after, arg);
  __builtin_unreachable();
}

/* swarm_arch_resume_publish's request, in the old context's frame: the
 * after step reads it before the add, which is what lets the old stack be
 * reused. */
struct publish_request {
  void *arg;
  _Atomic uint64_t *word;
};

static void *publish_after(void *p) {
  struct publish_request r = *(struct publish_request *)p;
  uint64_t old = atomic_fetch_add_explicit(r.word, 1, memory_order_acq_rel);
  if (old & SWARM_ARCH_PUBLISH_NOTIFY)
    swarm_thread_published(r.arg, old, r.word);
  return r.arg;
}

_Noreturn void swarm_arch_resume_publish(void *new_sp, void *arg,
                                         _Atomic uint64_t *word) {
  struct publish_request r = {arg, word};
  swarm_arch_resume(new_sp, publish_after, &r);
}
