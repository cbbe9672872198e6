/*
 * test_cio_errors.c — bad input gives an MPI error class on every rank, with
 * a message, and never a crash or a hang: malformed and mismatched hints,
 * bad amodes, missing files, MPI_MODE_EXCL, non-monotonic and darray
 * filetypes, etype sizes that differ, a NULL buffer on one rank only, a
 * count that is not whole etypes, writing a read-only file, NULL handles.
 */
#include <fcntl.h>
#include <unistd.h>

#include <swarm/cio.h>

#include "cio_test.h"

static int rank, nprocs;

static void expect(int rc, int want, const char *what) {
  int cls = rc;
  if (rc != MPI_SUCCESS)
    MPI_Error_class(rc, &cls);
  CHECK(cls == want, "%s: got error class %d, want %d (%s)", what, cls, want,
        swarm_cio_errmsg());
  CHECK(rc == MPI_SUCCESS || swarm_cio_errmsg()[0], "%s: no message", what);
  if (rank == 0)
    printf("ok  %-40s -> %s\n", what, rc ? swarm_cio_errmsg() : "success");
}

static void open_with_hint(const char *path, const char *key, const char *val,
                           int want, const char *what) {
  MPI_Info info;
  MPI_Info_create(&info);
  if (val)
    MPI_Info_set(info, key, val);
  swarm_cio_file_t f;
  int rc = swarm_cio_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY, info, &f);
  expect(rc, want, what);
  if (rc == MPI_SUCCESS)
    swarm_cio_close(&f);
  else
    CHECK(f == NULL, "handle not NULL after failure");
  MPI_Info_free(&info);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
  char dir[256], path[300], missing[300];
  cio_test_tmpdir(dir, sizeof dir);
  snprintf(path, sizeof path, "%s/f", dir);
  snprintf(missing, sizeof missing, "%s/none/f", dir);
  if (rank == 0) {
    int fd = open(path, O_CREAT | O_WRONLY, 0644);
    char b[4096] = {1};
    CHECK(write(fd, b, sizeof b) == (ssize_t)sizeof b, "write");
    close(fd);
  }
  MPI_Barrier(MPI_COMM_WORLD);

  open_with_hint(path, "cb_buffer_size", "abc", MPI_ERR_INFO_VALUE,
                 "cb_buffer_size=abc");
  open_with_hint(path, "cb_buffer_size", "-5", MPI_ERR_INFO_VALUE,
                 "cb_buffer_size=-5");
  open_with_hint(path, "swarm_cio_depth", "0", MPI_ERR_INFO_VALUE,
                 "swarm_cio_depth=0");
  open_with_hint(path, "swarm_cio_depth", "65", MPI_ERR_INFO_VALUE,
                 "swarm_cio_depth=65");
  open_with_hint(path, "cb_nodes", "0", MPI_ERR_INFO_VALUE, "cb_nodes=0");
  open_with_hint(path, "swarm_cio_slot_size", "0", MPI_ERR_INFO_VALUE,
                 "swarm_cio_slot_size=0");
  open_with_hint(path, "swarm_cio_shm", "2", MPI_ERR_INFO_VALUE,
                 "swarm_cio_shm=2");
  open_with_hint(path, "cb_nodes", "1000", MPI_SUCCESS,
                 "cb_nodes=1000 (clamped)");
  open_with_hint(path, "cb_nodes", rank == 0 ? "1" : "2", MPI_ERR_NOT_SAME,
                 "cb_nodes differing between ranks");
  /* a bad hint on one rank only fails every rank */
  open_with_hint(path, "cb_buffer_size", rank == 1 ? "12x" : NULL,
                 rank == 1 ? MPI_ERR_INFO_VALUE : MPI_ERR_INFO_VALUE,
                 "bad hint on rank 1 only");

  swarm_cio_file_t f;
  expect(swarm_cio_open(MPI_COMM_WORLD, missing, MPI_MODE_RDONLY, MPI_INFO_NULL,
                        &f),
         MPI_ERR_NO_SUCH_FILE, "open a missing file");
  expect(swarm_cio_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY | MPI_MODE_WRONLY,
                        MPI_INFO_NULL, &f),
         MPI_ERR_AMODE, "amode RDONLY|WRONLY");
  expect(swarm_cio_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY | MPI_MODE_CREATE,
                        MPI_INFO_NULL, &f),
         MPI_ERR_AMODE, "amode RDONLY|CREATE");
  expect(swarm_cio_open(MPI_COMM_WORLD, path,
                        MPI_MODE_RDWR | MPI_MODE_CREATE | MPI_MODE_EXCL,
                        MPI_INFO_NULL, &f),
         MPI_ERR_FILE_EXISTS, "CREATE|EXCL on an existing file");
  expect(
      swarm_cio_open(MPI_COMM_WORLD, NULL, MPI_MODE_RDONLY, MPI_INFO_NULL, &f),
      MPI_ERR_BAD_FILE, "NULL path");
  expect(swarm_cio_close(NULL), MPI_ERR_FILE, "close(NULL)");
  expect(swarm_cio_read_all(NULL, NULL, 0, MPI_BYTE, MPI_STATUS_IGNORE),
         MPI_ERR_FILE, "read_all on a NULL handle");

  CHECK(swarm_cio_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY, MPI_INFO_NULL,
                       &f) == MPI_SUCCESS,
        "open: %s", swarm_cio_errmsg());
  /* non-monotonic filetype */
  int bl[2] = {4, 4};
  MPI_Aint d[2] = {16, 0};
  MPI_Datatype t;
  MPI_Type_create_hindexed(2, bl, d, MPI_BYTE, &t);
  MPI_Type_commit(&t);
  expect(swarm_cio_set_view(f, 0, MPI_BYTE, t, "native", MPI_INFO_NULL),
         MPI_ERR_TYPE, "decreasing filetype displacements");
  MPI_Type_free(&t);
  /* darray */
  int gs[1] = {64 * nprocs}, distr[1] = {MPI_DISTRIBUTE_BLOCK},
      dargs[1] = {MPI_DISTRIBUTE_DFLT_DARG}, ps[1] = {nprocs};
  MPI_Type_create_darray(nprocs, rank, 1, gs, distr, dargs, ps, MPI_ORDER_C,
                         MPI_BYTE, &t);
  MPI_Type_commit(&t);
  expect(swarm_cio_set_view(f, 0, MPI_BYTE, t, NULL, MPI_INFO_NULL),
         MPI_ERR_TYPE, "darray filetype");
  MPI_Type_free(&t);
  expect(swarm_cio_set_view(f, 0, rank == 0 ? MPI_INT : MPI_DOUBLE,
                            rank == 0 ? MPI_INT : MPI_DOUBLE, NULL,
                            MPI_INFO_NULL),
         MPI_ERR_NOT_SAME, "etype sizes differing between ranks");
  expect(swarm_cio_set_view(f, -1, MPI_BYTE, MPI_BYTE, NULL, MPI_INFO_NULL),
         MPI_ERR_ARG, "negative displacement");
  expect(
      swarm_cio_set_view(f, 0, MPI_BYTE, MPI_BYTE, "external32", MPI_INFO_NULL),
      MPI_ERR_UNSUPPORTED_DATAREP, "datarep external32");
  /* the view is still the default one after the failures */
  char buf[64];
  expect(swarm_cio_read_all(f, rank == 0 ? NULL : buf, 16, MPI_BYTE,
                            MPI_STATUS_IGNORE),
         MPI_ERR_BUFFER, "NULL buffer on rank 0 only");
  CHECK(swarm_cio_set_view(f, 0, MPI_INT, MPI_INT, NULL, MPI_INFO_NULL) ==
            MPI_SUCCESS,
        "set_view int: %s", swarm_cio_errmsg());
  expect(swarm_cio_read_all(f, buf, 3, MPI_BYTE, MPI_STATUS_IGNORE),
         MPI_ERR_TYPE, "3 bytes with an int etype");
  expect(swarm_cio_read_all(f, buf, -1, MPI_BYTE, MPI_STATUS_IGNORE),
         MPI_ERR_COUNT, "negative count");
  expect(swarm_cio_write_all(f, buf, 4, MPI_BYTE, MPI_STATUS_IGNORE),
         MPI_ERR_READ_ONLY, "write_all on a RDONLY file");
  /* and a good call still works afterwards */
  expect(swarm_cio_read_all(f, buf, 16, MPI_BYTE, MPI_STATUS_IGNORE),
         MPI_SUCCESS, "good read after the failures");
  CHECK(swarm_cio_close(&f) == MPI_SUCCESS, "close");
  if (rank == 0) {
    unlink(path);
    rmdir(dir);
    printf("test_cio_errors: every bad input failed cleanly on %d ranks\n",
           nprocs);
  }
  MPI_Finalize();
  return 0;
}
