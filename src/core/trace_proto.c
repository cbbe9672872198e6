/*
 * core/trace_proto.c — the trace in Perfetto's own protobuf format (a
 * `Trace`: a stream of TracePacket messages, each TrackEvent encoded by hand
 * as varints; no protobuf library), written from the workers' records when
 * the trace closes (trace.c reads them back from the spill file and the
 * buffers and hands them here in recording order, worker by worker).
 *
 * Size is the point: fib makes a thread per call, so the bytes per thread
 * decide whether a run of a million threads is a file Perfetto opens.
 * Three choices keep a thread to about 22 bytes (two ~11-byte packets):
 *  - One packet sequence per worker (trusted_packet_sequence_id = worker+1)
 *    whose defaults (TracePacketDefaults) name the worker's track and an
 *    incremental clock (id 64, 1 ns): each packet carries only the time
 *    since the previous one, one or two varint bytes on fib. Names are
 *    interned once per sequence ("run", "sleep", "park io", ...).
 *  - Work-first nesting. A spawned child runs at once on its parent's
 *    worker while the parent waits on the deque, and when the child exits
 *    the parent resumes there at the same tick, unless it was stolen. So a
 *    child's run is written as a slice nested in its parent's: one BEGIN
 *    when it is spawned, one END when it exits, and the parent's slice is
 *    neither ended nor begun again around it. A slice's self time is what
 *    its thread ran; its children are what it spawned (swarm-trace reads
 *    the spawn tree back from the nesting). A resume that is not such a
 *    continuation (after a steal, a park, a yield, on another worker)
 *    closes the worker's open slices and begins a new one.
 *  - Thread ids only where needed. A nested BEGIN needs no id: it is a new
 *    thread, child of the enclosing slice's. The id (the handle, as a
 *    "thread" debug annotation) is written on every slice that does not
 *    nest, and on the nested first slice of every thread that is later
 *    resumed elsewhere — which only a thread that parks or is stolen is:
 *    trace.c passes those handles to proto_mark in a first pass over the
 *    records. (Without a spill file — a trace into a FIFO — there is no
 *    first pass and every slice carries its id.)
 * Events must reach a sequence in time order for deltas to work; a record
 * is written when its slice ends, so instants recorded during a slice (a
 * ready, a park) wait in `pending` until the slice's BEGIN is out. An event
 * still earlier than the last one written (rare: across a buffer boundary)
 * is written with an absolute timestamp on its own clock instead.
 *
 * Invariants: called only under trace_file.lock (trace.c); per worker, the
 * open slices are `stack[0 .. depth)`, outermost first, and open_end is
 * when the innermost one last stopped running.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "core/trace.h"

/* Protobuf wire format: (field << 3) | wire type; 0 varint, 2 bytes. */
#define VARINT(f) ((f) << 3)
#define BYTES(f) (((f) << 3) | 2)
/* TracePacket */
#define PKT_TIMESTAMP 8
#define PKT_CLOCK_SNAPSHOT 6
#define PKT_SEQ_ID 10
#define PKT_TRACK_EVENT 11
#define PKT_INTERNED 12
#define PKT_SEQ_FLAGS 13
#define PKT_TS_CLOCK 58
#define PKT_DEFAULTS 59
#define PKT_TRACK_DESC 60
/* TrackEvent */
#define TE_ANNOTATION 4
#define TE_TYPE 9
#define TE_NAME_IID 10
#define TE_BEGIN 1
#define TE_END 2
#define TE_INSTANT 3

#define PF_CLOCK_BOOTTIME 6
#define PF_CLOCK_INCREMENTAL 64
#define TRACK_UUID_BASE 0x5357524d0000ull /* "SWRM" << 16, + worker */
#define OUT_CAP ((size_t)256 * 1024)
#define PACKET_MAX 96 /* the longest event packet, with margin */
#define PENDING_MAX 16

/* Interned ids: event names, then annotation names. */
enum { IID_RUN = 1, IID_SLEEP, IID_STEAL, IID_PARK0 };
#define IID_READY0 (IID_PARK0 + SWARM_PARK_REASONS)
/* The END of a slice that was not running (a parent under its child) when
 * the worker left it: its thread's last run ended at its child's BEGIN. */
