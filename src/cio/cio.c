/*
 * cio.c — open/close, hints, views and the two-phase collective read and
 * write of libswarm-cio (include/swarm/cio.h documents the API).
 *
 * One collective call, for every rank:
 *   1. Build the rank's access list: the file blocks its view maps the next
 *      N bytes of its data stream to, in stream order (views are monotonic,
 *      so this is also file order). Allgather (error, first, end): the ranks
 *      agree on failure before any data moves, and learn the accessed range
 *      [gmin, gmax).
 *   2. Split [gmin, gmax) into `naggs` equal file domains, aggregator i
 *      being rank i*P/naggs. Each rank sends each aggregator its blocks in
 *      that aggregator's domain (alltoallv of (offset, length) pairs).
 *   3. Cycle c covers, in every domain, the window [lo_i + c*S, +S) with S =
 *      cb_buffer_size / depth. Both sides walk their sorted block lists with
 *      cursors, so per cycle the sizes of all messages are known without
 *      asking. Read: the I/O thread has already pread the span of the
 *      window's pieces into slot c % depth (reads are queued `depth` cycles
 *      ahead); the aggregator packs each rank's pieces, sends, and queues the
 *      read of cycle c + depth into the freed slot. Write: ranks send pieces
 *      first; the aggregator lays them over its slot and queues the pwrite;
 *      a span with holes was pread into the slot beforehand (queued behind
 *      the pwrite that last used the slot).
 *      That is the exchange by messages. When every rank shares one node
 *      (MPI_Comm_split_type) and depth >= 2, the slots live instead in a
 *      shared-memory segment ("the shared window": POSIX shm mapped by
 *      every rank, shm_segment) and each rank copies its own pieces straight
 *      between its stream and the aggregators' slots, ordered by counters
 *      in the segment (shm_cycles): one memcpy per byte, spread over all ranks,
 * instead of pack + send + receive + unpack with the aggregator in the middle.
 *      The aggregator's own pieces skip the slot: the I/O thread's preadv /
 *      pwritev of the span scatters / gathers them straight to / from its
 *      stream (queue_span).
 *      Hint swarm_cio_shm=0 keeps messages.
 *   4. Drain the I/O thread and allreduce the error, so every rank returns
 *      the same result.
 * Invariants: the rank's MPI calls are all made by the calling thread; the
 * cycle loop runs the same number of iterations on every rank; slot s is
 * touched by the caller only after cio_io_wait_slot(s).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "swarm/cio.h"

#include "cio_internal.h"

#define CIO_TAG 7411

struct swarm_cio_file {
  MPI_Comm comm;
  int rank, nprocs;
  int fd;
  int amode;
  /* hints (equal on every rank) */
  int64_t cb_size;
  int cb_nodes;
  int depth;
  int64_t slot_max; /* swarm_cio_slot_size: cap of one pipeline buffer */
  int shm_hint;     /* swarm_cio_shm: 1 = exchange through a shared window when
                     * possible, 0 = always by messages */
  int one_node;     /* every rank of comm shares this node's memory */
  /* view */
  MPI_Offset disp;
  int64_t esize;
  cio_list_t ftype; /* filetype blocks, relative to one tile's origin */
  int64_t fext, fsize;
  int dense;
  int64_t fp; /* individual file pointer, etypes */
  /* aggregator state, made on first use (agg_ready) */
  int agg_ready;
  int agg_index; /* -1: not an aggregator */
  int64_t slot_size;
  char **slots; /* this aggregator's `depth` slots */
  /* shared-window exchange (agg_setup decides): every aggregator's slots
   * live in one POSIX shared-memory segment that every rank maps
   * (shm_map, shm_len); agg_base[i] is aggregator i's first slot, as mapped
   * here. */
  int shm;
  int agg_rc; /* agg_setup's outcome, kept while agg_ready */
  char *shm_map;
  size_t shm_len;
  char **agg_base;
  /* Before the slots, the segment holds cycle counters (shm_ctl): per
   * aggregator i, ready = the last cycle whose slot i made ready, plus 1,
   * and for every rank r, copied[r] = the last cycle whose pieces r has
   * copied to / from i's slot, plus 1; cycles count on across calls from
   * cycle_base (equal on every rank), so the counters never go back. */
  size_t shm_ctl_bytes;
  int64_t cycle_base;
  cio_io_t io;
};

/* ---- errors ------------------------------------------------------------ */

static __thread char errmsg_buf[512];

int cio_set_error(int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(errmsg_buf, sizeof errmsg_buf, fmt, ap);
  va_end(ap);
  return code;
}

const char *swarm_cio_errmsg(void) {
  return errmsg_buf;
}

static int errno_class(int e) {
  switch (e) {
  case ENOENT:
  case ENOTDIR:
    return MPI_ERR_NO_SUCH_FILE;
  case EACCES:
  case EPERM:
    return MPI_ERR_ACCESS;
  case EEXIST:
    return MPI_ERR_FILE_EXISTS;
  case ENOSPC:
    return MPI_ERR_NO_SPACE;
  case EDQUOT:
    return MPI_ERR_QUOTA;
  case EROFS:
    return MPI_ERR_READ_ONLY;
  case ENAMETOOLONG:
  case EISDIR:
    return MPI_ERR_BAD_FILE;
  case ENOMEM:
    return MPI_ERR_NO_MEM;
  default:
    return MPI_ERR_IO;
  }
}

/* ---- collectives that give the core away --------------------------------
 * Every collective of this file is started non-blocking and completed by
 * quiet_wait, which gives the waiting rank's core away: to the I/O threads
 * and to the ranks that have not arrived yet. MPI libraries poll while they
 * wait (MPICH never yields; Open MPI yields only when it knows it is
 * oversubscribed), and with more ranks and I/O threads than cores (4 + 4 on
 * the 2-core bench machine) a polling rank holds a core for its whole time
 * slice while the rank it waits for cannot run: MPICH's blocking
 * collectives made one open + contiguous read + close of 256 MiB at P = 4
 * take 0.5 s, of which the preads were 0.1 s. quiet_wait first tests with
 * sched_yield between tries (a collective usually completes within
 * microseconds of the last rank's arrival, and a timed sleep costs at least
 * the 50 us timer slack), then naps 20 us at a time. MPI_Comm_split_type,
 * which has no non-blocking form, stays blocking (and is cached). */
static int quiet_wait(MPI_Request *req) {
  int rc = MPI_SUCCESS, done = 0;
  for (int tries = 0; rc == MPI_SUCCESS && !done; tries++) {
    rc = MPI_Test(req, &done, MPI_STATUS_IGNORE);
    if (rc == MPI_SUCCESS && !done) {
      struct timespec nap = {0, 20000};
      if (tries < 64)
        sched_yield();
      else
        nanosleep(&nap, NULL);
    }
  }
  return rc;
}

static int quiet_allreduce(const void *in, void *out, int n, MPI_Datatype t,
                           MPI_Op op, MPI_Comm comm) {
  MPI_Request req;
  int rc = MPI_Iallreduce(in, out, n, t, op, comm, &req);
  return rc == MPI_SUCCESS ? quiet_wait(&req) : rc;
}

/* Every rank learns whether any rank failed. Returns the local code if it
 * failed, else the largest code of another rank (with a message), else
 * MPI_SUCCESS. */
static int agree(MPI_Comm comm, int rc) {
  int any = rc;
  quiet_allreduce(&rc, &any, 1, MPI_INT, MPI_MAX, comm);
  if (rc != MPI_SUCCESS)
    return rc;
  if (any != MPI_SUCCESS)
    return cio_set_error(any,
                         "another rank failed this collective call (error "
                         "class %d); see its swarm_cio_errmsg()",
                         any);
  return MPI_SUCCESS;
}

/* ---- hints ------------------------------------------------------------- */

static int parse_int_hint(MPI_Info info, const char *key, int64_t lo,
                          int64_t hi, int64_t *val) {
  char v[MPI_MAX_INFO_VAL + 1];
  int flag = 0;
  MPI_Info_get(info, key, MPI_MAX_INFO_VAL, v, &flag);
  if (!flag)
    return MPI_SUCCESS;
  char *end;
  errno = 0;
  long long x = strtoll(v, &end, 10);
  while (*end == ' ')
    end++;
  if (errno || end == v || *end || x < lo || x > hi)
    return cio_set_error(MPI_ERR_INFO_VALUE,
                         "hint %s=\"%s\": expected an integer in %lld..%lld",
                         key, v, (long long)lo, (long long)hi);
  *val = x;
  return MPI_SUCCESS;
}

/* Reads the hints in `info` over the current values in *cb, *nodes, *depth,
 * *shm, *slot. */
