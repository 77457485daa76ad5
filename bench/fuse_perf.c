/*
 * fuse_perf.c - execution modes side by side (docs/results/intra-host.md, "Execution modes"): K
 * non-blocking collectives of S bytes each, then a wait for all of them, on three communicators of
 * the same ranks in strict, defer and debug mode. The modes take turns within every iteration, so
 * a machine shared with other work slows them alike. Prints, per mode, the median time per
 * operation, the ratio to strict (strict time / mode time: above 1 is faster), and the library's
 * scratch memory afterwards (operation objects, step state, transfers, scratch and the fused
 * hosts' buffers: their peak, since they are kept for reuse). Results are checked exactly after the
 * last iteration.
 *
 *   mpirun -np 2 bench/fuse_perf [-k K] [-b BYTES]
 *                                [-c allreduce|allgather|broadcast|reducescatter]
 *                                [-i ITERS] [-w WARMUP] [-m strict,defer,debug] [-B]
 *   (-B: blocking calls instead, one after the other: what debug mode's checks cost)
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm.h"
#include "tpu_dist.h"

#define MAX_MODES 3

typedef struct {
  int k, iters, warmup, blocking;
  size_t bytes;
  tdColl coll;
  int modes[MAX_MODES], nmodes;
} Opts;

static size_t parseBytes(const char *s) {
  char *e;
  double v = strtod(s, &e);
  if (*e == 'K' || *e == 'k') v *= 1024;
  if (*e == 'M' || *e == 'm') v *= 1024 * 1024;
  return (size_t)v;
}

static int parse(int argc, char **argv, Opts *o) {
  *o = (Opts){256, 20, 3, 0, 4096, TD_COLL_ALLREDUCE, {0, 2, 1}, 3};
  for (int i = 1; i < argc; i += 2) {
    const char *f = argv[i], *v = i + 1 < argc ? argv[i + 1] : "";
    if (!strcmp(f, "-B")) { /* blocking calls: no request, no wait */
      o->blocking = 1;
      i--;
      continue;
    }
    if (!strcmp(f, "-k"))
      o->k = atoi(v);
    else if (!strcmp(f, "-b"))
      o->bytes = parseBytes(v);
    else if (!strcmp(f, "-i"))
      o->iters = atoi(v);
    else if (!strcmp(f, "-w"))
      o->warmup = atoi(v);
    else if (!strcmp(f, "-c"))
      o->coll = (tdColl)schedCollFromName(v);
    else if (!strcmp(f, "-m")) {
      o->nmodes = 0;
      for (const char *p = v; *p && o->nmodes < MAX_MODES;
           p += strcspn(p, ",") + (p[strcspn(p, ",")] != 0))
        o->modes[o->nmodes++] = !strncmp(p, "defer", 5) ? 2 : !strncmp(p, "debug", 5) ? 1 : 0;
    } else
      return -1;
  }
  int ok = o->coll == TD_COLL_ALLREDUCE || o->coll == TD_COLL_ALLGATHER ||
           o->coll == TD_COLL_BROADCAST || o->coll == TD_COLL_REDUCESCATTER;
  return ok && o->k > 0 && o->iters > 0 && o->bytes >= 4 ? 0 : -1;
}

static const char *modeName(int m) {
  return m == 2 ? "defer" : m == 1 ? "debug" : "strict";
}

typedef struct {
  tpudistComm_t comm;
  float **in, **out;
  double *t; /* seconds per iteration */
} Run;

/* K collectives of count floats (all-gather: count per rank; reduce-scatter: count each rank
 * gets), then wait for all. */
