/*
 * core/monitor.c — the monitor kernel thread (Go's sysmon) and the spare
 * workers it starts: what keeps runnable threads and I/O moving when every
 * worker's kernel thread is stuck.
 *
 * A worker can stop scheduling for long stretches in two ways the scheduler
 * cannot see from inside: a swarm thread that computes without ever
 * blocking or yielding, and a swarm thread blocked in a system call nobody
 * intercepted (a disk read, waitpid, a foreign futex). Threads queued
 * behind it are stolen by other workers, but if every worker is stuck,
 * nothing runs them, nothing polls the workers' epolls, and nothing fires
 * their timers. The monitor covers that:
 *
 *  - Every tick (MONITOR_TICK_MIN_NS while a worker's I/O is stale or
 *    something looked stalled, doubling up to MONITOR_TICK_IO_MAX_NS while
 *    threads wait for I/O the workers poll on their own, and up to
 *    MONITOR_TICK_MAX_NS otherwise) it looks at each worker:
 *      * I/O (monitor_io): a worker that has not polled its epoll for
 *        MONITOR_IO_STALE_NS but keeps switching threads (a run queue that
 *        never empties, so its own poll point is not reached) is asked to
 *        poll at its next park (DUE_IO_POLL, sched.c), where the readied
 *        threads join its ready queue behind those already there. One that
 *        does not switch (a thread that computes, a kernel thread blocked),
 *        or still has not polled a tick after being asked, is polled from
 *        here through the I/O layer's poll_stale hook: the pending calls
 *        are performed and the threads readied (swarm_ready from a
 *        non-worker: a ready queue), and, if no worker sleeps and none has
 *        switched threads for two ticks, a spare is activated to run them.
 *        So readiness is noticed and acted on within a few milliseconds
 *        (the stale time, plus a tick that may have backed off to 4 ms
 *        while the workers polled for themselves) while all workers run
 *        CPU-bound threads, and a busy server's worker is not preempted by
 *        this thread every half millisecond to have its I/O done for it
 *        (which cost a one-CPU ping-pong server 12-18% of its CPU in this
 *        thread at 1,024 connections; docs/io.md, "The monitor's polls").
 *      * progress: a worker that is awake, has threads queued (deque or
 *        ready queue) and has not switched to any thread (stats.run, which
 *        the owner bumps at every switch but the exit's fast hand-off, with
 *        its spawns and exits, unchanged) for MONITOR_STALL_TICKS
 *        ticks is stalled. Its due timers are fired from here.
 *  - If some worker is stalled, the monitor wakes a sleeping worker (it
 *    steals the queued threads), or, when none sleeps, activates a spare
 *    worker: workers[nworkers .. nslots), full workers (deque, ready queue,
 *    caches) whose kernel threads are started on first need. Spares steal
 *    like anyone else; a spare that finds nothing to do for a scheduler
 *    spin retires (spare_retire): it waits on its own futex until the
 *    monitor needs it again, waking only for its own timers. So at most
 *    nslots - nworkers extra kernel threads run, and only while stuck
 *    workers leave runnable threads behind.
 *  - Idle: when every regular worker sleeps and no spare is active, nothing
 *    can be stuck and every epoll has a sleeper of its own, so the monitor
 *    sleeps on its futex without a deadline (an idle program keeps ~0% CPU;
 *    tests/core/test_idle_cpu). A worker leaving worker_sleep brings it back
 *    (monitor_kick). The store-load race here is won like the workers':
 *    the monitor stores monitor_idle, fences, then loads every `sleeping`
 *    flag; a waking worker's flag is cleared (by a CAS) before it fences and
 *    loads monitor_idle. One of the two sees the other.
 *
 * Under the drop-in, a thread that computes for MONITOR_STALL_TICKS ticks
 * while others wait on its worker is preempted (preempt_tick, preempt.c);
 * what follows is the policy where preemption is off (the native API). A
 * runnable thread queued behind an endless CPU-bound thread is run by a
 * spare worker after MONITOR_HOG_TICKS ticks (about 100 ms; a worker
 * blocked in the kernel, as /proc tells on two ticks in a row, gets one
 * after two to four ticks; the long wait for a running one is because a
 * worker the kernel merely preempted looks the same from here), so
 * CPU-bound threads delay others by milliseconds, not forever, as long as there
 * are fewer of them than workers plus spares; the spares then share the cores
 * with them through the kernel's scheduler. SWARM_SPARES sets the number of
 * spares (default: the number of workers; 0 disables them). With one worker
 * the default is one spare that covers only a worker blocked in the kernel
 * (monitor_spare_count says why), so no uncovered blocking call freezes a
 * one-worker process.
 *
 * Rejected: a signal-based preemption timer (SWARM_PREEMPT_US) — a swarm
 * thread interrupted inside libc (malloc's locks, stdio) and switched away
 * from on that kernel thread could deadlock another thread on the same
 * worker; making that safe needs async-safe points the runtime cannot see.
 * Polling I/O from a timer signal on a worker: same problem, and an epoll
 * in a signal handler. One spare per stuck worker at once (Go's hand-off on
 * every syscall): costs a kernel thread switch on every blocking call,
 * which the drop-in's I/O interposition already avoids for sockets.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/core.h"
#include "os/os.h"
#include "os/sys.h"

#define MONITOR_TICK_MIN_NS 500000ull   /* 0.5 ms */
#define MONITOR_TICK_MAX_NS 10000000ull /* 10 ms */
/* while threads wait for I/O that the workers poll on their own */
#define MONITOR_TICK_IO_MAX_NS 4000000ull /* 4 ms */
#define MONITOR_IO_STALE_NS 1000000ull    /* 1 ms */
#define MONITOR_STALL_TICKS 2             /* a worker blocked in the kernel */
#define MONITOR_HOG_TICKS 200 /* one running (or preempted): ~100 ms */
#define MONITOR_MAX_SPARES 64