#define IID_SUSPENDED (IID_READY0 + SWARM_PARK_REASONS)
/* libswarm-dist's events (one process track per rank, src/dist/trace.c). */
#define IID_MIGRATE (IID_SUSPENDED + 1)
#define IID_SPAWN_ON (IID_SUSPENDED + 2)
#define IID_START (IID_SUSPENDED + 3)
enum { ANN_THREAD = 1, ANN_VICTIM, ANN_KIND, ANN_RANK };

struct pending_instant {
  uint64_t ts, thread, b;
  uint16_t kind, reason;
};

struct proto_worker {
  uint64_t *stack; /* handles of the open slices, outermost first */
  uint32_t depth, cap;
  uint64_t open_end;
  uint64_t last_ts; /* the incremental clock: the last delta's end */
  /* The last two spawn records. A parent's slice closes right after its
   * spawn record; the child's own first spawn may come before the child's
   * slice does: P->C, RUN(P), C->D, RUN(C), RUN(D). */
  struct {
    uint64_t parent, child, ts;
  } spawns[2];
  bool started; /* the sequence's header packets are out */
  struct pending_instant pending[PENDING_MAX];
  uint32_t npending;
};

static struct {
  struct proto_worker *w;
  int nslots, nworkers;
  uint32_t pid; /* 0, or the process track its workers' tracks sit under */
  uint64_t epoch_ns;
  bool ids_always;
  uint64_t *marked; /* open-addressing set of handles; 0 is empty */
  size_t marked_cap, marked_count;
  unsigned char *out;
  size_t len;
} proto;

/* Park reasons by name, for both writers (and libswarm-dist's). */
const char *const trace_reason_names[SWARM_PARK_REASONS] = {
    "other",   "join", "mutex", "cond", "rwlock", "sem",
    "barrier", "once", "sleep", "io",   "yield",  "finalize",
};

/* A rank's steal, by the record's reason (0: core's, no kind). */
const char *const trace_steal_kinds[TRACE_STEAL_KINDS] = {
    NULL, "rma same-node", "rma remote", "msg same-node", "msg remote"};

/* Sequences and tracks of worker w: core's (pid 0) are w + 1 and
 * TRACK_UUID_BASE + w; a rank's (pid = rank + 1) carry the pid above. */
static uint64_t seq_of(int w) {
  return ((uint64_t)proto.pid << 16) + (uint64_t)w + 1;
}
static uint64_t track_of(int w) {
  return ((uint64_t)proto.pid << 48) + TRACK_UUID_BASE + (uint64_t)w;
}
#define PROCESS_TRACK(pid) (((uint64_t)(pid) << 48) + TRACK_UUID_BASE - 1)

/* ---- encoding ---- */

static inline unsigned char *put_varint(unsigned char *p, uint64_t v) {
  while (v >= 0x80) {
    *p++ = (unsigned char)(v | 0x80);
    v >>= 7;
  }
  *p++ = (unsigned char)v;
  return p;
}

static inline unsigned char *put_field(unsigned char *p, unsigned field,
                                       uint64_t v) {
  return put_varint(put_varint(p, VARINT(field)), v);
}

static unsigned char *put_bytes(unsigned char *p, unsigned field, const void *b,
                                size_t n) {
  p = put_varint(put_varint(p, BYTES(field)), n);
  memcpy(p, b, n);
  return p + n;
}

static void out_flush(void) {
  if (proto.len)
    trace_file_write(proto.out, proto.len);
  proto.len = 0;
}

/* Trace.packet (field 1) around body[0 .. n). */
static void out_packet(const unsigned char *body, size_t n) {
  if (proto.len + n + 16 > OUT_CAP)
    out_flush();
  unsigned char *p = proto.out + proto.len;
  p = put_bytes(p, 1, body, n);
  proto.len = (size_t)(p - proto.out);
}

/* ---- the set of threads that resume elsewhere ---- */

