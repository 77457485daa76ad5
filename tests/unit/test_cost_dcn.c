/*
 * test_cost_dcn.c - the cost model's DCN (collectives/cost/cost.h) and the selection it drives.
 * Hand-built messages whose times follow from the model's figures: one message across DCN on a
 * flat topology and on a torus (no ICI hops, the DCN latency), two ranks of one host sharing its
 * NIC (twice as long) against ranks of different hosts (not), a message inside a slice (ICI).
 * Then rankings over generated plans: hier ahead of ring, torus and Rabenseifner for a large
 * all-reduce on 2x2:slices=2 and 4x4x4:slices=2, and ahead of ring on flat communicators across
 * hosts with 2, 3 and 4 ranks per host (4 hosts x 2 ranks at 2 Gbit/s: 1.14x, the bound 1.17x); a
 * latency algorithm first for small sizes; the selection table agreeing, and following the DCN
 * figure (a DCN as fast as shared memory gives the ring back). The flow limit (dcn_flows): a
 * message beyond it at half the NIC rate, the messages of one pair one flow (a pipelined chain
 * costs the same), all-to-all's ranking turned from direct to a paced plan across hosts and not
 * on one host.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../cu_main.h"
#include "drive.h"
#include "hand_scheds.h"
#include "select.h"

static void parse(const char *spec, tdTopo *t) {
  char err[TD_ERRLEN] = "";
  CU_ASSERT_FATAL(topoParse(spec, 0, t, err) == tpudistSuccess);
}

static int near(double a, double b) {
  return fabs(a - b) <= 1e-9 * fabs(b) + 1e-15;
}

/* nmsg messages src[i] -> dst[i] of one 4-byte element times count each, at once; seconds. */
static double messages(const tdTopo *t, const tdCostModel *m, const int *src, const int *dst,
                       int nmsg, uint64_t count) {
  int n = t->nranks;
  tdSched *s = calloc((size_t)n, sizeof(tdSched));
  initScheds(s, n);
  for (int i = 0; i < nmsg; i++) {
    tdStep x = schedSend(dst[i], schedRef(TD_BUF_INPUT, 0, 1));
    tdStep y = schedRecv(src[i], schedRef(TD_BUF_OUTPUT, (uint32_t)src[i], 1));
    CU_ASSERT_FATAL(schedAppend(&s[src[i]], 0, &x, NULL) == tpudistSuccess);
    CU_ASSERT_FATAL(schedAppend(&s[dst[i]], 0, &y, NULL) == tpudistSuccess);
  }
  char err[TD_ERRLEN] = "";
  tdCostPlan *p;
  double sec = -1;
  CU_ASSERT_FATAL(costPlanCreate(t, s, n, &p, err) == tpudistSuccess);
  CU_ASSERT(costPlanEval(p, m, count, 4, &sec, err) == tpudistSuccess);
  costPlanFree(p);
  return sec;
}

