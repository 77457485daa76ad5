/*
 * test_host.c - CUnit tests of the host model (topology/host.h) over machines described to hwloc
 * (synthetic descriptions and an XML file written from one): counts, cores with their processing
 * units, caches, and every decision made from them: the core or NUMA node a local rank binds to
 * under TPU_DIST_BIND (one NUMA node; 2 packages x 2 NUMA nodes x 16 cores; more ranks than
 * cores), a launcher's binding left alone, the NUMA node of a set of units, the piece size from
 * the caches. Expected values are worked out by hand from the descriptions. Also the real host as
 * this process sees it (its units match sched_getaffinity).
 */
#include <hwloc.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../cu_main.h"
#include "host_detect.h"
#include "host_synth.h"

#define TWO_BY_TWO "pack:2 numa:2 core:16 pu:1"

static char err[TD_ERRLEN];

static tdHostPlace place(const tdHost *h, int r, int l, int mode) {
  tdHostPlace p;
  hostPlace(h, r, l, mode, NULL, &p);
  return p;
}

static void testOneNuma(void) {
  tdHost h = synth("pack:1 core:8 pu:2");
  CU_ASSERT(h.npackages == 1 && h.nnuma == 1 && h.ncores == 8 && h.npus == 16);
  CU_ASSERT(!h.this_system && !strcmp(h.source, "synthetic: pack:1 core:8 pu:2"));
  CU_ASSERT_FALSE(hostMultiNuma(&h));
  for (int c = 0; c < 8; c++) /* synthetic OS indices follow the tree: core c holds 2c, 2c+1 */
    CU_ASSERT(h.cores[c].npu == 2 && h.pus[h.cores[c].pu0] == 2 * c &&
              h.pus[h.cores[c].pu0 + 1] == 2 * c + 1 && h.cores[c].numa == 0);
  uint8_t mask[16];
  char list[64];
  for (int r = 0; r < 4; r++) { /* 4 ranks of 8 cores: cores 0, 2, 4, 6 */
    tdHostPlace p = place(&h, r, 4, TD_BIND_CORE);
    CU_ASSERT(p.action == TD_PLACE_CORE && p.core == 2 * r && p.numa == 0);
    CU_ASSERT_EQUAL(hostPlaceMask(&h, &p, mask), 2);
    char want[16];
    snprintf(want, sizeof(want), "%d-%d", 4 * r, 4 * r + 1);
    CU_ASSERT_STRING_EQUAL(hostMaskList(&h, mask, list, sizeof(list)), want);
  }
  CU_ASSERT_EQUAL(place(&h, 1, 4, TD_BIND_AUTO).action, TD_PLACE_NONE); /* one node: unbound */
  CU_ASSERT_STRING_EQUAL(place(&h, 1, 4, TD_BIND_AUTO).why,
                         "TPU_DIST_BIND=auto on one NUMA node: not bound");
  CU_ASSERT_STRING_EQUAL(place(&h, 1, 4, TD_BIND_NONE).why, "TPU_DIST_BIND=none: not bound");
  CU_ASSERT_EQUAL(place(&h, 1, 4, TD_BIND_NONE).action, TD_PLACE_NONE);
  tdHostPlace p = place(&h, 3, 4, TD_BIND_NUMA);
  CU_ASSERT(p.action == TD_PLACE_NUMA && p.numa == 0);
  CU_ASSERT_EQUAL(hostPlaceMask(&h, &p, mask), 16);
  CU_ASSERT_STRING_EQUAL(hostMaskList(&h, mask, list, sizeof(list)), "0-15");
  hostFree(&h);
}

