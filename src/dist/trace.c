/*
 * dist/trace.c — SWARM_TRACE for libswarm-dist: one Perfetto trace of the
 * whole job, in which every rank is a process track ("rank R on <host>")
 * with its worker's track below it.
 *
 * Recording. Each rank appends fixed-size records (core's struct trace_rec,
 * 32 bytes) to a growable array in its own memory: run slices between
 * switches, spawns, parks and readies of joins, steals (with the victim rank
 * and how: RMA or message, same node or remote), migrations, spawn_on and
 * the scheduler's starts of roots and remote spawns. Timestamps are the
 * rank's CLOCK_MONOTONIC in ns.
 *
 * Clocks. At swarm_dist_init, after a barrier, rank 0 exchanges timestamps
 * with every other rank in turn (Cristian's method: 16 round trips, the
 * shortest kept): offset[r] = t_r - (t0 + t1) / 2, accurate to half that
 * round trip. Rank 0 keeps the offsets; no other rank needs them.
 *
 * One file, written by rank 0 at swarm_dist_finalize: every rank sends its
 * records to rank 0 over MPI (a header, then chunks of at most 1 Mi
 * records), which feeds them, rank by rank, to core's Perfetto writer
 * (trace_proto.c) and streams the packets to the file. So no rank but 0
 * touches the file system (nodes need not share one) and rank 0 holds one
 * chunk at a time, not the whole job's records.
 *
 * Zero cost when off. The spawn and the exit fast path (sched.c) call
 * their switch through dist->arch_spawn and dist->resume_plain, which
 * swarm_dist_sched_steps points at traced twins only when tracing is
 * on; everything else (the scheduler loop, steals, joins that suspend,
 * spawn_on) tests dist->trace_on in DIST_TRACE.
 *
 * Invariants: records are appended only by the rank's main thread (the
 * progress thread records nothing); slice_handle is the thread whose run
 * slice is open (0: the scheduler runs); the file is open only on rank 0,
 * and only while dist->trace_on.
 */
#include "dist_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "core/trace.h"

#define SYNC_ROUNDS 16
#define CHUNK ((size_t)1 << 20) /* records per message: 32 MiB */
#define TAG_SYNC 81
#define TAG_HDR 82
#define TAG_RECS 83

static struct {
  struct trace_rec *recs;
  size_t n, cap;
  uint64_t dropped; /* records lost to a failed allocation */
  uint64_t slice_handle, slice_start;
  MPI_Comm comm;
  int fd;          /* rank 0 */
  int64_t *offset; /* rank 0: rank r's clock minus rank 0's, ns */
  uint64_t *error; /* rank 0: half the best round trip, ns */
  uint64_t epoch;  /* rank 0: the trace's time 0, its clock */
  char path[4096];
} tr = {.fd = -1};

struct rank_hdr {
  uint64_t n, dropped;
  char host[MPI_MAX_PROCESSOR_NAME];
};

static void put(uint16_t kind, uint64_t ts, uint64_t a, uint64_t b,
                uint16_t reason) {
  if (tr.n == tr.cap) {
    size_t cap = tr.cap ? 2 * tr.cap : 65536;
    struct trace_rec *r = realloc(tr.recs, cap * sizeof *r);
    if (!r) {
      tr.dropped++;
      return;
    }
    tr.recs = r;
    tr.cap = cap;
  }
  tr.recs[tr.n++] = (struct trace_rec){ts, a, b, kind, reason, 0};
}

static void switch_at(uint64_t now, uint64_t next) {
  if (tr.slice_handle)
    put(TR_RUN, tr.slice_start, tr.slice_handle, now - tr.slice_start, 0);
  tr.slice_handle = next;
  tr.slice_start = now;
}

void swarm_dist_trace_switch(uint64_t next) {
  switch_at(dist_now_ns(), next);
}

void swarm_dist_trace_spawn(uint64_t parent, uint64_t child) {
  uint64_t now = dist_now_ns();
  put(TR_SPAWN, now, parent, child, 0);
  switch_at(now, child);
}

void swarm_dist_trace_start(uint64_t thread) {
  uint64_t now = dist_now_ns();
  put(TR_START, now, thread, 0, 0);
  switch_at(now, thread);
}

void swarm_dist_trace_park(uint64_t thread) {
  put(TR_PARK, dist_now_ns(), thread, 0, SWARM_PARK_JOIN);
}

void swarm_dist_trace_ready(uint64_t thread) {
  put(TR_READY, dist_now_ns(), thread, 0, SWARM_PARK_JOIN);
}

