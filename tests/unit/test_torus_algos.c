/*
 * test_torus_algos.c - the torus generators (all-reduce, all-gather, reduce-scatter, all-to-all,
 * all-to-all-v) and Bruck all-to-all, proved by the schedule validator on tori 2x2, 4x4, 2x2x2,
 * 4x4x4, 4x4x8 (plain and twisted), 2x4 without wrap, 3x5 and 2x2x2x2 (and 4x4 with one wrap,
 * twisted 2x4x4 and 4x2x2: the n x 2n x 2n family, the long axis first), with counts 0, 1, fewer
 * than the ranks, not divisible by the chunking, and large, in place and out of place; a check
 * over the step lists that torus generators send and receive only between torus neighbours;
 * the same after the fusion pass; refusals on flat topologies; and controls showing that both
 * checks can fail.
 */
#include <stdlib.h>
#include <string.h>

#include "../cu_main.h"
#include "algos.h"
#include "step_sem.h"
#include "validate.h"

static const char *const kShapes[] = {
    "2x2", "4x4",     "2x2x2",        "4x4x4",       "4x4x8",       "4x4x8:twist", "2x4:wrap=0,0",
    "3x5", "2x2x2x2", "4x4:wrap=1,0", "2x4x4:twist", "4x2x2:twist", NULL};

static void parse(const char *spec, tdTopo *t) {
  char err[TD_ERRLEN] = "";
  tpudistResult_t r = topoParse(spec, 0, t, err);
  if (r != tpudistSuccess) fprintf(stderr, "topology %s: %s\n", spec, err);
  CU_ASSERT_FATAL(r == tpudistSuccess);
}

/* Generates every rank's schedule; returns NULL (and prints why) on failure. */
static tdSched *genAll(const tdCollArgs *base, const char *algo, const uint64_t *sd,
                       const uint64_t *rd) {
  int n = base->nranks;
  tdSched *s = calloc((size_t)n, sizeof(tdSched));
  char err[TD_ERRLEN] = "";
  for (int r = 0; s && r < n; r++) {
    tdCollArgs a = *base;
    a.rank = r;
    if (sd) a.v_sdispls = sd + (size_t)r * (size_t)n, a.v_rdispls = rd + (size_t)r * (size_t)n;
    if (algoGenerate(&a, algo, &s[r], err) != tpudistSuccess) {
      fprintf(stderr, "%s %s rank %d: %s\n", schedCollName(base->coll), algo, r, err);
      for (int q = 0; q < r; q++) schedFree(&s[q]);
      free(s);
      return NULL;
    }
  }
  return s;
}

static void freeAll(tdSched *s, int n) {
  for (int r = 0; r < n; r++) schedFree(&s[r]);
  free(s);
}

static tpudistResult_t validate(tdSched *s, int n, uint64_t count, const uint64_t *vc, char *err) {
  tdSched **p = malloc(sizeof(tdSched *) * (size_t)n);
  for (int r = 0; r < n; r++) p[r] = &s[r];
  tdValidateOpts o;
  memset(&o, 0, sizeof(o));
  o.v_counts = vc;
  tpudistResult_t res = validateSchedulesOpts(p, n, count, &o, err);
  free(p);
  return res;
}

/* First step (rank, stream, step) that talks to a non-neighbour, or -1. */
static int firstNonNeighbour(const tdTopo *t, const tdSched *s, int n, char *where) {
  for (int r = 0; r < n; r++)
    for (uint32_t st = 0; st < s[r].nstreams; st++)
      for (uint32_t i = 0; i < s[r].streams[st].nsteps; i++) {
        const tdStep *x = &s[r].streams[st].steps[i];
        int peers[2] = {schedSendPeer(x), schedRecvPeer(x)};
        for (int k = 0; k < 2; k++)
          if (peers[k] >= 0 && !topoIsNeighbor(t, r, peers[k])) {
            snprintf(where, TD_ERRLEN, "rank %d stream %u step %u peer %d", r, st, i, peers[k]);
            return r;
          }
      }
  return -1;
}

