/*
 * dist/sched.c — uni-address threads and the distributed work-stealing
 * scheduler: child-first spawn on the running stack, the deque of parent
 * continuations (Cilk's THE protocol, thieves on other ranks over MPI RMA),
 * join with evacuation of the waiting thread, message-based stealing, and
 * HIVE's remote spawn inbox.
 *
 * Invariants:
 *  - Threads run only in the uni-address region [DIST_UNI_BASE, +size); the
 *    scheduler runs on the main thread's own stack (dist->sched_sp), so when it
 *    runs, the region holds nothing live except continuations still on this
 *    rank's deque, and the scheduler never copies frames into the region
 *    before the deque is empty.
 *  - The deque holds the chain of not-yet-stolen ancestors of the running
 *    thread, oldest at top. So a successful pop when a thread exits returns
 *    its own parent, which then continues on the same stack (fast path); a
 *    failed pop means the parent was stolen (or there is none) and the exit
 *    goes through the scheduler (slow path).
 *  - A child whose exit pops its parent was, all its life, known only to
 *    that parent's frame on this rank and to its own descendants: its
 *    record is local and only a descendant can be waiting on it (the exit
 *    then pushes the parent back and takes the slow path), so it is
 *    completed with plain stores. Every other completion, and every
 *    suspension, arrives on the record with MPI_Fetch_and_op; the second
 *    arrival resumes the joiner.
 *  - Thieves take the oldest continuation and copy its frames while holding
 *    the victim's deque lock; the victim needs that lock to pop the stolen
 *    entry's slot, so it cannot overwrite those frames mid-copy.
 *  - Stack copies happen only on steals, suspensions (a join that finds its
 *    child unfinished, which needs an earlier steal or spawn_on) and their
 *    resumes: O(steals), never per spawn.
 */
#include "dist_internal.h"

#include <errno.h>
#include <sched.h>
#include <stddef.h>
#include <string.h>

#include "arch/context.h"

#define META_OFF(f) ((uint64_t)offsetof(dist_meta_t, f))
#define REC_OFF(i, f)                                                          \
  (dist->off_records + (i) * sizeof(dist_rec_t) + offsetof(dist_rec_t, f))
/* A record's state: bits a thread's end and its one joiner add. */
#define REC_DONE 1ull  /* the thread finished (result written) */
#define REC_WAIT 2ull  /* the joiner suspended, its link in place */
#define REC_CLAIM 4ull /* + 4 per joiner trying to suspend on it */
#define TAG_REQ 71
#define TAG_REP 72
#define TAG_FRAMES 73

static uint64_t region_top(void) {
  return DIST_UNI_BASE + dist->region_size;
}

/* ---- join records ------------------------------------------------------ */

/* A record for a new thread here; returns the thread's handle: the one the
 * record holds (its generation was advanced when the record was last freed,
 * or at the run's start: swarm_dist_sched_reset). */
static uint64_t rec_alloc(void) {
  uint64_t i = dist->records_free;
  dist_rec_t *r = &dist->records[i];
  if (i) {
    dist->records_free = r->link;
  } else {
    if ((i = dist->records_bump++) >= dist->n_records)
      swarm_dist_fatal("rank %d: more than %zu live threads created here",
                       dist->rank, dist->n_records - 1);
    r = &dist->records[i];
    if (!r->handle) /* first use since the window was made */
      r->handle = dist_handle(dist->rank, i);
  }
  r->state = 0; /* link is read only once a joiner has put it there */
  return r->handle;
}

/* Frees the record of h, joined here: the next generation's handle goes in
 * first, so h (and any copy of it) no longer matches and joins of it
 * answer ESRCH, and the free list never sees the record twice. */
static inline void rec_free_local(dist_rec_t *r, uint64_t h) {
  r->handle = dist_handle_next(h);
  r->link = dist->records_free;
  dist->records_free = dist_handle_idx(h);
}

/* ---- the deque (owner side) -------------------------------------------- */

static void lock_deque(int rank) {
  uint64_t old;
  for (;;) {
    swarm_dist_faa(rank, META_OFF(lock), 1, &old);
    if (old == 0)
      return;
    swarm_dist_faa(rank, META_OFF(lock), -1, NULL);
    sched_yield();
  }
}

/* One try: for the progress thread, which holds the MPI lock that the
 * deque lock's holder (the owner, popping) needs to let go. */
static int try_lock_deque(int rank) {
  uint64_t old;
  swarm_dist_faa(rank, META_OFF(lock), 1, &old);
  if (old == 0)
    return 1;
  swarm_dist_faa(rank, META_OFF(lock), -1, NULL);
  return 0;
}