void swarm_dist_trace_migrate(uint64_t thread) {
  put(TR_MIGRATE, dist_now_ns(), thread, (uint64_t)dist_handle_rank(thread), 0);
}

void swarm_dist_trace_spawn_on(uint64_t thread, int rank) {
  put(TR_SPAWN_ON, dist_now_ns(), thread, (uint64_t)rank, 0);
}

void swarm_dist_trace_steal(uint64_t thread, int victim, int by_msg) {
  int node = dist->n_nodes <= 1;
  for (int i = 0; i < dist->n_node_peers && !node; i++)
    node = dist->node_peers[i] == victim;
  uint16_t kind = by_msg
                      ? (node ? TRACE_STEAL_MSG_NODE : TRACE_STEAL_MSG_REMOTE)
                      : (node ? TRACE_STEAL_RMA_NODE : TRACE_STEAL_RMA_REMOTE);
  put(TR_STEAL, dist_now_ns(), thread, (uint64_t)victim, kind);
}

/* ---- the file (rank 0): what trace_proto.c writes through ---- */

void trace_file_write(const void *buf, size_t len) {
  const char *p = buf;
  while (len > 0 && tr.fd >= 0) {
    ssize_t k = write(tr.fd, p, len);
    if (k < 0 && errno == EINTR)
      continue;
    if (k <= 0) {
      fprintf(stderr, "swarm-dist: writing the trace %s: %s\n", tr.path,
              k < 0 ? strerror(errno) : "short write");
      close(tr.fd);
      tr.fd = -1;
      return;
    }
    p += k;
    len -= (size_t)k;
  }
}

/* ---- clocks ---- */

static void clock_sync(void) {
  MPI_Barrier(tr.comm);
  for (int r = 1; r < dist->nranks; r++) {
    if (dist->rank == 0) {
      uint64_t best = UINT64_MAX;
      for (int k = 0; k < SYNC_ROUNDS; k++) {
        uint64_t t0 = dist_now_ns(), tr_ns;
        MPI_Send(&t0, 1, MPI_UINT64_T, r, TAG_SYNC, tr.comm);
        MPI_Recv(&tr_ns, 1, MPI_UINT64_T, r, TAG_SYNC, tr.comm,
                 MPI_STATUS_IGNORE);
        uint64_t t1 = dist_now_ns();
        if (t1 - t0 < best) {
          best = t1 - t0;
          tr.offset[r] = (int64_t)(tr_ns - (t0 + (t1 - t0) / 2));
        }
      }
      tr.error[r] = best / 2;
    } else if (dist->rank == r) {
      for (int k = 0; k < SYNC_ROUNDS; k++) {
        uint64_t t;
        MPI_Recv(&t, 1, MPI_UINT64_T, 0, TAG_SYNC, tr.comm, MPI_STATUS_IGNORE);
        t = dist_now_ns();
        MPI_Send(&t, 1, MPI_UINT64_T, 0, TAG_SYNC, tr.comm);
      }
    }
  }
  tr.epoch = dist_now_ns();
}

