/*
 * io/poller.c — blocking I/O on swarm threads: the descriptor table's
 * entries (made and classified by io/fdtable.c), the per-worker epolls,
 * parking a thread on a descriptor, and the pollers that perform the
 * parked calls (MassiveThreads' I/O design, made lossless).
 *
 * Design:
 *  - A call first simply tries, without blocking (the fast path: one
 *    system call made non-blocking by itself, never by the file's
 *    O_NONBLOCK, which other processes share: calls.c). On EAGAIN, unless
 *    the program set O_NONBLOCK itself (asked of the kernel, or what it
 *    said kept while nothing changed it: io/opts.c), the thread
 *    parks on the descriptor's wait list for that direction (readers or
 *    writers), in FIFO order.
 *  - The descriptor is registered, once, edge-triggered for both
 *    directions, in the epoll of the worker that first waited on it
 *    (spares use a regular worker's). An edge bumps the entry's sequence
 *    counter for its direction (rseq / wseq) and, in list order, performs
 *    the waiters' calls itself: a call that completes takes its waiter off
 *    the list and its thread is made runnable on the polling worker (the
 *    data is already in its buffer); the first that says EAGAIN stops the
 *    walk (the edge is used up; the next edge resumes it). Pure waits
 *    (poll, select, epoll_wait, swarm_fd_wait) are woken with the events
 *    seen and re-check themselves. A call with no per-call non-blocking
 *    form (IO_HOW_READY: accept, FIFOs opened by name) is not performed
 *    here, since under e->lock a call that blocks (another process took
 *    the readiness) would stall this worker and every poller spinning on
 *    the lock: the first such waiter is woken to make it itself, and
 *    each one that gets something done wakes the next (io_fd_kick), so
 *    readiness left over is not lost and there is no herd.
 *  - Who polls: a worker with nothing local to run (sched_loop's poll
 *    point), an idle worker, which sleeps in its own poller (epoll_wait,
 *    or io_uring_enter: io/backend.h; a wake-up eventfd in it carries the
 *    scheduler's wake-ups; core's sleep protocol is unchanged: the sleeper
 *    stores in_sleep, then re-reads sleep_word, and a waker advances
 *    sleep_word, then reads in_sleep, both seq_cst, so one sees the
 *    other), and the monitor (core/monitor.c) for any poller nobody polled
 *    for a millisecond. Which back end delivers the edges (epoll or
 *    io_uring) is io/backend.h's business; nothing here depends on it.
 *
 * The race won here — an edge between "the call said EAGAIN" and "the
 * thread is on the list" must not be lost (edge-triggered epoll reports it
 * once). MassiveThreads keeps a "reserve list"; we keep sequence counters
 * and a three-state claim word per wait:
 *  - the thread reads the direction's counter, then tries the call;
 *  - park's commit (running after the switch, thread off its stack) links
 *    the node under the entry's lock; if the counter moved since the read,
 *    an edge came in between: the park is abandoned and the thread tries
 *    again. Counters move only under the same lock, so the check is exact;
 *  - the wait's `fired` word is DISARMED (2) while commit links nodes (a
 *    multi-descriptor wait links several, each under its own lock); a
 *    poller, timer or close that finds it DISARMED records a miss (-> 3)
 *    instead of claiming; commit then arms it with CAS 2 -> 0, which fails
 *    if a miss was recorded (the park is abandoned). Only ARMED (0) can be
 *    claimed (-> 1), by exactly one of poller, timer and close; the claimer
 *    readies the thread. Commit touches nothing of the thread after its
 *    arming CAS, so a thread readied at once cannot pull its stack from
 *    under it.
 *  - a poller claims before it performs a waiter's call and unclaims
 *    (1 -> 0) if the call says EAGAIN; a timer that fired meanwhile set
 *    timed_out first, so the poller, after unclaiming, sees it and completes
 *    the wait as a timeout. Data is never read into a waiter that has
 *    already been told it timed out.
 *  - close (io_fd_forget_with, io/fdtable.c) removes the epoll registration,
 * closes the file, bumps both counters and the generation, and claims every
 * armed waiter with EBADF, all under the entry's lock; only then are they woken
 * (woken earlier, one could find the file still open and register it again, to
 * wait for an event that can never come). Events still queued for the old
 * generation are dropped.
 *
 * Ownership: a parked thread is owned by its wait (a node on each list, the
 * claim word deciding which waker readies it); its nodes live on its stack
 * and are unlinked, by pollers or by the thread itself once it runs again,
 * only under the entry's lock.
 *
 * Rejected: one global epoll (every worker contending on its ready list and
 * its lock); level-triggered registration (every poll reports every ready
 * descriptor again while threads are not waiting on it); re-arming with
 * EPOLLONESHOT on every wait (an epoll_ctl per blocking call).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>

#include "io/backend.h"
#include "io/io.h"
#include "sync/sync.h"

#define MAX_CHUNKS IO_FD_MAX_CHUNKS
enum { ARMED = 0, CLAIMED = 1, DISARMED = 2, MISSED = 3 };

__thread bool io_in_poller __attribute__((tls_model("initial-exec")));

/* An idle worker spins (core's sched_loop) before it sleeps in epoll_wait,
 * calling hook_poll each round. Polling every round made a ping-pong round
 * trip cost 4-40 empty epoll_pwait calls (docs/io.md, "Accounting") and
 * stretched the spin to milliseconds of system calls on a CPU the peers
 * share. Skipping at most 15 rounds (a microsecond or two of cpu_relax)
 * after an empty poll keeps readiness noticed promptly and lets the spin
 * end, and the worker sleep in epoll_wait, as soon as it would without
 * the I/O layer. (The uring back end's empty poll is a load: no skip.) */
