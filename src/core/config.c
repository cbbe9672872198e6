/*
 * core/config.c — the runtime's configuration: swarm_config_t fields, else
 * environment variables (SWARM_WORKERS, SWARM_STACK_SIZE, SWARM_BIND,
 * SWARM_STATS), else defaults. A malformed environment value is reported on
 * stderr, naming the variable and the accepted form, and ignored; a bad
 * swarm_config_t field makes swarm_init fail with EINVAL.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/core.h"
#include "os/os.h"

/* Parses "65536", "64K", "64k", "1M", "1G" (optionally "KiB"/"KB"/"B"). */
int config_parse_size(const char *s, size_t *out) {
  if (!s)
    return EINVAL;
  while (isspace((unsigned char)*s))
    s++;
  if (!isdigit((unsigned char)*s))
    return EINVAL;
  errno = 0;
  char *end;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno)
    return EINVAL;
  unsigned long long mul = 1;
  switch (*end) {
  case 'k': case 'K': mul = 1ull << 10; end++; break;
  case 'm': case 'M': mul = 1ull << 20; end++; break;
  case 'g': case 'G': mul = 1ull << 30; end++; break;
  default: break;
  }
  if (mul > 1 && (*end == 'i' || *end == 'I'))
    end++;
  if (*end == 'b' || *end == 'B')
    end++;
  while (isspace((unsigned char)*end))
    end++;
  if (*end != '\0' || v > (~0ull) / mul)
    return EINVAL;
  *out = (size_t)(v * mul);
  return 0;
}

static void complain(const char *var, const char *val, const char *want) {
  fprintf(stderr, "swarm: ignoring %s='%s': expected %s\n", var, val, want);
}

static int env_bool(const char *var) {
  const char *v = getenv(var);
  if (!v || !*v)
    return 0;
  if (!strcmp(v, "1") || !strcasecmp(v, "yes") || !strcasecmp(v, "true"))
    return 1;
  if (!strcmp(v, "0") || !strcasecmp(v, "no") || !strcasecmp(v, "false"))
    return -1;
  complain(var, v, "0 or 1");
  return 0;
}

int config_resolve(const swarm_config_t *in, int *workers, size_t *stack,
                   bool *bind, bool *stats) {
  swarm_config_t c = {0};
  if (in)
    c = *in;
  if (c.workers < 0 || c.workers > SWARM_MAX_WORKERS)
    return EINVAL;
  if (c.stack_size != 0 &&
      (c.stack_size < SWARM_STACK_MIN || c.stack_size > SWARM_MAX_STACK))
    return EINVAL;
  if (c.bind < -1 || c.bind > 1 || c.stats < -1 || c.stats > 1)
    return EINVAL;

  if (c.workers == 0) {
    const char *v = getenv("SWARM_WORKERS");
    if (v && *v) {
      char *end;
      errno = 0;
      long n = strtol(v, &end, 10);
      if (errno || *end || n < 1 || n > SWARM_MAX_WORKERS)
        complain("SWARM_WORKERS", v, "a number of workers from 1 to 1024");
      else
        c.workers = (int)n;
    }
  }
  if (c.workers == 0) {
    int cpus[1];
    c.workers = os_cpus_allowed(cpus, 1);
    if (c.workers > SWARM_MAX_WORKERS)
      c.workers = SWARM_MAX_WORKERS;
  }
  if (c.stack_size == 0) {
    const char *v = getenv("SWARM_STACK_SIZE");
    size_t s;
    if (v && *v) {
      if (config_parse_size(v, &s) != 0 || s < SWARM_STACK_MIN ||
          s > SWARM_MAX_STACK)
        complain("SWARM_STACK_SIZE", v,
                 "a size from 16K to 1G, in bytes or with a K/M/G suffix");
      else
        c.stack_size = s;
    }
  }
  if (c.stack_size == 0)
    c.stack_size = SWARM_DEFAULT_STACK;
  size_t page = os_page_size();
  c.stack_size = (c.stack_size + page - 1) & ~(page - 1);
  if (c.bind == 0)
    c.bind = env_bool("SWARM_BIND");
  if (c.stats == 0)
    c.stats = stats_env(getenv("SWARM_STATS")); /* also "1s": stats.c */
  *workers = c.workers;
  *stack = c.stack_size;
  *bind = c.bind == 1;
  *stats = c.stats == 1;
  return 0;
}