void swarm_dist_trace_init(void) {
  int on = 0;
  if (dist->rank == 0) {
    const char *path = getenv("SWARM_TRACE");
    const char *fmt = getenv("SWARM_TRACE_FORMAT");
    if (path && *path) {
      snprintf(tr.path, sizeof tr.path, "%s", path);
      size_t n = strlen(path);
      if ((fmt && strcmp(fmt, "json") == 0) ||
          (n > 5 && strcmp(path + n - 5, ".json") == 0))
        fprintf(stderr,
                "swarm-dist: SWARM_TRACE: a job's trace is "
                "Perfetto's protobuf only (tools/swarm-trace "
                "--to-json converts it); writing that to %s\n",
                path);
      tr.fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
      if (tr.fd < 0)
        fprintf(stderr, "swarm-dist: SWARM_TRACE=%s: %s; running untraced\n",
                path, strerror(errno));
      tr.offset = calloc((size_t)dist->nranks, sizeof *tr.offset);
      tr.error = calloc((size_t)dist->nranks, sizeof *tr.error);
      on = tr.fd >= 0 && tr.offset && tr.error;
    }
  }
  MPI_Bcast(&on, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (!on) {
    free(tr.offset);
    free(tr.error);
    tr.offset = NULL;
    tr.error = NULL;
    return;
  }
  MPI_Comm_dup(MPI_COMM_WORLD, &tr.comm);
  clock_sync();
  dist->trace_on = 1;
}

/* ---- gathering and writing (collective, at finalize) ---- */

/* Rank r's records [0, n) into the trace: its clock moved onto rank 0's. */
static void write_recs(int r, const struct trace_rec *recs, size_t n) {
  int64_t shift = tr.offset[r] + (int64_t)tr.epoch;
  for (size_t i = 0; i < n; i++) {
    const struct trace_rec *x = &recs[i];
    int64_t ts = (int64_t)x->ts - shift;
    uint64_t t = ts > 0 ? (uint64_t)ts : 0, end = t;
    if (x->kind == TR_RUN || x->kind == TR_SLEEP)
      end = t + x->b;
    proto_record(0, x->kind, x->reason, t, end, x->a, x->b);
  }
}

static void write_rank(int r, const struct rank_hdr *h, struct trace_rec *buf) {
  char name[MPI_MAX_PROCESSOR_NAME + 32];
  snprintf(name, sizeof name, "rank %d on %s", r, h->host);
  if (!proto_open_process(1, 1, tr.epoch, false, (uint32_t)r + 1, name))
    fprintf(stderr, "swarm-dist: trace: out of memory for rank %d\n", r);
  if (r == 0) {
    write_recs(0, tr.recs, tr.n);
  } else {
    for (uint64_t done = 0; done < h->n;) {
      size_t k = h->n - done < CHUNK ? (size_t)(h->n - done) : CHUNK;
      MPI_Recv(buf, (int)(k * sizeof *buf), MPI_BYTE, r, TAG_RECS, tr.comm,
               MPI_STATUS_IGNORE);
      write_recs(r, buf, k);
      done += k;
    }
  }
  proto_close();
}

void swarm_dist_trace_finish(void) {
  if (!dist->trace_on)
    return;
  dist->trace_on = 0;
  if (tr.slice_handle)
    swarm_dist_trace_switch(0);
  struct rank_hdr h = {tr.n, tr.dropped, {0}};
  snprintf(h.host, sizeof h.host, "%s", dist->node_name);
  if (dist->rank != 0) {
    MPI_Send(&h, (int)sizeof h, MPI_BYTE, 0, TAG_HDR, tr.comm);
    for (size_t done = 0; done < tr.n; done += CHUNK) {
      size_t k = tr.n - done < CHUNK ? tr.n - done : CHUNK;
      MPI_Send(tr.recs + done, (int)(k * sizeof *tr.recs), MPI_BYTE, 0,
               TAG_RECS, tr.comm);
    }
  } else {
    struct trace_rec *buf = NULL;
    uint64_t dropped = 0, total = 0, err = 0, off = 0;
    for (int r = 0; r < dist->nranks; r++) {
      struct rank_hdr rh = h;
      if (r > 0)
        MPI_Recv(&rh, (int)sizeof rh, MPI_BYTE, r, TAG_HDR, tr.comm,
                 MPI_STATUS_IGNORE);
      if (r > 0 && rh.n && !buf && !(buf = malloc(CHUNK * sizeof *buf)))
        swarm_dist_fatal("out of memory gathering the trace");
      write_rank(r, &rh, buf);
      dropped += rh.dropped;
      total += rh.n;
      err = tr.error[r] > err ? tr.error[r] : err;
      uint64_t o = (uint64_t)llabs(tr.offset[r]);
      off = o > off ? o : off;
    }
    free(buf);
    if (tr.fd >= 0 && close(tr.fd) != 0)
      fprintf(stderr, "swarm-dist: closing the trace %s: %s\n", tr.path,
              strerror(errno));
    tr.fd = -1;
    if (dropped)
      fprintf(stderr,
              "swarm-dist: trace %s lacks %llu events (out of "
              "memory while recording)\n",
              tr.path, (unsigned long long)dropped);
    const char *stats = getenv("SWARM_STATS");
    if (stats && *stats && strcmp(stats, "0") != 0)
      fprintf(stderr,
              "swarm-dist: trace %s: %d ranks, %llu events, clocks aligned "
              "to rank 0's within %.1f us (largest offset applied %.1f "
              "us)\n",
              tr.path, dist->nranks, (unsigned long long)total, err / 1e3,
              off / 1e3);
    free(tr.offset);
    free(tr.error);
  }
  free(tr.recs);
  MPI_Comm_free(&tr.comm);
  memset(&tr, 0, sizeof tr);
  tr.fd = -1;
}