static size_t mark_slot(uint64_t h, size_t cap) {
  h ^= h >> 29;
  h *= 0xbf58476d1ce4e5b9ull;
  h ^= h >> 32;
  return (size_t)h & (cap - 1);
}

void proto_mark(uint64_t h) {
  if (!h || !proto.out)
    return;
  if (2 * (proto.marked_count + 1) > proto.marked_cap) {
    size_t cap = proto.marked_cap ? 2 * proto.marked_cap : 1024;
    uint64_t *t = calloc(cap, sizeof *t);
    if (!t) {
      proto.ids_always = true; /* no set: ids everywhere, still right */
      return;
    }
    for (size_t i = 0; i < proto.marked_cap; i++) {
      uint64_t v = proto.marked[i];
      if (!v)
        continue;
      size_t j = mark_slot(v, cap);
      while (t[j])
        j = (j + 1) & (cap - 1);
      t[j] = v;
    }
    free(proto.marked);
    proto.marked = t;
    proto.marked_cap = cap;
  }
  size_t j = mark_slot(h, proto.marked_cap);
  while (proto.marked[j] && proto.marked[j] != h)
    j = (j + 1) & (proto.marked_cap - 1);
  if (!proto.marked[j]) {
    proto.marked[j] = h;
    proto.marked_count++;
  }
}

static bool marked(uint64_t h) {
  if (proto.ids_always)
    return true;
  if (!proto.marked_cap)
    return false;
  size_t j = mark_slot(h, proto.marked_cap);
  while (proto.marked[j]) {
    if (proto.marked[j] == h)
      return true;
    j = (j + 1) & (proto.marked_cap - 1);
  }
  return false;
}

/* ---- a worker's sequence ---- */

static unsigned char *put_name(unsigned char *p, unsigned field, uint64_t iid,
                               const char *a, const char *b) {
  unsigned char e[64], *q = put_field(e, 1, iid);
  char name[48];
  size_t n = strlen(a);
  memcpy(name, a, n);
  if (b) {
    name[n++] = ' ';
    size_t m = strlen(b);
    memcpy(name + n, b, m);
    n += m;
  }
  q = put_bytes(q, 2, name, n);
  return put_bytes(p, field, e, (size_t)(q - e));
}

/* The first packets of worker w's sequence: clear its state, define the
 * clocks, the defaults (its track, the incremental clock), the names; then
 * its track, named as in the JSON ("worker 3", "worker 5 (spare)"). */
