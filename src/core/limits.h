/*
 * core/limits.h — the limits a process runs under (RLIMIT_AS, RLIMIT_DATA,
 * its memory cgroup's limit, vm.max_map_count), the sizes swarm takes from
 * them, and the one message a refusal at the edge prints. limits.c says how
 * each is read and why the sizes are what they are; docs/limits.md says
 * what swarm needs per thread and per worker.
 *
 * Everything here is a cold path: read at swarm_init, consulted when a
 * cache is refilled from the kernel or a reservation grows, never on
 * spawn's or join's fast path.
 */
#ifndef SWARM_CORE_LIMITS_H
#define SWARM_CORE_LIMITS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LIMIT_NONE UINT64_MAX

/* Which limit a refusal hit (limits_refused names it and what raises it). */
enum limit_kind {
  LIMIT_ADDRESS_SPACE, /* RLIMIT_AS: ulimit -v, a scheduler's h_vmem */
  LIMIT_DATA,          /* RLIMIT_DATA: ulimit -d (private writable maps) */
  LIMIT_CGROUP,        /* the memory cgroup's memory.max / limit_in_bytes */
  LIMIT_MAP_COUNT,     /* vm.max_map_count: mappings per process */
  LIMIT_KERNEL,        /* none of those: the kernel had no memory */
  LIMIT_ADDRESS_TAKEN, /* a region that grows in place met another mapping */
};

struct limits {
  uint64_t as_max;        /* bytes, or LIMIT_NONE */
  uint64_t data_max;      /* bytes, or LIMIT_NONE */
  uint64_t cgroup_max;    /* bytes (lowest on the way to the root), or NONE */
  uint64_t map_count_max; /* mappings, or LIMIT_NONE if unreadable */
  char cgroup_dir[512];   /* where cgroup_max was read ("" if none) */
  bool cgroup_v1;         /* memory.limit_in_bytes rather than memory.max */
};

/* Reads the limits in force now (swarm_init calls it; cheap, a few small
 * files and two getrlimit calls). */
void limits_read(void);
/* The limits last read (all LIMIT_NONE before limits_read). */
const struct limits *limits_get(void);

/* ---- sizes ---- */
/* Bytes of the descriptor region to map where the kernel chooses, when its
 * fixed address is taken and growth in place is unlikely (thread.c): all
 * `full` of it when neither RLIMIT_AS nor RLIMIT_DATA bounds the process
 * (MAP_NORESERVE: it costs nothing untouched), else `initial`. */
size_t limits_desc_first_map(size_t full, size_t initial);
/* How many free stacks of `each` bytes the global pool may keep mapped:
 * `wanted`, or fewer so that the pool holds at most 1/8 of the smallest
 * memory limit (an idle pool must not eat the program's allowance). At
 * least `floor`. */
uint32_t limits_stack_pool_max(size_t each, uint32_t wanted, uint32_t floor);
/* How many stacks of `each` bytes one of `workers` workers may keep on
 * finished threads' descriptors (spawn.c): `wanted`, or under a memory
 * limit what 1/8 of it shared among the workers holds (possibly 0). */
uint32_t limits_stack_keep_max(size_t each, int workers, uint32_t wanted);
/* Records per trace buffer: `wanted`, or fewer so that `nbuffers` buffers
 * of `record` bytes take at most 1/16 of the smallest limit. At least
 * `floor`. */
uint32_t limits_trace_records(int nbuffers, size_t record, uint32_t wanted,
                              uint32_t floor);

/* Under RLIMIT_AS, caps glibc's malloc arenas (64 MiB of address space
 * each, one per kernel thread that mallocs) at 1/8 of the limit, when the
 * runtime's `kernel_threads` could otherwise make more and nobody chose a
 * number (MALLOC_ARENA_MAX, GLIBC_TUNABLES). Nothing without the limit. */
void limits_malloc(int kernel_threads);

/* ---- the memory cgroup ---- */
/* true if mapping `bytes` more for stacks leaves the cgroup room (always
 * true without a cgroup limit). The cgroup's usage is re-read only once
 * what was mapped since the last reading could have used half the room
 * left then, so this costs a file read per many batches. */
bool limits_cgroup_room(size_t bytes);

/* ---- the edge ---- */
/* A request for `bytes` of `what` ("thread stacks") was refused: the kernel
 * said ENOMEM (or EAGAIN), or limits_cgroup_room said no (kind LIMIT_CGROUP
 * then; pass LIMIT_KERNEL to have it diagnosed). The first refusal in the
 * process prints one line on stderr naming the limit that was hit and what
 * raises it; later ones print nothing. Returns the kind it settled on. */
enum limit_kind limits_refused(const char *what, size_t bytes,
                               enum limit_kind kind);

#endif
