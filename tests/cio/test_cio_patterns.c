/*
 * test_cio_patterns.c — swarm_cio_read_all / write_all produce the same bytes
 * as MPI_File_read_all / MPI_File_write_all, for views with holes, irregular
 * blocks, subarrays, struct filetypes, non-contiguous memory types, a rank
 * with nothing to do, consecutive calls (file pointer), and collective
 * buffers that are tiny, not a multiple of anything, one or all
 * aggregators, pipeline depth 1..5. Runs inside a swarm thread. Run under
 * mpirun -n 2 or 3.
 */
#include <fcntl.h>
#include <stdint.h>
#include <unistd.h>

#include <swarm.h>
#include <swarm/cio.h>

#include "cio_test.h"

static int rank, nprocs;
static char dir[256];

enum { FILE_BYTES = 256 * 1024 };

typedef struct pattern {
  const char *name;
  MPI_Offset disp;
  MPI_Datatype etype, ftype; /* view */
  MPI_Datatype mtype;        /* memory type of one item */
  int count;                 /* items per call */
  int calls;                 /* consecutive collective calls */
  int read_only;             /* ranks overlap: writing would be undefined */
} pattern_t;

static void fill_file(const char *path, unsigned seed) {
  if (rank == 0) {
    int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0644);
    CHECK(fd >= 0, "open %s", path);
    unsigned char *b = malloc(FILE_BYTES);
    for (int i = 0; i < FILE_BYTES; i++)
      b[i] = (unsigned char)((i * 131u + seed * 7u + (i >> 9)) ^ seed);
    CHECK(write(fd, b, FILE_BYTES) == FILE_BYTES, "write");
    close(fd);
    free(b);
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

static unsigned char *slurp(const char *path, long *len) {
  unsigned char *b = NULL;
  long n = 0;
  if (rank == 0) {
    FILE *f = fopen(path, "rb");
    CHECK(f, "fopen");
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    b = malloc((size_t)n + 1);
    CHECK(fread(b, 1, (size_t)n, f) == (size_t)n, "fread");
    fclose(f);
  }
  *len = n;
  return b;
}

static size_t mem_bytes(const pattern_t *p) {
  MPI_Aint lb, ext;
  MPI_Type_get_extent(p->mtype, &lb, &ext);
  return (size_t)(ext * p->count + 64);
}

static void run(const pattern_t *p, MPI_Info info, const char *hints) {
  char path[300];
  snprintf(path, sizeof path, "%s/f", dir);
  size_t mb = mem_bytes(p);
  int c = p->count;
  /* ---- read ---- */
  fill_file(path, 3);
  unsigned char *a = calloc(1, mb), *b = calloc(1, mb);
  MPI_File mf;
  CHECK(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY, MPI_INFO_NULL,
                      &mf) == MPI_SUCCESS,
        "MPI_File_open");
  MPI_File_set_view(mf, p->disp, p->etype, p->ftype, "native", MPI_INFO_NULL);
  swarm_cio_file_t sf;
  int rc = swarm_cio_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY, info, &sf);
  CHECK(rc == MPI_SUCCESS, "swarm_cio_open: %s", swarm_cio_errmsg());
  rc = swarm_cio_set_view(sf, p->disp, p->etype, p->ftype, "native", info);
  CHECK(rc == MPI_SUCCESS, "set_view: %s", swarm_cio_errmsg());
  for (int k = 0; k < p->calls; k++) {
    memset(a, 0xEE, mb);
    memset(b, 0xEE, mb);
    MPI_Status s1, s2;
    MPI_File_read_all(mf, a, c, p->mtype, &s1);
    rc = swarm_cio_read_all(sf, b, c, p->mtype, &s2);
    CHECK(rc == MPI_SUCCESS, "read_all: %s", swarm_cio_errmsg());
    CHECK(memcmp(a, b, mb) == 0, "%s [%s] read call %d: bytes differ", p->name,
          hints, k);
    int n1, n2;
    MPI_Get_count(&s1, p->mtype, &n1);
    MPI_Get_count(&s2, p->mtype, &n2);
    CHECK(n1 == n2, "%s: status count %d vs MPI %d", p->name, n2, n1);
  }
  MPI_Offset pos;
  swarm_cio_get_position(sf, &pos);
  MPI_Offset mpos;
  MPI_File_get_position(mf, &mpos);
  CHECK(pos == mpos, "%s: file pointer %lld vs MPI %lld", p->name,
        (long long)pos, (long long)mpos);
  MPI_File_close(&mf);
  CHECK(swarm_cio_close(&sf) == MPI_SUCCESS && sf == NULL, "close");
  if (p->read_only) {
    free(a);
    free(b);
    return;
  }

  /* ---- write: MPI into junk, then swarm into the same junk ---- */
  for (size_t i = 0; i < mb; i++)
    a[i] = (unsigned char)(i * 17 + rank * 101 + 5);
  long la, lb;
  fill_file(path, 9);
  MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_WRONLY, MPI_INFO_NULL, &mf);
  MPI_File_set_view(mf, p->disp, p->etype, p->ftype, "native", MPI_INFO_NULL);
  for (int k = 0; k < p->calls; k++)
    MPI_File_write_all(mf, a, c, p->mtype, MPI_STATUS_IGNORE);
  MPI_File_close(&mf);
  unsigned char *ref = slurp(path, &la);
  fill_file(path, 9);
  rc = swarm_cio_open(MPI_COMM_WORLD, path, MPI_MODE_WRONLY, info, &sf);
  CHECK(rc == MPI_SUCCESS, "open: %s", swarm_cio_errmsg());
  rc = swarm_cio_set_view(sf, p->disp, p->etype, p->ftype, NULL, info);
  CHECK(rc == MPI_SUCCESS, "set_view: %s", swarm_cio_errmsg());
  for (int k = 0; k < p->calls; k++) {
    rc = swarm_cio_write_all(sf, a, c, p->mtype, MPI_STATUS_IGNORE);
    CHECK(rc == MPI_SUCCESS, "write_all: %s", swarm_cio_errmsg());
  }
  CHECK(swarm_cio_close(&sf) == MPI_SUCCESS, "close");
  unsigned char *got = slurp(path, &lb);
  if (rank == 0) {
    CHECK(la == lb, "%s [%s] write: file size %ld vs MPI %ld", p->name, hints,
          lb, la);
    for (long i = 0; i < la; i++)
      CHECK(ref[i] == got[i], "%s [%s] write: byte %ld is %d, MPI wrote %d",
            p->name, hints, i, got[i], ref[i]);
  }
  free(ref);
  free(got);
  free(a);
  free(b);
}

