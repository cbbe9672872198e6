/* glibc's own locking under many threads sharing 2 workers: 32 threads
 * malloc/free and write lines with printf to one FILE; every line is
 * whole and every thread's count is complete. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dropin_check.h"

static FILE *out;
static void *writer(void *a) {
  long id = (long)a;
  for (int i = 0; i < 500; i++) {
    size_t n = 16 + (size_t)((id * 31 + i) % 4000);
    char *p = malloc(n);
    CHECK(p);
    memset(p, (int)id, n);
    fprintf(out, "thread %ld line %d\n", id, i);
    if (i % 50 == 0)
      usleep(100);
    CHECK(p[n - 1] == (char)id);
    free(p);
  }
  return NULL;
}

int main(void) {
  report_on_swarm();
  out = tmpfile();
  CHECK(out);
  pthread_t t[32];
  for (long i = 0; i < 32; i++)
    CHECK(pthread_create(&t[i], NULL, writer, (void *)i) == 0);
  for (int i = 0; i < 32; i++)
    CHECK(pthread_join(t[i], NULL) == 0);
  rewind(out);
  int counts[32] = {0};
  char line[128];
  long id;
  int k, lines = 0;
  while (fgets(line, sizeof line, out)) {
    CHECK(sscanf(line, "thread %ld line %d\n", &id, &k) == 2);
    CHECK(id >= 0 && id < 32 && k == counts[id]);
    counts[id]++;
    lines++;
  }
  CHECK(lines == 32 * 500);
  fclose(out);
  printf("OK stdio_malloc\n");
  return 0;
}