static void unlock_deque(int rank) {
  swarm_dist_faa(rank, META_OFF(lock), -1, NULL);
}

/* Pushes the running thread's continuation; its sp is not known yet: the
 * entry is published with sp = 0 and swarm_arch_spawn stores the saved
 * stack pointer into the returned slot as its last write to the parent's
 * stack (context.h, PUBLISH_LAST). Whoever takes the entry waits for a
 * nonzero sp (entry_wait_sp, steal_rma). */
static inline uint64_t *deq_push(uint64_t base, uint64_t thread) {
  dist_meta_t *meta = dist->meta;
  uint64_t t = meta->bottom;
  /* Signed: top may exceed bottom by one for a moment (a thief's tentative
   * increment racing our pop, rolled back by the thief). */
  if (__builtin_expect((int64_t)(t - vload(&meta->top)) >= DIST_DEQ_CAP, 0))
    swarm_dist_fatal("rank %d: spawn chain deeper than %d (bottom %llu, "
                     "top %llu)",
                     dist->rank, DIST_DEQ_CAP, (unsigned long long)t,
                     (unsigned long long)vload(&meta->top));
  dist_entry_t *e = &meta->deq[t % DIST_DEQ_CAP];
  vstore(&e->sp, 0);
  e->base = base;
  e->thread = thread;
  compiler_barrier(); /* x86-64 (TSO): the entry is visible before bottom */
  vstore(&meta->bottom, t + 1);
  return &e->sp;
}

/* The owner's side of a taken entry whose parent may still be between
 * deq_push and the end of its switch (only the progress thread can see
 * that: the main thread is then running the spawn itself). */
static void entry_wait_sp(dist_entry_t *e) {
  while (vload(&e->sp) == 0)
    sched_yield();
  compiler_barrier();
}

/* deq_pop's conflict with a thief over the last entry (t): settle it
 * under the lock. Returns whether the entry is still ours. */
__attribute__((noinline)) static int deq_pop_conflict(uint64_t t) {
  dist_meta_t *meta = dist->meta;
  vstore(&meta->bottom, t + 1);
  lock_deque(dist->rank);
  vstore(&meta->bottom, t);
  if ((int64_t)vload(&meta->top) > (int64_t)t) {
    vstore(&meta->bottom, t + 1);
    unlock_deque(dist->rank);
    return 0;
  }
  unlock_deque(dist->rank);
  return 1;
}

/* THE protocol: the owner takes the youngest entry. */
__attribute__((always_inline)) static inline int deq_pop(dist_entry_t *out) {
  dist_meta_t *meta = dist->meta;
  /* No "top >= bottom: empty" shortcut: a thief's tentative top + 1 may
   * be rolled back, and the entry would then be left behind. */
  uint64_t t = meta->bottom - 1;
  vstore(&meta->bottom, t);
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
  if (__builtin_expect((int64_t)vload(&meta->top) > (int64_t)t, 0) &&
      !deq_pop_conflict(t))
    return 0;
  *out = meta->deq[t % DIST_DEQ_CAP];
  return 1;
}

/* The oldest entry for a message thief: taken by the owner (scheduler,
 * safe points) or, on the created window, by its progress thread. */
static int deq_take_oldest(dist_entry_t *out, int may_wait) {
  dist_meta_t *meta = dist->meta;
  int ok = 0;
  if (may_wait)
    lock_deque(dist->rank);
  else if (!try_lock_deque(dist->rank))
    return 0;
  /* As a thief (THE): claim top, then check that the owner's pop did not
   * take the same entry meanwhile (the progress thread runs this while the
   * owner may be popping; the owner's own calls never race). */
  uint64_t h = vload(&meta->top);
  if ((int64_t)h < (int64_t)vload(&meta->bottom)) {
    vstore(&meta->top, h + 1);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    if ((int64_t)(h + 1) > (int64_t)vload(&meta->bottom)) {
      vstore(&meta->top, h);
    } else {
      entry_wait_sp(&meta->deq[h % DIST_DEQ_CAP]);
      *out = meta->deq[h % DIST_DEQ_CAP];
      ok = 1;
    }
  }
  unlock_deque(dist->rank);
  return ok;
}

/* ---- threads ----------------------------------------------------------- */

static _Noreturn void thread_exit(void *result);
static _Noreturn void thread_exit_traced(void *result);

/* SWARM_TRACE: the spawn's switch with the spawn recorded first (the
 * parent is the thread of the entry just pushed, save = &entry.sp; the
 * child is already dist->cur_thread). It runs on the parent's stack in
 * the 256 bytes swarm_spawn leaves above the child's top: its frame and
 * swarm_arch_spawn's 64 bytes fit, and what the trace call uses below
 * them is free (the child has not started). */
