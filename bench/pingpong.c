/*
 * bench/pingpong.c — the thread-per-connection benchmark of issue 5: one
 * point per run. It starts a server, connects C loopback connections with
 * a client on its own kernel thread and core, keeps A of them busy (each
 * carries one 1-byte message at a time: send, wait for the echo, send
 * again), leaves the rest open and idle, and counts round trips for T
 * seconds after a warm-up.
 *
 *   pingpong --server S --conns C --active A --seconds T [--warmup W]
 *            [--client uring|epoll] [--cpu-stat]
 *
 * The client (issue 17): uring (the default where io_uring works;
 * bench/pingpong_uring.c) costs a fraction of a server per round trip, so
 * the server sets the rate; epoll (a level-triggered loop, a read and a
 * write per echo: as costly as the epoll-loop server, so at C >= 128 it
 * was the bottleneck) reproduces the figures before issue 17. When
 * io_uring cannot run, the epoll client runs and "client" says so.
 *
 * S: swarm     bench/pingpong-server-swarm (native swarm threads)
 *    nptl      bench/peers/pingpong-server-nptl (plain pthreads)
 *    swarmrun  the same NPTL binary under bin/swarmrun (the drop-in)
 *    go        bench/peers/pingpong-server-go (goroutine per connection)
 *    epoll     bench/peers/pingpong-server-epoll (an event loop per core)
 * CPUs: with two or more in the affinity mask, the client takes the last
 * one and the server (whatever its kind) the others; each server sizes
 * itself from its mask (swarm's workers, GOMAXPROCS, epoll loops).
 * Output: one JSON line {bench, server, conns, active, seconds,
 * transactions, tps, errors, server_cpus, client}; with --cpu-stat also
 * "cpu": the server's CPUs and the client's, busy/user/sys/softirq/idle in
 * % of their time over the counted window (/proc/stat; on loopback a
 * sender's softirq also does its peer's receive), and each side's busy CPU
 * microseconds per round trip, and the window's ends t0, t1 (seconds on
 * CLOCK_MONOTONIC, for a profiler's timestamps: bench/pingpong_cpu.py).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pingpong_client.h"

double pp_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void die(const char *what) {
  fprintf(stderr, "pingpong: %s: %s\n", what, strerror(errno));
  exit(2);
}

static void usage(void) {
  fprintf(stderr, "usage: pingpong --server swarm|nptl|swarmrun|go|epoll "
                  "--conns C --active A --seconds T [--warmup W] "
                  "[--client uring|epoll] [--idle-helpers N] [--cpu-stat]\n");
  exit(2);
}

void pp_client_epoll(struct pp_run *r) {
  int ep = epoll_create1(0);
  if (ep < 0)
    die("epoll_create1");
  for (long i = r->first; i < r->active; i += r->step) {
    long k = pp_active_index(r, i);
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = (uint64_t)k};
    if (epoll_ctl(ep, EPOLL_CTL_ADD, r->fd[k], &ev) != 0)
      die("epoll_ctl");
  }
  struct epoll_event evs[256];
  int opened = 0;
  for (;;) {
    int counting = pp_turn(r, &opened);
    if (counting < 0)
      break;
    int m = epoll_wait(ep, evs, 256, 100);
    for (int i = 0; i < m; i++) {
      int s = r->fd[evs[i].data.u64];
      char c[16];
      ssize_t n = read(s, c, sizeof c);
      if (n <= 0) {
        if (n < 0 && errno == EAGAIN)
          continue;
        r->errors++;
        epoll_ctl(ep, EPOLL_CTL_DEL, s, NULL);
        continue;
      }
      r->transactions += counting ? n : 0;
      for (ssize_t j = 0; j < n; j++)
        if (c[j] != 'x' || write(s, "x", 1) != 1)
          r->errors++;
    }
  }
  close(ep);
}

#ifndef PINGPONG_HAVE_URING
int pp_client_uring(struct pp_run *r, const char **why) {
  (void)r;
  *why = "built without liburing";
  return -ENOSYS;
}
#endif

/* a client thread at idle priority on one of the server's CPUs: it runs
 * only when the server leaves that CPU idle (a server thread that wakes
 * preempts it at once), so the server keeps all the CPU it asks for and
 * the client gets the rest of the machine */
