/*
 * io/offload.c — regular-file reads and writes off the workers: a small
 * pool of kernel threads performs them while the calling swarm thread is
 * parked, so a worker never waits for the disk (epoll cannot wait for a
 * regular file: it is always "ready", and a read that misses the page
 * cache blocks in the kernel).
 *
 * A job lives on the parked thread's stack. Park's commit (after the
 * switch) appends it to the FIFO under the pool's lock and wakes an idle
 * pool thread through the futex word; the pool thread performs the call,
 * stores the result, and readies the thread (from a non-worker: through a
 * worker's ready queue). The job is not touched after the thread is
 * readied, and commit does not touch it after releasing the lock.
 * Threads are started on demand, while none is idle, up to OFFLOAD_MAX;
 * idle ones wait on the futex without a deadline (no CPU when idle).
 *
 * Rejected for now: io_uring (liburing) — it would save the hand-off
 * between kernel threads, but needs a per-worker ring polled like the
 * epolls and a kernel that allows it (containers often forbid it); the
 * pool needs nothing and works under qemu-user too.
 */
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/uio.h>

#include "io/io.h"

#define OFFLOAD_MAX 4

struct job {
  struct io_node *n;
  long result;
  struct swarm_thread *thread;
  struct job *next;
};

static struct {
  struct spinlock lock;  /* LOCK_OFFLOAD */
  _Atomic uint32_t word; /* futex: bumped on every submission */
  struct job *head, *tail;
  int nthreads, nidle;
} pool = {.lock = SPINLOCK_INIT(LOCK_OFFLOAD)};

static void pool_lock(void) {
  spin_lock(&pool.lock);
}

static void pool_unlock(void) {
  spin_unlock(&pool.lock);
}

static void *pool_main(void *arg) {
  (void)arg;
  /* named for top and for tests/io/test_io_file_eof.c, which proves what
   * does not come here; prctl, not pthread_setname_np, which the drop-in
   * could interpose */
  prctl(PR_SET_NAME, "swarm-io-pool", 0, 0, 0);
  for (;;) {
    pool_lock();
    struct job *j = pool.head;
    if (!j) {
      pool.nidle++;
      uint32_t seq = atomic_load(&pool.word);
      pool_unlock();
      os_futex_wait(&pool.word, seq, -1);
      pool_lock();
      pool.nidle--;
      pool_unlock();
      continue;
    }
    pool.head = j->next;
    if (!pool.head)
      pool.tail = NULL;
    pool_unlock();
    struct swarm_thread *t = j->thread;
    j->result = j->n->attempt(j->n);
    swarm_ready(t); /* j is gone once t runs */
  }
  return NULL;
}

static bool commit_submit(struct swarm_thread *self, void *arg) {
  (void)self;
  struct job *j = arg;
  j->next = NULL;
  pool_lock();
  if (pool.tail)
    pool.tail->next = j;
  else
    pool.head = j;
  pool.tail = j;
  atomic_fetch_add(&pool.word, 1);
  pool_unlock();
  os_futex_wake(&pool.word, 1);
  return true;
}

/* The page cache first: preadv2/pwritev2 with RWF_NOWAIT at the file's
 * own position (offset -1) completes without blocking when the data is
 * cached and says EAGAIN (or EOPNOTSUPP on file systems without it)
 * otherwise. Only a complete transfer is kept: a partial one would be
 * legal, but programs often assume a regular file reads in full. */
static long pool_run(struct io_node *n);

/* SWARM_IO_FILE_NOWAIT=0 sends every regular-file call to the pool (the
 * tests use it to exercise the pool whatever the page cache holds). */
static bool nowait_enabled(void) {
  static _Atomic int mode; /* 0 unknown, 1 on, 2 off */
  int m = atomic_load_explicit(&mode, memory_order_relaxed);
  if (unlikely(!m)) {
    const char *v = getenv("SWARM_IO_FILE_NOWAIT");
    m = v && v[0] == '0' ? 2 : 1;
    atomic_store_explicit(&mode, m, memory_order_relaxed);
  }
  return m == 1;
}

/* A read or write of one buffer, which the pool may finish when the page
 * cache gave part of it. */