static void *spawn_traced(void **save, void *top, void *(*fn)(void *),
                          void *arg, void (*finish)(void *)) {
  dist_entry_t *e = (dist_entry_t *)(void *)save;
  (void)finish; /* thread_exit: the child ends through the traced twin */
  swarm_dist_trace_spawn(e->thread, dist->cur_thread);
  return swarm_arch_spawn(save, top, fn, arg, thread_exit_traced);
}

/* The spawn's switch, chosen once (swarm_dist_init): calling through a
 * pointer loaded from dist is one instruction, as the direct call was, and
 * the exit is thread_exit's own code, so tracing costs nothing there when
 * off. */
void swarm_dist_sched_steps(void) {
  dist->arch_spawn = dist->trace_on ? spawn_traced : swarm_arch_spawn;
}

/* A descendant, given the exiting thread's handle, waits to join it (it
 * suspended, and the thread's frames went on): the parent just popped goes
 * back on the deque, and the exit's slow path completes the record and
 * resumes that joiner, whose own exit then pops the parent. */
__attribute__((noinline, cold)) static void
exit_unpop(uint64_t sp, uint64_t base, uint64_t thread) {
  vstore(deq_push(base, thread), sp);
}

/* A thread's end; `traced` is a constant (thread_exit, thread_exit_traced):
 * untraced, the code is the plain exit's. */
__attribute__((always_inline)) static inline _Noreturn void
exit_common(void *result, int traced) {
  uint64_t self = dist->cur_thread;
  dist_entry_t e;
  if (deq_pop(&e)) {
    /* Fast path: the parent is right above us and was never stolen. */
    dist_rec_t *r = &dist->records[dist_handle_idx(self)];
    if (__builtin_expect(vload(&r->state) == 0, 1)) {
      r->result = (uint64_t)(uintptr_t)result;
      compiler_barrier();
      vstore(&r->state, REC_DONE);
      dist->cur_stack_top = e.base;
      dist->cur_thread = e.thread;
      if (traced)
        swarm_dist_trace_switch(e.thread); /* the parent continues */
      swarm_arch_resume_plain((void *)(uintptr_t)e.sp, NULL);
    }
    exit_unpop(e.sp, e.base, e.thread);
  }
  dist->handoff.kind = DIST_REQ_EXIT;
  dist->handoff.thread = self;
  dist->handoff.result = (uint64_t)(uintptr_t)result;
  swarm_arch_resume(dist->sched_sp, NULL, &dist->handoff);
}

static _Noreturn void thread_exit(void *result) {
  exit_common(result, 0);
}

/* SWARM_TRACE: the exit of threads started by a traced spawn. */
static _Noreturn void thread_exit_traced(void *result) {
  exit_common(result, 1);
}

/* Every so many spawns (dist->spawn_poll_mask + 1), when a thief needs
 * this rank in MPI:
 * answer message steals, or (created window) let MPI apply RMA. */
static void spawn_safe_point(void) {
  int took = dist_mpi_enter();
  if (dist->serve_msg)
    swarm_dist_serve_requests();
  else
    swarm_dist_progress_poll();
  /* A thief holds our deque lock (maybe got it at this very poll): each of
   * its next accesses needs our MPI to progress; serve them now rather than
   * leave them to the progress thread's next turn (up to 0.8 ms away when
   * it has backed off). O(steals), bounded at 2 ms. */
  if (dist->progress_on && vload(&dist->meta->lock) != 0) {
    uint64_t until = dist_now_ns() + 2000000;
    while (vload(&dist->meta->lock) != 0 && dist_now_ns() < until)
      swarm_dist_progress_poll();
  }
  dist_mpi_exit(took);
}

/* The spawn's fast path: a record from the free list, the parent pushed
 * (its sp filled in by the switch itself), the child started on the same
 * stack with swarm_arch_spawn, which runs thread_exit(fn(arg)): no entry
 * function, no after step. */
