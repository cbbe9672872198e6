/*
 * dist/window.c — each rank's MPI window and the uni-address region in it,
 * on whichever transport the MPI library offers, and the passive-target
 * progress the slower path needs.
 *
 * Two paths, chosen at init (collectively: every rank takes the same one)
 * and named by swarm_dist_window_path():
 *
 *  shared   MPI_Win_allocate, and the region's pages of the window mapped a
 *           second time at DIST_UNI_BASE (mremap of old size 0). Needs
 *           window memory that is a shared mapping: Open MPI's osc sm/rdma
 *           with every rank on one node. A steal's gets are loads from
 *           shared memory; no MPI progress is needed at the victim.
 *  created  swarm maps the whole window itself, at a fixed address chosen
 *           so that the region lands on DIST_UNI_BASE, and exposes it with
 *           MPI_Win_create. Any transport accepts it (TCP, UCX, verbs,
 *           Open MPI's osc pt2pt), on nodes that share no memory.
 * `auto` (the default, SWARM_DIST_WINDOW=auto|shared|created) takes shared
 * when every rank is on one node and it works, created otherwise.
 *
 * Progress (created path only): a transport without hardware passive-
 * target progress applies a thief's get/put/fetch-and-op only inside an MPI
 * call at the victim. The victim's scheduler loop calls MPI all the time;
 * a running thread polls at spawn safe points (swarm_dist_spawn_poll); and
 * a progress thread calls MPI_Iprobe every SWARM_DIST_PROGRESS_US
 * microseconds (default 50) and spins without sleeping while this rank's
 * deque lock is held by someone, so a steal against a victim that computes
 * without spawning costs about one interval for the thief's first access,
 * then runs at network speed. MPI_THREAD_SERIALIZED (Open MPI's osc pt2pt
 * refuses MULTIPLE): the progress thread calls MPI only holding the MPI
 * lock, which the main thread holds except while it runs thread code; thread
 * code takes it around its own MPI calls (dist_mpi_enter). Under message
 * stealing the progress thread also answers steal requests, taking the
 * oldest continuation like a thief (sched.c's deq_take_oldest).
 *
 * Invariants: the window's offsets are the same on every rank; the region
 * is the same pages as window offset off_region on both paths; the
 * progress thread calls MPI only holding the MPI lock, writes the window
 * memory only through the deque protocol (a thief's claim of the oldest
 * entry, under the deque lock, which it only tries to take: its holder may
 * need the MPI lock to let go), and is joined before the window is freed.
 */
#include "dist_internal.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static const char *const path_names[] = {"shared", "created"};

const char *swarm_dist_window_path(void) {
  return dist->initialized ? path_names[dist->window_path] : "none";
}

/* Offsets of the window's parts, page rounding aside (same on all ranks). */
static size_t layout(void) {
  size_t nrec = (size_t)1 << DIST_REC_BITS; /* the handle's index bits */
  dist->n_records = nrec;
  dist->off_records = (sizeof(dist_meta_t) + 63) & ~(size_t)63;
  dist->off_evac = dist->off_records + nrec * sizeof(dist_rec_t);
  dist->off_global = dist->off_evac + dist->evac_size;
  return dist->off_global + dist->global_size;
}

/* Collective: every rank's local verdict, min-reduced. */
static int all_agree(int ok) {
  int all_ok;
  MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return all_ok;
}

static int win_is_unified(MPI_Win w) {
  int *model, flag;
  MPI_Win_get_attr(w, MPI_WIN_MODEL, &model, &flag);
  return flag && *model == MPI_WIN_UNIFIED;
}

