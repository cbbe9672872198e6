/*
 * core/trace.c — the trace file: opening it at swarm_init when SWARM_TRACE
 * names one, turning workers' binary records into Chrome trace event JSON
 * (one object, {"traceEvents": [...], ...}, which Perfetto and
 * chrome://tracing open), and closing it at swarm_finalize or at exit.
 * What is recorded, and why tracing off costs nothing, is in trace.h.
 *
 * Invariants kept here:
 *  - The file is written only under trace_file.lock, by the owner of a full
 *    buffer or by whoever closes the trace; events of one worker reach the
 *    file in the order they were recorded (a worker's buffer is written
 *    whole before it is emptied).
 *  - Once closed, the trace writes nothing more: a worker whose buffer fills
 *    after the exit flush (its program is exiting under it) empties it.
 *  - A worker's buffer is read by someone else only at exit, up to the
 *    count its owner last published with release; records below it are
 *    complete.
 * Timestamps are ns of CLOCK_MONOTONIC since trace_start, written as the
 * format's microseconds with three decimals. Formatting is by hand, not
 * printf: a full buffer is written on the program's time (docs/trace.md).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/core.h"
#include "core/trace.h"
#include "os/os.h"

#define TRACE_DEFAULT_RECORDS 65536u /* 2 MiB per worker */
#define TRACE_MIN_RECORDS 16u
#define TEXT_CAP ((size_t)256 * 1024)
#define TEXT_EVENT_MAX 256 /* the longest event we format, with margin */

uint64_t trace_epoch_ns;

static struct {
  pthread_mutex_t lock;
  int fd;         /* -1: no trace open */
  bool closed;    /* the trailer is written; drop whatever comes */
  bool any_event; /* an event was written: the next needs a comma */
  bool atexit_done;
  int nworkers;
  uint64_t written; /* events written, for the trailer */
  char *text;       /* TEXT_CAP bytes, used under lock */
  size_t len;
} trace_file = {.lock = PTHREAD_MUTEX_INITIALIZER, .fd = -1};

static const char *const reason_names[SWARM_PARK_REASONS] = {
    "other", "join",  "mutex", "cond",  "rwlock", "sem",      "barrier",
    "once",  "sleep", "io",    "yield", "remote", "finalize",
};

/* ---- text output (under lock) ---- */

static void text_flush(void) {
  size_t off = 0;
  while (off < trace_file.len) {
    ssize_t n =
        write(trace_file.fd, trace_file.text + off, trace_file.len - off);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      static const char msg[] = "swarm: SWARM_TRACE: write failed; the "
                                "trace file is incomplete\n";
      os_write_stderr(msg, sizeof msg - 1);
      trace_file.closed = true;
      break;
    }
    off += (size_t)n;
  }
  trace_file.len = 0;
}

static inline void put_str(const char *s) {
  size_t n = strlen(s);
  memcpy(trace_file.text + trace_file.len, s, n);
  trace_file.len += n;
}

static inline void put_u64(uint64_t v) {
  char tmp[24];
  int n = 0;
  do {
    tmp[n++] = (char)('0' + v % 10);
    v /= 10;
  } while (v);
  char *p = trace_file.text + trace_file.len;
  for (int i = 0; i < n; i++)
    p[i] = tmp[n - 1 - i];
  trace_file.len += (size_t)n;
}

/* ns as microseconds with three decimals */
static inline void put_us(uint64_t ns) {
  put_u64(ns / 1000);
  char *p = trace_file.text + trace_file.len;
  unsigned frac = (unsigned)(ns % 1000);
  p[0] = '.';
  p[1] = (char)('0' + frac / 100);
  p[2] = (char)('0' + frac / 10 % 10);
  p[3] = (char)('0' + frac % 10);
  trace_file.len += 4;
}

