/*
 * iothread.c — the aggregator's file-I/O kernel thread: a FIFO of
 * pread/pwrite operations on the caller's collective-buffer slots.
 *
 * Why a kernel thread and not a swarm thread. The exchange runs on the
 * calling flow, which in an MPI program with one swarm worker per rank is the
 * only thing that worker runs; a swarm thread doing pread would either share
 * that worker (no overlap at all: the exchange waits in MPI while the read
 * waits for its turn) or need the io layer's offload path. A dedicated
 * kernel thread per aggregator always overlaps, costs one thread per open
 * file on aggregators only, and never calls MPI (so any MPI thread level
 * works).
 *
 * An op is one pread/pwrite into one buffer, or a preadv/pwritev whose
 * iovecs split one contiguous file range between several buffers (the
 * aggregator's slot and, for its own pieces, the caller's stream).
 *
 * Invariants (all under `lock`): ops run in the order queued, one at a time;
 * finished[s] <= queued[s] for every slot s, and a slot's buffer belongs to
 * the I/O thread exactly while finished[s] < queued[s]. `error` keeps the
 * first failure; ops after a failure still run (their results are discarded
 * by the caller, which learns of the error from cio_io_drain), so waits
 * always end.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "iothread.h"

/* Runs one operation; 0 or an errno. A read past the end of the file fills
 * the rest of the buffer with zeros. */
static int do_op(int fd, const cio_op_t *op) {
  int64_t done = 0;
  while (done < op->len) {
    size_t want = (size_t)(op->len - done);
    ssize_t n = op->kind == CIO_OP_READ
                    ? pread(fd, op->buf + done, want, op->off + done)
                    : pwrite(fd, op->buf + done, want, op->off + done);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return errno;
    }
    if (n == 0) {
      if (op->kind == CIO_OP_READ) {
        memset(op->buf + done, 0, want);
        return 0;
      }
      return EIO;
    }
    done += n;
  }
  return 0;
}

/* The same for a scattered read / gathered write (op->iovcnt > 0). A short
 * transfer resumes where it stopped: the iovecs are copied, and the first
 * one still unfinished is trimmed. */
static int do_opv(int fd, const cio_op_t *op) {
  struct iovec v[CIO_IOV_MAX];
  int n = op->iovcnt, i = 0;
  memcpy(v, op->iov, (size_t)n * sizeof *v);
  int64_t off = op->off;
  while (i < n) {
    ssize_t got = op->kind == CIO_OP_READ ? preadv(fd, v + i, n - i, off)
                                          : pwritev(fd, v + i, n - i, off);
    if (got < 0) {
      if (errno == EINTR)
        continue;
      return errno;
    }
    if (got == 0) {
      if (op->kind != CIO_OP_READ)
        return EIO;
      for (; i < n; i++) /* past the end of the file: zeros */
        memset(v[i].iov_base, 0, v[i].iov_len);
      return 0;
    }
    off += got;
    while (i < n && (size_t)got >= v[i].iov_len)
      got -= (ssize_t)v[i++].iov_len;
    if (i < n) {
      v[i].iov_base = (char *)v[i].iov_base + got;
      v[i].iov_len -= (size_t)got;
    }
  }
  return 0;
}

static void *io_main(void *arg) {
  cio_io_t *io = arg;
  pthread_mutex_lock(&io->lock);
  for (;;) {
    while (io->count == 0 && !io->stop)
      pthread_cond_wait(&io->cond_work, &io->lock);
    if (io->count == 0 && io->stop)
      break;
    cio_op_t op = io->ring[io->head];
    pthread_mutex_unlock(&io->lock);
    int err = op.iovcnt > 0 ? do_opv(io->fd, &op) : do_op(io->fd, &op);
    pthread_mutex_lock(&io->lock);
    /* The op leaves the queue only when done, so a full queue cannot let the
     * caller queue past an op that still uses a slot. */
    io->head = (io->head + 1) % io->cap;
    io->count--;
    io->finished[op.slot]++;
    if (err && !io->error) {
      io->error = err;
      io->error_off = op.off;
    }
    pthread_cond_broadcast(&io->cond_done);
  }
  pthread_mutex_unlock(&io->lock);
  return NULL;
}

int cio_io_start(cio_io_t *io, int fd, int nslots) {
  memset(io, 0, sizeof *io);
  io->fd = fd;
  io->nslots = nslots;
  io->cap = 2 * nslots + 2;
  io->ring = calloc((size_t)io->cap, sizeof *io->ring);
  io->queued = calloc((size_t)nslots, sizeof *io->queued);
  io->finished = calloc((size_t)nslots, sizeof *io->finished);
  if (!io->ring || !io->queued || !io->finished) {
    free(io->ring);
    free(io->queued);
    free(io->finished);
    return ENOMEM;
  }
  pthread_mutex_init(&io->lock, NULL);
  pthread_cond_init(&io->cond_work, NULL);
  pthread_cond_init(&io->cond_done, NULL);
  int rc = pthread_create(&io->thread, NULL, io_main, io);
  if (rc) {
    pthread_mutex_destroy(&io->lock);
    pthread_cond_destroy(&io->cond_work);
    pthread_cond_destroy(&io->cond_done);
    free(io->ring);
    free(io->queued);
    free(io->finished);
    return rc;
  }
  io->running = 1;
  return 0;
}

static void submit(cio_io_t *io, int kind, int slot, char *buf,
                   const struct iovec *iov, int iovcnt, int64_t off,
                   int64_t len) {
  pthread_mutex_lock(&io->lock);
  while (io->count == io->cap)
    pthread_cond_wait(&io->cond_done, &io->lock);
  cio_op_t *op = &io->ring[(io->head + io->count) % io->cap];
  op->kind = kind;
  op->slot = slot;
  op->buf = buf;
  op->off = off;
  op->len = len;
  op->iov = iov;
  op->iovcnt = iovcnt;
  io->count++;
  io->queued[slot]++;
  pthread_cond_signal(&io->cond_work);
  pthread_mutex_unlock(&io->lock);
}

void cio_io_submit(cio_io_t *io, int kind, int slot, char *buf, int64_t off,
                   int64_t len) {
  submit(io, kind, slot, buf, NULL, 0, off, len);
}

void cio_io_submitv(cio_io_t *io, int kind, int slot, const struct iovec *iov,
                    int n, int64_t off, int64_t len) {
  submit(io, kind, slot, NULL, iov, n, off, len);
}

void cio_io_wait_slot(cio_io_t *io, int slot) {
  pthread_mutex_lock(&io->lock);
  while (io->finished[slot] != io->queued[slot])
    pthread_cond_wait(&io->cond_done, &io->lock);
  pthread_mutex_unlock(&io->lock);
}

int cio_io_drain(cio_io_t *io, int64_t *error_off) {
  pthread_mutex_lock(&io->lock);
  while (io->count > 0)
    pthread_cond_wait(&io->cond_done, &io->lock);
  int err = io->error;
  if (error_off)
    *error_off = io->error_off;
  io->error = 0;
  pthread_mutex_unlock(&io->lock);
  return err;
}

void cio_io_stop(cio_io_t *io) {
  if (!io->running)
    return;
  pthread_mutex_lock(&io->lock);
  io->stop = 1;
  pthread_cond_signal(&io->cond_work);
  pthread_mutex_unlock(&io->lock);
  pthread_join(io->thread, NULL);
  pthread_mutex_destroy(&io->lock);
  pthread_cond_destroy(&io->cond_work);
  pthread_cond_destroy(&io->cond_done);
  free(io->ring);
  free(io->queued);
  free(io->finished);
  io->running = 0;
}