#define POLL_SKIP_MAX 15u
/* ... unless the last poll that found events found a batch (many
 * connections, each waiting far longer than a few microseconds for its
 * peer): then up to 63, which halved the empty polls per round trip at
 * C = 1,024 (docs/io.md, "Second pass"). A lone connection keeps 15: its
 * round trip is what a later poll would delay. */
#define POLL_SKIP_MAX_BATCH 63u
#define POLL_BATCH 8

static struct {
  struct io_worker workers[SWARM_MAX_WORKERS];
  struct spinlock create_lock; /* LOCK_IO_EPOLL */
  _Atomic int nwaiting;        /* threads parked in io_call / io_wait_many */
  /* the back end, chosen at the first poller (under create_lock) and
   * published before any worker's `ready` */
  const struct io_backend *_Atomic be;
  char note[160]; /* what was chosen and why (SWARM_STATS) */
} io = {.create_lock = SPINLOCK_INIT(LOCK_IO_EPOLL)};

static inline const struct io_backend *backend(void) {
  return atomic_load_explicit(&io.be, memory_order_relaxed);
}

const struct io_backend *io_backend_of(void) {
  return backend();
}
void io_waiting_add(int delta) {
  atomic_fetch_add(&io.nwaiting, delta);
}

/* ---- the table (io/fdtable.c; lookups inline in io.h) ---- */

/* ---- wait lists (under e->lock) ---- */

/* A list is doubly linked through its nodes; the head's prev names the
 * tail (so the entry keeps only heads: struct io_fd is one line), and the
 * tail's next is NULL. */
static void node_link(struct io_fd *e, struct io_node *n) {
  int d = n->dir;
  struct io_node *head = e->head[d];
  n->next = NULL;
  if (head) {
    struct io_node *tail = head->prev;
    tail->next = n;
    n->prev = tail;
    head->prev = n;
  } else {
    n->prev = n;
    e->head[d] = n;
  }
  n->linked = true;
}

static void node_unlink(struct io_fd *e, struct io_node *n) {
  int d = n->dir;
  struct io_node *head = e->head[d];
  if (n == head) {
    e->head[d] = n->next;
    if (n->next)
      n->next->prev = n->prev; /* the tail */
  } else {
    n->prev->next = n->next;
    if (n->next)
      n->next->prev = n->prev;
    else
      head->prev = n->prev; /* n was the tail */
  }
  n->next = n->prev = NULL;
  n->linked = false;
}

/* ARMED -> CLAIMED: true, the caller wakes the thread. DISARMED -> MISSED:
 * commit will abandon the park. Otherwise someone else has it. */
static bool wait_claim(struct io_wait *wt) {
  int v = atomic_load(&wt->fired);
  for (;;) {
    if (v == ARMED) {
      if (atomic_compare_exchange_weak(&wt->fired, &v, CLAIMED))
        return true;
    } else if (v == DISARMED) {
      if (atomic_compare_exchange_weak(&wt->fired, &v, MISSED))
        return false;
    } else {
      return false;
    }
  }
}

bool io_wait_claim(struct io_wait *wt) {
  return wait_claim(wt);
}