static void event_begin(const char *ph, const char *name, int worker,
                        uint64_t ts) {
  if (trace_file.len + TEXT_EVENT_MAX > TEXT_CAP)
    text_flush();
  put_str(trace_file.any_event ? ",\n{\"ph\":\"" : "\n{\"ph\":\"");
  trace_file.any_event = true;
  trace_file.written++;
  put_str(ph);
  put_str("\",\"name\":\"");
  put_str(name);
  put_str("\",\"pid\":1,\"tid\":");
  put_u64((uint64_t)worker);
  put_str(",\"ts\":");
  put_us(ts);
}

static void format_rec(int worker, const struct trace_rec *r) {
  const char *reason =
      r->reason < SWARM_PARK_REASONS ? reason_names[r->reason] : "other";
  switch (r->kind) {
  case TR_RUN:
    event_begin("X", "run", worker, r->ts);
    put_str(",\"dur\":");
    put_us(r->b);
    put_str(",\"args\":{\"thread\":");
    put_u64(r->a);
    put_str("}}");
    break;
  case TR_SLEEP:
    event_begin("X", "sleep", worker, r->ts);
    put_str(",\"dur\":");
    put_us(r->b);
    put_str("}");
    break;
  case TR_SPAWN:
    event_begin("i", "spawn", worker, r->ts);
    put_str(",\"s\":\"t\",\"args\":{\"thread\":");
    put_u64(r->a);
    put_str(",\"child\":");
    put_u64(r->b);
    put_str("}}");
    break;
  case TR_PARK:
  case TR_READY:
    event_begin("i", r->kind == TR_PARK ? "park" : "ready", worker, r->ts);
    put_str(",\"s\":\"t\",\"args\":{\"thread\":");
    put_u64(r->a);
    put_str(",\"reason\":\"");
    put_str(reason);
    put_str("\"}}");
    break;
  case TR_STEAL:
  case TR_REMOTE_STEAL:
    event_begin("i", r->kind == TR_STEAL ? "steal" : "remote_steal", worker,
                r->ts);
    put_str(",\"s\":\"t\",\"args\":{\"thread\":");
    put_u64(r->a);
    put_str(r->kind == TR_STEAL ? ",\"victim\":" : ",\"rank\":");
    put_u64(r->b);
    put_str("}}");
    break;
  default:
    break;
  }
}

/* Writes b's records [0, n) to the file; under lock. */
static void write_records(struct trace_buf *b, uint32_t n) {
  if (trace_file.closed || trace_file.fd < 0)
    return;
  for (uint32_t i = 0; i < n; i++)
    format_rec(b->worker, &b->recs[i]);
  text_flush();
}

void trace_flush_full(struct trace_buf *b) {
  pthread_mutex_lock(&trace_file.lock);
  write_records(b, b->count);
  __atomic_store_n(&b->count, 0, __ATOMIC_RELEASE);
  pthread_mutex_unlock(&trace_file.lock);
}

/* ---- the remote-steal hook ---- */

void swarm_trace_remote_steal(int victim_rank, struct swarm_thread *thread) {
  struct worker *w = worker_current();
  if (w)
    TRACE_EVENT(w, TR_REMOTE_STEAL, trace_id(thread), (uint64_t)victim_rank, 0);
}

/* ---- lifecycle ---- */

static void close_locked(void) {
  if (trace_file.fd < 0)
    return;
  if (!trace_file.closed) {
    if (trace_file.len + 512 > TEXT_CAP)
      text_flush();
    put_str("\n],\n\"displayTimeUnit\":\"ns\",\n\"otherData\":{\"runtime\":"
            "\"swarm\",\"clock\":\"CLOCK_MONOTONIC\",\"workers\":");
    put_u64((uint64_t)trace_file.nworkers);
    put_str(",\"events\":");
    put_u64(trace_file.written);
    put_str("}}\n");
    text_flush();
  }
  trace_file.closed = true;
  close(trace_file.fd);
  trace_file.fd = -1;
}

/* Flushes every worker's records and closes the file. `all_stopped`: no
 * other worker runs (swarm_finalize), so buffers may be freed. */
