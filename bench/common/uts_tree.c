/*
 * bench/common/uts_tree.c — the UTS tree (see uts_tree.h): parameters, the
 * SHA-1 splittable stream, the child-count distributions, the published
 * reference trees, and the JSON report.
 *
 * SHA-1 API. OpenSSL 3 offers three ways to hash 24 bytes. The one-shot
 * SHA1() goes through EVP_Q_digest and fetches the algorithm from the
 * provider on every call; EVP_DigestInit_ex with EVP_sha1() does an implicit
 * fetch too; the low-level SHA1_Init/Update/Final work on a SHA_CTX on the
 * stack (no allocation, no provider, SHA-NI when the CPU has it). Measured on
 * the 2-vCPU dev VM (OpenSSL 3.0.19), one 24-byte message: SHA1() ~1,000 ns,
 * EVP + EVP_sha1() ~850 ns, EVP with an EVP_MD fetched once ~220 ns,
 * SHA1_Init/Update/Final ~110 ns. The slow ones would make the hash, not the
 * threading, what UTS measures. The low-level calls are deprecated in 3.0
 * but present in every Debian build; where a build leaves them out
 * (OPENSSL_NO_DEPRECATED_3_0) we fall back to EVP with a per-thread context
 * and an EVP_MD fetched once (-DUTS_FORCE_EVP selects it, for testing).
 */
#define OPENSSL_SUPPRESS_DEPRECATED 1
#include "uts_tree.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/opensslv.h>
#include <openssl/sha.h>
#if defined(OPENSSL_NO_DEPRECATED_3_0) || defined(UTS_FORCE_EVP)
#include <openssl/evp.h>
#define UTS_USE_EVP 1
#endif

/* SHA-1 of a 20-byte descriptor followed by 4 big-endian bytes. */
static void sha1_24(const unsigned char prefix[20], uint32_t word,
                    unsigned char out[20]) {
  unsigned char msg[24];
  memcpy(msg, prefix, 20);
  msg[20] = (unsigned char)(word >> 24);
  msg[21] = (unsigned char)(word >> 16);
  msg[22] = (unsigned char)(word >> 8);
  msg[23] = (unsigned char)word;
#ifdef UTS_USE_EVP
  static _Thread_local EVP_MD_CTX *ctx;
  static _Thread_local EVP_MD *md;
  if (!ctx) {
    ctx = EVP_MD_CTX_new();
    md = EVP_MD_fetch(NULL, "SHA1", NULL);
  }
  unsigned int len = 20;
  EVP_DigestInit_ex(ctx, md, NULL);
  EVP_DigestUpdate(ctx, msg, sizeof msg);
  EVP_DigestFinal_ex(ctx, out, &len);
#else
  SHA_CTX c;
  SHA1_Init(&c);
  SHA1_Update(&c, msg, sizeof msg);
  SHA1_Final(out, &c);
#endif
}

void uts_default_params(uts_params_t *p) {
  p->type = UTS_GEO;
  p->b0 = 4.0;
  p->q = 15.0 / 64.0;
  p->m = 4;
  p->root_seed = 0;
  p->shape = UTS_LINEAR;
  p->depth_limit = 6;
  p->shift = 0.5;
  p->granularity = 1;
}

int uts_flags(uts_params_t *p, bench_flag_t *out) {
  bench_flag_t f[] = {
      {"-t", BENCH_INT, &p->type,
       "tree type: 0 binomial, 1 geometric, 2 hybrid, 3 balanced"},
      {"-b", BENCH_DOUBLE, &p->b0, "root branching factor (geometric: mean)"},
      {"-q", BENCH_DOUBLE, &p->q, "binomial: probability of children"},
      {"-m", BENCH_INT, &p->m, "binomial: number of children"},
      {"-r", BENCH_INT, &p->root_seed, "root seed"},
      {"-a", BENCH_INT, &p->shape,
       "geometric shape: 0 linear, 1 exp. decrease, 2 cyclic, 3 fixed"},
      {"-d", BENCH_INT, &p->depth_limit, "geometric: depth limit"},
      {"-f", BENCH_DOUBLE, &p->shift, "hybrid: switch depth, fraction of -d"},
      {"-g", BENCH_INT, &p->granularity, "SHA-1 evaluations per child"},
  };
  memcpy(out, f, sizeof f);
  return (int)(sizeof f / sizeof f[0]);
}

