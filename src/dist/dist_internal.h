/*
 * dist/dist_internal.h — what the files of libswarm-dist share: the layout
 * of each rank's MPI window, the per-rank runtime state, and the handle
 * encodings. One rank = one worker = this process's main kernel thread, so
 * the state is a plain static struct (same address on every rank, different
 * contents), which every file reaches through the pointer `dist`.
 *
 * Window of every rank (displacement unit 1; window.c says how it is made,
 * shared or created), at offsets the same on all ranks:
 *
 *   0          dist_meta: deque lock/top/bottom, termination flag, inbox
 *              indices, then the deque entries and the inbox slots
 *   off_records join records (dist_rec), one per live thread created here
 *   off_evac   evacuated stacks of suspended threads (dist_evac + frames)
 *   off_global swarm_global_alloc's heap
 *   off_region the uni-address region, page aligned: the same pages are
 *              those at DIST_UNI_BASE, where threads run (an alias of the
 *              shared window memory, or the window itself when created).
 *              Thieves read a victim's frames through the window.
 *
 * Words written by one side and read by the other with plain loads/stores
 * rely on MPI_WIN_UNIFIED (checked at init) and aligned 8-byte accesses
 * being single-copy atomic; every word that two sides modify (the deque
 * lock, a record's state, inbox_tail) is only ever changed with
 * MPI_Fetch_and_op, the owner included.
 */
#ifndef SWARM_DIST_INTERNAL_H
#define SWARM_DIST_INTERNAL_H

#include <mpi.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <swarm/dist.h>
#include <time.h>

/* Where the uni-address region sits on every rank: well inside user space
 * and away from ASan's shadow (which ends at 0x10007fff8000). */
#define DIST_UNI_BASE ((uintptr_t)0x300000000000ull)

#define DIST_DEQ_CAP 8192  /* entries: the depth of the spawn chain */
#define DIST_INBOX_CAP 256 /* pending swarm_spawn_on requests per rank */

/* A continuation: frames [sp, base) of the region, registers saved at sp by
 * swarm_arch_start/switch, and the thread it belongs to. */
typedef struct dist_entry {
  uint64_t sp, base, thread, pad;
} dist_entry_t;

typedef struct dist_inbox_slot {
  uint64_t seq; /* index + 1 once fn/arg/thread are in place */
  uint64_t fn, arg, thread;
} dist_inbox_slot_t;

typedef struct dist_meta {
  uint64_t lock;       /* deque lock: 0 free; FAA +1 to try, -1 to undo */
  uint64_t top;        /* next entry a thief takes (written under lock) */
  uint64_t bottom;     /* next free entry (owner only) */
  uint64_t inbox_tail; /* swarm_spawn_on: FAA by the senders */
  uint64_t inbox_head; /* owner only */
  uint64_t done;       /* run number once rank 0 saw the root finish */
  uint64_t pad[2];
  dist_entry_t deq[DIST_DEQ_CAP];
  dist_inbox_slot_t inbox[DIST_INBOX_CAP];
} dist_meta_t;

/* Join record of one thread, in its creator's window. `handle` is the
 * handle the record's current (or, while free, next) thread has, so its
 * generation bits say which use of the record a handle names; it is
 * first, next to state and result, so that one read gets all three.
 * state counts arrivals: the thread's finish (+1) and a joiner that
 * suspended (+2, after a claim of +4: one joiner per thread; sched.c,
 * REC_*); the second to arrive resumes the joiner. A child that finishes
 * with its parent still below it on the same stack stores state = 1
 * directly: no one else can hold its handle yet (see sched.c). `link` is
 * the waiting joiner's evacuated stack (a global ref) while the record
 * is in use and the free list's next index while it is free. */
typedef struct dist_rec {
  uint64_t handle;
  uint64_t state;
  uint64_t result;
  uint64_t link;
} dist_rec_t;

/* Header of an evacuated thread in the window of the rank it suspended
 * on, followed by the frames [sp, base). */
typedef struct dist_evac {
  uint64_t sp, base, thread;
  uint64_t freed; /* set by a remote resumer; reclaimed by the owner */
} dist_evac_t;

/* Words that other ranks' RMA (or this rank's progress thread) write
 * behind the compiler's back: read and written exactly once, where the
 * code says, and ordered against each other by compiler_barrier. */
static inline void compiler_barrier(void) {
  __asm__ volatile("" ::: "memory");
}
static inline uint64_t vload(const uint64_t *p) {
  return *(const volatile uint64_t *)p;
}
static inline void vstore(uint64_t *p, uint64_t v) {
  *(volatile uint64_t *)p = v;
}