static _Atomic uint32_t *dir_seq(struct io_fd *e, int dir) {
  return dir ? &e->wseq : &e->rseq;
}

/* The drained hint: readiness first after a short read.
 *
 * A thread-per-connection server reads right after it answered, before the
 * peer had time to send more: the read says EAGAIN, one system call per
 * round trip for nothing (docs/io.md, "Accounting"). But a short read of a
 * byte stream empties it, and every byte that arrives afterwards raises an
 * edge that bumps rseq once a poller sees it. So when a read came back
 * short with rseq at S (the value read before the attempt, or in a poller
 * the value after its own bump: both under the usual protocol) and rseq is
 * still S at the next read, every byte that came since has an edge still
 * to be seen: the thread may park at once with seq = S, exactly as if its
 * attempt had said EAGAIN, and the poller that sees the edge performs the
 * read. Only for plain reads (read, recv without flags or address) of a
 * stream whose per-call form is known to work; a datagram's short read
 * says nothing of the next one. The program's O_NONBLOCK still gets a real
 * attempt (io_call). Not once the peer hung up or an error is pending
 * (`ended`, sticky): an end of file seen by a poller before the short read
 * raises no edge after it, yet the next read would return 0 at once
 * (dropin_nonblock_child hung here). Not before the descriptor is in an
 * epoll: its edges are counted only from then on. */
static inline __attribute__((always_inline)) bool
drained_eligible(struct io_fd *e, const struct io_node *n) {
  if (n->dir != 0 || !e->stream || n->len == 0 || !e->registered ||
      atomic_load(&e->ended))
    return false;
  if (n->attempt == io_attempt_read)
    return atomic_load_explicit(&e->how[0], memory_order_relaxed) ==
           IO_HOW_NOWAIT_OK;
  return n->attempt == io_attempt_recvfrom && n->flags == 0 && !n->addr;
}

static inline __attribute__((always_inline)) void
drained_note(struct io_fd *e, const struct io_node *n, long r, uint32_t seq) {
  if (r > 0 && (size_t)r < n->len && drained_eligible(e, n))
    atomic_store_explicit(&e->drained, seq + 1, memory_order_relaxed);
}

static void edge_walk(struct io_fd *e, int d, uint32_t events,
                      struct io_node **done) {
  struct io_node *n = e->head[d];
  bool kicked = false;
  while (n) {
    struct io_node *next = n->next;
    struct io_wait *wt = n->wait;
    /* A check-then-call is not performed here: the call might block this
     * worker (and everyone spinning on e->lock) if another process took
     * the readiness first. Its thread is woken to look for itself; one
     * per edge, and each one that gets something done wakes the next
     * (io_fd_kick), so readiness left over is not lost, without a herd. */
    bool kick = n->attempt && n->how == IO_HOW_READY;
    if (n->ring || (kick && kicked) || !wait_claim(wt)) { /* ring: its own */
      n = next;
      continue;
    }
    if (kick) {
      kicked = true; /* not completed: io_call tries again */
    } else if (n->attempt) {
      io_in_poller = true;
      long r = n->attempt(n);
      io_in_poller = false;
      if (r == -EAGAIN) {
        atomic_store(&wt->fired, ARMED); /* unclaim */
        if (!atomic_load(&wt->timed_out) || !wait_claim(wt))
          break; /* the edge is used up */
        /* the timer fired while we held it: complete as a timeout */
      } else {
        wt->result = r;
        wt->completed = true;
        drained_note(e, n, r, atomic_load(dir_seq(e, d)));
      }
    } else {
      wt->revents = events;
      wt->completed = true;
    }
    node_unlink(e, n);
    n->ready_next = *done;
    *done = n;
    n = next;
  }
}

/* An edge for direction d of e (locked): bump the counter, perform the
 * waiters' calls in order; claimed nodes are prepended to *done. Inline:
 * most edges find no waiter in one direction (an input edge reports
 * EPOLLOUT too). */
static inline __attribute__((always_inline)) void
edge(struct io_fd *e, int d, uint32_t events, struct io_node **done) {
  atomic_fetch_add(dir_seq(e, d), 1);
  if (e->head[d])
    edge_walk(e, d, events, done);
}

