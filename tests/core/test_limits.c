/* swarm under the limits users' jobs run under (core/limits.h, issue 20).
 * Each case runs in a child process that sets its limit with setrlimit
 * before the runtime starts (what `ulimit -v` does for a job), so the
 * runtime sizes itself from it; the parent checks the child's exit status
 * and its stderr.
 *
 *   test_limits no-limit     no limit, 2 workers: after 10 threads the
 *                            process's address space is under 512 MiB (the
 *                            descriptor region no longer reserves 2 GiB)
 *   test_limits as-1g        RLIMIT_AS 1,000,000 KiB (ulimit -v 1000000):
 *                            fib(20) with a thread per call is correct
 *   test_limits as-256m      RLIMIT_AS 256 MiB: 10 threads give their results;
 *                            handles beyond the descriptors mapped say ESRCH
 *   test_limits as-256m-8w   RLIMIT_AS 256 MiB, 8 workers (a bigger node):
 *                            1,000 threads that malloc, all alive at once
 *                            (glibc's 64 MiB arena per worker must not eat
 *                            the limit)
 *   test_limits trace-1g     RLIMIT_AS 1,000,000 KiB with SWARM_TRACE and
 *                            SWARM_TRACE_BUFFER asking 2 GiB per worker: the
 *                            buffers are sized from the limit, the trace is
 *                            written (not "out of memory; tracing is off")
 *   test_limits as-edge      RLIMIT_AS 256 MiB: spawn parked threads until
 *                            swarm_spawn says EAGAIN; more spawns still say
 *                            EAGAIN; one stderr line names RLIMIT_AS; once the
 *                            threads exit, as many spawns succeed again
 *   test_limits as-edge-small  the same with 16 KiB stacks, so the descriptor
 *                            region grows several times before the edge
 *   test_limits as-edge-churn  RLIMIT_AS 256 MiB: 8 threads on both workers
 *                            reach the edge at once, three rounds
 *   test_limits as-edge-stranded  RLIMIT_AS 256 MiB, 2 workers: the edge
 *                            reached and released on one worker, then as
 *                            many threads alive at once spawned by a kernel
 *                            thread that is not a worker (the free stacks
 *                            that worker holds come back)
 *   test_limits descs-stranded  no limit, but the descriptor region cannot
 *                            grow (a mapping right after it): the same as
 *                            as-edge-stranded for the free descriptors that
 *                            worker caches (reclaim.c); also under ASan
 *   test_limits data-edge    the same as as-edge under RLIMIT_DATA 256 MiB
 *   test_limits maps-edge    the process's mappings filled up to a few
 *                            below vm.max_map_count: EAGAIN, the line names
 *                            vm.max_map_count, recovery after the threads exit
 *   test_limits cgroup-edge  a memory cgroup v2 of 64 MiB, if this machine
 *                            lets us make one (else exit 77: skipped)
 *   test_limits cgroup-v2-files, cgroup-v1-files
 *                            the cgroup files swarm reads, in a private mount
 *                            namespace (nothing outside the child changes):
 *                            memory.max 256 MiB; usage low, then at the limit
 *                            (EAGAIN, one line naming the cgroup), then low
 *                            again (spawns succeed: recovery). Skipped (77)
 *                            where mount namespaces are not permitted.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <swarm.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "core/core.h"
#include "os/os.h"

#define SKIP 77

/* ---- the workloads, run in the child ---- */

static void *fib(void *arg) {
  long n = (long)arg;
  if (n < 2)
    return (void *)n;
  swarm_thread_t a;
  void *x, *y;
  CHECK_EQ(swarm_spawn(&a, NULL, fib, (void *)(n - 1)), 0);
  y = fib((void *)(n - 2));
  CHECK_EQ(swarm_join(a, &x), 0);
  return (void *)((long)x + (long)y);
}

static void *square(void *arg) {
  long v = (long)arg;
  return (void *)(v * v);
}

static int run_fib(void) {
  CHECK_EQ(swarm_init(NULL), 0);
  swarm_thread_t t;
  void *r;
  CHECK_EQ(swarm_spawn(&t, NULL, fib, (void *)20L), 0);
  CHECK_EQ(swarm_join(t, &r), 0);
  CHECK_EQ((long)r, 6765L);
  CHECK_EQ(swarm_finalize(), 0);
  return 0;
}

static long vm_size_kib(void) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  long kib = -1;
  while (f && fgets(line, sizeof line, f))
    if (!strncmp(line, "VmSize:", 7))
      kib = atol(line + 7);
  if (f)
    fclose(f);
  return kib;
}