static void testTwoPackagesFourNodes(void) {
  tdHost h = synth(TWO_BY_TWO);
  CU_ASSERT(h.npackages == 2 && h.nnuma == 4 && h.ncores == 64 && h.npus == 64);
  CU_ASSERT_TRUE(hostMultiNuma(&h));
  for (int c = 0; c < 64; c++)
    CU_ASSERT(h.cores[c].package == c / 32 && h.cores[c].numa == c / 16 && h.cores[c].npu == 1);
  for (int r = 0; r < 4; r++) { /* 4 ranks: one per node, on its first core */
    tdHostPlace p = place(&h, r, 4, TD_BIND_CORE);
    CU_ASSERT(p.action == TD_PLACE_CORE && p.core == 16 * r && p.numa == r);
  }
  for (int r = 0; r < 8; r++) { /* 8 ranks: two per node, consecutive ranks together */
    CU_ASSERT_EQUAL(place(&h, r, 8, TD_BIND_CORE).core, 8 * r);
    CU_ASSERT_EQUAL(place(&h, r, 8, TD_BIND_CORE).numa, r / 2);
    tdHostPlace p = place(&h, r, 8, TD_BIND_NUMA);
    CU_ASSERT(p.action == TD_PLACE_NUMA && p.numa == r / 2 && p.core == -1);
    CU_ASSERT_EQUAL(place(&h, r, 8, TD_BIND_AUTO).numa, r / 2); /* auto: numa here */
    CU_ASSERT_EQUAL(place(&h, r, 8, TD_BIND_AUTO).action, TD_PLACE_NUMA);
  }
  for (int r = 0; r < 64; r++) CU_ASSERT_EQUAL(place(&h, r, 64, TD_BIND_CORE).core, r);
  uint8_t mask[64];
  char list[64];
  tdHostPlace p = place(&h, 5, 8, TD_BIND_NUMA); /* node 2: cores 32-47 */
  CU_ASSERT_EQUAL(hostPlaceMask(&h, &p, mask), 16);
  CU_ASSERT_STRING_EQUAL(hostMaskList(&h, mask, list, sizeof(list)), "32-47");
  CU_ASSERT_EQUAL(hostMaskNuma(&h, mask), 2);
  CU_ASSERT_EQUAL(hostMaskCores(&h, mask), 16);
  mask[16] = 1; /* one unit of node 1 too */
  CU_ASSERT_EQUAL(hostMaskNuma(&h, mask), -1);
  CU_ASSERT_STRING_EQUAL(hostMaskList(&h, mask, list, sizeof(list)), "16,32-47");
  memset(mask, 0, sizeof(mask));
  CU_ASSERT_EQUAL(hostMaskNuma(&h, mask), -1);
  /* 2 ranks on 4 nodes: nodes 0 and 2, one per package */
  CU_ASSERT(place(&h, 0, 2, TD_BIND_NUMA).numa == 0 && place(&h, 1, 2, TD_BIND_NUMA).numa == 2);
  hostFree(&h);
}

static void testMoreRanksThanCores(void) {
  tdHost h = synth("pack:1 core:4 pu:1");
  static const int want[10] = {0, 0, 0, 1, 1, 2, 2, 2, 3, 3}; /* r * 4 / 10 */
  int per[4] = {0};
  for (int r = 0; r < 10; r++) {
    tdHostPlace p = place(&h, r, 10, TD_BIND_CORE);
    CU_ASSERT(p.action == TD_PLACE_CORE && p.core == want[r]);
    per[p.core]++;
  }
  for (int c = 0; c < 4; c++) CU_ASSERT(per[c] == 2 || per[c] == 3); /* as even as can be */
  hostFree(&h);
  h = synth("pack:2 pu:4"); /* no core level: each unit is a core */
  CU_ASSERT(h.ncores == 8 && h.npus == 8 && h.npackages == 2 && h.cores[5].package == 1);
  CU_ASSERT_EQUAL(place(&h, 3, 4, TD_BIND_CORE).core, 6);
  hostFree(&h);
}