static bool one_buffer(const struct io_node *n) {
  return n->attempt == io_attempt_read || n->attempt == io_attempt_write ||
         n->attempt == io_attempt_pread || n->attempt == io_attempt_pwrite;
}

static long try_nowait(struct io_node *n, size_t *total) {
  struct iovec one, *iov;
  int cnt;
  *total = 0;
  if (!nowait_enabled())
    return -EAGAIN;
  if (one_buffer(n)) {
    one.iov_base = n->buf;
    one.iov_len = n->len;
    iov = &one;
    cnt = 1;
  } else if (n->attempt == io_attempt_readv ||
             n->attempt == io_attempt_writev ||
             n->attempt == io_attempt_preadv ||
             n->attempt == io_attempt_pwritev) {
    iov = (struct iovec *)n->iov;
    cnt = n->iovcnt;
  } else {
    return -EAGAIN; /* fsync, fdatasync: to the pool */
  }
  bool reading = !n->dir;
  /* the positional calls at their offset (io_do_at checked it is >= 0),
   * the others at the file position (-1) */
  long offset = n->file_only ? (long)n->offset : -1L;
  size_t want = 0;
  for (int i = 0; i < cnt; i++)
    want += iov[i].iov_len;
  *total = want;
  if (reading)
    return sys_preadv2(n->fd, iov, cnt, offset, RWF_NOWAIT);
  long r = sys_pwritev2(n->fd, iov, cnt, offset, RWF_NOWAIT);
  /* 0 is the end of the file only for a read: a write of something that
   * says 0 wrote nothing, and the pool's blocking call does it (a failed
   * RWF_NOWAIT write once read back as 0 here, os/sys.h's sys_raw6). */
  return r == 0 && want > 0 ? -EAGAIN : r;
}

long io_offload(struct io_node *n) {
  if (!worker_current())
    return n->attempt(n); /* a kernel thread of the program's: block it */
  size_t want = 0;
  long r = try_nowait(n, &want);
  if (r == (long)want || r == 0 ||
      (r < 0 && r != -EAGAIN && r != -EOPNOTSUPP && r != -ENOSYS &&
       r != -EINVAL))
    return r; /* done from the cache, end of file, or a real error */
  if (r > 0 && !one_buffer(n))
    return r;  /* a short readv/writev: legal, and we cannot un-read it */
  if (r > 0) { /* the rest of a read or write: the cache again, else the pool */
    struct io_node rest = *n;
    long done = r, more;
    for (;;) {
      rest.buf = (char *)n->buf + done;
      rest.len = n->len - (size_t)done;
      rest.offset = n->offset + done; /* positional calls: the rest's place */
      /* A short read is most often the end of the file (a 1 KiB file read
       * into a 16 KiB buffer): asking the cache once more says 0 in one
       * system call, where the pool costs a park, two futex wakes and a
       * kernel thread's pread (the httpd example paid this per request,
       * docs/io.md). */
      more = try_nowait(&rest, &want);
      if (more > 0 && (size_t)more < want) {
        done += more;
        continue;
      }
      if (more >= 0)
        return done + more; /* the rest from the cache, or end of file */
      break;
    }
    more = pool_run(&rest);
    return more < 0 ? done : done + more;
  }
  return pool_run(n);
}

static long pool_run(struct io_node *n) {
  pool_lock();
  bool start = pool.nidle == 0 && pool.nthreads < OFFLOAD_MAX;
  if (start)
    pool.nthreads++;
  pool_unlock();
  if (start) {
    pthread_t kt;
    if (os_thread_start(&kt, pool_main, NULL) != 0) {
      pool_lock();
      bool none = --pool.nthreads == 0;
      pool_unlock();
      if (none)
        return n->attempt(n);
    } /* never joined: pool threads live as long as the process */
  }
  struct job j = {.n = n, .thread = swarm_current_thread()};
  swarm_park(commit_submit, &j, SWARM_PARK_IO, NULL);
  return j.result;
}

long io_offload_blocking(struct io_node *n) {
  if (!worker_current())
    return n->attempt(n);
  return pool_run(n);
}

void io_offload_after_fork(void) {
  /* the pool's kernel threads did not survive the fork */
  spin_init(&pool.lock, LOCK_OFFLOAD);
  pool.head = pool.tail = NULL;
  pool.nthreads = pool.nidle = 0;
}
