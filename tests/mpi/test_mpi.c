/*
 * test_mpi.c - every collective checked exactly against a local reference, under mpirun.
 *
 * Each rank regenerates every rank's input (mpi_ref.h), so the expected output is computed
 * locally. Communicators: world, halves (split), reversed order (split with key = -rank), odd/even,
 * and with --split-every K blocks of K consecutive ranks; each split is named after its kind
 * ("halves", "reversed", "odd-even", "blocks") in logs.
 * Default set: every dtype x op at counts {0, 1, 7, 1000} on world (in and out of place),
 * {int32, float32, bfloat16} x {sum, max} at 1 MiB + 3 elements and 16 MiB on world, non-reducing
 * collectives per element size, all-to-all-v, point to point (group ring, any source), requests,
 * random float inputs bit-identical on every rank, and argument errors. TD_FULL=1: the full cross
 * on every communicator. Buffers are allocated and touched once, then reused.
 *
 *   mpirun -np N tests/mpi/test_mpi [--expect-algo allreduce=torus[,alltoall=hier...]
 *                                    [--expect-from BYTES] [--expect-other-below]]
 *                                    [--expect-on world[,halves,...]] [--split-every K]
 *   (--expect-algo: collectives of those kinds on the world communicator, or on those
 *   --expect-on names, from BYTES, default 1 MiB, must report those algorithms through
 *   tpudistLastAlgorithm; --expect-other-below: and smaller ones of those kinds must report
 *   another one)
 */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mpi_ref.h"
#include "tpu_dist.h"

typedef struct {
  tpudistComm_t comm;
  int rank, n;
  const char *name;
} Ctx;

static char *gS, *gR, *gE;
static size_t gCap;
static long gFail, gChecks;
static int gWorldRank, gFull;
static uint64_t gSeed = 12345;
static char gExpect[256];                 /* --expect-algo: ",coll=algo,coll=algo," */
static size_t gExpectMinBytes = 1u << 20; /* --expect-algo checks sizes from here */
static char gExpectOn[128] = ",world,";   /* --expect-on: the communicators it checks */
static int gExpectOtherBelow;             /* --expect-other-below: smaller sizes use another */
static int gSplitEvery;                   /* --split-every K: also blocks of K ranks */
static int gNumSubs = 3;

static const char *dtName(int dt) {
  static const char *n[] = {"int8",   "uint8",   "int32",   "uint32",  "int64",
                            "uint64", "float16", "float32", "float64", "bfloat16"};
  return n[dt];
}
static const char *opName(int op) {
  static const char *n[] = {"sum", "prod", "max", "min", "avg"};
  return n[op];
}

static int ok(const Ctx *c, tpudistResult_t r, const char *what) {
  gChecks++;
  if (r == tpudistSuccess) return 1;
  gFail++;
  fprintf(stderr, "[%d] %s %s: %s (%s)\n", gWorldRank, c->name, what, tpudistGetErrorString(r),
          tpudistGetLastError(c->comm));
  tpudistResult_t async = tpudistSuccess;
  if (tpudistCommGetAsyncError(c->comm, &async) == tpudistSuccess && async != tpudistSuccess) {
    fprintf(stderr, "[%d] %s is broken (%s): aborting the job in 10 s\n", gWorldRank, c->name,
            tpudistGetErrorString(async));
    sleep(10); /* lets the other ranks report what they wait for */
    MPI_Abort(MPI_COMM_WORLD, 3);
  }
  return 0;
}

static void compare(const Ctx *c, const char *what, const void *got, const void *exp, size_t n,
                    size_t esize) {
  gChecks++;
  if (!n || memcmp(got, exp, n * esize) == 0) return;
  gFail++;
  for (size_t i = 0; i < n; i++) {
    if (memcmp((const char *)got + i * esize, (const char *)exp + i * esize, esize) == 0) continue;
    uint64_t g = 0, e = 0;
    memcpy(&g, (const char *)got + i * esize, esize);
    memcpy(&e, (const char *)exp + i * esize, esize);
    fprintf(stderr, "[%d] %s rank %d/%d %s: element %zu of %zu: got 0x%llx expected 0x%llx\n",
            gWorldRank, c->name, c->rank, c->n, what, i, n, (unsigned long long)g,
            (unsigned long long)e);
    return;
  }
}

static void raw(void *buf, size_t i, size_t esize, uint64_t seed, int r, size_t gi) {
  uint64_t h = refHash(seed ^ 0x5a5a, r, gi);
  memcpy((char *)buf + i * esize, &h, esize);
}

static void checkAlgo(const Ctx *c, const char *coll, size_t bytes) {
  char key[32], on[32], *at;
  snprintf(key, sizeof(key), ",%s=", coll);
  snprintf(on, sizeof(on), ",%s,", c->name);
  if (!(at = strstr(gExpect, key)) || !strstr(gExpectOn, on)) return;
  const char *want = at + strlen(key), *a = tpudistLastAlgorithm(c->comm);
  size_t len = strcspn(want, ",");
  int same = strlen(a) == len && !strncmp(a, want, len);
  if (bytes < gExpectMinBytes) {
    if (!gExpectOtherBelow) return;
    gChecks++;
    if (same) {
      gFail++;
      fprintf(stderr, "[%d] %s %s of %zu bytes used %s, expected another below %zu bytes\n",
              gWorldRank, c->name, coll, bytes, a, gExpectMinBytes);
    }
    return;
  }
  gChecks++;
  if (!same) {
    gFail++;
    fprintf(stderr, "[%d] %s %s of %zu bytes used %s, expected %.*s\n", gWorldRank, c->name, coll,
            bytes, a, (int)len, want);
  }
}