static void testLauncherAndBadArgs(void) {
  tdHost h = synth(TWO_BY_TWO);
  uint8_t bound[64];
  tdHostPlace p;
  memset(bound, 1, sizeof(bound));
  hostPlace(&h, 1, 4, TD_BIND_CORE, bound, &p); /* the whole host: not bound by anyone */
  CU_ASSERT(p.action == TD_PLACE_CORE && p.core == 16);
  bound[63] = 0; /* one unit missing: a launcher bound the process */
  for (int mode = TD_BIND_NONE; mode <= TD_BIND_AUTO; mode++) {
    hostPlace(&h, 1, 4, mode, bound, &p);
    CU_ASSERT(p.action == TD_PLACE_LAUNCHER && p.core == -1 && p.numa == -1); /* 4 nodes */
    CU_ASSERT_PTR_NOT_NULL(strstr(p.why, "launcher"));
  }
  memset(bound, 0, sizeof(bound)); /* bound to one core of node 2: its node is known */
  bound[h.cores[40].pu0] = 1;
  hostPlace(&h, 1, 4, TD_BIND_NONE, bound, &p);
  CU_ASSERT(p.action == TD_PLACE_LAUNCHER && p.numa == h.cores[40].numa && p.numa == 2);
  static const int bad[][2] = {{0, 0}, {-1, 4}, {4, 4}, {0, -2}};
  for (int i = 0; i < (int)TD_ARRAY_SIZE(bad); i++) {
    hostPlace(&h, bad[i][0], bad[i][1], TD_BIND_CORE, NULL, &p);
    CU_ASSERT(p.action == TD_PLACE_NONE && strstr(p.why, "not placed"));
  }
  CU_ASSERT(hostBindParse("none") == TD_BIND_NONE && hostBindParse("CORE") == TD_BIND_CORE);
  CU_ASSERT(hostBindParse("Numa") == TD_BIND_NUMA && hostBindParse("auto") == TD_BIND_AUTO);
  CU_ASSERT(hostBindParse("socket") == -1 && hostBindParse("") == -1);
  CU_ASSERT_STRING_EQUAL(hostBindName(TD_BIND_NUMA), "numa");
  hostFree(&h);
}

static long chunkOf(const char *desc) {
  tdHost h = synth(desc);
  long c = hostChunkBytes(&h, 0);
  hostFree(&h);
  return c;
}

static void testChunkFromCaches(void) {
  CU_ASSERT_EQUAL(chunkOf("pack:1 core:4 l2:1(size=1MiB) pu:1"), 128 << 10);
  CU_ASSERT_EQUAL(chunkOf("pack:1 core:4 l2:1(size=2MiB) pu:1"), 256 << 10);
  CU_ASSERT_EQUAL(chunkOf("pack:1 core:4 l2:1(size=512KiB) pu:1"), 64 << 10);
  CU_ASSERT_EQUAL(chunkOf("pack:1 core:4 l2:1(size=256KiB) pu:1"), 64 << 10);   /* floor */
  CU_ASSERT_EQUAL(chunkOf("pack:1 core:4 l2:1(size=64MiB) pu:1"), 1 << 20);     /* ceiling */
  CU_ASSERT_EQUAL(chunkOf("pack:1 core:4 l2:1(size=1536KiB) pu:1"), 128 << 10); /* power of 2 */
  /* an L2 shared by 2 cores: each core's share is 1 MiB */
  CU_ASSERT_EQUAL(chunkOf("pack:1 l2:2(size=2MiB) core:2 pu:1"), 128 << 10);
  /* no L2: a core's share of L3 (32 MiB / 16 cores = 2 MiB) */
  CU_ASSERT_EQUAL(chunkOf("pack:1 l3:1(size=32MiB) core:16 pu:1"), 256 << 10);
  CU_ASSERT_EQUAL(chunkOf(TWO_BY_TWO), TD_HOST_CHUNK_DEFAULT); /* no caches */
  CU_ASSERT_EQUAL(hostChunkBytes(NULL, 0), TD_HOST_CHUNK_DEFAULT);
  tdHost h = synth("pack:1 core:4 l2:1(size=2MiB) pu:1");
  CU_ASSERT_EQUAL(hostChunkBytes(&h, 4096), 4096); /* TPU_DIST_CHUNK_BYTES wins */
  CU_ASSERT(h.l2_bytes == 2u << 20 && h.l2_cores == 1 && h.l3_bytes == 0);
  hostFree(&h);
}