static int parse_hints(MPI_Info info, int nprocs, int64_t *cb, int *nodes,
                       int *depth, int *shm, int64_t *slot) {
  if (info == MPI_INFO_NULL)
    return MPI_SUCCESS;
  int64_t c = *cb, n = *nodes, d = *depth, m = *shm, z = *slot;
  int rc = parse_int_hint(info, "cb_buffer_size", 1, (int64_t)1 << 40, &c);
  if (rc == MPI_SUCCESS)
    rc = parse_int_hint(info, "cb_nodes", 1, INT_MAX, &n);
  if (rc == MPI_SUCCESS)
    rc = parse_int_hint(info, "swarm_cio_depth", 1, SWARM_CIO_MAX_DEPTH, &d);
  if (rc == MPI_SUCCESS)
    rc = parse_int_hint(info, "swarm_cio_shm", 0, 1, &m);
  if (rc == MPI_SUCCESS)
    rc = parse_int_hint(info, "swarm_cio_slot_size", 1, (int64_t)1 << 40, &z);
  if (rc != MPI_SUCCESS)
    return rc;
  *cb = c;
  *nodes = n > nprocs ? nprocs : (int)n;
  *depth = (int)d;
  *shm = (int)m;
  *slot = z;
  return MPI_SUCCESS;
}

/* Agrees on an error code and checks that the int64 values are equal on every
 * rank (names[i] for the message). */
static int agree_values(MPI_Comm comm, int rc, const int64_t *v, int nv,
                        const char *const *names) {
  int64_t in[1 + 2 * 8], out[1 + 2 * 8];
  in[0] = rc;
  for (int i = 0; i < nv; i++) {
    in[1 + 2 * i] = v[i];
    in[2 + 2 * i] = -v[i];
  }
  quiet_allreduce(in, out, 1 + 2 * nv, MPI_INT64_T, MPI_MAX, comm);
  if (rc != MPI_SUCCESS)
    return rc;
  if (out[0] != MPI_SUCCESS)
    return cio_set_error((int)out[0],
                         "another rank failed this collective call (error "
                         "class %d); see its swarm_cio_errmsg()",
                         (int)out[0]);
  for (int i = 0; i < nv; i++)
    if (out[1 + 2 * i] != -out[2 + 2 * i])
      return cio_set_error(MPI_ERR_NOT_SAME,
                           "%s differs between ranks (%lld here, range "
                           "%lld..%lld)",
                           names[i], (long long)v[i],
                           (long long)-out[2 + 2 * i],
                           (long long)out[1 + 2 * i]);
  return MPI_SUCCESS;
}

/* ---- aggregator state ---------------------------------------------------- */

static int agg_rank(const swarm_cio_file_t fh, int i) {
  return (int)((int64_t)i * fh->nprocs / fh->cb_nodes);
}

/* Local: every rank calls it at the same point (close, or set_view with new
 * hints), after the last collective call's final agreement, so no rank
 * still uses the segment. */
static void agg_free(swarm_cio_file_t fh) {
  if (!fh->agg_ready)
    return;
  if (fh->agg_index >= 0)
    cio_io_stop(&fh->io);
  if (fh->shm) {
    munmap(fh->shm_map, fh->shm_len);
    fh->shm_map = NULL;
    free(fh->agg_base);
    fh->agg_base = NULL;
    fh->shm = 0;
  } else if (fh->slots) {
    for (int s = 0; s < fh->depth; s++)
      free(fh->slots[s]);
  }
  free(fh->slots);
  fh->slots = NULL;
  fh->agg_ready = 0;
}

/* The shared segment of every aggregator's slots, mapped on every rank
 * (collective). Rank 0 creates it under a fresh name and sizes it with
 * posix_fallocate (a full /dev/shm fails here, not with SIGBUS at a page
 * fault in the middle of a copy), the others open the name, and once all
 * have mapped it the name is removed, so nothing outlives the processes.
 * Returns the mapping, or NULL on every rank if any rank failed (the
 * exchange then goes by messages).
 *
 * Why not MPI_Win_allocate_shared, which did this before: MPICH 4.0 took
 * 1.8 ms for it with 2 ranks and 85-100 ms with 4 ranks on 2 cores (its
 * internal collectives poll), per open, against 0.1-0.2 ms for this. The
 * memory-model duty MPI_Win_sync did is done by the release / acquire
 * order of the segment's cycle counters (shm_cycles). */
static char *shm_segment(swarm_cio_file_t fh, size_t len) {
  struct {
    int err;
    char name[64];
  } msg;
  memset(&msg, 0, sizeof msg);
  int fd = -1, err = 0;
  if (fh->rank == 0) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    for (int tries = 0; tries < 8; tries++) {
      snprintf(msg.name, sizeof msg.name, "/swarm-cio.%d.%lx.%d", (int)getpid(),
               (unsigned long)(t.tv_sec * 1000000000L + t.tv_nsec), tries);
      fd = shm_open(msg.name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
      if (fd >= 0 || errno != EEXIST)
        break;
    }
    if (fd < 0)
      msg.err = errno ? errno : EEXIST;
    else if ((msg.err = posix_fallocate(fd, 0, (off_t)len)) != 0)
      shm_unlink(msg.name);
  }
  MPI_Request req;
  if (MPI_Ibcast(&msg, (int)sizeof msg, MPI_BYTE, 0, fh->comm, &req) !=
          MPI_SUCCESS ||
      quiet_wait(&req) != MPI_SUCCESS)
    msg.err = msg.err ? msg.err : EIO;
  if (!msg.err && fh->rank != 0 &&
      (fd = shm_open(msg.name, O_RDWR | O_CLOEXEC, 0)) < 0)
    err = errno;
  char *map = NULL;
  if (!msg.err && !err) {
    map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED) {
      map = NULL;
      err = errno;
    }
  }
  if (fd >= 0)
    close(fd);
  int any = msg.err ? msg.err : err;
  quiet_allreduce(MPI_IN_PLACE, &any, 1, MPI_INT, MPI_MAX, fh->comm);
  if (fh->rank == 0 && !msg.err)
    shm_unlink(msg.name); /* everyone has opened it by now */
  if (any && map) {
    munmap(map, len);
    map = NULL;
  }
  return map;
}

/* Collective: called by every rank at the same point of a collective call,
 * after the ranks agreed that none failed. */
static int agg_setup(swarm_cio_file_t fh) {
  if (fh->agg_ready)
    return fh->agg_rc;
  fh->agg_rc = MPI_SUCCESS;
  fh->agg_index = -1;
  for (int i = 0; i < fh->cb_nodes; i++)
    if (agg_rank(fh, i) == fh->rank)
      fh->agg_index = i;
  /* cb_buffer_size / depth, but at most slot_max: a buffer that fits the
   * caches keeps each cycle's bytes cache-hot between the I/O thread's copy
   * and the ranks' copies, and costs fewer page faults; never more memory
   * than cb_buffer_size. */
  fh->slot_size = (fh->cb_size + fh->depth - 1) / fh->depth;
  if (fh->slot_size > fh->slot_max)
    fh->slot_size = fh->slot_max;
  size_t per_agg = (size_t)fh->slot_size * (size_t)fh->depth;
  char *base = NULL;
  /* Depth 1 keeps messages: the shared cycle loop frees a slot one cycle
   * after its copies, so it needs a second slot to fill meanwhile. */
  fh->shm = fh->shm_hint && fh->one_node && fh->depth >= 2;
  if (fh->shm) {
    /* one 64-byte line per counter: aggregators' and ranks' stores do not
     * share lines; the slots start on a page */
    fh->shm_ctl_bytes =
        ((size_t)fh->cb_nodes * (size_t)(fh->nprocs + 1) * 64 + 4095) &
        ~(size_t)4095;
    fh->shm_len = fh->shm_ctl_bytes + per_agg * (size_t)fh->cb_nodes;
    fh->agg_base = calloc((size_t)fh->cb_nodes, sizeof *fh->agg_base);
    int bad = fh->agg_base == NULL;
    quiet_allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, fh->comm);
    fh->shm_map = bad ? NULL : shm_segment(fh, fh->shm_len);
    if (!fh->shm_map) { /* no shared memory: exchange by messages */
      free(fh->agg_base);
      fh->agg_base = NULL;
      fh->shm = 0;
    } else {
      for (int i = 0; i < fh->cb_nodes; i++)
        fh->agg_base[i] = fh->shm_map + fh->shm_ctl_bytes + (size_t)i * per_agg;
      if (fh->agg_index >= 0)
        base = fh->agg_base[fh->agg_index];
    }
  }
  /* The collective part is done: from here a failure is local, kept in
   * agg_rc (later calls fail too, without repeating the collective part),
   * and agg_free releases what was made. */
  fh->agg_ready = 1;
  if (fh->agg_index >= 0) {
    fh->slots = calloc((size_t)fh->depth, sizeof *fh->slots);
    int ok = fh->slots != NULL;
    for (int s = 0; ok && s < fh->depth; s++)
      ok = (fh->slots[s] = fh->shm ? base + s * fh->slot_size
                                   : malloc((size_t)fh->slot_size)) != NULL;
    int e = ok ? cio_io_start(&fh->io, fh->fd, fh->depth) : ENOMEM;
    if (e) {
      for (int s = 0; !fh->shm && fh->slots && s < fh->depth; s++)
        free(fh->slots[s]);
      free(fh->slots);
      fh->slots = NULL;
      return fh->agg_rc =
                 cio_set_error(errno_class(e),
                               "cannot set up the aggregator (%lld bytes of "
                               "buffer, I/O thread): %s",
                               (long long)fh->cb_size, strerror(e));
    }
  }
  fh->agg_ready = 1;
  return MPI_SUCCESS;
}