/* ---- reducing collectives ---------------------------------------------------------------- */

static void tAllreduce(const Ctx *c, int dt, int op, size_t count, int inplace) {
  char what[128];
  size_t es = refSize(dt);
  uint64_t seed = ++gSeed;
  snprintf(what, sizeof(what), "allreduce %s %s n=%zu%s", dtName(dt), opName(op), count,
           inplace ? " inplace" : "");
  char *in = inplace ? gR : gS;
  for (size_t i = 0; i < count; i++) refFill(in, i, seed, c->rank, dt, op, c->n);
  for (size_t i = 0; i < count; i++) refReduce(gE, i, seed, dt, op, c->n);
  if (ok(c, tpudistAllReduce(in, gR, count, dt, op, c->comm, NULL), what))
    compare(c, what, gR, gE, count, es);
  checkAlgo(c, "allreduce", count * es);
}

static void tReduce(const Ctx *c, int dt, int op, size_t count, int root, int inplace) {
  char what[128];
  size_t es = refSize(dt);
  uint64_t seed = ++gSeed;
  snprintf(what, sizeof(what), "reduce %s %s n=%zu root %d%s", dtName(dt), opName(op), count, root,
           inplace ? " inplace" : "");
  int me = c->rank == root;
  char *in = inplace && me ? gR : gS;
  for (size_t i = 0; i < count; i++) refFill(in, i, seed, c->rank, dt, op, c->n);
  for (size_t i = 0; me && i < count; i++) refReduce(gE, i, seed, dt, op, c->n);
  /* non-root ranks pass recvbuff NULL when out of place */
  void *out = me || inplace ? gR : NULL;
  if (ok(c, tpudistReduce(in, out, count, dt, op, root, c->comm, NULL), what) && me)
    compare(c, what, gR, gE, count, es);
  checkAlgo(c, "reduce", count * es);
}

static void tReduceScatter(const Ctx *c, int dt, int op, size_t count, int inplace) {
  char what[128];
  size_t es = refSize(dt), total = count * (size_t)c->n;
  uint64_t seed = ++gSeed;
  snprintf(what, sizeof(what), "reducescatter %s %s n=%zu%s", dtName(dt), opName(op), count,
           inplace ? " inplace" : "");
  for (size_t i = 0; i < total; i++) refFill(gS, i, seed, c->rank, dt, op, c->n);
  /* element j of this rank's block is global element rank*count + j (gi >= j: moving is safe) */
  for (size_t j = 0; j < count; j++) {
    size_t gi = (size_t)c->rank * count + j;
    char acc[8];
    refReduce(gE, gi, seed, dt, op, c->n);
    memcpy(acc, gE + gi * es, es);
    memcpy(gE + j * es, acc, es);
  }
  char *out = inplace ? gS + (size_t)c->rank * count * es : gR;
  if (ok(c, tpudistReduceScatter(gS, out, count, dt, op, c->comm, NULL), what))
    compare(c, what, out, gE, count, es);
  checkAlgo(c, "reducescatter", total * es);
}

/* ---- data movement ----------------------------------------------------------------------- */

static void tBroadcast(const Ctx *c, int dt, size_t count, int root, int inplace) {
  char what[128];
  size_t es = refSize(dt);
  uint64_t seed = ++gSeed;
  snprintf(what, sizeof(what), "broadcast %s n=%zu root %d%s", dtName(dt), count, root,
           inplace ? " inplace" : "");
  char *in = inplace ? gR : gS;
  if (c->rank == root)
    for (size_t i = 0; i < count; i++) raw(in, i, es, seed, root, i);
  for (size_t i = 0; i < count; i++) raw(gE, i, es, seed, root, i);
  if (c->rank != root) memset(gR, 0xee, count * es);
  const void *send = c->rank == root || inplace ? in : NULL;
  if (ok(c, tpudistBroadcast(send, gR, count, dt, root, c->comm, NULL), what))
    compare(c, what, gR, gE, count, es);
  checkAlgo(c, "broadcast", count * es);
}

static void tAllgather(const Ctx *c, int dt, size_t count, int inplace) {
  char what[128];
  size_t es = refSize(dt);
  uint64_t seed = ++gSeed;
  snprintf(what, sizeof(what), "allgather %s n=%zu%s", dtName(dt), count,
           inplace ? " inplace" : "");
  char *in = inplace ? gR + (size_t)c->rank * count * es : gS;
  for (size_t i = 0; i < count; i++) raw(in, i, es, seed, c->rank, i);
  for (int r = 0; r < c->n; r++)
    for (size_t i = 0; i < count; i++) raw(gE, (size_t)r * count + i, es, seed, r, i);
  if (ok(c, tpudistAllGather(in, gR, count, dt, c->comm, NULL), what))
    compare(c, what, gR, gE, count * (size_t)c->n, es);
  checkAlgo(c, "allgather", count * es * (size_t)c->n);
}

static void tAlltoall(const Ctx *c, int dt, size_t count) {
  char what[128];
  size_t es = refSize(dt);
  uint64_t seed = ++gSeed;
  snprintf(what, sizeof(what), "alltoall %s n=%zu", dtName(dt), count);
  for (size_t i = 0; i < count * (size_t)c->n; i++) raw(gS, i, es, seed, c->rank, i);
  for (int p = 0; p < c->n; p++)
    for (size_t j = 0; j < count; j++)
      raw(gE, (size_t)p * count + j, es, seed, p, (size_t)c->rank * count + j);
  if (ok(c, tpudistAllToAll(gS, gR, count, dt, c->comm, NULL), what))
    compare(c, what, gR, gE, count * (size_t)c->n, es);
  checkAlgo(c, "alltoall", count * es * (size_t)c->n);
}