/* An XML file written by hwloc from a synthetic machine reads back as the same model. */
static void testXml(void) {
  const char *desc = "pack:2 numa:2 l3:1(size=8MiB) core:4 l2:1(size=1MiB) pu:2";
  char path[] = "/tmp/td_host_XXXXXX";
  int fd = mkstemp(path);
  CU_ASSERT_FATAL(fd >= 0);
  close(fd);
  hwloc_topology_t t;
  CU_ASSERT_FATAL(hwloc_topology_init(&t) == 0);
  CU_ASSERT_FATAL(hwloc_topology_set_synthetic(t, desc) == 0 && hwloc_topology_load(t) == 0);
  CU_ASSERT_FATAL(hwloc_topology_export_xml(t, path, 0) == 0);
  hwloc_topology_destroy(t);
  tdHost a = synth(desc), b;
  CU_ASSERT_EQUAL_FATAL(hostDetect(NULL, path, &b, err), tpudistSuccess);
  CU_ASSERT(!strncmp(b.source, "xml: ", 5) && !b.this_system);
  CU_ASSERT(b.npackages == 2 && b.nnuma == 4 && b.ncores == 16 && b.npus == 32);
  CU_ASSERT(a.ncores == b.ncores && a.npus == b.npus && a.l2_bytes == b.l2_bytes &&
            a.l3_bytes == b.l3_bytes && a.l3_cores == b.l3_cores && b.l3_cores == 4);
  for (int c = 0; c < b.ncores; c++)
    CU_ASSERT(a.cores[c].numa == b.cores[c].numa && a.cores[c].package == b.cores[c].package &&
              a.pus[a.cores[c].pu0] == b.pus[b.cores[c].pu0]);
  for (int r = 0; r < 8; r++) CU_ASSERT_EQUAL(place(&b, r, 8, TD_BIND_CORE).core, 2 * r);
  CU_ASSERT_EQUAL(hostChunkBytes(&b, 0), 128 << 10);
  hostFree(&a);
  hostFree(&b);
  unlink(path);
  CU_ASSERT_EQUAL(hostDetect(NULL, "/nonexistent/td_host.xml", &b, err), tpudistInvalidArgument);
  CU_ASSERT_PTR_NOT_NULL(strstr(err, "/nonexistent/td_host.xml"));
  CU_ASSERT_EQUAL(hostDetect("nosuchlevel:3", NULL, &b, err), tpudistInvalidArgument);
  CU_ASSERT_PTR_NOT_NULL(strstr(err, "nosuchlevel:3"));
}

/* The real host (unless HWLOC_SYNTHETIC or HWLOC_XMLFILE replace it): the units the process was
 * found on are the ones sched_getaffinity gives, read once (the same object every time). */
static void testThisHost(void) {
  const uint8_t *bound;
  const tdHost *h = hostThis(&bound, err);
  CU_ASSERT_PTR_NOT_NULL_FATAL(h);
  CU_ASSERT_PTR_EQUAL(hostThis(NULL, err), h);
  CU_ASSERT(h->ncores >= 1 && h->npus >= h->ncores && h->nnuma >= 1);
  if (!h->this_system) return;
  cpu_set_t set;
  CU_ASSERT_FATAL(sched_getaffinity(0, sizeof(set), &set) == 0);
  int n = 0;
  for (int i = 0; i < h->npus; i++) {
    CU_ASSERT_EQUAL(bound[i], CPU_ISSET(h->pus[i], &set) ? 1 : 0);
    n += bound[i];
  }
  CU_ASSERT_EQUAL(n, CPU_COUNT(&set));
}

int main(void) {
  CU_TestInfo tests[] = {
      {"one NUMA node", testOneNuma},
      {"2 packages x 2 NUMA nodes x 16 cores", testTwoPackagesFourNodes},
      {"more ranks than cores", testMoreRanksThanCores},
      {"launcher binding, bad arguments, TPU_DIST_BIND names", testLauncherAndBadArgs},
      {"piece size from the caches", testChunkFromCaches},
      {"XML file", testXml},
      {"this host", testThisHost},
      CU_TEST_INFO_NULL,
  };
  return tdCUnitMain("host", tests);
}