void io_fd_kick(struct io_fd *e, int d) {
  struct io_node *done = NULL;
  spin_lock(&e->lock);
  atomic_fetch_add(dir_seq(e, d), 1); /* a thread about to park retries */
  for (struct io_node *n = e->head[d]; n; n = n->next)
    if (n->attempt && n->how == IO_HOW_READY && wait_claim(n->wait)) {
      node_unlink(e, n);
      n->ready_next = NULL;
      done = n;
      break;
    }
  spin_unlock(&e->lock);
  if (done)
    swarm_ready(done->wait->thread);
}

/* Readies the threads of claimed nodes; a node is not touched after its
 * thread is readied (it lives on that thread's stack). */
static int ready_all(struct io_node *done) {
  int count = 0;
  while (done) {
    struct io_node *next = done->ready_next;
    struct swarm_thread *t = done->wait->thread;
    /* swarm_ready reads the descriptor's second line; the scheduler's
     * prefetch reads the saved stack pointer in its first (sched.h) */
    __builtin_prefetch(t);
    swarm_ready(t);
    done = next;
    count++;
  }
  return count;
}

/* For the descriptor's end (io/fdtable.c): the poller's list and wake
 * steps, and the poller of worker idx. */
void io_node_unlink(struct io_fd *e, struct io_node *n) {
  node_unlink(e, n);
}
void io_ready_all(struct io_node *done) {
  ready_all(done);
}
struct io_worker *io_worker_at(int idx) {
  return &io.workers[idx];
}

#define READ_EVENTS (EPOLLIN | EPOLLPRI | EPOLLRDHUP | EPOLLHUP | EPOLLERR)
#define WRITE_EVENTS (EPOLLOUT | EPOLLHUP | EPOLLERR)

/* One event of a back end (io/backend.h): an edge for each direction the
 * events concern, on the entry the token names if its generation is
 * current (events of a closed descriptor are dropped). */
int io_deliver(uint64_t token, uint32_t events) {
  int fd = (int)(uint32_t)token;
  struct io_fd *e = io_fd_entry(fd);
  if (!e)
    return 0;
  struct io_node *done = NULL;
  spin_lock(&e->lock);
  if (io_token_is_gen(token, atomic_load(&e->gen))) {
    /* before edge's bump: a reader that sees the bumped counter sees
     * this too (drained_eligible) */
    if (events & (EPOLLHUP | EPOLLRDHUP | EPOLLERR))
      atomic_store(&e->ended, true);
    if (events & READ_EVENTS)
      edge(e, 0, events, &done);
    if (events & WRITE_EVENTS)
      edge(e, 1, events, &done);
  }
  spin_unlock(&e->lock);
  return ready_all(done);
}

void io_rearm(uint64_t token) {
  int fd = (int)(uint32_t)token;
  struct io_fd *e = io_fd_entry(fd);
  const struct io_backend *be = backend();
  if (!e || !be->rearm)
    return;
  spin_lock(&e->lock);
  if (io_token_is_gen(token, atomic_load(&e->gen)) && e->registered)
    be->rearm(&io.workers[e->owner], fd, token);
  spin_unlock(&e->lock);
}

void io_unregistered(uint64_t token) {
  struct io_fd *e = io_fd_entry((int)(uint32_t)token);
  if (!e)
    return;
  spin_lock(&e->lock);
  if (io_token_is_gen(token, atomic_load(&e->gen)))
    e->registered = false;
  spin_unlock(&e->lock);
}

/* ---- per-worker pollers ---- */

static int worker_index(struct worker *w) {
  int n = swarm_rt.nworkers;
  return w->id < n ? w->id : w->id % n;
}

/* SWARM_IO: epoll, uring or auto (unset: auto). auto is epoll: the uring
 * back end did not win the ping-pong measurement (docs/io.md, "The
 * io_uring back end"). An unusable uring falls back to epoll and says why
 * in io.note (SWARM_STATS prints it); a malformed value is reported on
 * stderr and ignored. Under create_lock. */
static const struct io_backend *choose_backend(void) {
  const char *v = getenv("SWARM_IO");
  bool want_uring = false;
  if (v && strcmp(v, "uring") == 0) {
    want_uring = true;
  } else if (v && *v && strcmp(v, "epoll") != 0 && strcmp(v, "auto") != 0) {
    static const char m[] = "swarm: SWARM_IO: expected epoll, uring or auto; "
                            "using epoll\n";
    sys_write(2, m, sizeof m - 1);
  }
  if (!want_uring) {
    snprintf(io.note, sizeof io.note, "epoll");
    return &io_backend_epoll;
  }
#ifdef SWARM_HAVE_URING
  char why[96];
  if (io_uring_usable(why, sizeof why)) {
    return io_uring_variant(io.note, sizeof io.note);
  }
  snprintf(io.note, sizeof io.note, "epoll (SWARM_IO=uring unusable here: %s)",
           why);
#else
  snprintf(io.note, sizeof io.note,
           "epoll (SWARM_IO=uring: built without liburing)");
#endif
  return &io_backend_epoll;
}

