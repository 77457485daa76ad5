/*
 * test_cost.c - the cost model (collectives/cost/cost.h). Hand-built schedules whose times follow
 * from the model's parameters by hand: one message on a flat pair, a local copy, two flows
 * sharing a torus link (twice as long) against disjoint or opposite flows (not), stalls and
 * unmatched messages reported. Then the acceptance rankings over generated schedules: on a 4x4x4
 * torus with equal links the torus all-reduce is at least 2x faster than the 1-D ring at 64 MiB
 * and a latency-optimal algorithm is cheapest at 8 bytes (fused, as the runtime runs them, and
 * unfused); all-to-all is faster
 * on a twisted 4x4x8 than on the plain one.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../cu_main.h"
#include "algos.h"
#include "drive.h"
#include "hand_scheds.h"

static const tdCostModel kModel = {1e-6, 1e9, 1e9, 1e9, 0, 0,
                                   0,    0,   0,   0,   0, 0}; /* no pipelining, DCN, sync, NUMA */

static void add(tdSched *s, tdStep st) {
  CU_ASSERT_FATAL(schedAppend(s, 0, &st, NULL) == tpudistSuccess);
}

static void addMsg(tdSched *s, int from, int to) {
  add(&s[from], schedSend(to, schedRef(TD_BUF_INPUT, 0, 1)));
  add(&s[to], schedRecv(from, schedRef(TD_BUF_OUTPUT, (uint32_t)from, 1))); /* no conflicts */
}

/* Evaluates (and frees) the schedules at n elements of 4 bytes. */
static tpudistResult_t eval(const tdTopo *t, tdSched *s, int n, const tdCostModel *m,
                            uint64_t count, double *sec) {
  char err[TD_ERRLEN] = "";
  tdCostPlan *p;
  tpudistResult_t r = costPlanCreate(t, s, n, &p, err);
  if (r != tpudistSuccess) return r;
  r = costPlanEval(p, m, count, 4, sec, err);
  costPlanFree(p);
  return r;
}

static int near(double a, double b) {
  return fabs(a - b) <= 1e-9 * fabs(b) + 1e-15;
}

static void testFlatMessage(void) {
  tdTopo t;
  topoInitFlat(&t, 2);
  tdCostModel m = kModel;
  m.msg_overhead = 2e-7;
  tdSched *s = calloc(2, sizeof(tdSched));
  initScheds(s, 2);
  addMsg(s, 0, 1);
  double sec;
  CU_ASSERT_FATAL(eval(&t, s, 2, &m, 1000, &sec) == tpudistSuccess);
  CU_ASSERT(near(sec, 2e-7 + 4000 / 1e9 + 1e-6)); /* overhead + bytes/copy_bw + latency */
}

static void testLocalCopy(void) {
  tdTopo t;
  topoInitFlat(&t, 1);
  tdSched *s = calloc(1, sizeof(tdSched));
  initScheds(s, 1);
  add(&s[0], schedCopy(schedRef(TD_BUF_INPUT, 0, 1), schedRef(TD_BUF_OUTPUT, 0, 1)));
  add(&s[0], schedCopy(schedRef(TD_BUF_OUTPUT, 0, 1), schedRef(TD_BUF_INPUT, 0, 1)));
  double sec;
  CU_ASSERT_FATAL(eval(&t, s, 1, &kModel, 250, &sec) == tpudistSuccess);
  CU_ASSERT(near(sec, 2 * 1000 / 1e9)); /* two dependent copies of 1000 bytes */
}

/* An n-rank ring (1-D torus with wrap); on 5 ranks 0 -> 2 takes links 0->1, 1->2; on 4 it is
 * half way round, half of it each way. */
static double ringFlows(int n, const int (*flows)[2], int nflows) {
  tdTopo t;
  int dims[1] = {n}, wrap[1] = {1};
  char err[TD_ERRLEN] = "";
  CU_ASSERT_FATAL(topoInit(&t, 1, dims, wrap, 0, err) == tpudistSuccess);
  tdSched *s = calloc((size_t)n, sizeof(tdSched));
  initScheds(s, n);
  for (int i = 0; i < nflows; i++) addMsg(s, flows[i][0], flows[i][1]);
  double sec = -1;
  CU_ASSERT(eval(&t, s, n, &kModel, 250000, &sec) == tpudistSuccess);
  return sec;
}

