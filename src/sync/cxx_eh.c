/*
 * sync/cxx_eh.c — the C++ runtime's exception state, per swarm thread.
 *
 * libstdc++ keeps the exceptions a thread is handling (the stack of caught
 * exceptions behind a bare `throw;` and std::current_exception, the count
 * behind std::uncaught_exceptions) in a block per kernel thread, in TLS,
 * and reaches it only through two functions, __cxa_get_globals and
 * __cxa_get_globals_fast, which it calls through the PLT (LLVM's libc++abi
 * has the same two entry points and a block of the same shape; not tried
 * here). Swarm threads share kernel threads: a thread that blocked inside
 * a catch block came back to whatever the threads that ran on its worker
 * meanwhile had caught, or, moved, to another worker's (a bare `throw;`
 * rethrew another thread's exception; tests/pthread/dropin_cxx_exceptions.cpp).
 *
 * This file defines both functions, exported from libswarm and from the
 * drop-in, so the dynamic linker binds them ahead of libstdc++'s wherever
 * swarm comes first in the search order: every program under swarmrun (a
 * preloaded library does), a program linked with -lswarm or libswarm.a
 * (linkers put the C++ runtime after the program's libraries). A swarm
 * thread gets a block in its sync record (sync.h: made on first need,
 * freed at its exit with the record); the main thread the block of the
 * kernel thread that started the runtime (main_block); the scheduler's
 * context and kernel threads that are not workers one of their own in
 * TLS, as with libstdc++'s.
 * Where libstdc++ is found first (a libswarm loaded with dlopen), its
 * functions serve and the old limit holds (docs/cxx.md).
 *
 * Invariants: a thread gets the same block from every call for its whole
 * life, on whatever worker it runs; a new block is zero (nothing handled);
 * a block is SYNC_CXX_EH_WORDS words, more than the 16 bytes libstdc++'s
 * and libc++abi's hold. Nothing here blocks or switches.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "os/os.h"
#include "sync/sync.h"

/* A static link that pulls this file must also pull key.c, whose
 * constructor registers the exit hook that frees a thread's record. */
__attribute__((used)) static void (*const keep_exit_hook)(
    struct swarm_thread *) = sync_thread_exit;

/* The block of a kernel thread running no swarm thread. */
static __thread void *kernel_thread_block[SYNC_CXX_EH_WORDS];

/* The main thread's: that of the kernel thread that started the runtime,
 * on which its flow ran before and runs again after swarm_finalize (an
 * exception thrown on one side of it and caught on the other is one
 * exception: RAII's runtime object ends while one unwinds), wherever it
 * runs in between. Set on that kernel thread by the start (core.h:
 * swarm_main_enter_hook). That kernel thread's scheduler context, which
 * runs no C++, shares it. */
static void **_Atomic main_block;

/* The descriptor main_block was set for. */
static struct swarm_thread *main_thread;

/* A fork child's main flow (adopted) was a thread of the parent: its
 * exceptions move to this kernel thread's block, from its record (a swarm
 * thread) or from the parent's main block (main itself: that kernel
 * thread's TLS is still mapped here, as all the parent's memory). */
static void main_enter(struct swarm_thread *main, bool adopted) {
  void **from = NULL;
  struct sync_thread *rec = adopted ? sync_thread_of(main, false) : NULL;
  void **old = atomic_load_explicit(&main_block, memory_order_relaxed);
  if (adopted && main == main_thread && old)
    from = old;
  else if (rec)
    from = rec->cxx_eh;
  if (from && from != kernel_thread_block) {
    memcpy(kernel_thread_block, from, sizeof kernel_thread_block);
    memset(from, 0, sizeof kernel_thread_block);
  }
  main_thread = main;
  atomic_store_explicit(&main_block, kernel_thread_block, memory_order_release);
}

/* Before any constructor of default priority: the drop-in's starts the
 * runtime from one (pthread/thread.c). */
__attribute__((constructor(101))) static void main_enter_register(void) {
  swarm_main_enter_hook = main_enter;
}

static void *exception_block(void) {
  struct worker *w = worker_current();
  struct swarm_thread *t = w ? w->current : NULL;
  if (!t)
    return kernel_thread_block;
  if (t->kind == THREAD_MAIN) {
    void **b = atomic_load_explicit(&main_block, memory_order_acquire);
    return b ? b : kernel_thread_block;
  }
  struct sync_thread *rec = sync_thread_of(t, true);
  if (unlikely(!rec)) {
    static const char msg[] = "swarm: out of memory for a thread's record "
                              "(its C++ exception state); aborting\n";
    os_write_stderr(msg, sizeof msg - 1);
    abort();
  }
  return rec->cxx_eh;
}

__attribute__((visibility("default"))) void *__cxa_get_globals(void);
__attribute__((visibility("default"))) void *__cxa_get_globals_fast(void);

void *__cxa_get_globals(void) {
  return exception_block();
}

void *__cxa_get_globals_fast(void) {
  return exception_block();
}