struct helper {
  pthread_t t;
  int cpu;
  struct pp_run r;
};

static void *helper_main(void *arg) {
  struct helper *h = arg;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(h->cpu, &one);
  struct sched_param sp = {0};
  if (pthread_setaffinity_np(pthread_self(), sizeof one, &one) != 0 ||
      pthread_setschedparam(pthread_self(), SCHED_IDLE, &sp) != 0) {
    fprintf(stderr, "pingpong: cannot place the idle-priority client thread\n");
    exit(2);
  }
  const char *why = "?";
  if (pp_client_uring(&h->r, &why) < 0) {
    fprintf(stderr, "pingpong: idle-priority client: %s\n", why);
    exit(2);
  }
  return NULL;
}

/* --cpu-stat: /proc/stat's per-CPU ticks at the window's two ends */
enum { T_USER, T_NICE, T_SYS, T_IDLE, T_IOWAIT, T_IRQ, T_SOFTIRQ, T_STEAL, NT };
struct cpu_ticks {
  unsigned long long t[NT];
};
struct cpu_window {
  int client_cpu;                /* -1: client and server share the CPUs */
  cpu_set_t srv;                 /* the server's CPUs */
  struct cpu_ticks s0[2], s1[2]; /* [0] the server's CPUs, [1] the client's */
  double w0, w1;
};

static void cpu_snapshot(const struct cpu_window *w, struct cpu_ticks out[2]) {
  memset(out, 0, 2 * sizeof *out);
  FILE *f = fopen("/proc/stat", "r");
  if (!f)
    return;
  char line[512];
  while (fgets(line, sizeof line, f)) {
    int cpu;
    unsigned long long v[NT] = {0};
    if (sscanf(line, "cpu%d %llu %llu %llu %llu %llu %llu %llu %llu", &cpu,
               &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]) != 9)
      continue;
    int side = cpu == w->client_cpu ? 1 : 0;
    if (!side && (cpu < 0 || cpu >= CPU_SETSIZE || !CPU_ISSET(cpu, &w->srv)))
      continue;
    for (int k = 0; k < NT; k++)
      out[side].t[k] += v[k];
  }
  fclose(f);
}

static void cpu_window_open(struct pp_run *r) {
  struct cpu_window *w = r->arg;
  cpu_snapshot(w, w->s0);
  w->w0 = pp_now();
}

static void cpu_window_close(struct cpu_window *w) {
  cpu_snapshot(w, w->s1);
  w->w1 = pp_now();
}

static void cpu_side_print(const char *name, const struct cpu_ticks *a,
                           const struct cpu_ticks *b, long long rts) {
  double d[NT], all = 0;
  for (int k = 0; k < NT; k++) {
    d[k] = (double)(b->t[k] - a->t[k]);
    all += d[k];
  }
  if (all <= 0)
    all = 1;
  double busy = d[T_USER] + d[T_NICE] + d[T_SYS] + d[T_IRQ] + d[T_SOFTIRQ];
  double hz = (double)sysconf(_SC_CLK_TCK);
  printf("\"%s\": {\"busy\": %.1f, \"user\": %.1f, \"sys\": %.1f, "
         "\"softirq\": %.1f, \"idle\": %.1f, \"steal\": %.1f, "
         "\"us_per_rt\": %.2f}",
         name, 100 * busy / all, 100 * (d[T_USER] + d[T_NICE]) / all,
         100 * d[T_SYS] / all, 100 * (d[T_SOFTIRQ] + d[T_IRQ]) / all,
         100 * (d[T_IDLE] + d[T_IOWAIT]) / all, 100 * d[T_STEAL] / all,
         rts > 0 ? busy / hz * 1e6 / (double)rts : 0.0);
}

/* the round trips counted in the window, all on the window's CPU time */
static void cpu_window_print(const struct cpu_window *w, long long rts) {
  printf(", \"cpu\": {\"window_s\": %.3f, \"t0\": %.6f, \"t1\": %.6f, ",
         w->w1 - w->w0, w->w0, w->w1);
  cpu_side_print("server", &w->s0[0], &w->s1[0], rts);
  if (w->client_cpu >= 0) {
    printf(", ");
    cpu_side_print("client", &w->s0[1], &w->s1[1], rts);
  }
  printf("}");
}

