/*
 * core/trace.h — the scheduler's event trace (SWARM_TRACE=out.pftrace): what a
 * worker records, and the trace points the scheduler and upper layers call.
 *
 * Recording. Each worker owns a buffer of fixed-size binary records (struct
 * trace_rec) that only it appends to, without locks or atomics. A full
 * buffer is written by its owner, as it is, to a spill file and emptied:
 * nothing is dropped while the trace is open, and the stall is a write, not
 * the formatting. Records become Perfetto's protobuf (trace_proto.c) or JSON
 * (Chrome trace event format, trace.c) when the trace ends — at swarm_finalize,
 * or at exit for a program that never calls it.
 *
 * Run slices. A worker remembers which thread it runs and since when
 * (slice_handle, slice_start). Every switch calls trace_switch_at, which
 * closes that slice as one complete ("X") event and opens the next one, so
 * slices are exactly the intervals between switches; a gap between slices is
 * time in the scheduler loop (idle, stealing, sleeping).
 *
 * Zero cost when off. The hot path (spawn, exit, park) does not test a flag:
 * its switch steps are per-worker function pointers (worker.after_spawn,
 * .after_exit, .after_park) that trace_start points at plain
 * or traced twins once, at swarm_init. Loading a pointer from the worker,
 * already in a register, replaces the lea of a constant address, so the
 * untraced instruction count is unchanged (bench-instr: see docs/trace.md).
 * Cold paths (stealing, sleeping, ready, the main thread's exit) test
 * w->trace in the TRACE_* macros below: a load and a branch next to a
 * steal or a futex wait. The scheduler loop's switch calls
 * worker.sched_switch when set (tracing's, or CPU accounting's:
 * cpuclock.c).
 *
 * Invariants: w->trace is set before the worker's kernel thread starts and
 * cleared only after it was joined (trace_stop) — or never, when the trace
 * is closed at exit: the buffers stay allocated and a closed trace only
 * empties them. Thread ids in the trace are handles (swarm_self()'s value),
 * read when a slice opens, so a descriptor reused later gets a new id.
 */
#ifndef SWARM_CORE_TRACE_H
#define SWARM_CORE_TRACE_H

#include <stdbool.h>
#include <stdint.h>

#include "core/core.h"

enum trace_kind {
  TR_RUN = 1, /* X: a thread ran [ts, ts + b ticks); a = thread */
  TR_SPAWN,   /* i: a = parent, b = child */
  TR_PARK,    /* i: a = thread, reason */
  TR_READY,   /* i: a = thread, reason (of its park) */
  TR_STEAL,   /* i: a = thread, b = victim worker */
  TR_SLEEP,   /* X: the worker slept on its futex [ts, ts + b) */
  /* libswarm-dist only (src/dist/trace.c), Perfetto only: */
  TR_MIGRATE,  /* i: a = thread, b = the rank that created it */
  TR_SPAWN_ON, /* i: a = thread, b = the rank it was sent to */
  TR_START,    /* i: a = thread the scheduler began (a root, a spawn_on) */
};

/* A rank's TR_STEAL says in `reason` how (0: core's steal, no kind). */
enum {
  TRACE_STEAL_RMA_NODE = 1,
  TRACE_STEAL_RMA_REMOTE,
  TRACE_STEAL_MSG_NODE,
  TRACE_STEAL_MSG_REMOTE,
  TRACE_STEAL_KINDS
};
extern const char *const trace_steal_kinds[TRACE_STEAL_KINDS];

struct trace_rec {
  uint64_t ts; /* ticks (trace_now) */
  uint64_t a, b;
  uint16_t kind;
  uint16_t reason;
  uint32_t pad;
};

struct trace_buf {
  struct trace_rec *recs;
  uint32_t count; /* owner writes (release); the exit flush reads */
  uint32_t cap;
  uint64_t slice_handle; /* the thread whose run slice is open, or 0 */
  uint64_t slice_start;
  uint64_t sleep_start;
  int worker;
};

/* A timestamp in ticks: the TSC on x86-64 when the kernel's clocksource is
 * the TSC (so its rate is constant and CPUs agree), else ns of
 * CLOCK_MONOTONIC. trace.c turns ticks into ns when it writes; reading the
 * TSC costs a third of the vDSO clock, and a slice takes two reads. */
extern bool trace_tsc;
static inline uint64_t trace_now(void) {
#if defined(__x86_64__)
  if (likely(trace_tsc))
    return __builtin_ia32_rdtsc();
#endif
  return os_now_ns_inline();
}

void trace_flush_full(struct trace_buf *b);

static inline struct trace_rec *trace_rec_next(struct trace_buf *b) {
  if (unlikely(b->count == b->cap))
    trace_flush_full(b);
  return &b->recs[b->count];
}

static inline void trace_rec_done(struct trace_buf *b) {
  __atomic_store_n(&b->count, b->count + 1, __ATOMIC_RELEASE);
}

