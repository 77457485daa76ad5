/*
 * test_fidelity.c - the link model against published TPU figures, and selection against the
 * simulator (docs/simulator.md, "Fidelity"): routes spread half-way traffic over both directions
 * of an even ring (balanced link loads, exact); the twisted-torus all-to-all gains of the TPU v4
 * paper on 4x4x8 and 4x8x8 within 10%; the scaling book's all-to-all formula on v5p within 10%;
 * its measured v5e all-gathers within 15% with the presets' latencies, while bandwidth-bound
 * all-reduces stay at the three-axis bound; and the library's selection within 5% of the
 * simulator's best in >= 95% of a small grid's cells, never worse than 1.25x. Correctness
 * checks on simulated (deterministic) times, no wall clock.
 */
#include <CUnit/Basic.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

static int near(double got, double want, double tol) {
  return fabs(got - want) <= tol * fabs(want);
}

/* Per directed link, the load of every rank sending one unit to every other along the route
 * model (each share of a split message carries 1/k); min and max over the links of axis (-1:
 * every axis). */
static void linkLoads(const tdTopo *t, int axis, double *mn, double *mx) {
  int n = t->nranks, nd = t->ndims;
  double *load = calloc((size_t)n * nd * 2, sizeof(double));
  tdHop h[64];
  for (int s = 0; s < n; s++)
    for (int d = 0; d < n; d++) {
      int k = topoPaths(t, s, d);
      for (int j = 0; j < k && s != d; j++) {
        int nh = topoRoute(t, s, d, j, h, 64);
        CU_ASSERT_FATAL(nh > 0 && nh <= 64);
        for (int i = 0; i < nh; i++)
          load[(h[i].from * nd + h[i].axis) * 2 + (h[i].dir > 0)] += 1.0 / k;
      }
    }
  *mn = 1e300, *mx = 0;
  for (int i = 0; i < n * nd * 2; i++) {
    if (axis >= 0 && (i / 2) % nd != axis) continue;
    *mn = fmin(*mn, load[i]);
    *mx = fmax(*mx, load[i]);
  }
  free(load);
}

static void testBalancedRings(void) {
  char err[TD_ERRLEN];
  for (int n = 3; n <= 10; n++) { /* a ring: sum of ring distances over n links per direction */
    char spec[16];
    snprintf(spec, sizeof(spec), "%d", n);
    tdTopo t;
    CU_ASSERT_FATAL(topoParse(spec, 0, &t, err) == tpudistSuccess);
    double mn, mx, want = n % 2 ? (n - 1) * (n + 1) / 8.0 : (n / 2 - 1) * (n / 2) / 2.0 + n / 4.0;
    linkLoads(&t, -1, &mn, &mx);
    CU_ASSERT(near(mn, want, 1e-12) && near(mx, want, 1e-12)); /* 8-ring: 8 (ties all +: 10) */
  }
  const char *shapes[] = {"4x4x4", "8x4", "6x4", "4x4x8"};
  for (size_t i = 0; i < 4; i++) {
    tdTopo t;
    CU_ASSERT_FATAL(topoParse(shapes[i], 0, &t, err) == tpudistSuccess);
    for (int a = 0; a < t.ndims; a++) {
      double mn, mx;
      linkLoads(&t, a, &mn, &mx);
      /* every link of an axis, both directions alike */
      CU_ASSERT(near(mn, mx, 1e-12) && mn > 0);
    }
  }
}

static double simTime(const char *preset, const char *spec, int twist, tdColl coll,
                      const char *algo, uint64_t bytes) {
  char err[TD_ERRLEN];
  const simPreset *p = simPresetFind(preset);
  tdTopo parsed, t;
  CU_ASSERT_FATAL(p && topoParse(spec, 0, &parsed, err) == tpudistSuccess);
  if (strchr(spec, ':'))
    t = parsed;
  else
    CU_ASSERT_FATAL(simPresetTopo(p, parsed.ndims, parsed.dims, twist, &t, err) == tpudistSuccess);
  simConfig cfg;
  simConfigDefault(&cfg, p, &t);
  tdCollArgs a;
  memset(&a, 0, sizeof(a));
  a.coll = coll, a.nranks = t.nranks, a.topo = &t, a.elem_size = 4;
  a.count = simCountForBytes(coll, t.nranks, bytes, 4);
  simResult r;
  if (simRun(&cfg, &a, algo, &r, err) != tpudistSuccess) {
    fprintf(stderr, "\n  %s %s: %s\n", spec, algo, err);
    CU_FAIL("simulation failed");
    return -1;
  }
  return r.time;
}

/* TPU v4 paper (ISCA 2023), twisted over regular torus, all-to-all throughput: 1.63x on 4x4x8,
 * 1.31x on 4x8x8 (shared/reference tpu_topology.md §3). */
