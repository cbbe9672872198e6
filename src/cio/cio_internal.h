/*
 * cio_internal.h — what the files of src/cio share: block lists (flattened
 * datatypes), the per-kernel-thread error message, and the I/O thread's
 * interface. Not installed.
 *
 * Invariant of a cio_list_t built with cio_list_append(): blocks are stored
 * in the order appended and two blocks that touch (a.off + a.len == b.off)
 * are merged, so a dense run is always one block.
 */
#ifndef SWARM_CIO_INTERNAL_H
#define SWARM_CIO_INTERNAL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include <mpi.h>

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

/* Records the message swarm_cio_errmsg() returns; returns `code`. */
int cio_set_error(int code, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* ---- the I/O thread (iothread.c) ----------------------------------------
 * One kernel thread per aggregator and open file runs a FIFO of pread/pwrite
 * operations on buffers ("slots") the caller owns. FIFO order is what makes
 * slot reuse safe: an operation queued on a slot after another one on the
 * same slot runs after it. The caller waits on a slot until every operation
 * queued on it has finished. */
enum { CIO_OP_READ = 1, CIO_OP_WRITE = 2 };

typedef struct cio_op {
  int kind;
  int slot;
  char *buf;
  int64_t off, len;
  /* When iovcnt > 0, the file range [off, off + len) goes to / comes from
   * these buffers in order (preadv / pwritev) and buf is unused; the iovec
   * array and every buffer it names belong to the I/O thread, like the
   * slot, until the op has finished. */
  const struct iovec *iov;
  int iovcnt;
} cio_op_t;

/* The most iovecs of one scattered or gathered op (one preadv / pwritev:
 * Linux's IOV_MAX). */
#define CIO_IOV_MAX 1024

typedef struct cio_io {
  pthread_t thread;
  int running;
  int fd;
  pthread_mutex_t lock;
  pthread_cond_t cond_work; /* signalled when an op is queued or on stop */
  pthread_cond_t cond_done; /* signalled when an op finishes */
  cio_op_t *ring;           /* queue of capacity `cap` */
  int cap, head, count;
  int stop;
  int nslots;
  uint64_t *queued, *finished; /* per slot */
  int error;                   /* first errno seen, 0 if none */
  int64_t error_off;
} cio_io_t;

/* Starts the thread for descriptor fd with `nslots` slots. 0 or an errno. */
int cio_io_start(cio_io_t *io, int fd, int nslots);
/* Queues an operation (blocks while the queue is full). */
void cio_io_submit(cio_io_t *io, int kind, int slot, char *buf, int64_t off,
                   int64_t len);
/* The same with the file range scattered into / gathered from iov[0..n)
 * (whose lengths sum to len; 1 <= n <= CIO_IOV_MAX). */
void cio_io_submitv(cio_io_t *io, int kind, int slot, const struct iovec *iov,
                    int n, int64_t off, int64_t len);
/* Waits until every operation queued on `slot` has finished. */
void cio_io_wait_slot(cio_io_t *io, int slot);
/* Waits for every queued operation; returns the first errno (0 if none) and
 * clears it. */
int cio_io_drain(cio_io_t *io, int64_t *error_off);
void cio_io_stop(cio_io_t *io);

#endif