static void sequence_start(int w) {
  unsigned char body[2048], *p = body, tmp[256], *q, sub[64], *s;
  uint64_t seq = seq_of(w);
  p = put_field(p, PKT_SEQ_ID, seq);
  p = put_field(p, PKT_SEQ_FLAGS, 1); /* SEQ_INCREMENTAL_STATE_CLEARED */
  p = put_field(p, PKT_TIMESTAMP, proto.epoch_ns);
  p = put_field(p, PKT_TS_CLOCK, PF_CLOCK_BOOTTIME);
  q = tmp; /* ClockSnapshot: BOOTTIME and the incremental clock agree */
  s = put_field(sub, 1, PF_CLOCK_BOOTTIME);
  s = put_field(s, 2, proto.epoch_ns);
  q = put_bytes(q, 1, sub, (size_t)(s - sub));
  s = put_field(sub, 1, PF_CLOCK_INCREMENTAL);
  s = put_field(s, 2, proto.epoch_ns);
  s = put_field(s, 3, 1); /* is_incremental */
  s = put_field(s, 4, 1); /* unit_multiplier_ns */
  q = put_bytes(q, 1, sub, (size_t)(s - sub));
  p = put_bytes(p, PKT_CLOCK_SNAPSHOT, tmp, (size_t)(q - tmp));
  s = put_field(sub, 11, track_of(w)); /* track_uuid */
  q = put_field(tmp, PKT_TS_CLOCK, PF_CLOCK_INCREMENTAL);
  q = put_bytes(q, 11, sub, (size_t)(s - sub)); /* track_event_defaults */
  p = put_bytes(p, PKT_DEFAULTS, tmp, (size_t)(q - tmp));
  unsigned char names[1536], *n = names;
  n = put_name(n, 2, IID_RUN, "run", NULL);
  n = put_name(n, 2, IID_SLEEP, "sleep", NULL);
  n = put_name(n, 2, IID_STEAL, "steal", NULL);
  for (int r = 0; r < SWARM_PARK_REASONS; r++) {
    n = put_name(n, 2, IID_PARK0 + (uint64_t)r, "park", trace_reason_names[r]);
    n = put_name(n, 2, IID_READY0 + (uint64_t)r, "ready",
                 trace_reason_names[r]);
  }
  n = put_name(n, 2, IID_SUSPENDED, "suspended", NULL);
  if (proto.pid) {
    n = put_name(n, 2, IID_MIGRATE, "migrate", NULL);
    n = put_name(n, 2, IID_SPAWN_ON, "spawn_on", NULL);
    n = put_name(n, 2, IID_START, "start", NULL);
    n = put_name(n, 3, ANN_KIND, "kind", NULL);
    n = put_name(n, 3, ANN_RANK, "rank", NULL);
  }
  n = put_name(n, 3, ANN_THREAD, "thread", NULL);
  n = put_name(n, 3, ANN_VICTIM, "victim", NULL);
  p = put_bytes(p, PKT_INTERNED, names, (size_t)(n - names));
  out_packet(body, (size_t)(p - body));

  char label[40];
  int len = snprintf(label, sizeof label, "worker %d%s", w,
                     w >= proto.nworkers ? " (spare)" : "");
  q = put_field(tmp, 1, track_of(w));
  q = put_bytes(q, 2, label, (size_t)len);
  if (proto.pid)
    q = put_field(q, 5, PROCESS_TRACK(proto.pid)); /* parent_uuid */
  p = put_field(body, PKT_SEQ_ID, seq);
  p = put_bytes(p, PKT_TRACK_DESC, tmp, (size_t)(q - tmp));
  out_packet(body, (size_t)(p - body));
  proto.w[w].started = true;
  proto.w[w].last_ts = 0;
}

/* One TrackEvent packet at ts (ns since the trace started). */
static void event(int w, uint64_t ts, int type, uint64_t name_iid,
                  uint64_t thread, int64_t victim, uint64_t ann_iid,
                  const char *str) {
  struct proto_worker *pw = &proto.w[w];
  unsigned char body[PACKET_MAX], *p = body, te[80], *t = te, ann[24], *a;
  if (ts >= pw->last_ts) {
    p = put_field(p, PKT_TIMESTAMP, ts - pw->last_ts);
    pw->last_ts = ts;
  } else { /* out of order: absolute, on the builtin clock */
    p = put_field(p, PKT_TIMESTAMP, proto.epoch_ns + ts);
    p = put_field(p, PKT_TS_CLOCK, PF_CLOCK_BOOTTIME);
  }
  p = put_field(p, PKT_SEQ_ID, seq_of(w));
  t = put_field(t, TE_TYPE, (uint64_t)type);
  if (name_iid)
    t = put_field(t, TE_NAME_IID, name_iid);
  if (thread) {
    a = put_field(ann, 1, ANN_THREAD);
    a = put_field(a, 3, thread); /* uint_value */
    t = put_bytes(t, TE_ANNOTATION, ann, (size_t)(a - ann));
  }
  if (victim >= 0) {
    a = put_field(ann, 1, ann_iid ? ann_iid : ANN_VICTIM);
    a = put_field(a, 3, (uint64_t)victim);
    t = put_bytes(t, TE_ANNOTATION, ann, (size_t)(a - ann));
  }
  if (str) { /* a short string: the kind of a rank's steal */
    a = put_field(ann, 1, ANN_KIND);
    a = put_bytes(a, 6, str, strnlen(str, 16)); /* string_value */
    t = put_bytes(t, TE_ANNOTATION, ann, (size_t)(a - ann));
  }
  p = put_bytes(p, PKT_TRACK_EVENT, te, (size_t)(t - te));
  out_packet(body, (size_t)(p - body));
}

