/*
 * iothread.h — the aggregator's file-I/O kernel thread (iothread.c): one per
 * aggregator and open file, running a FIFO of pread/pwrite operations on
 * buffers ("slots") the caller owns. Not installed.
 *
 * FIFO order is what makes slot reuse safe: an operation queued on a slot
 * after another one on the same slot runs after it. The caller waits on a
 * slot until every operation queued on it has finished.
 */
#ifndef SWARM_CIO_IOTHREAD_H
#define SWARM_CIO_IOTHREAD_H

#include <pthread.h>
#include <stdint.h>
#include <sys/uio.h>

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