int main(int argc, char **argv) {
  const char *server = NULL;
  long conns = 0, active = -1;
  double seconds = 0, warmup = -1;
  const char *client = "uring";
  int cpu_stat = 0;
  long helpers = -1;
  for (int i = 1; i < argc; i += 2) {
    if (!strcmp(argv[i], "--cpu-stat")) {
      cpu_stat = 1;
      i--;
      continue;
    }
    if (i + 1 >= argc)
      usage();
    if (!strcmp(argv[i], "--server"))
      server = argv[i + 1];
    else if (!strcmp(argv[i], "--conns"))
      conns = atol(argv[i + 1]);
    else if (!strcmp(argv[i], "--active"))
      active = atol(argv[i + 1]);
    else if (!strcmp(argv[i], "--seconds"))
      seconds = atof(argv[i + 1]);
    else if (!strcmp(argv[i], "--warmup"))
      warmup = atof(argv[i + 1]);
    else if (!strcmp(argv[i], "--client"))
      client = argv[i + 1];
    else if (!strcmp(argv[i], "--idle-helpers"))
      helpers = atol(argv[i + 1]);
    else
      usage();
  }
  if (strcmp(client, "uring") && strcmp(client, "epoll"))
    usage();
  if (!server || conns < 1 || active < 1 || active > conns || seconds <= 0)
    usage();
  if (warmup < 0)
    warmup = seconds / 4 < 0.5 ? seconds / 4 : 0.5;
  signal(SIGPIPE, SIG_IGN);
  struct rlimit rl;
  getrlimit(RLIMIT_NOFILE, &rl);
  rl.rlim_cur = rl.rlim_max;
  setrlimit(RLIMIT_NOFILE, &rl);
  if ((rlim_t)conns + 64 > rl.rlim_cur) {
    fprintf(stderr,
            "pingpong: %ld connections need more descriptors than "
            "RLIMIT_NOFILE (%ld)\n",
            conns, (long)rl.rlim_cur);
    return 2;
  }

  /* programs next to this one: build/bench/... and build/bin/swarmrun */
  char self[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n < 0)
    die("readlink /proc/self/exe");
  self[n] = 0;
  char dir[PATH_MAX], exe[PATH_MAX + 64], run[PATH_MAX + 64];
  snprintf(dir, sizeof dir, "%s", dirname(self));
  char *args[4] = {exe, NULL, NULL, NULL};
  if (!strcmp(server, "swarm")) {
    snprintf(exe, sizeof exe, "%s/pingpong-server-swarm", dir);
  } else if (!strcmp(server, "nptl")) {
    snprintf(exe, sizeof exe, "%s/peers/pingpong-server-nptl", dir);
  } else if (!strcmp(server, "swarmrun")) {
    snprintf(run, sizeof run, "%s/../bin/swarmrun", dir);
    snprintf(exe, sizeof exe, "%s/peers/pingpong-server-nptl", dir);
    args[0] = run;
    args[1] = "--";
    args[2] = exe;
  } else if (!strcmp(server, "go")) {
    snprintf(exe, sizeof exe, "%s/peers/pingpong-server-go", dir);
  } else if (!strcmp(server, "epoll")) {
    snprintf(exe, sizeof exe, "%s/peers/pingpong-server-epoll", dir);
  } else {
    usage();
  }
  if (access(exe, X_OK) != 0)
    die(exe);

  /* split the CPUs: the client the last, the server the rest */
  cpu_set_t all, srv, cli;
  CPU_ZERO(&srv);
  CPU_ZERO(&cli);
  sched_getaffinity(0, sizeof all, &all);
  int ncpu = CPU_COUNT(&all), last = -1;
  for (int c = 0; c < CPU_SETSIZE; c++)
    if (CPU_ISSET(c, &all))
      last = c;
  if (ncpu >= 2) {
    srv = all;
    CPU_CLR(last, &srv);
    CPU_SET(last, &cli);
  }

  int out[2];
  if (pipe(out) != 0)
    die("pipe");
  pid_t pid = fork();
  if (pid < 0)
    die("fork");
  if (pid == 0) {
    if (ncpu >= 2)
      sched_setaffinity(0, sizeof srv, &srv);
    dup2(out[1], 1);
    close(out[0]);
    close(out[1]);
    execv(args[0], args);
    _exit(127);
  }
  close(out[1]);
  if (ncpu >= 2)
    sched_setaffinity(0, sizeof cli, &cli);
  char line[64] = {0};
  FILE *f = fdopen(out[0], "r");
  int port = 0;
  if (!fgets(line, sizeof line, f) || sscanf(line, "port %d", &port) != 1) {
    fprintf(stderr, "pingpong: the %s server did not report its port\n",
            server);
    kill(pid, SIGKILL);
    return 2;
  }

  int *fd = calloc((size_t)conns, sizeof *fd);
  struct sockaddr_in a = {.sin_family = AF_INET,
                          .sin_port = htons((uint16_t)port),
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  for (long i = 0; i < conns; i++) {
    fd[i] = socket(AF_INET, SOCK_STREAM, 0);
    if (fd[i] < 0)
      die("socket");
    if (connect(fd[i], (struct sockaddr *)&a, sizeof a) != 0)
      die("connect");
    int one = 1;
    setsockopt(fd[i], IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    fcntl(fd[i], F_SETFL, O_NONBLOCK);
  }
  struct pp_run r = {.fd = fd, .conns = conns, .active = active, .step = 1};
  struct cpu_window cw = {.client_cpu = ncpu >= 2 ? last : -1,
                          .srv = ncpu >= 2 ? srv : all};
  if (cpu_stat) {
    r.window_opens = cpu_window_open;
    r.arg = &cw;
  }
  for (long i = 0; i < active; i++)
    if (write(fd[pp_active_index(&r, i)], "x", 1) != 1)
      r.errors++;
  r.t0 = pp_now() + warmup;
  r.t1 = r.t0 + seconds;
  if (!strcmp(client, "uring")) {
    const char *why = "?";
    int e = pp_uring_usable(&why);
    if (e < 0) {
      fprintf(stderr,
              "pingpong: the io_uring client cannot run (%s: %s); "
              "the epoll client runs instead\n",
              why, strerror(-e));
      client = "epoll";
    }
  }
  if (helpers < 0)
    helpers = ncpu - 1; /* one per server CPU */
  if (!strcmp(client, "epoll") || ncpu < 2)
    helpers = 0;
  if (helpers > ncpu - 1)
    helpers = ncpu - 1;
  if (helpers > active - 1)
    helpers = active - 1;
  struct helper h[CPU_SETSIZE];
  r.step = 1 + helpers;
  for (long j = 0, c = 0; j < helpers; j++, c++) {
    while (!CPU_ISSET(c, &srv))
      c++;
    h[j].r = r;
    h[j].r.first = 1 + j;
    h[j].r.window_opens = NULL;
    h[j].cpu = (int)c;
    if (pthread_create(&h[j].t, NULL, helper_main, &h[j]) != 0)
      die("pthread_create");
  }
  if (!strcmp(client, "uring")) {
    const char *why = "?";
    if (pp_client_uring(&r, &why) < 0)
      die(why);
  } else {
    pp_client_epoll(&r);
  }
  for (long j = 0; j < helpers; j++) {
    pthread_join(h[j].t, NULL);
    r.transactions += h[j].r.transactions;
    r.errors += h[j].r.errors;
  }
  if (cpu_stat)
    cpu_window_close(&cw);
  for (long i = 0; i < conns; i++)
    close(fd[i]);
  kill(pid, SIGTERM);
  int status;
  waitpid(pid, &status, 0);
  printf("{\"bench\": \"pingpong\", \"server\": \"%s\", \"conns\": %ld, "
         "\"active\": %ld, \"seconds\": %g, \"transactions\": %lld, "
         "\"tps\": %.0f, \"errors\": %ld, \"server_cpus\": %d, "
         "\"client\": \"%s\", \"client_idle_helpers\": %ld",
         server, conns, active, seconds, r.transactions,
         (double)r.transactions / seconds, r.errors, ncpu >= 2 ? ncpu - 1 : 1,
         client, helpers);
  if (cpu_stat)
    cpu_window_print(&cw, r.transactions);
  printf("}\n");
  return 0;
}