static int run_ten_small(void) {
  swarm_config_t cfg = {.workers = 2};
  CHECK_EQ(swarm_init(&cfg), 0);
  swarm_thread_t t[10];
  for (long i = 0; i < 10; i++)
    CHECK_EQ(swarm_spawn(&t[i], NULL, square, (void *)i), 0);
  for (long i = 0; i < 10; i++)
    CHECK_EQ(swarm_join(t[i], NULL), 0);
  long kib = vm_size_kib();
  CHECK(kib > 0 && kib < 512 * 1024, "VmSize %ld KiB", kib);
  printf("VmSize with 2 workers and 10 threads: %ld KiB\n", kib);
  CHECK_EQ(swarm_finalize(), 0);
  return 0;
}

static char trace_path[64];

static int run_traced_fib(void) {
  setenv("SWARM_TRACE", trace_path, 1);
  setenv("SWARM_TRACE_BUFFER", "67108864", 1); /* 2 GiB of records each */
  return run_fib();
}

static void check_trace_written(void) {
  FILE *f = fopen(trace_path, "r");
  CHECK(f != NULL, "no trace file %s", trace_path);
  char head[64] = {0};
  CHECK(fread(head, 1, sizeof head - 1, f) > 0);
  fclose(f);
  CHECK(strstr(head, "traceEvents"), "trace starts '%s'", head);
  unlink(trace_path);
}

static int run_ten(void) {
  CHECK_EQ(swarm_init(NULL), 0);
  swarm_thread_t t[10];
  for (long i = 0; i < 10; i++)
    CHECK_EQ(swarm_spawn(&t[i], NULL, square, (void *)i), 0);
  /* Handles whose index lies beyond the part of the descriptor region
   * mapped under the limit: ESRCH, not a fault. One aliases t[0]'s slot
   * once masked, and must not join it. */
  swarm_thread_t far = ((swarm_thread_t)1 << 32) | ((swarm_thread_t)1 << 30);
  swarm_thread_t alias = t[0] | ((swarm_thread_t)1 << 29);
  CHECK_EQ(swarm_join(far, NULL), ESRCH);
  CHECK_EQ(swarm_detach(far), ESRCH);
  CHECK_EQ(swarm_join(alias, NULL), ESRCH);
  for (long i = 0; i < 10; i++) {
    void *r;
    CHECK_EQ(swarm_join(t[i], &r), 0);
    CHECK_EQ((long)r, i * i);
  }
  CHECK_EQ(swarm_finalize(), 0);
  return 0;
}

/* Threads that stay alive (parked on a condition variable) until the gate
 * opens, so their stacks and descriptors stay in use. */
static swarm_mutex_t gate_lock;
static swarm_cond_t gate_cond;
static int gate_open;

static void *wait_gate(void *arg) {
  swarm_mutex_lock(&gate_lock);
  while (!gate_open)
    swarm_cond_wait(&gate_cond, &gate_lock);
  swarm_mutex_unlock(&gate_lock);
  return arg;
}

/* Opens the gate: every thread in wait_gate returns. */
static void gate_release(void) {
  swarm_mutex_lock(&gate_lock);
  gate_open = 1;
  swarm_cond_broadcast(&gate_cond);
  swarm_mutex_unlock(&gate_lock);
}

#define EDGE_MAX 200000

/* Spawns fn((void *)i) into t[i], i = 0, 1, ..., until a spawn fails or
 * EDGE_MAX are alive; returns how many, and the failure's code in *err. */
static long spawn_until_refused(swarm_thread_t *t, void *(*fn)(void *),
                                int *err) {
  long n = 0;
  *err = 0;
  while (n < EDGE_MAX && (*err = swarm_spawn(&t[n], NULL, fn, (void *)n)) == 0)
    n++;
  return n;
}

static void *malloc_and_wait(void *arg) {
  char *p = malloc(200);
  CHECK(p != NULL);
  p[0] = 1;
  void *r = wait_gate(arg);
  free(p);
  return r;
}

static int run_eight_workers(void) {
  static swarm_thread_t t[1000];
  swarm_config_t cfg = {.workers = 8};
  CHECK_EQ(swarm_init(&cfg), 0);
  CHECK_EQ(swarm_mutex_init(&gate_lock, 0), 0);
  CHECK_EQ(swarm_cond_init(&gate_cond, 0), 0);
  for (long i = 0; i < 1000; i++)
    CHECK(swarm_spawn(&t[i], NULL, malloc_and_wait, (void *)i) == 0,
          "thread %ld of 1000", i);
  gate_release();
  for (long i = 0; i < 1000; i++) {
    void *r;
    CHECK_EQ(swarm_join(t[i], &r), 0);
    CHECK_EQ((long)r, i);
  }
  CHECK_EQ(swarm_finalize(), 0);
  return 0;
}