const struct swarm_io_hooks *_Atomic swarm_io_hooks;

/* SWARM_SPARES, or -1 when it is unset or malformed (reported once per
 * start, naming the variable, as config.c does for the others). */
static int spares_from_env(void) {
  const char *v = getenv("SWARM_SPARES");
  if (!v || !*v)
    return -1;
  char *end;
  errno = 0;
  long n = strtol(v, &end, 10);
  if (end == v || *end || n < 0 || errno) {
    fprintf(stderr,
            "swarm: ignoring SWARM_SPARES='%s': expected a number >= 0\n", v);
    return -1;
  }
  return n > MONITOR_MAX_SPARES ? MONITOR_MAX_SPARES : (int)n;
}

int monitor_spare_count(int nworkers) {
  int n = spares_from_env();
  /* One worker, by default: one spare, and it runs only while the worker
   * is blocked in the kernel (monitor_tick), never beside a worker that
   * merely computes. So no call swarm does not intercept (pause, waitpid,
   * a terminal read) freezes the process, while a program on one worker
   * still runs one swarm thread at a time whenever its kernel thread can
   * run at all (cio's tests call MPI from several swarm threads under
   * MPI_THREAD_FUNNELED; MPI waits by spinning, which is not blocked). */
  swarm_rt.spares_blocked_only = n < 0 && nworkers < 2;
  if (n >= 0)
    return n;
  n = nworkers < 2 ? 1 : nworkers;
  return n > MONITOR_MAX_SPARES ? MONITOR_MAX_SPARES : n;
}

static bool stopping(void) {
  return atomic_load_explicit(&swarm_rt.state, memory_order_acquire) !=
         RT_RUNNING;
}

/* ---- spares ---- */

