/*
 * test_gen_colls.c - every schedule generator of all-gather, reduce-scatter, broadcast, reduce,
 * all-to-all(-v) and send/recv, run over a matrix of shapes: nranks 1..17, 24, 32, 64 x counts
 * {0, 1, n-1, 3n+1, 1000} x in place / out of place x roots {0, n-1, n/2} (all-to-all-v: count
 * matrices with zeros, one hot receiver, random). Each schedule set is executed on tagged data
 * by the model of gen_sim.c (rendezvous sends, the IR's issue rules, NCCL aliasing) and the
 * outputs are compared with the collective's definition.
 */
#include <stdlib.h>
#include <string.h>

#include "../cu_main.h"
#include "gen_sim.h"

static const int kRanks[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 24, 32, 64};
#define NRANKS_CASES (int)(sizeof(kRanks) / sizeof(kRanks[0]))

typedef struct {
  tdColl coll;
  const char *algo;
  tdGenFn fn; /* what the registry must map (coll, algo) to; also links the generator in */
} Gen;

static int g_failures;

static void runOne(const tdCollArgs *a, const char *algo) {
  char msg[TD_ERRLEN];
  if (simCheck(a, algo, msg) != 0) {
    if (g_failures++ < 20)
      fprintf(stderr, "%s %s n=%d root=%d inplace=%d count=%llu: %s\n", schedCollName(a->coll),
              algo, a->nranks, a->root, a->inplace, (unsigned long long)a->count, msg);
  }
}

static int rootsFor(tdColl c, int n, int *roots) {
  if (c != TD_COLL_BROADCAST && c != TD_COLL_REDUCE && c != TD_COLL_SENDRECV) {
    roots[0] = 0;
    return 1;
  }
  roots[0] = 0, roots[1] = n - 1, roots[2] = n / 2;
  int k = 3;
  if (c == TD_COLL_SENDRECV) roots[k++] = 1; /* shift 1 */
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
          if (ip && g.coll == TD_COLL_ALLTOALL) continue;
          if (n >= 32 && counts[ci] == 1000 && g.coll == TD_COLL_ALLTOALL) continue;
          tdCollArgs a;
          memset(&a, 0, sizeof(a));
          a.coll = g.coll, a.nranks = n, a.root = roots[ri], a.inplace = ip;
          a.count = counts[ci], a.elem_size = 4;
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

static void testAllgatherRing(void) {
  runGen((Gen){TD_COLL_ALLGATHER, "ring", genAllgatherRing});
}
static void testAllgatherRecdbl(void) {
  runGen((Gen){TD_COLL_ALLGATHER, "recdbl", genAllgatherRecdbl});
}
static void testReducescatterRing(void) {
  runGen((Gen){TD_COLL_REDUCESCATTER, "ring", genReducescatterRing});
}
static void testReducescatterRecdbl(void) {
  runGen((Gen){TD_COLL_REDUCESCATTER, "recdbl", genReducescatterRecdbl});
}
static void testBroadcastChain(void) {
  runGen((Gen){TD_COLL_BROADCAST, "chain", genBroadcastChain});
}
static void testBroadcastTree(void) {
  runGen((Gen){TD_COLL_BROADCAST, "tree", genBroadcastTree});
}
static void testReduceChain(void) {
  runGen((Gen){TD_COLL_REDUCE, "chain", genReduceChain});
}
static void testReduceTree(void) {
  runGen((Gen){TD_COLL_REDUCE, "tree", genReduceTree});
}
static void testAlltoallPairwise(void) {
  runGen((Gen){TD_COLL_ALLTOALL, "pairwise", genAlltoallPairwise});
}
static void testAlltoallDirect(void) {
  runGen((Gen){TD_COLL_ALLTOALL, "direct", genAlltoallDirect});
}
static void testAlltoallvPairwise(void) {
  runAlltoallv((Gen){TD_COLL_ALLTOALLV, "pairwise", genAlltoallvPairwise});
}
static void testAlltoallvDirect(void) {
  runAlltoallv((Gen){TD_COLL_ALLTOALLV, "direct", genAlltoallvDirect});
}
static void testSendrecvDirect(void) {
  runGen((Gen){TD_COLL_SENDRECV, "direct", genSendrecvDirect});
}

int main(void) {
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
      CU_TEST_INFO_NULL,
  };
  return tdCUnitMain("unit-gen-colls", tests);
}
