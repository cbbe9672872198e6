/*
 * core/trace.c — the trace file: opening it at swarm_init when SWARM_TRACE
 * names one, turning workers' binary records into Perfetto's protobuf
 * (trace_proto.c, the default) or Chrome trace event JSON (one object,
 * {"traceEvents": [...], ...}, for a .json path or SWARM_TRACE_FORMAT=json),
 * and closing it at swarm_finalize or at exit. What is recorded, and why
 * tracing off costs nothing, is in trace.h.
 *
 * Invariants kept here:
 *  - The files are written only under trace_file.lock: a full buffer by its
 *    owner, to the spill file; the JSON by whoever closes the trace, from
 *    the spill file's chunks in the order they were written, then the
 *    buffers — so each worker's events reach the file in recording order.
 *  - Once closed, the trace writes nothing more: a worker whose buffer fills
 *    after the exit flush (its program is exiting under it) empties it.
 *  - A worker's buffer is read by someone else only at exit, up to the
 *    count its owner last published with release; records below it are
 *    complete.
 * Timestamps are ticks (trace.h) converted to ns since trace_start, written
 * as the format's microseconds with three decimals. Formatting is by hand,
 * not printf: it is most of tracing's cost (docs/trace.md).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/core.h"
#include "core/limits.h"
#include "core/trace.h"
#include "os/os.h"
#include "os/sys.h"

#define TRACE_DEFAULT_RECORDS 65536u /* 2 MiB per worker */
#define TRACE_MIN_RECORDS 16u
#define TEXT_CAP ((size_t)256 * 1024)
#define TEXT_EVENT_MAX 256 /* the longest event we format, with margin */

bool trace_tsc;
static char hex_pairs[512]; /* "00" .. "ff", filled by tables_init */

/* ticks -> ns since trace_start: ns = (ticks - epoch) * ns_per_tick, the
 * rate measured at trace_start (1 without a TSC) */
static struct {
  uint64_t epoch_ticks, epoch_ns;
  double ns_per_tick;
} clock_map;

static struct {
  struct spinlock lock; /* LOCK_TRACE_FILE */
  int fd;               /* -1: no trace open */
  int spill_fd; /* full buffers, binary, until the trace closes; or -1 */
  bool closed;  /* the trailer is written; drop whatever comes */
  bool atexit_done;
  bool proto;            /* Perfetto's protobuf (trace_proto.c), else JSON */
  int nworkers;          /* regular workers; spares follow */
  uint64_t spares_named; /* spare tracks named so far (bit per spare) */
  int nslots;            /* workers with a buffer, spares included */
  uint64_t written;      /* events written, for the trailer */
  char *text;            /* TEXT_CAP bytes, used under lock */
  size_t len;
} trace_file = {
    .lock = SPINLOCK_INIT(LOCK_TRACE_FILE), .fd = -1, .spill_fd = -1};

/* A full buffer in the spill file: this header, then n records. */
struct spill_chunk {
  int32_t worker;
  uint32_t n;
};

/* ---- time ---- */

