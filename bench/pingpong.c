/*
 * bench/pingpong.c — the thread-per-connection benchmark of issue 5: one
 * point per run. It starts a server, connects C loopback connections with
 * an epoll client on its own kernel thread and core, keeps A of them busy
 * (each carries one 1-byte message at a time: send, wait for the echo,
 * send again), leaves the rest open and idle, and counts round trips for
 * T seconds after a warm-up.
 *
 *   pingpong --server S --conns C --active A --seconds T [--warmup W]
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
 * transactions, tps, errors, server_cpus}.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
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

static double now_s(void) {
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
                  "--conns C --active A --seconds T [--warmup W]\n");
  exit(2);
}

int main(int argc, char **argv) {
  const char *server = NULL;
  long conns = 0, active = -1;
  double seconds = 0, warmup = -1;
  for (int i = 1; i + 1 < argc; i += 2) {
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
    else
      usage();
  }
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
  int ep = epoll_create1(0);
  long errors = 0;
  for (long i = 0; i < active; i++) {
    /* spread the active ones over all the connections */
    long k = i * (conns / active);
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = (uint64_t)k};
    if (epoll_ctl(ep, EPOLL_CTL_ADD, fd[k], &ev) != 0)
      die("epoll_ctl");
    if (write(fd[k], "x", 1) != 1)
      errors++;
  }
  double start = now_s(), t0 = start + warmup, t1 = t0 + seconds;
  long long transactions = 0;
  struct epoll_event evs[256];
  for (;;) {
    double t = now_s();
    if (t >= t1)
      break;
    int m = epoll_wait(ep, evs, 256, 100);
    int counting = t >= t0;
    for (int i = 0; i < m; i++) {
      int s = fd[evs[i].data.u64];
      char c[16];
      ssize_t r = read(s, c, sizeof c);
      if (r <= 0) {
        if (r < 0 && errno == EAGAIN)
          continue;
        errors++;
        epoll_ctl(ep, EPOLL_CTL_DEL, s, NULL);
        continue;
      }
      transactions += counting ? r : 0;
      for (ssize_t j = 0; j < r; j++)
        if (write(s, "x", 1) != 1)
          errors++;
    }
  }
  for (long i = 0; i < conns; i++)
    close(fd[i]);
  kill(pid, SIGTERM);
  int status;
  waitpid(pid, &status, 0);
  printf("{\"bench\": \"pingpong\", \"server\": \"%s\", \"conns\": %ld, "
         "\"active\": %ld, \"seconds\": %g, \"transactions\": %lld, "
         "\"tps\": %.0f, \"errors\": %ld, \"server_cpus\": %d}\n",
         server, conns, active, seconds, transactions,
         (double)transactions / seconds, errors, ncpu >= 2 ? ncpu - 1 : 1);
  return 0;
}
