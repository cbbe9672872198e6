/*
 * core/sched.c — the scheduler's worker side: ready queues, waking idle
 * workers, making a thread runnable, and the worker loop (finding work,
 * stealing, sleeping, quiescence). Spawn and exit are in spawn.c, park and
 * ready in park.c, start and stop in runtime.c (core/sched.h lists them).
 *
 * Design (MassiveThreads' scheduler with PPL's idle workers):
 *
 *  - One worker per core, each a kernel thread owning a Chase–Lev deque of
 *    runnable threads (deque.h) and a small locked FIFO ("ready queue") for
 *    yields, pinned threads and threads handed over by non-worker kernel
 *    threads. The kernel thread that starts the runtime becomes worker 0 and
 *    its flow the "main" swarm thread; worker 0's scheduler loop runs on a
 *    stack of its own, the other workers' on their kernel thread's stack.
 *
 *  - Finding work, in order: own deque (bottom) -> own ready queue -> due
 *    timers and I/O (the io layer's poll hook, core.h) -> random victims'
 *    deques (top) and unpinned ready-queue entries (spare workers'
 *    included, monitor.c) -> spin a bounded number of rounds -> sleep on
 *    the worker's futex, or in its epoll_wait when the io layer is linked
 *    in (below). A spare worker retires instead of sleeping.
 *
 *  - Sleeping and waking, the store-buffer race won here. A worker about to
 *    sleep sets its `sleeping` flag, counts itself in idle_workers, issues a
 *    seq_cst fence, re-checks every deque and queue, and only then waits on
 *    its futex. A pusher publishes its item, then reads idle_workers. Each
 *    side stores then loads, so without a fence on both sides each could
 *    miss the other's store (x86 does reorder a store with a later load)
 *    and the work would wait for the sleeper's timeout. Rules:
 *      - a push into a deque that looked empty, and every ready-queue push,
 *        is followed by a seq_cst fence before the idle check: the sleeper
 *        either sees the item or the pusher sees the sleeper;
 *      - a push into a non-empty deque checks without the fence (it would
 *        cost ~8% of a spawn, measured on fib): whoever went to sleep after
 *        the deque became non-empty saw it non-empty in its re-check, and
 *        whoever slept before was woken by the push that made it non-empty;
 *      - a thief that leaves items behind in its victim wakes another idle
 *        worker, so one wake fans out to as many as there is work for;
 *      - a yield that queues an unpinned thread on its own worker's ready
 *        queue (park.c: commit_requeue) wakes one too (Go's wakep): the
 *        worker runs another thread now, and the yielder is stealable;
 *      - the sleeper's re-check counts only work it may run (work_visible):
 *        every deque, its own ready queue, and other queues' unpinned
 *        threads. A thread pinned to another worker (a preempted one) is
 *        that worker's to run, and whoever queues it wakes that worker.
 *    One window stays: the owner's view of `top` may be stale, so a push
 *    can look non-empty just after thieves emptied the deque. A sleeper
 *    racing that push sleeps until its timeout, which starts at 1 ms and
 *    doubles to 256 ms while it stays idle. That costs parallelism, never
 *    progress: the owner runs its own deque.
 *    With the io layer the wait is in the worker's poller (epoll_wait, or
 *    io_uring_enter on its ring: io/backend.h) instead of the futex wait,
 *    and the protocol keeps the futex's meaning (models/park_ready.pml
 *    still describes it): the sleeper stores
 *    in_sleep, then re-reads sleep_word and waits only if it still equals
 *    the value read before the re-check; a waker advances sleep_word
 *    (seq_cst), then reads in_sleep and, if set, writes the worker's
 *    eventfd, which stays readable until drained, so a wake that lands
 *    before epoll_wait starts still ends it. Readiness ends it too.
 *    The monitor (monitor.c) sleeps without a deadline once every worker
 *    sleeps; a worker leaving worker_sleep wakes it.
 *    Rejected: one global futex all idle workers wait on (wakes a herd); a
 *    fence on every push (the 8%); no sleeping, as in MassiveThreads (an
 *    idle program burns every core).
 *
 *  - Quiescence (swarm_finalize, and main calling swarm_exit) is detected by
 *    idle workers from per-worker spawned/exited counters that only their
 *    owner writes: read every exited count, then every spawned count; if
 *    the sums match, every thread spawned before the second read has exited.
 */
