/* exit() called from a thread other than main (main is blocked in join):
 * the process ends with that status, atexit handlers run exactly once, and
 * stdio is flushed. run_dropin.sh expects status 0, so the thread exits 0
 * and the handler prints the final OK line. */
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "dropin_check.h"

static int handler_runs;
static void at_exit(void) {
  handler_runs++;
  printf("atexit ran %d time(s)\n", handler_runs);
  if (handler_runs == 1)
    printf("OK exit_thread\n");
}
static void *other(void *a) {
  (void)a;
  sleep(100); /* still parked when the process exits */
  return NULL;
}
static void *quitter(void *a) {
  (void)a;
  usleep(10000);
  exit(0);
}

int main(void) {
  report_on_swarm();
  CHECK(atexit(at_exit) == 0);
  pthread_t o, q;
  CHECK(pthread_create(&o, NULL, other, NULL) == 0);
  CHECK(pthread_create(&q, NULL, quitter, NULL) == 0);
  pthread_join(q, NULL);
  printf("FAIL: main continued after exit\n");
  return 1;
}
