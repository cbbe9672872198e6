/* Tracing records inlined children (SWARM_TRACE): each inline spawn is a
 * "spawn" event naming the child's handle, and the child's run is a slice
 * of its own, closed when its parent takes the worker back. */
#include <stdio.h>
#include <string.h>
#include <swarm.h>
#include <unistd.h>

#include "check.h"
#include "inline_common.h"

#define N 200

static swarm_thread_t handles[N];

static void *leaf(void *arg) {
  return arg;
}

static void *runner(void *arg) {
  (void)arg;
  for (int i = 0; i < N; i++) {
    CHECK_EQ(swarm_spawn(&handles[i], &inline_attr, leaf, NULL), 0);
  }
  return NULL;
}

/* How many times `needle` occurs in the file at path. */
static long count_in(const char *path, const char *needle) {
  FILE *f = fopen(path, "r");
  CHECK(f != NULL, "no trace file %s", path);
  long n = 0;
  char line[4096];
  while (fgets(line, sizeof line, f))
    for (char *p = line; (p = strstr(p, needle)) != NULL; p++)
      n++;
  fclose(f);
  return n;
}

int main(void) {
  char path[128];
  snprintf(path, sizeof path, "/tmp/swarm-inline-trace-%d.json", (int)getpid());
  setenv("SWARM_TRACE", path, 1);
  setenv("SWARM_TRACE_FORMAT", "json", 1);
  inline_setup();
  CHECK_EQ(swarm_init(NULL), 0);
  swarm_thread_t t;
  CHECK_EQ(swarm_spawn(&t, NULL, runner, NULL), 0);
  CHECK_EQ(swarm_join(t, NULL), 0);
  for (int i = 0; i < N; i++)
    CHECK_EQ(swarm_join(handles[i], NULL), 0);
  CHECK_EQ(swarm_finalize(), 0); /* writes the trace */
  long spawns = count_in(path, "\"name\":\"spawn\"");
  CHECK(spawns >= N + 1, "%ld spawn events for %d inline spawns", spawns, N);
  /* Every child: named as a spawn's child, and a run slice of its own. */
  for (int i = 0; i < N; i += 37) {
    char child[64], run[64];
    snprintf(child, sizeof child, "\"child\":\"%010llx\"",
             (unsigned long long)handles[i]);
    CHECK(count_in(path, child) == 1, "child %s not traced once", child);
    snprintf(run, sizeof run, "\"thread\":\"%010llx\"",
             (unsigned long long)handles[i]);
    CHECK(count_in(path, run) >= 1, "no run slice of %s", run);
  }
  unlink(path);
  TEST_PASS("inline_trace");
  return 0;
}
