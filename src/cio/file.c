/*
 * file.c — an open file of libswarm-cio: swarm_cio_open / close / sync /
 * seek / get_position, and whether every rank of the communicator shares
 * this node's memory (which decides whether the shared segment can be
 * used, aggregator.c).
 *
 * Invariants: open and close are collective and fail on every rank or on
 * none (the ranks agree before the duplication of the communicator and
 * after closing); only rank 0 creates the file, so MPI_MODE_EXCL fails on
 * at most one rank and nobody races the creation; the handle's
 * communicator is our own duplicate with MPI_ERRORS_RETURN, so errors
 * inside our exchanges come back as codes and never abort, and our
 * messages never match the caller's. The aggregators' state is made lazily
 * by the first collective transfer and released here at close.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cio_internal.h"

#define CIO_ACCESS_MODES (MPI_MODE_RDONLY | MPI_MODE_WRONLY | MPI_MODE_RDWR)

/* ---- whether every rank shares this node ---------------------------------
 * MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) answers it, but MPICH 4.0 takes
 * 70-150 ms for it with 4 ranks on 2 cores, more than the whole read of
 * 256 MiB. The answer is cached on the caller's communicator as an
 * attribute (as ROMIO caches its node list), so only the first open on a
 * communicator pays; every rank of it sets the attribute in the same open,
 * so they agree. Not copied to duplicates of that communicator. */
static struct {
  pthread_once_t once;
  int keyval; /* MPI_KEYVAL_INVALID if it could not be made */
} node_cache = {PTHREAD_ONCE_INIT, MPI_KEYVAL_INVALID};

static void node_cache_init(void) {
  if (MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN,
                             &node_cache.keyval, NULL) != MPI_SUCCESS)
    node_cache.keyval = MPI_KEYVAL_INVALID;
}

/* Collective over `dup` unless `comm` holds the cached answer (then on
 * every rank). */
static int all_on_one_node(MPI_Comm comm, MPI_Comm dup, int nprocs) {
  pthread_once(&node_cache.once, node_cache_init);
  void *cached = NULL;
  int flag = 0;
  if (node_cache.keyval != MPI_KEYVAL_INVALID &&
      MPI_Comm_get_attr(comm, node_cache.keyval, &cached, &flag) ==
          MPI_SUCCESS &&
      flag)
    return (int)((intptr_t)cached - 1);
  MPI_Comm node;
  int node_size = 0;
  if (MPI_Comm_split_type(dup, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) ==
      MPI_SUCCESS) {
    MPI_Comm_size(node, &node_size);
    MPI_Comm_free(&node);
  }
  int one = node_size == nprocs;
  if (node_cache.keyval != MPI_KEYVAL_INVALID)
    MPI_Comm_set_attr(comm, node_cache.keyval, (void *)(intptr_t)(1 + one));
  return one;
}

/* ---- open ---------------------------------------------------------------- */

static int check_open_args(const swarm_cio_file_t *fh, const char *path,
                           int amode) {
  int access = amode & CIO_ACCESS_MODES;
  if (!fh)
    return cio_set_error(MPI_ERR_ARG, "swarm_cio_open: fh is NULL");
  if (!path || !*path)
    return cio_set_error(MPI_ERR_BAD_FILE,
                         "swarm_cio_open: empty or NULL path");
  if (access != MPI_MODE_RDONLY && access != MPI_MODE_WRONLY &&
      access != MPI_MODE_RDWR)
    return cio_set_error(MPI_ERR_AMODE, "swarm_cio_open: amode must contain "
                                        "exactly one of MPI_MODE_RDONLY, "
                                        "MPI_MODE_WRONLY, MPI_MODE_RDWR");
  if (amode & ~(access | MPI_MODE_CREATE | MPI_MODE_EXCL))
    return cio_set_error(MPI_ERR_AMODE,
                         "swarm_cio_open: only MPI_MODE_CREATE and "
                         "MPI_MODE_EXCL may accompany the access mode");
  if (access == MPI_MODE_RDONLY && (amode & (MPI_MODE_CREATE | MPI_MODE_EXCL)))
    return cio_set_error(MPI_ERR_AMODE, "swarm_cio_open: MPI_MODE_RDONLY with "
                                        "MPI_MODE_CREATE or MPI_MODE_EXCL");
  return MPI_SUCCESS;
}

/* Opens file->fd on every rank (collective when creating: rank 0 creates
 * the file alone and broadcasts its outcome, then the others open it).
 * `file` is NULL when its allocation failed; the rank still takes part. */
static int open_descriptor(MPI_Comm comm, int rank, const char *path, int amode,
                           struct swarm_cio_file *file) {
  int err = file ? 0 : ENOMEM;
  int flags = (amode & CIO_ACCESS_MODES) == MPI_MODE_RDONLY ? O_RDONLY : O_RDWR;
  int creator = rank == 0 && (amode & MPI_MODE_CREATE);
  if (creator && !err) {
    int create_flags = flags | O_CREAT | ((amode & MPI_MODE_EXCL) ? O_EXCL : 0);
    file->fd = open(path, create_flags | O_CLOEXEC, 0666);
    if (file->fd < 0)
      err = errno;
  }
  int create_err = err;
  if (amode & MPI_MODE_CREATE) {
    MPI_Request req;
    if (MPI_Ibcast(&create_err, 1, MPI_INT, 0, comm, &req) == MPI_SUCCESS)
      cio_quiet_wait(&req);
  }
  if (!err && !creator) {
    if (create_err)
      err = create_err; /* creation failed: report the same error everywhere */
    else if ((file->fd = open(path, flags | O_CLOEXEC)) < 0)
      err = errno;
  }
  if (err)
    return cio_set_error(cio_errno_class(err), "swarm_cio_open: %s: %s", path,
                         strerror(err));
  return MPI_SUCCESS;
}