/* Flat: ports at copy_bw, NICs at dcn_bw (overhead on each), the DCN latency once. */
static void testFlatDcn(void) {
  tdTopo t;
  parse("flat(4):hosts=2", &t);
  tdCostModel m;
  costModelDefault(&t, &m);
  CU_ASSERT(near(m.dcn_bw, TD_COST_DCN_HOST_BW) && near(m.dcn_latency, TD_COST_DCN_TCP_LATENCY));
  m.dcn_bw = 1e9, m.copy_bw = 4e9, m.dcn_latency = 20e-6, m.hop_latency = 1e-6;
  m.msg_overhead = 0, m.piece_bytes = 0, m.shm_sync = 0;
  uint64_t n = 1000000; /* 4 MB */
  int s1[] = {0}, d1[] = {2}, s2[] = {0, 1}, d2[] = {2, 3}, d3[] = {3, 2};
  CU_ASSERT(near(messages(&t, &m, s1, d1, 1, n), 4e6 / 1e9 + 20e-6));
  /* both ranks of host 0 to host 1: one NIC each way, twice as long */
  CU_ASSERT(near(messages(&t, &m, s2, d2, 2, n), 8e6 / 1e9 + 20e-6));
  CU_ASSERT(near(messages(&t, &m, s2, d3, 2, n), 8e6 / 1e9 + 20e-6));
  /* inside a host: the ports only, the hop latency */
  int s4[] = {0}, d4[] = {1};
  CU_ASSERT(near(messages(&t, &m, s4, d4, 1, n), 4e6 / 4e9 + 1e-6));
  /* without hosts the same ranks share no NIC: flat(4) is one host */
  tdTopo one;
  parse("flat(4)", &one);
  CU_ASSERT(near(messages(&one, &m, s2, d2, 2, n), 4e6 / 4e9 + 1e-6));
  /* slices of a flat topology without hosts: every rank is its own host, own NIC */
  tdTopo sl;
  parse("flat(2):slices=2", &sl);
  CU_ASSERT(near(messages(&sl, &m, s2, d2, 2, n), 4e6 / 1e9 + 20e-6));
}

/* dcn_flows: NIC directions that carry that many other pairs' unfinished messages take the next
 * at half the rate. */
static void testFlowLimit(void) {
  tdTopo t;
  parse("flat(4):hosts=2", &t);
  tdCostModel m;
  costModelDefault(&t, &m);
  CU_ASSERT(m.dcn_flows == 0); /* off by default */
  m.dcn_bw = 1e9, m.copy_bw = 4e9, m.dcn_latency = 20e-6, m.hop_latency = 1e-6;
  m.msg_overhead = 0, m.piece_bytes = 0, m.dcn_flows = 1;
  uint64_t n = 1000000; /* 4 MB */
  int s1[] = {0}, d1[] = {2}, s2[] = {0, 1}, d2[] = {2, 3};
  CU_ASSERT(near(messages(&t, &m, s1, d1, 1, n), 4e6 / 1e9 + 20e-6));
  /* the second pair finds the first unfinished on both NICs: 4 ms, then 8 ms at half the rate */
  CU_ASSERT(near(messages(&t, &m, s2, d2, 2, n), 12e6 / 1e9 + 20e-6));
  m.dcn_flows = 2; /* room for both */
  CU_ASSERT(near(messages(&t, &m, s2, d2, 2, n), 8e6 / 1e9 + 20e-6));
}

/* Torus: a message between slices takes no ICI link (no hops), its hosts' NICs and the DCN
 * latency; inside a slice the torus route. */
static void testTorusDcn(void) {
  tdTopo t;
  parse("2x2:slices=2", &t);
  tdCostModel m;
  costModelDefault(&t, &m);
  CU_ASSERT(near(m.dcn_bw, TD_COST_DCN_CHIP_BW)); /* no host bounds: one chip per host */
  m.dcn_bw = 1e9, m.link_bw = 10e9, m.dcn_latency = 10e-6, m.hop_latency = 1e-6;
  m.msg_overhead = 0, m.piece_bytes = 0;
  uint64_t n = 1000000;
  int s1[] = {0}, d1[] = {7}, d2[] = {3};
  CU_ASSERT(near(messages(&t, &m, s1, d1, 1, n), 4e6 / 1e9 + 10e-6));
  CU_ASSERT(near(messages(&t, &m, s1, d2, 1, n), 4e6 / 10e9 + 2e-6)); /* 2 hops */
  /* 2 chips per host: rank 0 and 1 share host 0's NIC (and its default is 2 chips' worth) */
  tdTopo h;
  parse("2x2:hosts=2,1:slices=2", &h);
  costModelDefault(&h, &m);
  CU_ASSERT(near(m.dcn_bw, 2 * TD_COST_DCN_CHIP_BW));
  m.dcn_bw = 1e9, m.link_bw = 10e9, m.dcn_latency = 10e-6, m.msg_overhead = 0, m.piece_bytes = 0;
  int s2[] = {0, 1}, d3[] = {4, 5};
  CU_ASSERT(near(messages(&h, &m, s2, d3, 2, n), 8e6 / 1e9 + 10e-6));
}

