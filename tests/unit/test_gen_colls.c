/*
 * test_gen_colls.c - every schedule generator of all-gather, reduce-scatter, broadcast, reduce,
 * all-to-all(-v) and send/recv, run over a matrix of shapes: nranks 1..17, 24, 32, 64 x counts
 * {0, 1, n-1, 3n+1, 1000} (TD_FULL=1: also nranks 48, 96, 255, 256) x in place / out of place x
 * roots {0, n-1, n/2} (all-to-all-v: count matrices with zeros, one hot receiver, random). Each
 * schedule set is executed on tagged data by the model of gen_sim.c (rendezvous sends, the IR's
 * issue rules, NCCL aliasing) and the outputs are compared with the collective's definition; every
 * shape also goes through the validator (collectives/validate/validate.h), plain and fused.
 */
#include <stdlib.h>
#include <string.h>

#include "../cu_main.h"
#include "allgather.h"
#include "alltoall.h"
#include "broadcast.h"
#include "drive.h"
#include "gen_sim.h"
#include "reduce.h"
#include "reducescatter.h"
#include "sendrecv.h"

static const int kRanks[] = {1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11,  12,
                             13, 14, 15, 16, 17, 24, 32, 64, 48, 96, 255, 256};
#define NRANKS_CI 20 /* the first 20; TD_FULL=1 runs them all */
static int g_nranksCases = NRANKS_CI;
#define NRANKS_CASES g_nranksCases

typedef struct {
  tdColl coll;
  const char *algo;
  tdGenFn fn; /* what the registry must map (coll, algo) to; also links the generator in */
} Gen;

static int g_failures;

static void report(const tdCollArgs *a, const char *algo, const char *by, const char *msg) {
  if (g_failures++ < 20)
    fprintf(stderr, "%s %s n=%d root=%d inplace=%d count=%llu: %s: %s\n", schedCollName(a->coll),
            algo, a->nranks, a->root, a->inplace, (unsigned long long)a->count, by, msg);
}

/* One shape: the validator on the plain and the fused schedules, then the execution model. */
static void runOne(const tdCollArgs *a, const char *algo) {
  char msg[TD_ERRLEN] = "";
  for (int fuse = 0; fuse < 2; fuse++)
    if (validateAlgo(a, algo, fuse, msg) != tpudistSuccess)
      report(a, algo, fuse ? "validator (fused)" : "validator", msg);
  /* The model holds every element and tags contributions with a 64-bit mask: it skips the
   * largest all-to-alls and more than 64 ranks (the validator does not). */
  if (a->coll == TD_COLL_ALLTOALL && (uint64_t)a->nranks * a->nranks * a->count > 2000000) return;
  if (a->nranks > 64) return;
  if (simCheck(a, algo, msg) != 0) report(a, algo, "model", msg);
}

/* algoGenerate must refuse every rank of this shape with want. */
static void expectRefused(const tdCollArgs *args, const char *algo, tpudistResult_t want) {
  for (int r = 0; r < args->nranks; r++) {
    tdCollArgs a = *args;
    a.rank = r;
    tdSched s;
    char err[TD_ERRLEN] = "";
    tpudistResult_t res = algoGenerate(&a, algo, &s, err);
    CU_ASSERT_EQUAL(res, want);
    CU_ASSERT(err[0] != 0);
    if (res == tpudistSuccess) schedFree(&s);
  }
}

static int rootsFor(tdColl c, int n, int *roots) {
  if (c != TD_COLL_BROADCAST && c != TD_COLL_REDUCE && c != TD_COLL_SENDRECV) {
    roots[0] = 0;
    return 1;
  }
  roots[0] = 0, roots[1] = n - 1, roots[2] = n / 2;
  int k = 3;
  if (c == TD_COLL_SENDRECV && n > 1) roots[k++] = 1; /* shift 1 */
  return k;
}

