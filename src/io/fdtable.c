/*
 * io/fdtable.c — the descriptor table: entries made a chunk at a time on
 * first use of one of their numbers (never freed: a close bumps the
 * entry's generation instead, io/poller.c; a chunk is IO_FD_CHUNK entries
 * of one aligned cache line each, then their cold parts, struct
 * io_fd_cold, reached by descriptor number), and the first look at a
 * descriptor (classify: which path its calls take), and the end of the
 * file a number names (a close or a dup3 through us, io_fd_forget_with;
 * a new file at a number whose old one was closed behind our back,
 * io_fd_created): a new generation, the waiters woken with EBADF
 * (poller.c's design comment says why in that order). Lookups are inline
 * (io.h: io_fd_entry, io_fd_get); what is here runs once per chunk and
 * once per new or closed descriptor.
 *
 * Races kept here: two threads making the same chunk (one CAS wins, the
 * other frees its own); two classifying the same entry (under its lock,
 * the second finds kind set). kind is stored last, with release, so a
 * lookup that reads it non-zero (acquire) sees the rest of the entry.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "io/backend.h"

#include "io/io.h"

_Atomic(struct io_fd *) io_fd_chunks[IO_FD_MAX_CHUNKS];

/* A chunk of entries, made on first use of one of its numbers. */
struct io_fd *io_fd_chunk_make(uint32_t c) {
  struct io_fd *chunk = NULL;
  /* the entries, each one aligned line, then their cold parts */
  size_t size =
      IO_FD_CHUNK * (sizeof(struct io_fd) + sizeof(struct io_fd_cold));
  struct io_fd *fresh = aligned_alloc(_Alignof(struct io_fd), size);
  if (!fresh)
    return NULL;
  memset(fresh, 0, size);
  for (uint32_t i = 0; i < IO_FD_CHUNK; i++)
    spin_init(&fresh[i].lock, LOCK_IO_FD);
  if (atomic_compare_exchange_strong(&io_fd_chunks[c], &chunk, fresh))
    return fresh;
  free(fresh); /* another thread's chunk won */
  return chunk;
}

/* Decides e's kind (under its lock). Reads only: the file's flags are
 * the program's and stay as they are. */
static void classify(struct io_fd *e, int fd, bool adopt, int *err) {
  atomic_store(&e->opts, 0); /* a new file: nothing known of its flags */
  struct stat st;
  if (fstat(fd, &st) != 0) {
    *err = errno;
    return;
  }
  unsigned type = st.st_mode & S_IFMT;
  if (type == S_IFREG || type == S_IFBLK) {
    atomic_store(&e->kind, FD_FILE);
    return;
  }
  /* anonymous inodes (eventfd, timerfd, epoll, signalfd) have no type */
  bool pollable = type == S_IFSOCK || type == S_IFIFO || type == 0 ||
                  (type == S_IFCHR && adopt);
  if (!pollable) {
    atomic_store(&e->kind, FD_PASS);
    return;
  }
  e->socket = type == S_IFSOCK;
  e->fifo = type == S_IFIFO;
  atomic_store(&e->ended, false);
  int so_type = 0;
  socklen_t len = sizeof so_type;
  e->stream =
      e->fifo ||
      (e->socket && getsockopt(fd, SOL_SOCKET, SO_TYPE, &so_type, &len) == 0 &&
       so_type == SOCK_STREAM);
  atomic_store(&e->drained, 0);
  /* until the kernel says otherwise, per direction (eventfd reads have
   * RWF_NOWAIT, its writes not) */
  atomic_store(&e->how[0], IO_HOW_NOWAIT);
  atomic_store(&e->how[1], IO_HOW_NOWAIT);
  atomic_store(&e->busy[0], 0);
  atomic_store(&e->busy[1], 0);
  atomic_store(&e->kind, FD_POLLABLE);
}

