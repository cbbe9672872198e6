/*
 * tests/pthread/dropin_cxx_exceptions.cpp — C++ exceptions being handled
 * are per thread under the drop-in: a plain `g++ -pthread` program (not
 * linked to swarm) whose 16 threads, and then main, run
 * tests/cxx/catch_rounds.hpp's rounds, blocking inside their catch blocks
 * and in a destructor while an exception unwinds (a contended mutex, a
 * condition variable, a sleep), while the other threads, on the same
 * workers, throw, catch and rethrow their own: each must find its own
 * exception behind std::current_exception() and a bare `throw;`, and
 * std::uncaught_exceptions() must count its own. Under swarmrun -w 1 every
 * thread shares one kernel thread, so without per-thread exception state
 * the first check fails at once. It passes on NPTL alone too.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>

#include "../cxx/catch_rounds.hpp"

namespace {

constexpr int kThreads = 16;
constexpr int kRounds = 200;

pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
long tick = 0;
std::atomic<int> failures{0};

void fail(const char *what, int id, int round) {
  if (failures.fetch_add(1) < 5)
    std::printf("FAIL: thread %d round %d: %s\n", id, round, what);
}

/* Something that switches: the three ways a thread blocks here. */
void block(int how) {
  switch (how % 3) {
  case 0: /* a contended mutex held across a yield */
    pthread_mutex_lock(&lock);
    sched_yield();
    pthread_mutex_unlock(&lock);
    break;
  case 1: { /* a condition variable: wait for the next tick */
    pthread_mutex_lock(&lock);
    long seen = tick;
    tick++;
    pthread_cond_broadcast(&cond);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += 200000;
    if (ts.tv_nsec >= 1000000000) {
      ts.tv_sec++;
      ts.tv_nsec -= 1000000000;
    }
    while (tick == seen + 1 && pthread_cond_timedwait(&cond, &lock, &ts) == 0) {
    }
    pthread_mutex_unlock(&lock);
    break;
  }
  default:
    usleep(50);
  }
}

void *worker(void *arg) {
  catch_rounds::run((int)(long)arg, kRounds, block, fail);
  return nullptr;
}

} // namespace

int main() {
  std::printf("on swarm: %s\n",
              dlsym(RTLD_DEFAULT, "swarm_self") ? "yes" : "no");
  pthread_t t[kThreads];
  for (long i = 0; i < kThreads; i++)
    if (pthread_create(&t[i], nullptr, worker, (void *)i) != 0) {
      std::printf("FAIL: pthread_create\n");
      return 1;
    }
  for (int i = 0; i < kThreads; i++)
    pthread_join(t[i], nullptr);
  /* main too, on its own flow, after the others are gone */
  worker((void *)(long)kThreads);
  if (failures.load() != 0) {
    std::printf("%d failures\n", failures.load());
    return 1;
  }
  std::printf("%d threads x %d rounds, every exception its own\nOK\n",
              kThreads + 1, kRounds);
  return 0;
}
