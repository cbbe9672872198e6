/* Kernel threads the drop-in does not make (libc's own pthread_create, as
 * libc's helper threads are made) that use pthread_self, a key with a
 * destructor and a mutex: when each ends (return or pthread_exit), its key
 * destructor runs once with its value, and the descriptor and record swarm
 * adopted for it go back (swarm_stats' live descriptor count stays flat). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include "dropin_check.h"

#define N 1000
#define BATCH 8

typedef int (*create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *),
                         void *);
typedef int (*join_fn)(pthread_t, void **);

static _Atomic int ran[N];
static pthread_key_t key;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long shared;

static void destructor(void *v) {
  _Atomic int *r = v;
  CHECK(r >= ran && r < ran + N, "a value that was never set: %p", v);
  atomic_fetch_add(r, 1);
}

static void *kernel_thread(void *arg) {
  long i = (long)arg;
  CHECK(pthread_self() != 0);
  CHECK(pthread_equal(pthread_self(), pthread_self()));
  CHECK_EQ(pthread_setspecific(key, &ran[i]), 0);
  CHECK(pthread_getspecific(key) == &ran[i]);
  CHECK_EQ(pthread_mutex_lock(&lock), 0);
  shared++;
  CHECK_EQ(pthread_mutex_unlock(&lock), 0);
  if (i % 2)
    pthread_exit(NULL);
  return NULL;
}

static void *swarm_thread(void *arg) {
  return arg;
}

/* swarm.h's swarm_stats_t, whose eighth field is descriptors_live (this
 * program knows swarm only through the symbols the drop-in exports). */
struct stats_view {
  uint64_t before[7];
  uint64_t descriptors_live;
  uint64_t room[8];
};

static long live(void) {
  int (*get)(struct stats_view *) =
      (int (*)(struct stats_view *))dlsym(RTLD_DEFAULT, "swarm_stats_get");
  struct stats_view st;
  if (!get || get(&st) != 0)
    return -1;
  return (long)st.descriptors_live;
}

int main(void) {
  report_on_swarm();
  /* libc's own functions, past the drop-in's definitions. */
  void *libc = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
  CHECK(libc != NULL);
  create_fn create = (create_fn)dlsym(libc, "pthread_create");
  join_fn join = (join_fn)dlsym(libc, "pthread_join");
  CHECK(create && join);
  CHECK(create != (create_fn)dlsym(RTLD_DEFAULT, "pthread_create") ||
            !dlsym(RTLD_DEFAULT, "swarm_self"),
        "libc's pthread_create is the drop-in's");
  CHECK_EQ(pthread_key_create(&key, destructor), 0);
  pthread_t t; /* one thread swarm makes, for the stats' spawned count */
  CHECK_EQ(pthread_create(&t, NULL, swarm_thread, NULL), 0);
  CHECK_EQ(pthread_join(t, NULL), 0);

  long before = -1;
  for (long i = 0; i < N; i += BATCH) {
    pthread_t kt[BATCH];
    for (long k = 0; k < BATCH; k++)
      CHECK_EQ(create(&kt[k], NULL, kernel_thread, (void *)(i + k)), 0);
    for (long k = 0; k < BATCH; k++)
      CHECK_EQ(join(kt[k], NULL), 0);
    if (i == 0)
      before = live();
  }
  long after = live();
  printf("descriptors live: %ld after %d kernel threads, %ld after %d\n",
         before, BATCH, after, N);
  CHECK(before >= 0 && after == before, "descriptors grew: %ld -> %ld", before,
        after);
  for (int i = 0; i < N; i++)
    CHECK_EQ(atomic_load(&ran[i]), 1);
  CHECK_EQ(shared, N);
  printf("OK external_exit\n");
  return 0;
}
