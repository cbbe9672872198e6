/*
 * view.c — the view of a file (swarm_cio_set_view), and the file blocks a
 * range of a rank's data stream maps to (cio_view_access).
 *
 * A view is MPI-IO's: a displacement, an etype and a filetype that tiles
 * the file from the displacement on, one tile per filetype extent; a rank's
 * data stream fills the filetype's blocks tile after tile. The filetype is
 * kept flattened (fh->filetype: blocks relative to one tile's origin).
 *
 * Invariants: the filetype's blocks have non-negative, increasing,
 * non-overlapping displacements and lie within its extent (set_view refuses
 * any other with MPI_ERR_TYPE), so views are monotonic: stream order is
 * file order, which the plan (plan.c) relies on. The etype size and the
 * hints are equal on every rank; changed hints release the aggregators'
 * state, which the next collective call makes anew. set_view resets the
 * file pointer to 0.
 */
#include <errno.h>
#include <string.h>

#include "cio_internal.h"

/* The arguments of set_view, and the filetype flattened into *blocks. */
static int check_view_args(MPI_Offset disp, MPI_Datatype etype,
                           MPI_Datatype filetype, const char *datarep,
                           int *etype_size, int *filetype_size,
                           MPI_Aint *extent, cio_list_t *blocks) {
  if (disp < 0)
    return cio_set_error(MPI_ERR_ARG,
                         "swarm_cio_set_view: negative "
                         "displacement %lld",
                         (long long)disp);
  if (datarep && strcmp(datarep, "native") != 0)
    return cio_set_error(MPI_ERR_UNSUPPORTED_DATAREP,
                         "swarm_cio_set_view: data representation \"%s\"; "
                         "only \"native\" is supported",
                         datarep);
  if (etype == MPI_DATATYPE_NULL || filetype == MPI_DATATYPE_NULL)
    return cio_set_error(MPI_ERR_TYPE, "swarm_cio_set_view: MPI_DATATYPE_NULL");
  MPI_Aint lower_bound;
  MPI_Type_size(etype, etype_size);
  MPI_Type_size(filetype, filetype_size);
  MPI_Type_get_extent(filetype, &lower_bound, extent);
  if (*etype_size <= 0)
    return cio_set_error(MPI_ERR_TYPE, "swarm_cio_set_view: etype has size 0");
  if (*filetype_size <= 0 || *filetype_size % *etype_size)
    return cio_set_error(MPI_ERR_TYPE,
                         "swarm_cio_set_view: filetype size %d is not a "
                         "positive multiple of the etype size %d",
                         *filetype_size, *etype_size);
  return cio_flatten(filetype, blocks);
}

/* The filetype's blocks must make a monotonic view whose tiles do not
 * overlap. */
static int check_filetype_blocks(const cio_list_t *blocks, int64_t extent) {
  for (size_t j = 0; j < blocks->n; j++) {
    const cio_block_t *block = &blocks->b[j];
    if (block->off < 0 || (j > 0 && block->off < block[-1].off + block[-1].len))
      return cio_set_error(MPI_ERR_TYPE,
                           "swarm_cio_set_view: the filetype's displacements "
                           "must be non-negative, increasing and must not "
                           "overlap (block %zu at %lld)",
                           j, (long long)block->off);
  }
  if (blocks->n &&
      blocks->b[blocks->n - 1].off + blocks->b[blocks->n - 1].len > extent)
    return cio_set_error(MPI_ERR_TYPE,
                         "swarm_cio_set_view: the filetype's data reach past "
                         "its extent, so its tiles would overlap");
  return MPI_SUCCESS;
}

int swarm_cio_set_view(swarm_cio_file_t fh, MPI_Offset disp, MPI_Datatype etype,
                       MPI_Datatype filetype, const char *datarep,
                       MPI_Info info) {
  if (!fh)
    return cio_set_error(MPI_ERR_FILE, "swarm_cio_set_view: NULL handle");
  cio_list_t blocks = {0};
  int etype_size = 0, filetype_size = 0;
  MPI_Aint extent = 0;
  cio_hints_t hints = fh->hints;
  int rc = check_view_args(disp, etype, filetype, datarep, &etype_size,
                           &filetype_size, &extent, &blocks);
  if (rc == MPI_SUCCESS)
    rc = check_filetype_blocks(&blocks, (int64_t)extent);
  if (rc == MPI_SUCCESS)
    rc = cio_hints_parse(info, fh->nprocs, &hints);
  rc = cio_hints_agree(fh->comm, rc, "etype size", etype_size, &hints);
  if (rc != MPI_SUCCESS) {
    cio_list_free(&blocks);
    return rc;
  }
  if (!cio_hints_equal(&hints, &fh->hints)) {
    cio_agg_free(fh);
    fh->hints = hints;
  }
  cio_list_free(&fh->filetype);
  fh->filetype = blocks;
  fh->disp = disp;
  fh->etype_size = etype_size;
  fh->filetype_size = filetype_size;
  fh->filetype_extent = extent;
  fh->dense = blocks.n == 1 && blocks.b[0].off == 0 &&
              blocks.b[0].len == (int64_t)extent;
  fh->position = 0;
  return MPI_SUCCESS;
}

int cio_view_access(swarm_cio_file_t fh, int64_t start, int64_t n,
                    cio_list_t *out) {
  if (n == 0)
    return 0;
  if (fh->dense)
    return cio_list_append(out, fh->disp + start, n);
  int64_t tile = start / fh->filetype_size;
  int64_t skip = start % fh->filetype_size, left = n;
  while (left > 0) {
    int64_t tile_origin = fh->disp + tile * fh->filetype_extent;
    for (size_t j = 0; j < fh->filetype.n && left > 0; j++) {
      const cio_block_t *block = &fh->filetype.b[j];
      if (skip >= block->len) {
        skip -= block->len;
        continue;
      }
      int64_t take = block->len - skip < left ? block->len - skip : left;
      if (cio_list_append(out, tile_origin + block->off + skip, take))
        return ENOMEM;
      left -= take;
      skip = 0;
    }
    tile++;
  }
  return 0;
}