static void testContention(void) {
  const double B = 1e6 / 1e9, L = 1e-6; /* 1 MB over 1 GB/s, 1 us per hop */
  const int one[][2] = {{0, 2}};
  const int shared[][2] = {{0, 2}, {1, 2}};   /* both use link 1->2 */
  const int disjoint[][2] = {{0, 2}, {3, 0}}; /* 3->4->0: the wrap link */
  const int opposite[][2] = {{0, 1}, {1, 0}}; /* one link each way */
  CU_ASSERT(near(ringFlows(5, one, 1), B + 2 * L));
  double sh = ringFlows(5, shared, 2);
  CU_ASSERT(sh >= 2 * B + L - 1e-12 && sh <= 2 * B + 2 * L + 1e-12);
  CU_ASSERT(near(ringFlows(5, disjoint, 2), B + 2 * L));
  CU_ASSERT(near(ringFlows(5, opposite, 2), B + L));
  /* half way round 4: half the bytes each way, so half the time */
  CU_ASSERT(near(ringFlows(4, one, 1), B / 2 + 2 * L));
  /* with 1 -> 2 beside it: that link carries B + B / 2 */
  double tie = ringFlows(4, shared, 2);
  CU_ASSERT(tie >= 1.5 * B + L - 1e-12 && tie <= 1.5 * B + 2 * L + 1e-12);
}

static void testStallAndUnmatched(void) {
  tdTopo t;
  topoInitFlat(&t, 2);
  tdSched *s = calloc(2, sizeof(tdSched));
  initScheds(s, 2);
  for (int r = 0; r < 2; r++) { /* each receives before it sends what it received: stall */
    add(&s[r], schedRecv(1 - r, schedRef(TD_BUF_OUTPUT, 0, 1)));
    add(&s[r], schedSend(1 - r, schedRef(TD_BUF_OUTPUT, 0, 1)));
  }
  double sec;
  CU_ASSERT(eval(&t, s, 2, &kModel, 10, &sec) == tpudistInternalError);
  s = calloc(2, sizeof(tdSched));
  initScheds(s, 2);
  add(&s[0], schedSend(1, schedRef(TD_BUF_INPUT, 0, 1))); /* nobody receives it */
  CU_ASSERT(eval(&t, s, 2, &kModel, 10, &sec) == tpudistInternalError);
}

static double estimate(const char *spec, tdColl c, const char *algo, uint64_t count) {
  tdTopo t;
  char err[TD_ERRLEN] = "";
  CU_ASSERT_FATAL(topoParse(spec, 0, &t, err) == tpudistSuccess);
  tdCostModel m;
  costModelDefault(&t, &m);
  tdCollArgs a;
  memset(&a, 0, sizeof(a));
  a.coll = c, a.nranks = t.nranks, a.topo = &t, a.count = count, a.elem_size = 4;
  double sec = -1;
  tpudistResult_t r = costEstimate(&a, algo, &m, &sec, err);
  if (r != tpudistSuccess) fprintf(stderr, "%s %s %s: %s\n", spec, schedCollName(c), algo, err);
  return r == tpudistSuccess ? sec : -1;
}

/* All-reduce plan without the fusion pass; -1 for an algorithm that refuses the shape. */
static double unfused(const char *spec, const char *algo, uint64_t count) {
  tdTopo t;
  char err[TD_ERRLEN] = "";
  CU_ASSERT_FATAL(topoParse(spec, 0, &t, err) == tpudistSuccess);
  tdCostModel m;
  costModelDefault(&t, &m);
  tdSched *s = calloc((size_t)t.nranks, sizeof(tdSched));
  tdCollArgs a;
  memset(&a, 0, sizeof(a));
  a.coll = TD_COLL_ALLREDUCE, a.nranks = t.nranks, a.topo = &t;
  for (int r = 0; r < t.nranks; r++) {
    a.rank = r;
    tpudistResult_t rc = algoGenerate(&a, algo, &s[r], err);
    if (rc == tpudistNotSupported && r == 0) {
      free(s);
      return -1;
    }
    CU_ASSERT_FATAL(rc == tpudistSuccess);
  }
  double sec = -1;
  return eval(&t, s, t.nranks, &m, count, &sec) == tpudistSuccess ? sec : -1;
}

/* Seconds of algo's all-reduce of count floats on flat(n) under the flat defaults, with
 * shm_sync = sync. */
static double flatAllreduce(int n, const char *algo, uint64_t count, double sync) {
  tdTopo t;
  topoInitFlat(&t, n);
  tdCostModel m;
  costModelDefault(&t, &m);
  m.shm_sync = sync;
  tdCollArgs a;
  memset(&a, 0, sizeof(a));
  a.coll = TD_COLL_ALLREDUCE, a.nranks = n, a.topo = &t, a.count = count, a.elem_size = 4;
  char err[TD_ERRLEN] = "";
  double sec = -1;
  CU_ASSERT_FATAL(costEstimate(&a, algo, &m, &sec, err) == tpudistSuccess);
  return sec;
}

