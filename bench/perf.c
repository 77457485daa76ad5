/*
 * perf.c - the nccl-tests-style harness: flags, buffers (allocated and touched once), the timed
 * loop, exact checks, and the output table with nccl-tests' columns plus the algorithm used.
 *
 * Flags (nccl-tests'): -b min bytes, -e max bytes, -i step bytes, -f step factor, -n iterations,
 * -w warmup iterations, -c check (0/1), -d dtype (float, half, bfloat16, double, int8, uint8,
 * int32, uint32, int64, uint64), -o op (sum, prod, max, min, avg), -r root, -z blocking (barrier
 * after each iteration), -a average over ranks (0 rank 0, 1 mean, 2 min, 3 max). Ours: -A algorithm
 * (as in TPU_DIST_ALGO), -I implementation (tpu_dist | mpi), -C file (append CSV rows), -k skew, -T
 * tokens -H hidden -K top-k (all-to-all-v MoE traffic; -M FILE writes its count matrix, in
 * elements, one row per sender, for bench/torch_perf.py --counts).
 */
#include "perf.h"

#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernels.h"

const perfOpts *perfCurrentOpts;
int perfRank;

static size_t parseSize(const char *s) {
  char *end;
  double v = strtod(s, &end);
  switch (*end) {
    case 'K':
    case 'k':
      v *= 1024;
      break;
    case 'M':
    case 'm':
      v *= 1024 * 1024;
      break;
    case 'G':
    case 'g':
      v *= 1024.0 * 1024 * 1024;
      break;
  }
  return (size_t)v;
}

static const struct {
  const char *name;
  tpudistDataType_t t;
} dtypeNames[] = {{"float", tpudistFloat32},     {"half", tpudistFloat16},
                  {"bfloat16", tpudistBfloat16}, {"double", tpudistFloat64},
                  {"int8", tpudistInt8},         {"uint8", tpudistUint8},
                  {"int32", tpudistInt32},       {"uint32", tpudistUint32},
                  {"int64", tpudistInt64},       {"uint64", tpudistUint64}};
static const char *opNames[] = {"sum", "prod", "max", "min", "avg"};

static const char *dtypeName(tpudistDataType_t t) {
  for (size_t i = 0; i < sizeof(dtypeNames) / sizeof(dtypeNames[0]); i++)
    if (dtypeNames[i].t == t) return dtypeNames[i].name;
  return "?";
}

size_t perfDtypeSize(tpudistDataType_t dtype) {
  return kernelDtypeSize(dtype);
}

double perfValue(int rank, size_t i) {
  return (double)((rank * 7 + i * 13) % 9) - 4.0;
}

void perfStore(void *buf, size_t i, tpudistDataType_t t, double v) {
  switch (t) {
    case tpudistInt8:
      ((int8_t *)buf)[i] = (int8_t)(int64_t)v;
      break;
    case tpudistUint8:
      ((uint8_t *)buf)[i] = (uint8_t)(int64_t)v;
      break;
    case tpudistInt32:
      ((int32_t *)buf)[i] = (int32_t)(int64_t)v;
      break;
    case tpudistUint32:
      ((uint32_t *)buf)[i] = (uint32_t)(int64_t)v;
      break;
    case tpudistInt64:
      ((int64_t *)buf)[i] = (int64_t)v;
      break;
    case tpudistUint64:
      ((uint64_t *)buf)[i] = (uint64_t)(int64_t)v;
      break;
    case tpudistFloat16:
      ((uint16_t *)buf)[i] = kernelFloatToHalf((float)v);
      break;
    case tpudistBfloat16:
      ((uint16_t *)buf)[i] = kernelFloatToBf16((float)v);
      break;
    case tpudistFloat32:
      ((float *)buf)[i] = (float)v;
      break;
    case tpudistFloat64:
      ((double *)buf)[i] = v;
      break;
    default:
      break;
  }
}

double perfLoad(const void *buf, size_t i, tpudistDataType_t t) {
  switch (t) {
    case tpudistInt8:
      return ((const int8_t *)buf)[i];
    case tpudistUint8:
      return ((const uint8_t *)buf)[i];
    case tpudistInt32:
      return ((const int32_t *)buf)[i];
    case tpudistUint32:
      return ((const uint32_t *)buf)[i];
    case tpudistInt64:
      return (double)((const int64_t *)buf)[i];
    case tpudistUint64:
      return (double)((const uint64_t *)buf)[i];
    case tpudistFloat16:
      return kernelHalfToFloat(((const uint16_t *)buf)[i]);
    case tpudistBfloat16:
      return kernelBf16ToFloat(((const uint16_t *)buf)[i]);
    case tpudistFloat32:
      return ((const float *)buf)[i];
    case tpudistFloat64:
      return ((const double *)buf)[i];
    default:
      return NAN;
  }
}

