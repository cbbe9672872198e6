/* tests/pthread/dropin_check.h — plain C helpers for the drop-in programs.
 * These programs know nothing of swarm; on_swarm() only looks whether the
 * process has swarm's symbols (the preloaded library exports them). */
#ifndef DROPIN_CHECK_H
#define DROPIN_CHECK_H
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"

static inline void report_on_swarm(void) {
  printf("on swarm: %s\n", dlsym(RTLD_DEFAULT, "swarm_self") ? "yes" : "no");
}
#endif
