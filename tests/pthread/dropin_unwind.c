/* Forced unwinding on pthread_exit and cancellation (as NPTL): the
 * cleanups of code built with -fexceptions (this file: variables with
 * __attribute__((cleanup)), and glibc's pthread_cleanup_push, which under
 * -fexceptions is such a variable) run, innermost first, interleaved in
 * stack order with the jump-buffer handlers of code built without it
 * (dropin_unwind_plain.c, whose pthread_cleanup_push registers a buffer):
 * on pthread_exit, on a deferred cancellation acting in sleep(), and on an
 * asynchronous one acting while the thread computes. Passes on NPTL alone
 * too. */
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "dropin_check.h"

/* The order in which cleanups ran: 'i'nner variable, 'p'lain buffer's
 * handler, 'x' pthread_cleanup_push under -fexceptions, 'o'uter variable. */
static char trail[3][8];
static atomic_int len[3];
static atomic_int started;

void dropin_unwind_note(int run, char c) { /* also from the plain file */
  trail[run][atomic_fetch_add(&len[run], 1)] = c;
}

static void note_inner(int *run) {
  dropin_unwind_note(*run, 'i');
}
static void note_outer(int *run) {
  dropin_unwind_note(*run, 'o');
}
static void note_push(void *run) {
  dropin_unwind_note(*(int *)run, 'x');
}

/* Calls inner(run) under a plain (jump buffer) pthread_cleanup_push. */
void dropin_unwind_plain(int run, void (*inner)(int));

static void inner(int run) {
  int r __attribute__((cleanup(note_inner))) = run;
  (void)r;
  if (run == 0)
    pthread_exit((void *)7);
  atomic_store(&started, 1);
  if (run == 1)
    for (;;)
      sleep(1); /* a cancellation point */
  volatile unsigned long x = 0;
  for (;;)
    x++; /* computes: asynchronous cancellation only */
}

static void *thread(void *arg) {
  int run = (int)(long)arg;
  int r __attribute__((cleanup(note_outer))) = run;
  (void)r;
  if (run == 2)
    pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, NULL);
  pthread_cleanup_push(note_push, &r);
  dropin_unwind_plain(run, inner);
  pthread_cleanup_pop(0);
  return NULL;
}

int main(void) {
  report_on_swarm();
  for (long run = 0; run < 3; run++) {
    pthread_t t;
    atomic_store(&started, 0);
    CHECK_EQ(pthread_create(&t, NULL, thread, (void *)run), 0);
    if (run > 0) {
      while (!atomic_load(&started))
        usleep(1000);
      CHECK_EQ(pthread_cancel(t), 0);
    }
    void *v;
    CHECK_EQ(pthread_join(t, &v), 0);
    CHECK(v == (run == 0 ? (void *)7 : PTHREAD_CANCELED));
    trail[run][atomic_load(&len[run])] = 0;
    printf("run %ld: cleanups in order %s\n", run, trail[run]);
    CHECK(strcmp(trail[run], "ipxo") == 0, "run %ld ran %s, want ipxo", run,
          trail[run]);
  }
  printf("OK\n");
  return 0;
}