/* Spawns gate waiters until the limit answers EAGAIN; checks that it keeps
 * answering EAGAIN (no crash, no partial thread), then opens the gate,
 * joins every one with its right result, and spawns as many again. */
static int run_edge(size_t stack) {
  static swarm_thread_t t[EDGE_MAX];
  swarm_config_t cfg = {.stack_size = stack};
  CHECK_EQ(swarm_init(&cfg), 0);
  CHECK_EQ(swarm_mutex_init(&gate_lock, 0), 0);
  CHECK_EQ(swarm_cond_init(&gate_cond, 0), 0);
  int e;
  long n = spawn_until_refused(t, wait_gate, &e);
  CHECK(e == EAGAIN, "the limit was never reached (%ld threads, %d)", n, e);
  CHECK(n >= 10, "only %ld threads before EAGAIN", n);
  swarm_thread_t extra;
  for (int i = 0; i < 5; i++)
    CHECK_EQ(swarm_spawn(&extra, NULL, wait_gate, NULL), EAGAIN);
  gate_release();
  for (long i = 0; i < n; i++) {
    void *r;
    CHECK_EQ(swarm_join(t[i], &r), 0);
    CHECK_EQ((long)r, i);
  }
  /* recovery: the memory came back, the same number fits again */
  for (long i = 0; i < n; i++)
    CHECK(swarm_spawn(&t[i], NULL, square, (void *)i) == 0,
          "spawn %ld of %ld after the threads exited", i, n);
  for (long i = 0; i < n; i++) {
    void *r;
    CHECK_EQ(swarm_join(t[i], &r), 0);
    CHECK_EQ((long)r, i * i);
  }
  printf("%ld threads alive at the edge\n", n);
  CHECK_EQ(swarm_finalize(), 0);
  return 0;
}

/* Fills the process's mappings up to `spare` below vm.max_map_count:
 * single pages with a hole between them, so that none merge. */
static int fill_maps(long spare) {
  FILE *f = fopen("/proc/sys/vm/max_map_count", "r");
  long max = 0;
  if (!f || fscanf(f, "%ld", &max) != 1)
    return -1;
  fclose(f);
  long page = sysconf(_SC_PAGESIZE), have = 0;
  char line[512];
  f = fopen("/proc/self/maps", "r");
  while (f && fgets(line, sizeof line, f))
    have++;
  if (f)
    fclose(f);
  long want = max - have - spare;
  if (want <= 0)
    return 0;
  char *area = mmap(NULL, (size_t)(2 * want) * (size_t)page, PROT_NONE,
                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (area == MAP_FAILED)
    return -1;
  /* each page made readable splits the area: two more mappings each */
  for (long i = 0; i < want / 2; i++)
    if (mprotect(area + 2 * i * page, (size_t)page, PROT_READ) != 0)
      return -1;
  return 0;
}

/* ---- a memory cgroup v2 of our own, where the machine allows it ---- */

static char cgroup_dir[512];

static int write_file(const char *path, const char *text) {
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0)
    return -1;
  ssize_t n = write(fd, text, strlen(text));
  close(fd);
  return n == (ssize_t)strlen(text) ? 0 : -1;
}

/* A child cgroup of ours with memory.max set, or a reason it cannot be. */
static const char *cgroup_make(long bytes) {
  char text[480] = {0}, path[640];
  FILE *f = fopen("/proc/self/cgroup", "r");
  if (!f)
    return "no /proc/self/cgroup";
  const char *rel = NULL;
  while (fgets(text, sizeof text, f))
    if (!strncmp(text, "0::", 3)) {
      text[strcspn(text, "\n")] = 0;
      rel = text + 3;
      break;
    }
  fclose(f);
  if (!rel)
    return "no cgroup v2 hierarchy";
  snprintf(path, sizeof path, "/sys/fs/cgroup%s/cgroup.subtree_control", rel);
  char ctl[256] = {0};
  f = fopen(path, "r");
  if (!f || !fgets(ctl, sizeof ctl, f) || !strstr(ctl, "memory")) {
    if (f)
      fclose(f);
    return "the memory controller is not delegated to our cgroup v2";
  }
  fclose(f);
  snprintf(cgroup_dir, sizeof cgroup_dir, "/sys/fs/cgroup%s/swarm-limits-%d",
           rel, (int)getpid());
  if (mkdir(cgroup_dir, 0755) != 0)
    return "cannot make a child cgroup";
  snprintf(path, sizeof path, "%s/memory.max", cgroup_dir);
  char v[32];
  snprintf(v, sizeof v, "%ld", bytes);
  if (write_file(path, v) != 0) {
    rmdir(cgroup_dir);
    return "cannot set memory.max";
  }
  return NULL;
}