/* Counts from s to d; send blocks packed in reverse peer order with one-element gaps. */
static size_t vCount(uint64_t seed, int s, int d, size_t maxc) {
  uint64_t h = refHash(seed, s, (size_t)d);
  return h % 5 == 0 ? 0 : (size_t)(h % (maxc + 1));
}

static void tAlltoallv(const Ctx *c, int dt, size_t maxc) {
  char what[128];
  int n = c->n, me = c->rank;
  size_t es = refSize(dt), sc[64], sd[64], rc[64], rd[64], got[64], off = 0;
  uint64_t seed = ++gSeed;
  snprintf(what, sizeof(what), "alltoallv %s max=%zu", dtName(dt), maxc);
  for (int d = n - 1; d >= 0; d--) {
    sc[d] = vCount(seed, me, d, maxc);
    sd[d] = off;
    off += sc[d] + 1;
  }
  off = 0;
  for (int s = 0; s < n; s++) {
    rc[s] = vCount(seed, s, me, maxc);
    rd[s] = off;
    off += rc[s] + 2;
  }
  for (int d = 0; d < n; d++)
    for (size_t j = 0; j < sc[d]; j++) raw(gS, sd[d] + j, es, seed, me, (size_t)d * 100000 + j);
  memset(gR, 0x77, off * es);
  memset(gE, 0x77, off * es);
  for (int s = 0; s < n; s++)
    for (size_t j = 0; j < rc[s]; j++) raw(gE, rd[s] + j, es, seed, s, (size_t)me * 100000 + j);
  if (ok(c, tpudistAllToAllCounts(sc, got, c->comm, NULL), "alltoallcounts"))
    compare(c, "alltoallcounts", got, rc, (size_t)n, sizeof(size_t));
  if (ok(c, tpudistAllToAllv(gS, sc, sd, gR, rc, rd, dt, c->comm, NULL), what))
    compare(c, what, gR, gE, off, es);
  checkAlgo(c, "alltoallv", off * es);
}

/* MoE dispatch: one hot expert (the last rank) receives most tokens, most other counts are zero;
 * each rank knows only its send counts, learns its receive counts with the counts exchange, then
 * sizes its receive layout from them (counts first, then sized buffers). */
static void tMoeDispatch(const Ctx *c, int dt, size_t tokens) {
  char what[128];
  int n = c->n, me = c->rank, hot = n - 1;
  size_t es = refSize(dt), sc[64], sd[64], rc[64], rd[64], off = 0;
  uint64_t seed = ++gSeed;
  snprintf(what, sizeof(what), "moe dispatch %s tokens=%zu", dtName(dt), tokens);
  for (int d = 0; d < n; d++) {
    uint64_t h = refHash(seed, me, (size_t)d);
    sc[d] = d == hot ? tokens : (h % 4 == 0 ? h % 7 : 0);
    sd[d] = off;
    off += sc[d];
  }
  if (!ok(c, tpudistAllToAllCounts(sc, rc, c->comm, NULL), "moe counts")) return;
  off = 0;
  for (int s = 0; s < n; s++) {
    rd[s] = off;
    off += rc[s];
  }
  for (int d = 0; d < n; d++)
    for (size_t j = 0; j < sc[d]; j++) raw(gS, sd[d] + j, es, seed, me, (size_t)d * 100000 + j);
  for (int s = 0; s < n; s++) {
    uint64_t h = refHash(seed, s, (size_t)me);
    size_t want = me == hot ? tokens : (h % 4 == 0 ? h % 7 : 0);
    gChecks++;
    if (rc[s] != want) {
      gFail++;
      fprintf(stderr, "[%d] %s: counts from %d: got %zu want %zu\n", gWorldRank, what, s, rc[s],
              want);
      return;
    }
    for (size_t j = 0; j < rc[s]; j++) raw(gE, rd[s] + j, es, seed, s, (size_t)me * 100000 + j);
  }
  memset(gR, 0x55, off * es);
  if (ok(c, tpudistAllToAllv(gS, sc, sd, gR, rc, rd, dt, c->comm, NULL), what))
    compare(c, what, gR, gE, off, es);
}

/* ---- point to point and requests --------------------------------------------------------- */

static void tSendRecv(const Ctx *c, int dt, size_t count) {
  char what[128];
  size_t es = refSize(dt);
  uint64_t seed = ++gSeed;
  int n = c->n, next = (c->rank + 1) % n, prev = (c->rank + n - 1) % n;
  snprintf(what, sizeof(what), "sendrecv ring %s n=%zu", dtName(dt), count);
  for (size_t i = 0; i < count; i++) raw(gS, i, es, seed, c->rank, i);
  for (size_t i = 0; i < count; i++) raw(gE, i, es, seed, prev, i);
  tpudistGroupStart();
  tpudistResult_t r1 = tpudistSend(gS, count, dt, next, c->comm, NULL);
  tpudistResult_t r2 = tpudistRecv(gR, count, dt, prev, c->comm, NULL);
  tpudistResult_t r3 = tpudistGroupEnd();
  if (ok(c, r1 ? r1 : r2 ? r2 : r3, what)) compare(c, what, gR, gE, count, es);
  /* any source: everyone sends to rank 0, which learns the senders from the requests */
  snprintf(what, sizeof(what), "recv any-source %s n=%zu", dtName(dt), count);
  if (c->rank != 0) {
    ok(c, tpudistSend(gS, count, dt, 0, c->comm, NULL), what);
    return;
  }
  int seen[64] = {0};
  for (int k = 1; k < n; k++) {
    tpudistRequest_t req;
    int src = -1;
    if (!ok(c, tpudistRecv(gR, count, dt, tpudistAnySource, c->comm, &req), what)) return;
    /* the source is asked before Wait, which frees the request */
    if (!ok(c, tpudistRequestSource(req, &src), "RequestSource")) return;
    if (!ok(c, tpudistWait(req), what)) return;
    gChecks++;
    if (src <= 0 || src >= n || seen[src]++) {
      gFail++;
      fprintf(stderr, "[%d] %s: bad or repeated source %d\n", gWorldRank, what, src);
      return;
    }
    for (size_t i = 0; i < count; i++) raw(gE, i, es, seed, src, i);
    compare(c, what, gR, gE, count, es);
  }
}