#include <errno.h>
#include <stdlib.h>

#include "core/core.h"
#include "core/sched.h"
#include "core/trace.h"
#include "os/os.h"

#define SPIN_ROUNDS 2000
#define SLEEP_MIN_NS 1000000LL
#define SLEEP_MAX_NS 256000000LL

/* ---- ready queues ---- */

void ready_queue_push(struct ready_queue *q, struct swarm_thread *t) {
  t->next = NULL;
  spin_lock(&q->lock);
  if (q->tail)
    q->tail->next = t;
  else
    q->head = t;
  q->tail = t;
  __atomic_store_n(&q->count, q->count + 1, __ATOMIC_RELAXED);
  spin_unlock(&q->lock);
}

struct swarm_thread *ready_queue_pop(struct ready_queue *q,
                                     bool unpinned_only) {
  if (queue_count(q) == 0)
    return NULL;
  spin_lock(&q->lock);
  struct swarm_thread *prev = NULL, *t = q->head;
  while (t && unpinned_only && t->pinned_worker >= 0) {
    prev = t;
    t = t->next;
  }
  if (t) {
    if (prev)
      prev->next = t->next;
    else
      q->head = t->next;
    if (q->tail == t)
      q->tail = prev;
    t->next = NULL;
    __atomic_store_n(&q->count, q->count - 1, __ATOMIC_RELAXED);
  }
  spin_unlock(&q->lock);
  return t;
}

/* ---- waking idle workers ---- */

bool worker_wake_sleeping(struct worker *w) {
  uint32_t one = 1;
  if (atomic_load_explicit(&w->sleeping, memory_order_relaxed) == 0 ||
      !atomic_compare_exchange_strong_explicit(
          &w->sleeping, &one, 0, memory_order_acq_rel, memory_order_relaxed))
    return false;
  atomic_fetch_sub_explicit(&swarm_rt.idle_workers, 1, memory_order_relaxed);
  /* seq_cst, not release: the I/O layer's sleeper stores "in epoll_wait"
   * and then loads sleep_word, so this store must not pass the load of
   * that flag in io->wake (store-buffer race; src/io/poller.c). */
  atomic_fetch_add_explicit(&w->sleep_word, 1, memory_order_seq_cst);
  const struct swarm_io_hooks *io =
      atomic_load_explicit(&swarm_io_hooks, memory_order_acquire);
  if (!io || !io->wake(w)) /* asleep in epoll_wait: its eventfd woke it */
    os_futex_wake(&w->sleep_word, 1);
  return true;
}

void worker_wake(struct worker *w) {
  atomic_thread_fence(memory_order_seq_cst);
  worker_wake_sleeping(w);
}

void queue_push_and_wake(struct worker *target, struct swarm_thread *t,
                         struct worker *self) {
  ready_queue_push(&target->queue, t);
  atomic_thread_fence(memory_order_seq_cst);
  if (target != self && worker_wake_sleeping(target))
    return;
  if (t->pinned_worker < 0 &&
      atomic_load_explicit(&swarm_rt.idle_workers, memory_order_relaxed) > 0)
    wake_one(target);
}

void wake_one(struct worker *self) {
  int n = swarm_rt.nworkers;
  int start = self ? self->id + 1 : 0;
  for (int i = 0; i < n; i++) {
    struct worker *v = &swarm_rt.workers[(start + i) % n];
    if (v != self && worker_wake_sleeping(v))
      return;
  }
}

