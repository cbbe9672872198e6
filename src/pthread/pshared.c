/*
 * pthread/pshared.c — futex-word objects: process-shared mutexes (also
 * robust, error-checking, recursive, with a priority protocol), condition
 * variables, rwlocks and barriers, and the waits on NPTL's semaphores.
 *
 * Why separate. swarm's objects (src/sync) queue waiters on lists of
 * pointers into this process's stacks, guarded by spinlocks: nothing
 * another process can take part in. These objects keep all their state in
 * 32-bit words inside the program's object and wait with kernel futexes
 * (shared, not FUTEX_PRIVATE), so they work across processes through
 * shared memory and, within a process, for any caller.
 *
 * Waiting. A kernel futex wait blocks the whole worker. So a swarm thread
 * waits in slices (psh_wait: SLICE_MIN_NS doubling to SLICE_MAX_NS), and
 * between two slices yields its worker to the threads queued there (the
 * holder may be one of them); a wake from another process ends a slice at
 * once. The worker is blocked for at most one slice at a time, and the
 * monitor's spare workers cover it meanwhile. Kernel threads that are not
 * swarm threads wait in the same loop (yielding the kernel thread).
 *
 * Mutex word (glibc's __lock, the kernel's robust-futex format): 0 free,
 * else the owner process's identity (below) | FUTEX_WAITERS when a waiter
 * may sleep in the kernel | FUTEX_OWNER_DIED once the kernel released it
 * for a dead owner. Which thread of that process owns it is `owner` (its
 * pthread_t), compared only by the process whose identity the word holds.
 *
 * Robust mutexes and the anchor. The kernel releases a robust futex when
 * the thread whose TID it holds exits, walking that thread's robust list.
 * A swarm thread has no kernel thread of its own, so each process keeps
 * one robust list for all its threads, registered (set_robust_list) by a
 * small kernel thread, the anchor, which only sleeps: it ends only with
 * the process, and its TID is the process's identity in robust words. So
 * when the process dies the kernel marks every robust mutex it held
 * FUTEX_OWNER_DIED and wakes a waiter, who gets EOWNERDEAD. The list is
 * guarded by one spinlock, held across each acquiring attempt and each
 * release with list_op_pending set, so no death can leave a held mutex
 * unlisted. A swarm thread that ends holding robust mutexes releases them
 * the same way (a key destructor walks the list for its pthread_t).
 * Non-robust mutexes use the process id as identity. After fork, the child
 * starts a new list and anchor on first use; the parent's stay the
 * parent's (as NPTL: the child owns none of them).
 *
 * Marks. A futex mutex has any of glibc's robust/priority/pshared kind
 * bits (pshared.h); a condition variable, rwlock or barrier a magic value
 * in a word swarm's object of that kind keeps zero (cond: reserved_[2];
 * rwlock: pad2_) or where it keeps an aligned pointer (barrier: head_).
 */
#include <limits.h>
#include <linux/futex.h>
#include <stddef.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "pthread/pshared.h"

#define SLICE_MIN_NS 20000ull   /* 20 us */
#define SLICE_MAX_NS 2000000ull /* 2 ms */

/* ---- futexes and the wait loop ---- */

static void futex_wait_shared(uint32_t *word, uint32_t val, uint64_t ns) {
  struct timespec ts = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
  syscall(SYS_futex, word, FUTEX_WAIT, val, &ts, NULL, 0);
}
static void futex_wake_shared(uint32_t *word, int n) {
  syscall(SYS_futex, word, FUTEX_WAKE, n, NULL, NULL, 0);
}

static inline uint32_t load32(const uint32_t *w) {
  return __atomic_load_n(w, __ATOMIC_ACQUIRE);
}

struct psh_waiting {
  uint64_t slice;
};

/* Waits while *word == val, for at most one slice (and never past the
 * deadline); then lets the worker run others. ETIMEDOUT once the deadline
 * (monotonic ns, 0: none) has passed, else 0 (the caller re-checks). */
