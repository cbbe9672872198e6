/* Which worker ids a swarm thread may see (swarm_worker_id). The regular
 * workers are 0 .. swarm_num_workers() - 1; when one is stuck (blocked in
 * the kernel, or descheduled on an oversubscribed machine) the monitor may
 * start a spare worker (core/monitor.c), whose id follows the regular ones:
 * at most MONITOR_MAX_SPARES (64) of them. A swarm thread always runs on
 * one of these. */
#ifndef TESTS_CORE_WORKER_IDS_H
#define TESTS_CORE_WORKER_IDS_H

#include <swarm.h>

#define TEST_MAX_SPARES 64 /* core/monitor.c: MONITOR_MAX_SPARES */
/* Room for every id in a test that starts at most 64 regular workers. */
#define TEST_MAX_WORKER_IDS (64 + TEST_MAX_SPARES)

/* 1 if w can be the id of the worker running a swarm thread now. */
static inline int worker_id_valid(int w) {
  return w >= 0 && w < swarm_num_workers() + TEST_MAX_SPARES;
}

#endif
