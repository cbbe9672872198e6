/*
 * swarm/cio.h — collective file I/O over MPI with two-phase aggregation
 * whose file I/O is pipelined with the data exchange (libswarm-cio).
 *
 * The calls mirror MPI-IO's collective subset: open, set_view, read_all,
 * write_all, close. A file is read or written by every rank of the
 * communicator together; each rank's part is described by a view (a
 * displacement, an elementary type and a filetype that tiles the file, as in
 * MPI_File_set_view) and the bytes are the same bytes MPI_File_read_all /
 * MPI_File_write_all would read or write.
 *
 * How it works (details in docs/cio.md). A few ranks ("aggregators", hint
 * cb_nodes) each own one contiguous file domain. An aggregator walks its
 * domain in cycles; each cycle is one contiguous pread (or pwrite) of at most
 * cb_buffer_size / swarm_cio_depth bytes, and an exchange of the pieces with
 * the ranks whose views touch them. The file I/O runs on a kernel thread of
 * the aggregator's own, with up to swarm_cio_depth buffers in flight, so cycle
 * k+1's read (or cycle k-1's write) overlaps cycle k's exchange. Writes
 * exchange first, and an aggregator whose cycle has holes reads that span
 * before the new bytes are laid over it (read-modify-write); that read is
 * queued ahead and pipelined too.
 *
 * Threads. Only the thread that calls a function here calls MPI, so MPI may
 * be initialised with any thread level (MPI_THREAD_SINGLE included); the I/O
 * kernel threads never call MPI. The calls may be made from a swarm thread:
 * no call here spawns, yields or parks, so the calling flow stays on one
 * kernel thread for the whole call (what MPI_THREAD_FUNNELED requires).
 * While it waits for its I/O thread the caller blocks its kernel thread
 * (a swarm worker, if called from a swarm thread).
 *
 * Errors. Every function returns MPI_SUCCESS or an MPI error class
 * (MPI_ERR_ARG, MPI_ERR_TYPE, MPI_ERR_IO, ...); swarm_cio_errmsg() then
 * describes the failure in words. A collective call whose arguments are bad
 * on one rank fails on every rank (the ranks agree before any data moves), so
 * bad input never leaves other ranks waiting. Hints are checked: a malformed
 * value is MPI_ERR_INFO_VALUE, a value that differs between ranks is
 * MPI_ERR_NOT_SAME. Calls never abort the process.
 */
#ifndef SWARM_CIO_H
#define SWARM_CIO_H

#include <mpi.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif

/* An open file. */
typedef struct swarm_cio_file *swarm_cio_file_t;

/* Default hint values. */
#define SWARM_CIO_DEFAULT_CB_BUFFER_SIZE (16 * 1024 * 1024)
#define SWARM_CIO_DEFAULT_DEPTH 4
#define SWARM_CIO_MAX_DEPTH 64
#define SWARM_CIO_DEFAULT_SLOT_SIZE (1024 * 1024)

/* Opens `path` on every rank of `comm` (collective). `amode` takes MPI's
 * MPI_MODE_RDONLY / MPI_MODE_WRONLY / MPI_MODE_RDWR (exactly one), optionally
 * with MPI_MODE_CREATE and MPI_MODE_EXCL; other MPI_MODE_ bits are rejected
 * with MPI_ERR_AMODE. `info` may be MPI_INFO_NULL; recognised hints:
 *   cb_buffer_size   bytes of collective buffer per aggregator, split into
 *                    swarm_cio_depth pipeline buffers (default 16 MiB)
 *   cb_nodes         number of aggregators, 1..ranks (default: every rank;
 *                    a larger value is clamped to the number of ranks)
 *   swarm_cio_depth  pipeline buffers per aggregator, 1..64 (default 4)
 *   swarm_cio_slot_size  the most bytes of one pipeline buffer (default
 *                    1 MiB): each is min(cb_buffer_size / depth, this), so
 *                    memory never exceeds cb_buffer_size and buffers stay
 *                    cache-sized
 *   swarm_cio_shm    1 (default): when every rank of comm shares one node
 *                    and depth >= 2, the collective buffers are a POSIX
 *                    shared-memory segment every rank maps (messages if it
 *                    cannot be made) and ranks copy their pieces to and
 *                    from them directly; 0: always exchange by messages
 * Unknown hints are ignored. The view starts as MPI's default (displacement
 * 0, etype and filetype MPI_BYTE). Returns MPI_SUCCESS and stores the handle
 * in *fh, or an error (MPI_ERR_NO_SUCH_FILE, MPI_ERR_ACCESS,
 * MPI_ERR_FILE_EXISTS, MPI_ERR_AMODE, MPI_ERR_INFO_VALUE, MPI_ERR_IO, ...)
 * on every rank, with *fh set to NULL. */