/* Reserves the region's address range; 0 or an error printed by name. */
static int reserve_region(void *want, size_t size) {
  void *res = mmap(want, size, PROT_NONE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
  if (res == want)
    return 0;
  fprintf(stderr,
          "swarm-dist: rank %d on %s: address range %p..+%zu for the "
          "uni-address region is taken: %s\n",
          dist->rank, dist->node_name, want, size,
          res == MAP_FAILED ? strerror(errno) : "mapped elsewhere");
  if (res != MAP_FAILED)
    munmap(res, size);
  return -1;
}

/* ---- shared: MPI_Win_allocate + mremap alias ---------------------------- */

/* 1 on success (on every rank), 0 after undoing everything (on every
 * rank); `quiet` leaves the reason unprinted (auto falls back). */
static int try_shared(MPI_Comm wcomm, size_t region_unaligned, int quiet) {
  long page = sysconf(_SC_PAGESIZE);
  size_t total = region_unaligned + dist->region_size + 2 * (size_t)page;
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "alloc_shared_noncontig", "true");
  int e = MPI_Win_allocate((MPI_Aint)total, 1, info, wcomm, &dist->win_base,
                           &dist->win);
  MPI_Info_free(&info);
  /* Allocation fails on all ranks alike in practice (the osc component is
   * chosen collectively); were it to succeed on some only, their
   * MPI_Win_free would wait for the others: no worse than MPI's abort. */
  if (!all_agree(e == MPI_SUCCESS)) {
    if (e == MPI_SUCCESS)
      MPI_Win_free(&dist->win);
    return 0;
  }
  int ok = win_is_unified(dist->win);
  /* The region starts on a page boundary of this rank's window memory;
   * offsets must agree across ranks, so take the largest (allocate was two
   * pages larger, and all ranks' bases are page+const aligned in
   * practice: checked). */
  uintptr_t b = (uintptr_t)dist->win_base + region_unaligned;
  uint64_t off =
      (uint64_t)(((b + (uintptr_t)page - 1) & ~((uintptr_t)page - 1)) -
                 (uintptr_t)dist->win_base);
  uint64_t max_off;
  MPI_Allreduce(&off, &max_off, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
  dist->off_region = max_off;
  void *src = dist->win_base + dist->off_region;
  void *want = (void *)DIST_UNI_BASE;
  if (ok && ((uintptr_t)src & ((uintptr_t)page - 1)) != 0)
    ok = 0;
  if (ok && reserve_region(want, dist->region_size) != 0)
    ok = 0;
  else if (ok) {
    /* old_size 0: a second mapping of the same (shared) pages. Alone, no
     * thief ever reads the region through the window (and Open MPI then
     * gives private memory): plain anonymous memory will do. */
    void *res;
    if (dist->nranks == 1)
      res = mmap(want, dist->region_size, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    else
      res = mremap(src, 0, dist->region_size, MREMAP_MAYMOVE | MREMAP_FIXED,
                   want);
    if (res != want) {
      if (!quiet)
        fprintf(stderr,
                "swarm-dist: rank %d on %s: cannot map the MPI window at the "
                "uni-address (mremap: %s)\n",
                dist->rank, dist->node_name, strerror(errno));
      munmap(want, dist->region_size);
      ok = 0;
    }
  }
  if (all_agree(ok))
    return 1;
  if (ok)
    munmap(want, dist->region_size);
  MPI_Win_free(&dist->win);
  return 0;
}

/* ---- created: our own mapping + MPI_Win_create -------------------------- */

static int make_created(MPI_Comm wcomm, size_t region_unaligned) {
  long page = sysconf(_SC_PAGESIZE);
  dist->off_region =
      (region_unaligned + (size_t)page - 1) & ~((size_t)page - 1);
  size_t total = dist->off_region + dist->region_size;
  char *base = (char *)DIST_UNI_BASE - dist->off_region;
  int ok = 0, e = MPI_ERR_OTHER;
  if (reserve_region(base, total) == 0) {
    ok = mprotect(base, total, PROT_READ | PROT_WRITE) == 0;
    if (!ok)
      fprintf(stderr, "swarm-dist: rank %d on %s: mprotect: %s\n", dist->rank,
              dist->node_name, strerror(errno));
  }
  if (!all_agree(ok)) {
    if (ok)
      munmap(base, total);
    return 0;
  }
  dist->win_base = base;
  e = MPI_Win_create(base, (MPI_Aint)total, 1, MPI_INFO_NULL, wcomm,
                     &dist->win);
  if (e != MPI_SUCCESS) {
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(e, msg, &len);
    fprintf(stderr,
            "swarm-dist: rank %d on %s: MPI_Win_create over the "
            "uni-address region fails: %s%s\n",
            dist->rank, dist->node_name, msg,
#ifdef OPEN_MPI
            " (Open MPI: across nodes without RDMA hardware this needs osc "
            "pt2pt, e.g. OMPI_MCA_osc=^ucx or --mca osc pt2pt)"
#else
            ""
#endif
    );
  }
  ok = e == MPI_SUCCESS && win_is_unified(dist->win);
  if (e == MPI_SUCCESS && !ok)
    fprintf(stderr, "swarm-dist: this MPI's windows are not "
                    "MPI_WIN_UNIFIED\n");
  if (all_agree(ok))
    return 1;
  if (e == MPI_SUCCESS)
    MPI_Win_free(&dist->win);
  munmap(base, total);
  return 0;
}

/* ---- progress thread ---------------------------------------------------- */

__thread int swarm_dist_mpi_held;

int swarm_dist_mpi_trylock(void) {
  if (__atomic_exchange_n(&dist->mpi_lock, 1, __ATOMIC_ACQUIRE))
    return 0;
  swarm_dist_mpi_held = 1;
  return 1;
}

void swarm_dist_mpi_lock(void) {
  unsigned spins = 0;
  while (__atomic_exchange_n(&dist->mpi_lock, 1, __ATOMIC_ACQUIRE))
    if (++spins % 64 == 0)
      sched_yield(); /* the progress thread may share our core */
    else
      __builtin_ia32_pause();
  swarm_dist_mpi_held = 1;
}

void swarm_dist_mpi_unlock(void) {
  swarm_dist_mpi_held = 0;
  __atomic_store_n(&dist->mpi_lock, 0, __ATOMIC_RELEASE);
}

/* Only while the main thread runs thread code (it holds the lock
 * otherwise, and calls MPI itself). The interval adapts: it starts at
 * SWARM_DIST_PROGRESS_US and doubles after every turn that found nothing to
 * do, up to DIST_PROGRESS_SLOW times that; a turn that answered a message
 * steal, or found a thief holding the deque lock, goes back to the
 * shortest. (Waking every 50 us cost each rank ~20% more CPU in UTS T1L
 * across two nodes, where thieves come a dozen times a run.) */
#define DIST_PROGRESS_SLOW 16

static void *progress_main(void *unused) {
  (void)unused;
  uint64_t ns = dist->progress_ns;
  while (!__atomic_load_n(&dist->progress_stop, __ATOMIC_ACQUIRE)) {
    int busy = 0, active = 0;
    if (swarm_dist_mpi_trylock()) {
      int flag;
      MPI_Iprobe(MPI_ANY_SOURCE, 0, dist->progress_comm, &flag,
                 MPI_STATUS_IGNORE);
      /* Message steals: answered here too, from the oldest continuation
       * (above the running code, so its frames stand still). */
      if (dist->serve_msg && dist->in_run)
        active = swarm_dist_serve_requests_nowait() > 0;
      /* A thief holds our deque lock: it is mid-steal and each of its
       * next accesses needs us; keep progressing until it lets go. */
      busy = vload(&dist->meta->lock) != 0;
      swarm_dist_mpi_unlock();
    }
    if (busy || active)
      ns = dist->progress_ns;
    else if (ns < DIST_PROGRESS_SLOW * dist->progress_ns)
      ns *= 2;
    if (!busy) {
      struct timespec ts = {(time_t)(ns / 1000000000ull),
                            (long)(ns % 1000000000ull)};
      nanosleep(&ts, NULL);
    }
  }
  return NULL;
}

static void start_progress(void) {
  const char *s = getenv("SWARM_DIST_PROGRESS_US");
  long us = s && *s ? atol(s) : 50;
  if (us <= 0 || dist->thread_level < MPI_THREAD_SERIALIZED) {
    if (dist->rank == 0 && us > 0)
      fprintf(stderr, "swarm-dist: MPI gives no MPI_THREAD_SERIALIZED: no "
                      "progress thread; a thread that computes without "
                      "spawning delays steals from its rank\n");
    return;
  }
  dist->progress_ns = (uint64_t)us * 1000;
  MPI_Comm_dup(MPI_COMM_WORLD, &dist->progress_comm);
  swarm_dist_mpi_lock(); /* the main thread's, until it runs threads */
  if (pthread_create(&dist->progress_thread, NULL, progress_main, NULL) != 0) {
    swarm_dist_mpi_unlock();
    MPI_Comm_free(&dist->progress_comm);
    return;
  }
  dist->progress_on = 1;
}

static void stop_progress(void) {
  if (!dist->progress_on)
    return;
  __atomic_store_n(&dist->progress_stop, 1, __ATOMIC_RELEASE);
  pthread_join(dist->progress_thread, NULL);
  swarm_dist_mpi_unlock();
  MPI_Comm_free(&dist->progress_comm);
  dist->progress_on = 0;
}

/* Safe-point poll of a running thread (spawn), created path: lets MPI
 * apply thieves' accesses to this rank's window. */
void swarm_dist_progress_poll(void) {
  int flag;
  MPI_Iprobe(MPI_ANY_SOURCE, 0, dist->comm, &flag, MPI_STATUS_IGNORE);
}

/* ---- choice ------------------------------------------------------------- */

static int parse_path(int *want) {
  const char *s = getenv("SWARM_DIST_WINDOW");
  *want = -1;
  if (!s || !*s || strcmp(s, "auto") == 0)
    return 0;
  for (int i = 0; i < 2; i++)
    if (strcmp(s, path_names[i]) == 0)
      *want = i;
  if (*want >= 0)
    return 0;
  if (dist->rank == 0)
    fprintf(stderr,
            "swarm-dist: SWARM_DIST_WINDOW=%s: want auto, shared or "
            "created\n",
            s);
  return EINVAL;
}

/* Counts the nodes (ranks that can share memory, as MPI sees them) and
 * lists the other ranks on this one (the thieves' first choice). */
static int find_nodes(void) {
  MPI_Comm node;
  int node_rank, node_size, leaders;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL,
                      &node);
  MPI_Comm_rank(node, &node_rank);
  MPI_Comm_size(node, &node_size);
  dist->node_peers = malloc(sizeof(int) * (size_t)node_size);
  if (!dist->node_peers)
    swarm_dist_fatal("out of memory");
  MPI_Allgather(&dist->rank, 1, MPI_INT, dist->node_peers, 1, MPI_INT, node);
  MPI_Comm_free(&node);
  int k = 0;
  for (int i = 0; i < node_size; i++)
    if (dist->node_peers[i] != dist->rank)
      dist->node_peers[k++] = dist->node_peers[i];
  dist->n_node_peers = k;
  dist->on_node = calloc((size_t)dist->nranks, 1);
  dist->load_seen = calloc((size_t)dist->nranks, sizeof *dist->load_seen);
  if (!dist->on_node || !dist->load_seen)
    swarm_dist_fatal("out of memory");
  for (int i = 0; i < k; i++)
    dist->on_node[dist->node_peers[i]] = 1;
  int leader = node_rank == 0;
  MPI_Allreduce(&leader, &leaders, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  return leaders;
}

/* Collective: sets up the window on one path; 0, or an errno on every rank
 * (after saying why). */
int swarm_dist_window_setup(void) {
  int want, e = parse_path(&want);
  if (!all_agree(e == 0))
    return EINVAL;
  dist->n_nodes = find_nodes();
  size_t region_unaligned = layout();
  MPI_Comm wcomm; /* window creation errors return instead of aborting */
  MPI_Comm_dup(MPI_COMM_WORLD, &wcomm);
  MPI_Comm_set_errhandler(wcomm, MPI_ERRORS_RETURN);
  int ok = 0;
  if (want == 0 || (want < 0 && dist->n_nodes == 1)) {
    ok = try_shared(wcomm, region_unaligned, want < 0);
    dist->window_path = 0;
    if (!ok && want == 0 && dist->rank == 0)
      fprintf(stderr,
              "swarm-dist: SWARM_DIST_WINDOW=shared: the window "
              "memory is not shareable (ranks on %d nodes; Open MPI "
              "osc sm/rdma on one node is)\n",
              dist->n_nodes);
  }
  if (!ok && want != 0) {
    ok = make_created(wcomm, region_unaligned);
    dist->window_path = 1;
  }
  MPI_Comm_free(&wcomm);
  if (!ok)
    return ENOTSUP;
  MPI_Win_set_errhandler(dist->win, MPI_ERRORS_ARE_FATAL);
  dist->meta = (dist_meta_t *)dist->win_base;
  dist->records = (dist_rec_t *)(dist->win_base + dist->off_records);
  memset(dist->meta, 0, sizeof *dist->meta);
  /* handle words 0: "never used" (sched.c, rec_alloc and swarm_join) */
  memset(dist->records, 0, dist->n_records * sizeof(dist_rec_t));
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Win_lock_all(MPI_MODE_NOCHECK, dist->win);
  dist->progress_stop = 0;
  if (dist->window_path == 1)
    start_progress();
  return 0;
}

void swarm_dist_window_free(void) {
  stop_progress();
  MPI_Win_unlock_all(dist->win);
  MPI_Win_free(&dist->win);
  if (dist->window_path == 1)
    munmap(dist->win_base, dist->off_region + dist->region_size);
  else
    munmap((void *)DIST_UNI_BASE, dist->region_size);
}