static inline void trace_put(struct trace_buf *b, uint16_t kind, uint64_t ts,
                             uint64_t a, uint64_t bb, uint16_t reason) {
  struct trace_rec *r = trace_rec_next(b);
  r->ts = ts;
  r->a = a;
  r->b = bb;
  r->kind = kind;
  r->reason = reason;
  trace_rec_done(b);
}

static inline uint64_t trace_id(struct swarm_thread *t) {
  return t ? desc_handle(t) : 0;
}

/* Closes the open run slice at `now` and opens one for next (NULL: the
 * worker's scheduler context, which is not a slice). */
static inline void trace_switch_at(struct trace_buf *b, uint64_t now,
                                   struct swarm_thread *next) {
  if (b->slice_handle)
    trace_put(b, TR_RUN, b->slice_start, b->slice_handle, now - b->slice_start,
              0);
  b->slice_handle = trace_id(next);
  b->slice_start = now;
}

static inline void trace_switch(struct trace_buf *b,
                                struct swarm_thread *next) {
  trace_switch_at(b, trace_now(), next);
}

/* ---- trace points for cold paths: one line each at the call site ---- */
#define TRACE_EVENT(w, kind, a, b, reason)                                     \
  do {                                                                         \
    if (unlikely((w)->trace))                                                  \
      trace_put((w)->trace, (kind), trace_now(), (a), (b), (reason));          \
  } while (0)
#define TRACE_STEAL(w, t, victim)                                              \
  TRACE_EVENT(w, TR_STEAL, trace_id(t), (uint64_t)(victim), 0)
#define TRACE_READY(w, t)                                                      \
  do {                                                                         \
    if (unlikely((w) && (w)->trace))                                           \
      trace_ready((w)->trace, (t));                                            \
  } while (0)
#define TRACE_SLEEP_BEGIN(w)                                                   \
  do {                                                                         \
    if (unlikely((w)->trace))                                                  \
      (w)->trace->sleep_start = trace_now();                                   \
  } while (0)
#define TRACE_SLEEP_END(w)                                                     \
  do {                                                                         \
    if (unlikely((w)->trace))                                                  \
      trace_put((w)->trace, TR_SLEEP, (w)->trace->sleep_start, 0,              \
                trace_now() - (w)->trace->sleep_start, 0);                     \
  } while (0)

static inline void trace_ready(struct trace_buf *b, struct swarm_thread *t) {
  trace_put(b, TR_READY, trace_now(), trace_id(t), 0, t->park_reason);
  t->park_reason = SWARM_PARK_OTHER; /* consumed: a plain park says other */
}

/* ---- the file's two formats ---- */
/* Park reasons by name, for both writers (trace.c). */
extern const char *const trace_reason_names[SWARM_PARK_REASONS];
/* Writes bytes to the trace file; under the file's lock (trace.c). */
void trace_file_write(const void *buf, size_t len);
/* Perfetto's protobuf format (trace_proto.c), all under the file's lock:
 * open writes the regular workers' sequence headers (ids_always: no first
 * pass will mark threads, so every slice names its thread); mark names a
 * thread that parks or is stolen, before any record is given; record takes
 * one record, times in ns since the trace started (end: a slice's end);
 * close ends the open slices and flushes. */
bool proto_open(int nslots, int nworkers, uint64_t epoch_ns, bool ids_always);
/* The same for one process of several in one file (libswarm-dist: a rank):
 * a process track (pid > 0, named `name`) with the workers' tracks under
 * it, and sequence ids and track uuids that carry pid. */
bool proto_open_process(int nslots, int nworkers, uint64_t epoch_ns,
                        bool ids_always, uint32_t pid, const char *name);
void proto_mark(uint64_t thread);
void proto_record(int worker, uint16_t kind, uint16_t reason, uint64_t ts,
                  uint64_t end, uint64_t a, uint64_t b);
void proto_close(void);

/* ---- lifecycle (trace.c), called by swarm_init / swarm_finalize ---- */
/* Reads SWARM_TRACE (and SWARM_TRACE_BUFFER, records per worker, and
 * SWARM_TRACE_FORMAT, perfetto or json: the default is json for a path
 * ending in .json, else Perfetto's protobuf). When set,
 * opens the file and gives every worker a buffer; either way points every
 * worker's switch steps at the plain or traced ones given. Returns whether
 * tracing is on. A file that cannot be opened is reported on stderr and
 * tracing stays off. */
struct trace_steps {
  void *(*after_spawn)(void *);
  void *(*after_exit)(void *);
  void *(*after_park)(void *);
};
bool trace_start(const struct trace_steps *plain,
                 const struct trace_steps *traced);
/* Closes the trace: every worker's records, the trailer, the file. Called
 * with every other worker stopped (swarm_finalize), or at exit. */
void trace_stop(void);

#endif
