/*
 * swarm/dist.h — distributed swarm over MPI (libswarm-dist, issue 7).
 *
 * Model. The same program runs on every rank (`mpirun -n P prog`), one
 * worker per rank. swarm_dist_init() starts MPI and the runtime; then
 * swarm_dist_run(fn, arg, &result), called by every rank, runs fn(arg) as
 * the root thread on rank 0 while every rank steals work. Inside that
 * region the ordinary calls of swarm.h work across ranks:
 *
 *   swarm_spawn / swarm_join / swarm_self / swarm_worker_id /
 *   swarm_num_workers
 *
 * libswarm-dist defines them itself: a program links libswarm-dist *instead
 * of* libswarm (never both), and libswarm's shared-memory spawn path is not
 * touched. The rest of swarm.h (mutexes, conditions, timers, yield, attrs
 * other than NULL) is not provided: using it is a link error.
 *
 * Handles keep swarm.h's promise: once a thread is joined, its handle
 * (from any rank, in this run or a later one) answers ESRCH, even after
 * its record serves a newer thread, unless the join lands exactly when
 * that record has been reused a multiple of 2^29 times since (handles
 * carry a 29-bit generation; docs/dist.md, "Thread handles"). A join of a
 * thread another thread is waiting for answers EINVAL.
 *
 * Threads are uni-address threads (Akiyama & Taura): a thread runs in a
 * region at the same virtual address on every rank, spawn is child-first on
 * the running stack, and a thief on another rank takes the parent's
 * continuation (its frames and saved registers) with MPI one-sided
 * operations and resumes it at the same address. A thread may therefore
 * continue on another rank after any swarm_spawn or swarm_join. What such a
 * migratable thread may touch:
 *   - its own stack (locals, and pointers into its own frames);
 *   - its argument and its result, passed by value (an integer or a pointer
 *     to static data); a pointer into the parent's frame may be read only
 *     until the child's first spawn or join (copy what you need first);
 *   - static data that every rank initialised identically (code and static
 *     data sit at the same addresses on every rank: ASLR is switched off by
 *     a re-exec inside swarm_dist_init and the addresses are checked);
 *   - global memory through swarm_global_* below.
 * It must not keep, across a spawn or join, pointers to heap memory
 * (malloc), to another library's state (FILE *, MPI handles), or to
 * thread-local data: after a migration they refer to another process.
 * Code built for dist must not use -fstack-protector (the canary differs per
 * process); the CMake targets here pass -fno-stack-protector.
 *
 * x86-64 Linux only; swarm_dist_init fails with ENOTSUP elsewhere.
 */
#ifndef SWARM_DIST_H
#define SWARM_DIST_H

#include <stddef.h>
#include <stdint.h>
#include <swarm.h>