static MPI_Datatype resized(MPI_Datatype t, MPI_Aint ext) {
  MPI_Datatype r;
  MPI_Type_create_resized(t, 0, ext, &r);
  MPI_Type_commit(&r);
  MPI_Type_free(&t);
  return r;
}

static void *suite(void *arg) {
  (void)arg;
  pattern_t pats[11];
  int np = 0;
  MPI_Datatype t;
  /* every rank reads the same bytes (an aggregator's span then holds its
   * own bytes and everybody else's: no direct I/O into its buffer alone) */
  pats[np++] = (pattern_t){
      "same bytes on every rank", 0, MPI_BYTE, MPI_BYTE, MPI_BYTE, 30001, 1, 1};
  /* 512-byte blocks strided 256 * P: each block's second half is the next
   * rank's first half, so an aggregator's own pieces overlap other ranks'
   * (they must stay in the slot for them) */
  MPI_Type_contiguous(512, MPI_BYTE, &t);
  pats[np++] = (pattern_t){"half-overlapping strided",
                           (MPI_Offset)rank * 256,
                           MPI_BYTE,
                           resized(t, 256 * nprocs),
                           MPI_BYTE,
                           512 * 41,
                           1,
                           1};
  /* 2-byte blocks strided 2 * P: more of an aggregator's own pieces in one
   * buffer than one preadv / pwritev takes (they go through the slot) */
  MPI_Type_contiguous(2, MPI_BYTE, &t);
  pats[np++] = (pattern_t){"tiny strided",
                           (MPI_Offset)rank * 2,
                           MPI_BYTE,
                           resized(t, 2 * nprocs),
                           MPI_BYTE,
                           2 * 3001,
                           1,
                           0};
  /* contiguous per-rank slabs, size not a multiple of any buffer */
  pats[np++] = (pattern_t){"contig", (MPI_Offset)rank * 20011,
                           MPI_BYTE, MPI_BYTE,
                           MPI_BYTE, 20011,
                           1,        0};
  /* HPIO-like: 512-byte blocks strided 512 * P, two calls */
  MPI_Type_contiguous(512, MPI_BYTE, &t);
  pats[np++] = (pattern_t){"strided", (MPI_Offset)rank * 512,
                           MPI_BYTE,  resized(t, 512 * nprocs),
                           MPI_BYTE,  512 * 37,
                           2,         0};
  /* irregular hindexed blocks with holes nobody writes */
  {
    int bl[5] = {3, 100, 1, 77, 250};
    MPI_Aint d[5] = {5, 40, 160, 170, 400};
    MPI_Type_create_hindexed(5, bl, d, MPI_BYTE, &t);
    MPI_Datatype r = resized(t, 700 * nprocs);
    pats[np++] = (pattern_t){"irregular", (MPI_Offset)rank * 700 + 13,
                             MPI_BYTE,    r,
                             MPI_BYTE,    431 * 23 + 17,
                             1,           0};
  }
  /* int etype, struct filetype, non-contiguous memory (vector of ints) */
  {
    int bl[2] = {2, 3};
    MPI_Aint d[2] = {0, 16};
    MPI_Datatype ty[2] = {MPI_INT, MPI_INT};
    MPI_Type_create_struct(2, bl, d, ty, &t);
    MPI_Datatype r = resized(t, 32 * nprocs);
    MPI_Datatype m;
    MPI_Type_vector(5, 1, 2, MPI_INT, &m);
    MPI_Type_commit(&m);
    pats[np++] = (pattern_t){
        "struct+memvector", (MPI_Offset)rank * 32, MPI_INT, r, m, 300, 1, 0};
  }
  /* 2-D subarray: ranks own column blocks of a 97 x (60*P) char array */
  {
    int sizes[2] = {97, 60 * nprocs}, subs[2] = {97, 60},
        starts[2] = {0, 60 * rank};
    MPI_Type_create_subarray(2, sizes, subs, starts, MPI_ORDER_C, MPI_BYTE, &t);
    MPI_Type_commit(&t);
    pats[np++] =
        (pattern_t){"subarray", 0, MPI_BYTE, t, MPI_BYTE, 97 * 60, 1, 0};
  }
  /* indexed_block of doubles; the last rank has nothing to do */
  {
    int d[3] = {0, 2, 5};
    MPI_Type_create_indexed_block(3, 1, d, MPI_DOUBLE, &t);
    MPI_Datatype r = resized(t, 8 * 8);
    MPI_Datatype v;
    MPI_Type_contiguous(1, r, &v); /* a dup-like layer */
    MPI_Type_commit(&v);
    pats[np++] = (pattern_t){"indexed_block+empty rank",
                             (MPI_Offset)rank * 8 * 8 * 200,
                             MPI_DOUBLE,
                             v,
                             MPI_DOUBLE,
                             rank == nprocs - 1 ? 0 : 3 * 200,
                             1,
                             0};
  }
  /* shm "0": the exchange by messages (depth 1 always uses them); otherwise
   * through the shared window, as every rank here shares one node. */
  /* slot: swarm_cio_slot_size, capping each pipeline buffer below
   * cb / depth. */
  struct {
    const char *cb, *nodes, *depth, *shm, *slot;
  } hints[] = {
      {NULL, NULL, NULL, NULL, NULL},   {"1000", "1", "1", NULL, NULL},
      {"4096", "2", "4", NULL, NULL},   {"3001", "64", "3", NULL, NULL},
      {"777", NULL, "5", NULL, NULL},   {NULL, NULL, NULL, "0", NULL},
      {"4096", "2", "4", "0", NULL},    {"3001", "64", "3", "0", NULL},
      {"777", NULL, "2", "0", NULL},    {"777", "1", "2", NULL, NULL},
      {NULL, NULL, NULL, NULL, "5000"}, {"65536", "2", "3", "0", "999"}};
  for (size_t h = 0; h < sizeof hints / sizeof hints[0]; h++) {
    MPI_Info info;
    MPI_Info_create(&info);
    char desc[128];
    snprintf(desc, sizeof desc, "cb=%s nodes=%s depth=%s shm=%s slot=%s",
             hints[h].cb ? hints[h].cb : "default",
             hints[h].nodes ? hints[h].nodes : "default",
             hints[h].depth ? hints[h].depth : "default",
             hints[h].shm ? hints[h].shm : "default",
             hints[h].slot ? hints[h].slot : "default");
    if (hints[h].cb)
      MPI_Info_set(info, "cb_buffer_size", hints[h].cb);
    if (hints[h].nodes)
      MPI_Info_set(info, "cb_nodes", hints[h].nodes);
    if (hints[h].depth)
      MPI_Info_set(info, "swarm_cio_depth", hints[h].depth);
    if (hints[h].shm)
      MPI_Info_set(info, "swarm_cio_shm", hints[h].shm);
    if (hints[h].slot)
      MPI_Info_set(info, "swarm_cio_slot_size", hints[h].slot);
    for (int i = 0; i < np; i++) {
      run(&pats[i], info, desc);
      if (rank == 0)
        printf("ok  %-26s %s\n", pats[i].name, desc);
    }
    MPI_Info_free(&info);
  }
  for (int i = 0; i < np; i++) {
    if (pats[i].ftype != MPI_BYTE)
      MPI_Type_free(&pats[i].ftype);
    if (pats[i].mtype != MPI_BYTE && pats[i].mtype != MPI_DOUBLE)
      MPI_Type_free(&pats[i].mtype);
  }
  return NULL;
}

int main(int argc, char **argv) {
  int prov;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &prov);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
  cio_test_tmpdir(dir, sizeof dir);
  /* The suite runs in a swarm thread; with work-first spawn it starts on the
   * kernel thread that initialised MPI and nothing in it blocks in swarm. */
  swarm_config_t cfg = {.workers = 1};
  CHECK(swarm_init(&cfg) == 0, "swarm_init");
  /* MPICH's datatype engine (MPI_Pack/Unpack, ROMIO) needs more than the
   * default 128 KiB swarm stack; Open MPI's does not. */
  swarm_attr_t attr;
  swarm_attr_init(&attr);
  swarm_attr_setstacksize(&attr, 1 << 20);
  swarm_thread_t th;
  CHECK(swarm_spawn(&th, &attr, suite, NULL) == 0, "spawn");
  swarm_attr_destroy(&attr);
  swarm_join(th, NULL);
  swarm_finalize();
  if (rank == 0) {
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
      fprintf(stderr, "could not remove %s\n", dir);
    printf("test_cio_patterns: all patterns byte-identical to MPI-IO on %d "
           "ranks\n",
           nprocs);
  }
  MPI_Finalize();
  return 0;
}