int swarm_cio_open(MPI_Comm comm, const char *path, int amode, MPI_Info info,
                   swarm_cio_file_t *fh);

/* Closes the file (collective), stops its I/O thread and sets *fh to NULL.
 * MPI_ERR_FILE if fh or *fh is NULL. */
int swarm_cio_close(swarm_cio_file_t *fh);

/* Sets the view as MPI_File_set_view does (collective) and resets the file
 * pointer to 0. `datarep` may be NULL or "native" (the only representation).
 * The filetype's typemap must have non-negative, non-decreasing,
 * non-overlapping displacements and its size must be a multiple of the
 * etype's; etypes must have the same size on every rank. Supported type
 * constructors: every MPI-3 constructor except darray and the Fortran 90
 * parameterised types (MPI_ERR_TYPE). `info` may carry the hints above.
 * Returns MPI_SUCCESS or MPI_ERR_TYPE / MPI_ERR_ARG /
 * MPI_ERR_UNSUPPORTED_DATAREP / MPI_ERR_NOT_SAME / MPI_ERR_INFO_VALUE on every
 * rank. */
int swarm_cio_set_view(swarm_cio_file_t fh, MPI_Offset disp, MPI_Datatype etype,
                       MPI_Datatype filetype, const char *datarep,
                       MPI_Info info);

/* Reads `count` items of `datatype` at the rank's file pointer (collective),
 * as MPI_File_read_all, and advances the pointer. `datatype` may be any
 * committed type, contiguous or not. Bytes past the end of the file read as
 * zero; `status` (may be MPI_STATUS_IGNORE) counts only the bytes that lay
 * before the end of the file when the call began. */
int swarm_cio_read_all(swarm_cio_file_t fh, void *buf, int count,
                       MPI_Datatype datatype, MPI_Status *status);

/* Writes `count` items of `datatype` at the rank's file pointer (collective),
 * as MPI_File_write_all, and advances the pointer. Bytes between the pieces
 * written (holes in the views) keep their old contents. Data reach the
 * kernel (pwrite) before the call returns; call swarm_cio_sync for the
 * disk. */
int swarm_cio_write_all(swarm_cio_file_t fh, const void *buf, int count,
                        MPI_Datatype datatype, MPI_Status *status);

/* fdatasync on every rank (collective). */
int swarm_cio_sync(swarm_cio_file_t fh);

/* The file pointer, in etypes of the current view. */
int swarm_cio_get_position(swarm_cio_file_t fh, MPI_Offset *offset);

/* Moves the file pointer to `offset` etypes of the current view (local, like
 * MPI_File_seek with MPI_SEEK_SET). MPI_ERR_ARG if offset < 0. */
int swarm_cio_seek(swarm_cio_file_t fh, MPI_Offset offset);

/* A sentence describing the last error returned to the calling kernel
 * thread by a function here ("" if none). Valid until the next call. */
const char *swarm_cio_errmsg(void);

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#ifdef __cplusplus
}
#endif
#endif /* SWARM_CIO_H */