static void checkSet(const char *spec, const tdTopo *t, tdColl coll, const char *algo, int inplace,
                     int neighbours) {
  tdCollArgs a;
  memset(&a, 0, sizeof(a));
  a.coll = coll, a.nranks = t->nranks, a.topo = t, a.inplace = inplace, a.elem_size = 4;
  tdSched *s = genAll(&a, algo, NULL, NULL);
  CU_ASSERT_FATAL(s != NULL);
  int n = t->nranks;
  uint64_t counts[] = {0, 1, (uint64_t)n - 1, 13, 5003};
  for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
    char err[TD_ERRLEN] = "";
    tpudistResult_t r = validate(s, n, counts[c], NULL, err);
    if (r != tpudistSuccess)
      fprintf(stderr, "%s %s %s inplace %d count %llu: %s\n", spec, schedCollName(coll), algo,
              inplace, (unsigned long long)counts[c], err);
    CU_ASSERT(r == tpudistSuccess);
  }
  for (int r = 0; r < n; r++) schedFuse(&s[r]); /* what the executor runs */
  for (size_t c = 1; c < sizeof(counts) / sizeof(counts[0]); c += 2) {
    char err[TD_ERRLEN] = "";
    tpudistResult_t r = validate(s, n, counts[c], NULL, err);
    if (r != tpudistSuccess)
      fprintf(stderr, "%s %s %s fused inplace %d count %llu: %s\n", spec, schedCollName(coll), algo,
              inplace, (unsigned long long)counts[c], err);
    CU_ASSERT(r == tpudistSuccess);
  }
  char where[TD_ERRLEN] = "";
  if (neighbours && firstNonNeighbour(t, s, n, where) >= 0) {
    fprintf(stderr, "%s %s %s: not a neighbour: %s\n", spec, schedCollName(coll), algo, where);
    CU_FAIL("torus generator talks to a non-neighbour");
  }
  freeAll(s, n);
}

static void testReductions(void) {
  const tdColl colls[] = {TD_COLL_ALLREDUCE, TD_COLL_ALLGATHER, TD_COLL_REDUCESCATTER};
  for (int i = 0; kShapes[i]; i++) {
    tdTopo t;
    parse(kShapes[i], &t);
    for (int c = 0; c < 3; c++)
      for (int ip = 0; ip < 2; ip++) checkSet(kShapes[i], &t, colls[c], "torus", ip, 1);
  }
}

static void testAlltoall(void) {
  for (int i = 0; kShapes[i]; i++) {
    tdTopo t;
    parse(kShapes[i], &t);
    checkSet(kShapes[i], &t, TD_COLL_ALLTOALL, "torus", 0, 1);
    checkSet(kShapes[i], &t, TD_COLL_ALLTOALL, "bruck", 0, 0);
  }
  for (int n = 1; n <= 9; n++) { /* Bruck on flat topologies, every rank count to 9 */
    tdTopo t;
    topoInitFlat(&t, n);
    checkSet("flat", &t, TD_COLL_ALLTOALL, "bruck", 0, 0);
  }
}

/* Count matrices: zero, equal, skewed with zeros, one large block. */
static void fillMatrix(uint64_t *m, int n, int kind) {
  uint32_t x = 12345u + (uint32_t)kind;
  for (int i = 0; i < n * n; i++) {
    x = x * 1103515245u + 12345u;
    m[i] = kind == 0 ? 0 : kind == 1 ? 3 : (x >> 16) % 4 == 0 ? 0 : (x >> 16) % 29;
  }
  if (kind == 3) m[(size_t)(n - 1) * (size_t)n] = 100003; /* last rank -> rank 0 */
}

static void packed(const uint64_t *m, int n, uint64_t *sd, uint64_t *rd) {
  for (int r = 0; r < n; r++) {
    uint64_t so = 0, ro = 0;
    for (int q = 0; q < n; q++) {
      sd[(size_t)r * n + q] = so, so += m[(size_t)r * n + q];
      rd[(size_t)r * n + q] = ro, ro += m[(size_t)q * n + r];
    }
  }
}