/* The registry maps the name to the generator (a static link pulls it in only through here). */
static int registered(Gen g) {
  const tdAlgo *e = algoFind(g.coll, g.algo);
  CU_ASSERT_PTR_NOT_NULL(e);
  CU_ASSERT(e && e->gen == g.fn);
  return e && e->gen == g.fn;
}

static void runGen(Gen g) {
  g_failures = 0;
  if (!registered(g)) return;
  for (int ni = 0; ni < NRANKS_CASES; ni++) {
    int n = kRanks[ni], roots[4];
    uint64_t counts[] = {0, 1, (uint64_t)n - 1, 3 * (uint64_t)n + 1, 1000};
    int nroots = rootsFor(g.coll, n, roots);
    for (int ci = 0; ci < 5; ci++)
      for (int ip = 0; ip < 2; ip++)
        for (int ri = 0; ri < nroots; ri++) {
          tdCollArgs a;
          memset(&a, 0, sizeof(a));
          a.coll = g.coll, a.nranks = n, a.root = roots[ri], a.inplace = ip;
          a.count = counts[ci], a.elem_size = 4;
          if (ip && g.coll == TD_COLL_ALLTOALL)
            expectRefused(&a, g.algo, tpudistNotSupported);
          else
            runOne(&a, g.algo);
        }
  }
  CU_ASSERT_EQUAL(g_failures, 0);
}

/* All-to-all-v matrices: kind 0 all zero but the diagonal, 1 one hot receiver, 2 random with
 * zeros. */
static void fillMatrix(uint64_t *m, int n, int kind, unsigned *seed) {
  int hot = n / 2;
  for (int s = 0; s < n; s++)
    for (int r = 0; r < n; r++) {
      uint64_t v = 0;
      if (kind == 0) v = s == r ? 3 : 0;
      if (kind == 1) v = r == hot ? 50 + (uint64_t)s : (s + r) % 3 == 0 ? 0 : 1;
      if (kind == 2) v = rand_r(seed) % 4 == 0 ? 0 : rand_r(seed) % 40;
      m[(size_t)s * n + r] = v;
    }
}

static void runAlltoallv(Gen g) {
  const char *algo = g.algo;
  g_failures = 0;
  if (!registered(g)) return;
  unsigned seed = 12345;
  for (int ni = 0; ni < NRANKS_CASES; ni++) {
    int n = kRanks[ni];
    uint64_t *m = malloc(sizeof(uint64_t) * (size_t)n * n);
    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    for (int kind = 0; kind < 3; kind++) {
      fillMatrix(m, n, kind, &seed);
      tdCollArgs a;
      memset(&a, 0, sizeof(a));
      a.coll = TD_COLL_ALLTOALLV, a.nranks = n, a.v_counts = m, a.elem_size = 4;
      runOne(&a, algo);
    }
    free(m);
  }
  CU_ASSERT_EQUAL(g_failures, 0);
}

static const Gen kGens[] = {
    {TD_COLL_ALLGATHER, "ring", genAllgatherRing},
    {TD_COLL_ALLGATHER, "recdbl", genAllgatherRecdbl},
    {TD_COLL_REDUCESCATTER, "ring", genReducescatterRing},
    {TD_COLL_REDUCESCATTER, "recdbl", genReducescatterRecdbl},
    {TD_COLL_BROADCAST, "chain", genBroadcastChain},
    {TD_COLL_BROADCAST, "tree", genBroadcastTree},
    {TD_COLL_REDUCE, "chain", genReduceChain},
    {TD_COLL_REDUCE, "tree", genReduceTree},
    {TD_COLL_ALLTOALL, "pairwise", genAlltoallPairwise},
    {TD_COLL_ALLTOALL, "direct", genAlltoallDirect},
    {TD_COLL_SENDRECV, "direct", genSendrecvDirect},
    {TD_COLL_ALLGATHER, "direct", genAllgatherDirect},
    {TD_COLL_REDUCESCATTER, "direct", genReducescatterDirect},
    {TD_COLL_BROADCAST, "direct", genBroadcastDirect},
    {TD_COLL_ALLTOALLV, "pairwise", genAlltoallvPairwise},
    {TD_COLL_ALLTOALLV, "direct", genAlltoallvDirect},
};
#define NGENS (int)(sizeof(kGens) / sizeof(kGens[0]))
#define NUNIFORM 14 /* kGens[0 .. NUNIFORM-1] are count-independent */

