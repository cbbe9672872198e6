/*
 * dist/init.c — bringing the distributed runtime up and down: the steal
 * mode, ASLR (re-exec with ADDR_NO_RANDOMIZE before MPI_Init, then a
 * cross-rank check of every mapped object's load address), the order of
 * setup (window.c makes the window and the uni-address region),
 * swarm_dist_run's collective framing, and the counters.
 *
 * Invariants: after a successful swarm_dist_init every rank has the same
 * load address for every object, the window is in a passive-target epoch
 * (MPI_Win_lock_all) until swarm_dist_finalize, and the uni-address region
 * at DIST_UNI_BASE is the same pages as window offset off_region. On any
 * failure MPI is finalised again before returning, on every rank alike
 * (the decisions are collective), so no rank is left waiting.
 */
#include "dist_internal.h"

#include <errno.h>
#include <link.h>
#include <stdarg.h>
#include <string.h>
#include <sys/personality.h>
#include <unistd.h>

dist_state_t swarm_dist_state;

void swarm_dist_fatal(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "swarm-dist: fatal: ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
  MPI_Abort(MPI_COMM_WORLD, 1);
  abort();
}

/* ---- ASLR -------------------------------------------------------------- */

static int aslr_on(void) {
  FILE *f = fopen("/proc/sys/kernel/randomize_va_space", "r");
  int v = 2;
  if (f) {
    if (fscanf(f, "%d", &v) != 1)
      v = 2;
    fclose(f);
  }
  return v != 0;
}

/* Once, before MPI_Init: run the program again with randomisation off.
 * SWARM_DIST_REEXECED marks the second run (and stops a loop if the
 * kernel ignored the flag); SWARM_DIST_NO_REEXEC=1 skips this, so that the
 * address check's error path can be tested. */
static void aslr_reexec(char **argv) {
  const char *again = getenv("SWARM_DIST_REEXECED");
  int was_again = again != NULL;
  if (was_again)
    unsetenv("SWARM_DIST_REEXECED");
  int pers = personality(0xffffffff);
  if (pers == -1 || (pers & ADDR_NO_RANDOMIZE) || was_again || !aslr_on())
    return;
  const char *skip = getenv("SWARM_DIST_NO_REEXEC");
  if (skip && *skip && strcmp(skip, "0") != 0)
    return;
  if (personality((unsigned long)pers | ADDR_NO_RANDOMIZE) == -1)
    return;
  setenv("SWARM_DIST_REEXECED", "1", 1);
  execv("/proc/self/exe", argv);
  /* exec failed: go on; the address check reports what differs. */
  unsetenv("SWARM_DIST_REEXECED");
  personality((unsigned long)pers);
}

/* ---- address check ----------------------------------------------------- */

#define ADDR_MAX 128
typedef struct addr_list {
  int n;
  uint64_t addr[ADDR_MAX];
  char name[ADDR_MAX][48];
  char node[64]; /* MPI_Get_processor_name, for the message */
} addr_list_t;

static int collect_cb(struct dl_phdr_info *info, size_t size, void *p) {
  (void)size;
  addr_list_t *l = p;
  if (l->n >= ADDR_MAX)
    return 0;
  const char *nm =
      info->dlpi_name && *info->dlpi_name ? info->dlpi_name : "(executable)";
  const char *slash = strrchr(nm, '/');
  snprintf(l->name[l->n], sizeof l->name[0], "%s", slash ? slash + 1 : nm);
  l->addr[l->n] = (uint64_t)info->dlpi_addr;
  l->n++;
  return 0;
}

/* The objects mapped before MPI_Init: the executable and the libraries it
 * was linked with (libswarm-dist, libc, libmpi, ...), plus this library's
 * state. Taken before MPI_Init on purpose: the plugins MPI dlopens during
 * MPI_Init land after its helper threads' stacks, in an order that varies
 * between runs (seen: libpmix 128 MiB apart on one rank of four), and no
 * migrating frame refers to them — threads are suspended or stolen only
 * inside swarm_spawn/swarm_join, never inside an MPI call. */
