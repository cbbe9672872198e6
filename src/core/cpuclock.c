/*
 * core/cpuclock.c — the CPU time of each swarm thread (the clock behind the
 * drop-in's pthread_getcpuclockid and CLOCK_THREAD_CPUTIME_ID): off, and
 * free, until a program first asks for one.
 *
 * How it counts. A swarm thread runs on its worker's kernel thread, whose
 * CPU time the kernel keeps. Once accounting is on, every switch reads that
 * clock (CLOCK_THREAD_CPUTIME_ID, a system call) and credits the thread it
 * switched away from with the time since the previous switch on that worker
 * (worker.cpu_start); a running thread's clock is its credit plus the time
 * since its worker switched to it. Time in the scheduler loop, stealing
 * and sleeping is nobody's.
 *
 * Cost when off: none on the hot paths. The switches' after steps are the
 * per-worker function pointers tracing already chooses (trace.h); turning
 * accounting on points them at the twins below, which account and then
 * run the plain or traced step. The scheduler loop's switch calls
 * worker.sched_switch when set (the test that was w->trace's). Spawn and
 * exit lose their no-call fast paths while accounting is on, as under
 * tracing.
 *
 * Turning it on while workers run (cpuclock_enable, once per runtime).
 * The enabler fills each worker's slice (cpu_thread unknown, cpu_fresh,
 * cpu_start read from the worker's kernel thread clock by its TID), then
 * publishes the steps, after_exit before exit_cache_size (so an exit that
 * sees the new size also sees a step that releases the stack), each as
 * one aligned store: a worker that loaded the old step for a switch in
 * flight does that one switch unaccounted. Its own worker it sets
 * directly. While a worker is fresh, its current thread is taken as the
 * one that has run since cpu_start.
 *
 * Invariants and races. A thread's credit (swarm_thread.cpu_word) is written
 * only in the after step of the switch that left it, before the commit or
 * push that lets anyone else run it, so one writer at a time; it carries
 * the low 8 bits of the generation it counts for (the descriptor has room
 * for one word under ASan), so a reused descriptor starts from 0 without
 * spawn writing anything (a stale credit survives only a reuse by the
 * 128th generation after, and only if never credited since). A worker's slice
 * (cpu_thread, cpu_start, cpu_fresh) is written by its owner under a sequence
 * count (cpu_seq, odd while writing); readers retry until they see an even,
 * unchanged count, and re-read the credit afterwards, so a thread that switches
 * while being read is counted once. An exiting thread's last slice is credited
 * to nobody (its descriptor may be reused at once).
 */
#include <errno.h>
#include <time.h>

#include "core/core.h"
#include "core/sched.h"
#include "core/trace.h"
#include "os/os.h"
#include "os/sys.h"

enum { CPU_OFF, CPU_ENABLING, CPU_ON };
static _Atomic int cpu_state;

/* The kernel's CPU clock of thread tid: MAKE_THREAD_CPUCLOCK(tid,
 * CPUCLOCK_SCHED), as glibc's pthread_getcpuclockid makes it. */
static clockid_t tid_clock(int tid) {
  return (clockid_t)(((unsigned)~tid << 3) | 6u);
}

