/* An unmodified pthread program for the limits tests (run_limits.sh runs it
 * under swarmrun with `ulimit -v` or `ulimit -d` set, issue 20):
 *   dropin_limits create N   N threads compute a result each; all joined
 *                            and checked
 *   dropin_limits edge       threads that wait on a condition variable are
 *                            created until pthread_create says EAGAIN, which
 *                            it keeps saying; then they are released and
 *                            joined, and as many are created again
 *   dropin_limits selflimit  main lowers its own RLIMIT_AS to 256 MiB (the
 *                            runtime started before main, under no limit),
 *                            then 100 threads are alive at once (more than
 *                            the stacks mapped at start-up)
 *   dropin_limits refused N  pthread_create is called N times and must say
 *                            EAGAIN each time (run_limits_nostart.sh runs it
 *                            under a limit too small for the runtime) */
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/resource.h>

#include "dropin_check.h"

#define EDGE_MAX 200000

static void *square(void *a) { /* and malloc, as threads do */
  long v = (long)a;
  long *p = malloc(sizeof *p);
  CHECK(p != NULL);
  *p = v * v;
  v = *p;
  free(p);
  return (void *)v;
}

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
static int open_gate;

static void *wait_gate(void *a) {
  pthread_mutex_lock(&m);
  while (!open_gate)
    pthread_cond_wait(&c, &m);
  pthread_mutex_unlock(&m);
  return a;
}

static void create_n(long n) {
  static pthread_t t[EDGE_MAX];
  CHECK(n > 0 && n <= EDGE_MAX);
  for (long i = 0; i < n; i++)
    CHECK(pthread_create(&t[i], NULL, square, (void *)i) == 0,
          "thread %ld of %ld", i, n);
  for (long i = 0; i < n; i++) {
    void *r;
    CHECK(pthread_join(t[i], &r) == 0);
    CHECK((long)r == i * i);
  }
  printf("%ld threads created and joined\n", n);
}

static void edge(void) {
  static pthread_t t[EDGE_MAX];
  long n = 0;
  int e = 0;
  while (n < EDGE_MAX &&
         (e = pthread_create(&t[n], NULL, wait_gate, (void *)n)) == 0)
    n++;
  CHECK(e == EAGAIN, "after %ld threads: %s", n, strerror(e));
  CHECK(n >= 10, "only %ld threads", n);
  pthread_t extra;
  for (int i = 0; i < 5; i++)
    CHECK(pthread_create(&extra, NULL, wait_gate, NULL) == EAGAIN);
  pthread_mutex_lock(&m);
  open_gate = 1;
  pthread_cond_broadcast(&c);
  pthread_mutex_unlock(&m);
  for (long i = 0; i < n; i++) {
    void *r;
    CHECK(pthread_join(t[i], &r) == 0);
    CHECK((long)r == i);
  }
  printf("%ld threads alive at the edge\n", n);
  create_n(n); /* recovery: the memory came back */
}

int main(int argc, char **argv) {
  report_on_swarm();
  if (argc == 3 && !strcmp(argv[1], "create"))
    create_n(atol(argv[2]));
  else if (argc == 2 && !strcmp(argv[1], "edge"))
    edge();
  else if (argc == 2 && !strcmp(argv[1], "selflimit")) {
    struct rlimit r = {(rlim_t)256 << 20, (rlim_t)256 << 20};
    CHECK(setrlimit(RLIMIT_AS, &r) == 0, "%s", strerror(errno));
    static pthread_t t[100];
    for (long i = 0; i < 100; i++) /* all alive at once */
      CHECK(pthread_create(&t[i], NULL, wait_gate, (void *)i) == 0,
            "thread %ld", i);
    pthread_mutex_lock(&m);
    open_gate = 1;
    pthread_cond_broadcast(&c);
    pthread_mutex_unlock(&m);
    for (long i = 0; i < 100; i++) {
      void *res;
      CHECK(pthread_join(t[i], &res) == 0);
      CHECK((long)res == i);
    }
    puts("100 threads alive under the program's own limit");
  } else if (argc == 3 && !strcmp(argv[1], "refused")) {
    for (long i = 0; i < atol(argv[2]); i++) {
      pthread_t t;
      CHECK(pthread_create(&t, NULL, square, NULL) == EAGAIN, "call %ld", i);
    }
    printf("pthread_create said EAGAIN %ld times\n", atol(argv[2]));
  } else {
    fprintf(stderr, "usage: dropin_limits create N | edge\n");
    return 2;
  }
  puts("OK");
  return 0;
}