static addr_list_t startup_objects;

static void collect_startup_objects(void) {
  addr_list_t *l = &startup_objects;
  memset(l, 0, sizeof *l);
  dl_iterate_phdr(collect_cb, l);
  if (l->n < ADDR_MAX) {
    l->addr[l->n] = (uint64_t)(uintptr_t)&swarm_dist_state;
    snprintf(l->name[l->n], sizeof l->name[0], "libswarm-dist state");
    l->n++;
  }
}

/* Collective. 0 when every rank mapped the same startup objects at the
 * same addresses, EADDRNOTAVAIL (after rank 0 said what differs)
 * otherwise. */
static int check_addresses(void) {
  addr_list_t mine = startup_objects;
  snprintf(mine.node, sizeof mine.node, "%.63s", dist->node_name);
  const char *skew = getenv("SWARM_DIST_TEST_SKEW");
  if (skew && atoi(skew) == dist->rank && dist->rank != 0)
    mine.addr[0] += 4096; /* tests: pretend this rank's executable moved */
  addr_list_t *all = malloc(sizeof(addr_list_t) * (size_t)dist->nranks);
  if (!all)
    return ENOMEM;
  MPI_Allgather(&mine, (int)sizeof mine, MPI_BYTE, all, (int)sizeof mine,
                MPI_BYTE, MPI_COMM_WORLD);
  int bad = 0;
  for (int r = 1; r < dist->nranks; r++) {
    int n = all[r].n < all[0].n ? all[r].n : all[0].n;
    for (int i = 0; i < n; i++) {
      if (all[r].addr[i] != all[0].addr[i] ||
          strcmp(all[r].name[i], all[0].name[i]) != 0) {
        if (dist->rank == 0 && bad < 4)
          fprintf(stderr,
                  "swarm-dist: addresses differ across ranks: %s at %#llx on "
                  "rank 0 (node %s) but %s at %#llx on rank %d (node %s)\n",
                  all[0].name[i], (unsigned long long)all[0].addr[i],
                  all[0].node, all[r].name[i],
                  (unsigned long long)all[r].addr[i], r, all[r].node);
        bad++;
        break;
      }
    }
    if (all[r].n != all[0].n && !bad) {
      if (dist->rank == 0)
        fprintf(stderr,
                "swarm-dist: addresses differ across ranks: %d objects "
                "mapped on rank 0 (node %s), %d on rank %d (node %s)\n",
                all[0].n, all[0].node, all[r].n, r, all[r].node);
      bad++;
    }
  }
  free(all);
  if (bad && dist->rank == 0)
    fprintf(stderr,
            "swarm-dist: code and static data must sit at the same addresses "
            "on every rank (uni-address threads migrate with return addresses "
            "and pointers). Address space randomisation is %s; swarm_dist_init "
            "re-executes the program with ADDR_NO_RANDOMIZE unless "
            "SWARM_DIST_NO_REEXEC is set. Run the same binary, built as one "
            "executable, on every rank.\n",
            aslr_on() ? "on" : "off");
  return bad ? EADDRNOTAVAIL : 0;
}

/* Open MPI: Debian's openmpi-mca-params.conf disables osc pt2pt, the
 * only one-sided component that works between nodes without RDMA hardware
 * (osc rdma over TCP cannot create windows). Unless the user chose the osc
 * components, allow it again for this process (sm and rdma still rank
 * above it where they work). */
static void default_osc(void) {
#ifdef OPEN_MPI
  const char *w = getenv("SWARM_DIST_WINDOW");
  if (!getenv("OMPI_MCA_osc") && !(w && strcmp(w, "shared") == 0))
    setenv("OMPI_MCA_osc", "^ucx", 0);
#endif
}

/* ---- configuration ----------------------------------------------------- */

