/*
 * two_phase.c — swarm_cio_read_all / swarm_cio_write_all: the argument
 * checks, the rank's data stream, and the two-phase driver that runs one
 * collective transfer through its stages.
 *
 * One collective call, for every rank (plan.h has the terms):
 *   1. range (plan.c): the rank's access list — the file blocks its view
 *      maps the next N bytes of its stream to, in stream order (views are
 *      monotonic, so this is also file order) — and one allgather of
 *      (error, first, end): the ranks agree on failure before any data
 *      moves, and learn the accessed range [gmin, gmax).
 *   2. the aggregators' state, made on first use (aggregator.c: slots, I/O
 *      thread, and when every rank shares one node the shared segment).
 *   3. domains (plan.c): [gmin, gmax) cut into cb_nodes equal file domains;
 *      each aggregator learns the pieces of every rank in its domain.
 *   4. cycles (plan.c): per cycle, the span each aggregator reads or
 *      writes, and the buffers.
 *   5. the exchange, cycle by cycle, with the file I/O pipelined on the
 *      aggregator's I/O thread `depth` cycles ahead: by messages
 *      (exchange_msg.c) or, when every rank shares one node, through the
 *      shared segment (exchange_shm.c).
 *   6. drain the I/O thread and agree on the outcome, so every rank
 *      returns the same result.
 *
 * The stream is the caller's buffer when the memory type is dense (one
 * block per item, laid end to end), else a packed copy (MPI_Pack before a
 * write, MPI_Unpack after a read), at most INT_MAX bytes.
 *
 * Invariants: the rank's MPI calls are all made by the calling thread;
 * every rank runs the same stages and the same number of cycles; a stage
 * that fails on any rank fails on every rank before the next moves data;
 * the file pointer moves only when the call succeeds.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "plan.h"

/* 6. Waits for the aggregator's file I/O, and agrees on the outcome. */
static int finish(swarm_cio_file_t fh, int rc, int is_write) {
  if (fh->agg_index >= 0) {
    int64_t error_off = 0;
    int err = cio_io_drain(&fh->io, &error_off);
    if (err && rc == MPI_SUCCESS)
      rc = cio_set_error(
          cio_errno_class(err), "%s at file offset %lld failed: %s",
          is_write ? "pwrite" : "pread", (long long)error_off, strerror(err));
  }
  return cio_agree(fh->comm, rc);
}

/* The whole collective transfer of this rank's stream (nbytes, contiguous
 * at `stream`); `rc` is the outcome of the rank's checks. Returns an error
 * class, agreed between ranks. */
static int two_phase(swarm_cio_file_t fh, char *stream, int64_t nbytes,
                     int is_write, int rc) {
  cio_plan_t plan;
  memset(&plan, 0, sizeof plan);
  plan.is_write = is_write;
  cio_list_t access = {0};
  rc = cio_plan_range(fh, nbytes, rc, &access, &plan);
  if (rc != MPI_SUCCESS || plan.gmax < 0) { /* failed, or nothing to move */
    cio_list_free(&access);
    return rc;
  }
  int agg_rc = cio_agg_setup(fh); /* agreed in the next stage */
  rc = cio_plan_domains(fh, &plan, &access, agg_rc);
  if (rc == MPI_SUCCESS)
    rc = cio_plan_cycles(fh, &plan, nbytes);
  if (rc == MPI_SUCCESS) {
    rc = fh->shm ? cio_exchange_by_shm(fh, &plan, stream)
                 : cio_exchange_by_messages(fh, &plan, stream);
    rc = finish(fh, rc, is_write);
  }
  cio_plan_free(&plan);
  return rc;
}

static int check_rw(swarm_cio_file_t fh, const void *buf, int count,
                    MPI_Datatype datatype, int is_write, int64_t *nbytes,
                    cio_list_t *mem, MPI_Aint *mem_extent) {
  int access = fh->amode & (MPI_MODE_RDONLY | MPI_MODE_WRONLY | MPI_MODE_RDWR);
  const char *fn = is_write ? "swarm_cio_write_all" : "swarm_cio_read_all";
  if (is_write && access == MPI_MODE_RDONLY)
    return cio_set_error(MPI_ERR_READ_ONLY, "%s: file opened MPI_MODE_RDONLY",
                         fn);
  if (!is_write && access == MPI_MODE_WRONLY)
    return cio_set_error(MPI_ERR_ACCESS, "%s: file opened MPI_MODE_WRONLY", fn);
  if (count < 0)
    return cio_set_error(MPI_ERR_COUNT, "%s: negative count %d", fn, count);
  if (datatype == MPI_DATATYPE_NULL)
    return cio_set_error(MPI_ERR_TYPE, "%s: MPI_DATATYPE_NULL", fn);
  int size;
  MPI_Aint lower_bound;
  MPI_Type_size(datatype, &size);
  MPI_Type_get_extent(datatype, &lower_bound, mem_extent);
  *nbytes = (int64_t)count * size;
  if (*nbytes > 0 && !buf)
    return cio_set_error(MPI_ERR_BUFFER, "%s: NULL buffer for %lld bytes", fn,
                         (long long)*nbytes);
  if (*nbytes % fh->etype_size)
    return cio_set_error(MPI_ERR_TYPE,
                         "%s: %lld bytes is not a whole number of etypes (%lld "
                         "bytes each)",
                         fn, (long long)*nbytes, (long long)fh->etype_size);
  if (*nbytes == 0)
    return MPI_SUCCESS;
  return cio_flatten(datatype, mem);
}