/* ---- whether every rank shares this node ---------------------------------
 * MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) answers it, but MPICH 4.0 takes
 * 70-150 ms for it with 4 ranks on 2 cores, more than the whole read of
 * 256 MiB. The answer is cached on the caller's communicator as an
 * attribute (as ROMIO caches its node list), so only the first open on a
 * communicator pays; every rank of it sets the attribute in the same open,
 * so they agree. Not copied to duplicates of that communicator. */
static struct {
  pthread_once_t once;
  int keyval; /* MPI_KEYVAL_INVALID if it could not be made */
} node_cache = {PTHREAD_ONCE_INIT, MPI_KEYVAL_INVALID};

static void node_cache_init(void) {
  if (MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN,
                             &node_cache.keyval, NULL) != MPI_SUCCESS)
    node_cache.keyval = MPI_KEYVAL_INVALID;
}

/* Collective over `dup` unless `comm` holds the cached answer (then on
 * every rank). */
static int all_on_one_node(MPI_Comm comm, MPI_Comm dup, int nprocs) {
  pthread_once(&node_cache.once, node_cache_init);
  void *v = NULL;
  int flag = 0;
  if (node_cache.keyval != MPI_KEYVAL_INVALID &&
      MPI_Comm_get_attr(comm, node_cache.keyval, &v, &flag) == MPI_SUCCESS &&
      flag)
    return (int)((intptr_t)v - 1);
  MPI_Comm node;
  int nnode = 0;
  if (MPI_Comm_split_type(dup, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) ==
      MPI_SUCCESS) {
    MPI_Comm_size(node, &nnode);
    MPI_Comm_free(&node);
  }
  int one = nnode == nprocs;
  if (node_cache.keyval != MPI_KEYVAL_INVALID)
    MPI_Comm_set_attr(comm, node_cache.keyval, (void *)(intptr_t)(1 + one));
  return one;
}

/* ---- open / close -------------------------------------------------------- */

int swarm_cio_open(MPI_Comm comm, const char *path, int amode, MPI_Info info,
                   swarm_cio_file_t *fh) {
  if (fh)
    *fh = NULL;
  if (comm == MPI_COMM_NULL)
    return cio_set_error(MPI_ERR_COMM, "swarm_cio_open: MPI_COMM_NULL");
  int inter = 0;
  MPI_Comm_test_inter(comm, &inter);
  if (inter)
    return cio_set_error(MPI_ERR_COMM,
                         "swarm_cio_open: intercommunicators are not allowed");
  int rank, nprocs;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &nprocs);

  int rc = MPI_SUCCESS;
  int access = amode & (MPI_MODE_RDONLY | MPI_MODE_WRONLY | MPI_MODE_RDWR);
  int64_t cb = SWARM_CIO_DEFAULT_CB_BUFFER_SIZE;
  int nodes = nprocs, depth = SWARM_CIO_DEFAULT_DEPTH, shm = 1;
  int64_t slot = SWARM_CIO_DEFAULT_SLOT_SIZE;
  if (!fh)
    rc = cio_set_error(MPI_ERR_ARG, "swarm_cio_open: fh is NULL");
  else if (!path || !*path)
    rc = cio_set_error(MPI_ERR_BAD_FILE, "swarm_cio_open: empty or NULL path");
  else if (access != MPI_MODE_RDONLY && access != MPI_MODE_WRONLY &&
           access != MPI_MODE_RDWR)
    rc = cio_set_error(MPI_ERR_AMODE, "swarm_cio_open: amode must contain "
                                      "exactly one of MPI_MODE_RDONLY, "
                                      "MPI_MODE_WRONLY, MPI_MODE_RDWR");
  else if (amode & ~(access | MPI_MODE_CREATE | MPI_MODE_EXCL))
    rc = cio_set_error(MPI_ERR_AMODE,
                       "swarm_cio_open: only MPI_MODE_CREATE and "
                       "MPI_MODE_EXCL may accompany the access mode");
  else if (access == MPI_MODE_RDONLY &&
           (amode & (MPI_MODE_CREATE | MPI_MODE_EXCL)))
    rc = cio_set_error(MPI_ERR_AMODE, "swarm_cio_open: MPI_MODE_RDONLY with "
                                      "MPI_MODE_CREATE or MPI_MODE_EXCL");
  if (rc == MPI_SUCCESS)
    rc = parse_hints(info, nprocs, &cb, &nodes, &depth, &shm, &slot);
  static const char *const names[] = {"amode",         "cb_buffer_size",
                                      "cb_nodes",      "swarm_cio_depth",
                                      "swarm_cio_shm", "swarm_cio_slot_size"};
  int64_t vals[6] = {amode, cb, nodes, depth, shm, slot};
  rc = agree_values(comm, rc, vals, 6, names);
  if (rc != MPI_SUCCESS)
    return rc;

  struct swarm_cio_file *f = calloc(1, sizeof *f);
  int e = f ? 0 : ENOMEM;
  if (f) {
    f->fd = -1;
    f->comm = MPI_COMM_NULL;
  }
  int flags = access == MPI_MODE_RDONLY ? O_RDONLY : O_RDWR;
  /* Rank 0 creates the file alone, so MPI_MODE_EXCL fails on at most one
   * rank and nobody races the creation. */
  if (rank == 0 && (amode & MPI_MODE_CREATE) && !e) {
    int cflags = flags | O_CREAT | ((amode & MPI_MODE_EXCL) ? O_EXCL : 0);
    f->fd = open(path, cflags | O_CLOEXEC, 0666);
    if (f->fd < 0)
      e = errno;
  }
  int e0 = e;
  if (amode & MPI_MODE_CREATE) {
    MPI_Request req;
    if (MPI_Ibcast(&e0, 1, MPI_INT, 0, comm, &req) == MPI_SUCCESS)
      quiet_wait(&req);
  }
  if (!e && !(rank == 0 && (amode & MPI_MODE_CREATE))) {
    if (e0)
      e = e0; /* creation failed: report the same error everywhere */
    else if ((f->fd = open(path, flags | O_CLOEXEC)) < 0)
      e = errno;
  }
  if (e)
    rc = cio_set_error(errno_class(e), "swarm_cio_open: %s: %s", path,
                       strerror(e));
  /* Agree before the duplication: it is collective, so a rank whose open
   * failed must not be the only one to skip it. */
  int grc = agree(comm, rc);
  if (grc == MPI_SUCCESS) {
    MPI_Request req;
    if (MPI_Comm_idup(comm, &f->comm, &req) != MPI_SUCCESS ||
        quiet_wait(&req) != MPI_SUCCESS)
      rc = cio_set_error(MPI_ERR_OTHER, "swarm_cio_open: MPI_Comm_idup failed");
    grc = agree(comm, rc);
  }
  if (grc != MPI_SUCCESS) {
    if (f) {
      if (f->fd >= 0)
        close(f->fd);
      if (f->comm != MPI_COMM_NULL)
        MPI_Comm_free(&f->comm);
      free(f);
    }
    return grc;
  }
  /* Errors inside our own exchanges come back as codes, never abort. */
  MPI_Comm_set_errhandler(f->comm, MPI_ERRORS_RETURN);
  f->rank = rank;
  f->nprocs = nprocs;
  f->amode = amode;
  f->cb_size = cb;
  f->cb_nodes = nodes;
  f->depth = depth;
  f->shm_hint = shm;
  f->slot_max = slot;
  f->one_node = all_on_one_node(comm, f->comm, nprocs);
  f->disp = 0;
  f->esize = 1;
  f->fext = f->fsize = 1;
  f->dense = 1;
  cio_list_append(&f->ftype, 0, 1);
  *fh = f;
  return MPI_SUCCESS;
}

int swarm_cio_close(swarm_cio_file_t *fhp) {
  if (!fhp || !*fhp)
    return cio_set_error(MPI_ERR_FILE, "swarm_cio_close: NULL file handle");
  swarm_cio_file_t fh = *fhp;
  agg_free(fh);
  int rc = MPI_SUCCESS;
  if (close(fh->fd) != 0)
    rc = cio_set_error(MPI_ERR_IO, "swarm_cio_close: close: %s",
                       strerror(errno));
  rc = agree(fh->comm, rc);
  MPI_Comm_free(&fh->comm);
  cio_list_free(&fh->ftype);
  free(fh);
  *fhp = NULL;
  return rc;
}