/* Thread handles: bit 63 set, then the record's generation (29 bits,
 * 34..62), the creator rank (16 bits, 18..33) and the record index (the
 * DIST_REC_BITS low bits; window.c sizes the records by them). The
 * generation gets every bit the index and rank leave, so a stale handle
 * could name a thread again only after exactly a multiple of 2^29 reuses
 * of its record (docs/dist.md, "Thread handles"). It sits on top so that
 * the next use's handle is one add: its carry out of bit 62 clears the
 * flag, which the | puts back (the generation wraps to 0). */
#define DIST_H_FLAG (1ull << 63)
#define DIST_REC_BITS 18 /* 2^18 join records per rank */
#define DIST_H_RANK_SHIFT DIST_REC_BITS
#define DIST_H_GEN_SHIFT (DIST_H_RANK_SHIFT + 16)
#define DIST_H_IDX_MASK ((1ull << DIST_REC_BITS) - 1)
static inline uint64_t dist_handle(int rank, uint64_t idx) {
  return DIST_H_FLAG | ((uint64_t)rank << DIST_H_RANK_SHIFT) | idx;
}
static inline int dist_handle_rank(uint64_t h) {
  return (int)((h >> DIST_H_RANK_SHIFT) & 0xffff);
}
static inline uint64_t dist_handle_idx(uint64_t h) {
  return h & DIST_H_IDX_MASK;
}
/* The handle of the record's next use: generation + 1, wrapping. */
static inline uint64_t dist_handle_next(uint64_t h) {
  return (h + (1ull << DIST_H_GEN_SHIFT)) | DIST_H_FLAG;
}
/* Global refs (evac slots, swarm_gptr_t): rank + 1 in bits 48..63, window
 * offset below (so 0 is never a valid ref). */
static inline uint64_t dist_gref(int rank, uint64_t off) {
  return ((uint64_t)(rank + 1) << 48) | off;
}
static inline int dist_gref_rank(uint64_t g) {
  return (int)(g >> 48) - 1;
}
static inline uint64_t dist_gref_off(uint64_t g) {
  return g & ((1ull << 48) - 1);
}

enum dist_req_kind { DIST_REQ_EXIT = 1, DIST_REQ_SUSPEND = 2 };
/* What a thread hands the scheduler when it switches to it. */
typedef struct dist_req {
  int kind;
  uint64_t thread; /* EXIT: the finished thread; SUSPEND: the one waited on */
  uint64_t result; /* EXIT */
} dist_req_t;

#define DIST_EVAC_CLASSES 40
#define DIST_STEAL_SAMPLES 4096

typedef struct dist_state {
  int initialized, in_run;
  int rank, nranks;
  int n_nodes;     /* ranks that share memory count as one node */
  int *node_peers; /* the other ranks on this node (thieves try first) */
  int n_node_peers;
  unsigned char *on_node;   /* on_node[r]: rank r is on this node (not self) */
  int64_t *load_seen;       /* the deque size last read from each rank */
  int serve_msg;            /* this rank answers message steals */
  int remote_msg;           /* AUTO across nodes: other nodes by message */
  int window_path;          /* 0 shared (MPI_Win_allocate), 1 created */
  int thread_level;         /* what MPI_Init_thread provided */
  int spawn_poll;           /* a running thread polls MPI at spawns, */
  unsigned spawn_poll_mask; /* when (spawns & mask) == 0 */
  char node_name[MPI_MAX_PROCESSOR_NAME];
  /* progress thread of the created path (window.c), and the lock that
   * serialises its MPI calls with the main thread's */
  int progress_on, progress_stop;
  int mpi_lock; /* who holds it: swarm_dist_mpi_held, per thread */
  uint64_t progress_ns;
  MPI_Comm progress_comm;
  pthread_t progress_thread;
  swarm_dist_steal_t steal_mode;
  MPI_Win win;
  MPI_Comm comm;  /* message steals and termination */
  char *win_base; /* this rank's window memory */
  dist_meta_t *meta;
  dist_rec_t *records;
  size_t n_records;
  size_t off_records, off_evac, off_global, off_region;
  size_t evac_size, global_size, region_size;
  uint64_t run;
  /* join records: free list and bump index */
  uint64_t records_free, records_bump;
  /* evacuation heap: size classes, bump offset, remotely freed pending */
  uint64_t evac_free[DIST_EVAC_CLASSES];
  uint64_t evac_bump;
  uint64_t *evac_pending;
  size_t n_pending, cap_pending;
  uint64_t global_bump;
  /* the running thread: top of its stack and handle */
  uint64_t cur_stack_top, cur_thread;
  void *sched_sp;     /* the scheduler context (main thread's stack) */
  void *spawn_sp;     /* save slot of a joiner that suspends */
  void *scratch_sp;   /* save slot of contexts that never resume */
  dist_req_t handoff; /* what a thread hands the scheduler */
  /* SWARM_TRACE (trace.c): the spawn's switch, plain or traced (then its
   * children finish through the traced exit; swarm_dist_sched_steps), and
   * the flag that the colder trace points test */
  void *(*arch_spawn)(void **, void *, void *(*)(void *), void *,
                      void (*)(void *));

  int trace_on;
  unsigned spawns_since_poll;
  uint64_t busy_since; /* when the scheduler last switched to a thread */
  uint64_t rng_state;
  swarm_dist_stats_t stats;
  /* latest steals: total, lock, index, entry, frames, unlock (ns), bytes */
  uint32_t steal_samples[DIST_STEAL_SAMPLES][7];
  uint64_t n_steal_samples; /* ever recorded since the last reset */
} dist_state_t;

