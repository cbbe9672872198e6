/*
 * cio_internal.h — what the files of src/cio share: the open file's state,
 * block lists, errors, the library's collectives, hints, views and the
 * aggregators' set-up. Not installed.
 *
 * The files, one concern each (each opens with what it owns and its
 * invariants):
 *   error.c          the message swarm_cio_errmsg() returns; errno -> class
 *   collective.c     collectives that give the core away (quiet_wait), and
 *                    every rank agreeing on one outcome
 *   hints.c          the MPI_Info hints: defaults, parsing, equal everywhere
 *   file.c           open, close, sync, seek; do all ranks share one node
 *   view.c           set_view, and the file blocks a stream range maps to
 *   flatten.c        block lists; an MPI datatype flattened into blocks
 *   aggregator.c     who aggregates; each aggregator's slots (private, or
 *                    the shared segment every rank maps) and I/O thread
 *   plan.h, plan.c   the plan of one collective call: range, domains, cycles
 *   exchange_msg.c   the cycles when the pieces travel by messages
 *   exchange_shm.c   the cycles when ranks copy through the shared segment
 *   iothread.h, .c   the aggregator's file-I/O kernel thread
 *   two_phase.c      read_all / write_all: checks, the stream, the driver
 *
 * Invariant of a cio_list_t built with cio_list_append(): blocks are stored
 * in the order appended and two blocks that touch (a.off + a.len == b.off)
 * are merged, so a dense run is always one block.
 */
#ifndef SWARM_CIO_INTERNAL_H
#define SWARM_CIO_INTERNAL_H

#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <mpi.h>

#include "swarm/cio.h"

#include "iothread.h"

/* ---- block lists and datatypes (flatten.c) ------------------------------ */

typedef struct cio_block {
  int64_t off; /* byte displacement */
  int64_t len; /* bytes, > 0 */
} cio_block_t;

typedef struct cio_list {
  cio_block_t *b;
  size_t n, cap;
} cio_list_t;

void cio_list_free(cio_list_t *l);
/* 0 or ENOMEM. Zero-length blocks are dropped; adjacent ones merge. */
int cio_list_append(cio_list_t *l, int64_t off, int64_t len);

/* Flattens `type` into the blocks of its typemap (displacements relative to
 * the type's origin, in typemap order). Returns MPI_SUCCESS or an MPI error
 * class with the reason set by cio_set_error(). */
int cio_flatten(MPI_Datatype type, cio_list_t *out);

/* ---- errors (error.c) ---------------------------------------------------- */