int swarm_cio_sync(swarm_cio_file_t fh) {
  if (!fh)
    return cio_set_error(MPI_ERR_FILE, "swarm_cio_sync: NULL file handle");
  int rc = MPI_SUCCESS;
  if (fdatasync(fh->fd) != 0)
    rc = cio_set_error(errno_class(errno), "swarm_cio_sync: fdatasync: %s",
                       strerror(errno));
  return agree(fh->comm, rc);
}

int swarm_cio_get_position(swarm_cio_file_t fh, MPI_Offset *offset) {
  if (!fh)
    return cio_set_error(MPI_ERR_FILE, "swarm_cio_get_position: NULL handle");
  if (!offset)
    return cio_set_error(MPI_ERR_ARG, "swarm_cio_get_position: NULL offset");
  *offset = fh->fp;
  return MPI_SUCCESS;
}

int swarm_cio_seek(swarm_cio_file_t fh, MPI_Offset offset) {
  if (!fh)
    return cio_set_error(MPI_ERR_FILE, "swarm_cio_seek: NULL handle");
  if (offset < 0)
    return cio_set_error(MPI_ERR_ARG, "swarm_cio_seek: negative offset");
  fh->fp = offset;
  return MPI_SUCCESS;
}

/* ---- views -----------------------------------------------------------------
 */

int swarm_cio_set_view(swarm_cio_file_t fh, MPI_Offset disp, MPI_Datatype etype,
                       MPI_Datatype filetype, const char *datarep,
                       MPI_Info info) {
  if (!fh)
    return cio_set_error(MPI_ERR_FILE, "swarm_cio_set_view: NULL handle");
  int rc = MPI_SUCCESS;
  cio_list_t ft = {0};
  int esize = 0, fsize = 0;
  MPI_Aint flb = 0, fext = 0;
  int64_t cb = fh->cb_size;
  int nodes = fh->cb_nodes, depth = fh->depth, shm = fh->shm_hint;
  int64_t slot = fh->slot_max;
  if (disp < 0)
    rc = cio_set_error(MPI_ERR_ARG,
                       "swarm_cio_set_view: negative "
                       "displacement %lld",
                       (long long)disp);
  else if (datarep && strcmp(datarep, "native") != 0)
    rc = cio_set_error(MPI_ERR_UNSUPPORTED_DATAREP,
                       "swarm_cio_set_view: data representation \"%s\"; only "
                       "\"native\" is supported",
                       datarep);
  else if (etype == MPI_DATATYPE_NULL || filetype == MPI_DATATYPE_NULL)
    rc = cio_set_error(MPI_ERR_TYPE, "swarm_cio_set_view: MPI_DATATYPE_NULL");
  if (rc == MPI_SUCCESS) {
    MPI_Type_size(etype, &esize);
    MPI_Type_size(filetype, &fsize);
    MPI_Type_get_extent(filetype, &flb, &fext);
    if (esize <= 0)
      rc = cio_set_error(MPI_ERR_TYPE, "swarm_cio_set_view: etype has size 0");
    else if (fsize <= 0 || fsize % esize)
      rc = cio_set_error(MPI_ERR_TYPE,
                         "swarm_cio_set_view: filetype size %d is not a "
                         "positive multiple of the etype size %d",
                         fsize, esize);
    else
      rc = cio_flatten(filetype, &ft);
  }
  if (rc == MPI_SUCCESS) {
    for (size_t j = 0; j < ft.n && rc == MPI_SUCCESS; j++) {
      if (ft.b[j].off < 0 ||
          (j > 0 && ft.b[j].off < ft.b[j - 1].off + ft.b[j - 1].len))
        rc = cio_set_error(MPI_ERR_TYPE,
                           "swarm_cio_set_view: the filetype's displacements "
                           "must be non-negative, increasing and must not "
                           "overlap (block %zu at %lld)",
                           j, (long long)ft.b[j].off);
    }
    if (rc == MPI_SUCCESS && ft.n &&
        ft.b[ft.n - 1].off + ft.b[ft.n - 1].len > (int64_t)fext)
      rc = cio_set_error(MPI_ERR_TYPE,
                         "swarm_cio_set_view: the filetype's data reach past "
                         "its extent, so its tiles would overlap");
  }
  if (rc == MPI_SUCCESS)
    rc = parse_hints(info, fh->nprocs, &cb, &nodes, &depth, &shm, &slot);
  static const char *const names[] = {"etype size",    "cb_buffer_size",
                                      "cb_nodes",      "swarm_cio_depth",
                                      "swarm_cio_shm", "swarm_cio_slot_size"};
  int64_t vals[6] = {esize, cb, nodes, depth, shm, slot};
  rc = agree_values(fh->comm, rc, vals, 6, names);
  if (rc != MPI_SUCCESS) {
    cio_list_free(&ft);
    return rc;
  }
  if (cb != fh->cb_size || nodes != fh->cb_nodes || depth != fh->depth ||
      shm != fh->shm_hint || slot != fh->slot_max) {
    agg_free(fh);
    fh->cb_size = cb;
    fh->cb_nodes = nodes;
    fh->depth = depth;
    fh->shm_hint = shm;
    fh->slot_max = slot;
  }
  cio_list_free(&fh->ftype);
  fh->ftype = ft;
  fh->disp = disp;
  fh->esize = esize;
  fh->fsize = fsize;
  fh->fext = fext;
  fh->dense = ft.n == 1 && ft.b[0].off == 0 && ft.b[0].len == (int64_t)fext;
  fh->fp = 0;
  return MPI_SUCCESS;
}

/* The file blocks holding stream bytes [s, s + n) of the view, in order. */
static int build_access(swarm_cio_file_t fh, int64_t s, int64_t n,
                        cio_list_t *out) {
  if (n == 0)
    return 0;
  if (fh->dense)
    return cio_list_append(out, fh->disp + s, n);
  int64_t tile = s / fh->fsize, skip = s % fh->fsize, left = n;
  while (left > 0) {
    int64_t base = fh->disp + tile * fh->fext;
    for (size_t j = 0; j < fh->ftype.n && left > 0; j++) {
      const cio_block_t *b = &fh->ftype.b[j];
      if (skip >= b->len) {
        skip -= b->len;
        continue;
      }
      int64_t take = b->len - skip < left ? b->len - skip : left;
      if (cio_list_append(out, base + b->off + skip, take))
        return ENOMEM;
      left -= take;
      skip = 0;
    }
    tile++;
  }
  return 0;
}

/* ---- the two-phase engine --------------------------------------------------
 */

/* Walks a sorted list of blocks (stride 2: off, len; stride 3: off, len,
 * stream position) window by window. */
typedef struct cursor {
  const int64_t *v;
  int stride;
  size_t n, i;
  int64_t cur; /* next unconsumed file byte */
} cursor_t;

static void cursor_init(cursor_t *c, const int64_t *v, int stride, size_t n) {
  c->v = v;
  c->stride = stride;
  c->n = n;
  c->i = 0;
  c->cur = n ? v[0] : 0;
}

/* The next piece below `whi`: 1 with *off, *len, *pos set, or 0. */
static int cursor_next(cursor_t *c, int64_t whi, int64_t *off, int64_t *len,
                       int64_t *pos) {
  while (c->i < c->n) {
    const int64_t *b = c->v + c->i * c->stride;
    if (c->cur < b[0])
      c->cur = b[0];
    if (c->cur >= b[0] + b[1]) {
      c->i++;
      continue;
    }
    if (c->cur >= whi)
      return 0;
    int64_t end = b[0] + b[1] < whi ? b[0] + b[1] : whi;
    *off = c->cur;
    *len = end - c->cur;
    if (pos)
      *pos = c->stride == 3 ? b[2] + (c->cur - b[0]) : 0;
    c->cur = end;
    return 1;
  }
  return 0;
}

static int64_t cursor_bytes(cursor_t c, int64_t whi) { /* by value: peeks */
  int64_t off, len, t = 0;
  while (cursor_next(&c, whi, &off, &len, NULL))
    t += len;
  return t;
}

static int grow(char **buf, int64_t *cap, int64_t want) {
  if (want <= *cap)
    return 0;
  char *b = realloc(*buf, (size_t)want);
  if (!b)
    return ENOMEM;
  *buf = b;
  *cap = want;
  return 0;
}

