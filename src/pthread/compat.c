/*
 * pthread/compat.c — libraries the drop-in knows its threads cannot run:
 * warned about once, when the drop-in loads, on stderr, naming the loaded
 * object and why (docs/dropin.md, "Programs this stops"). Nothing else
 * changes: the program runs, and may hang or abort as described.
 *
 * Known: OpenMP's libgomp keeps which team member a thread is in
 * thread-local storage, which the swarm threads of one worker share, and
 * its barriers wait in futex directly, which blocks the worker; an OpenMP
 * parallel region hangs under swarmrun. Only libraries loaded with the
 * program are seen (dl_iterate_phdr at load); one loaded later with dlopen
 * is not.
 */
#include <link.h>
#include <stdio.h>
#include <string.h>

#include "pthread/dropin.h"

static const struct {
  const char *name; /* a part of the object's path */
  const char *why;
} known[] = {
    {"/libgomp.so",
     "OpenMP keeps each thread's place in its team in thread-local storage, "
     "which the swarm threads of a worker share, and waits in futex "
     "directly: its parallel regions hang on swarm threads"},
};

static int warn_if_known(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size;
  (void)arg;
  const char *path = info->dlpi_name;
  for (size_t i = 0; path && i < sizeof known / sizeof known[0]; i++) {
    if (!strstr(path, known[i].name))
      continue;
    char line[512];
    int n = snprintf(line, sizeof line,
                     "swarm-pthread: warning: %s is loaded: %s "
                     "(docs/dropin.md)\n",
                     path, known[i].why);
    if (n > 0)
      os_write_stderr(line,
                      (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
  }
  return 0;
}

void dropin_warn_known_incompatible(void) {
  dl_iterate_phdr(warn_if_known, NULL);
}
