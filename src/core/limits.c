/*
 * core/limits.c — the limits users' jobs run under, and swarm's answer to
 * them: start small, grow on demand, refuse gracefully at the edge.
 *
 * The limits (read at swarm_init, limits_read):
 *  - RLIMIT_AS (ulimit -v; batch schedulers' h_vmem): every mapping counts,
 *    PROT_NONE and MAP_NORESERVE ones included. This is the one that made
 *    swarm unusable under a cap: the descriptor region alone reserved 2 GiB.
 *  - RLIMIT_DATA (ulimit -d): since Linux 4.7 it counts private writable
 *    mappings, so stacks and the descriptor region too.
 *  - The memory cgroup (v2 memory.max, v1 memory.limit_in_bytes, the lowest
 *    on the way up to the root): it bounds memory touched, not address
 *    space, and the kernel's answer to crossing it is the OOM killer, not an
 *    error. So swarm checks the cgroup's usage before it maps more stacks
 *    (limits_cgroup_room) and refuses while mapping more could cross it.
 *  - vm.max_map_count: each mapping is one; with mprotect guard pages (a
 *    kernel without guard markers, os.c) every stack is two.
 *
 * What swarm sizes from them (the rest is small and fixed; docs/limits.md):
 *  - the descriptor region (thread.c): 512 KiB, doubled in place as
 *    needed (it used to reserve its 2 GiB at once);
 *  - the global stack pool: at most 1/8 of the smallest limit stays mapped
 *    in it while idle (stack.c);
 *  - trace buffers: at most 1/16 of the smallest limit (trace.c);
 *  - kernel threads' stacks (workers, monitor, offload) are a fixed
 *    256 KiB instead of NPTL's default of RLIMIT_STACK (8 MiB, or 32 MiB
 *    when unlimited) each (os.c);
 *  - glibc's malloc arenas: every kernel thread that mallocs gets an arena
 *    of its own, up to 8 per CPU, each reserving 64 MiB of address space.
 *    Swarm threads malloc on the workers' kernel threads, so with W workers
 *    up to W arenas: 64 MiB per worker of RLIMIT_AS, the largest per-worker
 *    cost by far. Under RLIMIT_AS swarm caps them (M_ARENA_MAX) so that
 *    they take at most 1/8 of the limit, unless the program or the user
 *    chose a number (MALLOC_ARENA_MAX, GLIBC_TUNABLES) — limits_malloc.
 *
 * At the edge. Whatever maps memory for a new thread (a stack batch, the
 * descriptor region's growth) turns a refusal into EAGAIN for swarm_spawn
 * and pthread_create, and calls limits_refused, which works out which limit
 * was hit — by comparing VmSize and VmData (/proc/self/status) with the
 * rlimits and counting /proc/self/maps against vm.max_map_count — and
 * prints one line naming it and what raises it, once per process (a
 * program that retries in a loop must not flood stderr). Threads that
 * exit return their stacks to the caches and the pool, so later spawns
 * succeed again; a refused batch is retried as a single stack first.
 *
 * Races. Workers refill concurrently: the cgroup credit is taken with a
 * CAS, so between two readings of the usage no more than one credit's worth
 * of stacks is mapped; the one line is claimed with an atomic exchange, so
 * two workers refused at once print it once. The limits themselves are
 * written only by swarm_init, before any worker runs.
 *
 * Files are read with os/sys.h's raw system calls: this object is linked
 * into the pthread drop-in too, which defines read and close for the program.
 *
 * Rejected: asking the kernel for less by guessing (a fixed smaller region
 * for everyone would cap the threads of programs that run unbounded);
 * probing the limit by mapping until it fails (slow, and it races the
 * program's own allocations); reading the cgroup's usage on every spawn (a
 * file read on the hot path).
 */
#include "core/limits.h"

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "os/os.h"
#include "os/sys.h"

static struct {
  struct limits lim;
  _Atomic bool reported; /* the one stderr line was printed */
  /* limits_cgroup_room: bytes that may still be mapped before the usage is
   * read again; workers take from it with CAS */
  _Atomic uint64_t cgroup_credit;
} limits_state = {
    .lim = {LIMIT_NONE, LIMIT_NONE, LIMIT_NONE, LIMIT_NONE, "", false}};

/* ---- reading files (raw system calls: see the file comment) ---- */

