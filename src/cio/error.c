/*
 * error.c — how libswarm-cio reports a failure: an MPI error class as the
 * return value, and words for it in swarm_cio_errmsg().
 *
 * The message lives in a per-kernel-thread buffer, so concurrent calls on
 * different threads (different files) never mix their messages; each
 * failing call overwrites it, a successful call leaves it alone. A failure
 * on one rank reaches the others through the agreement of every
 * collective call (collective.c), and their message then says so and points
 * to the failing rank's own.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>

#include "cio_internal.h"

static __thread char errmsg_buf[512];

int cio_set_error(int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(errmsg_buf, sizeof errmsg_buf, fmt, ap);
  va_end(ap);
  return code;
}

int cio_other_rank_failed(int code) {
  return cio_set_error(code,
                       "another rank failed this collective call (error "
                       "class %d); see its swarm_cio_errmsg()",
                       code);
}

const char *swarm_cio_errmsg(void) {
  return errmsg_buf;
}

int cio_errno_class(int err) {
  switch (err) {
  case ENOENT:
  case ENOTDIR:
    return MPI_ERR_NO_SUCH_FILE;
  case EACCES:
  case EPERM:
    return MPI_ERR_ACCESS;
  case EEXIST:
    return MPI_ERR_FILE_EXISTS;
  case ENOSPC:
    return MPI_ERR_NO_SPACE;
  case EDQUOT:
    return MPI_ERR_QUOTA;
  case EROFS:
    return MPI_ERR_READ_ONLY;
  case ENAMETOOLONG:
  case EISDIR:
    return MPI_ERR_BAD_FILE;
  case ENOMEM:
    return MPI_ERR_NO_MEM;
  default:
    return MPI_ERR_IO;
  }
}