static void testAlltoallv(void) {
  for (int i = 0; kShapes[i]; i++) {
    tdTopo t;
    parse(kShapes[i], &t);
    int n = t.nranks;
    uint64_t *m = malloc(sizeof(uint64_t) * (size_t)n * n * 3);
    for (int kind = 0; kind < 4; kind++) {
      if (n > 64 && (kind == 0 || kind == 1)) continue; /* keep the 128-rank cases short */
      fillMatrix(m, n, kind);
      packed(m, n, m + (size_t)n * n, m + (size_t)n * n * 2);
      tdCollArgs a;
      memset(&a, 0, sizeof(a));
      a.coll = TD_COLL_ALLTOALLV, a.nranks = n, a.topo = &t, a.v_counts = m, a.elem_size = 4;
      tdSched *s = genAll(&a, "torus", m + (size_t)n * n, m + (size_t)n * n * 2);
      CU_ASSERT_FATAL(s != NULL);
      char err[TD_ERRLEN] = "", where[TD_ERRLEN] = "";
      tpudistResult_t r = validate(s, n, 0, m, err);
      if (r != tpudistSuccess) fprintf(stderr, "%s alltoallv kind %d: %s\n", kShapes[i], kind, err);
      CU_ASSERT(r == tpudistSuccess);
      CU_ASSERT(firstNonNeighbour(&t, s, n, where) < 0);
      freeAll(s, n);
    }
    free(m);
  }
}

static void expectRefusal(const tdTopo *t, int nranks, tdColl c, const char *algo, int inplace,
                          const char *word) {
  tdCollArgs a;
  memset(&a, 0, sizeof(a));
  a.coll = c, a.nranks = nranks, a.topo = t, a.inplace = inplace;
  uint64_t m[4] = {1, 1, 1, 1}, d[2] = {0, 1};
  a.v_counts = m, a.v_sdispls = d, a.v_rdispls = d;
  tdSched s;
  char err[TD_ERRLEN] = "";
  CU_ASSERT(algoGenerate(&a, algo, &s, err) == tpudistNotSupported);
  CU_ASSERT_PTR_NOT_NULL(strstr(err, word));
}

static void testRefusals(void) {
  tdTopo flat, t;
  topoInitFlat(&flat, 4);
  parse("2x2", &t);
  const tdColl colls[] = {TD_COLL_ALLREDUCE, TD_COLL_ALLGATHER, TD_COLL_REDUCESCATTER,
                          TD_COLL_ALLTOALL, TD_COLL_ALLTOALLV};
  for (int c = 0; c < 5; c++) {
    expectRefusal(&flat, 4, colls[c], "torus", 0, "flat");
    expectRefusal(&t, 2, colls[c], "torus", 0, "does not match");
  }
  expectRefusal(&t, 4, TD_COLL_ALLTOALL, "torus", 1, "in-place");
  expectRefusal(&t, 4, TD_COLL_ALLTOALL, "bruck", 1, "in-place");
}

/* The two checks above can fail: a dropped contribution and a non-neighbour peer are caught. */
static void testControls(void) {
  tdTopo t;
  parse("2x2x2", &t);
  tdCollArgs a;
  memset(&a, 0, sizeof(a));
  a.coll = TD_COLL_ALLREDUCE, a.nranks = t.nranks, a.topo = &t;
  tdSched *s = genAll(&a, "torus", NULL, NULL);
  CU_ASSERT_FATAL(s != NULL);
  char err[TD_ERRLEN] = "", where[TD_ERRLEN] = "";
  tdStep *x = NULL;
  for (uint32_t i = 0; i < s[3].streams[0].nsteps && !x; i++)
    if (s[3].streams[0].steps[i].op == TD_STEP_RECV_REDUCE) x = &s[3].streams[0].steps[i];
  CU_ASSERT_FATAL(x != NULL);
  x->op = TD_STEP_RECV; /* drops this rank's own contribution */
  CU_ASSERT(validate(s, t.nranks, 8, NULL, err) != tpudistSuccess);
  x->op = TD_STEP_RECV_REDUCE;
  CU_ASSERT(validate(s, t.nranks, 8, NULL, err) == tpudistSuccess);
  CU_ASSERT(firstNonNeighbour(&t, s, t.nranks, where) < 0);
  for (uint32_t i = 0; i < s[0].streams[0].nsteps; i++)
    if (s[0].streams[0].steps[i].op == TD_STEP_SEND) {
      s[0].streams[0].steps[i].peer = 7; /* (1,1,1): three hops from rank 0 */
      break;
    }
  CU_ASSERT(firstNonNeighbour(&t, s, t.nranks, where) == 0);
  freeAll(s, t.nranks);
}

int main(void) {
  CU_TestInfo tests[] = {{"refusals", testRefusals},
                         {"controls", testControls},
                         {"allreduce/allgather/reducescatter", testReductions},
                         {"alltoall torus and bruck", testAlltoall},
                         {"alltoallv torus", testAlltoallv},
                         CU_TEST_INFO_NULL};
  return tdCUnitMain("torus-algos", tests);
}
