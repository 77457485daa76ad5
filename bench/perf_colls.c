/*
 * perf_colls.c - the collectives the *_perf tools measure: sizes, bus-bandwidth factors
 * (nccl-tests'), inputs, the call for each implementation (tpu_dist or MPI), and exact checks.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "perf.h"

#define ES(c) perfDtypeSize((c)->o->dtype)
#define AT(buf, c, i) ((char *)(buf) + (size_t)(i)*ES(c))
#define IS_MPI(c) ((c)->o->impl == PERF_IMPL_MPI)

static double factorOne(int n) {
  (void)n;
  return 1.0;
}
static double factorAllreduce(int n) {
  return n > 1 ? 2.0 * (n - 1) / n : 0.0;
}
static double factorGather(int n) {
  return n > 1 ? (double)(n - 1) / n : 0.0;
}

/* Input value of rank r, element i, for the run's op (products use +-1 and a few 2s: exact). */
static double input(const perfCtx *c, int r, size_t i) {
  if (c->o->op == tpudistProd) return (i + r) % 5 == 0 ? 2.0 : ((i * 3 + r) % 2 ? 1.0 : -1.0);
  double v = perfValue(r, i);
  tpudistDataType_t t = c->o->dtype;
  int isUnsigned = t == tpudistUint8 || t == tpudistUint32 || t == tpudistUint64;
  return isUnsigned ? fabs(v) : v;
}

static void fill(const perfCtx *c, void *buf, size_t n, int r, size_t salt) {
  for (size_t i = 0; i < n; i++) perfStore(buf, i, c->o->dtype, input(c, r, i + salt));
}

/* Expected reduced value of element i over all ranks, as the dtype holds it. */
static double reduced(const perfCtx *c, size_t i) {
  tpudistDataType_t t = c->o->dtype;
  double acc = input(c, 0, i);
  for (int r = 1; r < c->nranks; r++) {
    double v = input(c, r, i);
    switch (c->o->op) {
      case tpudistProd:
        acc *= v;
        break;
      case tpudistMax:
        acc = v > acc ? v : acc;
        break;
      case tpudistMin:
        acc = v < acc ? v : acc;
        break;
      default:
        acc += v;
        break;
    }
  }
  char tmp[8];
  perfStore(tmp, 0, t, acc); /* integer sums wrap here, as in the library */
  acc = perfLoad(tmp, 0, t);
  if (c->o->op == tpudistAvg) {
    if (t == tpudistFloat64)
      acc = acc / c->nranks;
    else if (t == tpudistFloat32 || t == tpudistFloat16 || t == tpudistBfloat16)
      acc = (float)acc / (float)c->nranks;
    else
      acc = trunc(acc / c->nranks);
    perfStore(tmp, 0, t, acc);
    acc = perfLoad(tmp, 0, t);
  }
  return acc;
}

static long countWrong(const perfCtx *c, const void *buf, size_t n, size_t off,
                       double (*want)(const perfCtx *, size_t)) {
  long wrong = 0;
  for (size_t i = 0; i < n; i++)
    if (perfLoad(buf, i, c->o->dtype) != want(c, i + off)) wrong++;
  return wrong;
}

/* ---- all-reduce ---- */
static void sizesFlat(size_t bytes, size_t es, int n, size_t *count, size_t *se, size_t *re) {
  (void)n;
  *count = *se = *re = bytes / es;
}
static size_t algFlat(size_t count, size_t es, int n) {
  (void)n;
  return count * es;
}
static void initFlat(const perfCtx *c, void *buf, size_t count, int root, int inplace) {
  (void)root;
  (void)inplace;
  fill(c, buf, count, c->rank, 0);
}
static int runAllreduce(const perfCtx *c, const void *s, void *r, size_t n, int root, int ip) {
  (void)root;
  if (IS_MPI(c))
    return MPI_Allreduce(ip ? MPI_IN_PLACE : s, r, (int)n, perfMpiType(c->o->dtype),
                         perfMpiOp(c->o->op), c->mcomm) != MPI_SUCCESS;
  return tpudistAllReduce(ip ? r : s, r, n, c->o->dtype, c->o->op, c->comm, NULL);
}
static long checkAllreduce(const perfCtx *c, const void *r, size_t n, int root) {
  (void)root;
  return countWrong(c, r, n, 0, reduced);
}
const perfColl perfAllReduce = {"all_reduce",   "allreduce",     1,        0,
                                sizesFlat,      factorAllreduce, initFlat, runAllreduce,
                                checkAllreduce, algFlat};