int uts_check_params(const uts_params_t *p) {
  if (p->type < UTS_BIN || p->type > UTS_BALANCED || p->shape < 0 ||
      p->shape > UTS_FIXED || p->b0 < 0 || p->q < 0 || p->q > 1 || p->m < 0 ||
      p->depth_limit < 1 || p->granularity < 1) {
    fprintf(stderr, "uts: parameters out of range\n");
    return -1;
  }
  return 0;
}

void uts_params_json(const uts_params_t *p, char *buf, size_t size) {
  const uts_reference_t *ref = uts_find_reference(p);
  int n = snprintf(buf, size, "{");
  if (ref)
    n += snprintf(buf + n, size - n, "\"tree\":\"%s\",", ref->name);
  n += snprintf(buf + n, size - n, "\"t\":%d,\"b\":%g,\"r\":%d", p->type, p->b0,
                p->root_seed);
  if (p->type == UTS_BIN || p->type == UTS_HYBRID)
    n += snprintf(buf + n, size - n, ",\"q\":%g,\"m\":%d", p->q, p->m);
  if (p->type != UTS_BIN)
    n += snprintf(buf + n, size - n, ",\"a\":%d,\"d\":%d", p->shape,
                  p->depth_limit);
  if (p->type == UTS_HYBRID)
    n += snprintf(buf + n, size - n, ",\"f\":%g", p->shift);
  if (p->granularity != 1)
    n += snprintf(buf + n, size - n, ",\"g\":%d", p->granularity);
  snprintf(buf + n, size - n, "}");
}

/* The sample trees published with UTS (sample_trees.sh) whose sizes issue 3
 * quotes, plus T1 cut at depth 8 ("T1d8"), a short tree for make demo.
 * T1d8's size is not published: with the fixed shape, -d 8 walks exactly the
 * nodes of T1 at heights <= 8, so it was counted by our walk, the one that
 * reproduces T1's published 4,130,071 and T3's 4,112,897 / depth 1,572. */
static const struct {
  uts_reference_t ref;
  int type, shape, depth_limit, m, root_seed;
  double b0, q;
} references[] = {
    {{"T1", 4130071, 10}, UTS_GEO, UTS_FIXED, 10, 0, 19, 4, 0},
    {{"T1L", 102181082, 13}, UTS_GEO, UTS_FIXED, 13, 0, 29, 4, 0},
    {{"T3", 4112897, 1572}, UTS_BIN, 0, 0, 8, 42, 2000, 0.124875},
    {{"T3L", 111345631, 17844}, UTS_BIN, 0, 0, 5, 7, 2000, 0.200014},
    {{"T1d8", 257042, 8}, UTS_GEO, UTS_FIXED, 8, 0, 19, 4, 0},
};

const uts_reference_t *uts_find_reference(const uts_params_t *p) {
  if (p->granularity != 1)
    return NULL;
  for (size_t i = 0; i < sizeof references / sizeof references[0]; i++) {
    const __typeof__(references[0]) *r = &references[i];
    if (p->type != r->type || p->root_seed != r->root_seed || p->b0 != r->b0)
      continue;
    if (r->type == UTS_GEO &&
        (p->shape != r->shape || p->depth_limit != r->depth_limit))
      continue;
    if (r->type == UTS_BIN && (p->q != r->q || p->m != r->m))
      continue;
    return &r->ref;
  }
  return NULL;
}

void uts_root(const uts_params_t *p, uts_node_t *root) {
  /* SHA-1(16 zero bytes, the seed as 4 big-endian bytes) */
  unsigned char msg[20] = {0};
  uint32_t s = (uint32_t)p->root_seed;
  msg[16] = (unsigned char)(s >> 24);
  msg[17] = (unsigned char)(s >> 16);
  msg[18] = (unsigned char)(s >> 8);
  msg[19] = (unsigned char)s;
#ifdef UTS_USE_EVP
  unsigned int len = 20;
  EVP_Digest(msg, sizeof msg, root->state, &len, EVP_sha1(), NULL);
#else
  SHA_CTX c;
  SHA1_Init(&c);
  SHA1_Update(&c, msg, sizeof msg);
  SHA1_Final(root->state, &c);
#endif
  root->type = p->type;
  root->height = 0;
}

