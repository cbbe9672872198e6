/* SWARM_STATS=<interval> (the live view, core/stats.c): every interval one
 * header line and one row per worker go to stderr; the rows' counts are
 * what the workers did (their sum stays within the totals swarm_stats_get
 * reports, give or take finalize's own park, and parks by swarm_sleep_ns
 * show up); the queue column is a depth; with SWARM_STATS=1 there is no
 * live line and no extra kernel thread (the view costs nothing when off); a
 * malformed interval is reported and ignored. Runs the runtime three times
 * in one process, each with stderr sent to a file. No timing assertion: the
 * work goes on until enough reports arrived, however slow the machine. */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <swarm.h>
#include <unistd.h>

#include "check.h"

static int kernel_threads(void) {
  DIR *d = opendir("/proc/self/task");
  CHECK(d != NULL);
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)))
    n += e->d_name[0] != '.';
  closedir(d);
  return n;
}

static void *napper(void *arg) {
  (void)arg;
  swarm_sleep_ns(200000); /* parks */
  return NULL;
}

static int count_lines(const char *path, const char *prefix) {
  FILE *f = fopen(path, "r");
  CHECK(f != NULL);
  char line[512];
  int n = 0;
  while (fgets(line, sizeof line, f))
    n += strncmp(line, prefix, strlen(prefix)) == 0;
  fclose(f);
  return n;
}

/* One run of the runtime with SWARM_STATS=value and stderr in `path`;
 * returns the kernel threads the runtime added; *run: its total of threads
 * run. Works until `reports` live headers were written (if > 0). */
static int run_once(const char *value, const char *path, int reports,
                    swarm_stats_t *total) {
  int saved = dup(2);
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  CHECK(fd >= 0 && saved >= 0);
  dup2(fd, 2);
  close(fd);
  setenv("SWARM_STATS", value, 1);
  int before = kernel_threads();
  swarm_config_t cfg = {.workers = 2};
  CHECK_EQ(swarm_init(&cfg), 0);
  int added = kernel_threads() - before;
  for (long rounds = 0;; rounds++) {
    swarm_thread_t t[16];
    for (int i = 0; i < 16; i++)
      CHECK_EQ(swarm_spawn(&t[i], NULL, napper, NULL), 0);
    for (int i = 0; i < 16; i++)
      CHECK_EQ(swarm_join(t[i], NULL), 0);
    if (reports <= 0 ? rounds >= 20
                     : count_lines(path, "swarm live") >= 3 * reports)
      break;
    CHECK(rounds < 2000000, "no live report after %ld rounds", rounds);
  }
  CHECK_EQ(swarm_stats_get(total), 0);
  CHECK_EQ(swarm_finalize(), 0);
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  return added;
}

int main(void) {
  char path[] = "/tmp/swarm-stats-live-XXXXXX";
  int tmp = mkstemp(path);
  CHECK(tmp >= 0);
  close(tmp);

  /* off: SWARM_STATS=1 prints at finalize only, starts no thread */
  swarm_stats_t total;
  int added_off = run_once("1", path, 0, &total);
  CHECK_EQ(count_lines(path, "swarm live"), 0);
  CHECK(count_lines(path, "swarm stats:") > 0, "no counters at finalize");

  /* live: 2 workers, a header and 2 rows per report */
  int added_live = run_once("5ms", path, 4, &total);
  CHECK_EQ(added_live, added_off + 1);
  FILE *f = fopen(path, "r");
  CHECK(f != NULL);
  char line[512];
  int headers = 0, rows = 0, expect_worker = 0;
  unsigned long long run = 0, parks = 0;
  while (fgets(line, sizeof line, f)) {
    if (strncmp(line, "swarm live", 10) != 0)
      continue;
    double at;
    char word[32];
    unsigned long long r, st, pk, sl, q;
    if (sscanf(line, "swarm live %lfs: %31s", &at, word) == 2 &&
        !strcmp(word, "worker")) {
      CHECK(expect_worker == 0 || expect_worker == 2, "short report: %s", line);
      headers++;
      expect_worker = 0;
      continue;
    }
    int w;
    CHECK(sscanf(line, "swarm live %lfs: %d %llu %llu %llu %llu %llu", &at, &w,
                 &r, &st, &pk, &sl, &q) == 7,
          "malformed row: %s", line);
    CHECK_EQ(w, expect_worker);
    CHECK(q < 1000000, "queue depth %llu", q);
    expect_worker++;
    rows++;
    run += r;
    parks += pk;
  }
  fclose(f);
  CHECK(headers >= 4, "%d reports", headers);
  CHECK_EQ(rows, 2 * headers);
  /* The totals were read before swarm_finalize, whose own park and resume
   * a last report may still count: a few more, never double. */
  unsigned long long slack = 8;
  CHECK(run > 0 && run <= total.threads_run + slack,
        "rows say %llu run, total %llu", run,
        (unsigned long long)total.threads_run);
  CHECK(parks > 0 && parks <= total.parks + slack,
        "rows say %llu parks, total %llu", parks,
        (unsigned long long)total.parks);

  /* malformed: reported, no live view */
  run_once("5xs", path, 0, &total);
  CHECK_EQ(count_lines(path, "swarm live"), 0);
  CHECK_EQ(count_lines(path, "swarm: ignoring SWARM_STATS='5xs'"), 1);
  unlink(path);
  TEST_PASS("stats_live");
  return 0;
}