struct io_fd *io_fd_get_slow(int fd, bool adopt) {
  struct io_fd *e = io_fd_entry(fd);
  if (!e) {
    errno = fd < 0 ? EBADF : ENOMEM;
    return NULL;
  }
  if (likely(atomic_load_explicit(&e->kind, memory_order_acquire)))
    return e;
  int err = 0;
  spin_lock(&e->lock);
  if (!atomic_load(&e->kind))
    classify(e, fd, adopt, &err);
  spin_unlock(&e->lock);
  if (err) {
    errno = err;
    return NULL;
  }
  return e;
}

/* ---- the end of a descriptor's file ---- */

/* Takes e (locked) out of its worker's poller if it is in one: before its
 * file closes, for an io_uring poll holds the file open until cancelled. */
static void entry_unregister(struct io_fd *e, int fd) {
  if (e->registered)
    io_backend_of()->del(io_worker_at(e->owner), fd,
                         io_token(atomic_load(&e->gen), fd));
}

/* e (locked, classified) no longer names the file it named: a new
 * generation (its events still queued are dropped, a thread about to park
 * retries and a call in progress ends with EBADF: call_loop), every armed
 * waiter claimed with EBADF (prepended to *done, for ready_all after the
 * unlock), and the entry unclassified. The caller has taken it out of its
 * poller. */
static void entry_forget(struct io_fd *e, struct io_node **done) {
  atomic_fetch_add(&e->gen, 1);
  atomic_fetch_add(&e->rseq, 1); /* a parking thread retries: EBADF */
  atomic_fetch_add(&e->wseq, 1);
  for (int d = 0; d < 2; d++) {
    struct io_node *n = e->head[d];
    while (n) {
      struct io_node *next = n->next;
      if (io_wait_claim(n->wait)) {
        n->wait->closed = true;
        io_node_unlink(e, n);
        n->ready_next = *done;
        *done = n;
      }
      n = next;
    }
  }
  e->registered = false;
  e->socket = e->fifo = e->stream = false;
  atomic_store(&e->drained, 0);
  atomic_store(&e->kind, FD_UNKNOWN);
}

static long op_close(int fd, void *arg) {
  (void)arg;
  return sys_close(fd);
}

/* The descriptor number fd stops naming what it named: op (close, or the
 * dup3 that replaces it) runs under the entry's lock, then waiters are
 * woken with EBADF. The order matters: a waiter woken before the kernel
 * let go of the file would look again, find it still open, register it
 * anew and wait for an event that can no longer come. Holding the lock
 * across op also keeps a new descriptor of the same number from being
 * classified before we are done. */
long io_fd_forget_with(int fd, long (*op)(int, void *), void *arg) {
  struct io_fd *e = io_fd_entry(fd);
  if (!e)
    return op(fd, arg);
  struct io_node *done = NULL;
  spin_lock(&e->lock);
  entry_unregister(e, fd);
  for (struct io_node *n = e->head[0]; n; n = n->next)
    if (n->ring) /* its recv finds this file, and its thread cancels it */
      io_backend_of()->flush(n->ring_iw);
  long r = op(fd, arg);
  if (atomic_load(&e->kind))
    entry_forget(e, &done);
  spin_unlock(&e->lock);
  io_ready_all(done);
  return r;
}

long io_fd_close(int fd) {
  return io_fd_forget_with(fd, op_close, NULL);
}

void io_fd_created(int fd) {
  struct io_fd *e = io_fd_entry(fd);
  if (!e)
    return;
  struct io_node *done = NULL;
  spin_lock(&e->lock);
  /* Classified: the number named another file, closed behind our back
   * (stdio's fclose). epoll forgot it with the file; an io_uring poll
   * holds the file open until cancelled, so cancel it now, late as it
   * is. What waited on that file ends with EBADF, as after a close
   * through us; left parked, the new file's first edge would perform an
   * old waiter's call on it and hand the new file's data to the wrong
   * thread. (Only a classified entry is ever registered.) */
  if (atomic_load(&e->kind)) {
    entry_unregister(e, fd);
    entry_forget(e, &done);
  }
  spin_unlock(&e->lock);
  io_ready_all(done);
}
