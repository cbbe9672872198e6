// tests/cxx/test_cxx_catch_blocks.cpp — swarm threads may block inside a
// catch block (src/sync/cxx_eh.c): 16 threads on one worker, then on two,
// run catch_rounds.hpp's rounds, blocking on a contended swarm::mutex, a
// yield or a sleep; each must find its own exception behind
// std::current_exception() and a bare `throw;`. With the C++ runtime's
// per-kernel-thread state the first rethrow after a switch is another
// thread's. Main's own exceptions cross swarm_init and swarm_finalize:
// one that unwinds through the runtime object's end, a catch block that
// starts and ends a runtime. With `fork`: a fork child of main, and of a
// swarm thread, inside a catch block still handles the exception.
#include "catch_rounds.hpp"
#include "check.h"
#include <swarm.hpp>

#include <atomic>
#include <cstdio>
#include <string>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

namespace {

using catch_rounds::own;
using catch_rounds::thread_error;

swarm::mutex lock;
std::atomic<int> failures{0};

void block(int how) {
  switch (how % 3) {
  case 0: {
    std::lock_guard<swarm::mutex> g(lock);
    swarm_yield(); // the others queue on the mutex meanwhile
    break;
  }
  case 1:
    swarm_yield();
    break;
  default:
    swarm_sleep_ns(20000);
  }
}

void fail(const char *what, int id, int round) {
  if (failures++ < 5)
    std::printf("thread %d round %d: %s\n", id, round, what);
}

void round_of_threads() {
  std::vector<swarm::thread<void>> ts;
  for (int i = 0; i < 16; i++)
    ts.push_back(swarm::spawn(
        [](int id) { catch_rounds::run(id, 100, block, fail); }, i));
  for (auto &t : ts)
    t.join();
}

// An exception thrown while the runtime runs that unwinds through the
// runtime object's end (swarm_finalize) and is caught after it.
void throw_through_runtime() {
  swarm::runtime rt(2);
  round_of_threads();
  throw thread_error{100, 0};
}

// fork() inside a catch block: the child's flow (main, or a swarm thread)
// still handles its exception there (cxx_eh.c's main_enter). 0 when so.
int fork_in_catch(int id) {
  try {
    throw thread_error{id, 0};
  } catch (...) {
    pid_t pid = fork();
    if (pid == 0) {
      bool ok = own(std::current_exception(), id, 0);
      try {
        throw;
      } catch (const thread_error &e) {
        ok = ok && e.id == id;
      } catch (...) {
        ok = false;
      }
      _exit(ok ? 0 : 1);
    }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid)
      return 2;
    bool ours = own(std::current_exception(), id, 0); // the parent's too
    return WIFEXITED(status) && ours ? WEXITSTATUS(status) : 3;
  }
  return 4;
}

int fork_checks() {
  swarm::runtime rt(2);
  CHECK(fork_in_catch(200) == 0);                      // main
  CHECK(swarm::spawn(fork_in_catch, 201).join() == 0); // a swarm thread
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  // `fork`: only the fork checks (not under qemu-user, which aborts when a
  // multi-threaded guest forks; tests/cxx/CMakeLists.txt).
  if (argc > 1 && std::string(argv[1]) == "fork")
    return fork_checks();
  {
    swarm::runtime rt(1); // every thread on one kernel thread
    round_of_threads();
  }
  CHECK(failures.load() == 0);
  try {
    throw_through_runtime(); // and moving between two
  } catch (const thread_error &e) {
    CHECK(e.id == 100);
    CHECK(std::uncaught_exceptions() == 0);
    CHECK(own(std::current_exception(), 100, 0));
  }
  CHECK(std::uncaught_exceptions() == 0);
  CHECK(!std::current_exception());
  CHECK(failures.load() == 0);
  // A catch block that starts and ends a runtime, on main's flow.
  try {
    throw thread_error{101, 0};
  } catch (...) {
    {
      swarm::runtime rt(1);
      round_of_threads();
      CHECK(own(std::current_exception(), 101, 0)); // main, a swarm thread
    }
    CHECK(own(std::current_exception(), 101, 0));
  }
  CHECK(!std::current_exception());
  CHECK(failures.load() == 0);
  return 0;
}