/* Starts or wakes one retired spare. false if all are active. */
static bool spare_activate(void) {
  for (int i = swarm_rt.nworkers; i < swarm_rt.nslots; i++) {
    struct worker *w = &swarm_rt.workers[i];
    bool was = false;
    if (!atomic_compare_exchange_strong(&w->spare_active, &was, true))
      continue;
    atomic_fetch_add(&swarm_rt.spares_active, 1);
    if (!w->spare_started) {
      if (os_thread_start(&w->kthread, worker_main, w) != 0) {
        atomic_store(&w->spare_active, false);
        atomic_fetch_sub(&swarm_rt.spares_active, 1);
        return false;
      }
      w->spare_started = true;
      return true;
    }
    atomic_fetch_add_explicit(&w->spare_word, 1, memory_order_release);
    os_futex_wake(&w->spare_word, 1);
    return true;
  }
  return false;
}

void spare_retire(struct worker *w) {
  /* Its free stacks and descriptors back to the pool and the global list:
   * a spawn at a memory limit asks only running workers for theirs
   * (reclaim.c). */
  worker_give_back(w);
  atomic_store(&w->spare_active, false);
  atomic_fetch_sub(&swarm_rt.spares_active, 1);
  for (;;) {
    uint32_t seq = atomic_load_explicit(&w->spare_word, memory_order_acquire);
    if (atomic_load(&w->spare_active) || stopping())
      return; /* the monitor activated us (it counted us) */
    /* Wake for our own timers: threads parked on this spare with timeouts
     * would otherwise wait for the next activation. */
    uint64_t e = timers_earliest(w);
    int64_t timeout = -1;
    if (e != UINT64_MAX) {
      uint64_t now = os_now_ns_inline();
      if (e <= now)
        break;
      timeout = (int64_t)(e - now);
    }
    os_futex_wait(&w->spare_word, seq, timeout);
  }
  /* A timer is due: run it as an active spare again. */
  bool was = false;
  if (atomic_compare_exchange_strong(&w->spare_active, &was, true))
    atomic_fetch_add(&swarm_rt.spares_active, 1);
}

/* ---- the monitor ---- */

void monitor_kick(void) {
  if (!atomic_exchange(&swarm_rt.monitor_idle, false))
    return;
  atomic_fetch_add_explicit(&swarm_rt.monitor_word, 1, memory_order_release);
  os_futex_wake(&swarm_rt.monitor_word, 1);
}

static bool all_asleep(void) {
  if (atomic_load(&swarm_rt.spares_active) > 0)
    return false;
  for (int i = 0; i < swarm_rt.nworkers; i++)
    if (!atomic_load(&swarm_rt.workers[i].sleeping))
      return false;
  return true;
}

static bool has_queued(struct worker *w) {
  return deque_size(&w->deque) > 0 ||
         __atomic_load_n(&w->queue.count, __ATOMIC_RELAXED) > 0;
}

/* The scheduling state of kernel thread tid, from /proc ('R' running or
 * runnable, 'S' / 'D' blocked, ...); 0 if it cannot be read. */
