/*
 * test_numa.c - CUnit tests of the NUMA level inside a host (docs/host.md, "NUMA level"): the
 * ranks per NUMA node the host model gives for a placement (hostPlaceNodes, hostNumaBlocks) on a
 * synthetic 2 packages x 2 NUMA nodes x 4 cores machine and on one of one node, and for any list of
 * nodes; the cost of a copy across nodes from a recorded host's distance matrix
 * (tests/host/numa-2x2-slit.xml), the default without one, the knob over both; the level in the
 * flat topology (flat(N):numa=M, topoSetFlatNuma, topoNumaOf) with its errors; the grouping the
 * hierarchical generators take from it (hierGroups, and the peers of a hier all-reduce: ring
 * neighbours inside the node, the same local index on the other nodes); and the selection it
 * leads to under the cost model (hier for large all-reduces across NUMA nodes, never without the
 * level). Expected values are worked out by hand from the descriptions.
 */
#include <stdlib.h>
#include <string.h>

#include "../cu_main.h"
#include "algos.h"
#include "cost.h"
#include "hier.h"
#include "host_detect.h"
#include "host_synth.h"
#include "rt_topo.h"
#include "select.h"
#include "step_sem.h"

#define TWO_BY_TWO_BY_FOUR "pack:2 numa:2 core:4 pu:1"

static char err[TD_ERRLEN];

static tdTopo parsed(const char *spec) {
  tdTopo t;
  tpudistResult_t r = topoParse(spec, 0, &t, err);
  if (r != tpudistSuccess) fprintf(stderr, "%s: %s\n", spec, err);
  CU_ASSERT_EQUAL_FATAL(r, tpudistSuccess);
  return t;
}

/* The NUMA level local_size ranks of h form when placed under mode. */
static int hostNumaRanks(const tdHost *h, int local_size, int mode) {
  int node[64];
  CU_ASSERT_FATAL(local_size <= 64);
  hostPlaceNodes(h, local_size, mode, node);
  return hostNumaBlocks(node, local_size);
}

static void testHostNumaRanks(void) {
  tdHost h = synth(TWO_BY_TWO_BY_FOUR);
  CU_ASSERT(h.npackages == 2 && h.nnuma == 4 && h.ncores == 16);
  /* core: rank r on core r*16/L, node core/4 */
  CU_ASSERT_EQUAL(hostNumaRanks(&h, 16, TD_BIND_CORE), 4);
  CU_ASSERT_EQUAL(hostNumaRanks(&h, 8, TD_BIND_CORE), 2);
  CU_ASSERT_EQUAL(hostNumaRanks(&h, 32, TD_BIND_CORE), 8); /* two ranks a core */
  CU_ASSERT_EQUAL(hostNumaRanks(&h, 4, TD_BIND_CORE), 1);  /* one rank a node */
  CU_ASSERT_EQUAL(hostNumaRanks(&h, 2, TD_BIND_CORE), 1);  /* cores 0 and 8: nodes 0 and 2 */
  CU_ASSERT_EQUAL(hostNumaRanks(&h, 6, TD_BIND_CORE), 0);  /* nodes 0,0,1,2,2,3: unequal */
  CU_ASSERT_EQUAL(hostNumaRanks(&h, 1, TD_BIND_CORE), 0);  /* one node */
  /* numa: rank r on node r*4/L; auto is numa on this host */
  CU_ASSERT_EQUAL(hostNumaRanks(&h, 8, TD_BIND_NUMA), 2);
  CU_ASSERT_EQUAL(hostNumaRanks(&h, 16, TD_BIND_AUTO), 4);
  CU_ASSERT_EQUAL(hostNumaRanks(&h, 8, TD_BIND_NONE), 0); /* placement unknown */
  CU_ASSERT_EQUAL(hostNumaRanks(&h, 0, TD_BIND_CORE), 0);
  hostFree(&h);
  h = synth("pack:1 core:16 pu:1"); /* one node: never a level */
  CU_ASSERT_EQUAL(hostNumaRanks(&h, 16, TD_BIND_CORE), 0);
  CU_ASSERT_EQUAL(hostNumaRanks(&h, 8, TD_BIND_NUMA), 0);
  CU_ASSERT_EQUAL(hostNumaRanks(&h, 8, TD_BIND_AUTO), 0);
  hostFree(&h);
}

