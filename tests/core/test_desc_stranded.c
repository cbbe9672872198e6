/* Free descriptors cached by one worker are not lost to a spawn elsewhere
 * when no new descriptor can be made (reclaim.c). The descriptor region
 * grows in place; here another mapping is put right after it (the test
 * reaches into core for where it ends), so it cannot grow. Two workers:
 * one computes in a holder thread while the main flow spawns parked
 * threads until swarm_spawn says EAGAIN, then releases and joins them, so
 * their free descriptors go to its worker's cache (up to 256 stay there)
 * and the global list. Then a kernel thread that is not a worker, which
 * has no cache and takes descriptors from the global list only, must make
 * as many threads again, all alive at once, while the worker holding the
 * rest only yields: it is asked for them and gives them back. Before,
 * that spawn said EAGAIN with up to 256 free descriptors stranded.
 * The first edge must put one line from swarm on stderr, naming the
 * cause. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <swarm.h>
#include <sys/mman.h>
#include <unistd.h>

#include "check.h"
#include "core/core.h"

#define MAX_THREADS 20000 /* the region holds 4,095 until it grows */

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

static void gate_set(int open) {
  swarm_mutex_lock(&gate_lock);
  gate_open = open;
  swarm_cond_broadcast(&gate_cond);
  swarm_mutex_unlock(&gate_lock);
}

static _Atomic int hold_released;
static void *hold_worker(void *arg) {
  while (!atomic_load(&hold_released))
    ; /* computes: its worker runs nothing else, answers nothing */
  return arg;
}

static swarm_thread_t first[MAX_THREADS], again[MAX_THREADS];
static long wanted, made;
static int ext_error;
static _Atomic int ext_go, ext_done;

static void *external_spawner(void *arg) {
  (void)arg;
  while (!atomic_load(&ext_go))
    sched_yield();
  for (; made < wanted; made++)
    if ((ext_error =
             swarm_spawn(&again[made], NULL, wait_gate, (void *)made)) != 0)
      break;
  atomic_store(&ext_done, 1);
  return NULL;
}

/* Maps a page right after the descriptor region: it cannot grow. */
static void block_region_growth(void) {
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

/* stderr goes to a memory file until stderr_take gives it back (and
 * copies what it got to the real one). */
static int saved_stderr = -1, err_file = -1;
static void stderr_capture(void) {
  fflush(stderr);
  err_file = memfd_create("stderr", 0);
  CHECK(err_file >= 0);
  saved_stderr = dup(2);
  CHECK(dup2(err_file, 2) == 2);
}
static void stderr_take(char *text, size_t size) {
  fflush(stderr);
  CHECK(dup2(saved_stderr, 2) == 2);
  ssize_t n = pread(err_file, text, size - 1, 0);
  CHECK(n >= 0);
  text[n] = 0;
  fputs(text, stderr);
}

int main(void) {
  pthread_t ext;
  CHECK_EQ(pthread_create(&ext, NULL, external_spawner, NULL), 0);
  swarm_config_t cfg = {.workers = 2};
  CHECK_EQ(swarm_init(&cfg), 0);
  CHECK_EQ(swarm_mutex_init(&gate_lock, 0), 0);
  CHECK_EQ(swarm_cond_init(&gate_cond, 0), 0);
  int held = swarm_worker_id();
  swarm_thread_t holder;
  CHECK_EQ(swarm_spawn(&holder, NULL, hold_worker, NULL), 0);
  CHECK(swarm_worker_id() != held, "still on worker %d after the spawn", held);
  block_region_growth();
  stderr_capture();
  long n = 0;
  int e = 0;
  while (n < MAX_THREADS &&
         (e = swarm_spawn(&first[n], NULL, wait_gate, (void *)n)) == 0)
    n++;
  static char text[4096];
  stderr_take(text, sizeof text);
  CHECK(e == EAGAIN, "no EAGAIN after %ld threads (%d)", n, e);
  CHECK(n >= 3000, "only %ld threads before EAGAIN", n);
  int lines = 0;
  for (const char *p = text; (p = strstr(p, "swarm:")); p++)
    lines++;
  CHECK(lines == 1, "%d lines from swarm on stderr", lines);
  CHECK(strstr(text, "another mapping holds the addresses after it"),
        "the line does not name the cause");
  gate_set(1);
  for (long i = 0; i < n; i++)
    CHECK_EQ(swarm_join(first[i], NULL), 0);
  atomic_store(&hold_released, 1);
  CHECK_EQ(swarm_join(holder, NULL), 0);
  gate_set(0);
  wanted = n;
  atomic_store(&ext_go, 1);
  while (!atomic_load(&ext_done))
    swarm_yield();
  CHECK(made == n, "the kernel thread's spawn %ld of %ld: %s", made, n,
        strerror(ext_error));
  gate_set(1);
  for (long i = 0; i < n; i++) {
    void *r;
    CHECK_EQ(swarm_join(again[i], &r), 0);
    CHECK_EQ((long)r, i);
  }
  CHECK_EQ(pthread_join(ext, NULL), 0);
  printf("%ld threads alive when the region was full, as many again from a "
         "kernel thread\n",
         n);
  CHECK_EQ(swarm_finalize(), 0);
  return 0;
}