static void testAllgatherRing(void) {
  runGen(kGens[0]);
}
static void testAllgatherRecdbl(void) {
  runGen(kGens[1]);
}
static void testReducescatterRing(void) {
  runGen(kGens[2]);
}
static void testReducescatterRecdbl(void) {
  runGen(kGens[3]);
}
static void testBroadcastChain(void) {
  runGen(kGens[4]);
}
static void testBroadcastTree(void) {
  runGen(kGens[5]);
}
static void testReduceChain(void) {
  runGen(kGens[6]);
}
static void testReduceTree(void) {
  runGen(kGens[7]);
}
static void testAlltoallPairwise(void) {
  runGen(kGens[8]);
}
static void testAlltoallDirect(void) {
  runGen(kGens[9]);
}
static void testSendrecvDirect(void) {
  runGen(kGens[10]);
}
static void testAllgatherDirect(void) {
  runGen(kGens[11]);
}
static void testReducescatterDirect(void) {
  runGen(kGens[12]);
}
static void testBroadcastDirect(void) {
  runGen(kGens[13]);
}
static void testAlltoallvPairwise(void) {
  runAlltoallv(kGens[14]);
}
static void testAlltoallvDirect(void) {
  runAlltoallv(kGens[15]);
}

/* A uniform schedule is the same for every count (the count binds at execution time). */
static void testCountIndependent(void) {
  for (int g = 0; g < NUNIFORM; g++)
    for (int n = 1; n <= 12; n += 11 - n / 2)
      for (int r = 0; r < n; r++) {
        tdCollArgs a;
        memset(&a, 0, sizeof(a));
        a.coll = kGens[g].coll, a.nranks = n, a.rank = r, a.root = n - 1, a.elem_size = 4;
        tdSched s0, s1;
        char err[TD_ERRLEN];
        a.count = 0;
        CU_ASSERT_EQUAL_FATAL(algoGenerate(&a, kGens[g].algo, &s0, err), tpudistSuccess);
        a.count = 123457;
        CU_ASSERT_EQUAL_FATAL(algoGenerate(&a, kGens[g].algo, &s1, err), tpudistSuccess);
        CU_ASSERT(schedSameSteps(&s0, &s1, 1));
        CU_ASSERT(s0.nstreams <= TD_MAX_STREAMS);
        schedFree(&s0);
        schedFree(&s1);
      }
}

static int countFused(const tdSched *s) {
  int f = 0;
  for (uint32_t q = 0; q < s->nstreams; q++)
    for (uint32_t j = 0; j < s->streams[q].nsteps; j++)
      f += s->streams[q].steps[j].op == TD_STEP_RECV_COPY_SEND ||
           s->streams[q].steps[j].op == TD_STEP_RECV_REDUCE_SEND;
  return f;
}

/* Forwarding generators are written so that schedFuse pipelines them: the ring's n-2 forwarded
 * blocks, every forwarded chunk of a chain and every partial a reduce tree sends up become fused
 * steps. */