typedef struct plan {
  int64_t gmin, dsz, ncycles;
  /* this rank's blocks split by domain: triples, agg i owns
   * [first[i], first[i+1]) */
  int64_t *mine;
  size_t *first;
  /* aggregator: the other ranks' blocks in its domain, pairs per rank */
  int64_t *others;
  int *ocount, *odispl; /* in int64 units */
  int64_t *span_lo, *span_hi, *cover;
  /* shared window only: where cycle c's span starts in the aggregator's own
   * stream when every byte of the span is its own (then its I/O goes
   * straight between file and stream, no slot, no copy), else -1 */
  int64_t *direct;
  /* shared window only: scatter[c] = 1 when cycle c's span holds other
   * ranks' bytes too, but no other rank's piece overlaps the aggregator's
   * own, and it splits into at most iov_per_slot iovecs: then the I/O
   * thread's one preadv (read) or pwritev (write) of the span moves the
   * aggregator's own pieces straight between file and stream, and only the
   * other pieces pass through the slot. iov holds iov_per_slot iovecs per
   * slot; icur walks the aggregator's own pieces as the ops are queued
   * (cycle order, ahead of the copies' cursor). */
  unsigned char *scatter;
  struct iovec *iov;
  int iov_per_slot;
  cursor_t icur;
  cursor_t *ocur; /* per rank */
  cursor_t *mcur; /* per aggregator */
  char *sbuf, *rbuf;
  int64_t scap, rcap;
  MPI_Request *req;
} plan_t;

static void plan_free(plan_t *p) {
  free(p->mine);
  free(p->first);
  free(p->others);
  free(p->ocount);
  free(p->odispl);
  free(p->span_lo);
  free(p->span_hi);
  free(p->cover);
  free(p->direct);
  free(p->scatter);
  free(p->iov);
  free(p->ocur);
  free(p->mcur);
  free(p->sbuf);
  free(p->rbuf);
  free(p->req);
}

/* MPI_Waitall without statuses. GCC 12 reads MPICH's access attributes on
 * MPI_Waitall as if MPI_STATUSES_IGNORE were an array of nreq statuses and
 * warns (-Wstringop-overflow); it is MPI's documented sentinel. */
static int wait_all(int nreq, MPI_Request *req) {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpragmas"
#pragma GCC diagnostic ignored "-Wstringop-overflow"
  return MPI_Waitall(nreq, req, MPI_STATUSES_IGNORE);
#pragma GCC diagnostic pop
}

static int64_t dom_lo(const plan_t *p, int i, int64_t gmax) {
  int64_t x = p->gmin + i * p->dsz;
  return x < gmax ? x : gmax;
}

/* Aggregator side: cycle c touches some of its domain; and that span must be
 * read into the slot first (read, or a write whose pieces leave holes). */
static int span_ok(const plan_t *p, int64_t c) {
  return p->span_hi[c] > p->span_lo[c];
}

static int needs_read(const plan_t *p, int64_t c, int is_write) {
  return span_ok(p, c) &&
         (!is_write || p->cover[c] != p->span_hi[c] - p->span_lo[c]);
}

/* Aggregator i's counter k (0: ready, 1 + r: copied by rank r) in the
 * shared segment. */
static int64_t *shm_ctl(swarm_cio_file_t fh, int i, int k) {
  return (int64_t *)(fh->shm_map +
                     ((size_t)i * (size_t)(fh->nprocs + 1) + (size_t)k) * 64);
}

/* Waits until *x >= v (another process stores it, with release): yields
 * for 64 tries, then naps 20 us at a time, like quiet_wait. */
static void wait_at_least(const int64_t *x, int64_t v) {
  for (int tries = 0; __atomic_load_n(x, __ATOMIC_ACQUIRE) < v; tries++) {
    struct timespec nap = {0, 20000};
    if (tries < 64)
      sched_yield();
    else
      nanosleep(&nap, NULL);
  }
}

/* Queues the I/O of cycle c's span on slot c % D (shared window). Direct
 * spans go straight between file and stream; scattered ones (the read of a
 * read, the pwrite of a write) split the span between the stream (the
 * aggregator's own pieces) and the slot (everything else: other ranks'
 * pieces, and the holes a pre-read filled); the rest go to the slot whole.
 * Byte x of the span sits in the slot at x - (flo + c * S). */
static void queue_span(swarm_cio_file_t fh, plan_t *p, char *stream, int kind,
                       int64_t c, int64_t flo, int is_write) {
  int D = fh->depth, s = (int)(c % D);
  int64_t S = fh->slot_size, wlo = flo + c * S;
  int64_t lo = p->span_lo[c], hi = p->span_hi[c];
  char *slot = fh->slots[s];
  if (p->direct[c] >= 0) {
    cio_io_submit(&fh->io, kind, s, stream + p->direct[c], lo, hi - lo);
    return;
  }
  if (!p->scatter[c] || kind != (is_write ? CIO_OP_WRITE : CIO_OP_READ)) {
    cio_io_submit(&fh->io, kind, s, slot + (lo - wlo), lo, hi - lo);
    return;
  }
  struct iovec *v = p->iov + (size_t)s * (size_t)p->iov_per_slot;
  int n = 0;
  int64_t off, len, pos, at = lo;
  while (cursor_next(&p->icur, wlo, &off, &len, &pos)) /* earlier cycles */
    ;
  while (cursor_next(&p->icur, wlo + S, &off, &len, &pos)) {
    if (off > at)
      v[n++] = (struct iovec){slot + (at - wlo), (size_t)(off - at)};
    v[n++] = (struct iovec){stream + pos, (size_t)len};
    at = off + len;
  }
  if (hi > at)
    v[n++] = (struct iovec){slot + (at - wlo), (size_t)(hi - at)};
  cio_io_submitv(&fh->io, kind, s, v, n, lo, hi - lo);
}

/* The cycles when every rank can address every aggregator's slots (the
 * shared window, fh->shm). The exchange is then each rank copying its own
 * pieces straight between its stream and the aggregators' slots: one memcpy
 * per byte, done by all ranks in parallel, instead of pack + message +
 * unpack on the aggregator's critical path.
 *
 * Layout: file byte x of aggregator i's cycle c lives at
 * agg_base[i] + (c % D) * S + (x - (dom_lo(i) + c * S)), so every rank finds
 * its pieces without asking; the I/O thread preads / pwrites just the span
 * [span_lo, span_hi) of the window at that place.
 *
 * Two counters per aggregator and cycle order everything (shm_ctl), with
 * no barrier: a rank waits only for the aggregators whose slots it uses,
 * and only the aggregator waits for the ranks. In cycle c each aggregator
 * waits for the I/O queued on slot c % D (read: the slot holds cycle c's
 * data; write: the pwrite of cycle c - D is done and, with holes, cycle
 * c's span has been pre-read) and publishes `ready` = c + 1. A rank that
 * has pieces in aggregator i's window of cycle c waits for i's ready to
 * reach c + 1, copies, and publishes its `copied` = c + 1 for i (every
 * rank, every cycle, pieces or not). Before it queues what slot
 * (c - 1) % D does next — write: the pwrite of cycle c - 1; then the read
 * of cycle c - 1 + D (pre-read, for writes with holes) — the aggregator
 * waits until every rank's copied reaches c, unless nobody else used that
 * slot in cycle c - 1 (a direct span). The I/O thread thus keeps D - 1
 * cycles of I/O queued while the ranks copy. Writes need one more step
 * (c == ncycles) to queue the last pwrite, and D >= 2 (agg_setup keeps
 * messages for D == 1): the slot written in cycle c must not be the one
 * whose pwrite is queued only after cycle c's copies. Release stores and
 * acquire loads of the counters order the copies and the I/O thread's
 * bytes (handed to the aggregator under the I/O queue's mutex) between
 * processes. The rank waits could not deadlock: each waits for an event of
 * an earlier or the same cycle, which its owner publishes before waiting
 * for anything of a later one.
 *
 * A cycle whose span holds only the aggregator's own bytes (p->direct, e.g.
 * every cycle of a contiguous pattern) needs no exchange at all: the I/O
 * thread preads / pwrites between the file and the aggregator's stream and
 * nobody copies. A span shared with other ranks (p->scatter) still moves the
 * aggregator's own pieces that way, inside the one preadv / pwritev of the
 * span, so only the other ranks copy (one copy per byte instead of two for
 * 1/P of the bytes). The stream is the caller's buffer, and every op is
 * waited for (slot waits, then the drain) before the call returns. */