static uint64_t clock_ns(clockid_t c) {
  struct timespec ts;
  if (sys_call(SYS_clock_gettime, c, &ts) != 0)
    return 0;
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t worker_cpu_ns(struct worker *w) {
  if (w == worker_current())
    return clock_ns(CLOCK_THREAD_CPUTIME_ID);
  int tid = __atomic_load_n(&w->tid, __ATOMIC_RELAXED);
  return tid ? clock_ns(tid_clock(tid)) : 0;
}

#define CPU_NS_BITS 56
#define CPU_NS_MASK (((uint64_t)1 << CPU_NS_BITS) - 1)

/* The tag of generation gen in a credit word. */
static uint64_t gen_tag(uint32_t gen) {
  return (uint64_t)(gen & 0xffu) << CPU_NS_BITS;
}

/* t's credit for generation gen. */
static uint64_t credited(struct swarm_thread *t, uint32_t gen) {
  uint64_t c = atomic_load_explicit(&t->cpu_word, memory_order_relaxed);
  return (c & ~CPU_NS_MASK) == gen_tag(gen) ? c & CPU_NS_MASK : 0;
}

static void credit(struct swarm_thread *t, uint64_t ns) {
  uint32_t gen =
      CTL_GEN(atomic_load_explicit(&t->control, memory_order_relaxed));
  uint64_t sum = (credited(t, gen) + ns) & CPU_NS_MASK;
  atomic_store_explicit(&t->cpu_word, gen_tag(gen) | sum, memory_order_relaxed);
}

static void slice_set(struct worker *w, struct swarm_thread *t, uint64_t start,
                      bool fresh) {
  uint32_t s = atomic_load_explicit(&w->cpu_seq, memory_order_relaxed);
  atomic_store_explicit(&w->cpu_seq, s + 1, memory_order_relaxed);
  atomic_thread_fence(memory_order_release);
  atomic_store_explicit(&w->cpu_thread, t, memory_order_relaxed);
  atomic_store_explicit(&w->cpu_start, start, memory_order_relaxed);
  atomic_store_explicit(&w->cpu_fresh, fresh, memory_order_relaxed);
  atomic_store_explicit(&w->cpu_seq, s + 2, memory_order_release);
}

/* A switch on w (its owner): `out` (NULL: the scheduler, or a thread that
 * ended) stops running, w->current starts. */
static void cpu_switch(struct worker *w, struct swarm_thread *out) {
  /* The kept-stack exit switches with no after step (spawn.c), so while
   * accounting is on every exit must release its stack: the room for kept
   * stacks is the owner's counter, so the owner empties it here, at its
   * first accounted switch (reuses of kept stacks add back far less). */
  if (unlikely(w->stack_keep_room >= 0))
    w->stack_keep_room = INT32_MIN / 2;
  uint64_t now = clock_ns(CLOCK_THREAD_CPUTIME_ID);
  uint64_t start = atomic_load_explicit(&w->cpu_start, memory_order_relaxed);
  if (out && start && now > start)
    credit(out, now - start);
  slice_set(w, w->current, now, false);
}

/* ---- the accounting twins of the switch steps ---- */

static void *after_spawn_cpu(void *arg) {
  struct worker *w = arg;
  cpu_switch(w, w->handoff);
  return w->trace ? after_push_parent_traced(arg) : after_push_parent(arg);
}

static void *after_exit_cpu(void *arg) {
  struct worker *w = arg;
  cpu_switch(w, NULL);
  return w->trace ? after_release_stack_traced(arg) : after_release_stack(arg);
}

static void *after_park_cpu(void *arg) {
  struct worker *w = arg;
  cpu_switch(w, w->handoff);
  return w->trace ? after_park_traced(arg) : after_park(arg);
}

static void *after_main_exit_cpu(void *arg) {
  struct worker *w = arg;
  cpu_switch(w, NULL);
  return w->trace ? after_main_exit_traced(arg) : w;
}

/* The scheduler loop, before it switches to next: its own time is
 * nobody's, so nothing is credited. */
static void sched_switch_cpu(struct worker *w, struct swarm_thread *next) {
  if (unlikely(w->stack_keep_room >= 0)) /* as in cpu_switch */
    w->stack_keep_room = INT32_MIN / 2;
  uint64_t now = clock_ns(CLOCK_THREAD_CPUTIME_ID);
  slice_set(w, next, now, false);
  if (w->trace)
    trace_switch(w->trace, next);
}

/* ---- turning it on ---- */

static void worker_enable(struct worker *w, struct worker *self) {
  if (w == self)
    slice_set(w, w->current, worker_cpu_ns(w), false);
  else
    slice_set(w, NULL, worker_cpu_ns(w), true);
  __atomic_store_n(&w->after_exit, after_exit_cpu, __ATOMIC_RELEASE);
  __atomic_store_n(&w->exit_cache_size, (size_t)0, __ATOMIC_RELEASE);
  /* Spawn's kept-stack path has no after step either: SIZE_MAX sends every
   * spawn through the general path, which runs after_spawn. */
  __atomic_store_n(&w->spawn_keep_size, SIZE_MAX, __ATOMIC_RELEASE);
  if (w == self)
    w->stack_keep_room = INT32_MIN / 2;
  __atomic_store_n(&w->after_spawn, after_spawn_cpu, __ATOMIC_RELEASE);
  __atomic_store_n(&w->after_park, after_park_cpu, __ATOMIC_RELEASE);
  __atomic_store_n(&w->sched_switch, sched_switch_cpu, __ATOMIC_RELEASE);
}

void cpuclock_enable(void) {
  int s = atomic_load_explicit(&cpu_state, memory_order_acquire);
  if (likely(s == CPU_ON))
    return;
  if (s != CPU_OFF ||
      !atomic_compare_exchange_strong(&cpu_state, &s, CPU_ENABLING)) {
    while (atomic_load_explicit(&cpu_state, memory_order_acquire) != CPU_ON)
      os_cpu_relax();
    return;
  }
  if (atomic_load_explicit(&swarm_rt.state, memory_order_acquire) ==
      RT_RUNNING) {
    struct worker *self = worker_current();
    for (int i = 0; i < swarm_rt.nslots; i++)
      worker_enable(&swarm_rt.workers[i], self);
    __atomic_store_n(&swarm_rt.after_main_exit, after_main_exit_cpu,
                     __ATOMIC_RELEASE);
  }
  atomic_store_explicit(&cpu_state, CPU_ON, memory_order_release);
}

void cpuclock_reset(void) {
  atomic_store_explicit(&cpu_state, CPU_OFF, memory_order_release);
}

/* ---- reading ---- */

/* Time t has run since its worker last switched to it, if it runs. */
static uint64_t running_part(struct swarm_thread *t) {
  for (int i = 0; i < swarm_rt.nslots; i++) {
    struct worker *w = &swarm_rt.workers[i];
    struct swarm_thread *on;
    uint64_t start;
    uint32_t s;
    do {
      while ((s = atomic_load_explicit(&w->cpu_seq, memory_order_acquire)) & 1)
        os_cpu_relax();
      on = atomic_load_explicit(&w->cpu_thread, memory_order_relaxed);
      if (atomic_load_explicit(&w->cpu_fresh, memory_order_relaxed))
        on = __atomic_load_n(&w->current, __ATOMIC_RELAXED);
      start = atomic_load_explicit(&w->cpu_start, memory_order_relaxed);
      atomic_thread_fence(memory_order_acquire);
    } while (atomic_load_explicit(&w->cpu_seq, memory_order_relaxed) != s);
    if (on == t) {
      uint64_t now = worker_cpu_ns(w);
      return start && now > start ? now - start : 0;
    }
  }
  return 0;
}

int cpuclock_thread_ns(swarm_thread_t h, uint64_t *ns) {
  cpuclock_enable();
  struct swarm_thread *t = desc_lookup_checked(h);
  if (!t)
    return EINVAL;
  uint32_t gen = CTL_GEN(h);
  uint64_t base, run;
  /* A thread that switched while we read it is read again (bounded: one
   * that switches faster than we read gets its credit alone). */
  for (int tries = 0;; tries++) {
    uint64_t c = atomic_load_explicit(&t->control, memory_order_acquire);
    if ((c & ~CTL_FLAGS) != h || (c & CTL_EXITED))
      return EINVAL;
    base = credited(t, gen);
    run = running_part(t);
    if (credited(t, gen) == base)
      break;
    if (tries == 64) {
      run = 0;
      base = credited(t, gen);
      break;
    }
  }
  *ns = base + run;
  return 0;
}

swarm_thread_t cpuclock_handle_at(uint32_t index) {
  if (index >=
      atomic_load_explicit(&swarm_desc_next_index, memory_order_acquire))
    return 0;
  swarm_thread_t h = (swarm_thread_t)index << CTL_INDEX_SHIFT;
  struct swarm_thread *t = desc_lookup(h);
  uint64_t c = atomic_load_explicit(&t->control, memory_order_acquire);
  if (((c & CTL_INDEX_MASK) >> CTL_INDEX_SHIFT) != index || (c & CTL_EXITED) ||
      !(CTL_GEN(c) & 1))
    return 0;
  return c & ~CTL_FLAGS;
}