int swarm_spawn(swarm_thread_t *thread, const swarm_attr_t *attr,
                void *(*fn)(void *), void *arg) {
  if (__builtin_expect(!thread || !fn || attr || !dist->cur_thread, 0))
    return !thread || !fn ? EINVAL : !dist->cur_thread ? EPERM : ENOTSUP;
  /* cur_thread != 0 implies in_run: it is set only by the scheduler of a
   * run and cleared before the run ends. */
  uint64_t h = rec_alloc();
  *thread = h;
  uintptr_t sp;
  __asm__ volatile("movq %%rsp, %0" : "=r"(sp));
  /* Below what swarm_arch_spawn pushes (return address + 56 bytes). */
  uintptr_t top = (sp - 256) & ~(uintptr_t)15;
  if (__builtin_expect(top < DIST_UNI_BASE + 64 * 1024, 0))
    swarm_dist_fatal("rank %d: uni-address region (SWARM_DIST_STACK=%zu) "
                     "overflows",
                     dist->rank, dist->region_size);
  dist->stats.spawns++;
  uint64_t *save = deq_push(dist->cur_stack_top, dist->cur_thread);
  dist->cur_stack_top = top;
  dist->cur_thread = h;
  dist->arch_spawn((void **)save, (void *)top, fn, arg, thread_exit);
  /* Here again: the child finished (or the parent was stolen and resumed
   * on another rank, maybe with the child still running). */
  if (dist->spawn_poll &&
      (++dist->spawns_since_poll & dist->spawn_poll_mask) == 0)
    spawn_safe_point();
  return 0;
}

/* The record of h, wherever it is: its handle word, state and result in
 * one read (one MPI_Get for a remote record), so that state and result
 * are those of the use of the record that the handle word names. */
static void rec_read(uint64_t h, uint64_t v[3]) {
  int r = dist_handle_rank(h);
  uint64_t i = dist_handle_idx(h);
  if (r == dist->rank) {
    v[0] = vload(&dist->records[i].handle);
    v[1] = vload(&dist->records[i].state);
    compiler_barrier();
    v[2] = vload(&dist->records[i].result);
  } else {
    swarm_dist_get(v, r, REC_OFF(i, handle), 3 * sizeof v[0]);
  }
}

__attribute__((noinline)) static int join_slow(swarm_thread_t h,
                                               void **result) {
  if (!(h & DIST_H_FLAG) || dist_handle_rank(h) >= dist->nranks)
    return ESRCH;
  if (!dist->in_run || !dist->cur_thread)
    return EPERM;
  if (h == dist->cur_thread)
    return EDEADLK;
  int local = dist_handle_rank(h) == dist->rank;
  if (local &&
      (dist_handle_idx(h) == 0 || dist_handle_idx(h) >= dist->records_bump))
    return ESRCH;
  uint64_t v[3]; /* handle, state, result */
  rec_read(h, v);
  if (v[0] != h) /* joined already, or its record reused since */
    return ESRCH;
  if (v[1] >= REC_CLAIM) /* another joiner waits on it (handle_suspend) */
    return EINVAL;
  if (v[1] == 0) {
    dist->handoff.kind = DIST_REQ_SUSPEND;
    dist->handoff.thread = h;
    if (swarm_arch_switch(&dist->spawn_sp, dist->sched_sp, NULL,
                          &dist->handoff))
      return EINVAL; /* another joiner claimed it first */
    /* Resumed, here or elsewhere: h has finished. */
    local = dist_handle_rank(h) == dist->rank;
    rec_read(h, v);
  }
  if (local) {
    if (v[0] != h)
      return ESRCH;
    rec_free_local(&dist->records[dist_handle_idx(h)], h);
  } else {
    /* A record on another rank stays allocated until the run ends (remote
     * joins are O(steals)); its generation moves on, atomically, so that
     * no other join of h succeeds. */
    uint64_t old;
    swarm_dist_cas(dist_handle_rank(h), REC_OFF(dist_handle_idx(h), handle), h,
                   dist_handle_next(h), &old);
    if (old != h)
      return ESRCH;
  }
  if (result)
    *result = (void *)(uintptr_t)v[2];
  return 0;
}

/* The join's fast path: a child created here that has finished (the usual
 * case: it ran to its end before its parent went on). The record's handle
 * word equal to h says at once that h is this rank's, its index handed
 * out and its generation current (never-used records hold 0, free ones
 * their next handle); state REC_DONE alone: finished, no joiner ever
 * waited (the running thread's own record has state 0). cur_thread is
 * tested first: outside a run (before init, after finalize) the records
 * may not be mapped. The rest, errors included, goes through join_slow. */
int swarm_join(swarm_thread_t h, void **result) {
  dist_rec_t *r = &dist->records[dist_handle_idx(h)];
  if (__builtin_expect(dist->cur_thread && vload(&r->handle) == h &&
                           vload(&r->state) == REC_DONE,
                       1)) {
    compiler_barrier();
    if (result)
      *result = (void *)(uintptr_t)vload(&r->result);
    rec_free_local(r, h);
    return 0;
  }
  return join_slow(h, result);
}

swarm_thread_t swarm_self(void) {
  return dist->in_run ? dist->cur_thread : 0;
}
int swarm_worker_id(void) {
  return dist->initialized ? dist->rank : -1;
}
int swarm_num_workers(void) {
  return dist->initialized ? dist->nranks : 0;
}
int swarm_dist_creator(swarm_thread_t t) {
  return (t & DIST_H_FLAG) ? dist_handle_rank(t) : -1;
}