#ifdef __cplusplus
extern "C" {
#endif
#pragma GCC visibility push(default)

/* How idle ranks steal. RMA: the thief locks the victim's deque with
 * MPI_Fetch_and_op and reads the entry and the frames with MPI_Get; the
 * victim takes no part. MSG: the thief sends a request; the victim answers
 * it (with the frames) when it polls, every few spawns or when idle (and,
 * on the created window, from its progress thread). AUTO (the default):
 * RMA from ranks on the thief's own node, messages to ranks on other
 * nodes (over TCP an RMA steal costs seven round trips, a message steal
 * one); on one node AUTO is RMA. */
typedef enum swarm_dist_steal {
  SWARM_DIST_STEAL_RMA = 0,
  SWARM_DIST_STEAL_MSG = 1,
  SWARM_DIST_STEAL_AUTO = 2,
} swarm_dist_steal_t;

/* Starts MPI (MPI_Init_thread, FUNNELED) and the distributed runtime.
 * Collective. Before MPI_Init it re-executes the program once with address
 * space randomisation off (personality ADDR_NO_RANDOMIZE) when it is on, so
 * argc/argv must be main's, and it must replace the program's own MPI_Init
 * (called after MPI_Init, it cannot re-execute). Afterwards it compares the
 * load addresses of the objects mapped before MPI_Init (the executable and
 * its libraries) across ranks and returns EADDRNOTAVAIL, having printed
 * which object differs on which rank, when they disagree.
 *
 * Removes and obeys `--steal rma|msg|auto` in argv (overrides the
 * environment variable SWARM_DIST_STEAL=rma|msg|auto; default auto). Sizes per
 * rank, from the environment: SWARM_DIST_STACK (uni-address region, default 16
 * MiB), SWARM_DIST_HEAP (evacuated stacks, default 64 MiB), SWARM_DIST_GLOBAL
 * (swarm_global_alloc, default 16 MiB); suffixes K, M, G.
 *
 * SWARM_TRACE=FILE in rank 0's environment traces the job (the other
 * ranks follow rank 0): every rank records its worker's run slices,
 * spawns, steals (victim rank; RMA or message, same node or remote),
 * migrations, swarm_spawn_on and join parks, and swarm_dist_finalize
 * writes them as one Perfetto protobuf trace, a process track per rank
 * named "rank R on HOST", on rank 0's file system. Clocks are aligned to
 * rank 0's here, by a timestamp exchange with every rank (docs/trace.md
 * says how accurately). A file rank 0 cannot open is reported on stderr
 * and the job runs untraced.
 *
 * Returns 0, EADDRNOTAVAIL (addresses differ), ENOTSUP (not x86-64, more
 * than 65535 ranks, or the MPI window memory cannot be mapped at the
 * uni-address), EINVAL (bad
 * --steal or size), EBUSY (already initialised) or ENOMEM. On failure MPI
 * has been finalised again, so the program may simply exit. */
int swarm_dist_init(int *argc, char ***argv);

/* Collective: stops the runtime and finalises MPI. With SWARM_TRACE, first
 * gathers every rank's trace records on rank 0, which writes the file. */
int swarm_dist_finalize(void);

/* Collective: runs fn(arg) as a thread on rank 0 and returns when it has
 * finished, every rank having helped by stealing. On rank 0 *result (if not
 * NULL) receives fn's return value; on the others, the same value. */
int swarm_dist_run(void *(*fn)(void *), void *arg, void **result);

/* HIVE's remote creation: creates a thread running fn(arg) on `rank`; it
 * runs there when that rank next looks for work (it may be stolen from
 * there like any thread once it spawns). Any thread, on any rank, may join
 * it. EINVAL for a bad rank, EPERM outside swarm_dist_run. */
int swarm_spawn_on(int rank, swarm_thread_t *thread, void *(*fn)(void *),
                   void *arg);

int swarm_dist_rank(void);  /* this process's rank in MPI_COMM_WORLD */
int swarm_dist_ranks(void); /* number of ranks */
swarm_dist_steal_t swarm_dist_steal_mode(void);
/* "rma", "msg" or "auto" (the names --steal takes); "?" for other values. */
const char *swarm_dist_steal_name(swarm_dist_steal_t mode);
/* How the uni-address region is exposed to other ranks, chosen at
 * swarm_dist_init (SWARM_DIST_WINDOW=auto|shared|created): "shared"
 * (MPI_Win_allocate, every rank on one node, a steal is loads and stores)
 * or "created" (swarm's own mapping under MPI_Win_create: any transport,
 * nodes that share no memory); "none" before init. */
const char *swarm_dist_window_path(void);
/* Nodes the ranks run on (ranks that can share memory are one node). */
int swarm_dist_nodes(void);

/* Lets thieves make progress against this rank now: answers pending
 * message steals, or, on the "created" window, lets MPI apply their RMA.
 * A running thread does this every few spawns by itself; one that computes
 * long without spawning may call it (on the created window a progress
 * thread also does, every SWARM_DIST_PROGRESS_US). A no-op under RMA
 * stealing on the shared window. */
void swarm_dist_poll(void);

/* The rank a thread was created on: swarm_dist_creator(swarm_self()). */
int swarm_dist_creator(swarm_thread_t thread);

/* Counters of this rank since swarm_dist_init (sum them with
 * swarm_dist_stats_sum). Times are nanoseconds, summed over events. */
typedef struct swarm_dist_stats {
  uint64_t spawns;        /* swarm_spawn calls (child-first) */
  uint64_t remote_spawns; /* swarm_spawn_on calls made here */
  uint64_t steal_attempts;
  uint64_t steals;          /* continuations taken from another rank */
  uint64_t steal_bytes;     /* frame bytes copied in by those steals */
  uint64_t migrations;      /* resumes of a thread created on another rank */
  uint64_t suspensions;     /* joins that had to evacuate the thread */
  uint64_t resumes;         /* evacuated threads copied back and resumed */
  uint64_t resume_bytes;    /* frame bytes copied back by those resumes */
  uint64_t requests_served; /* message steals answered with work */
  /* Breakdown of successful RMA steals (sum over steals):
   * lock = acquiring the victim's deque lock, index = top/bottom update and
   * check, entry = reading the entry, frames = copying the frames into the
   * uni-address region, unlock = releasing the lock, total = victim chosen
   * to thread resumable. For message steals: total only (request sent to
   * frames in place). */
  uint64_t ns_steal_lock, ns_steal_index, ns_steal_entry, ns_steal_frames,
      ns_steal_unlock, ns_steal_total;
  uint64_t node_steals; /* steals (of `steals`) from a rank on this node */
  uint64_t ns_busy;     /* time this rank ran thread code (not scheduling,
                           stealing or idle), in runs */
} swarm_dist_stats_t;

int swarm_dist_stats_get(swarm_dist_stats_t *stats);

/* Medians over the latest steals (up to 4096 per rank, all ranks pooled):
 * one steal's latency and its breakdown as in swarm_dist_stats_t, robust
 * to the odd steal stretched by preemption. Collective; the result is
 * delivered on every rank. _reset (local) forgets the samples so far. */
typedef struct swarm_dist_steal_profile {
  uint64_t samples;
  double total_ns, lock_ns, index_ns, entry_ns, frames_ns, unlock_ns;
  double total_p90_ns;
  double frame_bytes; /* median bytes of frames copied */
} swarm_dist_steal_profile_t;
int swarm_dist_steal_profile(swarm_dist_steal_profile_t *profile);
void swarm_dist_steal_profile_reset(void);
/* Collective: the sum over all ranks, delivered on every rank. */
int swarm_dist_stats_sum(swarm_dist_stats_t *sum);

/* ---- global memory: MPI RMA on the windows of the ranks ---------------- */

/* A global address: the rank that holds the bytes and an offset there. */
typedef uint64_t swarm_gptr_t;
#define SWARM_GPTR_NULL ((swarm_gptr_t)0)

/* Allocates `size` bytes (8-byte aligned, zeroed) in the global heap of
 * the rank the calling thread runs on. Returns SWARM_GPTR_NULL when that
 * heap (SWARM_DIST_GLOBAL) is full. Everything is released by
 * swarm_dist_finalize; there is no free. */
swarm_gptr_t swarm_global_alloc(size_t size);
int swarm_gptr_rank(swarm_gptr_t p);
static inline swarm_gptr_t swarm_gptr_add(swarm_gptr_t p, size_t bytes) {
  return p + bytes;
}

/* Blocking copies: complete (remotely visible / locally available) on
 * return. */
void swarm_global_get(void *dst, swarm_gptr_t src, size_t size);
void swarm_global_put(swarm_gptr_t dst, const void *src, size_t size);
/* Atomic *p += v on a 64-bit word; returns the old value. */
int64_t swarm_global_fetch_add(swarm_gptr_t p, int64_t v);

#pragma GCC visibility pop
#ifdef __cplusplus
}
#endif
#endif /* SWARM_DIST_H */
