/* NPTL's answers (or a clear error) at two edges (issue 21 item 7):
 * pthread_create with a stack of 1 << 40 bytes says EAGAIN, as NPTL's
 * failing mmap does (the drop-in said EINVAL), and creates nothing; a
 * pthread_cond_timedwait / pthread_cond_clockwait with no time says EINVAL
 * (the drop-in waited forever; NPTL dereferences it, so that part runs on
 * swarm only). */
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "dropin_check.h"

static int ran;

static void *body(void *arg) {
  (void)arg;
  ran = 1;
  return NULL;
}

int main(void) {
  report_on_swarm();
  pthread_attr_t a;
  pthread_t t;
  CHECK(pthread_attr_init(&a) == 0);
  CHECK(pthread_attr_setstacksize(&a, (size_t)1 << 40) == 0);
  int e = pthread_create(&t, &a, body, NULL);
  CHECK(e == EAGAIN, "1 TiB stack: %s", strerror(e));
  CHECK(pthread_attr_destroy(&a) == 0);
  CHECK(pthread_create(&t, NULL, body, NULL) == 0);
  CHECK(pthread_join(t, NULL) == 0);
  CHECK(ran == 1);
  if (dlsym(RTLD_DEFAULT, "swarm_self")) {
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t c = PTHREAD_COND_INITIALIZER;
    CHECK(pthread_mutex_lock(&m) == 0);
    const struct timespec *volatile none = NULL; /* glibc says nonnull */
    CHECK(pthread_cond_timedwait(&c, &m, none) == EINVAL);
    CHECK(pthread_cond_clockwait(&c, &m, CLOCK_MONOTONIC, none) == EINVAL);
    CHECK(pthread_mutex_unlock(&m) == 0); /* still ours */
  }
  printf("OK\n");
  return 0;
}