void make_runnable_slow(struct worker *w, struct swarm_thread *t) {
  if (unlikely(t->kind == THREAD_EXTERNAL)) {
    /* A kernel thread parked in park.c's external_park: its futex. */
    atomic_store_explicit(&t->wake_word, 1, memory_order_release);
    os_futex_wake(&t->wake_word, 1);
    return;
  }
  if (t->pinned_worker >= 0) {
    queue_push_and_wake(&swarm_rt.workers[t->pinned_worker], t, w);
    return;
  }
  int pushed = deque_push(&w->deque, t);
  if (!pushed) {
    /* No memory to grow the deque: the ready queue needs none. */
    queue_push_and_wake(w, t, w);
    return;
  }
  if (pushed == DEQUE_PUSHED_INTO_EMPTY)
    atomic_thread_fence(memory_order_seq_cst);
  wake_if_idle(w);
}

/* ---- the worker loop ---- */

/* A thread taken from a deque by a thief may be a parent its worker pushed
 * before switching away from it (spawn_here): wait until its context is
 * saved. The window is a few instructions of the owner's switch. */
static inline void thread_wait_saved(struct swarm_thread *t) {
  for (unsigned spins = 0; unlikely(!__atomic_load_n(&t->sp, __ATOMIC_ACQUIRE));
       spins++) {
    if (spins < 1024)
      os_cpu_relax();
    else /* the owner was preempted inside that window: let it run */
      os_yield();
  }
}

static struct swarm_thread *steal_round(struct worker *w) {
  int n = swarm_rt.nslots; /* spare workers' deques too (monitor.c) */
  if (n < 2)
    return NULL;
  for (int attempt = 0; attempt < n - 1; attempt++) {
    /* xorshift64: a random victim other than ourselves */
    uint64_t x = w->rng;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    w->rng = x;
    int v = (int)(x % (uint64_t)(n - 1));
    if (v >= w->id)
      v++;
    struct worker *victim = &swarm_rt.workers[v];
    w->stats.steals_tried++;
    void *item = deque_steal(&victim->deque);
    if (item == DEQUE_ABORT)
      item = deque_steal(&victim->deque);
    if (item && item != DEQUE_ABORT) {
      thread_wait_saved(item);
      w->stats.steals_ok++;
      TRACE_STEAL(w, item, v);
      /* More where that came from: let another idle worker have it. */
      if (deque_size(&victim->deque) > 0)
        wake_if_idle(w);
      return item;
    }
    struct swarm_thread *t = ready_queue_pop(&victim->queue, true);
    if (t) {
      w->stats.steals_ok++;
      TRACE_STEAL(w, t, v);
      return t;
    }
  }
  return NULL;
}

static bool all_threads_exited(void) {
  /* Exited first, then spawned: see the file comment. */
  uint64_t exited = 0, spawned = 0;
  for (int i = 0; i < swarm_rt.nslots; i++) /* spares count too */
    exited += atomic_load_explicit(&swarm_rt.workers[i].stat_exited_pub,
                                   memory_order_acquire);
  for (int i = 0; i < swarm_rt.nslots; i++)
    spawned += atomic_load_explicit(&swarm_rt.workers[i].stat_spawned_pub,
                                    memory_order_acquire);
  spawned +=
      atomic_load_explicit(&swarm_rt.external_spawned, memory_order_acquire);
  return spawned == exited;
}

/* Whether q holds a thread that may run anywhere (a thread pinned to q's
 * worker, such as a preempted one, only that worker may run). */
static bool queue_has_unpinned(struct ready_queue *q) {
  if (queue_count(q) == 0)
    return false;
  bool found = false;
  spin_lock(&q->lock);
  for (struct swarm_thread *t = q->head; t && !found; t = t->next)
    found = t->pinned_worker < 0;
  spin_unlock(&q->lock);
  return found;
}

