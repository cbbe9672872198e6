/*
 * hints.c — the MPI_Info hints of libswarm-cio (cb_buffer_size, cb_nodes,
 * swarm_cio_depth, swarm_cio_shm, swarm_cio_slot_size; include/swarm/cio.h
 * documents them): their defaults, parsing, and the check that every rank
 * gave the same values.
 *
 * Invariants: a parsed hint is an integer within its documented range or
 * the whole parse fails with MPI_ERR_INFO_VALUE, leaving the previous values
 * untouched; cb_nodes never exceeds the number of ranks (a larger value is
 * clamped); hints only ever take effect after cio_hints_agree, so every rank
 * runs with the same values. Unknown keys are ignored.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>

#include "cio_internal.h"

void cio_hints_default(cio_hints_t *hints, int nprocs) {
  hints->cb_size = SWARM_CIO_DEFAULT_CB_BUFFER_SIZE;
  hints->cb_nodes = nprocs;
  hints->depth = SWARM_CIO_DEFAULT_DEPTH;
  hints->shm = 1;
  hints->slot_max = SWARM_CIO_DEFAULT_SLOT_SIZE;
}

static int parse_int_hint(MPI_Info info, const char *key, int64_t lo,
                          int64_t hi, int64_t *val) {
  char text[MPI_MAX_INFO_VAL + 1];
  int flag = 0;
  MPI_Info_get(info, key, MPI_MAX_INFO_VAL, text, &flag);
  if (!flag)
    return MPI_SUCCESS;
  char *end;
  errno = 0;
  long long parsed = strtoll(text, &end, 10);
  while (*end == ' ')
    end++;
  if (errno || end == text || *end || parsed < lo || parsed > hi)
    return cio_set_error(MPI_ERR_INFO_VALUE,
                         "hint %s=\"%s\": expected an integer in %lld..%lld",
                         key, text, (long long)lo, (long long)hi);
  *val = parsed;
  return MPI_SUCCESS;
}

int cio_hints_parse(MPI_Info info, int nprocs, cio_hints_t *hints) {
  if (info == MPI_INFO_NULL)
    return MPI_SUCCESS;
  int64_t cb_size = hints->cb_size, cb_nodes = hints->cb_nodes;
  int64_t depth = hints->depth, shm = hints->shm, slot_max = hints->slot_max;
  int rc =
      parse_int_hint(info, "cb_buffer_size", 1, (int64_t)1 << 40, &cb_size);
  if (rc == MPI_SUCCESS)
    rc = parse_int_hint(info, "cb_nodes", 1, INT_MAX, &cb_nodes);
  if (rc == MPI_SUCCESS)
    rc =
        parse_int_hint(info, "swarm_cio_depth", 1, SWARM_CIO_MAX_DEPTH, &depth);
  if (rc == MPI_SUCCESS)
    rc = parse_int_hint(info, "swarm_cio_shm", 0, 1, &shm);
  if (rc == MPI_SUCCESS)
    rc = parse_int_hint(info, "swarm_cio_slot_size", 1, (int64_t)1 << 40,
                        &slot_max);
  if (rc != MPI_SUCCESS)
    return rc;
  hints->cb_size = cb_size;
  hints->cb_nodes = cb_nodes > nprocs ? nprocs : (int)cb_nodes;
  hints->depth = (int)depth;
  hints->shm = (int)shm;
  hints->slot_max = slot_max;
  return MPI_SUCCESS;
}

int cio_hints_agree(MPI_Comm comm, int rc, const char *first_name,
                    int64_t first_value, const cio_hints_t *hints) {
  const char *const names[] = {first_name,      "cb_buffer_size",
                               "cb_nodes",      "swarm_cio_depth",
                               "swarm_cio_shm", "swarm_cio_slot_size"};
  int64_t values[] = {first_value,  hints->cb_size, hints->cb_nodes,
                      hints->depth, hints->shm,     hints->slot_max};
  return cio_agree_values(comm, rc, values, 6, names);
}

int cio_hints_equal(const cio_hints_t *a, const cio_hints_t *b) {
  return a->cb_size == b->cb_size && a->cb_nodes == b->cb_nodes &&
         a->depth == b->depth && a->shm == b->shm && a->slot_max == b->slot_max;
}
