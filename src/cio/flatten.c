/*
 * flatten.c — turns an MPI datatype into the list of (displacement, length)
 * blocks of its typemap, by walking the constructor tree with
 * MPI_Type_get_envelope / MPI_Type_get_contents.
 *
 * Each child type is flattened once into a template, which is then copied at
 * every displacement the parent places it; cio_list_append merges touching
 * blocks, and a dense template (one block covering its whole extent) placed
 * `n` times back to back is appended as one block without a loop, so
 * MPI_Type_contiguous(1<<30, MPI_BYTE) costs one block, not 2^30.
 *
 * Invariants: the output is in typemap order (the order MPI_Pack visits the
 * bytes); types returned by MPI_Type_get_contents are freed unless they are
 * predefined; the walk never recurses deeper than CIO_FLATTEN_MAX_DEPTH.
 * Not supported (MPI_ERR_TYPE with a message): darray and the Fortran 90
 * parameterised types.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cio_internal.h"

#define CIO_FLATTEN_MAX_DEPTH 64

void cio_list_free(cio_list_t *l) {
  free(l->b);
  l->b = NULL;
  l->n = l->cap = 0;
}

int cio_list_append(cio_list_t *l, int64_t off, int64_t len) {
  if (len <= 0)
    return 0;
  if (l->n > 0 && l->b[l->n - 1].off + l->b[l->n - 1].len == off) {
    l->b[l->n - 1].len += len;
    return 0;
  }
  if (l->n == l->cap) {
    size_t cap = l->cap ? l->cap * 2 : 16;
    cio_block_t *b = realloc(l->b, cap * sizeof *b);
    if (!b)
      return ENOMEM;
    l->b = b;
    l->cap = cap;
  }
  l->b[l->n].off = off;
  l->b[l->n].len = len;
  l->n++;
  return 0;
}

/* Appends `count` copies of template `t` (whose type has extent `ext`), the
 * i-th at shift + i*stride. */
static int place(cio_list_t *out, const cio_list_t *t, int64_t ext,
                 int64_t shift, int64_t count, int64_t stride) {
  if (count <= 0 || t->n == 0)
    return 0;
  if (t->n == 1 && stride == ext && t->b[0].len == ext)
    return cio_list_append(out, shift + t->b[0].off, ext * count);
  for (int64_t i = 0; i < count; i++)
    for (size_t j = 0; j < t->n; j++)
      if (cio_list_append(out, shift + i * stride + t->b[j].off, t->b[j].len))
        return ENOMEM;
  return 0;
}

static int flatten_rec(MPI_Datatype type, cio_list_t *out, int depth);

static int64_t extent_of(MPI_Datatype t) {
  MPI_Aint lb, ext;
  MPI_Type_get_extent(t, &lb, &ext);
  return (int64_t)ext;
}

static void free_if_derived(MPI_Datatype t) {
  int ni, na, nd, comb;
  MPI_Type_get_envelope(t, &ni, &na, &nd, &comb);
  if (comb != MPI_COMBINER_NAMED)
    MPI_Type_free(&t);
}

/* Subarray: the ndims-dimensional index space, rows along the fastest
 * dimension. */
static int flatten_subarray(const int *ints, MPI_Datatype old, cio_list_t *out,
                            int depth) {
  int nd = ints[0];
  const int *sizes = ints + 1, *subs = ints + 1 + nd,
            *starts = ints + 1 + 2 * nd;
  int order = ints[1 + 3 * nd];
  if (nd <= 0)
    return MPI_SUCCESS;
  cio_list_t t = {0};
  int rc = flatten_rec(old, &t, depth + 1);
  if (rc != MPI_SUCCESS)
    return rc;
  int64_t ext = extent_of(old);
  /* dims listed from slowest to fastest */
  int64_t *stride = calloc((size_t)nd, sizeof *stride);
  int *dim = calloc((size_t)nd, sizeof *dim);
  int64_t *idx = calloc((size_t)nd, sizeof *idx);
  if (!stride || !dim || !idx) {
    rc = cio_set_error(MPI_ERR_NO_MEM, "out of memory flattening a subarray");
    goto out;
  }
  for (int k = 0; k < nd; k++)
    dim[k] = order == MPI_ORDER_C ? k : nd - 1 - k;
  int64_t s = ext;
  for (int k = nd - 1; k >= 0; k--) {
    stride[k] = s;
    s *= sizes[dim[k]];
  }
  for (int k = 0; k < nd; k++)
    if (subs[dim[k]] == 0)
      goto out;
  for (;;) {
    int64_t base = 0;
    for (int k = 0; k < nd - 1; k++)
      base += (starts[dim[k]] + idx[k]) * stride[k];
    base += (int64_t)starts[dim[nd - 1]] * stride[nd - 1];
    if (place(out, &t, ext, base, subs[dim[nd - 1]], ext)) {
      rc = cio_set_error(MPI_ERR_NO_MEM, "out of memory flattening a subarray");
      goto out;
    }
    int k = nd - 2;
    while (k >= 0 && ++idx[k] == subs[dim[k]])
      idx[k--] = 0;
    if (k < 0)
      break;
  }
out:
  free(stride);
  free(dim);
  free(idx);
  cio_list_free(&t);
  return rc;
}