static int shm_cycles(swarm_cio_file_t fh, plan_t *p, char *stream,
                      int is_write, int64_t gmax) {
  int A = fh->cb_nodes, D = fh->depth, me = fh->agg_index;
  int64_t S = fh->slot_size, n = p->ncycles;
  cio_io_t *io = &fh->io;
  int64_t flo = me >= 0 ? dom_lo(p, me, gmax) : 0;
  int xrc = MPI_SUCCESS, P = fh->nprocs;
  int64_t base = fh->cycle_base;
  fh->cycle_base += n + 1;
#define QUEUE(kind, c) queue_span(fh, p, stream, kind, c, flo, is_write)
  for (int64_t c = 0; me >= 0 && c < n && c < D; c++)
    if (needs_read(p, c, is_write))
      QUEUE(CIO_OP_READ, c);
  for (int64_t c = 0; c < n + is_write; c++) {
    if (me >= 0 && c < n) {
      cio_io_wait_slot(io, (int)(c % D));
      __atomic_store_n(shm_ctl(fh, me, 0), base + c + 1, __ATOMIC_RELEASE);
    }
    if (me >= 0 && c >= 1) {
      /* slot (c - 1) % D is free once every rank that may have used it in
       * cycle c - 1 is done with it */
      if (span_ok(p, c - 1) && p->direct[c - 1] < 0)
        for (int r = 0; r < P; r++)
          wait_at_least(shm_ctl(fh, me, 1 + r), base + c);
      if (is_write && span_ok(p, c - 1))
        QUEUE(CIO_OP_WRITE, c - 1);
      if (c - 1 + D < n && needs_read(p, c - 1 + D, is_write))
        QUEUE(CIO_OP_READ, c - 1 + D);
    }
    if (c == n)
      break;
    for (int i = 0; i < A; i++) {
      int64_t wlo = dom_lo(p, i, gmax) + c * S, dhi = dom_lo(p, i + 1, gmax);
      int64_t whi = wlo + S < dhi ? wlo + S : dhi, off, len, pos;
      char *slot = fh->agg_base[i] + (c % D) * S;
      /* the I/O thread moves these */
      int direct = i == me && (p->direct[c] >= 0 || p->scatter[c]);
      cursor_t peek = p->mcur[i];
      if (!direct && cursor_next(&peek, whi, &off, &len, &pos))
        wait_at_least(shm_ctl(fh, i, 0), base + c + 1);
      while (cursor_next(&p->mcur[i], whi, &off, &len, &pos)) {
        if (direct)
          continue;
        if (is_write)
          memcpy(slot + (off - wlo), stream + pos, (size_t)len);
        else
          memcpy(stream + pos, slot + (off - wlo), (size_t)len);
      }
      __atomic_store_n(shm_ctl(fh, i, 1 + fh->rank), base + c + 1,
                       __ATOMIC_RELEASE);
    }
  }
#undef QUEUE
  return xrc;
}

/* The whole collective transfer of this rank's stream (n bytes, contiguous
 * at `stream`). Returns an error class, agreed between ranks. */