/* The poller of worker idx, created on first need; NULL if it cannot be. */
static struct io_worker *worker_poller(int idx) {
  struct io_worker *iw = &io.workers[idx];
  if (likely(atomic_load_explicit(&iw->ready, memory_order_acquire)))
    return iw;
  spin_lock(&io.create_lock);
  if (!atomic_load(&io.be)) {
    atomic_store(&io.be, choose_backend());
    atomic_store(&io_ring_reads, backend()->recv != NULL);
  }
  bool made = false;
  if (!atomic_load(&iw->ready) && backend()->open(iw) == 0) {
    atomic_store_explicit(&iw->ready, 1, memory_order_release);
    made = true;
  }
  bool ok = atomic_load(&iw->ready);
  spin_unlock(&io.create_lock);
  /* It may be asleep on its futex, with no deadline soon, while the
   * monitor sleeps too: wake it so that it sleeps in its poller. */
  if (made)
    worker_wake(&swarm_rt.workers[idx]);
  return ok ? iw : NULL;
}

struct io_worker *io_ring_here(void) {
  struct worker *w = worker_current();
  const struct io_backend *be = backend(); /* none yet: the next read */
  if (!w || w->id >= swarm_rt.nworkers || !be || !be->recv)
    return NULL; /* a spare: its own poller is a regular worker's */
  return worker_poller(w->id);
}

static const char *io_backend_note(void) {
  return atomic_load(&io.be) ? io.note : NULL;
}

bool io_fd_register(struct io_fd *e, int fd) {
  struct worker *w = worker_current();
  if (!w) {
    if (runtime_ensure_started() != 0)
      return false;
  }
  int idx = w ? worker_index(w) : fd % swarm_rt.nworkers;
  struct io_worker *iw = worker_poller(idx);
  if (!iw)
    return false;
  bool ok = true;
  spin_lock(&e->lock);
  if (!e->registered) {
    uint64_t token = io_token(atomic_load(&e->gen), fd);
    if (backend()->add(iw, fd, token, w && w->id == idx) == 0) {
      e->registered = true;
      e->owner = (int16_t)idx;
    } else {
      ok = false;
    }
  }
  spin_unlock(&e->lock);
  return ok;
}

/* ---- parking ---- */

struct park_set {
  struct io_node *nodes;
  int count;
};

/* Runs after the switch (core's park): link every node, then arm. */
static bool commit_wait(struct swarm_thread *self, void *arg) {
  (void)self;
  struct park_set *p = arg;
  struct io_wait *wt = p->nodes[0].wait;
  bool missed = false;
  for (int i = 0; i < p->count; i++) {
    struct io_node *n = &p->nodes[i];
    spin_lock(&n->e->lock);
    if (n->ring ? atomic_load(&n->e->gen) != n->seq || !io_ring_submit(n)
                : atomic_load(dir_seq(n->e, n->dir)) != n->seq)
      missed = true; /* an edge (a close) since the attempt: try again */
    else
      node_link(n->e, n);
    spin_unlock(&n->e->lock);
    if (missed)
      return false; /* DISARMED: nobody else can wake us */
  }
  int v = DISARMED;
  /* The last access to the thread's memory: once armed, a poller may ready
   * it and it may run at once. */
  return atomic_compare_exchange_strong(&wt->fired, &v, ARMED);
}

/* commit_wait for the common park: one node, not the ring's (io_call) —
 * the same steps without the loop. */
static bool commit_one(struct swarm_thread *self, void *arg) {
  (void)self;
  struct io_node *n = arg;
  struct io_fd *e = n->e;
  spin_lock(&e->lock);
  bool linked = atomic_load(dir_seq(e, n->dir)) == n->seq;
  if (linked)
    node_link(e, n);
  spin_unlock(&e->lock);
  int v = DISARMED;
  return linked && atomic_compare_exchange_strong(&n->wait->fired, &v, ARMED);
}