/* Records the message swarm_cio_errmsg() returns; returns `code`. */
int cio_set_error(int code, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Records that another rank failed this call with `code`; returns it. */
int cio_other_rank_failed(int code);
/* The MPI error class of an errno value (MPI_ERR_IO if none fits better). */
int cio_errno_class(int err);

/* ---- the library's collectives (collective.c) --------------------------- */

/* One step of every wait of the library (MPI requests, the shared
 * segment's counters): sched_yield for the first 64 tries, then a 20 us
 * nap (collective.c says why). */
static inline void cio_pause(int tries) {
  struct timespec nap = {0, 20000};
  if (tries < 64)
    sched_yield();
  else
    nanosleep(&nap, NULL);
}

/* Completes `req` without holding the core while it waits. */
int cio_quiet_wait(MPI_Request *req);
/* MPI_Allreduce, started non-blocking and completed by cio_quiet_wait. */
int cio_quiet_allreduce(const void *in, void *out, int n, MPI_Datatype type,
                        MPI_Op op, MPI_Comm comm);
/* Every rank learns whether any rank failed. Returns the local code if it
 * failed, else the largest code of another rank (with a message), else
 * MPI_SUCCESS. */
int cio_agree(MPI_Comm comm, int rc);
/* cio_agree, and then checks that v[0..nv) (nv <= 8) are equal on every
 * rank: MPI_ERR_NOT_SAME naming names[i] if not. */
int cio_agree_values(MPI_Comm comm, int rc, const int64_t *v, int nv,
                     const char *const *names);

/* ---- hints (hints.c) ----------------------------------------------------- */

typedef struct cio_hints {
  int64_t cb_size;  /* cb_buffer_size: collective buffer per aggregator */
  int cb_nodes;     /* aggregators, 1..nprocs */
  int depth;        /* swarm_cio_depth: pipeline buffers per aggregator */
  int shm;          /* swarm_cio_shm: 1 = exchange through the shared
                     * segment when possible, 0 = always by messages */
  int64_t slot_max; /* swarm_cio_slot_size: cap of one pipeline buffer */
} cio_hints_t;

void cio_hints_default(cio_hints_t *hints, int nprocs);
/* Reads the hints in `info` (may be MPI_INFO_NULL) over *hints; on a bad
 * value returns MPI_ERR_INFO_VALUE and leaves *hints as it was. */
int cio_hints_parse(MPI_Info info, int nprocs, cio_hints_t *hints);
/* cio_agree_values over (first_name = first_value, then every hint). */
int cio_hints_agree(MPI_Comm comm, int rc, const char *first_name,
                    int64_t first_value, const cio_hints_t *hints);
int cio_hints_equal(const cio_hints_t *a, const cio_hints_t *b);

/* ---- the open file ------------------------------------------------------- */

struct swarm_cio_file {
  MPI_Comm comm; /* our duplicate of the caller's communicator */
  int rank, nprocs;
  int fd;
  int amode;
  cio_hints_t hints; /* equal on every rank */
  int one_node;      /* every rank of comm shares this node's memory */
  /* the view (view.c) */
  MPI_Offset disp;
  int64_t etype_size;
  cio_list_t filetype; /* filetype blocks, relative to one tile's origin */
  int64_t filetype_extent, filetype_size;
  int dense;        /* the filetype is one block filling its extent */
  int64_t position; /* individual file pointer, in etypes */
  /* aggregator state, made by the first collective call (cio_agg_setup) */
  int agg_ready;
  int agg_rc;    /* cio_agg_setup's outcome, kept while agg_ready */
  int agg_index; /* -1: not an aggregator */
  int64_t slot_size;
  char **slots; /* this aggregator's `depth` slots */
  /* The shared-segment exchange (cio_agg_setup decides): every
   * aggregator's slots live in one POSIX shared-memory segment that every
   * rank maps (shm_map, shm_len); agg_slots[i] is aggregator i's first
   * slot, as mapped here. Before the slots, the segment holds the cycle
   * counters (shm_counter_bytes of them, exchange_shm.c): per aggregator
   * i, `ready` = the last cycle whose slot i made ready, plus 1, and for
   * every rank r, `copied[r]` = the last cycle whose pieces r has copied to
   * / from i's slot, plus 1; cycles count on across calls from cycle_base
   * (equal on every rank), so the counters never go back. */
  int shm;
  char *shm_map;
  size_t shm_len;
  char **agg_slots;
  size_t shm_counter_bytes;
  int64_t cycle_base;
  cio_io_t io;
};

/* ---- views (view.c) ------------------------------------------------------ */

/* Appends the file blocks holding stream bytes [start, start + n) of the
 * view to *out, in order. 0 or ENOMEM. */
int cio_view_access(swarm_cio_file_t fh, int64_t start, int64_t n,
                    cio_list_t *out);

/* ---- aggregators (aggregator.c) ------------------------------------------ */

/* The rank of aggregator `agg`. */
static inline int cio_agg_rank(const struct swarm_cio_file *fh, int agg) {
  return (int)((int64_t)agg * fh->nprocs / fh->hints.cb_nodes);
}

/* Makes the aggregator state on first use. Collective: every rank calls it
 * at the same point of a collective call, after the ranks agreed that none
 * failed. Returns MPI_SUCCESS or this rank's (local) error class. */
int cio_agg_setup(swarm_cio_file_t fh);
/* Local: every rank calls it at the same point (close, or set_view with new
 * hints), after the last collective call's final agreement. */
void cio_agg_free(swarm_cio_file_t fh);

#endif
