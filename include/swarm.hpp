// swarm.hpp — the C++17 interface to swarm: typed threads, task groups,
// parallel_for, and RAII locks over the native primitives. Header-only, over
// the C API in swarm.h; link the same library (swarm::swarm, or
// `pkg-config --libs swarm`).
//
//   swarm::thread<int> t = swarm::spawn([] { return 6 * 7; });
//   int v = t.join();                 // 42; rethrows what the lambda threw
//
//   swarm::task_group g;              // spawn many, wait for all
//   g.run([&] { left(); });
//   g.run([&] { right(); });
//   g.wait();                         // rethrows the first exception
//
//   swarm::parallel_for(0, n, 1024, [&](int i) { a[i] *= 2; });
//
//   swarm::mutex m;                   // a swarm_mutex_t: parks, not spins
//   { std::lock_guard<swarm::mutex> g(m); ... }   // or swarm::lock_guard
//
// Invariants this header keeps:
//  - An exception never leaves a spawned function through swarm's C frames:
//    each spawned callable runs inside a try block in its entry function;
//    what it throws is stored as an std::exception_ptr and rethrown by
//    join() (or wait()) in the joiner.
//  - A spawned callable's state (the callable, its result, its exception)
//    lives on the heap and is owned by the handle; the thread only writes
//    into it before it exits, and join() reads it after swarm_join returned,
//    which orders the two.
//  - Nothing spawned outlives the scope that waits for it: a joinable
//    swarm::thread joins in its destructor (as std::jthread does), and
//    task_group's destructor and parallel_for wait for every child before
//    they return or rethrow, because children may refer to the caller's
//    stack.
//
// One thing C++ programs on user-level threads must know: a swarm thread may
// move to another kernel thread whenever it blocks (join, a contended lock,
// a condition variable, I/O). The C++ runtime keeps the state of exceptions
// being handled per kernel thread, so do not block inside a catch block
// (copy the exception_ptr out and handle it after the block); and
// thread_local variables are the kernel thread's, not the swarm thread's.
#ifndef SWARM_HPP
#define SWARM_HPP

#include <swarm.h>

#include <cerrno>
#include <cstddef>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <system_error>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace swarm {

namespace detail {

struct adopt_t {}; // thread<R>'s constructor for spawn

template <class T> struct identity { using type = T; };
template <class T> using identity_t = typename identity<T>::type;

[[noreturn]] inline void throw_errno(int e, const char *what) {
  throw std::system_error(e, std::generic_category(), what);
}

// A spawned callable, its arguments, and where its outcome goes.
template <class R> struct outcome {
  std::optional<R> value;
  std::exception_ptr error;
  R take() { return std::move(*value); }
};
template <> struct outcome<void> {
  std::exception_ptr error;
  void take() {}
};

template <class R, class Fn, class... Args> struct task final {
  Fn fn;
  std::tuple<Args...> args;
  outcome<R> out;

  template <class F, class... A>
  explicit task(F &&f, A &&...a)
      : fn(std::forward<F>(f)), args(std::forward<A>(a)...) {}

  static void *entry(void *p) noexcept {
    auto *t = static_cast<task *>(p);
    try {
      if constexpr (std::is_void_v<R>)
        std::apply(std::move(t->fn), std::move(t->args));
      else
        t->out.value.emplace(std::apply(std::move(t->fn), std::move(t->args)));
    } catch (...) {
      t->out.error = std::current_exception();
    }
    return nullptr;
  }
};

// What a thread<R> owns, with the callable's type erased.
template <class R> struct state_base {
  virtual ~state_base() = default;
  virtual outcome<R> &result() = 0;
};
template <class R, class Fn, class... Args> struct state final : state_base<R> {
  using task_type = task<R, Fn, Args...>;
  task_type t;
  template <class F, class... A>
  explicit state(F &&f, A &&...a)
      : t(std::forward<F>(f), std::forward<A>(a)...) {}
  outcome<R> &result() override { return t.out; }
};

} // namespace detail