static long read_small_file(const char *path, char *buf, size_t cap) {
  int fd = (int)sys_openat(AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return -1;
  size_t n = 0;
  while (n + 1 < cap) {
    long r = sys_read(fd, buf + n, cap - 1 - n);
    if (r == -EINTR)
      continue;
    if (r <= 0)
      break;
    n += (size_t)r;
  }
  sys_close(fd);
  buf[n] = '\0';
  return (long)n;
}

/* A file holding one number ("max" means none). */
static uint64_t read_number_file(const char *path) {
  char buf[64];
  if (read_small_file(path, buf, sizeof buf) <= 0)
    return LIMIT_NONE;
  if (!strncmp(buf, "max", 3))
    return LIMIT_NONE;
  char *end;
  errno = 0;
  unsigned long long v = strtoull(buf, &end, 10);
  if (errno || end == buf)
    return LIMIT_NONE;
  /* v1 spells "no limit" as the largest page multiple below 2^63 */
  return v >= ((uint64_t)1 << 62) ? LIMIT_NONE : (uint64_t)v;
}

/* The value of `key` in a "key value" file (memory.stat, status). */
static uint64_t field_value(const char *text, const char *key) {
  size_t k = strlen(key);
  for (const char *p = text; p && *p;
       p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
    if (!strncmp(p, key, k) && (p[k] == ' ' || p[k] == '\t' || p[k] == ':'))
      return strtoull(p + k + 1, NULL, 10);
  return LIMIT_NONE;
}

/* ---- the memory cgroup ---- */

/* The lowest limit from dir up to root: cgroup limits nest. */
static void cgroup_walk(const char *root, const char *rel, const char *file,
                        bool v1) {
  char dir[sizeof limits_state.lim.cgroup_dir];
  int n = snprintf(dir, sizeof dir, "%s%s", root, rel);
  if (n <= 0 || (size_t)n >= sizeof dir)
    return;
  size_t rootlen = strlen(root);
  for (;;) {
    size_t len = strlen(dir);
    while (len > rootlen && dir[len - 1] == '/')
      dir[--len] = '\0';
    char path[sizeof dir + 32];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    uint64_t v = read_number_file(path);
    if (v < limits_state.lim.cgroup_max) {
      limits_state.lim.cgroup_max = v;
      snprintf(limits_state.lim.cgroup_dir, sizeof limits_state.lim.cgroup_dir,
               "%s", dir);
      limits_state.lim.cgroup_v1 = v1;
    }
    char *slash = strrchr(dir, '/');
    if (len <= rootlen || !slash || (size_t)(slash - dir) < rootlen)
      return;
    *slash = '\0';
  }
}

/* /proc/self/cgroup: "0::/path" (v2), "N:...memory...:/path" (v1). */
static void cgroup_read(void) {
  char text[2048];
  if (read_small_file("/proc/self/cgroup", text, sizeof text) <= 0)
    return;
  for (char *line = text; line && *line;) {
    char *nl = strchr(line, '\n');
    if (nl)
      *nl = '\0';
    char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
    if (c2) {
      *c1 = *c2 = '\0';
      const char *ctrls = c1 + 1, *rel = c2 + 1;
      if (!strcmp(line, "0") && !*ctrls) {
        cgroup_walk("/sys/fs/cgroup", rel, "memory.max", false);
      } else {
        for (const char *p = ctrls; p;
             p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
          if (!strncmp(p, "memory", 6) && (p[6] == ',' || !p[6]))
            cgroup_walk("/sys/fs/cgroup/memory", rel, "memory.limit_in_bytes",
                        true);
      }
    }
    line = nl ? nl + 1 : NULL;
  }
}

/* Memory the cgroup has charged that reclaim cannot simply drop: the usage
 * minus the page cache (the kernel evicts that before it kills anyone). */
static uint64_t cgroup_usage(void) {
  const struct limits *l = &limits_state.lim;
  char path[sizeof l->cgroup_dir + 32], stat[8192];
  snprintf(path, sizeof path, "%s/%s", l->cgroup_dir,
           l->cgroup_v1 ? "memory.usage_in_bytes" : "memory.current");
  uint64_t used = read_number_file(path);
  if (used == LIMIT_NONE)
    return 0;
  snprintf(path, sizeof path, "%s/memory.stat", l->cgroup_dir);
  if (read_small_file(path, stat, sizeof stat) > 0) {
    uint64_t cache = field_value(stat, l->cgroup_v1 ? "total_cache" : "file");
    if (cache == LIMIT_NONE && l->cgroup_v1)
      cache = field_value(stat, "cache");
    if (cache != LIMIT_NONE && cache < used)
      used -= cache;
  }
  return used;
}

bool limits_cgroup_room(size_t bytes) {
  const struct limits *l = &limits_state.lim;
  if (l->cgroup_max == LIMIT_NONE)
    return true;
  uint64_t credit =
      atomic_load_explicit(&limits_state.cgroup_credit, memory_order_relaxed);
  while (credit >= bytes)
    if (atomic_compare_exchange_weak_explicit(
            &limits_state.cgroup_credit, &credit, credit - bytes,
            memory_order_relaxed, memory_order_relaxed))
      return true;
  /* Keep a sixteenth of the limit (at least 4 MiB) for the program: the
   * stacks mapped now are touched later, on top of what it uses. */
  uint64_t reserve = l->cgroup_max / 16;
  if (reserve < ((uint64_t)4 << 20))
    reserve = (uint64_t)4 << 20;
  uint64_t used = cgroup_usage();
  if (used + reserve + bytes > l->cgroup_max)
    return false;
  uint64_t room = l->cgroup_max - reserve - used - bytes;
  atomic_store_explicit(&limits_state.cgroup_credit, room / 2,
                        memory_order_relaxed);
  return true;
}

/* ---- reading the limits ---- */

static uint64_t rlimit_of(int resource) {
  struct rlimit r;
  if (getrlimit(resource, &r) != 0 || r.rlim_cur == RLIM_INFINITY)
    return LIMIT_NONE;
  return (uint64_t)r.rlim_cur;
}

void limits_read(void) {
  struct limits *l = &limits_state.lim;
  l->as_max = rlimit_of(RLIMIT_AS);
  l->data_max = rlimit_of(RLIMIT_DATA);
  l->cgroup_max = LIMIT_NONE;
  l->cgroup_dir[0] = '\0';
  cgroup_read();
  l->map_count_max = read_number_file("/proc/sys/vm/max_map_count");
  atomic_store(&limits_state.cgroup_credit, 0);
}

const struct limits *limits_get(void) {
  return &limits_state.lim;
}

/* ---- sizes ---- */

static uint64_t smallest_limit(void) {
  const struct limits *l = &limits_state.lim;
  uint64_t m = l->as_max;
  if (l->data_max < m)
    m = l->data_max;
  if (l->cgroup_max < m)
    m = l->cgroup_max;
  return m;
}

size_t limits_desc_first_map(size_t full, size_t initial) {
  const struct limits *l = &limits_state.lim;
  if (l->as_max == LIMIT_NONE && l->data_max == LIMIT_NONE)
    return full;
  return initial < full ? initial : full;
}

static uint64_t share_of_limit(unsigned divisor, uint64_t each, uint64_t wanted,
                               uint64_t floor) {
  uint64_t m = smallest_limit();
  if (m == LIMIT_NONE || each == 0)
    return wanted;
  uint64_t n = m / divisor / each;
  if (n > wanted)
    n = wanted;
  return n < floor ? floor : n;
}

uint32_t limits_stack_pool_max(size_t each, uint32_t wanted, uint32_t floor) {
  return (uint32_t)share_of_limit(8, each, wanted, floor);
}

uint32_t limits_stack_keep_max(size_t each, int workers, uint32_t wanted) {
  return (uint32_t)share_of_limit(8, (uint64_t)each * (uint64_t)workers, wanted,
                                  0);
}

uint32_t limits_trace_records(int nbuffers, size_t record, uint32_t wanted,
                              uint32_t floor) {
  return (uint32_t)share_of_limit(16, (uint64_t)record * (uint64_t)nbuffers,
                                  wanted, floor);
}

void limits_malloc(int kernel_threads) {
#if defined(__GLIBC__) && defined(M_ARENA_MAX)
  const struct limits *l = &limits_state.lim;
  if (l->as_max == LIMIT_NONE || getenv("MALLOC_ARENA_MAX"))
    return;
  const char *t = getenv("GLIBC_TUNABLES");
  if (t && strstr(t, "arena_max"))
    return;
  uint64_t arenas = l->as_max / 8 / ((uint64_t)64 << 20);
  if (arenas < 1)
    arenas = 1;
  if (arenas < (uint64_t)kernel_threads + 1)
    mallopt(M_ARENA_MAX, (int)arenas);
#else
  (void)kernel_threads;
#endif
}

/* ---- the edge ---- */

static uint64_t maps_count(void) {
  int fd = (int)sys_openat(AT_FDCWD, "/proc/self/maps", O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return 0;
  char buf[4096];
  uint64_t lines = 0;
  long r;
  while ((r = sys_read(fd, buf, sizeof buf)) > 0 || r == -EINTR)
    for (long i = 0; i < r; i++)
      lines += buf[i] == '\n';
  sys_close(fd);
  return lines;
}

static enum limit_kind diagnose(size_t bytes, uint64_t *used, uint64_t *max) {
  const struct limits *l = &limits_state.lim;
  char status[4096];
  uint64_t vm_size = 0, vm_data = 0;
  if (read_small_file("/proc/self/status", status, sizeof status) > 0) {
    uint64_t kib = field_value(status, "VmSize");
    vm_size = kib == LIMIT_NONE ? 0 : kib * 1024;
    kib = field_value(status, "VmData");
    vm_data = kib == LIMIT_NONE ? 0 : kib * 1024;
  }
  if (l->as_max != LIMIT_NONE && vm_size + bytes > l->as_max) {
    *used = vm_size;
    *max = l->as_max;
    return LIMIT_ADDRESS_SPACE;
  }
  if (l->data_max != LIMIT_NONE && vm_data + bytes > l->data_max) {
    *used = vm_data;
    *max = l->data_max;
    return LIMIT_DATA;
  }
  uint64_t maps = maps_count();
  /* a batch of stacks with mprotect guards adds up to two per stack */
  if (l->map_count_max != LIMIT_NONE && maps + 64 >= l->map_count_max) {
    *used = maps;
    *max = l->map_count_max;
    return LIMIT_MAP_COUNT;
  }
  *used = vm_size;
  *max = 0;
  return LIMIT_KERNEL;
}

enum limit_kind limits_refused(const char *what, size_t bytes,
                               enum limit_kind kind) {
  const struct limits *l = &limits_state.lim;
  if (atomic_load_explicit(&limits_state.reported, memory_order_relaxed))
    return kind;
  int err = errno;
  uint64_t used = 0, max = 0;
  if (kind == LIMIT_CGROUP) {
    used = cgroup_usage();
    max = l->cgroup_max;
  } else if (kind != LIMIT_ADDRESS_TAKEN) {
    kind = diagnose(bytes, &used, &max);
  }
  if (atomic_exchange(&limits_state.reported, true)) {
    errno = err;
    return kind;
  }
  char line[1024];
  const char *tail = "; swarm_spawn and pthread_create answer EAGAIN until "
                     "threads exit";
  int n;
  switch (kind) {
  case LIMIT_ADDRESS_SPACE:
    n = snprintf(line, sizeof line,
                 "swarm: cannot map %zu bytes for %s: the address-space limit "
                 "(RLIMIT_AS) of %llu bytes is reached (%llu in use)%s; raise "
                 "it with 'ulimit -v' (h_vmem under a batch scheduler) or "
                 "lower SWARM_STACK_SIZE\n",
                 bytes, what, (unsigned long long)max, (unsigned long long)used,
                 tail);
    break;
  case LIMIT_DATA:
    n = snprintf(line, sizeof line,
                 "swarm: cannot map %zu bytes for %s: the data limit "
                 "(RLIMIT_DATA) of %llu bytes is reached (%llu in use)%s; "
                 "raise it with 'ulimit -d' or lower SWARM_STACK_SIZE\n",
                 bytes, what, (unsigned long long)max, (unsigned long long)used,
                 tail);
    break;
  case LIMIT_CGROUP:
    n = snprintf(line, sizeof line,
                 "swarm: not mapping %zu bytes for %s: the memory cgroup %s "
                 "allows %llu bytes and %llu are in use%s; raise %s there "
                 "(systemd: MemoryMax=) or lower SWARM_STACK_SIZE\n",
                 bytes, what, l->cgroup_dir, (unsigned long long)max,
                 (unsigned long long)used, tail,
                 l->cgroup_v1 ? "memory.limit_in_bytes" : "memory.max");
    break;
  case LIMIT_MAP_COUNT:
    n = snprintf(line, sizeof line,
                 "swarm: cannot map %zu bytes for %s: the process has %llu "
                 "memory mappings and vm.max_map_count is %llu%s; raise it "
                 "with 'sysctl vm.max_map_count=N'\n",
                 bytes, what, (unsigned long long)used, (unsigned long long)max,
                 tail);
    break;
  case LIMIT_ADDRESS_TAKEN:
    n = snprintf(line, sizeof line,
                 "swarm: cannot grow the region of %s by %zu bytes: another "
                 "mapping holds the addresses after it, and the region never "
                 "moves (handles index it)%s; leave the range after it "
                 "unmapped\n",
                 what, bytes, tail);
    break;
  default:
    n = snprintf(line, sizeof line,
                 "swarm: cannot map %zu bytes for %s: %s (no rlimit, cgroup "
                 "or map count limit is reached: the machine is short of "
                 "memory, or vm.overcommit_memory=2 refuses it)%s\n",
                 bytes, what, strerror(err), tail);
    break;
  }
  if (n > 0)
    os_write_stderr(line,
                    (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
  errno = err;
  return kind;
}