static void pending_flush(int w, uint64_t before);

/* Ends every open slice where the innermost stopped running; the instants
 * recorded up to then go first. */
static void close_all(int w) {
  struct proto_worker *pw = &proto.w[w];
  if (pw->depth > 0)
    pending_flush(w, pw->open_end + 1);
  for (uint32_t top = pw->depth; pw->depth > 0; pw->depth--)
    event(w, pw->open_end, TE_END, pw->depth == top ? 0 : IID_SUSPENDED, 0, -1,
          0, NULL);
}

/* Pending instants earlier than `before` (all with UINT64_MAX). */
static void pending_flush(int w, uint64_t before) {
  struct proto_worker *pw = &proto.w[w];
  uint32_t keep = 0;
  for (uint32_t i = 0; i < pw->npending; i++) {
    struct pending_instant *e = &pw->pending[i];
    if (e->ts >= before) {
      pw->pending[keep++] = *e;
      continue;
    }
    uint64_t iid, ann = 0;
    int64_t rank = -1;
    if (e->kind == TR_PARK || e->kind == TR_READY)
      iid = (e->kind == TR_PARK ? IID_PARK0 : IID_READY0) +
            (e->reason < SWARM_PARK_REASONS ? e->reason : 0);
    else { /* a rank's migrate, spawn_on, start */
      iid = e->kind == TR_MIGRATE    ? IID_MIGRATE
            : e->kind == TR_SPAWN_ON ? IID_SPAWN_ON
                                     : IID_START;
      rank = e->kind == TR_START ? -1 : (int64_t)e->b;
      ann = ANN_RANK;
    }
    event(w, e->ts, TE_INSTANT, iid, e->thread, rank, ann, NULL);
  }
  pw->npending = keep;
}

static bool stack_push(struct proto_worker *pw, uint64_t h) {
  if (pw->depth == pw->cap) {
    uint32_t cap = pw->cap ? 2 * pw->cap : 64;
    uint64_t *s = realloc(pw->stack, cap * sizeof *s);
    if (!s)
      return false;
    pw->stack = s;
    pw->cap = cap;
  }
  pw->stack[pw->depth++] = h;
  return true;
}

/* A run slice [s, e) of thread t on worker w: nest it, continue an open
 * slice, or close them all and begin anew (see the file's comment). */
static void run_slice(int w, uint64_t s, uint64_t e, uint64_t t) {
  struct proto_worker *pw = &proto.w[w];
  uint64_t parent = 0;
  for (int i = 0; i < 2; i++)
    if (pw->spawns[i].child == t && pw->spawns[i].ts == s) {
      parent = pw->spawns[i].parent;
      pw->spawns[i].child = 0;
    }
  if (pw->depth > 0 && s == pw->open_end) {
    uint64_t top = pw->stack[pw->depth - 1];
    if (parent && parent == top && stack_push(pw, t)) {
      pending_flush(w, s);
      event(w, s, TE_BEGIN, IID_RUN, marked(t) ? t : 0, -1, 0, NULL);
      pending_flush(w, UINT64_MAX);
      pw->open_end = e;
      return;
    }
    uint32_t i = pw->depth;
    while (i > 0 && pw->stack[i - 1] != t)
      i--;
    if (i > 0) { /* a continuation: the slices above it end here */
      pending_flush(w, s);
      for (uint32_t top = pw->depth; pw->depth > i; pw->depth--)
        event(w, s, TE_END, pw->depth == top ? 0 : IID_SUSPENDED, 0, -1, 0,
              NULL);
      pending_flush(w, UINT64_MAX);
      pw->open_end = e;
      return;
    }
  }
  close_all(w);
  pending_flush(w, s);
  if (stack_push(pw, t)) {
    event(w, s, TE_BEGIN, IID_RUN, t, -1, 0, NULL);
    pw->open_end = e;
  }
  pending_flush(w, UINT64_MAX);
}