static int psh_wait(struct psh_waiting *pw, uint32_t *word, uint32_t val,
                    uint64_t deadline) {
  uint64_t ns = pw->slice ? pw->slice : SLICE_MIN_NS;
  if (deadline) {
    uint64_t now = os_now_ns();
    if (now >= deadline)
      return ETIMEDOUT;
    if (deadline - now < ns)
      ns = deadline - now;
  }
  futex_wait_shared(word, val, ns);
  pw->slice = ns * 2 > SLICE_MAX_NS ? SLICE_MAX_NS : ns * 2;
  swarm_yield(); /* the holder may be queued on this worker */
  return 0;
}

/* A pending cancellation the caller must act on (after cleaning up). */
static bool cancel_requested(void) {
  struct dropin_thread *r =
      __atomic_load_n(&sync_self()->slots[SLOT_PTHREAD], __ATOMIC_ACQUIRE);
  return r && atomic_load_explicit(&r->cancel_pending, memory_order_seq_cst) &&
         r->cancel_state == PTHREAD_CANCEL_ENABLE && !r->exiting;
}

static inline uint64_t me(void) {
  return (uint64_t)(uintptr_t)dropin_self();
}

/* ---- the process's robust list and its anchor ---- */

struct robust_link { /* the kernel's struct robust_list, plus prev */
  struct robust_link *next;
  struct robust_link *prev;
};
struct robust_head {        /* the kernel's struct robust_list_head */
  struct robust_link *list; /* first link, or &list itself when empty */
  long futex_offset;
  struct robust_link *list_op_pending;
};

struct psh_mutex {
  uint32_t word;   /* glibc's __lock */
  uint32_t count;  /* recursion depth beyond the first lock */
  uint64_t owner;  /* the owning thread's pthread_t, in the owner process */
  int32_t kind;    /* glibc's __kind: type | PSH_KIND_* */
  uint16_t state;  /* robust: CONSISTENT, INCONSISTENT, NOTRECOVERABLE */
  int16_t ceiling; /* PTHREAD_PRIO_PROTECT's ceiling, recorded */
  struct robust_link link; /* in the owner process's robust list */
};
_Static_assert(sizeof(struct psh_mutex) <= sizeof(pthread_mutex_t), "pmutex");
_Static_assert(offsetof(struct psh_mutex, kind) == 16, "pmutex kind");
enum { CONSISTENT, INCONSISTENT, NOTRECOVERABLE };

static struct {
  uint32_t lock; /* guards head and the links; sync's object rank */
  pid_t pid;     /* the process the anchor belongs to (fork resets) */
  uint32_t tid;
  struct robust_head head;
  swarm_key_t key; /* its destructor releases a dying thread's mutexes */
  bool key_made;
} robust;