/* Seconds of a bytes all-reduce with algo on spec; dcn_bw > 0 replaces the default NIC figure. */
static double estimateAt(const char *spec, const char *algo, uint64_t bytes, double dcn_bw) {
  tdTopo t;
  char err[TD_ERRLEN] = "";
  parse(spec, &t);
  tdCostModel m;
  costModelDefault(&t, &m);
  if (dcn_bw > 0) m.dcn_bw = dcn_bw;
  tdCollArgs a;
  memset(&a, 0, sizeof(a));
  a.coll = TD_COLL_ALLREDUCE, a.nranks = t.nranks, a.topo = &t, a.count = bytes / 4;
  a.elem_size = 4;
  double sec = -1;
  tpudistResult_t r = costEstimate(&a, algo, &m, &sec, err);
  if (r != tpudistSuccess) fprintf(stderr, "%s %s: %s\n", spec, algo, err);
  CU_ASSERT(r == tpudistSuccess);
  return sec;
}

static double estimate(const char *spec, const char *algo, uint64_t bytes) {
  return estimateAt(spec, algo, bytes, 0);
}

/* hier beats every other plan that moves the whole buffer at 64 MiB where DCN joins the levels.
 * On 4x4x4:slices=2 Rabenseifner's halvings cross DCN with hier's bytes and come within a few
 * percent of it, on either side (the simulator has it 2% ahead), so it is no rival there. */
static void testRanking(void) {
  struct {
    const char *spec, *rivals[4];
  } cases[] = {{"2x2:slices=2", {"ring", "torus", "rabenseifner", NULL}},
               {"4x4x4:slices=2", {"ring", "torus", NULL}},
               {"flat(4):hosts=2", {"ring", "ring2", NULL}},
               {"flat(6):hosts=2", {"ring", "rabenseifner", NULL}},
               {"flat(8):hosts=4", {"ring", "rabenseifner", NULL}}};
  uint64_t big = 64ull << 20;
  printf("\n");
  for (size_t k = 0; k < TD_ARRAY_SIZE(cases); k++) {
    double h = estimate(cases[k].spec, "hier", big);
    printf("%s 64 MiB all-reduce: hier %.1f us", cases[k].spec, h * 1e6);
    for (int i = 0; cases[k].rivals[i]; i++) {
      double r = estimate(cases[k].spec, cases[k].rivals[i], big);
      printf(", %s %.1f (x%.2f)", cases[k].rivals[i], r * 1e6, r / h);
      CU_ASSERT(h < r);
    }
    printf("\n");
  }
  /* 4 hosts x 2 ranks on links of 2 Gbit/s (the cluster suite's): per host link the flat ring
     carries 2(n-1)/n S = 1.75 S, hier 2(h-1)/h S = 1.5 S, a bound of 1.17x; Rabenseifner carries
     as much as hier with fewer DCN latencies (4 to 6). hier's shared-memory phases (S/2 each way
     at 10 GB/s) do not overlap its DCN phase: 1.14x here. */
  double ring = estimateAt("flat(8):hosts=2", "ring", big, 0.25e9);
  double hier = estimateAt("flat(8):hosts=2", "hier", big, 0.25e9);
  double rab = estimateAt("flat(8):hosts=2", "rabenseifner", big, 0.25e9);
  printf("flat(8):hosts=2 at 2 Gbit/s, 64 MiB: hier %.1f us, ring x%.3f, rabenseifner x%.5f\n",
         hier * 1e6, ring / hier, rab / hier);
  CU_ASSERT(ring / hier > 1.13 && ring / hier < 1.17);
  CU_ASSERT(rab <= hier && rab > 0.999 * hier);
}