static int parse_size(const char *env, size_t dflt, size_t *out) {
  const char *s = getenv(env);
  if (!s || !*s) {
    *out = dflt;
    return 0;
  }
  char *end;
  unsigned long long v = strtoull(s, &end, 10);
  switch (*end) {
  case 'K':
  case 'k':
    v <<= 10;
    end++;
    break;
  case 'M':
  case 'm':
    v <<= 20;
    end++;
    break;
  case 'G':
  case 'g':
    v <<= 30;
    end++;
    break;
  default:
    break;
  }
  if (*end || v < 65536) {
    fprintf(stderr, "swarm-dist: %s=%s: want a size of at least 64K\n", env, s);
    return EINVAL;
  }
  *out = (size_t)((v + 4095) & ~4095ull);
  return 0;
}

static int parse_steal(const char *s, swarm_dist_steal_t *out) {
  if (strcmp(s, "rma") == 0)
    *out = SWARM_DIST_STEAL_RMA;
  else if (strcmp(s, "msg") == 0)
    *out = SWARM_DIST_STEAL_MSG;
  else if (strcmp(s, "auto") == 0)
    *out = SWARM_DIST_STEAL_AUTO;
  else {
    fprintf(stderr, "swarm-dist: steal mode '%s': want rma, msg or auto\n", s);
    return EINVAL;
  }
  return 0;
}

/* Takes `--steal X` / `--steal=X` out of argv. */
static int take_steal_flag(int *argc, char **argv, swarm_dist_steal_t *out) {
  int e = 0, j = 1;
  for (int i = 1; i < *argc; i++) {
    if (strcmp(argv[i], "--steal") == 0 && i + 1 < *argc) {
      e = e ? e : parse_steal(argv[++i], out);
      continue;
    }
    if (strncmp(argv[i], "--steal=", 8) == 0) {
      e = e ? e : parse_steal(argv[i] + 8, out);
      continue;
    }
    argv[j++] = argv[i];
  }
  argv[j] = NULL;
  *argc = j;
  return e;
}

/* ---- public entry points ----------------------------------------------- */

