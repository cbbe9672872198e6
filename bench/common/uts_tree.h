/*
 * bench/common/uts_tree.h — the Unbalanced Tree Search tree, as the UTS
 * benchmark defines it (Olivier et al., LCPC 2006), shared by swarm's uts and
 * every C/C++ peer so that all of them walk the very same tree.
 *
 * A node is a 20-byte descriptor. The root's is SHA-1 of 16 zero bytes and
 * the 4-byte big-endian root seed (-r); child i's is SHA-1 of the parent's 20
 * bytes and i as 4 big-endian bytes. A node's random number is its last four
 * bytes, big-endian, with the sign bit cleared; divided by 2^31 it is a
 * uniform draw in [0,1) that decides how many children the node has:
 *   binomial (-t 0): the root has floor(b) children; any other node has m
 *     children with probability q, else none;
 *   geometric (-t 1): a geometric number of children with mean b_i, where b_i
 *     follows the shape function (-a: 0 linear, 1 exponential decrease,
 *     2 cyclic, 3 fixed) of the depth and the depth limit -d;
 *   hybrid (-t 2): geometric above depth f*d, binomial below;
 *   balanced (-t 3): b children down to depth d.
 * Child counts above 100 are cut to 100 (the binomial root excepted).
 * SHA-1 is OpenSSL's libcrypto (see uts_tree.c for the choice of its API).
 *
 * Parallel programs compute a child's descriptor in the parent before
 * spawning it, as the reference does, so the work per task is the same in
 * every system.
 */
#ifndef SWARM_UTS_TREE_H
#define SWARM_UTS_TREE_H

#include "bench.h"

#ifdef __cplusplus
extern "C" {
#endif

enum uts_type { UTS_BIN = 0, UTS_GEO = 1, UTS_HYBRID = 2, UTS_BALANCED = 3 };
enum uts_shape {
  UTS_LINEAR = 0,
  UTS_EXPDEC = 1,
  UTS_CYCLIC = 2,
  UTS_FIXED = 3
};

#define UTS_MAX_CHILDREN 100

typedef struct uts_params {
  int type;        /* -t */
  double b0;       /* -b: root branching factor / geometric mean */
  double q;        /* -q: binomial probability of having children */
  int m;           /* -m: binomial number of children */
  int root_seed;   /* -r */
  int shape;       /* -a */
  int depth_limit; /* -d: gen_mx */
  double shift;    /* -f: hybrid switch depth, fraction of -d */
  int granularity; /* -g: SHA-1 evaluations per child (work per node) */
} uts_params_t;

typedef struct uts_node {
  int type;
  int height;
  unsigned char state[20];
} uts_node_t;

/* The reference's defaults (geometric, linear shape, b=4, d=6, q=15/64,
 * m=4, r=0, f=0.5, g=1). */
void uts_default_params(uts_params_t *p);

/* Fills out[0..8] with the UTS flags bound to *p; returns the count (9). */
int uts_flags(uts_params_t *p, bench_flag_t *out);

/* Checks the parameters; on error writes a message to stderr, returns -1. */
int uts_check_params(const uts_params_t *p);

/* Writes the parameters that shape this tree as a JSON object. */
void uts_params_json(const uts_params_t *p, char *buf, size_t size);

/* The published tree these parameters name, or NULL. */
typedef struct uts_reference {
  const char *name; /* "T1", "T3", ... */
  long long nodes;  /* tree size */
  int max_depth;    /* height of the deepest node (root 0); -1 unknown */
} uts_reference_t;
const uts_reference_t *uts_find_reference(const uts_params_t *p);

void uts_root(const uts_params_t *p, uts_node_t *root);
int uts_num_children(const uts_params_t *p, const uts_node_t *node);
void uts_child(const uts_params_t *p, const uts_node_t *parent, int i,
               uts_node_t *child);

/* What a (sub)tree walk returns: nodes counted and the deepest height. */
typedef struct uts_count {
  long long nodes;
  int max_depth;
} uts_count_t;

static inline void uts_count_add(uts_count_t *acc, uts_count_t c) {
  acc->nodes += c.nodes;
  if (c.max_depth > acc->max_depth)
    acc->max_depth = c.max_depth;
}

/* Children arrays of at most this many entries live on the stack of the
 * task that spawns them; larger ones (the binomial root) are malloc'd. */
#define UTS_STACK_CHILDREN 16

/* Prints the JSON line for one UTS measurement (common fields + uts ones). */
void uts_report(const char *system, const uts_params_t *p, int workers,
                int reps, double *times, uts_count_t count, long minflt);

#ifdef __cplusplus
}
#endif
#endif /* SWARM_UTS_TREE_H */