static int write_file_create(const char *path, const char *text) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    return -1;
  ssize_t n = write(fd, text, strlen(text));
  close(fd);
  return n == (ssize_t)strlen(text) ? 0 : -1;
}

static int cgroup_enter(void) {
  char path[640], pid[32];
  snprintf(path, sizeof path, "%s/cgroup.procs", cgroup_dir);
  snprintf(pid, sizeof pid, "%d", (int)getpid());
  return write_file(path, pid);
}

/* Each thread touches most of its 128 KiB stack, so that memory, not
 * address space, runs out. */
static void *touch_and_wait(void *arg) {
  volatile char buf[96 * 1024];
  for (size_t i = 0; i < sizeof buf; i += 4096)
    buf[i] = 1;
  return wait_gate(arg);
}

static int run_cgroup_edge(void) {
  static swarm_thread_t t[EDGE_MAX];
  CHECK_EQ(swarm_init(NULL), 0);
  CHECK_EQ(swarm_mutex_init(&gate_lock, 0), 0);
  CHECK_EQ(swarm_cond_init(&gate_cond, 0), 0);
  int e;
  long n = spawn_until_refused(t, touch_and_wait, &e);
  CHECK_EQ(e, EAGAIN);
  gate_release();
  for (long i = 0; i < n; i++) {
    void *r;
    CHECK_EQ(swarm_join(t[i], &r), 0);
    CHECK_EQ((long)r, i);
  }
  printf("%ld threads alive at the edge\n", n);
  CHECK_EQ(swarm_finalize(), 0);
  return 0;
}

/* ---- the cgroup files, faked in a private mount namespace ---- */

static char fake_dir[512];
static bool fake_v1;

static void fake_usage(long bytes) {
  char path[640], v[32];
  snprintf(path, sizeof path, "%s/%s", fake_dir,
           fake_v1 ? "memory.usage_in_bytes" : "memory.current");
  snprintf(v, sizeof v, "%ld\n", bytes);
  CHECK_EQ(write_file(path, v), 0);
}

/* Makes /sys/fs/cgroup a tmpfs of ours holding memory.max (v2) or
 * memory.limit_in_bytes (v1) in the directory /proc/self/cgroup names.
 * 0, or 77 when this machine does not let us. */
static int fake_cgroup(bool v1, long max) {
  if (unshare(CLONE_NEWNS) != 0 ||
      mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
      mount("swarm-test", "/sys/fs/cgroup", "tmpfs", 0, NULL) != 0) {
    printf("skipped: no private mount namespace here (%s)\n", strerror(errno));
    return SKIP;
  }
  char text[2048] = {0}, rel[512] = "";
  FILE *f = fopen("/proc/self/cgroup", "r");
  CHECK(f != NULL);
  size_t n = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  text[n] = 0;
  for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
    char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
    if (!c2)
      continue;
    *c1 = *c2 = 0;
    if ((!v1 && !strcmp(line, "0") && c1[1] == 0) ||
        (v1 && strstr(c1 + 1, "memory")))
      snprintf(rel, sizeof rel, "%s", c2 + 1);
  }
  if (v1 && !rel[0]) {
    printf("skipped: no cgroup v1 memory controller line\n");
    return SKIP;
  }
  snprintf(fake_dir, sizeof fake_dir, "/sys/fs/cgroup%s%s", v1 ? "/memory" : "",
           strcmp(rel, "/") ? rel : "");
  char cmd[700];
  snprintf(cmd, sizeof cmd, "mkdir -p '%s'", fake_dir);
  CHECK_EQ(system(cmd), 0);
  fake_v1 = v1;
  char path[640], v[32];
  snprintf(path, sizeof path, "%s/%s", fake_dir,
           v1 ? "memory.limit_in_bytes" : "memory.max");
  snprintf(v, sizeof v, "%ld\n", max);
  CHECK_EQ(write_file_create(path, v), 0);
  snprintf(path, sizeof path, "%s/memory.stat", fake_dir);
  CHECK_EQ(write_file_create(path, v1 ? "cache 0\ntotal_cache 0\n"
                                      : "anon 0\nfile 0\n"),
           0);
  snprintf(path, sizeof path, "%s/%s", fake_dir,
           v1 ? "memory.usage_in_bytes" : "memory.current");
  CHECK_EQ(write_file_create(path, "0\n"), 0);
  return 0;
}