/* The one instance (init.c), reached in every file through `dist`. */
extern dist_state_t swarm_dist_state;
static dist_state_t *const dist = &swarm_dist_state;

/* sched.c */
void swarm_dist_sched_reset(void);
void swarm_dist_sched_loop(void *(*root_fn)(void *), void *root_arg,
                           uint64_t *root_result);
void swarm_dist_serve_requests(void);
int swarm_dist_serve_requests_nowait(void); /* requests answered */
void swarm_dist_record_steal(uint64_t total, uint64_t lock, uint64_t index,
                             uint64_t entry, uint64_t frames, uint64_t unlock,
                             uint64_t bytes);

void swarm_dist_sched_steps(void);

/* victim.c: a rank to try to steal from, -1 when none looks loaded. */
int swarm_dist_choose_victim(void);

/* trace.c: SWARM_TRACE, one Perfetto trace of the job (see there).
 * init and finish are collective (swarm_dist_init, _finalize); the rest
 * are trace points, called through DIST_TRACE or the switch steps. */
void swarm_dist_trace_init(void);
void swarm_dist_trace_finish(void);
void swarm_dist_trace_switch(uint64_t next);
void swarm_dist_trace_spawn(uint64_t parent, uint64_t child);
void swarm_dist_trace_start(uint64_t thread);
/* a join that suspends thread / a joiner made runnable again */
void swarm_dist_trace_park(uint64_t thread);
void swarm_dist_trace_ready(uint64_t thread);
/* thread, created on another rank, resumes here */
void swarm_dist_trace_migrate(uint64_t thread);
void swarm_dist_trace_spawn_on(uint64_t thread, int rank);
/* a steal from victim, by message (by_msg) or RMA */
void swarm_dist_trace_steal(uint64_t thread, int victim, int by_msg);
#define DIST_TRACE(call)                                                       \
  do {                                                                         \
    if (__builtin_expect(dist->trace_on, 0))                                   \
      call;                                                                    \
  } while (0)

/* window.c */
int swarm_dist_window_setup(void);
void swarm_dist_window_free(void);
void swarm_dist_progress_poll(void);
extern __thread int swarm_dist_mpi_held;
int swarm_dist_mpi_trylock(void);
void swarm_dist_mpi_lock(void);
void swarm_dist_mpi_unlock(void);

/* MPI_THREAD_SERIALIZED with the progress thread (created window only):
 * the main thread holds the MPI lock except while it runs thread code.
 * Thread code that calls MPI takes it around the calls (dist_mpi_enter
 * returns whether it took it, for dist_mpi_exit); the scheduler gives it
 * up around each switch into a thread. */
static inline int dist_mpi_enter(void) {
  if (__builtin_expect(!dist->progress_on || swarm_dist_mpi_held, 1))
    return 0;
  swarm_dist_mpi_lock();
  return 1;
}
static inline void dist_mpi_exit(int took) {
  if (took)
    swarm_dist_mpi_unlock();
}

/* global.c: window access helpers */
void swarm_dist_faa(int rank, uint64_t off, int64_t v, uint64_t *old);
void swarm_dist_add_nowait(int rank, uint64_t off, int64_t v);
void swarm_dist_cas(int rank, uint64_t off, uint64_t compare, uint64_t swap,
                    uint64_t *old);
void swarm_dist_get(void *dst, int rank, uint64_t off, size_t n);
void swarm_dist_put(int rank, uint64_t off, const void *src, size_t n);

/* The evacuation heap (evac.c). A slot's header in the window; the first
 * four words are dist_evac_t. */
typedef struct dist_evac_slot {
  dist_evac_t h;
  uint64_t next, cls, in_pending, pad;
} dist_evac_slot_t;
static inline dist_evac_slot_t *swarm_dist_evac_at(uint64_t off) {
  return (dist_evac_slot_t *)(dist->win_base + off);
}
uint64_t swarm_dist_evac_alloc(size_t n);
void swarm_dist_evac_free_local(uint64_t off);
void swarm_dist_evac_reset(void);

_Noreturn void swarm_dist_fatal(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));

static inline uint64_t dist_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#endif