static void testBlocks(void) {
  int twos[] = {0, 0, 1, 1}, back[] = {3, 3, 2, 2, 1, 1, 0, 0}, again[] = {0, 0, 1, 1, 0, 0};
  int gaps[] = {0, 2}, one[] = {2, 2, 2}, unknown[] = {0, -1}, uneven[] = {0, 0, 1};
  CU_ASSERT_EQUAL(hostNumaBlocks(twos, 4), 2);
  CU_ASSERT_EQUAL(hostNumaBlocks(back, 8), 2);  /* blocks in any node order */
  CU_ASSERT_EQUAL(hostNumaBlocks(gaps, 2), 1);  /* nodes 0 and 2: one rank a node */
  CU_ASSERT_EQUAL(hostNumaBlocks(again, 6), 0); /* node 0 in two blocks */
  CU_ASSERT_EQUAL(hostNumaBlocks(one, 3), 0);
  CU_ASSERT_EQUAL(hostNumaBlocks(unknown, 2), 0);
  CU_ASSERT_EQUAL(hostNumaBlocks(uneven, 3), 0);
  char b[32];
  CU_ASSERT_STRING_EQUAL(hostNodeList(back, 8, b, sizeof(b)), "0-3");
  CU_ASSERT_STRING_EQUAL(hostNodeList(gaps, 2, b, sizeof(b)), "0,2");
  CU_ASSERT_STRING_EQUAL(hostNodeList(unknown, 2, b, sizeof(b)), "?");
}

/* The factor from a recorded host's latency matrix (tests/host/make_xml.sh: 10 in a node, 12 to
 * the other node of the package, 21 across packages) over the nodes a communicator uses; none from
 * a host without one; and the order TPU_DIST_NUMA_FACTOR_PCT, the host's, the default. */
static void testFactor(void) {
  tdHost h;
  CU_ASSERT_FATAL(hostDetect(NULL, TD_TEST_HOSTS "/numa-2x2-slit.xml", &h, err) == tpudistSuccess);
  CU_ASSERT(h.nnuma == 4 && h.numa_dist && h.numa_dist[0 * 4 + 3] == 21 && h.numa_dist[5] == 10);
  int all[] = {0, 0, 1, 1, 2, 2, 3, 3}, pkg[] = {0, 1}, across[] = {0, 2}, far[] = {1, 1, 3, 3};
  int alone[] = {2, 2}, unknown[] = {0, -1};
  CU_ASSERT_EQUAL(hostNumaFactorPct(&h, all, 8), 180); /* remote mean (12+21+21)/3 = 18 */
  CU_ASSERT_EQUAL(hostNumaFactorPct(&h, pkg, 2), 120);
  CU_ASSERT_EQUAL(hostNumaFactorPct(&h, across, 2), 210); /* SLIT 10 / 21 */
  CU_ASSERT_EQUAL(hostNumaFactorPct(&h, far, 4), 210);
  CU_ASSERT_EQUAL(hostNumaFactorPct(&h, alone, 2), 0); /* one node: nothing across */
  CU_ASSERT_EQUAL(hostNumaFactorPct(&h, unknown, 2), 0);
  tdConfig cfg = {.numa_factor_pct = -1};
  const char *from;
  CU_ASSERT_EQUAL(configNumaFactorPct(&cfg, hostNumaFactorPct(&h, across, 2), &from), 210);
  CU_ASSERT_STRING_EQUAL(from, "hwloc distances");
  tdTopo t = parsed("flat(8):numa=2");
  tdCostModel m;
  configCostModel(&cfg, &t, 210, &m);
  CU_ASSERT_EQUAL(m.numa_factor, 2.1);
  cfg.numa_factor_pct = 150; /* the knob wins */
  CU_ASSERT_EQUAL(configNumaFactorPct(&cfg, 210, &from), 150);
  CU_ASSERT_STRING_EQUAL(from, "TPU_DIST_NUMA_FACTOR_PCT");
  hostFree(&h);
  h = synth(TWO_BY_TWO_BY_FOUR); /* no matrix: the default, 2 */
  CU_ASSERT_PTR_NULL(h.numa_dist);
  CU_ASSERT_EQUAL(hostNumaFactorPct(&h, all, 8), 0);
  cfg.numa_factor_pct = -1;
  CU_ASSERT_EQUAL(configNumaFactorPct(&cfg, hostNumaFactorPct(&h, all, 8), &from), 200);
  CU_ASSERT_STRING_EQUAL(from, "default");
  configCostModel(&cfg, &t, 0, &m);
  CU_ASSERT_EQUAL(m.numa_factor, TD_COST_NUMA_FACTOR);
  hostFree(&h);
}