void swarm_dist_poll(void) {
  if (dist->in_run && dist->spawn_poll)
    spawn_safe_point();
}

/* ---- HIVE: remote creation --------------------------------------------- */

int swarm_spawn_on(int rank, swarm_thread_t *thread, void *(*fn)(void *),
                   void *arg) {
  if (!thread || !fn || rank < 0 || rank >= dist->nranks)
    return EINVAL;
  if (!dist->in_run)
    return EPERM;
  uint64_t h = rec_alloc();
  *thread = h;
  uint64_t slot;
  swarm_dist_faa(rank, META_OFF(inbox_tail), 1, &slot);
  for (;;) { /* wait for room in the ring */
    uint64_t head;
    swarm_dist_get(&head, rank, META_OFF(inbox_head), sizeof head);
    if (slot - head < DIST_INBOX_CAP)
      break;
    swarm_dist_poll();
    sched_yield();
  }
  uint64_t off =
      META_OFF(inbox) + (slot % DIST_INBOX_CAP) * sizeof(dist_inbox_slot_t);
  uint64_t body[3] = {(uint64_t)(uintptr_t)fn, (uint64_t)(uintptr_t)arg, h};
  swarm_dist_put(rank, off + offsetof(dist_inbox_slot_t, fn), body,
                 sizeof body);
  uint64_t seq = slot + 1;
  swarm_dist_put(rank, off, &seq, sizeof seq);
  dist->stats.remote_spawns++;
  DIST_TRACE(swarm_dist_trace_spawn_on(h, rank));
  return 0;
}

/* ---- stealing ---------------------------------------------------------- */

/* One-sided steal, five round trips and a sixth access not waited for:
 * lock (fetch-and-add), claim top (fetch-and-add +1: THE's thief side, its
 * old value is the entry taken; under the lock only the holder changes
 * top), read bottom (roll the claim back if the owner's pop took the
 * entry meanwhile, or the deque was empty), read the entry, read the
 * frames, unlock (an accumulate completed locally only: the victim applies
 * it at its next progress, and the thief goes on at once). The entry
 * cannot be read with bottom: were the owner pushing that slot, the two
 * reads could see its old entry and its new bottom. */
static int steal_rma(int v, dist_entry_t *e) {
  uint64_t t0 = dist_now_ns(), old;
  swarm_dist_faa(v, META_OFF(lock), 1, &old);
  if (old != 0) {
    swarm_dist_faa(v, META_OFF(lock), -1, NULL);
    return 0;
  }
  uint64_t t1 = dist_now_ns(), h, t;
  swarm_dist_faa(v, META_OFF(top), 1, &h);
  swarm_dist_get(&t, v, META_OFF(bottom), sizeof t);
  /* Indices compare signed: bottom is -1 for a moment when the owner pops
   * an empty deque. */
  if ((int64_t)(h + 1) > (int64_t)t) { /* empty, or the owner popped it */
    swarm_dist_faa(v, META_OFF(top), -1, NULL);
    unlock_deque(v);
    return 0;
  }
  uint64_t t2 = dist_now_ns();
  uint64_t eoff = META_OFF(deq) + (h % DIST_DEQ_CAP) * sizeof *e;
  swarm_dist_get(e, v, eoff, sizeof *e);
  while (e->sp == 0) /* pushed, its switch not yet done (deq_push) */
    swarm_dist_get(&e->sp, v, eoff, sizeof e->sp);
  uint64_t t3 = dist_now_ns();
  size_t n = e->base - e->sp;
  swarm_dist_get((void *)(uintptr_t)e->sp, v,
                 dist->off_region + (e->sp - DIST_UNI_BASE), n);
  uint64_t t4 = dist_now_ns();
  swarm_dist_add_nowait(v, META_OFF(lock), -1);
  uint64_t t5 = dist_now_ns();
  dist->stats.steals++;
  dist->stats.steal_bytes += n;
  dist->stats.ns_steal_lock += t1 - t0;
  dist->stats.ns_steal_index += t2 - t1;
  dist->stats.ns_steal_entry += t3 - t2;
  dist->stats.ns_steal_frames += t4 - t3;
  dist->stats.ns_steal_unlock += t5 - t4;
  dist->stats.ns_steal_total += t5 - t0;
  swarm_dist_record_steal(t5 - t0, t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4,
                          n);
  return 1;
}

/* Message steal: ask v, answer others' requests (with "none": we are idle)
 * while waiting, then receive the frames into place. */