static void timer_fire(struct swarm_timer *t) {
  struct io_wait *wt = t->arg;
  struct swarm_thread *th = wt->thread;
  atomic_store(&wt->timed_out, 1);
  if (wait_claim(wt)) {
    atomic_store(&wt->timer_done, 1);
    swarm_ready(th);
    return;
  }
  atomic_store(&wt->timer_done, 1); /* wt may be gone after this */
}

/* sync_interrupt's hook (the drop-in's pthread_cancel), under the thread's
 * record lock, which keeps wt alive until park_on unregisters. */
static struct swarm_thread *interrupt_hook(void *arg) {
  struct io_wait *wt = arg;
  atomic_store(&wt->interrupted, 1);
  return wait_claim(wt) ? wt->thread : NULL;
}

/* io_park_on's body, inline in call_loop, where count is 1. */
static inline __attribute__((always_inline)) void park_on(struct io_node *nodes,
                                                          int count,
                                                          struct io_wait *wt,
                                                          uint64_t deadline) {
  struct worker *w = worker_current();
  wt->thread = w ? w->current : swarm_current_thread();
  atomic_init(&wt->fired, DISARMED);
  atomic_init(&wt->timed_out, 0);
  atomic_init(&wt->timer_done, 0);
  atomic_init(&wt->interrupted, 0);
  wt->closed = wt->completed = false;
  wt->has_timer = false;
  wt->result = 0;
  wt->revents = 0;
  for (int i = 0; i < count; i++) {
    nodes[i].wait = wt;
    nodes[i].linked = false;
  }
  bool hooked = nodes[0].interruptible;
  if (hooked && !sync_interruptible_begin(wt->thread, interrupt_hook, wt)) {
    atomic_store(&wt->interrupted, 1); /* pending already: no park */
    return;
  }
  if (deadline && swarm_timer_start(&wt->timer, deadline, timer_fire, wt) == 0)
    wt->has_timer = true;
  struct park_set p = {nodes, count};
  bool one = count == 1 && !nodes[0].ring;
  atomic_fetch_add(&io.nwaiting, 1);
  swarm_park(one ? commit_one : commit_wait, one ? (void *)nodes : &p,
             SWARM_PARK_IO, NULL);
  atomic_fetch_sub(&io.nwaiting, 1);
  if (hooked)
    sync_interruptible_end(wt->thread);
  for (int i = 0; i < count; i++) {
    struct io_node *n = &nodes[i];
    if (!__atomic_load_n(&n->linked, __ATOMIC_RELAXED) && wt->completed)
      continue;
    spin_lock(&n->e->lock);
    if (n->linked)
      node_unlink(n->e, n);
    spin_unlock(&n->e->lock);
  }
  if (wt->has_timer && !swarm_timer_cancel(&wt->timer))
    while (!atomic_load(&wt->timer_done))
      os_cpu_relax(); /* its callback still reads wt */
}

void io_park_on(struct io_node *nodes, int count, struct io_wait *wt,
                uint64_t deadline) {
  park_on(nodes, count, wt, deadline);
}

/* The first try of io_call, made inline (before_first: 0) or, when the
 * caller's fast path made it already, given: 1, it said EAGAIN; 2, the
 * drained hint skipped it (n->seq read before it either way). */