/* Seconds of coll (count elements per block) with algo on spec at dcn_bw and dcn_flows. */
static double collAt(const char *spec, tdColl coll, const char *algo, uint64_t count, double dcn_bw,
                     double flows) {
  tdTopo t;
  char err[TD_ERRLEN] = "";
  parse(spec, &t);
  tdCostModel m;
  costModelDefault(&t, &m);
  m.dcn_bw = dcn_bw, m.dcn_flows = flows;
  tdCollArgs a;
  memset(&a, 0, sizeof(a));
  a.coll = coll, a.nranks = t.nranks, a.topo = &t, a.count = count, a.elem_size = 4;
  double sec = -1;
  CU_ASSERT(costEstimate(&a, algo, &m, &sec, err) == tpudistSuccess);
  return sec;
}

/* 4 hosts x 2 ranks at 2 Gbit/s, 16 MiB all-to-all (2 MiB blocks): direct starts 6 messages per
 * rank across hosts at once, 12 pairs per NIC direction; with 4 at the NIC's rate the other 8 take
 * twice as long: 20 blocks' time against pairwise's 12 (one exchange per rank at a time) and
 * hier's 12 (3 aggregated messages per rank). Without a limit direct leads by its latencies. A
 * chain broadcast pipelines one pair's messages: one flow, the same cost under a limit of 1. */
static void testFlowRanking(void) {
  const char *spec = "flat(8):hosts=4";
  uint64_t blk = (2u << 20) / 4;
  double d0 = collAt(spec, TD_COLL_ALLTOALL, "direct", blk, 0.25e9, 0);
  double p0 = collAt(spec, TD_COLL_ALLTOALL, "pairwise", blk, 0.25e9, 0);
  double d4 = collAt(spec, TD_COLL_ALLTOALL, "direct", blk, 0.25e9, 4);
  double p4 = collAt(spec, TD_COLL_ALLTOALL, "pairwise", blk, 0.25e9, 4);
  double h4 = collAt(spec, TD_COLL_ALLTOALL, "hier", blk, 0.25e9, 4);
  printf(
      "\n%s 16 MiB all-to-all at 2 Gbit/s: no limit direct %.0f us, pairwise %.0f; 4 flows "
      "direct %.0f, pairwise %.0f, hier %.0f\n",
      spec, d0 * 1e6, p0 * 1e6, d4 * 1e6, p4 * 1e6, h4 * 1e6);
  CU_ASSERT(d0 < p0);
  CU_ASSERT(near(p4, p0)); /* at most 2 pairs per NIC direction at once */
  CU_ASSERT(d4 / p4 > 1.6 && d4 / p4 < 1.8 && h4 < d4);
  uint64_t big = (64ull << 20) / 4;
  CU_ASSERT(near(collAt(spec, TD_COLL_BROADCAST, "chain", big, 0.25e9, 1),
                 collAt(spec, TD_COLL_BROADCAST, "chain", big, 0.25e9, 0)));
}

static const char *bestOf(const tdSelectTable *s, tdColl c, uint64_t bytes) {
  const char *names[TD_SELECT_MAX_CANDIDATES];
  int n = selectCandidates(s, c, bytes, names, TD_SELECT_MAX_CANDIDATES);
  return n > 0 ? names[0] : "";
}

/* Selection under a flow limit: a large all-to-all(-v) across hosts leaves direct; on one host
 * (no DCN) the table is the same with and without the limit. */
