/*
 * test_io_stuck (issue 4): every worker's kernel thread blocked in a
 * system call swarm knows nothing about — a raw syscall(SYS_read) on a
 * pipe — and the threads queued behind them still run and finish, on the
 * monitor's spare workers; then the blocked ones are released and finish.
 */
#include <sys/syscall.h>

#include "io_test.h"

static int p[2];
static atomic_int blocked, done;

static void *stuck(void *arg) {
  (void)arg;
  atomic_fetch_add(&blocked, 1);
  char c;
  CHECK_EQ(syscall(SYS_read, p[0], &c, 1), 1); /* blocks the worker */
  return NULL;
}

static void *work(void *arg) {
  long n = (long)(intptr_t)arg, s = 0;
  for (long i = 0; i < n; i++)
    s += i;
  atomic_fetch_add(&done, 1);
  return (void *)(intptr_t)(s == n * (n - 1) / 2);
}

int main(void) {
  /* spare workers even on one worker (none by default there) */
  setenv("SWARM_SPARES", "2", 0);
  CHECK(pipe(p) == 0); /* plain libc pipe: blocking */
  int nw = swarm_num_workers();
  swarm_thread_t *s = calloc((size_t)nw, sizeof *s);
  for (int i = 0; i < nw; i++)
    CHECK(swarm_spawn(&s[i], NULL, stuck, NULL) == 0);
  /* we run again only on a worker that is not stuck: a spare */
  while (atomic_load(&blocked) < nw)
    swarm_yield();
  enum { N = 100 };
  swarm_thread_t t[N];
  for (int i = 0; i < N; i++)
    CHECK(swarm_spawn(&t[i], NULL, work, (void *)(intptr_t)(1000 + i)) == 0);
  for (int i = 0; i < N; i++) {
    void *ok;
    CHECK(swarm_join(t[i], &ok) == 0);
    CHECK(ok == (void *)1);
  }
  CHECK_EQ(atomic_load(&done), N);
  CHECK_EQ(atomic_load(&blocked), nw); /* nobody was released yet */
  char bytes[64] = {0};
  CHECK(write(p[1], bytes, (size_t)nw) == nw);
  for (int i = 0; i < nw; i++)
    CHECK(swarm_join(s[i], NULL) == 0);
  free(s);
  TEST_PASS("io_stuck");
  return 0;
}