/* ---- reduce ---- */
static int runReduce(const perfCtx *c, const void *s, void *r, size_t n, int root, int ip) {
  if (IS_MPI(c))
    return MPI_Reduce((ip && c->rank == root) ? MPI_IN_PLACE : (ip ? r : s), r, (int)n,
                      perfMpiType(c->o->dtype), perfMpiOp(c->o->op), root, c->mcomm) != MPI_SUCCESS;
  return tpudistReduce(ip ? r : s, r, n, c->o->dtype, c->o->op, root, c->comm, NULL);
}
static long checkReduce(const perfCtx *c, const void *r, size_t n, int root) {
  return c->rank == root ? countWrong(c, r, n, 0, reduced) : 0;
}
const perfColl perfReduce = {"reduce",  "reduce", 1,         1,           sizesFlat,
                             factorOne, initFlat, runReduce, checkReduce, algFlat};

/* ---- broadcast ---- */
static int gRoot;
static double rootValue(const perfCtx *c, size_t i) {
  char tmp[8];
  perfStore(tmp, 0, c->o->dtype, input(c, gRoot, i));
  return perfLoad(tmp, 0, c->o->dtype);
}
static void initBcast(const perfCtx *c, void *buf, size_t count, int root, int inplace) {
  (void)inplace;
  if (c->rank == root)
    fill(c, buf, count, root, 0);
  else
    memset(buf, 0, count * ES(c));
}
static int runBcast(const perfCtx *c, const void *s, void *r, size_t n, int root, int ip) {
  if (IS_MPI(c)) {
    if (!ip && c->rank == root) memcpy(r, s, n * ES(c));
    return MPI_Bcast(r, (int)(n * ES(c)), MPI_BYTE, root, c->mcomm) != MPI_SUCCESS;
  }
  return tpudistBroadcast(ip ? r : s, r, n, c->o->dtype, root, c->comm, NULL);
}
static long checkBcast(const perfCtx *c, const void *r, size_t n, int root) {
  gRoot = root;
  return countWrong(c, r, n, 0, rootValue);
}
const perfColl perfBroadcast = {"broadcast", "broadcast", 0,        1,          sizesFlat,
                                factorOne,   initBcast,   runBcast, checkBcast, algFlat};

/* ---- all-gather: count per rank; recv holds n blocks ---- */
static void sizesGather(size_t bytes, size_t es, int n, size_t *count, size_t *se, size_t *re) {
  *count = bytes / es / n;
  *se = *count;
  *re = *count * n;
}
static size_t algGather(size_t count, size_t es, int n) {
  return count * es * n;
}
static void initAllgather(const perfCtx *c, void *buf, size_t count, int root, int inplace) {
  (void)root;
  fill(c, inplace ? AT(buf, c, c->rank * count) : buf, count, c->rank, 0);
}
static int runAllgather(const perfCtx *c, const void *s, void *r, size_t n, int root, int ip) {
  (void)root;
  if (IS_MPI(c))
    return MPI_Allgather(ip ? MPI_IN_PLACE : s, (int)(n * ES(c)), MPI_BYTE, r, (int)(n * ES(c)),
                         MPI_BYTE, c->mcomm) != MPI_SUCCESS;
  return tpudistAllGather(ip ? AT(r, c, c->rank * n) : s, r, n, c->o->dtype, c->comm, NULL);
}
static size_t gBlock;
static double blockValue(const perfCtx *c, size_t i) {
  char tmp[8];
  perfStore(tmp, 0, c->o->dtype, input(c, (int)(i / gBlock), i % gBlock));
  return perfLoad(tmp, 0, c->o->dtype);
}
static long checkAllgather(const perfCtx *c, const void *r, size_t n, int root) {
  (void)root;
  if (!n) return 0;
  gBlock = n;
  return countWrong(c, r, n * c->nranks, 0, blockValue);
}
const perfColl perfAllGather = {
    "all_gather", "allgather",    0,        0, sizesGather, factorGather, initAllgather,
    runAllgather, checkAllgather, algGather};