static __attribute__((noinline)) long
call_loop(struct io_fd *e, struct io_node *n, int64_t timeout_ns, bool ring,
          int before_first, uint32_t gen0) {
  uint64_t deadline = 0;
  bool timeout_known = timeout_ns != 0;
  if (timeout_ns > 0)
    deadline = os_now_ns_inline() + (uint64_t)timeout_ns;
  for (;;) {
    /* gen0 was read before the call's first attempt. A close since then
     * (it bumps gen, and the counters, so a park being committed is
     * abandoned) ends the call as it ends a parked one: EBADF. Trying the
     * number again would find whatever file was opened at it since — a
     * worker's ring made lazily took it in test_io_ringread's close race
     * and a read of it said EINVAL. */
    uint32_t gen = atomic_load(&e->gen);
    if (unlikely(gen != gen0))
      return -EBADF;
    bool skip;
    long r;
    if (before_first) {
      skip = before_first == 2;
      r = -EAGAIN;
      before_first = 0;
    } else {
      n->seq = atomic_load(dir_seq(e, n->dir));
      skip = ring ? atomic_load_explicit(&e->ring_short, memory_order_relaxed)
                  : n->seq + 1 == atomic_load_explicit(&e->drained,
                                                       memory_order_relaxed) &&
                        drained_eligible(e, n);
      r = skip ? -EAGAIN : n->attempt(n);
    }
    if (r != -EAGAIN || (n->flags & MSG_DONTWAIT) || io_fd_nonblock(e, n->fd)) {
      if (skip) /* the program wants an answer now: ask the kernel */
        r = n->attempt(n);
      else
        drained_note(e, n, r, n->seq);
      if (n->ring_iw)
        io_ring_note(e, n, r);
      return r; /* the program asked for EAGAIN, by flag or by file */
    }
    if (!timeout_known) {
      timeout_known = true;
      int64_t t = io_fd_timeout(e, n->fd, n->dir);
      if (t > 0)
        deadline = os_now_ns_inline() + (uint64_t)t;
    }
    if (deadline && os_now_ns_inline() >= deadline)
      return -EAGAIN;
    if (ring) {
      r = io_ring_read(e, n, deadline, gen, skip);
      if (r != IO_RING_RETRY)
        return r;
      ring = n->ring;
      continue;
    }
    if (!e->registered && !io_fd_register(e, n->fd)) {
      /* epoll refuses it (a file that is always "ready", or an entry made
       * stale by a close swarm did not see and a regular file opened at
       * the same number): the plain call, blocking the worker. Retrying
       * RWF_NOWAIT would spin on a regular file's page-cache miss. */
      n->how = IO_HOW_PLAIN;
      return n->attempt(n);
    }
    struct io_wait wt;
    park_on(n, 1, &wt, deadline);
    if (wt.completed)
      return wt.result;
    long failure = io_wait_failure(&wt, deadline);
    if (failure)
      return failure;
  }
}

long io_call_after_eagain(struct io_fd *e, struct io_node *n, uint32_t gen) {
  n->e = e;
  return call_loop(e, n, 0, false, 1, gen);
}

/* The first try inline, with a small frame: a call that completes at once
 * (most writes) never enters call_loop. Its steps are call_loop's first
 * iteration for a call without timeout that the ring does not perform. */
long io_call(struct io_fd *e, struct io_node *n, int64_t timeout_ns) {
  n->e = e;
  uint32_t gen = atomic_load(&e->gen); /* before any attempt: call_loop */
  bool ring = io_ring_wanted(e, n);    /* the ring performs the read */
  if (unlikely(timeout_ns != 0 || ring))
    return call_loop(e, n, timeout_ns, ring, 0, gen);
  n->seq = atomic_load(dir_seq(e, n->dir));
  if (n->seq + 1 == atomic_load_explicit(&e->drained, memory_order_relaxed) &&
      drained_eligible(e, n))
    return call_loop(e, n, 0, false, 2, gen);
  long r = n->attempt(n);
  if (r == -EAGAIN)
    return call_loop(e, n, 0, false, 1, gen);
  drained_note(e, n, r, n->seq);
  if (n->ring_iw)
    io_ring_note(e, n, r);
  return r;
}

int io_wait_many(struct io_node *nodes, int count, uint64_t deadline) {
  for (int i = 0; i < count; i++)
    if (!nodes[i].e->registered && !io_fd_register(nodes[i].e, nodes[i].fd))
      return 1; /* epoll refuses it: treat as ready (regular files) */
  struct io_wait wt;
  io_park_on(nodes, count, &wt, deadline);
  if (atomic_load(&wt.interrupted))
    return -1; /* a readiness wait has nothing to lose */
  if (wt.completed || wt.closed)
    return 1;
  if (deadline && atomic_load(&wt.timed_out))
    return 0;
  return 1; /* an edge came in while parking: re-check */
}

/* ---- hooks called by core ---- */

static void hook_poll(struct worker *w, bool due) {
  if (atomic_load_explicit(&io.nwaiting, memory_order_relaxed) == 0)
    return;
  /* a spare polls the poller it registers in (its regular worker's) */
  struct io_worker *iw = &io.workers[worker_index(w)];
  if (!atomic_load_explicit(&iw->ready, memory_order_acquire))
    return;
  const struct io_backend *be = backend();
  bool owner = worker_index(w) == w->id;
  bool backoff = owner && !be->poll_is_free;
  if (backoff && !due && iw->idle_skip > 0) {
    iw->idle_skip--;
    return;
  }
  int readied = 0;
  int n = be->wait(iw, 0, owner, &readied);
  atomic_store_explicit(&iw->polled_ns, os_now_ns_inline(),
                        memory_order_relaxed);
  if (backoff) {
    if (n > 0)
      iw->idle_cap = n >= POLL_BATCH ? POLL_SKIP_MAX_BATCH : POLL_SKIP_MAX;
    iw->idle_backoff = n > 0 ? 0 : 2 * iw->idle_backoff + 1;
    unsigned cap = iw->idle_cap ? iw->idle_cap : POLL_SKIP_MAX;
    if (iw->idle_backoff > cap)
      iw->idle_backoff = cap;
    iw->idle_skip = iw->idle_backoff;
  }
}