static void testFusable(void) {
  const int n = 7;
  for (int g = 0; g < 8; g++) {
    const Gen *G = &kGens[g];
    /* recdbl forwards nothing as received; a broadcast tree node sends each chunk to two
     * children, and a second reader of a forwarded chunk keeps schedFuse away */
    if (!strcmp(G->algo, "recdbl") || (G->coll == TD_COLL_BROADCAST && !strcmp(G->algo, "tree")))
      continue;
    for (int r = 0; r < n; r++) {
      tdCollArgs a;
      memset(&a, 0, sizeof(a));
      a.coll = G->coll, a.nranks = n, a.rank = r, a.root = 2, a.count = 100;
      tdSched s;
      char err[TD_ERRLEN];
      CU_ASSERT_EQUAL_FATAL(algoGenerate(&a, G->algo, &s, err), tpudistSuccess);
      schedFuse(&s);
      int want = n - 2, pos = (r - a.root + n) % n;
      int k = (int)s.layout[TD_BUF_INPUT].chunks_per_block;
      CU_ASSERT(k >= 1);
      if (!strcmp(G->algo, "chain")) want = pos == 0 || pos == n - 1 ? 0 : k;
      if (!strcmp(G->algo, "tree")) want = pos >= 1 && pos <= 2 ? k : 0; /* reduce: inner */
      CU_ASSERT_EQUAL(countFused(&s), want);
      schedFree(&s);
    }
  }
}

/* Bad ranks and roots are refused with a reason, never crash. */
static void testBadArgs(void) {
  tdCollArgs a;
  for (int g = 0; g < NGENS; g++) {
    if (!registered(kGens[g])) continue;
    memset(&a, 0, sizeof(a));
    a.coll = kGens[g].coll, a.nranks = 4, a.count = 8;
    uint64_t m[16] = {0}, d[4] = {0};
    a.v_counts = m, a.v_sdispls = a.v_rdispls = d;
    char err[TD_ERRLEN] = "";
    tdSched s;
    memset(&s, 0, sizeof(s));
    schedInit(&s, &a, kGens[g].algo);
    a.rank = 4;
    CU_ASSERT_EQUAL(algoRun(algoOfGen(kGens[g].fn), &a, &s, err), tpudistInvalidArgument);
    CU_ASSERT(err[0] != 0);
    schedFree(&s);
    a.rank = 1;
    if (a.coll == TD_COLL_BROADCAST || a.coll == TD_COLL_REDUCE) {
      a.root = 4;
      expectRefused(&a, kGens[g].algo, tpudistInvalidArgument);
      a.root = -1;
      expectRefused(&a, kGens[g].algo, tpudistInvalidArgument);
    }
    if (a.coll == TD_COLL_ALLTOALLV) {
      a.inplace = 1;
      expectRefused(&a, kGens[g].algo, tpudistNotSupported);
      a.inplace = 0, a.v_counts = NULL;
      expectRefused(&a, kGens[g].algo, tpudistInvalidArgument);
    }
  }
}

int main(void) {
  const char *full = getenv("TD_FULL");
  if (full && strcmp(full, "1") == 0) g_nranksCases = (int)(sizeof(kRanks) / sizeof(kRanks[0]));
  CU_TestInfo tests[] = {
      {"allgather ring", testAllgatherRing},
      {"allgather recdbl", testAllgatherRecdbl},
      {"reducescatter ring", testReducescatterRing},
      {"reducescatter recdbl", testReducescatterRecdbl},
      {"broadcast chain", testBroadcastChain},
      {"broadcast tree", testBroadcastTree},
      {"reduce chain", testReduceChain},
      {"reduce tree", testReduceTree},
      {"alltoall pairwise", testAlltoallPairwise},
      {"alltoall direct", testAlltoallDirect},
      {"alltoallv pairwise", testAlltoallvPairwise},
      {"alltoallv direct", testAlltoallvDirect},
      {"sendrecv direct", testSendrecvDirect},
      {"allgather direct", testAllgatherDirect},
      {"reducescatter direct", testReducescatterDirect},
      {"broadcast direct", testBroadcastDirect},
      {"count independence", testCountIndependent},
      {"bad arguments", testBadArgs},
      {"fusable", testFusable},
      CU_TEST_INFO_NULL,
  };
  return tdCUnitMain("unit-gen-colls", tests);
}