MPI_Datatype perfMpiType(tpudistDataType_t t) {
  switch (t) {
    case tpudistInt8:
      return MPI_INT8_T;
    case tpudistUint8:
      return MPI_UINT8_T;
    case tpudistInt32:
      return MPI_INT32_T;
    case tpudistUint32:
      return MPI_UINT32_T;
    case tpudistInt64:
      return MPI_INT64_T;
    case tpudistUint64:
      return MPI_UINT64_T;
    case tpudistFloat32:
      return MPI_FLOAT;
    case tpudistFloat64:
      return MPI_DOUBLE;
    default:
      return MPI_DATATYPE_NULL; /* MPI has no half/bfloat16 */
  }
}

MPI_Op perfMpiOp(tpudistRedOp_t op) {
  switch (op) {
    case tpudistSum:
      return MPI_SUM;
    case tpudistProd:
      return MPI_PROD;
    case tpudistMax:
      return MPI_MAX;
    case tpudistMin:
      return MPI_MIN;
    default:
      return MPI_OP_NULL;
  }
}

static void usage(const char *prog) {
  fprintf(stderr,
          "usage: mpirun -np N %s [-b min] [-e max] [-f factor | -i step] [-n iters] [-w warmup]\n"
          "  [-c 0|1] [-d dtype] [-o op] [-r root] [-z 0|1] [-a 0-3] [-A algo] [-I tpu_dist|mpi]\n"
          "  [-C out.csv] [-k skew] [-T tokens -H hidden -K topk [-M counts.csv]]\n",
          prog);
}