/* The stream of `buf`: the buffer itself when the memory type (flattened
 * into mem, extent mem_extent) is one dense block per item laid end to
 * end, else *packed, a new buffer (packed from buf for a write). */
static int make_stream(swarm_cio_file_t fh, void *buf, int count,
                       MPI_Datatype datatype, int64_t nbytes, int is_write,
                       const cio_list_t *mem, MPI_Aint mem_extent,
                       char **stream, char **packed) {
  const char *fn = is_write ? "swarm_cio_write_all" : "swarm_cio_read_all";
  if (mem->n == 1 && mem->b[0].len * count == nbytes &&
      mem_extent == mem->b[0].len) {
    *stream = (char *)buf + mem->b[0].off;
    return MPI_SUCCESS;
  }
  if (nbytes > INT_MAX)
    return cio_set_error(MPI_ERR_COUNT,
                         "%s: a non-contiguous memory type moving %lld bytes "
                         "(more than INT_MAX) is not supported",
                         fn, (long long)nbytes);
  if (!(*packed = malloc((size_t)nbytes)))
    return cio_set_error(MPI_ERR_NO_MEM, "%s: out of memory", fn);
  *stream = *packed;
  if (is_write) {
    int position = 0;
    MPI_Pack(buf, count, datatype, *packed, (int)nbytes, &position, fh->comm);
  }
  return MPI_SUCCESS;
}

/* Read: how many of the stream's nbytes lie before the end of the file
 * (the status's count, as MPI_File_read_all reports it). */
static int64_t bytes_before_eof(swarm_cio_file_t fh, int64_t nbytes) {
  if (nbytes == 0)
    return 0;
  int64_t file_size = 0;
  struct stat st;
  if (fstat(fh->fd, &st) == 0)
    file_size = st.st_size;
  int64_t before_eof = nbytes;
  cio_list_t access = {0};
  if (cio_view_access(fh, fh->position * fh->etype_size, nbytes, &access) ==
      0) {
    before_eof = 0;
    for (size_t j = 0; j < access.n; j++) {
      int64_t end = access.b[j].off + access.b[j].len;
      if (end > file_size)
        end = file_size;
      if (end > access.b[j].off)
        before_eof += end - access.b[j].off;
    }
  }
  cio_list_free(&access);
  return before_eof;
}

static int rw_all(swarm_cio_file_t fh, void *buf, int count,
                  MPI_Datatype datatype, MPI_Status *status, int is_write) {
  if (!fh)
    return cio_set_error(MPI_ERR_FILE, "%s: NULL file handle",
                         is_write ? "swarm_cio_write_all"
                                  : "swarm_cio_read_all");
  int64_t nbytes = 0;
  cio_list_t mem = {0};
  MPI_Aint mem_extent = 0;
  int rc =
      check_rw(fh, buf, count, datatype, is_write, &nbytes, &mem, &mem_extent);
  char *stream = NULL, *packed = NULL;
  if (rc == MPI_SUCCESS && nbytes > 0)
    rc = make_stream(fh, buf, count, datatype, nbytes, is_write, &mem,
                     mem_extent, &stream, &packed);
  cio_list_free(&mem);
  int64_t before_eof = nbytes;
  if (!is_write && rc == MPI_SUCCESS)
    before_eof = bytes_before_eof(fh, nbytes);
  rc = two_phase(fh, stream, nbytes, is_write, rc);
  if (rc == MPI_SUCCESS && packed && !is_write) {
    int position = 0;
    MPI_Unpack(packed, (int)nbytes, &position, buf, count, datatype, fh->comm);
  }
  free(packed);
  if (rc == MPI_SUCCESS) {
    fh->position += nbytes / fh->etype_size;
    if (status != MPI_STATUS_IGNORE)
      MPI_Status_set_elements_x(status, MPI_BYTE, (MPI_Count)before_eof);
  }
  return rc;
}

int swarm_cio_read_all(swarm_cio_file_t fh, void *buf, int count,
                       MPI_Datatype datatype, MPI_Status *status) {
  return rw_all(fh, buf, count, datatype, status, 0);
}

int swarm_cio_write_all(swarm_cio_file_t fh, const void *buf, int count,
                        MPI_Datatype datatype, MPI_Status *status) {
  return rw_all(fh, (void *)buf, count, datatype, status, 1);
}