// A joinable swarm thread whose function returns R. Move-only. join()
// returns the value (or rethrows the exception); a handle still joinable
// when destroyed joins first and drops the outcome.
template <class R> class thread {
public:
  using result_type = R;

  thread() noexcept = default;
  // For spawn: adopts a started thread and its state.
  thread(detail::adopt_t, swarm_thread_t h,
         std::unique_ptr<detail::state_base<R>> st) noexcept
      : handle_(h), state_(std::move(st)) {}
  thread(thread &&o) noexcept
      : handle_(std::exchange(o.handle_, SWARM_THREAD_NONE)),
        state_(std::move(o.state_)) {}
  thread &operator=(thread &&o) noexcept {
    if (this != &o) {
      discard();
      handle_ = std::exchange(o.handle_, SWARM_THREAD_NONE);
      state_ = std::move(o.state_);
    }
    return *this;
  }
  thread(const thread &) = delete;
  thread &operator=(const thread &) = delete;
  ~thread() { discard(); }

  bool joinable() const noexcept { return handle_ != SWARM_THREAD_NONE; }
  // The native handle (swarm_self() inside the thread has the same value).
  swarm_thread_t native_handle() const noexcept { return handle_; }

  // Waits for the thread; returns what its function returned, or rethrows
  // what it threw. std::system_error(EINVAL) if not joinable.
  R join() {
    if (!joinable())
      detail::throw_errno(EINVAL, "swarm::thread::join");
    int e = swarm_join(handle_, nullptr);
    handle_ = SWARM_THREAD_NONE;
    std::unique_ptr<detail::state_base<R>> st = std::move(state_);
    if (e != 0)
      detail::throw_errno(e, "swarm_join");
    detail::outcome<R> &out = st->result();
    if (out.error)
      std::rethrow_exception(out.error);
    return out.take();
  }

private:
  void discard() noexcept {
    if (joinable()) {
      swarm_join(handle_, nullptr);
      handle_ = SWARM_THREAD_NONE;
    }
    state_.reset();
  }

  swarm_thread_t handle_ = SWARM_THREAD_NONE;
  std::unique_ptr<detail::state_base<R>> state_;
};

// Starts f(args...) on a new swarm thread (work-first: the caller continues
// once the new thread blocks, exits, or is stolen from). Arguments are
// copied or moved into the thread, as std::thread does; pass std::ref for a
// reference. Returns a thread<R> for R = f's return type, which must not be
// a reference. Throws std::system_error (EAGAIN) when no thread can be made.
template <class F, class... A> auto spawn(F &&f, A &&...a) {
  using Fn = std::decay_t<F>;
  using R = std::invoke_result_t<Fn, std::decay_t<A>...>;
  static_assert(!std::is_reference_v<R>,
                "swarm::spawn: return a value or a pointer, not a reference");
  using S = detail::state<R, Fn, std::decay_t<A>...>;
  auto st = std::make_unique<S>(std::forward<F>(f), std::forward<A>(a)...);
  swarm_thread_t h;
  int e = swarm_spawn(&h, nullptr, &S::task_type::entry, &st->t);
  if (e != 0)
    detail::throw_errno(e, "swarm_spawn");
  return thread<R>(detail::adopt_t{}, h,
                   std::unique_ptr<detail::state_base<R>>(std::move(st)));
}

// A set of void tasks started with run() and waited for together by wait().
// For use by the thread that owns it (run and wait are not thread-safe);
// tasks may make task groups of their own.
class task_group {
public:
  task_group() = default;
  task_group(const task_group &) = delete;
  task_group &operator=(const task_group &) = delete;
  // Waits for what is still running; an exception nobody waited for is
  // dropped (a destructor cannot throw it).
  ~task_group() {
    for (auto &t : tasks_)
      t = thread<void>();
  }

  template <class F> void run(F &&f) {
    tasks_.push_back(spawn(std::forward<F>(f)));
  }

  // Waits for every task run so far; rethrows the first exception (in run
  // order) after all of them finished. The group is empty afterwards.
  void wait() {
    std::exception_ptr first;
    for (auto &t : tasks_) {
      try {
        t.join();
      } catch (...) {
        if (!first)
          first = std::current_exception();
      }
    }
    tasks_.clear();
    if (first)
      std::rethrow_exception(first);
  }

private:
  std::vector<thread<void>> tasks_;
};

namespace detail {
template <class I, class F>
void parallel_for_range(I first, I last, I grain, const F &f) {
  while (last - first > grain) {
    I mid = first + (last - first) / 2;
    // The left half on a new thread, the right half here; the left half is
    // joined before anything leaves this frame, exception or not.
    thread<void> left = spawn(
        [first, mid, grain, &f] { parallel_for_range(first, mid, grain, f); });
    // The join is never inside a catch handler: a handler's exception is
    // on the kernel thread's caught-exception stack (libstdc++ keeps it per
    // kernel thread), and a join may park and let other swarm threads
    // throw and catch on that stack meanwhile (LeakSanitizer saw a leaked
    // exception under ASan).
    std::exception_ptr mine;
    try {
      parallel_for_range(mid, last, grain, f);
    } catch (...) {
      mine = std::current_exception();
    }
    if (mine) {
      try {
        left.join();
      } catch (...) {
      }
      std::rethrow_exception(mine);
    }
    left.join();
    return;
  }
  for (I i = first; i < last; ++i)
    f(i);
}
} // namespace detail

// Calls f(i) for every i in [first, last), dividing the range in halves on
// new threads until a piece has at most `grain` indices, which run in a
// loop. Returns once every call returned; rethrows an exception one of them
// threw (the others still ran to completion). I is an integral type.
template <class I, class F>
void parallel_for(I first, I last, detail::identity_t<I> grain, const F &f) {
  static_assert(std::is_integral_v<I>, "swarm::parallel_for: integral index");
  if (!(first < last))
    return;
  if (grain < 1)
    grain = 1;
  detail::parallel_for_range(first, last, grain, f);
}

