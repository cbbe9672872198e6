/*
 * bench/cio.c — swarm's collective I/O against MPI_File_read_all /
 * MPI_File_write_all on the same file and view, in one run (issue 8).
 *
 *   mpirun -n P build/bench/cio [--pattern hpio|contig] [--op read|write]
 *       [--cb SIZE[,SIZE...]] [--per-rank SIZE] [--depth D] [--cold]
 *       [--cache warm|cold|warm,cold] [--reps N]
 *       [--mpiio romio|ompio] [--file PATH] [--exchange shm|msg]
 *       [--slot SIZE] [--cb-nodes N] [--ceiling]
 *   mpirun.mpich -n P build/bench/cio-mpich ...   (same flags; --mpiio is
 *       MPICH's ROMIO, printed as "mpich-romio", swarm as "swarm-mpich")
 *
 * hpio: each rank's data are 4 KiB blocks strided 4 KiB * P (rank r's blocks
 * at r*4K + k*4K*P); contig: rank r owns [r*per_rank, (r+1)*per_rank).
 * Both implementations get the same cb_buffer_size and cb_nodes (--cb-nodes,
 * default P), so the same collective-buffer memory or less for swarm: swarm
 * splits its cb_buffer_size into `depth` pipeline buffers (each at most
 * --slot, swarm_cio_slot_size). ROMIO honours cb_nodes only up to what its
 * cb_config_list allows, and its default ("*:1") allows one aggregator per
 * node, i.e. one in all on this single-node bench whatever cb_nodes says;
 * the bench therefore also passes cb_config_list "*:*". The reference line's
 * `cb_nodes` is what MPI_File_get_info reports after the open (MPICH reports
 * ROMIO's choice; Open MPI 4.1 echoes the hints it was given, so that number
 * is the request), `aggregators` the request.
 * --ceiling adds a third measurement before the two, printed first as impl
 * "pread" (or "pwrite"): each rank reads (writes) its contiguous 1/P of the
 * file in 1 MiB preads, no view, no exchange — what the disk and page cache
 * give P plain streams, a ceiling for both collective implementations.
 * --cold (--cache cold) drops the file from the page cache (fsync +
 * posix_fadvise DONTNEED on every rank) before every timed call. Several
 * --cb sizes and both caches may be measured in one run (one file, one MPI
 * start: what keeps `make bench-cio` short); each point prints its own pair
 * of lines.
 * The time is from a barrier before the call to a barrier after it; each
 * implementation runs --reps times (alternating) and the median is printed,
 * as one JSON line per implementation, with `cpu_s`, the median CPU
 * seconds (user + system, every thread) summed over the ranks: on a shared,
 * oversubscribed machine the work done is steadier than the time taken.
 * `identical` is true when swarm's bytes equal MPI-IO's (the MPI line is the
 * reference).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <mpi.h>
#include <swarm/cio.h>

static int rank, P;

static void die(const char *msg) {
  if (rank == 0)
    fprintf(stderr, "cio bench: %s\n", msg);
  MPI_Abort(MPI_COMM_WORLD, 2);
}

static int64_t parse_size(const char *s) {
  char *e;
  double v = strtod(s, &e);
  int64_t m = 1;
  if (*e == 'K' || *e == 'k')
    m = 1024;
  else if (*e == 'M' || *e == 'm')
    m = 1024 * 1024;
  else if (*e == 'G' || *e == 'g')
    m = 1024 * 1024 * 1024;
  else if (*e)
    return -1;
  return v > 0 ? (int64_t)(v * m) : -1;
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

/* CPU seconds of this process, every thread (the I/O thread included). */
static double cpu_now(void) {
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec +
         (u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

static void drop_cache(const char *path) {
  int fd = open(path, O_RDWR);
  if (fd >= 0) {
    fsync(fd);
    posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    close(fd);
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
  const char *pattern = "hpio", *op = "read", *mpiio = "romio", *file = NULL;
  int64_t cbl[16] = {16 << 20}, per_rank = 64 << 20,
          slot_max = SWARM_CIO_DEFAULT_SLOT_SIZE;
  int ncb = 1, coldl[2] = {0}, ncache = 1;
  int depth = 4, reps = 3, shm = 1, cb_nodes = 0, ceiling = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--cold")) {
      coldl[0] = 1;
      ncache = 1;
      continue;
    }
    if (!strcmp(a, "--ceiling")) {
      ceiling = 1;
      continue;
    }
    if (!v)
      goto usage;
    i++;
    if (!strcmp(a, "--pattern"))
      pattern = v;
    else if (!strcmp(a, "--op"))
      op = v;
    else if (!strcmp(a, "--mpiio"))
      mpiio = v;
    else if (!strcmp(a, "--file"))
      file = v;
    else if (!strcmp(a, "--cb")) {
      char tmp[256];
      snprintf(tmp, sizeof tmp, "%s", v);
      ncb = 0;
      for (char *t = strtok(tmp, ","); t && ncb < 16; t = strtok(NULL, ","))
        if ((cbl[ncb++] = parse_size(t)) <= 0)
          goto usage;
      if (ncb == 0)
        goto usage;
    } else if (!strcmp(a, "--cache")) {
      if (!strcmp(v, "warm") || !strcmp(v, "cold")) {
        coldl[0] = !strcmp(v, "cold");
        ncache = 1;
      } else if (!strcmp(v, "warm,cold")) {
        coldl[0] = 0;
        coldl[1] = 1;
        ncache = 2;
      } else
        goto usage;
    } else if (!strcmp(a, "--per-rank"))
      per_rank = parse_size(v);
    else if (!strcmp(a, "--slot"))
      slot_max = parse_size(v);
    else if (!strcmp(a, "--depth"))
      depth = atoi(v);
    else if (!strcmp(a, "--cb-nodes"))
      cb_nodes = atoi(v);
    else if (!strcmp(a, "--reps"))
      reps = atoi(v);
    else if (!strcmp(a, "--exchange") &&
             (!strcmp(v, "shm") || !strcmp(v, "msg")))
      shm = !strcmp(v, "shm");
    else
      goto usage;
  }
  if (strcmp(pattern, "hpio") && strcmp(pattern, "contig"))
    goto usage;
  if (strcmp(op, "read") && strcmp(op, "write"))
    goto usage;
#ifdef OPEN_MPI
  const char *component = !strcmp(mpiio, "romio")   ? "romio321"
                          : !strcmp(mpiio, "ompio") ? "ompio"
                                                    : NULL;
  const char *swarm_impl = "swarm";
#else /* MPICH (build/bench/cio-mpich): its ROMIO is its only MPI-IO */
  const char *component =
      !strcmp(mpiio, "romio") || !strcmp(mpiio, "mpich-romio") ? "romio" : NULL;
  const char *swarm_impl = "swarm-mpich";
  mpiio = "mpich-romio";
#endif
  if (!component || per_rank <= 0 || depth < 1 || reps < 1 || slot_max <= 0 ||
      cb_nodes < 0)
    goto usage;
  /* Open MPI picks its io component from the environment at MPI_Init. */
  setenv("OMPI_MCA_io", component, 1);
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &P);
  const int64_t BLK = 4096;
  if (per_rank % BLK)
    die("--per-rank must be a multiple of 4 KiB");
  if (per_rank > (int64_t)1 << 30)
    die("--per-rank above 1 GiB is not supported");
  int is_write = !strcmp(op, "write");
  char path[512];
  if (file)
    snprintf(path, sizeof path, "%s", file);
  else {
    int pid = getpid();
    MPI_Bcast(&pid, 1, MPI_INT, 0, MPI_COMM_WORLD);
    snprintf(path, sizeof path, "/tmp/swarm-cio-bench.%d", pid);
  }
  int64_t total = per_rank * P;

  /* the view */
  MPI_Datatype ftype = MPI_BYTE;
  MPI_Offset disp = rank * per_rank;
  if (!strcmp(pattern, "hpio")) {
    MPI_Datatype blk;
    MPI_Type_contiguous((int)BLK, MPI_BYTE, &blk);
    MPI_Type_create_resized(blk, 0, BLK * P, &ftype);
    MPI_Type_commit(&ftype);
    MPI_Type_free(&blk);
    disp = rank * BLK;
  }
  char cbs[32], nodes[16], ds[16], ss[32];
  snprintf(ss, sizeof ss, "%lld", (long long)slot_max);
  if (cb_nodes == 0 || cb_nodes > P)
    cb_nodes = P;
  snprintf(nodes, sizeof nodes, "%d", cb_nodes);
  snprintf(ds, sizeof ds, "%d", depth);
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "cb_nodes", nodes);
  MPI_Info_set(info, "cb_config_list", "*:*");
  MPI_Info_set(info, "romio_cb_read", "enable");
  MPI_Info_set(info, "romio_cb_write", "enable");
  MPI_Info_set(info, "swarm_cio_depth", ds);
  MPI_Info_set(info, "swarm_cio_shm", shm ? "1" : "0");
  MPI_Info_set(info, "swarm_cio_slot_size", ss);

  /* the data: every byte of the file is some rank's */
  char *data = malloc((size_t)per_rank), *got = malloc((size_t)per_rank);
  char *ref = malloc((size_t)per_rank);
  if (!data || !got || !ref)
    die("out of memory");
  for (int64_t i = 0; i < per_rank; i++)
    data[i] = (char)((i * 2654435761u) >> 13 ^ (unsigned)rank * 77u);
  int fd = open(path, O_RDWR | O_CREAT, 0644);
  if (fd < 0)
    die("cannot create the file");
  if (rank == 0 && ftruncate(fd, total) != 0)
    die("ftruncate failed");
  MPI_Barrier(MPI_COMM_WORLD);
  if (!is_write) { /* file content: rank r's share, written plainly */
    for (int64_t o = rank * per_rank; o < (rank + 1) * per_rank; o += 1 << 20)
      if (pwrite(fd, data + (o - rank * per_rank), 1 << 20, o) != 1 << 20)
        die("pwrite failed");
    fsync(fd);
  }
  MPI_Barrier(MPI_COMM_WORLD);

  double *tm = calloc((size_t)reps, sizeof *tm),
         *ts = calloc((size_t)reps, sizeof *ts),
         *cm = calloc((size_t)reps, sizeof *cm),
         *cs = calloc((size_t)reps, sizeof *cs),
         *tp = calloc((size_t)reps, sizeof *tp),
         *cp = calloc((size_t)reps, sizeof *cp);
  int every_ident = 1, ref_nodes = -1;
  for (int point = 0; point < ncb * ncache; point++) {
    int64_t cb = cbl[point / ncache];
    int cold = coldl[point % ncache];
    snprintf(cbs, sizeof cbs, "%lld", (long long)cb);
    MPI_Info_set(info, "cb_buffer_size", cbs);
    int identical = 1;
    for (int r = 0; r < reps; r++) {
      /* -1: plain streams (--ceiling), 0: MPI-IO, 1: swarm */
      for (int impl = ceiling ? -1 : 0; impl < 2; impl++) {
        if (is_write && rank == 0 && (ftruncate(fd, 0) || ftruncate(fd, total)))
          die("ftruncate failed");
        MPI_Barrier(MPI_COMM_WORLD);
        if (cold)
          drop_cache(path);
        char *buf = impl == 0 ? ref : got;
        const int64_t chunk = 1 << 20;
        if (!is_write)
          memset(buf, 0, (size_t)per_rank);
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = now(), c0 = cpu_now();
        int rc = MPI_SUCCESS;
        if (impl < 0) {
          for (int64_t o = 0; o < per_rank && rc == MPI_SUCCESS; o += chunk) {
            size_t want = (size_t)(per_rank - o < chunk ? per_rank - o : chunk);
            ssize_t done = is_write
                               ? pwrite(fd, data + o, want, rank * per_rank + o)
                               : pread(fd, buf + o, want, rank * per_rank + o);
            if (done != (ssize_t)want)
              rc = MPI_ERR_IO;
          }
        } else if (impl == 0) {
          MPI_File f;
          rc = MPI_File_open(MPI_COMM_WORLD, path,
                             is_write ? MPI_MODE_WRONLY : MPI_MODE_RDONLY, info,
                             &f);
          if (rc == MPI_SUCCESS) {
            MPI_File_set_view(f, disp, MPI_BYTE, ftype, "native", info);
            MPI_Info got_info;
            if (MPI_File_get_info(f, &got_info) == MPI_SUCCESS) {
              char v[64];
              int flag = 0;
              MPI_Info_get(got_info, "cb_nodes", (int)sizeof v - 1, v, &flag);
              if (flag)
                ref_nodes = atoi(v);
              MPI_Info_free(&got_info);
            }
            rc = is_write ? MPI_File_write_all(f, data, (int)per_rank, MPI_BYTE,
                                               MPI_STATUS_IGNORE)
                          : MPI_File_read_all(f, buf, (int)per_rank, MPI_BYTE,
                                              MPI_STATUS_IGNORE);
            MPI_File_close(&f);
          }
        } else {
          swarm_cio_file_t f;
          rc = swarm_cio_open(MPI_COMM_WORLD, path,
                              is_write ? MPI_MODE_WRONLY : MPI_MODE_RDONLY,
                              info, &f);
          if (rc == MPI_SUCCESS) {
            rc = swarm_cio_set_view(f, disp, MPI_BYTE, ftype, "native", info);
            if (rc == MPI_SUCCESS)
              rc = is_write ? swarm_cio_write_all(f, data, (int)per_rank,
                                                  MPI_BYTE, MPI_STATUS_IGNORE)
                            : swarm_cio_read_all(f, buf, (int)per_rank,
                                                 MPI_BYTE, MPI_STATUS_IGNORE);
            swarm_cio_close(&f);
          }
          if (rc != MPI_SUCCESS && rank == 0)
            fprintf(stderr, "swarm_cio: %s\n", swarm_cio_errmsg());
        }
        MPI_Barrier(MPI_COMM_WORLD);
        double t = now() - t0, cpu = cpu_now() - c0, cpu_all = 0;
        MPI_Reduce(&cpu, &cpu_all, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
        if (rc != MPI_SUCCESS)
          die(impl > 0    ? "swarm collective I/O failed"
              : impl == 0 ? "MPI-IO failed"
                          : "plain pread/pwrite failed");
        (impl < 0 ? tp : impl ? ts : tm)[r] = t;
        (impl < 0 ? cp : impl ? cs : cm)[r] = cpu_all;
        if (is_write && impl >= 0) { /* this rank's share, as written */
          if (pread(fd, buf, (size_t)per_rank, rank * per_rank) != per_rank)
            die("pread of the written file failed");
        }
        MPI_Barrier(MPI_COMM_WORLD); /* before the next truncate */
      }
      if (memcmp(ref, got, (size_t)per_rank) != 0)
        identical = 0;
    }
    int all_ident;
    MPI_Allreduce(&identical, &all_ident, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    qsort(tm, (size_t)reps, sizeof *tm, cmp_double);
    qsort(ts, (size_t)reps, sizeof *ts, cmp_double);
    qsort(cm, (size_t)reps, sizeof *cm, cmp_double);
    qsort(cs, (size_t)reps, sizeof *cs, cmp_double);
    qsort(tp, (size_t)reps, sizeof *tp, cmp_double);
    qsort(cp, (size_t)reps, sizeof *cp, cmp_double);
    if (rank == 0 && ceiling)
      printf("{\"impl\":\"%s\",\"op\":\"%s\",\"pattern\":\"%s\",\"ranks\":%d,"
             "\"cb_buffer_size\":%lld,\"chunk\":%d,\"per_rank\":%lld,"
             "\"cold\":%s,\"reps\":%d,\"seconds\":%.4f,\"mib_per_s\":%.1f,"
             "\"cpu_s\":%.4f}\n",
             is_write ? "pwrite" : "pread", op, pattern, P,
             (long long)cbl[point / ncache], 1 << 20, (long long)per_rank,
             cold ? "true" : "false", reps, tp[reps / 2],
             (double)total / (1 << 20) / tp[reps / 2], cp[reps / 2]);
    if (rank == 0) {
      double mib = (double)total / (1 << 20);
      int64_t dom = (total + cb_nodes - 1) / cb_nodes,
              slot = (cb + depth - 1) / depth;
      if (slot > slot_max)
        slot = slot_max;
      printf("{\"impl\":\"%s\",\"op\":\"%s\",\"pattern\":\"%s\",\"ranks\":%d,"
             "\"cb_buffer_size\":%lld,\"aggregators\":%d,\"cb_nodes\":%d,"
             "\"cycles\":%lld,\"per_rank\":%lld,"
             "\"cold\":%s,\"reps\":%d,\"seconds\":%.4f,\"mib_per_s\":%.1f,"
             "\"cpu_s\":%.4f,\"identical\":true}\n",
             mpiio, op, pattern, P, (long long)cb, cb_nodes, ref_nodes,
             (long long)((dom + cb - 1) / cb), (long long)per_rank,
             cold ? "true" : "false", reps, tm[reps / 2], mib / tm[reps / 2],
             cm[reps / 2]);
      printf("{\"impl\":\"%s\",\"op\":\"%s\",\"pattern\":\"%s\",\"ranks\":%d,"
             "\"cb_buffer_size\":%lld,\"aggregators\":%d,\"depth\":%d,"
             "\"slot\":%lld,\"cycles\":%lld,"
             "\"per_rank\":%lld,\"cold\":%s,\"reps\":%d,\"seconds\":%.4f,"
             "\"mib_per_s\":%.1f,\"cpu_s\":%.4f,\"identical\":%s,\"vs\":\"%s\","
             "\"exchange\":\"%s\"}\n",
             swarm_impl, op, pattern, P, (long long)cb, cb_nodes, depth,
             (long long)slot, (long long)((dom + slot - 1) / slot),
             (long long)per_rank, cold ? "true" : "false", reps, ts[reps / 2],
             mib / ts[reps / 2], cs[reps / 2], all_ident ? "true" : "false",
             mpiio, shm ? "shm" : "msg");
      fflush(stdout);
    }
    every_ident &= all_ident;
  }
  close(fd);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0 && !file)
    unlink(path);
  if (ftype != MPI_BYTE)
    MPI_Type_free(&ftype);
  MPI_Info_free(&info);
  free(data);
  free(got);
  free(ref);
  free(tm);
  free(ts);
  free(cm);
  free(cs);
  free(tp);
  free(cp);
  MPI_Finalize();
  return every_ident ? 0 : 1;
usage:
  fprintf(stderr, "usage: cio [--pattern hpio|contig] [--op read|write] "
                  "[--cb SIZE[,SIZE...]] [--per-rank SIZE] [--depth D] "
                  "[--cold] [--cache warm|cold|warm,cold] [--reps N] [--mpiio "
                  "romio|ompio|mpich-romio] "
                  "[--file PATH] [--exchange shm|msg] [--slot SIZE] "
                  "[--cb-nodes N] [--ceiling]\n");
  return 2;
}