static int parseOpts(int argc, char **argv, perfOpts *o) {
  memset(o, 0, sizeof(*o));
  o->min_bytes = 32 * 1024 * 1024;
  o->max_bytes = 32 * 1024 * 1024;
  o->step_factor = 2;
  o->iters = 20;
  o->warmup = 2;
  o->check = 1;
  o->average = 1;
  o->dtype = tpudistFloat32;
  o->op = tpudistSum;
  int c;
  while ((c = getopt(argc, argv, "b:e:i:f:n:w:c:d:o:r:z:a:A:I:C:k:T:H:K:M:h")) != -1) {
    switch (c) {
      case 'b':
        o->min_bytes = parseSize(optarg);
        break;
      case 'e':
        o->max_bytes = parseSize(optarg);
        break;
      case 'i':
        o->step_bytes = parseSize(optarg);
        o->step_factor = 0;
        break;
      case 'f':
        o->step_factor = atof(optarg);
        break;
      case 'n':
        o->iters = atoi(optarg);
        break;
      case 'w':
        o->warmup = atoi(optarg);
        break;
      case 'c':
        o->check = atoi(optarg);
        break;
      case 'd': {
        size_t i, n = sizeof(dtypeNames) / sizeof(dtypeNames[0]);
        for (i = 0; i < n && strcmp(dtypeNames[i].name, optarg); i++) {
        }
        if (i == n) {
          fprintf(stderr, "unknown dtype %s\n", optarg);
          return 1;
        }
        o->dtype = dtypeNames[i].t;
        break;
      }
      case 'o': {
        int i;
        for (i = 0; i < 5 && strcmp(opNames[i], optarg); i++) {
        }
        if (i == 5) {
          fprintf(stderr, "unknown op %s\n", optarg);
          return 1;
        }
        o->op = (tpudistRedOp_t)i;
        break;
      }
      case 'r':
        o->root = atoi(optarg);
        break;
      case 'z':
        o->blocking = atoi(optarg);
        break;
      case 'a':
        o->average = atoi(optarg);
        break;
      case 'A':
        o->algo = optarg;
        break;
      case 'I':
        o->impl = strcmp(optarg, "mpi") == 0 ? PERF_IMPL_MPI : PERF_IMPL_TPU_DIST;
        break;
      case 'C':
        o->csv = optarg;
        break;
      case 'k':
        o->skew = atof(optarg);
        break;
      case 'T':
        o->moe_tokens = atol(optarg);
        break;
      case 'H':
        o->moe_hidden = atol(optarg);
        break;
      case 'K':
        o->moe_topk = atoi(optarg);
        break;
      case 'M':
        o->counts_out = optarg;
        break;
      default:
        return 1;
    }
  }
  if (o->moe_tokens <= 0 && (o->skew < 0 || o->skew > 1)) {
    fprintf(stderr,
            "-k skew must be in [0, 1] (a fraction of the data), or a Zipf exponent with -T\n");
    return 1;
  }
  if (o->moe_tokens > 0 &&
      (o->moe_hidden <= 0 || o->moe_topk < 1 || o->moe_topk > 64 || o->skew < 0)) {
    fprintf(stderr, "MoE traffic needs -H hidden > 0, 1 <= -K top-k <= 64 and -k >= 0\n");
    return 1;
  }
  if (o->iters < 1 || o->min_bytes > o->max_bytes || (o->step_factor == 0 && !o->step_bytes) ||
      (o->step_factor != 0 && o->step_factor <= 1)) {
    fprintf(stderr, "bad size range or iteration count\n");
    return 1;
  }
  return 0;
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void *alloc(size_t bytes) {
  void *p = NULL;
  if (posix_memalign(&p, 4096, bytes ? bytes : 64)) return NULL;
  memset(p, 0, bytes ? bytes : 64); /* touch once */
  return p;
}

/* Times iters runs; returns seconds per run per the -a rule. */
static double timeRuns(const perfCtx *c, const perfColl *coll, const void *send, void *recv,
                       size_t count, int inplace, int *err) {
  const perfOpts *o = c->o;
  for (int i = 0; i < o->warmup && !*err; i++)
    *err = coll->run(c, send, recv, count, o->root, inplace);
  MPI_Barrier(c->mcomm);
  double t0 = now();
  for (int i = 0; i < o->iters && !*err; i++) {
    *err = coll->run(c, send, recv, count, o->root, inplace);
    if (o->blocking) MPI_Barrier(c->mcomm);
  }
  double t = (now() - t0) / o->iters, r = t;
  MPI_Op op = o->average == 2 ? MPI_MIN : o->average == 3 ? MPI_MAX : MPI_SUM;
  if (o->average == 0) {
    MPI_Bcast(&r, 1, MPI_DOUBLE, 0, c->mcomm);
  } else {
    MPI_Allreduce(&t, &r, 1, MPI_DOUBLE, op, c->mcomm);
    if (o->average == 1) r /= c->nranks;
  }
  int e = *err;
  MPI_Allreduce(&e, err, 1, MPI_INT, MPI_MAX, c->mcomm);
  return r;
}

static long checkRun(const perfCtx *c, const perfColl *coll, void *send, void *recv, size_t count,
                     size_t recv_bytes, int inplace, int *err) {
  memset(recv, 0xA5, recv_bytes); /* poison: stale results cannot pass */
  coll->init(c, inplace ? recv : send, count, c->o->root, inplace);
  *err = coll->run(c, send, recv, count, c->o->root, inplace);
  long wrong = *err ? 1 : coll->check(c, recv, count, c->o->root), total = 0;
  MPI_Allreduce(&wrong, &total, 1, MPI_LONG, MPI_SUM, c->mcomm);
  return total;
}

static void printHeader(const perfCtx *c, const perfColl *coll) {
  if (c->rank) return;
  printf("# %s_perf: %d ranks, implementation %s\n", coll->name, c->nranks,
         c->o->impl == PERF_IMPL_MPI ? "mpi" : "tpu_dist");
  printf("#%75s%37s\n", "out-of-place", "in-place");
  printf("#%12s %13s %9s %7s %5s %9s %8s %8s %6s %9s %8s %8s %6s  %s\n", "size", "count", "type",
         "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong",
         "algorithm");
  printf("#%12s %13s %9s %7s %5s %9s %8s %8s %6s %9s %8s %8s %6s\n", "(B)", "(elements)", "", "",
         "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
}

static int setupComm(perfCtx *c) {
  if (c->o->impl == PERF_IMPL_MPI) return 0;
  tpudistUniqueId id;
  if (c->rank == 0 && tpudistGetUniqueId(&id) != tpudistSuccess) {
    fprintf(stderr, "tpudistGetUniqueId: %s\n", tpudistGetLastError(NULL));
    return 1;
  }
  MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, c->mcomm);
  tpudistResult_t r = tpudistCommInitRank(&c->comm, c->nranks, id, c->rank);
  if (r != tpudistSuccess) {
    fprintf(stderr, "rank %d: tpudistCommInitRank: %s: %s\n", c->rank, tpudistGetErrorString(r),
            tpudistGetLastError(NULL));
    return 1;
  }
  return 0;
}

typedef struct {
  double us, algbw, busbw;
  long wrong;
  int supported;
} perfResult;

static perfResult measure(const perfCtx *c, const perfColl *coll, void *send, void *recv,
                          size_t count, size_t recv_bytes, size_t algbytes, int inplace,
                          int *fail) {
  perfResult res = {0, 0, 0, -1, 1};
  int err = 0;
  if (inplace) coll->init(c, recv, count, c->o->root, 1);
  double t = timeRuns(c, coll, send, recv, count, inplace, &err);
  if (err == tpudistNotSupported && inplace) { /* some collectives have no in-place form */
    res.supported = 0;
    return res;
  }
  if (err) {
    if (c->rank == 0)
      fprintf(stderr, "# error %d: %s\n", err, c->comm ? tpudistGetLastError(c->comm) : "mpi");
    *fail = 1;
  }
  res.us = t * 1e6;
  res.algbw = t > 0 ? algbytes / t / 1e9 : 0;
  res.busbw = res.algbw * coll->busbw_factor(c->nranks);
  if (c->o->check) {
    res.wrong = checkRun(c, coll, send, recv, count, recv_bytes, inplace, &err);
    if (res.wrong) *fail = 1;
  }
  return res;
}

static void printResult(const perfResult *r, int check) {
  if (!r->supported) {
    printf(" %9s %8s %8s %6s", "N/A", "N/A", "N/A", "N/A");
  } else if (!check) {
    printf(" %9.2f %8.3f %8.3f %6s", r->us, r->algbw, r->busbw, "N/A");
  } else {
    printf(" %9.2f %8.3f %8.3f %6ld", r->us, r->algbw, r->busbw, r->wrong);
  }
}

int perfMain(int argc, char **argv, const perfColl *coll) {
  MPI_Init(&argc, &argv);
  perfOpts o;
  perfCtx c = {0, 0, NULL, MPI_COMM_WORLD, &o};
  MPI_Comm_rank(MPI_COMM_WORLD, &c.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &c.nranks);
  if (parseOpts(argc, argv, &o)) {
    if (c.rank == 0) usage(argv[0]);
    MPI_Finalize();
    return 2;
  }
  perfCurrentOpts = &o;
  perfRank = c.rank;
  if (o.algo) { /* -A names the algorithm for this tool's collective */
    char spec[128];
    snprintf(spec, sizeof(spec), "%s=%s", coll->coll, o.algo);
    setenv("TPU_DIST_ALGO", spec, 1);
  }
  if (o.impl == PERF_IMPL_MPI && coll->reduces &&
      (perfMpiType(o.dtype) == MPI_DATATYPE_NULL || perfMpiOp(o.op) == MPI_OP_NULL)) {
    if (c.rank == 0) fprintf(stderr, "mpi has no %s/%s\n", dtypeName(o.dtype), opNames[o.op]);
    MPI_Finalize();
    return 2;
  }
  if (setupComm(&c)) MPI_Abort(MPI_COMM_WORLD, 1);
  size_t esize = perfDtypeSize(o.dtype), count, se, re;
  coll->sizes(o.max_bytes, esize, c.nranks, &count, &se, &re);
  size_t sbytes = se * esize, rbytes = re * esize;
  void *send = alloc(sbytes), *recv = alloc(rbytes);
  printHeader(&c, coll);
  int fail = 0, rows = 0;
  double busbw_sum = 0;
  FILE *csv = (o.csv && c.rank == 0) ? fopen(o.csv, "a") : NULL;
  for (size_t bytes = o.min_bytes; bytes <= o.max_bytes;
       bytes = o.step_factor ? (size_t)(bytes * o.step_factor) + (bytes == 0)
                             : bytes + o.step_bytes) {
    coll->sizes(bytes, esize, c.nranks, &count, &se, &re);
    coll->init(&c, send, count, o.root, 0);
    size_t algbytes = coll->algbytes(count, esize, c.nranks);
    perfResult out = measure(&c, coll, send, recv, count, re * esize, algbytes, 0, &fail);
    const char *algo = o.impl == PERF_IMPL_MPI ? "mpi" : tpudistLastAlgorithm(c.comm);
    char algoName[32];
    snprintf(algoName, sizeof(algoName), "%s", algo ? algo : "?");
    perfResult in = measure(&c, coll, send, recv, count, re * esize, algbytes, 1, &fail);
    if (c.rank == 0) {
      printf(" %12zu %13zu %9s %7s %5d", algbytes, count, dtypeName(o.dtype),
             coll->reduces ? opNames[o.op] : "none", coll->rooted ? o.root : -1);
      printResult(&out, o.check);
      printResult(&in, o.check);
      printf("  %s\n", algoName);
      fflush(stdout);
      if (csv)
        fprintf(csv, "%s,%s,%d,%zu,%.3f,%.4f,%.4f,%ld,%s\n", coll->name,
                o.impl == PERF_IMPL_MPI ? "mpi" : "tpu_dist", c.nranks, algbytes, out.us, out.algbw,
                out.busbw, out.wrong, algoName);
    }
    busbw_sum += out.busbw;
    rows++;
    if (bytes == o.max_bytes || (o.step_factor == 0 && o.step_bytes == 0)) break;
  }
  if (c.rank == 0) {
    printf("# Out of bounds values : %d %s\n", fail, fail ? "FAILED" : "OK");
    printf("# Avg bus bandwidth    : %.4f\n", rows ? busbw_sum / rows : 0.0);
  }
  if (csv) fclose(csv);
  free(send);
  free(recv);
  if (c.comm) tpudistCommDestroy(c.comm);
  MPI_Finalize();
  return fail ? 1 : 0;
}