// The same with a grain that gives each worker about eight pieces.
template <class I, class F> void parallel_for(I first, I last, const F &f) {
  static_assert(std::is_integral_v<I>, "swarm::parallel_for: integral index");
  if (!(first < last))
    return;
  I n = last - first;
  I pieces = static_cast<I>(8 * swarm_num_workers());
  I grain = pieces > 0 ? n / pieces : n;
  parallel_for(first, last, grain < 1 ? I(1) : grain, f);
}

// ---- locks ---------------------------------------------------------------

namespace detail {
// A swarm_mutex_t of one kind as a C++ Lockable (mutex, recursive_mutex).
template <bool Recursive> class basic_mutex {
public:
  basic_mutex() noexcept = default;
  basic_mutex(const basic_mutex &) = delete;
  basic_mutex &operator=(const basic_mutex &) = delete;
  ~basic_mutex() { swarm_mutex_destroy(&m_); }

  void lock() {
    if (int e = swarm_mutex_lock(&m_))
      detail::throw_errno(e, "swarm_mutex_lock");
  }
  bool try_lock() noexcept { return swarm_mutex_trylock(&m_) == 0; }
  void unlock() noexcept { swarm_mutex_unlock(&m_); }
  swarm_mutex_t *native_handle() noexcept { return &m_; }

private:
  static swarm_mutex_t initial() noexcept {
    if constexpr (Recursive)
      return SWARM_RECURSIVE_MUTEX_INITIALIZER;
    else
      return SWARM_MUTEX_INITIALIZER;
  }
  swarm_mutex_t m_ = initial();
};
} // namespace detail

// A swarm_mutex_t as a C++ Lockable: std::lock_guard, std::unique_lock,
// std::scoped_lock and swarm::lock_guard work with it. A thread that waits
// for it parks (its worker runs other threads) instead of blocking the
// kernel thread.
class mutex : public detail::basic_mutex<false> {};

// The same, lockable again by the thread that holds it.
class recursive_mutex : public detail::basic_mutex<true> {};

// Holds a lock for its scope: a swarm::mutex (or any Lockable), or a
// swarm_mutex_t that C code owns.
template <class M = mutex> class lock_guard {
public:
  explicit lock_guard(M &m) : m_(m) { m_.lock(); }
  lock_guard(M &m, std::adopt_lock_t) noexcept : m_(m) {}
  lock_guard(const lock_guard &) = delete;
  lock_guard &operator=(const lock_guard &) = delete;
  ~lock_guard() { m_.unlock(); }

private:
  M &m_;
};

template <> class lock_guard<swarm_mutex_t> {
public:
  explicit lock_guard(swarm_mutex_t &m) : m_(m) {
    if (int e = swarm_mutex_lock(&m_))
      detail::throw_errno(e, "swarm_mutex_lock");
  }
  lock_guard(swarm_mutex_t &m, std::adopt_lock_t) noexcept : m_(m) {}
  lock_guard(const lock_guard &) = delete;
  lock_guard &operator=(const lock_guard &) = delete;
  ~lock_guard() { swarm_mutex_unlock(&m_); }

private:
  swarm_mutex_t &m_;
};

// A swarm_cond_t for swarm::mutex, waited on through a std::unique_lock.
class condition_variable {
public:
  condition_variable() noexcept = default;
  condition_variable(const condition_variable &) = delete;
  condition_variable &operator=(const condition_variable &) = delete;
  ~condition_variable() { swarm_cond_destroy(&c_); }

  void notify_one() noexcept { swarm_cond_signal(&c_); }
  void notify_all() noexcept { swarm_cond_broadcast(&c_); }
  void wait(std::unique_lock<mutex> &lk) {
    if (int e = swarm_cond_wait(&c_, lk.mutex()->native_handle()))
      detail::throw_errno(e, "swarm_cond_wait");
  }
  template <class P> void wait(std::unique_lock<mutex> &lk, P pred) {
    while (!pred())
      wait(lk);
  }
  swarm_cond_t *native_handle() noexcept { return &c_; }

private:
  swarm_cond_t c_ = SWARM_COND_INITIALIZER;
};

// ---- the runtime -----------------------------------------------------------

// Starts swarm for its scope (swarm_init; swarm_finalize in the destructor,
// which waits for every thread). Optional: the first spawn starts swarm with
// the defaults and the environment's settings.
class runtime {
public:
  explicit runtime(int workers = 0) {
    swarm_config_t c{};
    c.workers = workers;
    if (int e = swarm_init(&c))
      detail::throw_errno(e, "swarm_init");
  }
  runtime(const runtime &) = delete;
  runtime &operator=(const runtime &) = delete;
  ~runtime() { swarm_finalize(); }
};

inline int worker_id() noexcept {
  return swarm_worker_id();
}
inline int num_workers() noexcept {
  return swarm_num_workers();
}
inline void yield() noexcept {
  swarm_yield();
}

} // namespace swarm

#endif