static int two_phase(swarm_cio_file_t fh, char *stream, int64_t n, int is_write,
                     int rc) {
  MPI_Comm comm = fh->comm;
  int P = fh->nprocs, A = fh->cb_nodes;
  plan_t p;
  memset(&p, 0, sizeof p);
  cio_list_t acc = {0};
  if (rc == MPI_SUCCESS && build_access(fh, fh->fp * fh->esize, n, &acc))
    rc = cio_set_error(MPI_ERR_NO_MEM, "out of memory for the access list");

  /* 1. agree and learn the accessed range */
  int64_t mine3[3] = {rc, acc.n ? acc.b[0].off : -1,
                      acc.n ? acc.b[acc.n - 1].off + acc.b[acc.n - 1].len : -1};
  int64_t *all = malloc(3 * sizeof(int64_t) * (size_t)P);
  if (!all) { /* cannot even agree without it: fall back to a reduction */
    rc = agree(comm, cio_set_error(MPI_ERR_NO_MEM, "out of memory"));
    cio_list_free(&acc);
    return rc;
  }
  MPI_Request req;
  if (MPI_Iallgather(mine3, 3, MPI_INT64_T, all, 3, MPI_INT64_T, comm, &req) ==
      MPI_SUCCESS)
    quiet_wait(&req);
  int other = MPI_SUCCESS;
  int64_t gmin = INT64_MAX, gmax = -1;
  for (int r = 0; r < P; r++) {
    if (all[3 * r] != MPI_SUCCESS && other == MPI_SUCCESS)
      other = (int)all[3 * r];
    if (all[3 * r + 1] >= 0) {
      if (all[3 * r + 1] < gmin)
        gmin = all[3 * r + 1];
      if (all[3 * r + 2] > gmax)
        gmax = all[3 * r + 2];
    }
  }
  free(all);
  if (rc != MPI_SUCCESS || other != MPI_SUCCESS) {
    cio_list_free(&acc);
    if (rc != MPI_SUCCESS)
      return rc;
    return cio_set_error(other,
                         "another rank failed this collective call "
                         "(error class %d); see its swarm_cio_errmsg()",
                         other);
  }
  if (gmax < 0) { /* nobody accesses anything */
    cio_list_free(&acc);
    return MPI_SUCCESS;
  }
  /* collective, and every rank gets here: agreed in the next agree() */
  int arc = agg_setup(fh);

  /* 2. domains, and each aggregator learns the blocks in its domain */
  p.gmin = gmin;
  p.dsz = (gmax - gmin + A - 1) / A;
  int64_t S = fh->slot_size;
  p.ncycles = (p.dsz + S - 1) / S;
  int me_agg = fh->agg_index;
  size_t nsplit = 0;
  for (size_t j = 0; j < acc.n; j++) { /* pieces after splitting */
    int64_t a = (acc.b[j].off - gmin) / p.dsz;
    int64_t z = (acc.b[j].off + acc.b[j].len - 1 - gmin) / p.dsz;
    nsplit += (size_t)(z - a + 1);
  }
  p.mine = malloc((nsplit + 1) * 3 * sizeof(int64_t));
  p.first = calloc((size_t)A + 1, sizeof *p.first);
  p.ocount = calloc((size_t)P, sizeof(int));
  p.odispl = calloc((size_t)P, sizeof(int));
  int *scount = calloc((size_t)P, sizeof(int));
  int *sdispl = calloc((size_t)P, sizeof(int));
  int64_t *pairs = malloc((nsplit + 1) * 2 * sizeof(int64_t));
  p.mcur = calloc((size_t)A, sizeof *p.mcur);
  p.ocur = calloc((size_t)P, sizeof *p.ocur);
  p.req = calloc(2 * (size_t)P + 2, sizeof *p.req);
  rc = (p.mine && p.first && p.ocount && p.odispl && scount && sdispl &&
        pairs && p.mcur && p.ocur && p.req)
           ? MPI_SUCCESS
           : cio_set_error(MPI_ERR_NO_MEM, "out of memory planning the I/O");
  if (rc == MPI_SUCCESS && 2 * nsplit > INT_MAX)
    rc = cio_set_error(MPI_ERR_COUNT,
                       "the view splits into too many blocks "
                       "(%zu)",
                       nsplit);
  if (rc == MPI_SUCCESS) {
    size_t k = 0;
    int64_t pos = 0;
    for (size_t j = 0; j < acc.n; j++) {
      int64_t off = acc.b[j].off, end = off + acc.b[j].len;
      while (off < end) {
        int64_t i = (off - gmin) / p.dsz;
        int64_t dhi = gmin + (i + 1) * p.dsz;
        int64_t e = end < dhi ? end : dhi;
        p.mine[3 * k] = off;
        p.mine[3 * k + 1] = e - off;
        p.mine[3 * k + 2] = pos;
        pairs[2 * k] = off;
        pairs[2 * k + 1] = e - off;
        p.first[i + 1]++;
        pos += e - off;
        off = e;
        k++;
      }
    }
    for (int i = 0; i < A; i++)
      p.first[i + 1] += p.first[i];
    for (int i = 0; i < A; i++) {
      int r = agg_rank(fh, i);
      scount[r] = (int)(2 * (p.first[i + 1] - p.first[i]));
      sdispl[r] = (int)(2 * p.first[i]);
    }
  }
  cio_list_free(&acc);
  if (rc == MPI_SUCCESS)
    rc = arc;
  rc = agree(comm, rc);
  if (rc == MPI_SUCCESS) {
    if (MPI_Ialltoall(scount, 1, MPI_INT, p.ocount, 1, MPI_INT, comm, &req) ==
        MPI_SUCCESS)
      quiet_wait(&req);
    int64_t tot = 0;
    for (int r = 0; r < P; r++) {
      p.odispl[r] = (int)tot;
      tot += p.ocount[r];
    }
    if (tot > INT_MAX)
      rc = cio_set_error(MPI_ERR_COUNT, "too many blocks for one aggregator");
    else if (!(p.others = malloc(((size_t)tot + 1) * sizeof(int64_t))))
      rc = cio_set_error(MPI_ERR_NO_MEM, "out of memory for block lists");
    rc = agree(comm, rc);
    if (rc == MPI_SUCCESS)
      if (MPI_Ialltoallv(pairs, scount, sdispl, MPI_INT64_T, p.others, p.ocount,
                         p.odispl, MPI_INT64_T, comm, &req) == MPI_SUCCESS)
        quiet_wait(&req);
  }
  free(scount);
  free(sdispl);
  free(pairs);
  if (rc != MPI_SUCCESS) {
    plan_free(&p);
    return rc;
  }

  /* 3. per-cycle spans of the aggregator's windows */
  int64_t flo = 0, fhi = 0;
  if (me_agg >= 0) {
    flo = dom_lo(&p, me_agg, gmax);
    fhi = dom_lo(&p, me_agg + 1, gmax);
    p.span_lo = malloc(((size_t)p.ncycles + 1) * sizeof(int64_t));
    p.span_hi = malloc(((size_t)p.ncycles + 1) * sizeof(int64_t));
    p.cover = calloc((size_t)p.ncycles + 1, sizeof(int64_t));
    if (!p.span_lo || !p.span_hi || !p.cover)
      rc = cio_set_error(MPI_ERR_NO_MEM, "out of memory for the cycle plan");
    for (int64_t c = 0; rc == MPI_SUCCESS && c < p.ncycles; c++) {
      p.span_lo[c] = INT64_MAX;
      p.span_hi[c] = -1;
    }
    for (int r = 0; rc == MPI_SUCCESS && r < P; r++) {
      const int64_t *b = p.others + p.odispl[r];
      for (int j = 0; j < p.ocount[r] / 2; j++) {
        int64_t off = b[2 * j], end = off + b[2 * j + 1];
        while (off < end) {
          int64_t c = (off - flo) / S;
          int64_t whi = flo + (c + 1) * S;
          int64_t e = end < whi ? end : whi;
          if (off < p.span_lo[c])
            p.span_lo[c] = off;
          if (e > p.span_hi[c])
            p.span_hi[c] = e;
          p.cover[c] += e - off;
          off = e;
        }
      }
    }
    /* Spans that are all this rank's own bytes, and no other rank's (ranks
     * may read the same bytes): those bytes are consecutive in its stream
     * too (the view is monotonic and nobody else's bytes lie between), so
     * the span maps to one stream range. */
    if (rc == MPI_SUCCESS && fh->shm &&
        (!(p.direct = malloc(((size_t)p.ncycles + 1) * sizeof(int64_t))) ||
         !(p.scatter = calloc((size_t)p.ncycles + 1, 1))))
      rc = cio_set_error(MPI_ERR_NO_MEM, "out of memory for the cycle plan");
    if (rc == MPI_SUCCESS && fh->shm) {
      /* own[c]: bytes, ownn[c]: pieces of this rank's own in cycle c */
      int64_t *own = calloc((size_t)p.ncycles + 1, sizeof(int64_t));
      int64_t *ownn = calloc((size_t)p.ncycles + 1, sizeof(int64_t));
      if (!own || !ownn)
        rc = cio_set_error(MPI_ERR_NO_MEM, "out of memory for the cycle plan");
      for (int64_t c = 0; rc == MPI_SUCCESS && c < p.ncycles; c++)
        p.direct[c] = -1;
      const int64_t *t = p.mine + 3 * p.first[me_agg];
      size_t nt = p.first[me_agg + 1] - p.first[me_agg];
      for (size_t j = 0; rc == MPI_SUCCESS && j < nt; j++) {
        int64_t off = t[3 * j], end = off + t[3 * j + 1];
        while (off < end) {
          int64_t c = (off - flo) / S;
          int64_t whi = flo + (c + 1) * S;
          int64_t e = end < whi ? end : whi;
          if (own[c] == 0)
            p.direct[c] = t[3 * j + 2] + (off - t[3 * j]);
          own[c] += e - off;
          ownn[c]++;
          off = e;
        }
      }
      /* A cycle where another rank's piece overlaps one of ours (ranks may
       * read the same bytes) must keep our bytes in the slot too: marked
       * by own[c] = 0. Both lists are sorted, so one merge per rank. */
      for (int r = 0; rc == MPI_SUCCESS && r < P; r++) {
        if (r == fh->rank)
          continue;
        const int64_t *b = p.others + p.odispl[r];
        size_t nb = (size_t)p.ocount[r] / 2, j = 0, k = 0;
        while (j < nt && k < nb) {
          int64_t a0 = t[3 * j], a1 = a0 + t[3 * j + 1];
          int64_t b0 = b[2 * k], b1 = b0 + b[2 * k + 1];
          int64_t x0 = a0 > b0 ? a0 : b0, x1 = a1 < b1 ? a1 : b1;
          for (int64_t c = (x0 - flo) / S; x0 < x1 && c <= (x1 - 1 - flo) / S;
               c++)
            own[c] = 0;
          if (a1 <= b1)
            j++;
          else
            k++;
        }
      }
      int64_t most = 0;
      for (int64_t c = 0; rc == MPI_SUCCESS && c < p.ncycles; c++) {
        if (!span_ok(&p, c) || own[c] != p.span_hi[c] - p.span_lo[c] ||
            p.cover[c] != own[c]) /* others read the same bytes */
          p.direct[c] = -1;
        /* own pieces and the gaps around them: at most 2 * ownn + 1 */
        if (span_ok(&p, c) && p.direct[c] < 0 && own[c] > 0 &&
            2 * ownn[c] + 1 <= CIO_IOV_MAX) {
          p.scatter[c] = 1;
          if (2 * ownn[c] + 1 > most)
            most = 2 * ownn[c] + 1;
        }
      }
      free(own);
      free(ownn);
      p.iov_per_slot = (int)most;
      if (most > 0 &&
          !(p.iov = malloc((size_t)fh->depth * (size_t)most * sizeof *p.iov)))
        rc = cio_set_error(MPI_ERR_NO_MEM, "out of memory for the cycle plan");
    }
  }
  /* exchange buffers, sized for the largest cycle, so the loop below
   * cannot fail half way: this rank's side holds at most one window per
   * aggregator of its own (non-overlapping) blocks; the aggregator's side
   * holds a cycle's pieces of every rank. */
  int64_t mine_cap = (int64_t)A * S < n ? (int64_t)A * S : n, agg_cap = 0;
  for (int64_t c = 0; me_agg >= 0 && rc == MPI_SUCCESS && c < p.ncycles; c++)
    if (p.cover[c] > agg_cap)
      agg_cap = p.cover[c];
  if (fh->shm) /* no exchange buffers: ranks copy to and from the slots */
    mine_cap = agg_cap = 0;
  if (rc == MPI_SUCCESS && (grow(is_write ? &p.sbuf : &p.rbuf,
                                 is_write ? &p.scap : &p.rcap, mine_cap) ||
                            grow(is_write ? &p.rbuf : &p.sbuf,
                                 is_write ? &p.rcap : &p.scap, agg_cap)))
    rc = cio_set_error(MPI_ERR_NO_MEM, "out of memory for exchange buffers");
  rc = agree(comm, rc);
  if (rc != MPI_SUCCESS) {
    plan_free(&p);
    return rc;
  }
  for (int r = 0; r < P; r++)
    cursor_init(&p.ocur[r], p.others + p.odispl[r], 2, (size_t)p.ocount[r] / 2);
  for (int i = 0; i < A; i++)
    cursor_init(&p.mcur[i], p.mine + 3 * p.first[i], 3,
                p.first[i + 1] - p.first[i]);
  if (me_agg >= 0)
    p.icur = p.mcur[me_agg];

  /* 4. the cycles */
  int D = fh->depth;
  cio_io_t *io = &fh->io;
  int xrc = MPI_SUCCESS;
#define SPAN_OK(c) span_ok(&p, c)
#define NEEDS_READ(c) needs_read(&p, c, is_write)
  if (fh->shm)
    xrc = shm_cycles(fh, &p, stream, is_write, gmax);
  /* else by messages: the slot holds the span from its start */
  if (me_agg >= 0 && !fh->shm)
    for (int64_t c = 0; c < p.ncycles && c < D; c++)
      if (NEEDS_READ(c))
        cio_io_submit(io, CIO_OP_READ, (int)(c % D), fh->slots[c % D],
                      p.span_lo[c], p.span_hi[c] - p.span_lo[c]);
  for (int64_t c = 0; !fh->shm && c < p.ncycles; c++) {
    int nreq = 0;
    int64_t off, len, pos;
    /* this rank's side: one message per aggregator holding pieces */
    char **mybuf = is_write ? &p.sbuf : &p.rbuf;
    int64_t at = 0;
    for (int i = 0; i < A; i++) {
      int64_t whi = dom_lo(&p, i, gmax) + (c + 1) * S;
      if (whi > dom_lo(&p, i + 1, gmax))
        whi = dom_lo(&p, i + 1, gmax);
      int64_t t = cursor_bytes(p.mcur[i], whi);
      if (t == 0)
        continue;
      char *b = *mybuf + at;
      if (is_write) {
        while (cursor_next(&p.mcur[i], whi, &off, &len, &pos)) {
          memcpy(b, stream + pos, (size_t)len);
          b += len;
        }
        MPI_Isend(*mybuf + at, (int)t, MPI_BYTE, agg_rank(fh, i), CIO_TAG, comm,
                  &p.req[nreq++]);
      } else {
        MPI_Irecv(*mybuf + at, (int)t, MPI_BYTE, agg_rank(fh, i), CIO_TAG, comm,
                  &p.req[nreq++]);
      }
      at += t;
    }
    /* the aggregator's side */
    int slot = (int)(c % D);
    int64_t lo = 0, hi = 0;
    int have = me_agg >= 0 && SPAN_OK(c);
    if (have) {
      lo = p.span_lo[c];
      hi = p.span_hi[c];
    }
    int64_t whi_agg = flo + (c + 1) * S < fhi ? flo + (c + 1) * S : fhi;
    char **abuf = is_write ? &p.rbuf : &p.sbuf;
    if (have && !is_write)
      cio_io_wait_slot(io, slot);
    at = 0;
    for (int r = 0; have && r < P; r++) {
      int64_t t = cursor_bytes(p.ocur[r], whi_agg);
      if (t == 0)
        continue;
      if (is_write) {
        MPI_Irecv(*abuf + at, (int)t, MPI_BYTE, r, CIO_TAG, comm,
                  &p.req[nreq++]);
      } else {
        char *b = *abuf + at;
        cursor_t c2 = p.ocur[r];
        while (cursor_next(&c2, whi_agg, &off, &len, NULL)) {
          memcpy(b, fh->slots[slot] + (off - lo), (size_t)len);
          b += len;
        }
        MPI_Isend(*abuf + at, (int)t, MPI_BYTE, r, CIO_TAG, comm,
                  &p.req[nreq++]);
      }
      at += t;
    }
    /* read: the slot is packed, so its next read can start now */
    if (me_agg >= 0 && !is_write && c + D < p.ncycles && NEEDS_READ(c + D))
      cio_io_submit(io, CIO_OP_READ, slot, fh->slots[slot], p.span_lo[c + D],
                    p.span_hi[c + D] - p.span_lo[c + D]);
    if (wait_all(nreq, p.req) != MPI_SUCCESS && xrc == MPI_SUCCESS)
      xrc = cio_set_error(MPI_ERR_OTHER,
                          "an exchange message failed in cycle "
                          "%lld",
                          (long long)c);
    /* unpack this rank's pieces (read) */
    at = 0;
    for (int i = 0; i < A; i++) {
      int64_t whi = dom_lo(&p, i, gmax) + (c + 1) * S;
      if (whi > dom_lo(&p, i + 1, gmax))
        whi = dom_lo(&p, i + 1, gmax);
      if (is_write)
        continue; /* cursors already advanced while packing */
      while (cursor_next(&p.mcur[i], whi, &off, &len, &pos)) {
        memcpy(stream + pos, p.rbuf + at, (size_t)len);
        at += len;
      }
    }
    /* write: lay the received pieces over the slot and queue the pwrite */
    if (have && is_write) {
      cio_io_wait_slot(io, slot);
      at = 0;
      for (int r = 0; r < P; r++)
        while (cursor_next(&p.ocur[r], whi_agg, &off, &len, NULL)) {
          memcpy(fh->slots[slot] + (off - lo), p.rbuf + at, (size_t)len);
          at += len;
        }
      cio_io_submit(io, CIO_OP_WRITE, slot, fh->slots[slot], lo, hi - lo);
    } else if (have) {
      for (int r = 0; r < P; r++) /* read: advance past this window */
        while (cursor_next(&p.ocur[r], whi_agg, &off, &len, NULL))
          ;
    }
    if (me_agg >= 0 && is_write && c + D < p.ncycles && NEEDS_READ(c + D))
      cio_io_submit(io, CIO_OP_READ, slot, fh->slots[slot], p.span_lo[c + D],
                    p.span_hi[c + D] - p.span_lo[c + D]);
  }
#undef SPAN_OK
#undef NEEDS_READ

  /* 5. finish the I/O and agree on the outcome */
  rc = xrc;
  if (me_agg >= 0) {
    int64_t eoff = 0;
    int e = cio_io_drain(io, &eoff);
    if (e && rc == MPI_SUCCESS)
      rc = cio_set_error(errno_class(e), "%s at file offset %lld failed: %s",
                         is_write ? "pwrite" : "pread", (long long)eoff,
                         strerror(e));
  }
  plan_free(&p);
  return agree(comm, rc);
}