static bool clocksource_is_tsc(void) {
#if defined(__x86_64__)
  char buf[16] = {0};
  int fd = open("/sys/devices/system/clocksource/clocksource0/"
                "current_clocksource",
                O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return false;
  long n = sys_read(fd, buf, sizeof buf - 1);
  sys_close(fd);
  return n >= 3 && !strncmp(buf, "tsc", 3) && (buf[3] == '\n' || !buf[3]);
#else
  return false;
#endif
}

static void tables_init(void) {
  static const char hex[] = "0123456789abcdef";
  for (int i = 0; i < 256; i++) {
    hex_pairs[2 * i] = hex[i >> 4];
    hex_pairs[2 * i + 1] = hex[i & 15];
  }
}

/* The tick rate, measured once over CALIBRATE_NS at trace_start. Once: a
 * rate refined later would convert a worker's later buffers differently
 * from its earlier ones, and its slices could appear to overlap. */
#define CALIBRATE_NS 5000000u
static void clock_start(void) {
  trace_tsc = clocksource_is_tsc();
  clock_map.epoch_ns = os_now_ns_inline();
  clock_map.epoch_ticks = trace_now();
  clock_map.ns_per_tick = 1.0;
  if (!trace_tsc)
    return;
  uint64_t ns;
  while ((ns = os_now_ns_inline()) - clock_map.epoch_ns < CALIBRATE_NS)
    os_cpu_relax();
  uint64_t ticks = trace_now();
  if (ticks > clock_map.epoch_ticks)
    clock_map.ns_per_tick = (double)(ns - clock_map.epoch_ns) /
                            (double)(ticks - clock_map.epoch_ticks);
  else { /* a TSC that does not advance: use the clock */
    trace_tsc = false;
    clock_map.epoch_ticks = clock_map.epoch_ns;
  }
}

static inline uint64_t ticks_to_ns(uint64_t ticks) {
  /* another CPU's TSC may lag the epoch's by a little */
  if (ticks <= clock_map.epoch_ticks)
    return 0;
  return (uint64_t)((double)(ticks - clock_map.epoch_ticks) *
                    clock_map.ns_per_tick);
}

/* A slice's duration as the difference of its converted ends, so that a
 * slice that starts where the previous one ended (the same tick) starts
 * exactly at its end after rounding: Perfetto nests overlapping slices. */
static inline uint64_t ticks_to_ns_dur(uint64_t start, uint64_t ticks) {
  return ticks_to_ns(start + ticks) - ticks_to_ns(start);
}

/* ---- output (under lock) ---- */

static bool write_all(int fd, const void *buf, size_t len) {
  const char *p = buf;
  while (len > 0) {
    long n = sys_write(fd, p, len);
    if (n == -EINTR)
      continue;
    if (n <= 0) {
      static const char msg[] = "swarm: SWARM_TRACE: write failed; the "
                                "trace file is incomplete\n";
      os_write_stderr(msg, sizeof msg - 1);
      trace_file.closed = true;
      return false;
    }
    p += n;
    len -= (size_t)n;
  }
  return true;
}

void trace_file_write(const void *buf, size_t len) {
  if (!trace_file.closed)
    write_all(trace_file.fd, buf, len);
}

static void text_flush(void) {
  if (!trace_file.closed)
    write_all(trace_file.fd, trace_file.text, trace_file.len);
  trace_file.len = 0;
}

/* Formatting writes through a cursor `p` into trace_file.text and returns
 * the advanced cursor: a char store may alias any global, so keeping the
 * position in trace_file.len would reload it after every byte. */
static inline char *put_mem(char *p, const char *s, size_t n) {
  memcpy(p, s, n);
  return p + n;
}
/* a string literal: its length is a constant, the copy a few moves */
#define PUT_LIT(p, s) put_mem((p), (s), sizeof(s) - 1)

static const char digit_pairs[201] = "00010203040506070809"
                                     "10111213141516171819"
                                     "20212223242526272829"
                                     "30313233343536373839"
                                     "40414243444546474849"
                                     "50515253545556575859"
                                     "60616263646566676869"
                                     "70717273747576777879"
                                     "80818283848586878889"
                                     "90919293949596979899";

static inline unsigned decimal_digits32(uint32_t v) {
  unsigned n = 1;
  while (v >= 10000) {
    v /= 10000;
    n += 4;
  }
  return n + (v >= 10) + (v >= 100) + (v >= 1000);
}

/* Decimal, two digits per step, written back to front in place; 32-bit
 * arithmetic (cheaper division by a constant) for what fits, as ts, dur
 * and worker numbers nearly always do. */
static inline char *put_u32(char *p, uint32_t v) {
  unsigned n = decimal_digits32(v);
  char *q = p + n;
  while (v >= 100) {
    unsigned i = (v % 100) * 2;
    v /= 100;
    q -= 2;
    q[0] = digit_pairs[i];
    q[1] = digit_pairs[i + 1];
  }
  if (v >= 10) {
    q[-2] = digit_pairs[v * 2];
    q[-1] = digit_pairs[v * 2 + 1];
  } else {
    q[-1] = (char)('0' + v);
  }
  return p + n;
}

static inline char *put_u64(char *p, uint64_t v) {
  if (likely(v <= UINT32_MAX))
    return put_u32(p, (uint32_t)v);
  /* high part, then the low nine digits zero-padded */
  p = put_u64(p, v / 1000000000u);
  uint32_t low = (uint32_t)(v % 1000000000u);
  for (int i = 8; i >= 0; i--) {
    p[i] = (char)('0' + low % 10);
    low /= 10;
  }
  return p + 9;
}

/* A thread id: its handle as a JSON string of hex digits, the way
 * swarm_self() values are printed ("%llx"), two digits per step: an odd
 * count starts with a 0. */
static inline char *put_thread(char *p, uint64_t h) {
  unsigned bytes = (unsigned)(71 - __builtin_clzll(h | 1)) / 8;
  p[0] = '"';
  for (unsigned i = bytes; i > 0; i--, h >>= 8)
    memcpy(p + 2 * i - 1, hex_pairs + 2 * (h & 255), 2);
  p[2 * bytes + 1] = '"';
  return p + 2 * bytes + 2;
}

/* ns as microseconds with three decimals */
static inline char *put_us(char *p, uint64_t ns) {
  p = put_u64(p, ns / 1000);
  unsigned frac = (unsigned)(ns % 1000);
  p[0] = '.';
  p[1] = (char)('0' + frac / 100);
  p[2] = digit_pairs[(frac % 100) * 2];
  p[3] = digit_pairs[(frac % 100) * 2 + 1];
  return p + 4;
}

/* An event's literal opening, up to "tid": */
#define EVENT_HEAD(ph, name)                                                   \
  ",\n{\"ph\":\"" ph "\",\"name\":\"" name "\",\"pid\":1,\"tid\":"
static inline __attribute__((always_inline)) char *
event_start(char *p, const char *head, size_t len, int worker, uint64_t ts) {
  p = put_mem(p, head, len);
  p = put_u64(p, (uint64_t)worker);
  p = PUT_LIT(p, ",\"ts\":");
  return put_us(p, ts);
}
#define EVENT(p, ph, name, worker, ts)                                         \
  event_start((p), EVENT_HEAD(ph, name), sizeof(EVENT_HEAD(ph, name)) - 1,     \
              (worker), (ts))

/* One record as one event, at p; room for TEXT_EVENT_MAX bytes. */
static char *format_rec(char *p, int worker, const struct trace_rec *r) {
  switch (r->kind) {
  case TR_RUN:
    p = EVENT(p, "X", "run", worker, ticks_to_ns(r->ts));
    p = PUT_LIT(p, ",\"dur\":");
    p = put_us(p, ticks_to_ns_dur(r->ts, r->b));
    p = PUT_LIT(p, ",\"args\":{\"thread\":");
    p = put_thread(p, r->a);
    return PUT_LIT(p, "}}");
  case TR_SLEEP:
    p = EVENT(p, "X", "sleep", worker, ticks_to_ns(r->ts));
    p = PUT_LIT(p, ",\"dur\":");
    p = put_us(p, ticks_to_ns_dur(r->ts, r->b));
    return PUT_LIT(p, "}");
  case TR_SPAWN:
    p = EVENT(p, "i", "spawn", worker, ticks_to_ns(r->ts));
    p = PUT_LIT(p, ",\"args\":{\"thread\":");
    p = put_thread(p, r->a);
    p = PUT_LIT(p, ",\"child\":");
    p = put_thread(p, r->b);
    return PUT_LIT(p, "}}");
  case TR_PARK:
  case TR_READY: {
    const char *reason = r->reason < SWARM_PARK_REASONS
                             ? trace_reason_names[r->reason]
                             : "other";
    if (r->kind == TR_PARK)
      p = EVENT(p, "i", "park", worker, ticks_to_ns(r->ts));
    else
      p = EVENT(p, "i", "ready", worker, ticks_to_ns(r->ts));
    p = PUT_LIT(p, ",\"args\":{\"thread\":");
    p = put_thread(p, r->a);
    p = PUT_LIT(p, ",\"reason\":\"");
    p = put_mem(p, reason, strlen(reason));
    return PUT_LIT(p, "\"}}");
  }
  case TR_STEAL:
    p = EVENT(p, "i", "steal", worker, ticks_to_ns(r->ts));
    p = PUT_LIT(p, ",\"args\":{\"thread\":");
    p = put_thread(p, r->a);
    p = PUT_LIT(p, ",\"victim\":");
    p = put_u64(p, r->b);
    return PUT_LIT(p, "}}");
  default:
    return p;
  }
}

/* Formats records [0, n) of `worker` into the JSON file; under lock. */
/* The metadata naming worker i's track. Spare workers (monitor.c) get
 * theirs when their first records are written, so a trace shows only the
 * spares that ran something. */
static char *put_track_name(char *p, int i) {
  p = EVENT(p, "M", "thread_name", i, 0);
  p = PUT_LIT(p, ",\"args\":{\"name\":\"worker ");
  p = put_u64(p, (uint64_t)i);
  if (i >= trace_file.nworkers)
    p = PUT_LIT(p, " (spare)");
  p = PUT_LIT(p, "\"}}");
  p = EVENT(p, "M", "thread_sort_index", i, 0);
  p = PUT_LIT(p, ",\"args\":{\"sort_index\":");
  p = put_u64(p, (uint64_t)i);
  p = PUT_LIT(p, "}}");
  return p;
}

static void write_records(int worker, const struct trace_rec *recs,
                          uint32_t n) {
  if (trace_file.closed || trace_file.fd < 0)
    return;
  if (trace_file.proto) {
    for (uint32_t i = 0; i < n; i++) {
      const struct trace_rec *r = &recs[i];
      bool slice = r->kind == TR_RUN || r->kind == TR_SLEEP;
      proto_record(worker, r->kind, r->reason, ticks_to_ns(r->ts),
                   slice ? ticks_to_ns(r->ts + r->b) : 0, r->a, r->b);
    }
    trace_file.written += n;
    return;
  }
  char *text = trace_file.text, *p = text + trace_file.len;
  int spare = worker - trace_file.nworkers;
  if (n && spare >= 0 && spare < 64 &&
      !(trace_file.spares_named & ((uint64_t)1 << spare))) {
    trace_file.spares_named |= (uint64_t)1 << spare;
    if ((size_t)(p - text) + 2 * TEXT_EVENT_MAX > TEXT_CAP) {
      trace_file.len = (size_t)(p - text);
      text_flush();
      p = text;
    }
    p = put_track_name(p, worker);
  }
  for (uint32_t i = 0; i < n; i++) {
    if ((size_t)(p - text) + TEXT_EVENT_MAX > TEXT_CAP) {
      trace_file.len = (size_t)(p - text);
      text_flush();
      p = text;
    }
    p = format_rec(p, worker, &recs[i]);
  }
  trace_file.written += n;
  trace_file.len = (size_t)(p - text);
}

/* A full buffer goes to the spill file as it is, binary: formatting JSON
 * costs ~10 times the write and would stall this worker — and stretch the
 * slice it is recording — for milliseconds. The JSON is made when the trace
 * closes. Without a spill file it is formatted now. */
void trace_flush_full(struct trace_buf *b) {
  spin_lock(&trace_file.lock);
  if (!trace_file.closed && trace_file.fd >= 0) {
    if (trace_file.spill_fd >= 0) {
      struct spill_chunk h = {b->worker, b->count};
      if (write_all(trace_file.spill_fd, &h, sizeof h))
        write_all(trace_file.spill_fd, b->recs,
                  sizeof(struct trace_rec) * b->count);
    } else {
      write_records(b->worker, b->recs, b->count);
      text_flush();
    }
  }
  __atomic_store_n(&b->count, 0, __ATOMIC_RELEASE);
  spin_unlock(&trace_file.lock);
}

static bool read_all(int fd, void *buf, size_t len) {
  char *p = buf;
  while (len > 0) {
    long n = sys_read(fd, p, len);
    if (n == -EINTR)
      continue;
    if (n <= 0)
      return false;
    p += n;
    len -= (size_t)n;
  }
  return true;
}

/* The protobuf writer's first pass: threads that park or are stolen
 * resume elsewhere later, so their first slice must name them. */
static void mark_records(int worker, const struct trace_rec *recs, uint32_t n) {
  (void)worker;
  for (uint32_t i = 0; i < n; i++)
    if (recs[i].kind == TR_PARK || recs[i].kind == TR_STEAL)
      proto_mark(recs[i].a);
}

/* Gives the spill file's chunks to fn, in the order they were written (so
 * each worker's records stay in order); under lock. */
static void spill_read(int fd,
                       void (*fn)(int, const struct trace_rec *, uint32_t)) {
  enum { PIECE = 4096 };
  struct trace_rec *recs = malloc(sizeof *recs * PIECE);
  struct spill_chunk h;
  if (recs && lseek(fd, 0, SEEK_SET) == 0) {
    while (!trace_file.closed && read_all(fd, &h, sizeof h)) {
      for (uint32_t done = 0; done < h.n;) {
        uint32_t k = h.n - done < PIECE ? h.n - done : PIECE;
        if (!read_all(fd, recs, sizeof *recs * k)) {
          h.n = done; /* a short spill: keep what was read */
          break;
        }
        fn(h.worker, recs, k);
        done += k;
      }
    }
  }
  free(recs);
}

/* Formats the spill file's records into the trace and closes it. */
static void spill_drain(void) {
  int fd = trace_file.spill_fd;
  trace_file.spill_fd = -1;
  if (fd < 0)
    return;
  spill_read(fd, write_records);
  sys_close(fd);
}

/* An unlinked file next to the trace (same file system, and gone with the
 * process whatever happens). -1 when none can be made. */
static int spill_open(const char *path) {
  size_t n = strlen(path);
  char *tmpl = malloc(n + sizeof ".spill-XXXXXX");
  if (!tmpl)
    return -1;
  memcpy(tmpl, path, n);
  memcpy(tmpl + n, ".spill-XXXXXX", sizeof ".spill-XXXXXX");
  int fd = mkostemp(tmpl, O_CLOEXEC);
  if (fd >= 0)
    unlink(tmpl);
  free(tmpl);
  return fd;
}

/* ---- lifecycle ---- */

static void close_locked(void) {
  if (trace_file.fd < 0)
    return;
  spill_drain(); /* a trace left open by an earlier run */
  if (trace_file.proto) {
    proto_close();
  } else if (!trace_file.closed) {
    if (trace_file.len + 512 > TEXT_CAP)
      text_flush();
    char *p = trace_file.text + trace_file.len;
    p = PUT_LIT(p, "\n],\n\"displayTimeUnit\":\"ns\",\n\"otherData\":{"
                   "\"runtime\":\"swarm\",\"clock\":\"");
    if (trace_tsc)
      p = PUT_LIT(p,
                  "tsc, calibrated against CLOCK_MONOTONIC\",\"ns_per_tick\":");
    else
      p = PUT_LIT(p, "CLOCK_MONOTONIC\",\"ns_per_tick\":");
    p += snprintf(p, 32, "%.6f", clock_map.ns_per_tick);
    p = PUT_LIT(p, ",\"workers\":");
    p = put_u64(p, (uint64_t)trace_file.nworkers);
    p = PUT_LIT(p, ",\"events\":");
    p = put_u64(p, trace_file.written);
    p = PUT_LIT(p, "}}\n");
    trace_file.len = (size_t)(p - trace_file.text);
    text_flush();
  }
  trace_file.closed = true;
  sys_close(trace_file.fd);
  trace_file.fd = -1;
}

/* Flushes every worker's records and closes the file. `all_stopped`: no
 * other worker runs (swarm_finalize), so buffers may be freed. */
static void stop(bool all_stopped) {
  /* Our own open slice only (before the lock: it may flush a full buffer) */
  struct worker *self = worker_current();
  if (self && self->trace)
    trace_switch(self->trace, NULL);
  spin_lock(&trace_file.lock);
  if (trace_file.fd < 0) {
    spin_unlock(&trace_file.lock);
    return;
  }
  uint32_t counts[trace_file.nslots > 0 ? trace_file.nslots : 1];
  for (int i = 0; i < trace_file.nslots && swarm_rt.workers; i++) {
    struct trace_buf *b = swarm_rt.workers[i].trace;
    counts[i] = b ? __atomic_load_n(&b->count, __ATOMIC_ACQUIRE) : 0;
  }
  if (trace_file.proto) { /* the first pass: which threads resume elsewhere */
    if (trace_file.spill_fd >= 0)
      spill_read(trace_file.spill_fd, mark_records);
    for (int i = 0; i < trace_file.nslots && swarm_rt.workers; i++)
      if (swarm_rt.workers[i].trace)
        mark_records(i, swarm_rt.workers[i].trace->recs, counts[i]);
  }
  spill_drain();
  for (int i = 0; i < trace_file.nslots && swarm_rt.workers; i++) {
    struct trace_buf *b = swarm_rt.workers[i].trace;
    if (!b)
      continue;
    uint32_t n = counts[i];
    write_records(b->worker, b->recs, n);
    if (all_stopped)
      b->count = 0;
  }
  close_locked();
  if (all_stopped) {
    for (int i = 0; i < trace_file.nslots && swarm_rt.workers; i++) {
      struct trace_buf *b = swarm_rt.workers[i].trace;
      swarm_rt.workers[i].trace = NULL;
      if (b) {
        free(b->recs);
        free(b);
      }
    }
    free(trace_file.text);
    trace_file.text = NULL;
  }
  spin_unlock(&trace_file.lock);
}

void trace_stop(void) {
  stop(true);
}

static void trace_at_exit(void) {
  stop(false);
}

/* Every slot, spare workers included (monitor.c): a spare runs threads, so
 * it needs the same steps as the others (the traced ones record its
 * switches) and a buffer of its own. */
static void trace_sched_switch(struct worker *w, struct swarm_thread *next) {
  if (w->trace)
    trace_switch(w->trace, next);
}

static void set_steps(const struct trace_steps *s) {
  for (int i = 0; i < swarm_rt.nslots; i++) {
    struct worker *w = &swarm_rt.workers[i];
    w->sched_switch = w->trace ? trace_sched_switch : NULL;
    w->after_spawn = s->after_spawn;
    w->after_exit = s->after_exit;
    w->exit_cache_size = s->after_exit ? 0 : swarm_rt.default_stack;
    /* A traced exit records its switch in an after step, so it takes the
     * way that releases its stack (spawn.c). */
    w->stack_keep_room = s->after_exit
                             ? 0
                             : (int32_t)limits_stack_keep_max(
                                   swarm_rt.default_stack + swarm_rt.guard_size,
                                   swarm_rt.nslots, STACK_KEEP_MAX);
    /* SIZE_MAX: swarm_spawn's kept-stack path, which skips after_spawn,
     * is for workers whose spawn has no after step (trace.h). */
    w->spawn_keep_size = s->after_spawn ? SIZE_MAX : swarm_rt.default_stack;
    w->after_park = s->after_park;
  }
}

static uint32_t buffer_records(void) {
  const char *v = getenv("SWARM_TRACE_BUFFER");
  if (!v || !*v)
    return TRACE_DEFAULT_RECORDS;
  char *end;
  errno = 0;
  unsigned long n = strtoul(v, &end, 10);
  if (errno || *end || n < TRACE_MIN_RECORDS || n > (1ul << 26)) {
    fprintf(stderr,
            "swarm: ignoring SWARM_TRACE_BUFFER='%s': expected records per "
            "worker, 16 to 67108864\n",
            v);
    return TRACE_DEFAULT_RECORDS;
  }
  return (uint32_t)n;
}

/* SWARM_TRACE_FORMAT, else the path's suffix: .json is JSON, anything
 * else Perfetto's protobuf. */
static bool format_is_proto(const char *path) {
  const char *v = getenv("SWARM_TRACE_FORMAT");
  if (v && *v) {
    if (!strcmp(v, "json"))
      return false;
    if (!strcmp(v, "perfetto") || !strcmp(v, "proto"))
      return true;
    fprintf(stderr,
            "swarm: ignoring SWARM_TRACE_FORMAT='%s': expected perfetto or "
            "json\n",
            v);
  }
  size_t n = strlen(path);
  return !(n >= 5 && !strcmp(path + n - 5, ".json"));
}

/* The file's opening: the protobuf writer's sequence headers, or the JSON
 * object's start and the workers' track names. */
static bool header_write(void) {
  if (trace_file.proto)
    return proto_open(swarm_rt.nslots, swarm_rt.nworkers, clock_map.epoch_ns,
                      trace_file.spill_fd < 0);
  /* The first event carries no leading comma: the header ends where its
   * comma would be. */
  char *p = trace_file.text;
  p = PUT_LIT(p, "{\"traceEvents\":[\n{\"ph\":\"M\",\"name\":\"process_name\","
                 "\"pid\":1,\"tid\":0,\"ts\":0,\"args\":{\"name\":\"swarm\"}}");
  for (int i = 0; i < swarm_rt.nworkers; i++) {
    if ((size_t)(p - trace_file.text) + TEXT_EVENT_MAX > TEXT_CAP) {
      trace_file.len = (size_t)(p - trace_file.text);
      text_flush();
      p = trace_file.text;
    }
    p = put_track_name(p, i);
  }
  trace_file.len = (size_t)(p - trace_file.text);
  text_flush();
  return true;
}

bool trace_start(const struct trace_steps *plain,
                 const struct trace_steps *traced) {
  set_steps(plain);
  const char *path = getenv("SWARM_TRACE");
  if (!path || !*path)
    return false;
  uint32_t cap = limits_trace_records(swarm_rt.nslots, sizeof(struct trace_rec),
                                      buffer_records(), TRACE_MIN_RECORDS);
  spin_lock(&trace_file.lock);
  if (trace_file.fd >= 0) /* a trace left open by a previous run's exit */
    close_locked();
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    fprintf(stderr, "swarm: SWARM_TRACE='%s': %s; tracing is off\n", path,
            strerror(errno));
    spin_unlock(&trace_file.lock);
    return false;
  }
  free(trace_file.text);
  trace_file.text = malloc(TEXT_CAP);
  bool ok = trace_file.text != NULL;
  for (int i = 0; ok && i < swarm_rt.nslots; i++) {
    struct trace_buf *b = calloc(1, sizeof *b);
    if (b && !(b->recs = malloc(sizeof(struct trace_rec) * cap))) {
      free(b);
      b = NULL;
    }
    if (!b) {
      ok = false;
      break;
    }
    b->cap = cap;
    b->worker = i;
    swarm_rt.workers[i].trace = b;
  }
  if (!ok) {
    fprintf(stderr, "swarm: SWARM_TRACE: out of memory for the buffers; "
                    "tracing is off\n");
    for (int i = 0; i < swarm_rt.nslots; i++) {
      struct trace_buf *b = swarm_rt.workers[i].trace;
      swarm_rt.workers[i].trace = NULL;
      if (b) {
        free(b->recs);
        free(b);
      }
    }
    sys_close(fd);
    spin_unlock(&trace_file.lock);
    return false;
  }
  trace_file.fd = fd;
  /* A pipe or a device (/dev/stdout, a FIFO) gets its JSON as buffers
   * fill: there is no directory to spill into, and a reader may be waiting */
  struct stat st;
  trace_file.spill_fd =
      fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? spill_open(path) : -1;
  trace_file.closed = false;
  trace_file.written = 0;
  trace_file.len = 0;
  trace_file.nworkers = swarm_rt.nworkers;
  trace_file.spares_named = 0;
  trace_file.nslots = swarm_rt.nslots;
  trace_file.proto = format_is_proto(path);
  clock_start();
  tables_init();
  if (!header_write()) {
    fprintf(stderr, "swarm: SWARM_TRACE: out of memory for the writer; the "
                    "trace will be JSON\n");
    trace_file.proto = false;
    header_write();
  }
  if (!trace_file.atexit_done) {
    trace_file.atexit_done = true;
    atexit(trace_at_exit);
  }
  spin_unlock(&trace_file.lock);
  set_steps(traced);
  struct worker *w0 = &swarm_rt.workers[0];
  if (w0->current) /* the main thread runs already */
    trace_switch(w0->trace, w0->current);
  return true;
}