static int steal_msg(int v, dist_entry_t *e) {
  uint64_t t0 = dist_now_ns();
  int dummy = 0, done = 0;
  MPI_Request rq;
  MPI_Irecv(e, (int)sizeof *e, MPI_BYTE, v, TAG_REP, dist->comm, &rq);
  MPI_Send(&dummy, 1, MPI_INT, v, TAG_REQ, dist->comm);
  while (!done) {
    MPI_Test(&rq, &done, MPI_STATUS_IGNORE);
    if (!done) {
      swarm_dist_serve_requests();
      sched_yield(); /* the victim may share our core */
    }
  }
  if (e->sp == 0)
    return 0;
  size_t n = e->base - e->sp;
  MPI_Recv((void *)(uintptr_t)e->sp, (int)n, MPI_BYTE, v, TAG_FRAMES,
           dist->comm, MPI_STATUS_IGNORE);
  dist->stats.steals++;
  dist->stats.steal_bytes += n;
  uint64_t t = dist_now_ns() - t0;
  dist->stats.ns_steal_total += t;
  swarm_dist_record_steal(t, 0, 0, 0, 0, 0, n);
  return 1;
}

/* Answers pending message steals; may_wait 0 (the progress thread):
 * answers "none" rather than wait for the deque lock. */
static int serve_requests(int may_wait) {
  for (int n = 0;; n++) {
    int flag;
    MPI_Status st;
    MPI_Iprobe(MPI_ANY_SOURCE, TAG_REQ, dist->comm, &flag, &st);
    if (!flag)
      return n;
    int dummy;
    MPI_Recv(&dummy, 1, MPI_INT, st.MPI_SOURCE, TAG_REQ, dist->comm,
             MPI_STATUS_IGNORE);
    dist_entry_t e;
    memset(&e, 0, sizeof e);
    int ok = deq_take_oldest(&e, may_wait);
    MPI_Send(&e, (int)sizeof e, MPI_BYTE, st.MPI_SOURCE, TAG_REP, dist->comm);
    if (ok) {
      MPI_Send((void *)(uintptr_t)e.sp, (int)(e.base - e.sp), MPI_BYTE,
               st.MPI_SOURCE, TAG_FRAMES, dist->comm);
      dist->stats.requests_served++;
    }
  }
}

void swarm_dist_serve_requests(void) {
  (void)serve_requests(1);
}

int swarm_dist_serve_requests_nowait(void) {
  return serve_requests(0);
}

/* ---- the scheduler ----------------------------------------------------- */

/* An idle rank probes the others' headers; probing the cache line a busy
 * owner writes at every push and pop slows that owner down, so idle ranks
 * back off exponentially (1 us .. 128 us) between fruitless rounds,
 * spinning for short waits and sleeping for long ones, so that an idle rank
 * leaves its core to busy ones when ranks outnumber cores. */
#define DIST_BACKOFF_MIN_NS 1000
#define DIST_BACKOFF_MAX_NS 128000

static void idle_backoff(uint64_t *ns) {
  if (*ns <= 8000) { /* short: spin, yielding once (shared cores) */
    uint64_t until = dist_now_ns() + *ns;
    sched_yield();
    while (dist_now_ns() < until)
      __builtin_ia32_pause();
  } else { /* long: give the CPU away */
    struct timespec ts = {0, (long)*ns};
    nanosleep(&ts, NULL);
  }
  if (*ns < DIST_BACKOFF_MAX_NS)
    *ns *= 2;
}

/* Around every switch from the scheduler into thread code: the MPI lock
 * is the progress thread's while threads run (window.c); the time spent
 * in thread code is counted (stats.ns_busy: once per switch, O(steals)). */
static inline void leave_scheduler(void) {
  if (dist->progress_on)
    swarm_dist_mpi_unlock();
  dist->busy_since = dist_now_ns();
}
static inline void *back_in_scheduler(void *transfer) {
  DIST_TRACE(swarm_dist_trace_switch(0));
  dist->stats.ns_busy += dist_now_ns() - dist->busy_since;
  if (dist->progress_on)
    swarm_dist_mpi_lock();
  return transfer;
}

/* Switches to a thread whose frames are in place at e->sp; returns what
 * the next thread to come back to the scheduler hands it. */
static void *run_entry(const dist_entry_t *e, void *transfer) {
  dist->cur_stack_top = e->base;
  dist->cur_thread = e->thread;
  DIST_TRACE(swarm_dist_trace_switch(e->thread));
  leave_scheduler();
  return back_in_scheduler(swarm_arch_switch(
      &dist->sched_sp, (void *)(uintptr_t)e->sp, NULL, transfer));
}