static void testFlowSelection(void) {
  char err[TD_ERRLEN] = "";
  const char *specs[] = {"flat(8):hosts=4", "flat(8)"};
  for (size_t k = 0; k < TD_ARRAY_SIZE(specs); k++) {
    tdTopo t;
    parse(specs[k], &t);
    tdCostModel m0, m4;
    costModelDefault(&t, &m0);
    m4 = m0;
    m4.dcn_flows = 4;
    tdSelectTable *s0 = NULL, *s4 = NULL;
    CU_ASSERT_FATAL(selectBuild(&t, 8, NULL, &m0, &s0, err) == tpudistSuccess);
    CU_ASSERT_FATAL(selectBuild(&t, 8, NULL, &m4, &s4, err) == tpudistSuccess);
    for (tdColl c = 0; c < TD_NUM_COLLS; c++)
      for (int b = 0; b <= 30; b++) {
        const char *a0 = bestOf(s0, c, 1ull << b), *a4 = bestOf(s4, c, 1ull << b);
        if (k == 1) CU_ASSERT_STRING_EQUAL(a0, a4);
        if (k == 0 && (c == TD_COLL_ALLTOALL || c == TD_COLL_ALLTOALLV) && b == 24) {
          printf("%s all-to-all%s 16 MiB: %s, with 4 flows %s\n", specs[k],
                 c == TD_COLL_ALLTOALLV ? "-v" : "", a0, a4);
          CU_ASSERT_STRING_EQUAL(a0, "direct");
          CU_ASSERT(strcmp(a4, "pairwise") == 0 || strcmp(a4, "hier") == 0);
        }
      }
    selectFree(s0);
    selectFree(s4);
  }
}

/* The first candidate of coll at bytes. */
static const char *best(const tdSelectTable *s, uint64_t bytes) {
  const char *names[TD_SELECT_MAX_CANDIDATES];
  int n = selectCandidates(s, TD_COLL_ALLREDUCE, bytes, names, TD_SELECT_MAX_CANDIDATES);
  return n > 0 ? names[0] : "";
}

static void testSelection(void) {
  const char *specs[] = {"2x2:slices=2",    "2:slices=2",      "flat(2):slices=2",
                         "flat(4):hosts=2", "flat(6):hosts=2", "flat(8):hosts=4"};
  char err[TD_ERRLEN] = "";
  for (size_t k = 0; k < TD_ARRAY_SIZE(specs); k++) {
    tdTopo t;
    parse(specs[k], &t);
    tdSelectTable *s = NULL;
    CU_ASSERT_FATAL(selectBuild(&t, t.nranks, NULL, NULL, &s, err) == tpudistSuccess);
    printf("%s: all-reduce 8 B %s, 16 MiB %s, 1 GiB %s\n", specs[k], best(s, 8), best(s, 16 << 20),
           best(s, 1ull << 30));
    CU_ASSERT_STRING_EQUAL(best(s, 16 << 20), "hier");
    CU_ASSERT_STRING_EQUAL(best(s, 1ull << 30), "hier");
    CU_ASSERT_STRING_EQUAL(best(s, 8), "recdbl");
    selectFree(s);
  }
  /* the DCN figure decides: a DCN as fast as shared memory, and the flat ring is back */
  tdTopo t;
  parse("flat(4):hosts=2", &t);
  tdCostModel m;
  costModelDefault(&t, &m);
  m.dcn_bw = 1e12, m.dcn_latency = m.hop_latency;
  tdSelectTable *s = NULL;
  CU_ASSERT_FATAL(selectBuild(&t, 4, NULL, &m, &s, err) == tpudistSuccess);
  CU_ASSERT_STRING_EQUAL(best(s, 1ull << 30), "ring");
  selectFree(s);
  /* one host, one slice: no DCN, and hier (the ring there) is not preferred on a tie */
  parse("flat(4)", &t);
  CU_ASSERT_FATAL(selectBuild(&t, 4, NULL, NULL, &s, err) == tpudistSuccess);
  CU_ASSERT(strcmp(best(s, 1ull << 30), "hier") != 0);
  selectFree(s);
}

int main(void) {
  CU_TestInfo tests[] = {{"flat DCN messages", testFlatDcn},
                         {"torus DCN messages", testTorusDcn},
                         {"hier ranks first", testRanking},
                         {"selection", testSelection},
                         {"flow limit", testFlowLimit},
                         {"flow limit ranking", testFlowRanking},
                         {"flow limit selection", testFlowSelection},
                         CU_TEST_INFO_NULL};
  return tdCUnitMain("cost-dcn", tests);
}