static int check_rw(swarm_cio_file_t fh, const void *buf, int count,
                    MPI_Datatype datatype, int is_write, int64_t *n,
                    cio_list_t *mem, MPI_Aint *mext) {
  int access = fh->amode & (MPI_MODE_RDONLY | MPI_MODE_WRONLY | MPI_MODE_RDWR);
  const char *fn = is_write ? "swarm_cio_write_all" : "swarm_cio_read_all";
  if (is_write && access == MPI_MODE_RDONLY)
    return cio_set_error(MPI_ERR_READ_ONLY, "%s: file opened MPI_MODE_RDONLY",
                         fn);
  if (!is_write && access == MPI_MODE_WRONLY)
    return cio_set_error(MPI_ERR_ACCESS, "%s: file opened MPI_MODE_WRONLY", fn);
  if (count < 0)
    return cio_set_error(MPI_ERR_COUNT, "%s: negative count %d", fn, count);
  if (datatype == MPI_DATATYPE_NULL)
    return cio_set_error(MPI_ERR_TYPE, "%s: MPI_DATATYPE_NULL", fn);
  int size;
  MPI_Aint lb;
  MPI_Type_size(datatype, &size);
  MPI_Type_get_extent(datatype, &lb, mext);
  *n = (int64_t)count * size;
  if (*n > 0 && !buf)
    return cio_set_error(MPI_ERR_BUFFER, "%s: NULL buffer for %lld bytes", fn,
                         (long long)*n);
  if (*n % fh->esize)
    return cio_set_error(MPI_ERR_TYPE,
                         "%s: %lld bytes is not a whole number of etypes (%lld "
                         "bytes each)",
                         fn, (long long)*n, (long long)fh->esize);
  if (*n == 0)
    return MPI_SUCCESS;
  return cio_flatten(datatype, mem);
}

/* The stream of a buffer: the buffer itself when the memory type is one
 * dense block per item laid end to end, else a packed copy. */
static int rw_all(swarm_cio_file_t fh, void *buf, int count,
                  MPI_Datatype datatype, MPI_Status *status, int is_write) {
  const char *fn = is_write ? "swarm_cio_write_all" : "swarm_cio_read_all";
  if (!fh)
    return cio_set_error(MPI_ERR_FILE, "%s: NULL file handle", fn);
  int64_t n = 0;
  cio_list_t mem = {0};
  MPI_Aint mext = 0;
  int rc = check_rw(fh, buf, count, datatype, is_write, &n, &mem, &mext);
  char *stream = NULL, *packed = NULL;
  if (rc == MPI_SUCCESS && n > 0) {
    if (mem.n == 1 && mem.b[0].len * count == n && mext == mem.b[0].len) {
      stream = (char *)buf + mem.b[0].off;
    } else if (n > INT_MAX) {
      rc = cio_set_error(MPI_ERR_COUNT,
                         "%s: a non-contiguous memory type moving %lld bytes "
                         "(more than INT_MAX) is not supported",
                         fn, (long long)n);
    } else if (!(packed = malloc((size_t)n))) {
      rc = cio_set_error(MPI_ERR_NO_MEM, "%s: out of memory", fn);
    } else {
      stream = packed;
      if (is_write) {
        int position = 0;
        MPI_Pack(buf, count, datatype, packed, (int)n, &position, fh->comm);
      }
    }
  }
  cio_list_free(&mem);
  int64_t fsz = 0;
  struct stat st;
  if (!is_write && rc == MPI_SUCCESS && fstat(fh->fd, &st) == 0)
    fsz = st.st_size;
  int64_t before_eof = n;
  if (!is_write && rc == MPI_SUCCESS && n > 0) {
    cio_list_t acc = {0};
    if (build_access(fh, fh->fp * fh->esize, n, &acc) == 0) {
      before_eof = 0;
      for (size_t j = 0; j < acc.n; j++) {
        int64_t e = acc.b[j].off + acc.b[j].len;
        if (e > fsz)
          e = fsz;
        if (e > acc.b[j].off)
          before_eof += e - acc.b[j].off;
      }
    }
    cio_list_free(&acc);
  }
  rc = two_phase(fh, stream, n, is_write, rc);
  if (rc == MPI_SUCCESS && packed && !is_write) {
    int position = 0;
    MPI_Unpack(packed, (int)n, &position, buf, count, datatype, fh->comm);
  }
  free(packed);
  if (rc == MPI_SUCCESS) {
    fh->fp += n / fh->esize;
    if (status != MPI_STATUS_IGNORE)
      MPI_Status_set_elements_x(status, MPI_BYTE, (MPI_Count)before_eof);
  }
  return rc;
}

int swarm_cio_read_all(swarm_cio_file_t fh, void *buf, int count,
                       MPI_Datatype datatype, MPI_Status *status) {
  return rw_all(fh, buf, count, datatype, status, 0);
}

int swarm_cio_write_all(swarm_cio_file_t fh, const void *buf, int count,
                        MPI_Datatype datatype, MPI_Status *status) {
  return rw_all(fh, (void *)buf, count, datatype, status, 1);
}