static int run_cgroup_files(bool v1) {
  static swarm_thread_t t[EDGE_MAX];
  const long max = 256L << 20;
  int r = fake_cgroup(v1, max);
  if (r)
    return r;
  fake_usage(8L << 20);
  CHECK_EQ(run_ten(), 0); /* room: no line */
  CHECK_EQ(swarm_init(NULL), 0);
  CHECK_EQ(swarm_mutex_init(&gate_lock, 0), 0);
  CHECK_EQ(swarm_cond_init(&gate_cond, 0), 0);
  gate_open = 0;
  fake_usage(max); /* the cgroup is full: the next reading refuses */
  int e;
  long n = spawn_until_refused(t, wait_gate, &e);
  CHECK(e == EAGAIN, "never refused (%ld threads, %d)", n, e);
  swarm_thread_t extra;
  for (int i = 0; i < 5; i++)
    CHECK_EQ(swarm_spawn(&extra, NULL, wait_gate, NULL), EAGAIN);
  fake_usage(8L << 20); /* memory given back */
  gate_release();
  for (long i = 0; i < n; i++) {
    void *res;
    CHECK_EQ(swarm_join(t[i], &res), 0);
    CHECK_EQ((long)res, i);
  }
  for (long i = 0; i < n + 100; i++) /* more than before: new stacks too */
    CHECK(swarm_spawn(&t[i], NULL, square, (void *)i) == 0, "spawn %ld", i);
  for (long i = 0; i < n + 100; i++) {
    void *res;
    CHECK_EQ(swarm_join(t[i], &res), 0);
    CHECK_EQ((long)res, i * i);
  }
  printf("%ld threads alive at the cgroup's edge\n", n);
  CHECK_EQ(swarm_finalize(), 0);
  return 0;
}
static int cgroup_v2_files(void) {
  return run_cgroup_files(false);
}
static int cgroup_v1_files(void) {
  return run_cgroup_files(true);
}

/* ---- the parent ---- */

struct child_result {
  int status;
  char err[8192];
  char out[1024];
};

static void run_child(int (*body)(void), int resource, rlim_t limit,
                      struct child_result *res) {
  int errp[2], outp[2];
  CHECK_EQ(pipe(errp), 0);
  CHECK_EQ(pipe(outp), 0);
  fflush(NULL);
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    dup2(errp[1], 2);
    dup2(outp[1], 1);
    close(errp[0]);
    close(outp[0]);
    if (resource >= 0) {
      struct rlimit r = {limit, limit};
      if (setrlimit(resource, &r) != 0) {
        perror("setrlimit");
        _exit(3);
      }
    }
    int rc = body();
    fflush(NULL);
    _exit(rc);
  }
  close(errp[1]);
  close(outp[1]);
  size_t ne = 0, no = 0;
  ssize_t r;
  /* stderr first: a child blocked on a full stdout pipe is not possible
   * here (it prints one line) */
  while ((r = read(errp[0], res->err + ne, sizeof res->err - 1 - ne)) > 0)
    ne += (size_t)r;
  while ((r = read(outp[0], res->out + no, sizeof res->out - 1 - no)) > 0)
    no += (size_t)r;
  res->err[ne] = 0;
  res->out[no] = 0;
  close(errp[0]);
  close(outp[0]);
  CHECK_EQ(waitpid(pid, &res->status, 0), pid);
}

static int count_lines(const char *text, const char *needle) {
  int n = 0;
  for (const char *p = text; p && *p;) {
    const char *nl = strchr(p, '\n');
    size_t len = nl ? (size_t)(nl - p) : strlen(p);
    char line[1024];
    snprintf(line, sizeof line, "%.*s", (int)len, p);
    if (strstr(line, needle))
      n++;
    p = nl ? nl + 1 : NULL;
  }
  return n;
}

static void expect_clean(const char *name, struct child_result *res) {
  fputs(res->err, stderr);
  fputs(res->out, stdout);
  CHECK(WIFEXITED(res->status) && WEXITSTATUS(res->status) == 0,
        "%s: child status %#x", name, res->status);
  CHECK_EQ(count_lines(res->err, "swarm"), 0);
}

/* One line from swarm, naming the limit; nothing else from swarm. */
static void expect_edge(const char *name, struct child_result *res,
                        const char *limit_name) {
  fputs(res->err, stderr);
  fputs(res->out, stdout);
  CHECK(WIFEXITED(res->status) && WEXITSTATUS(res->status) == 0,
        "%s: child status %#x", name, res->status);
  CHECK_EQ(count_lines(res->err, "swarm"), 1);
  CHECK_EQ(count_lines(res->err, limit_name), 1);
  CHECK(strstr(res->err, "EAGAIN"), "the line says what the caller sees");
}

/* ---- the edge reached by several threads at once ---- */