/* Work that w could run: its own queue and deque, other workers' deques
 * and their queues' unpinned threads. Threads pinned elsewhere do not keep
 * w awake: it could not take them (steal_round skips them), and whoever
 * queues one wakes its worker (queue_push_and_wake). Counting them kept an
 * idle worker spinning at 100% of a core beside one that round-robins
 * preempted threads. */
static bool work_visible(struct worker *w) {
  if (deque_size(&w->deque) > 0 || queue_count(&w->queue) > 0)
    return true;
  for (int i = 0; i < swarm_rt.nslots; i++) { /* spares too */
    struct worker *v = &swarm_rt.workers[i];
    if (v != w && (deque_size(&v->deque) > 0 || queue_has_unpinned(&v->queue)))
      return true;
  }
  return false;
}

static void check_quiescence(struct worker *w) {
  struct swarm_thread *waiter =
      atomic_load_explicit(&swarm_rt.finalize_waiter, memory_order_acquire);
  bool main_gone =
      atomic_load_explicit(&swarm_rt.main_exited, memory_order_acquire);
  if (!waiter && !main_gone)
    return;
  if (!all_threads_exited())
    return;
  if (waiter) {
    if (atomic_compare_exchange_strong(&swarm_rt.finalize_waiter, &waiter,
                                       NULL))
      make_runnable(w, waiter);
    return;
  }
  /* main called swarm_exit and every other thread is done: end the process
   * as pthread_exit in main does. */
  exit(0);
}

static void worker_sleep(struct worker *w, int64_t timeout_ns) {
  uint32_t seq = atomic_load_explicit(&w->sleep_word, memory_order_acquire);
  atomic_store_explicit(&w->sleeping, 1, memory_order_seq_cst);
  atomic_fetch_add_explicit(&swarm_rt.idle_workers, 1, memory_order_seq_cst);
  /* Re-check after announcing ourselves, fenced: a pusher either sees us in
   * idle_workers or left its work where we look now (file comment). */
  atomic_thread_fence(memory_order_seq_cst);
  if (!work_visible(w) &&
      atomic_load_explicit(&swarm_rt.state, memory_order_acquire) ==
          RT_RUNNING &&
      !atomic_load_explicit(&swarm_rt.finalize_waiter, memory_order_acquire)) {
    w->stats.sleeps++;
    TRACE_SLEEP_BEGIN(w);
    /* Sleep no longer than the earliest timer of ours. */
    uint64_t e = timers_earliest(w);
    if (e != UINT64_MAX) {
      uint64_t now = os_now_ns_inline();
      int64_t until = e > now ? (int64_t)(e - now) : 0;
      if (until < timeout_ns)
        timeout_ns = until;
    }
    /* With the I/O layer, sleep in the worker's epoll_wait so readiness
     * wakes it too; wakers then write its eventfd (io->wake). */
    const struct swarm_io_hooks *io =
        atomic_load_explicit(&swarm_io_hooks, memory_order_acquire);
    if (timeout_ns > 0 && (!io || !io->sleep(w, seq, timeout_ns)))
      os_futex_wait(&w->sleep_word, seq, timeout_ns);
    TRACE_SLEEP_END(w);
  }
  uint32_t one = 1;
  if (atomic_compare_exchange_strong_explicit(
          &w->sleeping, &one, 0, memory_order_acq_rel, memory_order_relaxed))
    atomic_fetch_sub_explicit(&swarm_rt.idle_workers, 1, memory_order_relaxed);
  /* The monitor sleeps without a deadline once every worker sleeps: a
   * worker that wakes brings it back (fence: store-load against its
   * monitor_idle store then sleeping-flag loads; monitor.c). */
  atomic_thread_fence(memory_order_seq_cst);
  if (atomic_load_explicit(&swarm_rt.monitor_idle, memory_order_relaxed))
    monitor_kick();
}