static char thread_state(int tid) {
  char path[64] = "/proc/self/task/", num[16], buf[256];
  size_t n = strlen(path);
  num[os_format_u64(num, (uint64_t)tid)] = 0;
  memcpy(path + n, num, strlen(num));
  memcpy(path + n + strlen(num), "/stat", 6);
  long fd = sys_openat(AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return 0;
  long len = sys_read((int)fd, buf, sizeof buf - 1);
  sys_close((int)fd);
  if (len <= 0)
    return 0;
  buf[len] = 0;
  char *p = strrchr(buf, ')'); /* after "tid (comm)" */
  return p && p[1] == ' ' ? p[2] : 0;
}

/* Whether a stalled worker's queue could be helped: a worker sleeps (to
 * be woken) or a spare is free. */
static bool help_possible(void) {
  if (atomic_load(&swarm_rt.spares_active) <
      swarm_rt.nslots - swarm_rt.nworkers)
    return true;
  return atomic_load(&swarm_rt.idle_workers) > 0;
}

/* The I/O of regular worker w: nothing if it polled within
 * MONITOR_IO_STALE_NS (or sleeps in its poll, or nothing waits). Stale
 * while it switches threads (a run queue that does not empty, so its own
 * poll point is not reached): ask it to poll at its next park
 * (DUE_IO_POLL, sched.c), where the readied threads join its ready queue
 * without a cross-thread hand-off or a preemption of the worker by this
 * thread. Stale while it does not switch (one thread computes, or its
 * kernel thread is blocked), or still stale a tick after the request:
 * poll it from here, readying the threads through ready queues. Returns
 * poll_stale's answer: -1 not stale, else the threads readied here. */
static int monitor_io(const struct swarm_io_hooks *io, struct worker *w,
                      uint64_t now) {
  bool asked =
      atomic_load_explicit(&w->due, memory_order_relaxed) & DUE_IO_POLL;
  int polled;
  if (!asked && w->monitor_stalled == 0) {
    polled = io->poll_stale(w, now, MONITOR_IO_STALE_NS, false);
    if (polled >= 0)
      atomic_fetch_or_explicit(&w->due, DUE_IO_POLL, memory_order_relaxed);
  } else {
    polled = io->poll_stale(w, now, MONITOR_IO_STALE_NS, true);
  }
  return polled;
}

/* One look at every worker. Returns true if something needed attention. */
static bool monitor_tick(const struct swarm_io_hooks *io, uint64_t now) {
  bool busy = false, io_readied = false;
  int stalled = 0;
  for (int i = 0; i < swarm_rt.nslots; i++) {
    struct worker *w = &swarm_rt.workers[i];
    bool spare = i >= swarm_rt.nworkers;
    if (spare && !atomic_load(&w->spare_active))
      continue;
    /* stats.run (resumes), spawns (first runs) and exits (whose fast
     * hand-off is not in stats.run): written by the owner only, read here
     * approximately. */
    uint64_t run =
        __atomic_load_n(&w->stats.run, __ATOMIC_RELAXED) +
        atomic_load_explicit(&w->stat_spawned_pub, memory_order_relaxed) +
        atomic_load_explicit(&w->stat_exited_pub, memory_order_relaxed);
    bool awake = spare || !atomic_load(&w->sleeping);
    if (awake && run == w->monitor_seen_run) {
      if (w->monitor_stalled < UINT32_MAX)
        w->monitor_stalled++;
    } else {
      w->monitor_stalled = 0;
      w->monitor_blocked = 0;
    }
    w->monitor_seen_run = run;
    int polled = io && !spare ? monitor_io(io, w, now) : -1;
    if (polled >= 0) /* stale: keep the short tick */
      busy = true;
    if (polled > 0)
      io_readied = true;
    if (w->monitor_stalled > 0 && has_queued(w) && help_possible())
      busy = true; /* keep the short tick while help could come */
    preempt_tick(w, w->monitor_stalled, has_queued(w));
    if (w->monitor_stalled < MONITOR_STALL_TICKS)
      continue;
    /* Its kernel thread is stuck: fire its due timers from here (the
     * callbacks ready threads through ready queues). */
    if (timers_earliest(w) <= now) {
      timers_run_due(w, now);
      busy = true;
    }
    /* Threads queued behind it: help at once if it is blocked in the
     * kernel; if it is running (a thread that does not yield, or the
     * kernel preempted the worker) give it MONITOR_HOG_TICKS first. */
    if (!has_queued(w) || !help_possible())
      continue; /* and no need to read /proc */
    /* Seen blocked on consecutive ticks: a page fault waiting for the
     * mmap lock shows 'D' for a moment without being stuck. */
    char st = thread_state(w->tid);
    bool blocked = st != 'R' && st != 0; /* unknown: assume running */
    w->monitor_blocked = blocked ? w->monitor_blocked + 1 : 0;
    if (w->monitor_blocked >= MONITOR_STALL_TICKS ||
        (w->monitor_stalled >= MONITOR_HOG_TICKS &&
         !swarm_rt.spares_blocked_only))
      stalled++;
  }
  /* Threads whose I/O we completed sit in ready queues. If no worker
   * sleeps (to wake) and none has switched threads for two ticks (every
   * one computes, or is stuck), a spare runs them now rather than after
   * the hog interval. */
  if (io_readied && !stalled && atomic_load(&swarm_rt.idle_workers) == 0 &&
      !swarm_rt.spares_blocked_only) {
    bool none_moving = true;
    for (int i = 0; i < swarm_rt.nworkers; i++)
      if (swarm_rt.workers[i].monitor_stalled < MONITOR_STALL_TICKS)
        none_moving = false;
    stalled = none_moving;
  }
  if (stalled) {
    busy = true;
    bool woke = false;
    for (int i = 0; i < swarm_rt.nworkers && !woke; i++)
      woke = worker_wake_sleeping(&swarm_rt.workers[i]);
    if (!woke)
      spare_activate();
  }
  return busy;
}

static void *monitor_main(void *arg) {
  (void)arg;
  uint64_t tick = MONITOR_TICK_MIN_NS;
  while (!stopping()) {
    uint32_t seq =
        atomic_load_explicit(&swarm_rt.monitor_word, memory_order_acquire);
    if (all_asleep()) {
      atomic_store(&swarm_rt.monitor_idle, true);
      atomic_thread_fence(memory_order_seq_cst); /* see the file comment */
      if (all_asleep() && !stopping())
        os_futex_wait(&swarm_rt.monitor_word, seq, -1);
      atomic_store(&swarm_rt.monitor_idle, false);
      tick = MONITOR_TICK_MIN_NS;
      continue;
    }
    os_futex_wait(&swarm_rt.monitor_word, seq, (int64_t)tick);
    if (stopping())
      break;
    const struct swarm_io_hooks *io =
        atomic_load_explicit(&swarm_io_hooks, memory_order_acquire);
    bool busy = monitor_tick(io, os_now_ns_inline());
    uint64_t cap =
        io && io->waiting() ? MONITOR_TICK_IO_MAX_NS : MONITOR_TICK_MAX_NS;
    if (busy)
      tick = MONITOR_TICK_MIN_NS;
    else if (tick < cap)
      tick *= 2;
    if (tick > cap)
      tick = cap;
  }
  return NULL;
}

int monitor_start(void) {
  atomic_store(&swarm_rt.monitor_idle, false);
  atomic_store(&swarm_rt.spares_active, 0);
  int r = os_thread_start(&swarm_rt.monitor_kthread, monitor_main, NULL);
  swarm_rt.monitor_started = r == 0;
  return r;
}

void monitor_stop(void) {
  /* state is RT_STOPPING: the monitor and the spares leave their loops. */
  if (swarm_rt.monitor_started) {
    atomic_fetch_add(&swarm_rt.monitor_word, 1);
    os_futex_wake(&swarm_rt.monitor_word, 1);
    os_thread_join(swarm_rt.monitor_kthread);
    swarm_rt.monitor_started = false;
  }
  for (int i = swarm_rt.nworkers; i < swarm_rt.nslots; i++) {
    struct worker *w = &swarm_rt.workers[i];
    if (!w->spare_started)
      continue;
    atomic_fetch_add(&w->spare_word, 1);
    os_futex_wake(&w->spare_word, 1);
    os_thread_join(w->kthread);
    w->spare_started = false;
  }
}

void monitor_after_fork(void) {
  swarm_rt.monitor_started = false;
  atomic_store(&swarm_rt.monitor_idle, false);
  atomic_store(&swarm_rt.spares_active, 0);
  const struct swarm_io_hooks *io =
      atomic_load_explicit(&swarm_io_hooks, memory_order_acquire);
  if (io)
    io->after_fork();
}