int swarm_dist_init(int *argc, char ***argv) {
  if (dist->initialized)
    return EBUSY;
#if !defined(__x86_64__) || !defined(__linux__)
  (void)argc;
  (void)argv;
  fprintf(stderr, "swarm-dist: uni-address threads are implemented for "
                  "x86-64 Linux only\n");
  return ENOTSUP;
#else
  if (!argc || !argv || !*argv)
    return EINVAL;
  /* Re-executing is only possible before MPI_Init: a program that called
   * MPI_Init itself keeps its randomised layout, and the check below
   * refuses it unless the ranks happen to agree. */
  int inited;
  MPI_Initialized(&inited);
  if (!inited)
    aslr_reexec(*argv);
  collect_startup_objects();
  swarm_dist_steal_t steal = SWARM_DIST_STEAL_AUTO;
  const char *env = getenv("SWARM_DIST_STEAL");
  int e = env && *env ? parse_steal(env, &steal) : 0;
  int e2 = take_steal_flag(argc, *argv, &steal);
  e = e ? e : e2;
  size_t region, heap, global;
  if (!e)
    e = parse_size("SWARM_DIST_STACK", (size_t)16 << 20, &region);
  if (!e)
    e = parse_size("SWARM_DIST_HEAP", (size_t)32 << 20, &heap);
  if (!e)
    e = parse_size("SWARM_DIST_GLOBAL", (size_t)16 << 20, &global);
  if (!inited) {
    default_osc();
    /* SERIALIZED for the created path's progress thread (window.c). */
    MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &dist->thread_level);
  } else
    MPI_Query_thread(&dist->thread_level);
  MPI_Comm_rank(MPI_COMM_WORLD, &dist->rank);
  MPI_Comm_size(MPI_COMM_WORLD, &dist->nranks);
  if (!e && dist->nranks > 65535) /* handles, global refs: 16 rank bits */
    e = ENOTSUP;
  int name_len;
  MPI_Get_processor_name(dist->node_name, &name_len);
  /* Configuration errors are local; agree on failing. */
  int any;
  MPI_Allreduce(&e, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (!any)
    any = check_addresses();
  if (!any) {
    dist->steal_mode = steal;
    dist->region_size = region;
    dist->evac_size = heap;
    dist->global_size = global;
    any = swarm_dist_window_setup();
  }
  if (any) {
    MPI_Finalize();
    return any;
  }
  MPI_Comm_dup(MPI_COMM_WORLD, &dist->comm);
  dist->rng_state = 0x9e3779b97f4a7c15ull * (uint64_t)(dist->rank + 1);
  /* A running thread answers message steals every 32 spawns; on the
   * created window it lets MPI apply RMA every 1024 (~0.1 ms of fib; the
   * progress thread bounds the wait anyway, and an MPI_Iprobe every 32
   * spawns would be 3 million calls in UTS T1L). */
  /* AUTO across nodes answers message steals from other nodes at every
   * 256th spawn (the progress thread answers in between). */
  dist->remote_msg =
      dist->steal_mode == SWARM_DIST_STEAL_AUTO && dist->n_nodes > 1;
  dist->serve_msg =
      dist->steal_mode == SWARM_DIST_STEAL_MSG || dist->remote_msg;
  dist->spawn_poll = dist->serve_msg || dist->window_path == 1;
  dist->spawn_poll_mask = dist->steal_mode == SWARM_DIST_STEAL_MSG ? 31
                          : dist->remote_msg                       ? 255
                                                                   : 1023;
  swarm_dist_trace_init();
  swarm_dist_sched_steps();
  dist->initialized = 1;
  const char *stats = getenv("SWARM_STATS");
  if (stats && *stats && strcmp(stats, "0") != 0 && dist->rank == 0)
    fprintf(stderr,
            "swarm-dist: %d ranks on %d nodes, window %s, %s stealing, "
            "progress thread %s\n",
            dist->nranks, dist->n_nodes, swarm_dist_window_path(),
            dist->steal_mode == SWARM_DIST_STEAL_MSG ? "message"
            : dist->remote_msg ? "RMA on the node, message across nodes"
                               : "RMA",
            dist->progress_on ? "on" : "off");
  return 0;
#endif
}

int swarm_dist_finalize(void) {
  if (!dist->initialized || dist->in_run)
    return EPERM;
  MPI_Barrier(MPI_COMM_WORLD);
  swarm_dist_trace_finish();
  swarm_dist_window_free();
  MPI_Comm_free(&dist->comm);
  free(dist->evac_pending);
  free(dist->node_peers);
  free(dist->on_node);
  free(dist->load_seen);
  memset(dist, 0, sizeof *dist);
  MPI_Finalize();
  return 0;
}