/* The synchronisation step on shared memory is paid once per round of dependent messages: the
 * ring all-reduce's 2(n-1), direct's 2, whatever n; with a large one direct wins at 16 ranks. */
static void testShmSync(void) {
  const double s = 50e-6;
  double ring0 = flatAllreduce(16, "ring", 2, 0), ring1 = flatAllreduce(16, "ring", 2, s);
  double dir0 = flatAllreduce(16, "direct", 2, 0), dir1 = flatAllreduce(16, "direct", 2, s);
  printf(
      "\nflat(16) all-reduce 8 B, shm_sync 0 / 50 us: ring %.1f / %.1f us, direct %.1f / %.1f "
      "us\n",
      ring0 * 1e6, ring1 * 1e6, dir0 * 1e6, dir1 * 1e6);
  CU_ASSERT(ring1 - ring0 > 29 * s && ring1 - ring0 < 31 * s);
  CU_ASSERT(dir1 - dir0 > 1.9 * s && dir1 - dir0 < 2.1 * s);
  CU_ASSERT(dir1 < ring1);
}

static void testAllreduceRanking(void) {
  double torus = estimate("4x4x4", TD_COLL_ALLREDUCE, "torus", 16u << 20);
  double ring = estimate("4x4x4", TD_COLL_ALLREDUCE, "ring", 16u << 20);
  printf("\n4x4x4 all-reduce 64 MiB: torus %.1f us, ring %.1f us\n", torus * 1e6, ring * 1e6);
  CU_ASSERT(torus > 0 && ring > 0 && 2 * torus <= ring);
  /* 8 bytes: as the runtime runs them (fused), a latency-optimal algorithm is cheapest */
  const char *best = NULL;
  double bestc = 0;
  for (const tdAlgo *a = tdAlgoTable; a->name; a++) {
    if (a->coll != TD_COLL_ALLREDUCE || !a->gen) continue;
    double c = estimate("4x4x4", TD_COLL_ALLREDUCE, a->name, 2); /* 8 bytes */
    printf("4x4x4 all-reduce 8 B: %s %.2f us\n", a->name, c * 1e6);
    if (c > 0 && (!best || c < bestc)) best = a->name, bestc = c;
  }
  CU_ASSERT_FATAL(best != NULL);
  CU_ASSERT(strcmp(best, "recdbl") == 0 || strcmp(best, "tree") == 0);
  /* unfused plans: recursive doubling, the latency-optimal one, is cheapest */
  best = NULL;
  for (const tdAlgo *a = tdAlgoTable; a->name; a++) {
    if (a->coll != TD_COLL_ALLREDUCE || !a->gen) continue;
    double c = unfused("4x4x4", a->name, 2);
    printf("4x4x4 all-reduce 8 B unfused: %s %.2f us\n", a->name, c * 1e6);
    if (c > 0 && (!best || c < bestc)) best = a->name, bestc = c;
  }
  CU_ASSERT(best && strcmp(best, "recdbl") == 0);
}

/* Fused steps (recv_reduce_send) are costed too, close to the unfused plan without pipelining
 * and faster with it (the forward starts after the first piece). */
static void testFused(void) {
  tdTopo t;
  char err[TD_ERRLEN] = "";
  CU_ASSERT_FATAL(topoParse("4x4", 0, &t, err) == tpudistSuccess);
  tdCostModel m;
  costModelDefault(&t, &m);
  double sec[3] = {-1, -1, -1};
  for (int v = 0; v < 3; v++) {
    tdCollArgs a;
    memset(&a, 0, sizeof(a));
    a.coll = TD_COLL_ALLREDUCE, a.nranks = 16, a.topo = &t;
    tdSched *s = calloc(16, sizeof(tdSched));
    for (int r = 0; r < 16; r++) {
      a.rank = r;
      CU_ASSERT_FATAL(algoGenerate(&a, "torus", &s[r], err) == tpudistSuccess);
      if (v > 0) schedFuse(&s[r]);
    }
    m.piece_bytes = v == 2 ? 65536 : 0;
    CU_ASSERT(eval(&t, s, 16, &m, 1 << 22, &sec[v]) == tpudistSuccess);
  }
  printf("\n4x4 torus all-reduce 16 MiB: unfused %.1f us, fused %.1f us, pipelined %.1f us\n",
         sec[0] * 1e6, sec[1] * 1e6, sec[2] * 1e6);
  CU_ASSERT(sec[0] > 0 && sec[1] <= sec[0] * 1.1 && sec[0] <= sec[1] * 1.1);
  CU_ASSERT(sec[2] > 0 && sec[2] < sec[1]);
}