static void *anchor_main(void *arg) {
  (void)arg;
  sigset_t all;
  sigfillset(&all);
  sys_sigmask(SIG_SETMASK, &all, NULL); /* never runs a program's handler */
  syscall(SYS_set_robust_list, &robust.head, sizeof robust.head);
  uint32_t tid = (uint32_t)sys_gettid();
  __atomic_store_n(&robust.tid, tid, __ATOMIC_RELEASE);
  futex_wake_shared(&robust.tid, INT_MAX);
  uint32_t never = 0;
  for (;;)
    syscall(SYS_futex, &never, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
  return NULL;
}

static void robust_thread_exit(void *value);

/* The process's identity in robust words: the anchor's TID, started on
 * first use (again in a forked child). 0 if it cannot be started. */
static uint32_t robust_identity(void) {
  pid_t pid = (pid_t)syscall(SYS_getpid);
  uint32_t tid = __atomic_load_n(&robust.tid, __ATOMIC_ACQUIRE);
  if (robust.pid == pid && tid)
    return tid;
  /* The first caller in a fork child frees the lock a thread of the parent
   * may have held at the fork. (A second thread of the child that takes it
   * between this one's exchange and store would lose it: only at the
   * child's very first robust lock, by two threads at once.) */
  static pid_t lock_reset_by;
  pid_t before = __atomic_exchange_n(&lock_reset_by, pid, __ATOMIC_ACQ_REL);
  if (before != 0 && before != pid)
    __atomic_store_n(&robust.lock, 0, __ATOMIC_RELEASE);
  sync_spin_lock(&robust.lock);
  if (robust.pid != pid) { /* first use, or a child of fork */
    robust.pid = pid;
    robust.tid = 0;
    robust.head.list = (struct robust_link *)&robust.head.list;
    robust.head.futex_offset = (long)offsetof(struct psh_mutex, word) -
                               (long)offsetof(struct psh_mutex, link);
    robust.head.list_op_pending = NULL;
    pthread_t t;
    sync_spin_unlock(&robust.lock);
    if (!robust.key_made) {
      robust.key_made = swarm_key_create(&robust.key, robust_thread_exit) == 0;
    }
    if (libc_pthread_create(&t, NULL, anchor_main, NULL) != 0) {
      __atomic_store_n(&robust.pid, 0, __ATOMIC_RELEASE); /* try again */
      return 0;
    }
    /* never joined: it lives as long as the process */
    while (!(tid = __atomic_load_n(&robust.tid, __ATOMIC_ACQUIRE)))
      futex_wait_shared(&robust.tid, 0, SLICE_MAX_NS);
    return tid;
  }
  sync_spin_unlock(&robust.lock);
  while (!(tid = __atomic_load_n(&robust.tid, __ATOMIC_ACQUIRE)) &&
         __atomic_load_n(&robust.pid, __ATOMIC_ACQUIRE) == pid)
    swarm_yield(); /* another thread is starting the anchor */
  return tid;
}

static void robust_link_in(struct psh_mutex *m) {
  struct robust_link *head = (struct robust_link *)&robust.head.list;
  m->link.next = robust.head.list;
  m->link.prev = head;
  if (robust.head.list != head)
    robust.head.list->prev = &m->link;
  robust.head.list = &m->link;
}
static void robust_link_out(struct psh_mutex *m) {
  struct robust_link *head = (struct robust_link *)&robust.head.list;
  if (m->link.prev == head)
    robust.head.list = m->link.next;
  else
    m->link.prev->next = m->link.next;
  if (m->link.next != head)
    m->link.next->prev = m->link.prev;
}

/* Key destructor: a thread ended holding robust mutexes; as the kernel
 * does for a dead process, mark each owner-died, release and wake one. */
static void robust_thread_exit(void *value) {
  (void)value;
  uint64_t self = me();
  struct robust_link *head = (struct robust_link *)&robust.head.list;
  sync_spin_lock(&robust.lock);
  for (struct robust_link *l = robust.head.list; l != head;) {
    struct psh_mutex *m =
        (struct psh_mutex *)(void *)((char *)l -
                                     offsetof(struct psh_mutex, link));
    l = l->next;
    if (m->owner != self)
      continue;
    robust_link_out(m);
    m->owner = 0;
    m->count = 0;
    __atomic_store_n(&m->word, FUTEX_OWNER_DIED, __ATOMIC_RELEASE);
    futex_wake_shared(&m->word, 1);
  }
  sync_spin_unlock(&robust.lock);
}

/* ---- mutexes ---- */

static inline struct psh_mutex *pm(const pthread_mutex_t *m) {
  return (struct psh_mutex *)(void *)(uintptr_t)m;
}

static inline bool kind_valid(int32_t kind) {
  int type = kind & PSH_KIND_TYPE;
  return !(kind & ~(PSH_KIND_TYPE | PSH_KIND_FUTEX)) && type <= 3;
}

int psh_mutex_init(pthread_mutex_t *mx, int kind, int ceiling) {
  struct psh_mutex *m = pm(mx);
  memset(mx, 0, sizeof *mx);
  m->kind = kind;
  m->ceiling = (int16_t)ceiling;
  return 0;
}

/* The caller's process identity in this mutex's word (0: none to be had). */
static inline uint32_t identity(const struct psh_mutex *m) {
  if (m->kind & PSH_KIND_ROBUST)
    return robust_identity();
  return (uint32_t)syscall(SYS_getpid);
}

static inline bool held_by_me(const struct psh_mutex *m, uint32_t id) {
  return (load32(&m->word) & FUTEX_TID_MASK) == id && m->owner == me();
}

int psh_mutex_destroy(pthread_mutex_t *mx) {
  struct psh_mutex *m = pm(mx);
  if (!kind_valid(m->kind))
    return EINVAL;
  if (load32(&m->word) & FUTEX_TID_MASK)
    return EBUSY;
  m->kind = -1; /* as glibc: later calls answer EINVAL */
  return 0;
}

/* One attempt to take a free word; robust: under the list lock, with the
 * link pending, so a death at any instant leaves nothing unlisted. */
static int try_take(struct psh_mutex *m, uint32_t id, uint32_t extra) {
  bool rob = m->kind & PSH_KIND_ROBUST;
  if (rob) {
    sync_spin_lock(&robust.lock);
    robust.head.list_op_pending = &m->link;
  }
  uint32_t w = load32(&m->word);
  int r = EBUSY;
  if (!(w & FUTEX_TID_MASK) &&
      __atomic_compare_exchange_n(&m->word, &w,
                                  id | (w & FUTEX_WAITERS) | extra, false,
                                  __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
    m->owner = me();
    m->count = 0;
    r = 0;
    if (rob) {
      robust_link_in(m);
      if (w & FUTEX_OWNER_DIED) {
        m->state = INCONSISTENT;
        r = EOWNERDEAD;
      }
    }
  }
  if (rob) {
    robust.head.list_op_pending = NULL;
    sync_spin_unlock(&robust.lock);
    if (r != EBUSY && robust.key_made)
      swarm_setspecific(robust.key, (void *)1); /* its exit releases them */
  }
  return r;
}

int psh_mutex_lock(pthread_mutex_t *mx, bool try, uint64_t deadline,
                   bool expired) {
  struct psh_mutex *m = pm(mx);
  if (!kind_valid(m->kind))
    return EINVAL;
  if ((m->kind & PSH_KIND_ROBUST) && m->state == NOTRECOVERABLE)
    return ENOTRECOVERABLE;
  uint32_t id = identity(m);
  if (!id)
    return EAGAIN;
  int type = m->kind & PSH_KIND_TYPE;
  if (type != PTHREAD_MUTEX_NORMAL && type != PTHREAD_MUTEX_ADAPTIVE_NP &&
      held_by_me(m, id)) {
    if (type == PTHREAD_MUTEX_ERRORCHECK) /* NPTL's robust try: EDEADLK */
      return try && !(m->kind & PSH_KIND_ROBUST) ? EBUSY : EDEADLK;
    if (m->count == UINT32_MAX)
      return EAGAIN;
    m->count++;
    return 0;
  }
  struct psh_waiting pw = {0};
  uint32_t extra = 0;
  for (;;) {
    int r = try_take(m, id, extra);
    if (r != EBUSY) {
      if (r == 0 && (m->kind & PSH_KIND_ROBUST) && m->state == NOTRECOVERABLE) {
        psh_mutex_unlock(mx);
        return ENOTRECOVERABLE;
      }
      return r;
    }
    if (try)
      return EBUSY;
    if (expired)
      return ETIMEDOUT;
    uint32_t w = load32(&m->word);
    if (!(w & FUTEX_TID_MASK))
      continue;
    if (!(w & FUTEX_WAITERS) &&
        !__atomic_compare_exchange_n(&m->word, &w, w | FUTEX_WAITERS, false,
                                     __ATOMIC_RELAXED, __ATOMIC_RELAXED))
      continue;
    extra = FUTEX_WAITERS; /* others may sleep too: keep the bit */
    if (psh_wait(&pw, &m->word, w | FUTEX_WAITERS, deadline))
      return ETIMEDOUT;
  }
}

int psh_mutex_unlock(pthread_mutex_t *mx) {
  struct psh_mutex *m = pm(mx);
  if (!kind_valid(m->kind))
    return EINVAL;
  int type = m->kind & PSH_KIND_TYPE;
  bool rob = m->kind & PSH_KIND_ROBUST;
  bool strict = rob || type == PTHREAD_MUTEX_ERRORCHECK ||
                type == PTHREAD_MUTEX_RECURSIVE;
  uint32_t w = load32(&m->word);
  if (!(w & FUTEX_TID_MASK))
    return strict ? EPERM : 0; /* NPTL: a free normal mutex answers 0 */
  if (strict && !held_by_me(m, identity(m)))
    return EPERM;
  if (type == PTHREAD_MUTEX_RECURSIVE && m->count > 0) {
    m->count--;
    return 0;
  }
  if (rob) {
    if (m->state == INCONSISTENT) /* unlocked without being made consistent */
      m->state = NOTRECOVERABLE;
    sync_spin_lock(&robust.lock);
    robust.head.list_op_pending = &m->link;
    robust_link_out(m);
  }
  m->owner = 0;
  uint32_t old = __atomic_exchange_n(&m->word, 0, __ATOMIC_RELEASE);
  if (rob) {
    robust.head.list_op_pending = NULL;
    sync_spin_unlock(&robust.lock);
  }
  if (old & FUTEX_WAITERS)
    futex_wake_shared(&m->word,
                      rob && m->state == NOTRECOVERABLE ? INT_MAX : 1);
  return 0;
}

int psh_mutex_consistent(pthread_mutex_t *mx) {
  struct psh_mutex *m = pm(mx);
  if (!kind_valid(m->kind) || !(m->kind & PSH_KIND_ROBUST) ||
      m->state != INCONSISTENT || !held_by_me(m, identity(m)))
    return EINVAL;
  m->state = CONSISTENT;
  return 0;
}

int psh_mutex_getprioceiling(const pthread_mutex_t *mx, int *ceiling) {
  const struct psh_mutex *m = pm(mx);
  if (!kind_valid(m->kind) || !(m->kind & PSH_KIND_PRIO_PROTECT))
    return EINVAL;
  *ceiling = m->ceiling;
  return 0;
}

int psh_mutex_setprioceiling(pthread_mutex_t *mx, int ceiling, int *old) {
  struct psh_mutex *m = pm(mx);
  if (!kind_valid(m->kind) || !(m->kind & PSH_KIND_PRIO_PROTECT) ||
      ceiling < sched_get_priority_min(SCHED_FIFO) ||
      ceiling > sched_get_priority_max(SCHED_FIFO))
    return EINVAL;
  /* POSIX: it locks the mutex, changes the ceiling, unlocks it. */
  int e = psh_mutex_lock(mx, false, 0, false);
  if (e && e != EOWNERDEAD)
    return e;
  if (old)
    *old = m->ceiling;
  m->ceiling = (int16_t)ceiling;
  return psh_mutex_unlock(mx);
}

/* ---- condition variables ---- */

#define COND_MAGIC 0x5053484152454443ull /* "PSHAREDC" */
struct psh_cond {
  uint32_t seq; /* bumped by every signal and broadcast */
  int32_t clock;
  uint32_t waiters;
  uint32_t pad[7];
  uint64_t magic; /* where swarm_cond_t keeps reserved_[2] (zero) */
};
_Static_assert(sizeof(struct psh_cond) <= sizeof(pthread_cond_t), "pcond");
_Static_assert(offsetof(struct psh_cond, magic) ==
                   offsetof(swarm_cond_t, reserved_[2]),
               "pcond mark");

static inline struct psh_cond *pc(const pthread_cond_t *c) {
  return (struct psh_cond *)(void *)(uintptr_t)c;
}
bool psh_cond_is_ours(const pthread_cond_t *c) {
  return pc(c)->magic == COND_MAGIC;
}
int psh_cond_init(pthread_cond_t *c, clockid_t clock) {
  memset(c, 0, sizeof *c);
  pc(c)->clock = clock;
  pc(c)->magic = COND_MAGIC;
  return 0;
}
int psh_cond_destroy(pthread_cond_t *c) {
  if (__atomic_load_n(&pc(c)->waiters, __ATOMIC_ACQUIRE))
    return EBUSY;
  pc(c)->magic = 0;
  return 0;
}
int psh_cond_clock(const pthread_cond_t *c) {
  return pc(c)->clock;
}
/* The sequence-and-waiters protocol, on a psh_cond's words or on the
 * reserved words of a swarm condition variable (psh_private_cond_*). A
 * waiter counts itself and reads the sequence before it unlocks the mutex;
 * a waker bumps the sequence, then wakes if anyone counted itself. */
static void words_wake(uint32_t *seq, uint32_t *waiters, bool all) {
  __atomic_fetch_add(seq, 1, __ATOMIC_SEQ_CST);
  if (__atomic_load_n(waiters, __ATOMIC_SEQ_CST))
    futex_wake_shared(seq, all ? INT_MAX : 1);
}

static int words_wait(uint32_t *seqw, uint32_t *waiters, pthread_mutex_t *mx,
                      uint64_t deadline) {
  dropin_testcancel();
  __atomic_fetch_add(waiters, 1, __ATOMIC_SEQ_CST);
  uint32_t seq = __atomic_load_n(seqw, __ATOMIC_SEQ_CST);
  int e = pthread_mutex_unlock(mx);
  if (e) {
    __atomic_fetch_sub(waiters, 1, __ATOMIC_RELEASE);
    return e;
  }
  struct psh_waiting pw = {0};
  bool cancel = false;
  while (__atomic_load_n(seqw, __ATOMIC_ACQUIRE) == seq) {
    if ((cancel = cancel_requested()))
      break;
    if ((e = psh_wait(&pw, seqw, seq, deadline)))
      break;
  }
  __atomic_fetch_sub(waiters, 1, __ATOMIC_RELEASE);
  int r = pthread_mutex_lock(mx); /* held again, whatever happened */
  if (cancel)
    dropin_act_cancel(); /* with the mutex held, as POSIX wants */
  return r == EOWNERDEAD ? r : e;
}

int psh_cond_wake(pthread_cond_t *c, bool all) {
  words_wake(&pc(c)->seq, &pc(c)->waiters, all);
  return 0;
}
int psh_cond_wait(pthread_cond_t *c, pthread_mutex_t *mx, uint64_t deadline) {
  return words_wait(&pc(c)->seq, &pc(c)->waiters, mx, deadline);
}

/* A swarm condition variable waited on with a futex-word mutex: swarm's
 * waiter queue cannot release that mutex atomically with queueing, so such
 * waiters use the protocol above on two words of the object that swarm
 * keeps zero (reserved_[0]); its signal and broadcast wake them too. */
static inline uint32_t *private_seq(pthread_cond_t *c) {
  return (uint32_t *)(void *)&((swarm_cond_t *)(void *)c)->reserved_[0];
}
bool psh_private_cond_waited(pthread_cond_t *c) {
  return __atomic_load_n(private_seq(c) + 1, __ATOMIC_SEQ_CST) != 0;
}
void psh_private_cond_wake(pthread_cond_t *c, bool all) {
  words_wake(private_seq(c), private_seq(c) + 1, all);
}
int psh_private_cond_wait(pthread_cond_t *c, pthread_mutex_t *mx,
                          uint64_t deadline) {
  return words_wait(private_seq(c), private_seq(c) + 1, mx, deadline);
}

/* ---- rwlocks: state = readers | RW_WRITER; prefers readers, as NPTL's
 * default ---- */

#define RW_MAGIC 0x50534852u /* "PSHR" */
#define RW_WRITER 0x80000000u
struct psh_rwlock {
  uint32_t state;
  uint32_t waiters;
  uint64_t writer;     /* the writing thread's pthread_t ... */
  uint32_t writer_pid; /* ... in this process */
  uint32_t pad[7];
  uint32_t kind;  /* swarm_rwlock_t's kind_ */
  uint32_t magic; /* where swarm_rwlock_t keeps pad2_ (zero) */
};
_Static_assert(sizeof(struct psh_rwlock) <= sizeof(pthread_rwlock_t), "prw");
_Static_assert(offsetof(struct psh_rwlock, magic) ==
                   offsetof(swarm_rwlock_t, pad2_),
               "prw mark");

static inline struct psh_rwlock *prw(const pthread_rwlock_t *rw) {
  return (struct psh_rwlock *)(void *)(uintptr_t)rw;
}
bool psh_rwlock_is_ours(const pthread_rwlock_t *rw) {
  return prw(rw)->magic == RW_MAGIC;
}
int psh_rwlock_init(pthread_rwlock_t *rw) {
  memset(rw, 0, sizeof *rw);
  prw(rw)->magic = RW_MAGIC;
  return 0;
}
int psh_rwlock_destroy(pthread_rwlock_t *rw) {
  if (load32(&prw(rw)->state))
    return EBUSY;
  prw(rw)->magic = 0;
  return 0;
}
static bool i_write(const struct psh_rwlock *l, uint32_t s) {
  return (s & RW_WRITER) && l->writer == me() &&
         l->writer_pid == (uint32_t)syscall(SYS_getpid);
}
int psh_rwlock_lock(pthread_rwlock_t *rw, bool writer, bool try,
                    uint64_t deadline, bool expired) {
  struct psh_rwlock *l = prw(rw);
  struct psh_waiting pw = {0};
  for (;;) {
    uint32_t s = load32(&l->state), want;
    if (i_write(l, s))
      return try ? EBUSY : EDEADLK;
    if (writer ? s == 0 : !(s & RW_WRITER)) {
      if (!writer && s == RW_WRITER - 1)
        return EAGAIN;
      want = writer ? RW_WRITER : s + 1;
      if (__atomic_compare_exchange_n(&l->state, &s, want, false,
                                      __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
        if (writer) {
          l->writer = me();
          l->writer_pid = (uint32_t)syscall(SYS_getpid);
        }
        return 0;
      }
      continue;
    }
    if (try)
      return EBUSY;
    if (expired)
      return ETIMEDOUT;
    __atomic_fetch_add(&l->waiters, 1, __ATOMIC_ACQ_REL);
    int e = psh_wait(&pw, &l->state, s, deadline);
    __atomic_fetch_sub(&l->waiters, 1, __ATOMIC_RELEASE);
    if (e)
      return e;
  }
}
int psh_rwlock_unlock(pthread_rwlock_t *rw) {
  struct psh_rwlock *l = prw(rw);
  uint32_t s = load32(&l->state);
  if (s & RW_WRITER) {
    if (!i_write(l, s))
      return EPERM;
    l->writer = 0;
    l->writer_pid = 0;
    __atomic_store_n(&l->state, 0, __ATOMIC_RELEASE);
  } else if (s) {
    __atomic_fetch_sub(&l->state, 1, __ATOMIC_RELEASE);
  } else {
    return EPERM;
  }
  if (__atomic_load_n(&l->waiters, __ATOMIC_ACQUIRE))
    futex_wake_shared(&l->state, INT_MAX);
  return 0;
}

/* ---- barriers ---- */

#define BAR_MAGIC 0x5053484152454231ull /* odd: never a waiter pointer */
struct psh_barrier {
  uint32_t pad;
  uint32_t count;
  uint32_t arrived;
  uint32_t round; /* the futex: bumped when a round completes */
  uint64_t magic; /* where swarm_barrier_t keeps head_ */
};
_Static_assert(sizeof(struct psh_barrier) <= sizeof(pthread_barrier_t), "pb");
_Static_assert(offsetof(struct psh_barrier, magic) ==
                   offsetof(swarm_barrier_t, head_),
               "pb mark");

static inline struct psh_barrier *pb(const pthread_barrier_t *b) {
  return (struct psh_barrier *)(void *)(uintptr_t)b;
}
bool psh_barrier_is_ours(const pthread_barrier_t *b) {
  return pb(b)->magic == BAR_MAGIC;
}
int psh_barrier_init(pthread_barrier_t *b, unsigned count) {
  if (count == 0 || count > INT_MAX)
    return EINVAL;
  memset(b, 0, sizeof *b);
  pb(b)->count = count;
  pb(b)->magic = BAR_MAGIC;
  return 0;
}
int psh_barrier_destroy(pthread_barrier_t *b) {
  if (load32(&pb(b)->arrived))
    return EBUSY;
  pb(b)->magic = 0;
  pb(b)->count = 0;
  return 0;
}
/* Every participant reads the round before it arrives; the last arrival
 * resets the count before it starts the next round, so nobody of the next
 * round can arrive early. */
int psh_barrier_wait(pthread_barrier_t *b) {
  struct psh_barrier *k = pb(b);
  uint32_t round = load32(&k->round);
  uint32_t n = __atomic_add_fetch(&k->arrived, 1, __ATOMIC_ACQ_REL);
  if (n == k->count) {
    __atomic_store_n(&k->arrived, 0, __ATOMIC_RELAXED);
    __atomic_fetch_add(&k->round, 1, __ATOMIC_RELEASE);
    futex_wake_shared(&k->round, INT_MAX);
    return PTHREAD_BARRIER_SERIAL_THREAD;
  }
  struct psh_waiting pw = {0};
  while (load32(&k->round) == round)
    psh_wait(&pw, &k->round, round, 0);
  return 0;
}

/* ---- NPTL's semaphores ---- */

int psh_sem_wait(sem_t *s, uint64_t deadline, bool timed) {
  dropin_testcancel();
  struct psh_waiting pw = {0};
  for (;;) {
    if (libc_sem_trywait(s) == 0)
      return 0;
    /* os_errno_location, not errno: the loop's swarm_yield may move us to
     * another worker, and the compiler may keep errno's address from the
     * first iteration (glibc declares __errno_location const). */
    if (*os_errno_location() != EAGAIN)
      return -1;
    uint64_t ns = pw.slice ? pw.slice : SLICE_MIN_NS;
    uint64_t now = os_now_ns();
    if (timed && now >= deadline)
      return dropin_fail(ETIMEDOUT);
    if (timed && deadline - now < ns)
      ns = deadline - now;
    now += ns;
    struct timespec until = {(time_t)(now / 1000000000u),
                             (long)(now % 1000000000u)};
    if (libc_sem_clockwait(s, CLOCK_MONOTONIC, &until) == 0)
      return 0;
    if (*os_errno_location() != ETIMEDOUT)
      return -1; /* EINTR, EINVAL: as NPTL */
    pw.slice = ns * 2 > SLICE_MAX_NS ? SLICE_MAX_NS : ns * 2;
    swarm_yield();
    if (cancel_requested())
      dropin_act_cancel();
  }
}
