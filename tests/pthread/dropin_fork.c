/* fork from a thread while other threads sleep: the child works (it creates
 * and joins threads, uses a mutex the parent's thread held across fork,
 * prints) and exits with its own status; the forking thread keeps its
 * identity (pthread_self, its thread-specific values); none of the parent's
 * other threads runs in the child; the parent waits for it. */
#include <pthread.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dropin_check.h"

static pthread_mutex_t held = PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP;
static pthread_key_t key;
static volatile int in_child;
static void *background(void *a) {
  (void)a;
  usleep(100000);
  if (in_child) /* a copy of a parent thread must never run in the child */
    _exit(99);
  return NULL;
}
static void *child_thread(void *a) {
  return (void *)((long)a * 2);
}

static void *forker(void *a) {
  (void)a;
  CHECK(pthread_mutex_lock(&held) == 0);
  CHECK(pthread_setspecific(key, &key) == 0);
  pthread_t me = pthread_self();
  fflush(stdout);
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    in_child = 1;
    CHECK(pthread_equal(pthread_self(), me));
    CHECK(pthread_getspecific(key) == &key);
    CHECK(pthread_mutex_unlock(&held) == 0); /* still ours in the child */
    long sum = 0;
    for (long i = 0; i < 20; i++) {
      pthread_t t;
      void *r;
      CHECK(pthread_create(&t, NULL, child_thread, (void *)i) == 0);
      CHECK(pthread_join(t, &r) == 0);
      sum += (long)r;
    }
    usleep(200000); /* time for a stray copy of `background` to show */
    printf("child sum %ld\n", sum);
    fflush(stdout);
    _exit(sum == 380 ? 42 : 1);
  }
  CHECK(pthread_mutex_unlock(&held) == 0);
  int status;
  CHECK(waitpid(pid, &status, 0) == pid);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 42);
  return NULL;
}

int main(void) {
  report_on_swarm();
  CHECK(pthread_key_create(&key, NULL) == 0);
  pthread_t bg[4], f;
  for (int i = 0; i < 4; i++)
    CHECK(pthread_create(&bg[i], NULL, background, NULL) == 0);
  CHECK(pthread_create(&f, NULL, forker, NULL) == 0);
  CHECK(pthread_join(f, NULL) == 0);
  for (int i = 0; i < 4; i++)
    CHECK(pthread_join(bg[i], NULL) == 0);
  printf("OK fork\n");
  return 0;
}