static void testTwistedAlltoall(void) {
  const char *algos[] = {"torus", "direct", "pairwise"};
  double bestPlain = 0, bestTwist = 0;
  for (int i = 0; i < 3; i++) {
    double p = estimate("4x4x8", TD_COLL_ALLTOALL, algos[i], 8192);
    double t = estimate("4x4x8:twist", TD_COLL_ALLTOALL, algos[i], 8192);
    printf("\n4x4x8 all-to-all 32 KiB blocks, %s: plain %.1f us, twisted %.1f us", algos[i],
           p * 1e6, t * 1e6);
    CU_ASSERT(p > 0 && t > 0);
    if (i == 0) CU_ASSERT(t < p); /* the neighbour-only schedule follows the shorter routes */
    bestPlain = i == 0 || p < bestPlain ? p : bestPlain;
    bestTwist = i == 0 || t < bestTwist ? t : bestTwist;
  }
  printf("\nbest: plain %.1f us, twisted %.1f us\n", bestPlain * 1e6, bestTwist * 1e6);
  CU_ASSERT(bestTwist < bestPlain);
}

/* Rank 0's plan alone, every rank its translate (costPlanCreateSym), fused as costPlanGenerate. */
static double symmetric(const tdTopo *t, tdColl c, const char *algo, uint64_t count) {
  char err[TD_ERRLEN] = "";
  tdCostModel m;
  costModelDefault(t, &m);
  tdCollArgs a;
  memset(&a, 0, sizeof(a));
  a.coll = c, a.nranks = t->nranks, a.topo = t, a.count = count, a.elem_size = 4;
  tdSched *s = calloc(1, sizeof(tdSched));
  int *mirror = malloc(sizeof(int) * (size_t)t->nranks);
  CU_ASSERT_FATAL(s && mirror && algoGenerate(&a, algo, s, err) == tpudistSuccess);
  schedFuse(s);
  for (int q = 0; q < t->nranks; q++) {
    int cq[TD_MAX_DIMS];
    topoRankToCoords(t, q, cq);
    for (int k = 0; k < TD_MAX_DIMS; k++) cq[k] = -cq[k];
    mirror[q] = topoTranslate(t, NULL, cq, NULL);
  }
  tdCostPlan *p = NULL;
  double sec = -1;
  CU_ASSERT_FATAL(costPlanCreateSym(t, t->nranks, s, mirror, &p, err) == tpudistSuccess);
  CU_ASSERT(costPlanSteps(p) < 20000);
  if (costPlanEval(p, &m, count, 4, &sec, err) != tpudistSuccess) fprintf(stderr, "%s\n", err);
  costPlanFree(p);
  free(mirror);
  return sec;
}

/* On a wrapped torus every rank of a torus plan is a translate of rank 0: costing rank 0 alone
 * (links per class) agrees with costing every rank, within the model's order effects. */
static void testSymmetric(void) {
  const char *shapes[] = {"4x4x4", "4x4x8:twist", "8x8"};
  struct {
    tdColl c;
    const char *algo;
    uint64_t count;
  } cases[] = {{TD_COLL_ALLREDUCE, "torus", 1 << 20},
               {TD_COLL_ALLTOALL, "torus", 4096},
               {TD_COLL_ALLTOALL, "torus", 16}};
  for (int si = 0; si < 3; si++)
    for (int k = 0; k < 3; k++) {
      if (si == 1 && k == 0) continue; /* twisted all-reduce plans are not translates */
      tdTopo t;
      char err[TD_ERRLEN] = "";
      CU_ASSERT_FATAL(topoParse(shapes[si], 0, &t, err) == tpudistSuccess);
      double full = estimate(shapes[si], cases[k].c, cases[k].algo, cases[k].count);
      double sym = symmetric(&t, cases[k].c, cases[k].algo, cases[k].count);
      printf("\n%s %s %s count %llu: every rank %.2f us, rank 0 by symmetry %.2f us", shapes[si],
             schedCollName(cases[k].c), cases[k].algo, (unsigned long long)cases[k].count,
             full * 1e6, sym * 1e6);
      CU_ASSERT(full > 0 && sym > 0);
      CU_ASSERT(fabs(sym - full) <= 0.25 * full);
    }
  printf("\n");
}

int main(void) {
  CU_TestInfo tests[] = {{"flat message", testFlatMessage},
                         {"local copy", testLocalCopy},
                         {"link contention", testContention},
                         {"stall and unmatched", testStallAndUnmatched},
                         {"fused steps", testFused},
                         {"shm synchronisation step", testShmSync},
                         {"4x4x4 all-reduce ranking", testAllreduceRanking},
                         {"twisted 4x4x8 all-to-all", testTwistedAlltoall},
                         {"symmetric plans", testSymmetric},
                         CU_TEST_INFO_NULL};
  return tdCUnitMain("cost", tests);
}