static void testTwistGains(void) {
  const char *shapes[] = {"4x4x8", "4x8x8"};
  const double paper[] = {1.63, 1.31};
  for (int i = 0; i < 2; i++) {
    double plain = simTime("v4", shapes[i], 0, TD_COLL_ALLTOALL, "direct", 64u << 20);
    double twisted = simTime("v4", shapes[i], 1, TD_COLL_ALLTOALL, "direct", 64u << 20);
    printf("\n  v4 %s all-to-all 64 MiB: twist gain %.3f (paper %.2f, %+.1f%%)", shapes[i],
           plain / twisted, paper[i], 100 * (plain / twisted / paper[i] - 1));
    CU_ASSERT(near(plain / twisted, paper[i], 0.10));
  }
}

/* Scaling book: T = (V/N) max(A,B,C) / (4W), W = 2 x one-way link, V/N the send buffer. */
static void testBookAlltoall(void) {
  const char *shapes[] = {"4x4x4", "8x8x8", "16x16x16"};
  const int longest[] = {4, 8, 16};
  int n = getenv("TD_FULL") && atoi(getenv("TD_FULL")) ? 3 : 2;
  for (int i = 0; i < n; i++) {
    uint64_t b = 256u << 20;
    double t = simTime("v5p", shapes[i], 0, TD_COLL_ALLTOALL, "direct", b);
    double book = (double)b * longest[i] / (4 * 2 * simPresetFind("v5p")->link_bw);
    printf("\n  v5p %s all-to-all 256 MiB: %.1f us, book %.1f us (%+.1f%%)", shapes[i], t * 1e6,
           book * 1e6, 100 * (t / book - 1));
    CU_ASSERT(near(t, book, 0.10));
  }
}

/* The book's measured v5e all-gathers over a 4-chip axis without wrap: 680 us for a 32 MiB
 * result, about 8 us for 32 kB shards; v5p all-reduce of 1 GiB stays at the three-axis bound
 * 2V / (3 x 2 x link). */
static void testLatencies(void) {
  double big = simTime("v5e", "4", 0, TD_COLL_ALLGATHER, "torus", 32u << 20);
  double small = simTime("v5e", "4", 0, TD_COLL_ALLGATHER, "torus", 4 * 32768);
  printf("\n  v5e 4-line all-gather 32 MiB %.1f us (measured 680), 32 kB shards %.2f us (~8)",
         big * 1e6, small * 1e6);
  CU_ASSERT(near(big, 680e-6, 0.15));
  CU_ASSERT(near(small, 8e-6, 0.15));
  const char *shapes[] = {"4x4x4", "8x8x8"};
  for (int i = 0; i < 2; i++) {
    double t = simTime("v5p", shapes[i], 0, TD_COLL_ALLREDUCE, "torus", 1u << 30);
    double bound = 2.0 * (1u << 30) / (3 * 2 * simPresetFind("v5p")->link_bw);
    printf("\n  v5p %s all-reduce 1 GiB %.1f us, three-axis bound %.1f us (%+.2f%%)", shapes[i],
           t * 1e6, bound * 1e6, 100 * (t / bound - 1));
    CU_ASSERT(t >= bound && near(t, bound, 0.02));
  }
}

/* The small grid (100 cells); TD_FULL=1: every shape (160 cells). */
static void testSelectionGrid(void) {
  simSelSummary sum;
  char err[TD_ERRLEN];
  int level = getenv("TD_FULL") && atoi(getenv("TD_FULL"));
  CU_ASSERT_FATAL(simCheckSelection(level, NULL, &sum, err) == tpudistSuccess);
  printf("\n  selection grid: %d cells, %d within 5%% of the best, worst x%.3f (%s)", sum.cells,
         sum.within5, sum.worst, sum.worst_cell);
  CU_ASSERT(sum.cells == (level ? 160 : 100));
  CU_ASSERT(sum.within5 >= 0.95 * sum.cells);
  CU_ASSERT(sum.worst <= 1.25);
}

int main(void) {
  CU_TestInfo tests[] = {
      {"routes balance even rings", testBalancedRings},
      {"twisted all-to-all gains (ISCA 2023)", testTwistGains},
      {"book all-to-all formula on v5p", testBookAlltoall},
      {"calibrated latencies", testLatencies},
      {"selection against the simulator", testSelectionGrid},
      CU_TEST_INFO_NULL,
  };
  CU_SuiteInfo suites[] = {{"fidelity", NULL, NULL, NULL, NULL, tests}, CU_SUITE_INFO_NULL};
  if (CU_initialize_registry() != CUE_SUCCESS) return 1;
  CU_register_suites(suites);
  CU_basic_set_mode(CU_BRM_VERBOSE);
  CU_basic_run_tests();
  int failed = (int)CU_get_number_of_failures();
  CU_cleanup_registry();
  return failed ? 1 : 0;
}