static void *start_thread(void *(*fn)(void *), void *arg, uint64_t h) {
  uint64_t base = region_top();
  dist->cur_stack_top = base;
  dist->cur_thread = h;
  DIST_TRACE(swarm_dist_trace_start(h));
  leave_scheduler();
  return back_in_scheduler(
      swarm_arch_spawn(&dist->sched_sp, (void *)(uintptr_t)base, fn, arg,
                       dist->trace_on ? thread_exit_traced : thread_exit));
}

/* Copies an evacuated thread back into the region (same addresses). */
static void resume_evacuated(uint64_t w, dist_entry_t *e) {
  int er = dist_gref_rank(w);
  uint64_t off = dist_gref_off(w);
  dist_evac_t ev;
  if (er == dist->rank) {
    ev = swarm_dist_evac_at(off)->h;
    memcpy((void *)(uintptr_t)ev.sp,
           dist->win_base + off + sizeof(dist_evac_slot_t), ev.base - ev.sp);
    swarm_dist_evac_free_local(off);
  } else {
    swarm_dist_get(&ev, er, off, sizeof ev);
    swarm_dist_get((void *)(uintptr_t)ev.sp, er, off + sizeof(dist_evac_slot_t),
                   ev.base - ev.sp);
    uint64_t one = 1;
    swarm_dist_put(er, off + offsetof(dist_evac_t, freed), &one, sizeof one);
  }
  dist->stats.resumes++;
  dist->stats.resume_bytes += ev.base - ev.sp;
  DIST_TRACE(swarm_dist_trace_ready(ev.thread));
  if (dist_handle_rank(ev.thread) != dist->rank) {
    dist->stats.migrations++;
    DIST_TRACE(swarm_dist_trace_migrate(ev.thread));
  }
  e->sp = ev.sp;
  e->base = ev.base;
  e->thread = ev.thread;
}

/* A thread finished with no parent below it: complete its record; returns
 * 1 with *e set when a joiner was waiting and is now in place to run. */
static int handle_exit(dist_entry_t *e) {
  uint64_t h = dist->handoff.thread, old;
  int r = dist_handle_rank(h);
  uint64_t i = dist_handle_idx(h);
  swarm_dist_put(r, REC_OFF(i, result), &dist->handoff.result,
                 sizeof dist->handoff.result);
  swarm_dist_faa(r, REC_OFF(i, state), REC_DONE, &old);
  if (!(old & REC_WAIT))
    return 0;
  uint64_t w;
  swarm_dist_get(&w, r, REC_OFF(i, link), sizeof w);
  resume_evacuated(w, e);
  return 1;
}

/* The running thread (saved at dist->spawn_sp) waits for dist->handoff.thread:
 * evacuate it, then arrive on the record. Returns 1 when the child had
 * already finished (the thread may go on: its frames are still in place),
 * 2 when another thread is already joining it (go on, with EINVAL). */
static int handle_suspend(void) {
  uint64_t sp = (uint64_t)(uintptr_t)dist->spawn_sp, base = dist->cur_stack_top;
  size_t n = base - sp;
  uint64_t off = swarm_dist_evac_alloc(n);
  dist_evac_slot_t *s = swarm_dist_evac_at(off);
  s->h.sp = sp;
  s->h.base = base;
  s->h.thread = dist->cur_thread;
  memcpy(dist->win_base + off + sizeof(dist_evac_slot_t), (void *)(uintptr_t)sp,
         n);
  uint64_t child = dist->handoff.thread, w = dist_gref(dist->rank, off), old;
  int r = dist_handle_rank(child);
  uint64_t i = dist_handle_idx(child);
  /* One joiner per thread: it claims the record first (state +
   * REC_CLAIM; a later claimer undoes its own and gets EINVAL, as in
   * libswarm), then puts its link and arrives (+REC_WAIT, so that state
   * tells a waiting joiner from a finished thread). Fetch-and-add, not
   * compare-and-swap: Open MPI's osc rdma crashes on a compare-and-swap
   * aimed at the caller's own rank. */
  swarm_dist_faa(r, REC_OFF(i, state), REC_CLAIM, &old);
  if (old >= REC_CLAIM) {
    swarm_dist_faa(r, REC_OFF(i, state), -(int64_t)REC_CLAIM, NULL);
    swarm_dist_evac_free_local(off);
    return 2;
  }
  swarm_dist_put(r, REC_OFF(i, link), &w, sizeof w);
  swarm_dist_faa(r, REC_OFF(i, state), REC_WAIT, &old);
  if (old & REC_DONE) {
    swarm_dist_evac_free_local(off);
    return 1;
  }
  dist->stats.suspensions++;
  DIST_TRACE(swarm_dist_trace_park(dist->cur_thread));
  return 0;
}