/* Frees what open made of a file that will not be returned. */
static void discard(struct swarm_cio_file *file) {
  if (!file)
    return;
  if (file->fd >= 0)
    close(file->fd);
  if (file->comm != MPI_COMM_NULL)
    MPI_Comm_free(&file->comm);
  free(file);
}

int swarm_cio_open(MPI_Comm comm, const char *path, int amode, MPI_Info info,
                   swarm_cio_file_t *fh) {
  if (fh)
    *fh = NULL;
  if (comm == MPI_COMM_NULL)
    return cio_set_error(MPI_ERR_COMM, "swarm_cio_open: MPI_COMM_NULL");
  int inter = 0;
  MPI_Comm_test_inter(comm, &inter);
  if (inter)
    return cio_set_error(MPI_ERR_COMM,
                         "swarm_cio_open: intercommunicators are not allowed");
  int rank, nprocs;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &nprocs);
  cio_hints_t hints;
  cio_hints_default(&hints, nprocs);
  int rc = check_open_args(fh, path, amode);
  if (rc == MPI_SUCCESS)
    rc = cio_hints_parse(info, nprocs, &hints);
  rc = cio_hints_agree(comm, rc, "amode", amode, &hints);
  if (rc != MPI_SUCCESS)
    return rc;

  struct swarm_cio_file *file = calloc(1, sizeof *file);
  if (file) {
    file->fd = -1;
    file->comm = MPI_COMM_NULL;
  }
  rc = open_descriptor(comm, rank, path, amode, file);
  /* Agree before the duplication: it is collective, so a rank whose open
   * failed must not be the only one to skip it. */
  int agreed = cio_agree(comm, rc);
  if (agreed == MPI_SUCCESS) {
    MPI_Request req;
    if (MPI_Comm_idup(comm, &file->comm, &req) != MPI_SUCCESS ||
        cio_quiet_wait(&req) != MPI_SUCCESS)
      rc = cio_set_error(MPI_ERR_OTHER, "swarm_cio_open: MPI_Comm_idup failed");
    agreed = cio_agree(comm, rc);
  }
  if (agreed != MPI_SUCCESS) {
    discard(file);
    return agreed;
  }
  MPI_Comm_set_errhandler(file->comm, MPI_ERRORS_RETURN);
  file->rank = rank;
  file->nprocs = nprocs;
  file->amode = amode;
  file->hints = hints;
  file->one_node = all_on_one_node(comm, file->comm, nprocs);
  /* MPI's default view: displacement 0, etype and filetype MPI_BYTE */
  file->disp = 0;
  file->etype_size = 1;
  file->filetype_extent = file->filetype_size = 1;
  file->dense = 1;
  cio_list_append(&file->filetype, 0, 1);
  *fh = file;
  return MPI_SUCCESS;
}

/* ---- close, sync, the file pointer --------------------------------------- */

int swarm_cio_close(swarm_cio_file_t *fhp) {
  if (!fhp || !*fhp)
    return cio_set_error(MPI_ERR_FILE, "swarm_cio_close: NULL file handle");
  swarm_cio_file_t fh = *fhp;
  cio_agg_free(fh);
  int rc = MPI_SUCCESS;
  if (close(fh->fd) != 0)
    rc = cio_set_error(MPI_ERR_IO, "swarm_cio_close: close: %s",
                       strerror(errno));
  rc = cio_agree(fh->comm, rc);
  MPI_Comm_free(&fh->comm);
  cio_list_free(&fh->filetype);
  free(fh);
  *fhp = NULL;
  return rc;
}

int swarm_cio_sync(swarm_cio_file_t fh) {
  if (!fh)
    return cio_set_error(MPI_ERR_FILE, "swarm_cio_sync: NULL file handle");
  int rc = MPI_SUCCESS;
  if (fdatasync(fh->fd) != 0)
    rc = cio_set_error(cio_errno_class(errno), "swarm_cio_sync: fdatasync: %s",
                       strerror(errno));
  return cio_agree(fh->comm, rc);
}

int swarm_cio_get_position(swarm_cio_file_t fh, MPI_Offset *offset) {
  if (!fh)
    return cio_set_error(MPI_ERR_FILE, "swarm_cio_get_position: NULL handle");
  if (!offset)
    return cio_set_error(MPI_ERR_ARG, "swarm_cio_get_position: NULL offset");
  *offset = fh->position;
  return MPI_SUCCESS;
}

int swarm_cio_seek(swarm_cio_file_t fh, MPI_Offset offset) {
  if (!fh)
    return cio_set_error(MPI_ERR_FILE, "swarm_cio_seek: NULL handle");
  if (offset < 0)
    return cio_set_error(MPI_ERR_ARG, "swarm_cio_seek: negative offset");
  fh->position = offset;
  return MPI_SUCCESS;
}
