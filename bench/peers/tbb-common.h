/*
 * bench/peers/tbb-common.h — how the oneTBB peers take -w: a global_control
 * on max_allowed_parallelism (oneTBB's documented way to cap its threads),
 * held for the whole run; workers reported are what TBB says is in force.
 */
#ifndef SWARM_BENCH_TBB_COMMON_H
#define SWARM_BENCH_TBB_COMMON_H

#include <oneapi/tbb/global_control.h>

#include <memory>

static inline std::unique_ptr<tbb::global_control> tbb_limit(int workers) {
  return std::make_unique<tbb::global_control>(
      tbb::global_control::max_allowed_parallelism, (size_t)workers);
}

static inline int tbb_workers() {
  return (int)tbb::global_control::active_value(
      tbb::global_control::max_allowed_parallelism);
}

#endif
