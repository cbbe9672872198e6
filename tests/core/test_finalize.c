/* Start and stop: lazy start on the first call; explicit init with a config;
 * EBUSY, EPERM and ESRCH as documented; finalize waits for every thread and
 * returns on the kernel thread that started the runtime even when main's
 * flow was stolen by another worker; the runtime restarts afterwards. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <swarm.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "check.h"
#include "fib_threads.h"
#include "worker_ids.h"

static void *try_finalize(void *a) {
  (void)a;
  return (void *)(long)swarm_finalize();
}

static void *ext_finalize(void *a) {
  (void)a;
  return (void *)(long)swarm_finalize();
}

static _Atomic int moved;
static void *note_worker(void *a) {
  (void)a;
  return NULL;
}

int main(void) {
  pid_t tid = (pid_t)syscall(SYS_gettid);
  CHECK_EQ(swarm_is_running(), 0);
  CHECK_EQ(swarm_finalize(), ESRCH);
  /* lazy start */
  swarm_thread_t t;
  CHECK_EQ(swarm_spawn(&t, NULL, fib_threads, (void *)10L), 0);
  CHECK_EQ(swarm_is_running(), 1);
  CHECK_EQ(swarm_join(t, NULL), 0);
  /* main's flow is a swarm thread now (possibly stolen to another worker) */
  CHECK(worker_id_valid(swarm_worker_id())); /* a spare's id is above */
  CHECK_EQ(swarm_init(NULL), EBUSY);
  void *r;
  CHECK_EQ(swarm_spawn(&t, NULL, try_finalize, NULL), 0);
  CHECK_EQ(swarm_join(t, &r), 0);
  CHECK_EQ((long)r, EPERM);
  pthread_t kt;
  CHECK_EQ(pthread_create(&kt, NULL, ext_finalize, NULL), 0);
  pthread_join(kt, &r);
  CHECK_EQ((long)r, EPERM);
  CHECK_EQ(swarm_finalize(), 0);
  CHECK_EQ(swarm_is_running(), 0);
  CHECK_EQ(swarm_worker_id(), -1);

  for (int round = 0; round < 6; round++) {
    swarm_config_t cfg = {.workers = 1 + round % 3,
                          .stack_size = (size_t)(64 + 64 * (round % 2)) << 10};
    CHECK_EQ(swarm_init(&cfg), 0);
    CHECK_EQ(swarm_num_workers(), cfg.workers);
    /* enough work for main's continuation to be stolen */
    for (int k = 0; k < 20; k++) {
      CHECK_EQ((long)fib_threads((void *)18L), 2584);
      if (swarm_worker_id() != 0)
        atomic_store(&moved, 1);
    }
    swarm_thread_t d;
    swarm_attr_t at;
    swarm_attr_init(&at);
    swarm_attr_setdetachstate(&at, SWARM_CREATE_DETACHED);
    CHECK_EQ(swarm_spawn(&d, &at, note_worker, NULL), 0);
    CHECK_EQ(swarm_finalize(), 0);
    /* back on the kernel thread that called swarm_init */
    CHECK_EQ((pid_t)syscall(SYS_gettid), tid);
    CHECK_EQ(swarm_worker_id(), -1);
  }
  printf("restarted 6 times; main's flow %s another worker\n",
         atomic_load(&moved) ? "was stolen by" : "never moved to");
  TEST_PASS("finalize");
  return 0;
}