/* Inputs of k all-reduces of cnt elements each, back to back in gS; their seeds in seed[]. */
static void fillMany(const Ctx *c, int k, size_t cnt, int dt, int op, uint64_t *seed) {
  for (int j = 0; j < k; j++) {
    seed[j] = ++gSeed;
    for (size_t i = 0; i < cnt; i++)
      refFill(gS + (size_t)j * cnt * refSize(dt), i, seed[j], c->rank, dt, op, c->n);
  }
}

/* Issues all-reduce j of fillMany's inputs into its place in gR (non-blocking). */
static int issueOne(const Ctx *c, int j, size_t cnt, int dt, int op, tpudistRequest_t *req,
                    const char *what) {
  size_t off = (size_t)j * cnt * refSize(dt);
  return ok(c, tpudistAllReduce(gS + off, gR + off, cnt, dt, op, c->comm, req), what);
}

/* The k results in gR, exact. */
static void checkMany(const Ctx *c, const char *what, int k, size_t cnt, int dt, int op,
                      const uint64_t *seed) {
  for (int j = 0; j < k; j++) {
    for (size_t i = 0; i < cnt; i++) refReduce(gE, i, seed[j], dt, op, c->n);
    compare(c, what, gR + (size_t)j * cnt * refSize(dt), gE, cnt, refSize(dt));
  }
}

static void tRequests(const Ctx *c) {
  enum { K = 4, CNT = 333 };
  tpudistRequest_t req[K];
  uint64_t seed[K];
  int dt = tpudistInt32, op = tpudistSum;
  fillMany(c, K, CNT, dt, op, seed);
  for (int k = 0; k < K; k++)
    if (!issueOne(c, k, CNT, dt, op, &req[k], "nonblocking allreduce")) return;
  for (int k = K - 1; k >= 0; k--) {
    int done = 0;
    if (k % 2) {
      while (!done)
        if (tpudistTest(req[k], &done) != tpudistSuccess && !ok(c, tpudistInternalError, "test"))
          return;
    } else if (!ok(c, tpudistWait(req[k]), "wait")) {
      return;
    }
  }
  checkMany(c, "nonblocking allreduce", K, CNT, dt, op, seed);
}

/* Many small all-reduces in flight at once (the shm slot path reuses each slot every second
 * operation), half of them in one group, waited for in reverse order: results exact. */
static void tSmallBurst(const Ctx *c) {
  enum { K = 24, CNT = 5 };
  tpudistRequest_t req[K];
  uint64_t seed[K];
  int dt = tpudistInt64, op = tpudistSum;
  fillMany(c, K, CNT, dt, op, seed);
  if (!ok(c, tpudistGroupStart(), "group start")) return;
  for (int k = 0; k < K; k++) {
    if (k == K / 2 && !ok(c, tpudistGroupEnd(), "group end")) return;
    if (!issueOne(c, k, CNT, dt, op, &req[k], "small nonblocking allreduce")) return;
  }
  for (int k = K - 1; k >= 0; k--)
    if (!ok(c, tpudistWait(req[k]), "wait small")) return;
  checkMany(c, "small nonblocking allreduce", K, CNT, dt, op, seed);
}

/* Random float32 inputs (any reduction order): every rank must get the same bits. */
static void tFloatIdentical(const Ctx *c, size_t count) {
  uint64_t seed = ++gSeed, h = 1469598103934665603ull;
  float *in = (float *)gS;
  for (size_t i = 0; i < count; i++) {
    uint64_t x = refHash(seed, c->rank, i);
    in[i] = (float)((double)(x >> 11) / 9007199254740992.0 * 2.0 - 1.0) * 1000.0f;
  }
  if (!ok(c, tpudistAllReduce(in, gR, count, tpudistFloat32, tpudistSum, c->comm, NULL),
          "float hash"))
    return;
  for (size_t i = 0; i < count * 4; i++) h = (h ^ (unsigned char)gR[i]) * 1099511628211ull;
  uint64_t all[256];
  MPI_Allgather(&h, 1, MPI_UINT64_T, all, 1, MPI_UINT64_T, MPI_COMM_WORLD);
  int n;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  gChecks++;
  for (int r = 1; r < n; r++)
    if (all[r] != all[0]) {
      gFail++;
      fprintf(stderr, "[%d] float all-reduce results differ between ranks 0 and %d\n", gWorldRank,
              r);
      return;
    }
}

static void expectErr(const Ctx *c, tpudistResult_t got, tpudistResult_t want, const char *what) {
  gChecks++;
  if (got == want && tpudistGetLastError(c->comm)[0]) return;
  gFail++;
  fprintf(stderr, "[%d] %s: got %d, expected %d\n", gWorldRank, what, got, want);
}