void swarm_dist_sched_reset(void) {
  dist_meta_t *meta = dist->meta;
  meta->lock = 0;
  meta->top = meta->bottom = 0;
  meta->inbox_tail = meta->inbox_head = 0;
  memset(meta->inbox, 0, sizeof meta->inbox);
  /* Every record of the last run is free again: its generation moves on
   * so that no handle of that run names a thread of this one. */
  for (uint64_t i = 1; i < dist->records_bump; i++)
    dist->records[i].handle = dist_handle_next(dist->records[i].handle);
  dist->records_free = 0;
  dist->records_bump = 1; /* 0 means "none" in the free list */
  swarm_dist_evac_reset();
  dist->cur_stack_top = dist->cur_thread = 0;
}

void swarm_dist_sched_loop(void *(*root_fn)(void *), void *root_arg,
                           uint64_t *root_result) {
  dist_meta_t *meta = dist->meta;
  void *xfer = NULL;
  uint64_t root = 0, backoff = DIST_BACKOFF_MIN_NS;
  dist_entry_t e;
  if (dist->rank == 0) {
    uint64_t h = rec_alloc();
    root = dist_handle_idx(h);
    xfer = start_thread(root_fn, root_arg, h);
  }
  for (;;) {
    if (xfer) { /* a thread came back to the scheduler */
      backoff = DIST_BACKOFF_MIN_NS;
      dist_req_t *q = xfer;
      xfer = NULL;
      if (q->kind == DIST_REQ_SUSPEND) {
        int go_on = handle_suspend();
        if (go_on) { /* join_slow gets EINVAL as the transfer, or NULL */
          DIST_TRACE(swarm_dist_trace_switch(dist->cur_thread));
          leave_scheduler();
          void *x = go_on == 2 ? (void *)(uintptr_t)EINVAL : NULL;
          xfer = back_in_scheduler(
              swarm_arch_switch(&dist->sched_sp, dist->spawn_sp, NULL, x));
          continue;
        }
        if (deq_pop(&e)) { /* its parent continues, as if it had returned */
          xfer = run_entry(&e, NULL);
          continue;
        }
      } else if (handle_exit(&e)) {
        xfer = run_entry(&e, NULL);
        continue;
      }
      dist->cur_stack_top = dist->cur_thread = 0;
    }
    if (dist->rank == 0 && (vload(&dist->records[root].state) & REC_DONE)) {
      *root_result = vload(&dist->records[root].result);
      for (int r = 0; r < dist->nranks; r++)
        swarm_dist_put(r, META_OFF(done), &dist->run, sizeof dist->run);
    }
    if (vload(&meta->done) == dist->run)
      break;
    if (dist->serve_msg)
      swarm_dist_serve_requests();
    uint64_t hd = meta->inbox_head;
    dist_inbox_slot_t *s = &meta->inbox[hd % DIST_INBOX_CAP];
    if (vload(&s->seq) == hd + 1) {
      compiler_barrier();
      void *(*fn)(void *) = (void *(*)(void *))(uintptr_t)vload(&s->fn);
      void *arg = (void *)(uintptr_t)vload(&s->arg);
      uint64_t h = vload(&s->thread);
      vstore(&meta->inbox_head, hd + 1);
      xfer = start_thread(fn, arg, h);
      continue;
    }
    int v = swarm_dist_choose_victim();
    if (v >= 0) {
      dist->stats.steal_attempts++;
      int by_msg = dist->steal_mode == SWARM_DIST_STEAL_MSG ||
                   (dist->remote_msg && !dist->on_node[v]);
      int ok = by_msg ? steal_msg(v, &e) : steal_rma(v, &e);
      if (ok) {
        DIST_TRACE(swarm_dist_trace_steal(e.thread, v, by_msg));
        if (dist_handle_rank(e.thread) != dist->rank) {
          dist->stats.migrations++;
          DIST_TRACE(swarm_dist_trace_migrate(e.thread));
        }
        dist->stats.node_steals += dist->on_node[v];
        xfer = run_entry(&e, (void *)1);
        continue;
      }
    }
    idle_backoff(&backoff);
  }
  /* Every rank leaves only once no steal request can still be waiting for
   * an answer: a thief enters the barrier after its reply came. And every
   * access it made is complete at its target first: an unlock completed
   * only locally (steal_rma) must not reach a victim after that victim
   * has reset its deque for the next run. */
  MPI_Win_flush_all(dist->win);
  MPI_Request br;
  int done = 0;
  MPI_Ibarrier(dist->comm, &br);
  while (!done) {
    MPI_Test(&br, &done, MPI_STATUS_IGNORE);
    if (!done) {
      swarm_dist_serve_requests();
      sched_yield();
    }
  }
}