/* Something is asked of w (worker.due; park_here comes here while it is
 * set, the loop looks on every round):
 *  - DUE_IO_POLL: the monitor found w's I/O stale while w kept switching
 *    threads (its run queue never empties, so the poll point below is not
 *    reached): poll now and queue the readied threads behind those already
 *    waiting, so a long run queue cannot starve its oldest threads. The
 *    monitor polls for a worker that does not switch at all (monitor.c).
 *  - DUE_GIVE_BACK: a spawn was refused at a memory limit while w held
 *    free stacks or descriptors (reclaim.c): give them back to the pool and
 *    the global list (DUE_GIVE_BACK_LATE, only ever beside it, goes too). */
static __attribute__((noinline)) void sched_due(struct worker *w) {
  uint32_t due = atomic_load_explicit(&w->due, memory_order_relaxed);
  if (due & DUE_GIVE_BACK)
    worker_give_back(w); /* clears the bit once they are given back */
  if (!(due & DUE_IO_POLL))
    return;
  atomic_fetch_and_explicit(&w->due, ~(uint32_t)DUE_IO_POLL,
                            memory_order_relaxed);
  const struct swarm_io_hooks *io =
      atomic_load_explicit(&swarm_io_hooks, memory_order_relaxed);
  if (!io)
    return;
  w->stats.polls_due++;
  w->ready_to_queue = true;
  io->poll(w, true);
  w->ready_to_queue = false;
}

static void sched_loop(struct worker *w) {
  unsigned spins = 0;
  int64_t backoff = SLEEP_MIN_NS;
  for (;;) {
    timers_poll(w);
    if (unlikely(atomic_load_explicit(&w->due, memory_order_relaxed)))
      sched_due(w);
    struct swarm_thread *t = local_next(w);
    if (!t) { /* due I/O before stealing (src/io; cheap when none waits) */
      const struct swarm_io_hooks *io =
          atomic_load_explicit(&swarm_io_hooks, memory_order_relaxed);
      if (io) {
        io->poll(w, false);
        t = local_next(w);
      }
    }
    if (!t)
      t = steal_round(w);
    if (t) {
      spins = 0;
      backoff = SLEEP_MIN_NS;
      if (unlikely(w->sched_switch)) /* tracing, CPU accounting */
        w->sched_switch(w, t);
      w = switch_to(w, &w->sched_sp, t, NULL);
      continue;
    }
    if (atomic_load_explicit(&swarm_rt.state, memory_order_acquire) ==
        RT_STOPPING)
      return;
    check_quiescence(w);
    if (++spins < SPIN_ROUNDS) {
      os_cpu_relax();
      continue;
    }
    if (unlikely(w->id >= swarm_rt.nworkers)) { /* a spare: retire */
      spare_retire(w);
      spins = 0;
      continue;
    }
    worker_sleep(w, backoff);
    if (backoff < SLEEP_MAX_NS)
      backoff *= 2;
    spins = SPIN_ROUNDS - 8; /* a few rounds, then back to sleep */
  }
}

/* Worker 0's scheduler runs on its own stack, entered like a thread. */
void sched_entry(void *transfer) {
#ifdef SWARM_ASAN
  __sanitizer_finish_switch_fiber(NULL, NULL, NULL);
#endif
  sched_loop(transfer);
  static const char msg[] = "swarm: worker 0's scheduler returned\n";
  os_write_stderr(msg, sizeof msg - 1);
  abort();
}

void *worker_main(void *arg) { /* also the spares' (monitor.c) */
  struct worker *w = arg;
  tls_worker_set(w);
  w->tid = os_thread_id(); /* the monitor reads its state */
  if (swarm_rt.bind)
    os_bind_self(swarm_rt.cpus[w->id % swarm_rt.ncpus]);
  w->altstack = os_altstack_install();
  os_worker_mask_install(); /* see os.h; pthread/signal.c */
  void *lo;
  size_t size;
  os_thread_stack_bounds(&lo, &size);
  w->sched_stack.lo = lo;
  w->sched_stack.size = size;
  sched_loop(w);
  os_altstack_release(w->altstack);
  w->altstack = NULL;
  tls_worker_set(NULL);
  return NULL;
}