static void stop(bool all_stopped) {
  /* Our own open slice only (before the lock: it may flush a full buffer) */
  struct worker *self = worker_current();
  if (self && self->trace)
    trace_switch(self->trace, NULL);
  pthread_mutex_lock(&trace_file.lock);
  if (trace_file.fd < 0) {
    pthread_mutex_unlock(&trace_file.lock);
    return;
  }
  for (int i = 0; i < trace_file.nworkers && swarm_rt.workers; i++) {
    struct trace_buf *b = swarm_rt.workers[i].trace;
    if (!b)
      continue;
    uint32_t n = __atomic_load_n(&b->count, __ATOMIC_ACQUIRE);
    write_records(b, n);
    if (all_stopped)
      b->count = 0;
  }
  close_locked();
  if (all_stopped) {
    for (int i = 0; i < trace_file.nworkers && swarm_rt.workers; i++) {
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
  pthread_mutex_unlock(&trace_file.lock);
}

void trace_stop(void) {
  stop(true);
}

static void trace_at_exit(void) {
  stop(false);
}

static void set_steps(const struct trace_steps *s) {
  for (int i = 0; i < swarm_rt.nworkers; i++) {
    struct worker *w = &swarm_rt.workers[i];
    w->after_spawn = s->after_spawn;
    w->after_exit = s->after_exit;
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

bool trace_start(const struct trace_steps *plain,
                 const struct trace_steps *traced) {
  set_steps(plain);
  const char *path = getenv("SWARM_TRACE");
  if (!path || !*path)
    return false;
  uint32_t cap = buffer_records();
  pthread_mutex_lock(&trace_file.lock);
  if (trace_file.fd >= 0) /* a trace left open by a previous run's exit */
    close_locked();
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    fprintf(stderr, "swarm: SWARM_TRACE='%s': %s; tracing is off\n", path,
            strerror(errno));
    pthread_mutex_unlock(&trace_file.lock);
    return false;
  }
  free(trace_file.text);
  trace_file.text = malloc(TEXT_CAP);
  bool ok = trace_file.text != NULL;
  for (int i = 0; ok && i < swarm_rt.nworkers; i++) {
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
    for (int i = 0; i < swarm_rt.nworkers; i++) {
      struct trace_buf *b = swarm_rt.workers[i].trace;
      swarm_rt.workers[i].trace = NULL;
      if (b) {
        free(b->recs);
        free(b);
      }
    }
    close(fd);
    pthread_mutex_unlock(&trace_file.lock);
    return false;
  }
  trace_file.fd = fd;
  trace_file.closed = false;
  trace_file.any_event = false;
  trace_file.written = 0;
  trace_file.len = 0;
  trace_file.nworkers = swarm_rt.nworkers;
  trace_epoch_ns = os_now_ns_inline();
  put_str("{\"traceEvents\":[");
  event_begin("M", "process_name", 0, 0);
  put_str(",\"args\":{\"name\":\"swarm\"}}");
  for (int i = 0; i < swarm_rt.nworkers; i++) {
    event_begin("M", "thread_name", i, 0);
    put_str(",\"args\":{\"name\":\"worker ");
    put_u64((uint64_t)i);
    put_str("\"}}");
    event_begin("M", "thread_sort_index", i, 0);
    put_str(",\"args\":{\"sort_index\":");
    put_u64((uint64_t)i);
    put_str("}}");
  }
  trace_file.written -= 1 + 2 * (uint64_t)swarm_rt.nworkers; /* metadata */
  text_flush();
  if (!trace_file.atexit_done) {
    trace_file.atexit_done = true;
    atexit(trace_at_exit);
  }
  pthread_mutex_unlock(&trace_file.lock);
  set_steps(traced);
  struct worker *w0 = &swarm_rt.workers[0];
  if (w0->current) /* the main thread runs already */
    trace_switch(w0->trace, w0->current);
  return true;
}
