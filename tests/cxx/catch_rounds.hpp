// tests/cxx/catch_rounds.hpp — what each thread of the two tests of C++
// exceptions on swarm threads does (tests/cxx/test_cxx_catch_blocks.cpp
// natively, tests/pthread/dropin_cxx_exceptions.cpp under the drop-in),
// with the test's own way to block. Plain C++, no swarm.
//
// run(id, rounds, block, fail): each round throws the thread's own
// exception through a destructor that blocks (std::uncaught_exceptions()
// must count it, before and after), blocks inside the catch block, then
// needs its own exception behind std::current_exception() and a bare
// `throw;`, caught outside, where it blocks and checks again; after the
// outer catch nothing may be handled. fail(what, id, round) is called for
// each check that does not hold.
#ifndef SWARM_TESTS_CATCH_ROUNDS_HPP
#define SWARM_TESTS_CATCH_ROUNDS_HPP

#include <exception>

namespace catch_rounds {

struct thread_error {
  int id;
  int round;
};

inline bool own(std::exception_ptr p, int id, int round) {
  try {
    std::rethrow_exception(p);
  } catch (const thread_error &e) {
    return e.id == id && e.round == round;
  } catch (...) {
    return false;
  }
}

template <class Block, class Fail> struct unwinding_guard {
  int id, round;
  Block &block;
  Fail &fail;
  ~unwinding_guard() {
    if (std::uncaught_exceptions() != 1)
      fail("uncaught_exceptions() before a block in a destructor", id, round);
    block(id + round);
    if (std::uncaught_exceptions() != 1)
      fail("uncaught_exceptions() after a block in a destructor", id, round);
  }
};

template <class Block, class Fail>
void throw_own(int id, int round, Block &block, Fail &fail) {
  unwinding_guard<Block, Fail> g{id, round, block, fail};
  throw thread_error{id, round};
}

template <class Block, class Fail>
void run(int id, int rounds, Block block, Fail fail) {
  for (int round = 0; round < rounds; round++) {
    try {
      try {
        throw_own(id, round, block, fail);
      } catch (const thread_error &e) {
        if (e.id != id || e.round != round)
          fail("caught another thread's exception", id, round);
        block(id * 7 + round);
        if (!own(std::current_exception(), id, round))
          fail("current_exception() after a block is not ours", id, round);
        if (std::uncaught_exceptions() != 0)
          fail("uncaught_exceptions() inside a catch", id, round);
        throw; // the one this block handles: ours
      }
    } catch (const thread_error &e) {
      if (e.id != id || e.round != round)
        fail("a bare throw; rethrew another thread's exception", id, round);
      block(id + 2 * round);
      if (!own(std::current_exception(), id, round))
        fail("current_exception() in the outer catch is not ours", id, round);
    }
    if (std::current_exception())
      fail("an exception still handled after its catch ended", id, round);
  }
}

} // namespace catch_rounds

#endif