static void refused(const char *spec, const char *want) {
  tdTopo t;
  err[0] = '\0';
  CU_ASSERT_EQUAL(topoParse(spec, 0, &t, err), tpudistInvalidArgument);
  if (!strstr(err, want)) fprintf(stderr, "%s: '%s' lacks '%s'\n", spec, err, want);
  CU_ASSERT_PTR_NOT_NULL(strstr(err, want));
}

static void testTopoLevel(void) {
  tdTopo t = parsed("flat(16):numa=4");
  char buf[64];
  topoFormat(&t, buf, sizeof(buf));
  CU_ASSERT_STRING_EQUAL(buf, "flat(16):numa=4");
  CU_ASSERT(topoNumNuma(&t) == 4 && topoNumaOf(&t, 0) == 0 && topoNumaOf(&t, 5) == 1 &&
            topoNumaOf(&t, 15) == 3 && topoNumaOf(&t, 16) == -1 && topoNumaOf(&t, -1) == -1);
  CU_ASSERT_FALSE(topoHasDcn(&t)); /* a level inside the host: no DCN */
  CU_ASSERT_EQUAL(topoDcnDomain(&t, 15), 0);
  t = parsed("flat(16):numa=4:hosts=8");
  topoFormat(&t, buf, sizeof(buf));
  CU_ASSERT_STRING_EQUAL(buf, "flat(16):hosts=8:numa=4");
  CU_ASSERT(topoNumNuma(&t) == 4 && topoNumHosts(&t) == 2 && topoHasDcn(&t));
  topoInitFlat(&t, 12);
  CU_ASSERT(topoNumNuma(&t) == 1 && topoNumaOf(&t, 11) == 0);
  CU_ASSERT_EQUAL(topoSetFlatNuma(&t, 3, err), tpudistSuccess);
  CU_ASSERT_EQUAL(topoNumNuma(&t), 4);
  CU_ASSERT_EQUAL(topoSetFlatNuma(&t, 0, err), tpudistSuccess); /* clears it */
  CU_ASSERT_EQUAL(topoNumNuma(&t), 1);
  CU_ASSERT_EQUAL(topoSetFlatHosts(&t, 6, err), tpudistSuccess);
  CU_ASSERT_EQUAL(topoSetFlatNuma(&t, 4, err), tpudistInvalidArgument);
  CU_ASSERT_STRING_EQUAL(err, "4 ranks per NUMA node do not divide 6 ranks per host");
  refused("flat(16):numa=3", "3 ranks per NUMA node do not divide 16 ranks per slice");
  refused("flat(16):numa=0", "numa: expected a number >= 1");
  refused("flat(16):numa=2:numa=2", "numa given twice");
  refused("4x4:numa=2", "numa=M (ranks per NUMA node) is for flat only");
  t = parsed("4x4");
  CU_ASSERT_EQUAL(topoSetFlatNuma(&t, 2, err), tpudistInvalidArgument);
  CU_ASSERT_EQUAL(topoNumNuma(&t), 1);
}

/* Peers rank r talks to in the hier all-reduce on topo: a bitmask over ranks. */
static unsigned hierPeers(const tdTopo *t, int r) {
  tdCollArgs a = {.coll = TD_COLL_ALLREDUCE, .nranks = t->nranks, .rank = r, .count = 1031};
  a.topo = t, a.elem_size = 4;
  tdSched s;
  schedInit(&s, &a, "hier");
  CU_ASSERT_EQUAL_FATAL(algoRun(algoFind(TD_COLL_ALLREDUCE, "hier"), &a, &s, err), tpudistSuccess);
  unsigned m = 0;
  for (uint32_t i = 0; i < s.nstreams; i++)
    for (uint32_t j = 0; j < s.streams[i].nsteps; j++) {
      int sp = schedSendPeer(&s.streams[i].steps[j]), rp = schedRecvPeer(&s.streams[i].steps[j]);
      if (sp >= 0) m |= 1u << sp;
      if (rp >= 0) m |= 1u << rp;
    }
  schedFree(&s);
  return m;
}