static void pending_add(int w, uint16_t kind, uint64_t ts, uint64_t thread,
                        uint64_t b, uint16_t reason) {
  struct proto_worker *pw = &proto.w[w];
  if (pw->npending == PENDING_MAX)
    pending_flush(w, UINT64_MAX);
  pw->pending[pw->npending++] =
      (struct pending_instant){ts, thread, b, kind, reason};
}

void proto_record(int w, uint16_t kind, uint16_t reason, uint64_t ts,
                  uint64_t end, uint64_t a, uint64_t b) {
  if (!proto.out || w < 0 || w >= proto.nslots)
    return;
  struct proto_worker *pw = &proto.w[w];
  if (!pw->started)
    sequence_start(w);
  switch (kind) {
  case TR_RUN:
    run_slice(w, ts, end, a);
    break;
  case TR_SPAWN: /* the child's slice comes next and nests */
    pw->spawns[0] = pw->spawns[1];
    pw->spawns[1].parent = a;
    pw->spawns[1].child = b;
    pw->spawns[1].ts = ts;
    break;
  case TR_PARK:
  case TR_READY:
  case TR_MIGRATE:
  case TR_SPAWN_ON:
  case TR_START:
    pending_add(w, kind, ts, a, b, reason);
    break;
  case TR_STEAL: /* in the scheduler loop: nothing runs here */
    close_all(w);
    pending_flush(w, ts);
    event(w, ts, TE_INSTANT, IID_STEAL, a, (int64_t)b, 0,
          reason < TRACE_STEAL_KINDS ? trace_steal_kinds[reason] : NULL);
    break;
  case TR_SLEEP:
    close_all(w);
    pending_flush(w, ts);
    event(w, ts, TE_BEGIN, IID_SLEEP, 0, -1, 0, NULL);
    event(w, end, TE_END, 0, 0, -1, 0, NULL);
    break;
  default:
    break;
  }
}

/* The process track of a rank: "rank R on <host>" (pid = R + 1). */
static void process_track(const char *name) {
  unsigned char body[256], *p = body, tmp[224], *q, sub[200], *s;
  s = put_field(sub, 1, proto.pid);
  s = put_bytes(s, 6, name, strnlen(name, 160)); /* process_name */
  q = put_field(tmp, 1, PROCESS_TRACK(proto.pid));
  q = put_bytes(q, 2, name, strnlen(name, 160));
  q = put_bytes(q, 3, sub, (size_t)(s - sub)); /* ProcessDescriptor */
  p = put_field(p, PKT_SEQ_ID, seq_of(0));
  p = put_bytes(p, PKT_TRACK_DESC, tmp, (size_t)(q - tmp));
  out_packet(body, (size_t)(p - body));
}

bool proto_open(int nslots, int nworkers, uint64_t epoch_ns, bool ids_always) {
  return proto_open_process(nslots, nworkers, epoch_ns, ids_always, 0, NULL);
}

bool proto_open_process(int nslots, int nworkers, uint64_t epoch_ns,
                        bool ids_always, uint32_t pid, const char *name) {
  proto_close();
  proto.w = calloc((size_t)nslots, sizeof *proto.w);
  proto.out = malloc(OUT_CAP);
  if (!proto.w || !proto.out) {
    free(proto.w);
    free(proto.out);
    proto.w = NULL;
    proto.out = NULL;
    return false;
  }
  proto.nslots = nslots;
  proto.nworkers = nworkers;
  proto.epoch_ns = epoch_ns;
  proto.ids_always = ids_always;
  proto.pid = pid;
  proto.len = 0;
  if (pid)
    process_track(name ? name : "");
  for (int i = 0; i < nworkers; i++) /* regular workers' tracks always */
    sequence_start(i);
  out_flush();
  return true;
}

void proto_close(void) {
  if (!proto.out)
    return;
  for (int i = 0; i < proto.nslots; i++) {
    if (!proto.w[i].started)
      continue;
    close_all(i);
    pending_flush(i, UINT64_MAX);
  }
  out_flush();
  for (int i = 0; i < proto.nslots; i++)
    free(proto.w[i].stack);
  free(proto.w);
  free(proto.out);
  free(proto.marked);
  memset(&proto, 0, sizeof proto);
}