/* The node's draw: its last four bytes, big-endian, sign bit cleared. */
static double node_uniform(const uts_node_t *n) {
  uint32_t b = ((uint32_t)n->state[16] << 24) | ((uint32_t)n->state[17] << 16) |
               ((uint32_t)n->state[18] << 8) | (uint32_t)n->state[19];
  return (double)(b & 0x7fffffffu) / 2147483648.0;
}

static int children_binomial(const uts_params_t *p, const uts_node_t *n) {
  return node_uniform(n) < p->q ? p->m : 0;
}

static int children_geometric(const uts_params_t *p, const uts_node_t *n) {
  double b = p->b0;
  int depth = n->height;
  if (depth > 0) {
    switch (p->shape) {
    case UTS_EXPDEC:
      b = p->b0 * pow((double)depth, -log(p->b0) / log((double)p->depth_limit));
      break;
    case UTS_CYCLIC:
      if (depth > 5 * p->depth_limit)
        b = 0.0;
      else
        b = pow(p->b0, sin(2.0 * 3.141592653589793 * (double)depth /
                           (double)p->depth_limit));
      break;
    case UTS_FIXED:
      b = (depth < p->depth_limit) ? p->b0 : 0;
      break;
    case UTS_LINEAR:
    default:
      b = p->b0 * (1.0 - (double)depth / (double)p->depth_limit);
      break;
    }
  }
  /* A geometric distribution with mean b: P(success) = 1/(1+b). */
  double prob = 1.0 / (1.0 + b);
  double u = node_uniform(n);
  return (int)floor(log(1 - u) / log(1 - prob));
}

int uts_num_children(const uts_params_t *p, const uts_node_t *node) {
  int k = 0;
  /* As in the reference, the tree's type decides (a node's own type only
   * matters for the binomial root's cut below). */
  switch (p->type) {
  case UTS_BIN:
    k = node->height == 0 ? (int)floor(p->b0) : children_binomial(p, node);
    break;
  case UTS_GEO:
    k = children_geometric(p, node);
    break;
  case UTS_HYBRID:
    k = (node->height < p->shift * p->depth_limit) ? children_geometric(p, node)
                                                   : children_binomial(p, node);
    break;
  case UTS_BALANCED:
    k = node->height < p->depth_limit ? (int)p->b0 : 0;
    break;
  }
  if (node->height == 0 && node->type == UTS_BIN) {
    int root_max = (int)ceil(p->b0);
    if (k > root_max)
      k = root_max;
  } else if (p->type != UTS_BALANCED && k > UTS_MAX_CHILDREN) {
    k = UTS_MAX_CHILDREN;
  }
  return k;
}

void uts_child(const uts_params_t *p, const uts_node_t *parent, int i,
               uts_node_t *child) {
  for (int g = 0; g < p->granularity; g++)
    sha1_24(parent->state, (uint32_t)i, child->state);
  child->height = parent->height + 1;
  child->type =
      p->type == UTS_HYBRID
          ? (child->height < p->shift * p->depth_limit ? UTS_GEO : UTS_BIN)
          : p->type;
}

void uts_report(const char *system, const uts_params_t *p, int workers,
                int reps, double *times, uts_count_t count, long minflt) {
  char params[256];
  uts_params_json(p, params, sizeof params);
  const uts_reference_t *ref = uts_find_reference(p);
  bench_result_t r = {
      .bench = "uts",
      .system = system,
      .params = params,
      .workers = workers,
      .reps = reps,
      .tasks = (uint64_t)count.nodes,
      .seconds = bench_summarize(times, reps),
      .result = count.nodes,
      .correct =
          ref ? (count.nodes == ref->nodes &&
                 (ref->max_depth < 0 || count.max_depth == ref->max_depth))
              : -1,
      .minflt = minflt,
  };
  bench_json_t j;
  bench_json_common(&j, &r);
  bench_json_int(&j, "max_depth", count.max_depth);
  if (ref) {
    bench_json_int(&j, "reference_nodes", ref->nodes);
    bench_json_int(&j, "reference_max_depth", ref->max_depth);
  }
  bench_json_print(&j);
}