static void testGrouping(void) {
  tdTopo t = parsed("flat(16):numa=4");
  CU_ASSERT_EQUAL(hierGroups(&t, 16), 4);
  CU_ASSERT_EQUAL(hierGroups(&t, 8), 1); /* another rank count: not this topology */
  /* rank 5 (node 1, local index 1): ring neighbours 4 and 6 in its node, then local index 1 of
   * the ring of nodes: ranks 1 and 9 */
  CU_ASSERT_EQUAL(hierPeers(&t, 5), (1u << 4) | (1u << 6) | (1u << 1) | (1u << 9));
  t = parsed("flat(8):numa=2");
  CU_ASSERT_EQUAL(hierGroups(&t, 8), 4);
  CU_ASSERT_EQUAL(hierPeers(&t, 3), (1u << 2) | (1u << 1) | (1u << 5));
  t = parsed("flat(16):hosts=8:numa=4"); /* hosts come first: two levels only */
  CU_ASSERT_EQUAL(hierGroups(&t, 16), 2);
  t = parsed("flat(16):numa=16"); /* one node: no outer level */
  CU_ASSERT_EQUAL(hierGroups(&t, 16), 1);
  t = parsed("flat(16):numa=1"); /* one rank a node: nothing to group */
  CU_ASSERT_EQUAL(hierGroups(&t, 16), 1);
  t = parsed("flat(16)");
  CU_ASSERT_EQUAL(hierGroups(&t, 16), 1);
}

/* The best all-reduce at bytes on spec under model m (NULL: the defaults). */
static const char *best(const char *spec, uint64_t bytes, const tdCostModel *m, char *out) {
  tdTopo t = parsed(spec);
  tdSelectTable *s = NULL;
  CU_ASSERT_FATAL(selectBuild(&t, t.nranks, NULL, m, &s, err) == tpudistSuccess);
  const char *names[1];
  CU_ASSERT_FATAL(selectCandidates(s, TD_COLL_ALLREDUCE, bytes, names, 1) == 1);
  strcpy(out, names[0]);
  selectFree(s);
  return out;
}

static void testSelection(void) {
  char b[32];
  CU_ASSERT_STRING_EQUAL(best("flat(16):numa=4", 64ull << 20, NULL, b), "hier");
  CU_ASSERT_STRING_EQUAL(best("flat(16):numa=4", 2ull << 20, NULL, b), "hier");
  CU_ASSERT_STRING_EQUAL(best("flat(8):numa=4", 64ull << 20, NULL, b), "hier"); /* 2 sockets */
  CU_ASSERT_STRING_NOT_EQUAL(best("flat(16):numa=4", 8, NULL, b), "hier");      /* rounds rule */
  for (int lg = 3; lg <= 30; lg += 3) { /* one node: the same plans without the level */
    CU_ASSERT_STRING_NOT_EQUAL(best("flat(16)", 1ull << lg, NULL, b), "hier");
    CU_ASSERT_STRING_NOT_EQUAL(best("flat(8)", 1ull << lg, NULL, b), "hier");
  }
  /* nodes alike (factor 1): the level gives the large all-reduce no reason to go through it */
  tdTopo t = parsed("flat(16):numa=4");
  tdCostModel m;
  costModelDefault(&t, &m);
  CU_ASSERT_EQUAL(m.numa_factor, TD_COST_NUMA_FACTOR);
  m.numa_factor = 1;
  CU_ASSERT_STRING_NOT_EQUAL(best("flat(16):numa=4", 64ull << 20, &m, b), "hier");
}

int main(void) {
  CU_TestInfo tests[] = {
      {"ranks per NUMA node from the placement", testHostNumaRanks},
      {"the NUMA level from each rank's node", testBlocks},
      {"the factor from the host's distances", testFactor},
      {"the NUMA level of a flat topology", testTopoLevel},
      {"grouping by NUMA node", testGrouping},
      {"selection across NUMA nodes", testSelection},
      CU_TEST_INFO_NULL,
  };
  return tdCUnitMain("numa", tests);
}