int swarm_dist_run(void *(*fn)(void *), void *arg, void **result) {
  if (!dist->initialized || dist->in_run)
    return EPERM;
  if (!fn)
    return EINVAL;
  dist->run++;
  swarm_dist_sched_reset();
  MPI_Win_sync(dist->win);
  MPI_Barrier(MPI_COMM_WORLD);
  dist->in_run = 1;
  uint64_t r = 0;
  swarm_dist_sched_loop(fn, arg, &r);
  dist->in_run = 0;
  MPI_Bcast(&r, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  if (result)
    *result = (void *)(uintptr_t)r;
  return 0;
}

int swarm_dist_rank(void) {
  return dist->initialized ? dist->rank : -1;
}
int swarm_dist_ranks(void) {
  return dist->initialized ? dist->nranks : 0;
}
int swarm_dist_nodes(void) {
  return dist->initialized ? dist->n_nodes : 0;
}
swarm_dist_steal_t swarm_dist_steal_mode(void) {
  return dist->steal_mode;
}

const char *swarm_dist_steal_name(swarm_dist_steal_t mode) {
  switch (mode) {
  case SWARM_DIST_STEAL_RMA:
    return "rma";
  case SWARM_DIST_STEAL_MSG:
    return "msg";
  case SWARM_DIST_STEAL_AUTO:
    return "auto";
  }
  return "?";
}

int swarm_dist_stats_get(swarm_dist_stats_t *s) {
  if (!s)
    return EINVAL;
  *s = dist->stats;
  return 0;
}

int swarm_dist_stats_sum(swarm_dist_stats_t *s) {
  if (!s)
    return EINVAL;
  if (!dist->initialized)
    return EPERM;
  MPI_Allreduce(&dist->stats, s, (int)(sizeof *s / sizeof(uint64_t)),
                MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
  return 0;
}

/* ---- steal latency samples ---------------------------------------------- */

void swarm_dist_record_steal(uint64_t total, uint64_t lock, uint64_t index,
                             uint64_t entry, uint64_t frames, uint64_t unlock,
                             uint64_t bytes) {
  uint64_t v[7] = {total, lock, index, entry, frames, unlock, bytes};
  uint32_t *s = dist->steal_samples[dist->n_steal_samples % DIST_STEAL_SAMPLES];
  for (int i = 0; i < 7; i++)
    s[i] = v[i] > UINT32_MAX ? UINT32_MAX : (uint32_t)v[i];
  dist->n_steal_samples++;
}

void swarm_dist_steal_profile_reset(void) {
  dist->n_steal_samples = 0;
}

static int cmp_u32(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return x < y ? -1 : x > y;
}

int swarm_dist_steal_profile(swarm_dist_steal_profile_t *p) {
  if (!p)
    return EINVAL;
  if (!dist->initialized)
    return EPERM;
  int mine =
      (int)(dist->n_steal_samples < DIST_STEAL_SAMPLES ? dist->n_steal_samples
                                                       : DIST_STEAL_SAMPLES);
  int *counts = calloc((size_t)dist->nranks, sizeof(int));
  int *displs = calloc((size_t)dist->nranks, sizeof(int));
  if (!counts || !displs)
    swarm_dist_fatal("out of memory");
  int words = mine * 7;
  MPI_Allgather(&words, 1, MPI_INT, counts, 1, MPI_INT, MPI_COMM_WORLD);
  int total = 0;
  for (int r = 0; r < dist->nranks; r++) {
    displs[r] = total;
    total += counts[r];
  }
  uint32_t *all = malloc(sizeof(uint32_t) * (size_t)(total ? total : 1));
  uint32_t *col = malloc(sizeof(uint32_t) * (size_t)(total / 7 + 1));
  if (!all || !col)
    swarm_dist_fatal("out of memory");
  MPI_Allgatherv(dist->steal_samples, words, MPI_UINT32_T, all, counts, displs,
                 MPI_UINT32_T, MPI_COMM_WORLD);
  int n = total / 7;
  double med[7] = {0}, p90 = 0;
  for (int c = 0; c < 7 && n > 0; c++) {
    for (int i = 0; i < n; i++)
      col[i] = all[i * 7 + c];
    qsort(col, (size_t)n, sizeof *col, cmp_u32);
    med[c] = n % 2 ? col[n / 2] : 0.5 * ((double)col[n / 2 - 1] + col[n / 2]);
    if (c == 0)
      p90 = col[(size_t)n * 9 / 10]; /* < n since n >= 1 */
  }
  memset(p, 0, sizeof *p);
  p->samples = (uint64_t)n;
  p->total_ns = med[0];
  p->lock_ns = med[1];
  p->index_ns = med[2];
  p->entry_ns = med[3];
  p->frames_ns = med[4];
  p->unlock_ns = med[5];
  p->frame_bytes = med[6];
  p->total_p90_ns = p90;
  free(all);
  free(col);
  free(counts);
  free(displs);
  return 0;
}