static bool hook_sleep(struct worker *w, uint32_t seq, int64_t timeout_ns) {
  if (w->id >= swarm_rt.nworkers)
    return false;
  struct io_worker *iw = &io.workers[w->id];
  if (!atomic_load_explicit(&iw->ready, memory_order_acquire))
    return false;
  atomic_store_explicit(&iw->in_sleep, 1, memory_order_seq_cst);
  int readied = 0;
  if (atomic_load_explicit(&w->sleep_word, memory_order_seq_cst) == seq)
    backend()->wait(iw, timeout_ns, true, &readied);
  atomic_store_explicit(&iw->in_sleep, 0, memory_order_relaxed);
  atomic_store_explicit(&iw->polled_ns, os_now_ns_inline(),
                        memory_order_relaxed);
  iw->idle_skip = iw->idle_backoff = 0; /* woken: poll at once again */
  return true;
}

static bool hook_wake(struct worker *w) {
  if (w->id >= swarm_rt.nworkers)
    return false;
  struct io_worker *iw = &io.workers[w->id];
  if (!atomic_load_explicit(&iw->in_sleep, memory_order_seq_cst))
    return false;
  backend()->wake(iw);
  return true;
}

static int hook_poll_stale(struct worker *w, uint64_t now, uint64_t stale,
                           bool poll) {
  if (atomic_load_explicit(&io.nwaiting, memory_order_relaxed) == 0)
    return -1;
  struct io_worker *iw = &io.workers[w->id];
  if (!atomic_load_explicit(&iw->ready, memory_order_acquire) ||
      atomic_load_explicit(&iw->in_sleep, memory_order_relaxed))
    return -1;
  uint64_t last = atomic_load_explicit(&iw->polled_ns, memory_order_relaxed);
  if (now - last < stale)
    return -1;
  if (!poll)
    return 0;
  int readied = 0;
  backend()->wait(iw, 0, false, &readied);
  atomic_store_explicit(&iw->polled_ns, now, memory_order_relaxed);
  return readied;
}

static bool hook_waiting(void) {
  return atomic_load(&io.nwaiting) > 0;
}

void io_offload_after_fork(void);

static void hook_after_fork(void) {
  /* The pollers are shared with the parent: drop ours, and every
   * registration with them; the parent's waiters did not come along. */
  for (int i = 0; i < SWARM_MAX_WORKERS; i++) {
    struct io_worker *iw = &io.workers[i];
    if (atomic_load(&iw->ready))
      backend()->drop(iw);
    atomic_store(&iw->ready, 0);
    atomic_store(&iw->in_sleep, 0);
  }
  for (int c = 0; c < MAX_CHUNKS; c++) {
    struct io_fd *chunk = atomic_load(&io_fd_chunks[c]);
    if (!chunk)
      continue;
    for (uint32_t i = 0; i < IO_FD_CHUNK; i++) {
      struct io_fd *e = &chunk[i];
      spin_init(&e->lock, LOCK_IO_FD);
      atomic_store(&e->busy[0], 0); /* a holder did not come along */
      atomic_store(&e->busy[1], 0);
      e->registered = false;
      e->head[0] = e->head[1] = NULL;
    }
  }
  atomic_store(&io.nwaiting, 0);
  spin_init(&io.create_lock, LOCK_IO_EPOLL);
  io_offload_after_fork();
}

static const struct swarm_io_hooks hooks = {
    .poll = hook_poll,
    .sleep = hook_sleep,
    .wake = hook_wake,
    .poll_stale = hook_poll_stale,
    .waiting = hook_waiting,
    .after_fork = hook_after_fork,
    .describe = io_backend_note,
};

__attribute__((constructor)) static void io_register_hooks(void) {
  atomic_store_explicit(&swarm_io_hooks, &hooks, memory_order_release);
}