static double once(const Opts *o, Run *r, size_t count, tpudistRequest_t *req) {
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = MPI_Wtime();
  for (int j = 0; j < o->k; j++) {
    tpudistResult_t res;
    tpudistRequest_t *rq = o->blocking ? NULL : &req[j];
    if (o->coll == TD_COLL_ALLREDUCE)
      res = tpudistAllReduce(r->in[j], r->out[j], count, tpudistFloat32, tpudistSum, r->comm, rq);
    else if (o->coll == TD_COLL_ALLGATHER)
      res = tpudistAllGather(r->in[j], r->out[j], count, tpudistFloat32, r->comm, rq);
    else if (o->coll == TD_COLL_REDUCESCATTER)
      res =
          tpudistReduceScatter(r->in[j], r->out[j], count, tpudistFloat32, tpudistSum, r->comm, rq);
    else
      res = tpudistBroadcast(r->in[j], r->out[j], count, tpudistFloat32, 0, r->comm, rq);
    if (res != tpudistSuccess) {
      fprintf(stderr, "call %d: %s\n", j, tpudistGetLastError(r->comm));
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
  }
  for (int j = 0; !o->blocking && j < o->k; j++)
    if (tpudistWait(req[j]) != tpudistSuccess) {
      fprintf(stderr, "wait %d: %s\n", j, tpudistGetLastError(r->comm));
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
  return MPI_Wtime() - t0;
}

static long check(const Opts *o, const Run *r, size_t count, int n, int rank) {
  long bad = 0;
  for (int j = 0; j < o->k; j++) {
    size_t outn = o->coll == TD_COLL_ALLGATHER ? count * (size_t)n : count;
    for (size_t i = 0; i < outn; i++) {
      size_t e = i % count;
      int src = (int)(i / count);
      size_t g = o->coll == TD_COLL_REDUCESCATTER ? (size_t)rank * count + e : e; /* input index */
      float want = o->coll == TD_COLL_ALLREDUCE || o->coll == TD_COLL_REDUCESCATTER
                       ? (float)(n * (n - 1) / 2 + n * (int)(g % 7 + j % 5))
                   : o->coll == TD_COLL_ALLGATHER ? (float)(src + (int)(e % 7 + j % 5))
                                                  : (float)(e % 7 + j % 5);
      bad += r->out[j][i] != want;
    }
  }
  return bad;
}

static size_t scratchBytes(tpudistComm_t comm) {
  tdExec *ex = &comm->c.exec;
  size_t b = 0;
  pthread_mutex_lock(&ex->lock);
  for (tdOp *op = ex->all_ops; op; op = op->all_next)
    b += op->scratch_cap + op->pack_cap + op->rt_cap * sizeof(tdStepRt) +
         op->xfer_cap * sizeof(tdXfer) + op->parts_cap * sizeof(tdPart) +
         op->pieces_cap * sizeof(tdPiece) + sizeof(tdOp);
  for (size_t i = 0; i < comm->c.defer.npacks; i++)
    b += comm->c.defer.packs[i].cap; /* fused hosts' */
  b += comm->c.defer.host_scratch_cap;
  pthread_mutex_unlock(&ex->lock);
  return b;
}

static int cmpd(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, n;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  Opts o;
  if (parse(argc, argv, &o)) {
    if (!rank)
      fprintf(stderr,
              "usage: fuse_perf [-k K] [-b BYTES] "
              "[-c allreduce|allgather|broadcast|reducescatter] "
              "[-i ITERS] [-w WARMUP] [-m strict,defer,debug] [-B]\n");
    MPI_Finalize();
    return 2;
  }
  size_t count = o.bytes / 4;
  size_t outn = o.coll == TD_COLL_ALLGATHER ? count * (size_t)n : count;
  size_t inn = o.coll == TD_COLL_REDUCESCATTER ? count * (size_t)n : count;
  tpudistUniqueId id;
  if (!rank) tpudistGetUniqueId(&id);
  MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD);
  Run runs[MAX_MODES];
  tpudistRequest_t *req = calloc((size_t)o.k, sizeof(*req));
  for (int m = 0; m < o.nmodes; m++) {
    tpudistConfig_t cfg = TPUDIST_CONFIG_INITIALIZER;
    cfg.mode = o.modes[m];
    Run *r = &runs[m];
    if (tpudistCommInitRankConfig(&r->comm, n, id, rank, &cfg) != tpudistSuccess) {
      fprintf(stderr, "init: %s\n", tpudistGetLastError(NULL));
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (!rank) tpudistGetUniqueId(&id); /* the next communicator's */
    MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD);
    r->in = calloc((size_t)o.k, sizeof(float *));
    r->out = calloc((size_t)o.k, sizeof(float *));
    r->t = calloc((size_t)o.iters, sizeof(double));
    for (int j = 0; j < o.k; j++) {
      r->in[j] = malloc(inn * 4);
      r->out[j] = malloc(outn * 4);
      memset(r->out[j], 0, outn * 4); /* touched before timing */
      for (size_t i = 0; i < inn; i++) r->in[j][i] = (float)(rank + (int)(i % 7 + j % 5));
    }
  }
  for (int it = -o.warmup; it < o.iters; it++)
    for (int m = 0; m < o.nmodes; m++) {
      double t = once(&o, &runs[m], count, req);
      if (it >= 0) runs[m].t[it] = t;
    }
  double strict_med = 0;
  if (!rank)
    printf(
        "# fuse_perf: K=%d %s%s of %zu bytes (float32%s), %d ranks, %d iterations (median per "
        "op); modes take turns in each iteration\n# %-7s %12s %12s %10s %14s\n",
        o.k, o.blocking ? "blocking " : "", schedCollName(o.coll), o.bytes,
        o.coll == TD_COLL_ALLREDUCE || o.coll == TD_COLL_REDUCESCATTER ? " sum" : "", n, o.iters,
        "mode", "us/op", "ms/K ops", "vs strict", "scratch bytes");
  for (int m = 0; m < o.nmodes; m++) {
    Run *r = &runs[m];
    long bad = check(&o, r, count, n, rank), all_bad = 0;
    MPI_Allreduce(&bad, &all_bad, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    /* the slowest rank's time per iteration */
    MPI_Allreduce(MPI_IN_PLACE, r->t, o.iters, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    qsort(r->t, (size_t)o.iters, sizeof(double), cmpd);
    double med = r->t[o.iters / 2];
    if (o.modes[m] == 0) strict_med = med;
    unsigned long long sb = scratchBytes(r->comm), sb_max = 0;
    MPI_Allreduce(&sb, &sb_max, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
    if (!rank) {
      char ratio[32] = "-";
      if (strict_med > 0) snprintf(ratio, sizeof(ratio), "%.2fx", strict_med / med);
      printf("  %-7s %12.2f %12.3f %10s %14llu%s\n", modeName(o.modes[m]), med / o.k * 1e6,
             med * 1e3, ratio, sb_max, all_bad ? "  WRONG RESULTS" : "");
    }
    if (all_bad) MPI_Abort(MPI_COMM_WORLD, 1);
  }
  for (int m = 0; m < o.nmodes; m++) tpudistCommDestroy(runs[m].comm);
  MPI_Finalize();
  return 0;
}