static int flatten_rec(MPI_Datatype type, cio_list_t *out, int depth) {
  if (depth > CIO_FLATTEN_MAX_DEPTH)
    return cio_set_error(MPI_ERR_TYPE, "datatype nested deeper than %d levels",
                         CIO_FLATTEN_MAX_DEPTH);
  int ni, na, nd, comb;
  if (MPI_Type_get_envelope(type, &ni, &na, &nd, &comb) != MPI_SUCCESS)
    return cio_set_error(MPI_ERR_TYPE, "invalid datatype");
  if (comb == MPI_COMBINER_NAMED) {
    int size;
    MPI_Type_size(type, &size);
    return cio_list_append(out, 0, size)
               ? cio_set_error(MPI_ERR_NO_MEM, "out of memory")
               : MPI_SUCCESS;
  }
  if (comb == MPI_COMBINER_DARRAY)
    return cio_set_error(MPI_ERR_TYPE,
                         "darray datatypes are not supported; build the same "
                         "layout with MPI_Type_create_subarray");
  int *ints = malloc(((size_t)ni + 1) * sizeof *ints);
  MPI_Aint *addrs = malloc(((size_t)na + 1) * sizeof *addrs);
  MPI_Datatype *types = malloc(((size_t)nd + 1) * sizeof *types);
  cio_list_t t = {0};
  int rc = MPI_SUCCESS, nmem = 0;
  if (!ints || !addrs || !types) {
    free(ints);
    free(addrs);
    free(types);
    return cio_set_error(MPI_ERR_NO_MEM, "out of memory flattening a datatype");
  }
  if (MPI_Type_get_contents(type, ni, na, nd, ints, addrs, types) !=
      MPI_SUCCESS) {
    rc = cio_set_error(MPI_ERR_TYPE, "MPI_Type_get_contents failed");
    nd = 0;
    goto out;
  }
  if (comb == MPI_COMBINER_SUBARRAY) {
    rc = flatten_subarray(ints, types[0], out, depth);
    goto out;
  }
  if (comb == MPI_COMBINER_STRUCT) {
    for (int i = 0; i < ints[0] && rc == MPI_SUCCESS; i++) {
      cio_list_t c = {0};
      rc = flatten_rec(types[i], &c, depth + 1);
      if (rc == MPI_SUCCESS) {
        int64_t e = extent_of(types[i]);
        if (place(out, &c, e, addrs[i], ints[1 + i], e))
          rc = cio_set_error(MPI_ERR_NO_MEM, "out of memory");
      }
      cio_list_free(&c);
    }
    goto out;
  }
  /* Every remaining constructor has one child type. */
  if (nd < 1) {
    rc = cio_set_error(MPI_ERR_TYPE, "datatype constructor %d not supported",
                       comb);
    goto out;
  }
  rc = flatten_rec(types[0], &t, depth + 1);
  if (rc != MPI_SUCCESS)
    goto out;
  int64_t e = extent_of(types[0]);
  switch (comb) {
  case MPI_COMBINER_DUP:
  case MPI_COMBINER_RESIZED: /* lb/extent only change how it tiles */
    nmem = place(out, &t, e, 0, 1, e);
    break;
  case MPI_COMBINER_CONTIGUOUS:
    nmem = place(out, &t, e, 0, ints[0], e);
    break;
  case MPI_COMBINER_VECTOR:
  case MPI_COMBINER_HVECTOR: {
    int64_t stride =
        comb == MPI_COMBINER_VECTOR ? (int64_t)ints[2] * e : (int64_t)addrs[0];
    for (int i = 0; i < ints[0] && !nmem; i++)
      nmem = place(out, &t, e, i * stride, ints[1], e);
    break;
  }
  case MPI_COMBINER_INDEXED:
    for (int i = 0; i < ints[0] && !nmem; i++)
      nmem =
          place(out, &t, e, (int64_t)ints[1 + ints[0] + i] * e, ints[1 + i], e);
    break;
  case MPI_COMBINER_HINDEXED:
    for (int i = 0; i < ints[0] && !nmem; i++)
      nmem = place(out, &t, e, addrs[i], ints[1 + i], e);
    break;
  case MPI_COMBINER_INDEXED_BLOCK:
    for (int i = 0; i < ints[0] && !nmem; i++)
      nmem = place(out, &t, e, (int64_t)ints[2 + i] * e, ints[1], e);
    break;
  case MPI_COMBINER_HINDEXED_BLOCK:
    for (int i = 0; i < ints[0] && !nmem; i++)
      nmem = place(out, &t, e, addrs[i], ints[1], e);
    break;
  default:
    rc = cio_set_error(MPI_ERR_TYPE,
                       "datatype constructor %d (e.g. a Fortran 90 "
                       "parameterised type) is not supported",
                       comb);
  }
  if (nmem)
    rc = cio_set_error(MPI_ERR_NO_MEM, "out of memory flattening a datatype");
out:
  cio_list_free(&t);
  for (int i = 0; i < nd; i++)
    free_if_derived(types[i]);
  free(ints);
  free(addrs);
  free(types);
  return rc;
}

int cio_flatten(MPI_Datatype type, cio_list_t *out) {
  if (type == MPI_DATATYPE_NULL)
    return cio_set_error(MPI_ERR_TYPE, "MPI_DATATYPE_NULL given as a datatype");
  int rc = flatten_rec(type, out, 0);
  if (rc != MPI_SUCCESS)
    cio_list_free(out);
  return rc;
}