static void tErrors(const Ctx *c) {
  tpudistComm_t cm = c->comm;
  for (int r = -1; r <= tpudistNumResults + 5; r++) {
    const char *s = tpudistGetErrorString((tpudistResult_t)r);
    gChecks++;
    if (!s || !*s) {
      gFail++;
      fprintf(stderr, "[%d] GetErrorString(%d) empty\n", gWorldRank, r);
    }
  }
  int ver = 0;
  gChecks++;
  if (tpudistGetVersion(&ver) != tpudistSuccess || ver != TPUDIST_VERSION_CODE) {
    gFail++;
    fprintf(stderr, "[%d] GetVersion gave %d\n", gWorldRank, ver);
  }
  expectErr(c, tpudistAllReduce(NULL, gR, 4, tpudistInt32, tpudistSum, cm, NULL),
            tpudistInvalidArgument, "null send");
  expectErr(c, tpudistAllReduce(gS, gR, 4, (tpudistDataType_t)42, tpudistSum, cm, NULL),
            tpudistInvalidArgument, "bad dtype");
  expectErr(c, tpudistAllReduce(gS, gR, 4, tpudistInt32, (tpudistRedOp_t)9, cm, NULL),
            tpudistInvalidArgument, "bad op");
  expectErr(c, tpudistAllReduce(gS, gR, SIZE_MAX / 2, tpudistInt32, tpudistSum, cm, NULL),
            tpudistInvalidArgument, "overflow");
  expectErr(c, tpudistBroadcast(gS, gR, 4, tpudistInt32, c->n, cm, NULL), tpudistInvalidArgument,
            "root range");
  expectErr(c, tpudistSend(gS, 4, tpudistInt32, -3, cm, NULL), tpudistInvalidArgument,
            "peer range");
  expectErr(c, tpudistAllReduce(gS, gS + 4, 4, tpudistInt32, tpudistSum, cm, NULL),
            tpudistInvalidArgument, "overlap");
  expectErr(c, tpudistWait(NULL), tpudistInvalidArgument, "wait null");
  gChecks++;
  if (tpudistGroupEnd() != tpudistInvalidUsage) {
    gFail++;
    fprintf(stderr, "[%d] GroupEnd without start accepted\n", gWorldRank);
  }
  /* use after destroy */
  tpudistComm_t sub = NULL;
  if (!ok(c, tpudistCommSplit(cm, 0, c->rank, &sub, NULL), "split for destroy")) return;
  if (!ok(c, tpudistCommDestroy(sub), "destroy")) return;
  gChecks++;
  if (tpudistAllReduce(gS, gR, 4, tpudistInt32, tpudistSum, sub, NULL) != tpudistInvalidUsage) {
    gFail++;
    fprintf(stderr, "[%d] call after destroy not rejected\n", gWorldRank);
  }
}

/* A receive nobody sends on a one-rank communicator: times out, naming op, sequence, peer. */
static void tTimeout(const Ctx *c) {
  tpudistComm_t self = NULL;
  tpudistConfig_t cfg = TPUDIST_CONFIG_INITIALIZER;
  cfg.timeoutMs = 300;
  if (!ok(c, tpudistCommSplit(c->comm, c->rank, 0, &self, &cfg), "split self")) return;
  tpudistResult_t r = tpudistRecv(gR, 4, tpudistInt32, 0, self, NULL), a = tpudistSuccess;
  const char *msg = tpudistGetLastError(self);
  gChecks++;
  if (r != tpudistTimeout || !strstr(msg, "recv") || !strstr(msg, "rank 0") ||
      tpudistCommGetAsyncError(self, &a) != tpudistSuccess || a != tpudistTimeout) {
    gFail++;
    fprintf(stderr, "[%d] timeout: got %d '%s' (async %d)\n", gWorldRank, r, msg, a);
  }
  /* a broken communicator fails later calls at once and still destroys */
  gChecks++;
  if (tpudistAllReduce(gS, gR, 4, tpudistInt32, tpudistSum, self, NULL) == tpudistSuccess) {
    gFail++;
    fprintf(stderr, "[%d] call on a timed-out communicator succeeded\n", gWorldRank);
  }
  ok(c, tpudistCommDestroy(self), "destroy after timeout");
}

/* TPU_DIST_CHECK=1: ranks calling different collectives get tpudistInvalidUsage, no deadlock. */
static void tMismatch(const Ctx *c) {
  const char *chk = getenv("TPU_DIST_CHECK");
  if (!chk || atoi(chk) != 1 || c->n < 2) return;
  tpudistComm_t sub = NULL;
  if (!ok(c, tpudistCommSplit(c->comm, 0, c->rank, &sub, NULL), "split for mismatch")) return;
  tpudistResult_t r = c->rank == 0
                          ? tpudistAllReduce(gS, gR, 5, tpudistInt32, tpudistSum, sub, NULL)
                          : tpudistAllReduce(gS, gR, 6, tpudistFloat32, tpudistMax, sub, NULL);
  gChecks++;
  if (r != tpudistInvalidUsage || !strstr(tpudistGetLastError(sub), "mismatch")) {
    gFail++;
    fprintf(stderr, "[%d] mismatch not detected: %d '%s'\n", gWorldRank, r,
            tpudistGetLastError(sub));
  }
  ok(c, tpudistCommDestroy(sub), "destroy after mismatch");
}