#define CHURN_SPAWNERS 8
#define CHURN_CHILDREN 600 /* 8 x 600 x 132 KiB: well past 256 MiB */

static _Atomic int churn_ready, churn_done, churn_release;
static _Atomic long churn_refused;

static void *churn_child(void *arg) {
  while (!atomic_load(&churn_release))
    swarm_yield();
  return arg;
}

/* Waits until every spawner exists, spawns children until EAGAIN or
 * CHURN_CHILDREN; the last one done releases them all; joins and checks
 * its own. Returns how many of its children were alive at once. */
static void *churn_spawner(void *arg) {
  long id = (long)arg, n = 0;
  swarm_thread_t t[CHURN_CHILDREN];
  atomic_fetch_add(&churn_ready, 1);
  while (atomic_load(&churn_ready) < CHURN_SPAWNERS)
    swarm_yield();
  for (; n < CHURN_CHILDREN; n++) {
    int e = swarm_spawn(&t[n], NULL, churn_child, (void *)(id * 1000 + n));
    if (e) {
      CHECK_EQ(e, EAGAIN);
      atomic_fetch_add(&churn_refused, 1);
      break;
    }
  }
  if (atomic_fetch_add(&churn_done, 1) + 1 == CHURN_SPAWNERS)
    atomic_store(&churn_release, 1);
  for (long i = 0; i < n; i++) {
    void *r;
    CHECK_EQ(swarm_join(t[i], &r), 0);
    CHECK_EQ((long)r, id * 1000 + i);
  }
  return (void *)n;
}

/* Three rounds: in each, several spawners on both workers reach the edge
 * together (EAGAIN, no crash, every result right), and after the previous
 * round's threads exited the next gets at least half as many alive. */
static int run_churn(void) {
  CHECK_EQ(swarm_init(NULL), 0);
  long first = 0;
  for (int round = 0; round < 3; round++) {
    atomic_store(&churn_ready, 0);
    atomic_store(&churn_done, 0);
    atomic_store(&churn_release, 0);
    atomic_store(&churn_refused, 0);
    swarm_thread_t sp[CHURN_SPAWNERS];
    for (long i = 0; i < CHURN_SPAWNERS; i++)
      CHECK_EQ(swarm_spawn(&sp[i], NULL, churn_spawner, (void *)i), 0);
    long alive = 0;
    for (int i = 0; i < CHURN_SPAWNERS; i++) {
      void *r;
      CHECK_EQ(swarm_join(sp[i], &r), 0);
      alive += (long)r;
    }
    CHECK(atomic_load(&churn_refused) > 0, "round %d: no EAGAIN", round);
    if (round == 0)
      first = alive;
    CHECK(alive * 2 >= first, "round %d: %ld alive, round 0 had %ld", round,
          alive, first);
    printf("round %d: %ld threads alive at the edge\n", round, alive);
  }
  CHECK_EQ(swarm_finalize(), 0);
  return 0;
}

/* ---- free stacks held by a worker, wanted elsewhere ---- */

static _Atomic long hold_released; /* holders with a lower number may end */

static void *hold_worker(void *arg) {
  while (atomic_load(&hold_released) < (long)arg)
    ; /* computes: its worker runs nothing else, answers nothing */
  return NULL;
}

static swarm_thread_t ext_threads[EDGE_MAX];
static long ext_wanted, ext_made;
static int ext_error;
static _Atomic int ext_go, ext_done;

/* A kernel thread that is not a worker: no stack cache of its own, so its
 * spawns take stacks from the pool, or map them, or at the limit get what
 * the workers hold. */
static void *external_spawner(void *arg) {
  (void)arg;
  while (!atomic_load(&ext_go))
    sched_yield();
  for (; ext_made < ext_wanted; ext_made++)
    if ((ext_error = swarm_spawn(&ext_threads[ext_made], NULL, wait_gate,
                                 (void *)ext_made)) != 0)
      break;
  atomic_store(&ext_done, 1);
  return NULL;
}

static bool stranded_descs; /* the descriptor region cannot grow */

/* Maps a page right after the descriptor region (the test reaches into
 * core for where it ends), so that it cannot grow: the edge is then the
 * descriptors', not a limit's. */