/* ---- reduce-scatter: count per rank received; send holds n blocks ---- */
static void sizesRS(size_t bytes, size_t es, int n, size_t *count, size_t *se, size_t *re) {
  *count = bytes / es / n;
  *se = *count * n;
  *re = *count * n; /* in place needs the full input in recv */
}
static void initRS(const perfCtx *c, void *buf, size_t count, int root, int inplace) {
  (void)root;
  (void)inplace;
  fill(c, buf, count * c->nranks, c->rank, 0);
}
static int runRS(const perfCtx *c, const void *s, void *r, size_t n, int root, int ip) {
  (void)root;
  if (IS_MPI(c)) {
    if (ip) return tpudistNotSupported; /* MPI's in-place layout differs from NCCL's */
    return MPI_Reduce_scatter_block(s, r, (int)n, perfMpiType(c->o->dtype), perfMpiOp(c->o->op),
                                    c->mcomm) != MPI_SUCCESS;
  }
  return tpudistReduceScatter(ip ? r : s, ip ? AT(r, c, c->rank * n) : r, n, c->o->dtype, c->o->op,
                              c->comm, NULL);
}
static int gInplace;
static long checkRS(const perfCtx *c, const void *r, size_t n, int root) {
  (void)root;
  const void *out = gInplace ? AT(r, c, c->rank * n) : r;
  return countWrong(c, out, n, c->rank * n, reduced);
}
static int runRSTracked(const perfCtx *c, const void *s, void *r, size_t n, int root, int ip) {
  gInplace = ip;
  return runRS(c, s, r, n, root, ip);
}
const perfColl perfReduceScatter = {"reduce_scatter", "reducescatter", 1,      0,
                                    sizesRS,          factorGather,    initRS, runRSTracked,
                                    checkRS,          algGather};

/* ---- all-to-all: count per peer ---- */
static void sizesA2A(size_t bytes, size_t es, int n, size_t *count, size_t *se, size_t *re) {
  *count = bytes / es / n;
  *se = *re = *count * n;
}
static void initA2A(const perfCtx *c, void *buf, size_t count, int root, int inplace) {
  (void)root;
  (void)inplace;
  for (int p = 0; p < c->nranks; p++) fill(c, AT(buf, c, p * count), count, c->rank * 1000 + p, 0);
}
static int runA2A(const perfCtx *c, const void *s, void *r, size_t n, int root, int ip) {
  (void)root;
  if (ip) return tpudistNotSupported;
  if (IS_MPI(c))
    return MPI_Alltoall(s, (int)(n * ES(c)), MPI_BYTE, r, (int)(n * ES(c)), MPI_BYTE, c->mcomm) !=
           MPI_SUCCESS;
  return tpudistAllToAll(s, r, n, c->o->dtype, c->comm, NULL);
}
static int gRank;
static double a2aValue(const perfCtx *c, size_t i) {
  char tmp[8];
  perfStore(tmp, 0, c->o->dtype, input(c, (int)(i / gBlock) * 1000 + gRank, i % gBlock));
  return perfLoad(tmp, 0, c->o->dtype);
}
static long checkA2A(const perfCtx *c, const void *r, size_t n, int root) {
  (void)root;
  if (!n) return 0;
  gBlock = n;
  gRank = c->rank;
  return countWrong(c, r, n * c->nranks, 0, a2aValue);
}
const perfColl perfAllToAll = {"alltoall",   "alltoall", 0,      0,        sizesA2A,
                               factorGather, initA2A,    runA2A, checkA2A, algGather};

/* ---- send/recv: each rank sends to rank+1 and receives from rank-1 ---- */
static int runSendrecv(const perfCtx *c, const void *s, void *r, size_t n, int root, int ip) {
  (void)root;
  if (ip) return tpudistNotSupported;
  int next = (c->rank + 1) % c->nranks, prev = (c->rank + c->nranks - 1) % c->nranks;
  if (IS_MPI(c))
    return MPI_Sendrecv(s, (int)(n * ES(c)), MPI_BYTE, next, 7, r, (int)(n * ES(c)), MPI_BYTE, prev,
                        7, c->mcomm, MPI_STATUS_IGNORE) != MPI_SUCCESS;
  int res = tpudistGroupStart();
  if (!res) res = tpudistSend(s, n, c->o->dtype, next, c->comm, NULL);
  if (!res) res = tpudistRecv(r, n, c->o->dtype, prev, c->comm, NULL);
  int end = tpudistGroupEnd();
  return res ? res : end;
}
static double prevValue(const perfCtx *c, size_t i) {
  char tmp[8];
  perfStore(tmp, 0, c->o->dtype, input(c, (c->rank + c->nranks - 1) % c->nranks, i));
  return perfLoad(tmp, 0, c->o->dtype);
}
static long checkSendrecv(const perfCtx *c, const void *r, size_t n, int root) {
  (void)root;
  return countWrong(c, r, n, 0, prevValue);
}
const perfColl perfSendRecv = {"sendrecv",    "sendrecv", 0,        0,
                               sizesFlat,     factorOne,  initFlat, runSendrecv,
                               checkSendrecv, algFlat};