static double nowMs(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* One all-to-all-v where rank 0 expects `want` elements from rank `from` (1, or 0 itself), which
 * sends `sent`; every other pair agrees. One phase: rank 0 gets tpudistInvalidUsage naming the peer
 * and its count; the sender completes, or (single-copy shm) gets tpudistInvalidUsage naming rank
 * 0; all other blocks arrive exactly. Two phases: rank 0 gets tpudistInvalidArgument from the
 * count matrix and its communicator breaks; the others fail with tpudistRemoteError (or complete).
 * Either way no call waits anywhere near the timeout. */
static void a2avMismatchCase(const Ctx *c, int from, size_t sent, size_t want, int timeout_ms,
                             int two_phase) {
  char what[128], needle[64];
  int n = c->n, me = c->rank, dt = tpudistInt32;
  size_t es = refSize(dt), sc[64], sd[64], rc[64], rd[64], off = 0;
  uint64_t seed = ++gSeed;
  snprintf(what, sizeof(what), "alltoallv mismatch %zu sent by %d, %zu expected by 0", sent, from,
           want);
  for (int d = 0; d < n; d++) {
    sc[d] = me == from && d == 0 ? sent : (size_t)(me + 2 * d) % 4 + 1;
    sd[d] = off;
    off += sc[d];
  }
  for (int d = 0; d < n; d++)
    for (size_t j = 0; j < sc[d]; j++) raw(gS, sd[d] + j, es, seed, me, (size_t)d * 100000 + j);
  off = 0;
  for (int s = 0; s < n; s++) {
    rc[s] = me == 0 && s == from ? want : (size_t)(s + 2 * me) % 4 + 1;
    rd[s] = off;
    off += rc[s];
  }
  memset(gR, 0x77, off * es);
  double t0 = nowMs();
  tpudistResult_t r = tpudistAllToAllv(gS, sc, sd, gR, rc, rd, dt, c->comm, NULL);
  double ms = nowMs() - t0;
  const char *msg = tpudistGetLastError(c->comm);
  int good = 1;
  if (two_phase) {
    snprintf(needle, sizeof(needle), "rank %d sends %zu elements to rank 0, which expects %zu",
             from, sent, want);
    good = me == 0 ? r == tpudistInvalidArgument && strstr(msg, needle)
                   : r == tpudistRemoteError || r == tpudistSuccess;
  } else if (me == 0) {
    snprintf(needle, sizeof(needle), from ? "recvcounts[1] = %zu" : "expects %zu", want);
    good =
        r == tpudistInvalidUsage && strstr(msg, from ? "rank 1" : "rank 0") && strstr(msg, needle);
  } else if (me == from) {
    snprintf(needle, sizeof(needle), "sendcounts[0] = %zu", sent);
    good = r == tpudistSuccess ||
           (r == tpudistInvalidUsage && strstr(msg, "rank 0") && strstr(msg, needle));
  } else {
    good = r == tpudistSuccess;
  }
  gChecks++;
  if (!good || ms > timeout_ms / 4) {
    gFail++;
    fprintf(stderr, "[%d] %s: rank %d got %d '%s' after %.0f ms (timeout %d ms)\n", gWorldRank,
            what, me, r, msg, ms, timeout_ms);
  }
  for (int s = 0; r == tpudistSuccess || !two_phase ? s < n : 0; s++) {
    if (me == 0 && s == from) continue;
    for (size_t j = 0; j < rc[s]; j++) raw(gE, j, es, seed, s, (size_t)me * 100000 + j);
    compare(c, what, gR + rd[s] * es, gE, rc[s], es);
  }
}

/* Single-phase all-to-all-v (pairwise, direct) with counts that disagree: empty message where
 * data is expected, data where nothing is, a single-copy sized message, counts to self. Each call
 * errs on the disagreeing ranks only, within a quarter of the timeout, and the communicator then
 * runs exact collectives again. Two phases (TPU_DIST_ALGO forces an algorithm that needs the whole
 * count matrix, torus or hier, and the split accepts it): one such call, which breaks the
 * communicator (promptly on every rank). */
static void tAlltoallvMismatch(const Ctx *c) {
  tpudistComm_t sub = NULL;
  tpudistConfig_t cfg = TPUDIST_CONFIG_INITIALIZER;
  cfg.timeoutMs = 20000;
  if (!ok(c, tpudistCommSplit(c->comm, 0, c->rank, &sub, &cfg), "split for alltoallv mismatch"))
    return;
  Ctx s = {sub, c->rank, c->n, "a2av-mismatch"};
  tAlltoallv(&s, tpudistInt32, 9); /* exact, and names the algorithm the split runs */
  const char *algo = tpudistLastAlgorithm(sub);
  int two = (!strcmp(algo, "torus") || !strcmp(algo, "hier")) && c->n >= 2;
  if (two) {
    a2avMismatchCase(&s, 1, 2, 3, cfg.timeoutMs, 1);
    tpudistCommDestroy(sub); /* broken: its result is the failure's */
    return;
  }
  if (c->n >= 2) {
    a2avMismatchCase(&s, 1, 0, 3, cfg.timeoutMs, 0);
    a2avMismatchCase(&s, 1, 5, 0, cfg.timeoutMs, 0);
    a2avMismatchCase(&s, 1, 70000, 70001, cfg.timeoutMs, 0);
    a2avMismatchCase(&s, 1, 70001, 7, cfg.timeoutMs, 0);
  }
  a2avMismatchCase(&s, 0, 4, 6, cfg.timeoutMs, 0);
  tAlltoallv(&s, tpudistInt32, 9);
  tAllreduce(&s, tpudistInt32, tpudistSum, 1000, 0);
  ok(c, tpudistCommDestroy(sub), "destroy after alltoallv mismatch");
}

/* Small all-reduces of different lengths (the shm slot path, used without TPU_DIST_CHECK on one
 * host): every rank fails, none hangs, and some rank names the lengths (tpudistInvalidUsage; the
 * others may first see that rank release the communicator). */
static void tSmallMismatch(const Ctx *c) {
  const char *chk = getenv("TPU_DIST_CHECK"), *tp = getenv("TPU_DIST_TRANSPORTS");
  if ((chk && atoi(chk)) || (tp && !strstr(tp, "shm")) || c->n < 2 || c->n > 8) return;
  tpudistComm_t sub = NULL;
  if (!ok(c, tpudistCommSplit(c->comm, 0, c->rank, &sub, NULL), "split for small mismatch")) return;
  size_t count = c->rank == 0 ? 3 : 4;
  tpudistResult_t r = tpudistAllReduce(gS, gR, count, tpudistInt32, tpudistSum, sub, NULL);
  gChecks++;
  if (strcmp(tpudistLastAlgorithm(sub), "slots") != 0) {
    ok(c, tpudistCommDestroy(sub), "destroy after small mismatch");
    return; /* another transport or path: covered by tMismatch under TPU_DIST_CHECK */
  }
  int named = r == tpudistInvalidUsage && strstr(tpudistGetLastError(sub), "different collectives");
  if (r == tpudistSuccess) {
    gFail++;
    fprintf(stderr, "[%d] small all-reduce with mismatched lengths succeeded\n", gWorldRank);
  }
  ok(c, tpudistCommDestroy(sub), "destroy after small mismatch");
  int any = 0;
  MPI_Allreduce(&named, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  gChecks++;
  if (!any) {
    gFail++;
    fprintf(stderr, "[%d] no rank reported the mismatched lengths: %d '%s'\n", gWorldRank, r,
            tpudistGetLastError(NULL));
  }
}

static void *abortLater(void *arg) {
  struct timespec ts = {0, 200 * 1000 * 1000};
  nanosleep(&ts, NULL);
  tpudistCommAbort((tpudistComm_t)arg);
  return NULL;
}

/* CommAbort from another thread releases a blocked receive with tpudistAborted. */
static void tAbort(const Ctx *c) {
  tpudistComm_t self = NULL;
  pthread_t th;
  if (!ok(c, tpudistCommSplit(c->comm, c->rank, 0, &self, NULL), "split self")) return;
  pthread_create(&th, NULL, abortLater, self);
  tpudistResult_t r = tpudistRecv(gR, 4, tpudistInt32, 0, self, NULL);
  pthread_join(th, NULL);
  gChecks++;
  if (r != tpudistAborted) {
    gFail++;
    fprintf(stderr, "[%d] abort: blocked receive returned %d\n", gWorldRank, r);
  }
  gChecks++;
  if (tpudistAllReduce(gS, gR, 4, tpudistInt32, tpudistSum, self, NULL) != tpudistInvalidUsage) {
    gFail++;
    fprintf(stderr, "[%d] call after abort not rejected\n", gWorldRank);
  }
}

/* ---- suites ------------------------------------------------------------------------------ */

static void smallCross(const Ctx *c, int full) {
  static const size_t counts[] = {0, 1, 7, 1000};
  int dts_all[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9},
      dts_few[] = {tpudistInt32, tpudistFloat32, tpudistBfloat16};
  int ops_all[] = {0, 1, 2, 3, 4}, ops_few[] = {tpudistSum, tpudistMax, tpudistAvg};
  int *dts = full ? dts_all : dts_few, ndt = full ? 10 : 3;
  int *ops = full ? ops_all : ops_few, nop = full ? 5 : 3;
  for (int d = 0; d < ndt; d++)
    for (int o = 0; o < nop; o++)
      for (int k = 0; k < 4; k++)
        for (int ip = 0; ip < 2; ip++) {
          size_t cnt = counts[k];
          tAllreduce(c, dts[d], ops[o], cnt, ip);
          tReduceScatter(c, dts[d], ops[o], cnt, ip);
          tReduce(c, dts[d], ops[o], cnt, (k + o) % c->n, ip);
          if (full || k == 3) tReduce(c, dts[d], ops[o], cnt, c->n - 1, ip);
        }
  int bysize[] = {tpudistUint8, tpudistBfloat16, tpudistFloat32, tpudistInt64};
  for (int d = 0; d < 4; d++)
    for (int k = 0; k < 4; k++) {
      for (int ip = 0; ip < 2; ip++) {
        tBroadcast(c, bysize[d], counts[k], 0, ip);
        tBroadcast(c, bysize[d], counts[k], c->n - 1, ip);
        tAllgather(c, bysize[d], counts[k], ip);
      }
      tAlltoall(c, bysize[d], counts[k]);
      tSendRecv(c, bysize[d], counts[k]);
    }
  tAlltoallv(c, tpudistInt32, 0);
  tAlltoallv(c, tpudistInt32, 9);
  tAlltoallv(c, tpudistFloat64, 700);
  tMoeDispatch(c, tpudistBfloat16, 5000);
  tMoeDispatch(c, tpudistFloat32, 1);
  tRequests(c);
  tSmallBurst(c);
}

static void large(const Ctx *c, int full) {
  int dts[] = {tpudistInt32, tpudistFloat32, tpudistBfloat16}, ops[] = {tpudistSum, tpudistMax};
  for (int d = 0; d < 3; d++)
    for (int o = 0; o < 2; o++) {
      size_t es = refSize(dts[d]), c1 = (1u << 20) / es + 3, c16 = (16u << 20) / es;
      tAllreduce(c, dts[d], ops[o], c1, 0);
      tAllreduce(c, dts[d], ops[o], c1, 1);
      tReduceScatter(c, dts[d], ops[o], c1 / (size_t)c->n + 1, 0);
      if (full || o == 0) tAllreduce(c, dts[d], ops[o], c16, d % 2);
    }
  tAllgather(c, tpudistFloat32, (1u << 18) + 3, 0);
  tBroadcast(c, tpudistFloat32, (1u << 20) + 3, 0, 0);
  tAlltoall(c, tpudistInt32, (1u << 16) + 3);
  tSendRecv(c, tpudistFloat32, (1u << 20) + 3);
  tFloatIdentical(c, (1u << 20) + 3);
}

static void parseArgs(int argc, char **argv) {
  const char *full = getenv("TD_FULL");
  gFull = full && atoi(full) > 0;
  for (int i = 1; i < argc; i++)
    if (!strcmp(argv[i], "--expect-other-below")) {
      gExpectOtherBelow = 1;
    } else if (i + 1 == argc) {
      break;
    } else if (!strcmp(argv[i], "--expect-algo")) {
      snprintf(gExpect, sizeof(gExpect), ",%s,", argv[i + 1]);
    } else if (!strcmp(argv[i], "--expect-on")) {
      snprintf(gExpectOn, sizeof(gExpectOn), ",%s,", argv[i + 1]);
    } else if (!strcmp(argv[i], "--split-every")) {
      gSplitEvery = atoi(argv[i + 1]);
      gNumSubs = gSplitEvery > 0 ? 4 : 3;
    } else if (!strcmp(argv[i], "--expect-from")) {
      gExpectMinBytes = (size_t)strtoull(argv[i + 1], NULL, 10);
    }
}

/* Halves, reversed order, odd/even (and blocks of --split-every ranks); each new rank is checked
 * against the split rule. */
static void makeSubs(const Ctx *w, Ctx *subs) {
  int r = w->rank, n = w->n, half = n / 2, k = gSplitEvery > 0 ? gSplitEvery : 1;
  int colors[4] = {r < half ? 0 : 1, 0, r % 2, r / k}, keys[4] = {r, -r, r, r};
  int want[4] = {r < half ? r : r - half, n - 1 - r, r / 2, r % k};
  for (int s = 0; s < gNumSubs; s++) {
    tpudistConfig_t cfg = TPUDIST_CONFIG_INITIALIZER;
    cfg.commName = subs[s].name;
    if (!ok(w, tpudistCommSplit(w->comm, colors[s], keys[s], &subs[s].comm, &cfg), "split"))
      continue;
    tpudistCommCount(subs[s].comm, &subs[s].n);
    tpudistCommUserRank(subs[s].comm, &subs[s].rank);
    gChecks++;
    if (subs[s].rank != want[s]) {
      gFail++;
      fprintf(stderr, "[%d] split %s: rank %d, expected %d\n", gWorldRank, subs[s].name,
              subs[s].rank, want[s]);
    }
  }
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int n;
  MPI_Comm_rank(MPI_COMM_WORLD, &gWorldRank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  parseArgs(argc, argv);
  gCap = (size_t)n * ((1u << 20) + 64) + (17u << 20);
  gS = calloc(1, gCap); /* calloc + touch: every page faulted once, here */
  gR = calloc(1, gCap);
  gE = calloc(2, gCap);
  memset(gS, 0, gCap);
  memset(gR, 0, gCap);
  memset(gE, 0, 2 * gCap);
  tpudistUniqueId id;
  if (gWorldRank == 0 && tpudistGetUniqueId(&id) != tpudistSuccess) MPI_Abort(MPI_COMM_WORLD, 2);
  MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD);
  Ctx w = {NULL, gWorldRank, n, "world"};
  if (tpudistCommInitRank(&w.comm, n, id, gWorldRank) != tpudistSuccess) {
    fprintf(stderr, "[%d] init: %s\n", gWorldRank, tpudistGetLastError(NULL));
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  Ctx subs[4] = {{NULL, 0, 0, "halves"},
                 {NULL, 0, 0, "reversed"},
                 {NULL, 0, 0, "odd-even"},
                 {NULL, 0, 0, "blocks"}};
  makeSubs(&w, subs);
  const char *only = getenv("TD_MPI_ONLY"); /* "small" or "large": one part, for debugging */
  if (!only || strcmp(only, "large")) {
    smallCross(&w, 1);
    for (int s = 0; s < gNumSubs; s++)
      if (subs[s].comm) smallCross(&subs[s], gFull);
  }
  if (!only || strcmp(only, "small")) large(&w, gFull);
  tErrors(&w);
  tTimeout(&w);
  tAbort(&w);
  tMismatch(&w);
  tAlltoallvMismatch(&w);
  tSmallMismatch(&w);
  for (int s = 0; s < gNumSubs; s++)
    if (subs[s].comm) ok(&subs[s], tpudistCommDestroy(subs[s].comm), "destroy split");
  ok(&w, tpudistCommDestroy(w.comm), "destroy");
  long tot[2] = {gChecks, gFail}, sum[2];
  MPI_Reduce(tot, sum, 2, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  if (gWorldRank == 0) printf("test_mpi np %d: %ld checks, %ld failures\n", n, sum[0], sum[1]);
  int bad = gFail > 0, anybad = 0;
  MPI_Allreduce(&bad, &anybad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  free(gS);
  free(gR);
  free(gE);
  MPI_Finalize();
  return anybad ? 1 : 0;
}