static void block_desc_region(void) {
  char *base = (char *)atomic_load(&swarm_desc_region);
  uint32_t mask = atomic_load(&swarm_desc_index_mask);
  CHECK(mask != 0, "the descriptor region is not mapped yet");
  size_t bytes =
      (size_t)((mask >> CTL_INDEX_SHIFT) + 1) * sizeof(struct swarm_thread);
  CHECK(bytes < (size_t)64 << 20,
        "the region was mapped whole (%zu bytes): nothing to block", bytes);
  void *p = mmap(base + bytes, 4096, PROT_NONE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
  CHECK(p == base + bytes, "could not map after the region: %s",
        strerror(errno));
}

/* Two workers. The edge is reached by threads that all run, exit and are
 * joined on one worker (the other computes meanwhile), so their free
 * stacks end up in that worker's cache and on its free descriptors (and,
 * with stranded_descs, up to 256 free descriptors in its cache). Then
 * a kernel thread that is not a worker spawns as many threads as were
 * alive at the edge, all alive at once, while the worker holding the
 * stacks only yields: the stacks (and descriptors) must come back to it
 * (reclaim.c; the yield answers the request), not EAGAIN. */
static int run_stranded(void) {
  static swarm_thread_t t[EDGE_MAX];
  pthread_t ext;
  pthread_attr_t pa;
  CHECK_EQ(pthread_attr_init(&pa), 0);
  CHECK_EQ(pthread_attr_setstacksize(&pa, 256 * 1024), 0);
  CHECK_EQ(pthread_create(&ext, &pa, external_spawner, NULL), 0);
  swarm_config_t cfg = {.workers = 2};
  CHECK_EQ(swarm_init(&cfg), 0);
  CHECK_EQ(swarm_mutex_init(&gate_lock, 0), 0);
  CHECK_EQ(swarm_cond_init(&gate_cond, 0), 0);
  int held = swarm_worker_id();
  swarm_thread_t holder;
  CHECK_EQ(swarm_spawn(&holder, NULL, hold_worker, (void *)1L), 0);
  int here = swarm_worker_id(); /* stolen by the other worker */
  CHECK(here != held, "still on worker %d after the spawn", held);
  if (stranded_descs)
    block_desc_region();
  int e;
  long n = spawn_until_refused(t, wait_gate, &e);
  CHECK(e == EAGAIN, "the limit was never reached (%ld threads, %d)", n, e);
  CHECK(n >= 10, "only %ld threads before EAGAIN", n);
  /* The holder's worker let that refusal's wait (20 ms) pass unanswered:
   * it is late now, and the refusals that follow do not wait for it again
   * (reclaim.c). 50 of them took at least 50 x 20 ms before. */
  uint64_t t0 = os_now_ns();
  for (int i = 0; i < 50; i++)
    CHECK_EQ(swarm_spawn(&t[n], NULL, wait_gate, NULL), EAGAIN);
  uint64_t ms = (os_now_ns() - t0) / 1000000;
  CHECK(ms < 500, "50 refused spawns took %llu ms", (unsigned long long)ms);
  gate_release();
  for (long i = 0; i < n; i++)
    CHECK_EQ(swarm_join(t[i], NULL), 0);
  atomic_store(&hold_released, 1);
  CHECK_EQ(swarm_join(holder, NULL), 0);
  gate_open = 0;
  ext_wanted = n;
  atomic_store(&ext_go, 1);
  while (!atomic_load(&ext_done))
    swarm_yield();
  CHECK(ext_made == n, "the kernel thread's spawn %ld of %ld: %s", ext_made, n,
        strerror(ext_error));
  gate_release();
  for (long i = 0; i < n; i++) {
    void *r;
    CHECK_EQ(swarm_join(ext_threads[i], &r), 0);
    CHECK_EQ((long)r, i);
  }
  CHECK_EQ(pthread_join(ext, NULL), 0);
  printf("%ld threads alive at the edge, as many again from a kernel "
         "thread\n",
         n);
  CHECK_EQ(swarm_finalize(), 0);
  return 0;
}

static size_t edge_stack;
static int edge_default(void) {
  return run_edge(0);
}
static int edge_small(void) {
  return run_edge(edge_stack);
}
/* With guard markers (Linux >= 6.13) a stack adds no mapping and batches
 * merge with their neighbours, so a process at its map count still makes
 * threads: 20,000 of them, with no line from swarm. With mprotect guards
 * every stack is two mappings: the edge, as under the rlimits. */
static void *nothing(void *arg) {
  return arg;
}
static int edge_maps(void) {
  if (fill_maps(40) != 0) {
    perror("fill_maps");
    return 4;
  }
  swarm_thread_t t;
  CHECK_EQ(swarm_spawn(&t, NULL, nothing, NULL), 0); /* probes the guards */
  CHECK_EQ(swarm_join(t, NULL), 0);
  if (strcmp(os_guard_kind(), "mprotect") != 0) {
    static swarm_thread_t many[20000];
    CHECK_EQ(swarm_mutex_init(&gate_lock, 0), 0);
    CHECK_EQ(swarm_cond_init(&gate_cond, 0), 0);
    for (long i = 0; i < 20000; i++)
      CHECK_EQ(swarm_spawn(&many[i], NULL, wait_gate, (void *)i), 0);
    gate_release();
    for (long i = 0; i < 20000; i++) {
      void *r;
      CHECK_EQ(swarm_join(many[i], &r), 0);
      CHECK_EQ((long)r, i);
    }
    printf("guard markers: 20000 threads alive at vm.max_map_count - 40\n");
    return 0;
  }
  CHECK_EQ(swarm_finalize(), 0);
  return run_edge(0);
}
static int edge_cgroup(void) {
  if (cgroup_enter() != 0) {
    perror("cgroup.procs");
    return 4;
  }
  return run_cgroup_edge();
}

int main(int argc, char **argv) {
  const char *c = argc > 1 ? argv[1] : "";
  static struct child_result res;
  const rlim_t mib = 1024 * 1024;
  if (!strcmp(c, "no-limit")) {
    run_child(run_ten_small, -1, 0, &res);
    expect_clean(c, &res);
  } else if (!strcmp(c, "as-1g")) {
    run_child(run_fib, RLIMIT_AS, (rlim_t)1000000 * 1024, &res);
    expect_clean(c, &res);
  } else if (!strcmp(c, "as-256m")) {
    run_child(run_ten, RLIMIT_AS, 256 * mib, &res);
    expect_clean(c, &res);
  } else if (!strcmp(c, "as-256m-8w")) {
    run_child(run_eight_workers, RLIMIT_AS, 256 * mib, &res);
    expect_clean(c, &res);
  } else if (!strcmp(c, "trace-1g")) {
    snprintf(trace_path, sizeof trace_path, "/tmp/swarm-limits-%d.json",
             (int)getpid());
    run_child(run_traced_fib, RLIMIT_AS, (rlim_t)1000000 * 1024, &res);
    expect_clean(c, &res);
    check_trace_written();
  } else if (!strcmp(c, "as-edge")) {
    run_child(edge_default, RLIMIT_AS, 256 * mib, &res);
    expect_edge(c, &res, "RLIMIT_AS");
  } else if (!strcmp(c, "as-edge-small")) {
    edge_stack = SWARM_STACK_MIN;
    run_child(edge_small, RLIMIT_AS, 256 * mib, &res);
    expect_edge(c, &res, "RLIMIT_AS");
  } else if (!strcmp(c, "as-edge-churn")) {
    run_child(run_churn, RLIMIT_AS, 256 * mib, &res);
    expect_edge(c, &res, "RLIMIT_AS");
  } else if (!strcmp(c, "as-edge-stranded")) {
    run_child(run_stranded, RLIMIT_AS, 256 * mib, &res);
    expect_edge(c, &res, "RLIMIT_AS");
  } else if (!strcmp(c, "descs-stranded")) {
    stranded_descs = true;
    run_child(run_stranded, -1, 0, &res);
    expect_edge(c, &res, "another mapping holds the addresses after it");
  } else if (!strcmp(c, "data-edge")) {
    run_child(edge_default, RLIMIT_DATA, 256 * mib, &res);
    expect_edge(c, &res, "RLIMIT_DATA");
  } else if (!strcmp(c, "maps-edge")) {
    run_child(edge_maps, -1, 0, &res);
    if (strstr(res.out, "guard markers"))
      expect_clean(c, &res);
    else
      expect_edge(c, &res, "vm.max_map_count");
  } else if (!strcmp(c, "cgroup-edge")) {
    const char *why = cgroup_make(64 * (long)mib);
    if (why) {
      printf("skipped: %s\n", why);
      return SKIP;
    }
    run_child(edge_cgroup, -1, 0, &res);
    rmdir(cgroup_dir);
    expect_edge(c, &res, "memory cgroup");
  } else if (!strcmp(c, "cgroup-v2-files") || !strcmp(c, "cgroup-v1-files")) {
    run_child(!strcmp(c, "cgroup-v2-files") ? cgroup_v2_files : cgroup_v1_files,
              -1, 0, &res);
    if (WIFEXITED(res.status) && WEXITSTATUS(res.status) == SKIP) {
      fputs(res.out, stdout);
      return SKIP;
    }
    expect_edge(c, &res, "memory cgroup");
  } else {
    fprintf(stderr,
            "usage: test_limits "
            "as-1g|as-256m|as-256m-8w|trace-1g|as-edge|as-edge-small|"
            "as-edge-churn|as-edge-stranded|descs-stranded|data-edge|maps-"
            "edge|cgroup-"
            "edge|cgroup-v2-files|"
            "cgroup-v1-files\n");
    return 2;
  }
  printf("OK %s\n", c);
  return 0;
}
