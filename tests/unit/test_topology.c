/*
 * test_topology.c - CUnit tests of the pure torus model (topology/): coordinates, neighbours with
 * and without wrap, dimension-ordered routes checked against breadth-first search over the links,
 * twisted wiring and its hop-count gain, host blocks, sub-blocks, the TPU_DIST_TOPOLOGY parser
 * and the TPU runtime variables with each generation's wrap rule.
 *
 * Expected numbers are worked out by hand or by formulas independent of the code (ring distance
 * min(d, L - d)); the twisted averages come from a breadth-first search over the documented
 * wiring rule, written out in docs/topology.md.
 */
#include <stdlib.h>
#include <string.h>

#include "../cu_main.h"
#include "torus.h"

static char err[TD_ERRLEN];

static tdTopo parseOk(const char *spec, int nranks) {
  tdTopo t;
  err[0] = '\0';
  tpudistResult_t res = topoParse(spec, nranks, &t, err);
  if (res != tpudistSuccess) fprintf(stderr, "parse '%s': %s\n", spec, err);
  CU_ASSERT_EQUAL_FATAL(res, tpudistSuccess);
  return t;
}

/* Breadth-first distances from src over topoNeighbor links; returns the eccentricity. */
static int bfs(const tdTopo *t, int src, int *dist) {
  int *queue = malloc(sizeof(int) * t->nranks), head = 0, tail = 0, ecc = 0;
  for (int i = 0; i < t->nranks; i++) dist[i] = -1;
  dist[src] = 0;
  queue[tail++] = src;
  while (head < tail) {
    int u = queue[head++];
    ecc = dist[u];
    for (int a = 0; a < t->ndims; a++)
      for (int dir = -1; dir <= 1; dir += 2) {
        int v = topoNeighbor(t, u, a, dir);
        if (v >= 0 && dist[v] < 0) {
          dist[v] = dist[u] + 1;
          queue[tail++] = v;
        }
      }
  }
  free(queue);
  return ecc;
}

/* Checks share j of one route hop by hop: links exist, chain from src to dst, axes in order, one
 * direction per axis. Returns the hop count. */
static int checkShare(const tdTopo *t, int src, int dst, int j) {
  tdHop hops[64];
  int n = topoRoute(t, src, dst, j, hops, 64);
  CU_ASSERT_FATAL(n >= 0 && n <= 64);
  int cur = src, lastAxis = -1, lastDir = 0, ok = 1;
  for (int i = 0; i < n; i++) {
    ok &= hops[i].from == cur;
    ok &= hops[i].to == topoNeighbor(t, hops[i].from, hops[i].axis, hops[i].dir);
    ok &= hops[i].axis >= lastAxis;
    if (hops[i].axis == lastAxis) ok &= hops[i].dir == lastDir;
    lastAxis = hops[i].axis;
    lastDir = hops[i].dir;
    cur = hops[i].to;
  }
  ok &= cur == dst;
  CU_ASSERT(ok);
  CU_ASSERT_EQUAL(topoHops(t, src, dst), n);
  return n;
}

/* Every share of the route src -> dst (checkShare; all as long, no two alike); the hop count. */
static int checkRoute(const tdTopo *t, int src, int dst) {
  int k = topoPaths(t, src, dst), n = checkShare(t, src, dst, 0);
  CU_ASSERT_FATAL(k >= 1 && k <= TD_MAX_PATHS);
  tdHop a[64], b[64];
  for (int j = 1; j < k; j++) {
    CU_ASSERT_EQUAL(checkShare(t, src, dst, j), n);
    for (int i = 0; i < j; i++) {
      topoRoute(t, src, dst, i, a, 64);
      topoRoute(t, src, dst, j, b, 64);
      int same = 1;
      for (int h = 0; h < n; h++) same &= a[h].axis == b[h].axis && a[h].dir == b[h].dir;
      CU_ASSERT(!same || n == 0);
    }
  }
  CU_ASSERT_EQUAL(topoRoute(t, src, dst, k, a, 64), -1);
  return n;
}

/* Sum of route hop counts over all ordered pairs; checks every route is a shortest path. Writes
 * the largest hop count to *diameter. */
static long allPairsHops(const tdTopo *t, int *diameter) {
  int *dist = malloc(sizeof(int) * t->nranks), bad = 0;
  long sum = 0;
  *diameter = 0;
  for (int s = 0; s < t->nranks; s++) {
    int ecc = bfs(t, s, dist);
    *diameter = ecc > *diameter ? ecc : *diameter;
    for (int d = 0; d < t->nranks; d++) {
      int h = checkRoute(t, s, d);
      bad += h != dist[d];
      sum += h;
    }
  }
  CU_ASSERT_EQUAL(bad, 0);
  free(dist);
  return sum;
}

static void testFlat(void) {
  tdTopo t;
  topoInitFlat(&t, 8);
  CU_ASSERT_EQUAL(t.ndims, 0);
  CU_ASSERT_EQUAL(t.nranks, 8);
  CU_ASSERT_EQUAL(topoNeighbor(&t, 0, 0, 1), -1);
  CU_ASSERT(topoIsNeighbor(&t, 2, 7));
  CU_ASSERT(!topoIsNeighbor(&t, 3, 3));
  CU_ASSERT(!topoIsNeighbor(&t, 3, 8));
  CU_ASSERT_EQUAL(topoHops(&t, 1, 6), 1);
  CU_ASSERT_EQUAL(topoHops(&t, 6, 6), 0);
  tdHop h[2];
  CU_ASSERT_EQUAL(topoPaths(&t, 1, 6), 1);
  CU_ASSERT_EQUAL(topoRoute(&t, 1, 6, 0, h, 2), 1);
  CU_ASSERT(h[0].from == 1 && h[0].to == 6 && h[0].axis == -1 && h[0].dir == 0);
  CU_ASSERT_EQUAL(topoHostOf(&t, 5), 5);
  CU_ASSERT_EQUAL(topoNumHosts(&t), 8);
  int c[TD_MAX_DIMS] = {9, 9, 9, 9};
  topoRankToCoords(&t, 3, c);
  CU_ASSERT(c[0] == 0 && c[1] == 0 && c[2] == 0 && c[3] == 0);
  char buf[32];
  topoFormat(&t, buf, sizeof(buf));
  CU_ASSERT_STRING_EQUAL(buf, "flat(8)");
  tdTopo p = parseOk("flat", 8);
  CU_ASSERT(p.ndims == 0 && p.nranks == 8);
  p = parseOk(" flat(8) ", 8);
  CU_ASSERT(p.ndims == 0 && p.nranks == 8);
  CU_ASSERT_EQUAL(topoParse("flat(4)", 8, &p, err), tpudistInvalidArgument);
  CU_ASSERT(strstr(err, "4") && strstr(err, "8"));
  int members[3] = {1, 4, 6};
  topoSubBlock(&t, members, 3, &p);
  CU_ASSERT(p.ndims == 0 && p.nranks == 3);
  CU_ASSERT_EQUAL(topoSetHostBounds(&t, (int[]){2}, err), tpudistInvalidArgument);
}

static void checkRoundTrip(const char *spec) {
  tdTopo t = parseOk(spec, 0);
  int c[TD_MAX_DIMS], bad = 0;
  for (int r = 0; r < t.nranks; r++) {
    topoRankToCoords(&t, r, c);
    /* x fastest: rank = x + X*(y + Y*(z + Z*w)) */
    int expect = r, rest = r;
    for (int a = 0; a < t.ndims; a++) {
      bad += c[a] != rest % t.dims[a];
      rest /= t.dims[a];
    }
    for (int a = t.ndims; a < TD_MAX_DIMS; a++) bad += c[a] != 0;
    bad += topoCoordsToRank(&t, c) != expect;
  }
  CU_ASSERT_EQUAL(bad, 0);
}

static void testCoords(void) {
  checkRoundTrip("5");
  checkRoundTrip("4x3");
  checkRoundTrip("2x3x4");
  checkRoundTrip("2x2x3x2");
  tdTopo t = parseOk("4x4", 16);
  int c[TD_MAX_DIMS];
  topoRankToCoords(&t, 7, c);
  CU_ASSERT(c[0] == 3 && c[1] == 1 && c[2] == 0 && c[3] == 0);
  topoRankToCoords(&t, 16, c);
  CU_ASSERT(c[0] == -1 && c[1] == -1);
  CU_ASSERT_EQUAL(topoCoordsToRank(&t, (int[]){4, 0, 0, 0}), -1);
  CU_ASSERT_EQUAL(topoCoordsToRank(&t, (int[]){2, 3, 0, 0}), 14);
}

static void testNeighbors(void) {
  tdTopo t = parseOk("4x4", 16); /* both axes wrap by default */
  CU_ASSERT(t.wrap[0] && t.wrap[1]);
  CU_ASSERT_EQUAL(topoNeighbor(&t, 0, 0, 1), 1);
  CU_ASSERT_EQUAL(topoNeighbor(&t, 0, 0, -1), 3);
  CU_ASSERT_EQUAL(topoNeighbor(&t, 0, 1, 1), 4);
  CU_ASSERT_EQUAL(topoNeighbor(&t, 0, 1, -1), 12);
  CU_ASSERT_EQUAL(topoNeighbor(&t, 15, 0, 1), 12);
  CU_ASSERT(topoIsNeighbor(&t, 0, 12) && !topoIsNeighbor(&t, 0, 5));
  CU_ASSERT_EQUAL(topoNeighbor(&t, 0, 2, 1), -1);
  CU_ASSERT_EQUAL(topoNeighbor(&t, 0, 0, 2), -1);
  t = parseOk("4x4:wrap=0,0", 16);
  CU_ASSERT_EQUAL(topoNeighbor(&t, 0, 0, -1), -1);
  CU_ASSERT_EQUAL(topoNeighbor(&t, 0, 1, -1), -1);
  CU_ASSERT_EQUAL(topoNeighbor(&t, 3, 0, 1), -1);
  CU_ASSERT_EQUAL(topoNeighbor(&t, 3, 0, -1), 2);
  CU_ASSERT(!topoIsNeighbor(&t, 0, 3));
  t = parseOk("2x3", 6); /* length 2 does not wrap by default, length 3 does */
  CU_ASSERT(!t.wrap[0] && t.wrap[1]);
  CU_ASSERT_EQUAL(topoNeighbor(&t, 0, 0, -1), -1);
  CU_ASSERT_EQUAL(topoNeighbor(&t, 0, 1, -1), 4);
  t = parseOk("2:wrap=1", 2); /* a ring of two: both directions reach the other rank */
  CU_ASSERT(topoNeighbor(&t, 0, 0, 1) == 1 && topoNeighbor(&t, 0, 0, -1) == 1);
  t = parseOk("4x1:wrap=1,1", 4); /* an axis of length 1 has no link */
  CU_ASSERT(t.wrap[0] && !t.wrap[1]);
  CU_ASSERT_EQUAL(topoNeighbor(&t, 2, 1, 1), -1);
  /* every link is bidirectional */
  t = parseOk("3x4x2x2:wrap=1,0,1,0", 0);
  int bad = 0;
  for (int r = 0; r < t.nranks; r++)
    for (int a = 0; a < 4; a++) {
      int b = topoNeighbor(&t, r, a, 1);
      if (b >= 0) bad += topoNeighbor(&t, b, a, -1) != r;
    }
  CU_ASSERT_EQUAL(bad, 0);
}

static int ringDist(int d, int len, int wrap) {
  d = abs(d);
  return wrap && len - d < d ? len - d : d;
}

static void testRoutes(void) {
  tdTopo t = parseOk("8", 8);
  tdHop h[16];
  CU_ASSERT_EQUAL(topoRoute(&t, 0, 3, 0, h, 16), 3);
  CU_ASSERT(h[0].dir == 1 && h[2].to == 3);
  CU_ASSERT_EQUAL(topoRoute(&t, 0, 5, 0, h, 16), 3);
  CU_ASSERT(h[0].dir == -1 && h[0].to == 7 && h[2].to == 5);
  CU_ASSERT_EQUAL(topoPaths(&t, 0, 5), 1);
  CU_ASSERT_EQUAL(topoRoute(&t, 0, 5, 1, h, 16), -1);
  CU_ASSERT_EQUAL(topoPaths(&t, 0, 4), 2); /* a tie: half each way */
  CU_ASSERT_EQUAL(topoRoute(&t, 0, 4, 0, h, 16), 4);
  CU_ASSERT(h[0].dir == 1 && h[3].to == 4);
  CU_ASSERT_EQUAL(topoRoute(&t, 0, 4, 1, h, 16), 4);
  CU_ASSERT(h[0].dir == -1 && h[0].to == 7 && h[3].to == 4);
  t = parseOk("8:wrap=0", 8);
  CU_ASSERT_EQUAL(topoPaths(&t, 0, 4), 1); /* a line has one way */
  CU_ASSERT_EQUAL(topoRoute(&t, 0, 7, 0, h, 16), 7);
  CU_ASSERT_EQUAL(topoRoute(&t, 7, 1, 0, h, 16), 6);
  CU_ASSERT(h[0].dir == -1);
  t = parseOk("4x4x4", 64);
  int dst = 3 + 4 * (2 + 4 * 1); /* (0,0,0) -> (3,2,1): x -1, y +2 (tie), z +1 */
  CU_ASSERT_EQUAL(topoPaths(&t, 0, dst), 2);
  CU_ASSERT_EQUAL(topoRoute(&t, 0, dst, 0, h, 16), 4);
  CU_ASSERT(h[0].axis == 0 && h[0].dir == -1 && h[0].to == 3);
  CU_ASSERT(h[1].axis == 1 && h[1].dir == 1 && h[2].axis == 1 && h[2].dir == 1);
  CU_ASSERT(h[3].axis == 2 && h[3].dir == 1 && h[3].to == dst);
  CU_ASSERT_EQUAL(topoRoute(&t, 0, dst, 1, h, 16), 4);
  CU_ASSERT(h[1].axis == 1 && h[1].dir == -1 && h[2].axis == 1 && h[2].dir == -1);
  CU_ASSERT_EQUAL(topoPaths(&t, 0, 2 + 4 * (2 + 4 * 2)), 8); /* (2,2,2): every axis ties */
  /* too little room: the count is still returned, only maxhops written */
  h[1].from = -7;
  CU_ASSERT_EQUAL(topoRoute(&t, 0, dst, 0, h, 1), 4);
  CU_ASSERT_EQUAL(h[1].from, -7);
  CU_ASSERT_EQUAL(topoRoute(&t, 0, dst, 0, NULL, 0), 4);
  CU_ASSERT_EQUAL(topoHops(&t, 0, 64), -1);
  /* every pair of a mixed torus: shortest, dimension ordered, hops = sum of ring distances */
  t = parseOk("3x5x4:wrap=1,0,1", 60);
  int diam, bad = 0, cs[TD_MAX_DIMS], cd[TD_MAX_DIMS];
  long sum = allPairsHops(&t, &diam), expect = 0;
  for (int s = 0; s < 60; s++)
    for (int d = 0; d < 60; d++) {
      topoRankToCoords(&t, s, cs);
      topoRankToCoords(&t, d, cd);
      int want = 0;
      for (int a = 0; a < 3; a++) want += ringDist(cd[a] - cs[a], t.dims[a], t.wrap[a]);
      bad += topoHops(&t, s, d) != want;
      expect += want;
    }
  CU_ASSERT_EQUAL(bad, 0);
  CU_ASSERT_EQUAL(sum, expect);
  CU_ASSERT_EQUAL(diam, 1 + 4 + 2);
}

static void testTwistWiring(void) {
  tdTopo t = parseOk("4x4x8:twist", 128);
  CU_ASSERT(t.twisted && t.wrap[0] && t.wrap[1] && t.wrap[2]);
  int bad = 0, c[TD_MAX_DIMS];
  for (int y = 0; y < 4; y++)
    for (int z = 0; z < 8; z++) {
      int zs = (z + 4) % 8;
      /* +x from x=3 lands at x=0 with z shifted by 4; -x from x=0 likewise */
      bad += topoNeighbor(&t, topoCoordsToRank(&t, (int[]){3, y, z, 0}), 0, 1) !=
             topoCoordsToRank(&t, (int[]){0, y, zs, 0});
      bad += topoNeighbor(&t, topoCoordsToRank(&t, (int[]){0, y, z, 0}), 0, -1) !=
             topoCoordsToRank(&t, (int[]){3, y, zs, 0});
      /* +y wraparound is twisted the same way */
      bad += topoNeighbor(&t, topoCoordsToRank(&t, (int[]){y, 3, z, 0}), 1, 1) !=
             topoCoordsToRank(&t, (int[]){y, 0, zs, 0});
      /* inner links and the z wraparound are plain */
      bad += topoNeighbor(&t, topoCoordsToRank(&t, (int[]){1, y, z, 0}), 0, 1) !=
             topoCoordsToRank(&t, (int[]){2, y, z, 0});
      bad += topoNeighbor(&t, topoCoordsToRank(&t, (int[]){y, 2, 7, 0}), 2, 1) !=
             topoCoordsToRank(&t, (int[]){y, 2, 0, 0});
    }
  CU_ASSERT_EQUAL(bad, 0);
  /* n x 2n x 2n: the x wraparound lands at (y+n, z+n) */
  t = parseOk("4x8x8:twist", 256);
  topoRankToCoords(&t, topoNeighbor(&t, topoCoordsToRank(&t, (int[]){3, 1, 6, 0}), 0, 1), c);
  CU_ASSERT(c[0] == 0 && c[1] == 5 && c[2] == 2);
  topoRankToCoords(&t, topoNeighbor(&t, topoCoordsToRank(&t, (int[]){2, 7, 6, 0}), 1, 1), c);
  CU_ASSERT(c[0] == 2 && c[1] == 0 && c[2] == 6);
  /* any axis order: 8x4x4 has its long axis on x */
  t = parseOk("8x4x4:twist", 128);
  topoRankToCoords(&t, topoNeighbor(&t, topoCoordsToRank(&t, (int[]){1, 0, 2, 0}), 1, -1), c);
  CU_ASSERT(c[0] == 5 && c[1] == 3 && c[2] == 2);
}

/* Hop sums over all ordered pairs (self pairs included) and diameters. Plain: the sum of ring
 * averages L/4 per axis times N^2. Twisted: breadth-first search over the wiring rule. */
static void testTwistHops(void) {
  int dp, dt;
  tdTopo plain = parseOk("4x4x8", 128), tw = parseOk("4x4x8:twist", 128);
  long sp = allPairsHops(&plain, &dp), st = allPairsHops(&tw, &dt);
  CU_ASSERT_EQUAL(sp, (1 + 1 + 2) * 128L * 128L); /* average 4.0 */
  CU_ASSERT_EQUAL(st, 56320L);                    /* average 3.4375 */
  CU_ASSERT(dp == 8 && dt == 6);
  CU_ASSERT(st < sp);
  plain = parseOk("4x8x8", 256);
  tw = parseOk("4x8x8:twist", 256);
  sp = allPairsHops(&plain, &dp);
  st = allPairsHops(&tw, &dt);
  CU_ASSERT_EQUAL(sp, (1 + 2 + 2) * 256L * 256L); /* average 5.0 */
  CU_ASSERT_EQUAL(st, 282624L);                   /* average 4.3125 */
  CU_ASSERT(dp == 10 && dt == 6);
  /* the same shapes with other axis orders are the same graphs */
  tw = parseOk("8x4x4:twist", 128);
  CU_ASSERT_EQUAL(allPairsHops(&tw, &dt), 56320L);
  tw = parseOk("8x4x8:twist", 256);
  CU_ASSERT_EQUAL(allPairsHops(&tw, &dt), 282624L);
  /* n = 2 and a fourth plain axis */
  tw = parseOk("2x2x4x2:twist", 32);
  CU_ASSERT(tw.twisted && !tw.wrap[3]);
  allPairsHops(&tw, &dt);
}

static void checkHostBlocks(const tdTopo *t) {
  CU_ASSERT_EQUAL(topoNumHosts(t), 16);
  int bad = 0, c[TD_MAX_DIMS];
  for (int r = 0; r < 64; r++) {
    int h = r / 4, l = r % 4;
    topoRankToCoords(t, r, c);
    bad += topoHostOf(t, r) != h;
    /* host h is the 2x2x1 block at (2*(h%2), 2*(h/2%2), h/4); inside it x is fastest */
    bad += c[0] != 2 * (h % 2) + l % 2;
    bad += c[1] != 2 * (h / 2 % 2) + l / 2;
    bad += c[2] != h / 4;
    bad += topoCoordsToRank(t, c) != r;
  }
  CU_ASSERT_EQUAL(bad, 0);
}

static void testHosts(void) {
  tdTopo t = parseOk("4x4x4", 64);
  CU_ASSERT_EQUAL(topoNumHosts(&t), 64);
  CU_ASSERT_EQUAL(topoHostOf(&t, 17), 17);
  CU_ASSERT_EQUAL(topoSetHostBounds(&t, (int[]){2, 2, 1}, err), tpudistSuccess);
  checkHostBlocks(&t);
  t = parseOk("4x4x4:hosts=2,2,1", 64);
  checkHostBlocks(&t);
  tdTpuEnv env = {
      .accelerator_type = "v5p-128", .topology = "4x4x4", .chips_per_host_bounds = "2,2,1"};
  CU_ASSERT_EQUAL(topoFromTpuEnv(&env, 64, &t, err), tpudistSuccess);
  checkHostBlocks(&t);
  /* links follow coordinates, not rank numbers: rank 1 (1,0,0) +x is rank 4 (2,0,0) */
  CU_ASSERT_EQUAL(topoNeighbor(&t, 1, 0, 1), 4);
  CU_ASSERT_EQUAL(topoHops(&t, 0, 3), 2);
  CU_ASSERT_EQUAL(topoSetHostBounds(&t, (int[]){3, 1, 1}, err), tpudistInvalidArgument);
  CU_ASSERT_PTR_NOT_NULL(strstr(err, "does not divide"));
  CU_ASSERT_EQUAL(topoSetHostBounds(&t, NULL, err), tpudistSuccess);
  CU_ASSERT_EQUAL(topoNumHosts(&t), 64);
}

static void testSubBlock(void) {
  tdTopo p = parseOk("4x4", 16), s;
  int half[8] = {0, 1, 2, 3, 4, 5, 6, 7};
  topoSubBlock(&p, half, 8, &s);
  CU_ASSERT(s.ndims == 2 && s.dims[0] == 4 && s.dims[1] == 2 && s.nranks == 8);
  CU_ASSERT(s.wrap[0] == 1 && s.wrap[1] == 0);
  int upper[8] = {8, 9, 10, 11, 12, 13, 14, 15};
  topoSubBlock(&p, upper, 8, &s);
  CU_ASSERT(s.ndims == 2 && s.dims[0] == 4 && s.dims[1] == 2 && s.wrap[0] && !s.wrap[1]);
  int column[4] = {1, 5, 9, 13};
  topoSubBlock(&p, column, 4, &s);
  CU_ASSERT(s.ndims == 2 && s.dims[0] == 1 && s.dims[1] == 4 && !s.wrap[0] && s.wrap[1]);
  int square[4] = {5, 6, 9, 10};
  topoSubBlock(&p, square, 4, &s);
  CU_ASSERT(s.ndims == 2 && s.dims[0] == 2 && s.dims[1] == 2 && !s.wrap[0] && !s.wrap[1]);
  int scattered[4] = {0, 2, 5, 7}, reordered[4] = {6, 5, 9, 10}, dup[4] = {5, 5, 9, 10};
  int outside[4] = {5, 6, 9, 16};
  topoSubBlock(&p, scattered, 4, &s);
  CU_ASSERT(s.ndims == 0 && s.nranks == 4);
  topoSubBlock(&p, reordered, 4, &s);
  CU_ASSERT(s.ndims == 0 && s.nranks == 4);
  topoSubBlock(&p, dup, 4, &s);
  CU_ASSERT(s.ndims == 0);
  topoSubBlock(&p, outside, 4, &s);
  CU_ASSERT(s.ndims == 0);
  topoSubBlock(&p, half, 0, &s);
  CU_ASSERT(s.ndims == 0 && s.nranks == 0);
  /* host-blocked parent: whole hosts keep the blocking */
  p = parseOk("4x4x4:hosts=2,2,1", 64);
  int first16[16];
  for (int i = 0; i < 16; i++) first16[i] = i;
  topoSubBlock(&p, first16, 16, &s);
  CU_ASSERT(s.ndims == 3 && s.dims[0] == 4 && s.dims[1] == 4 && s.dims[2] == 1);
  CU_ASSERT(s.wrap[0] && s.wrap[1] && !s.wrap[2] && s.host_bounds[0] == 2 && s.host_bounds[1] == 2);
  CU_ASSERT_EQUAL(topoNumHosts(&s), 4);
  topoSubBlock(&p, first16, 4, &s); /* one host */
  CU_ASSERT(s.ndims == 3 && s.dims[0] == 2 && s.dims[1] == 2 && s.dims[2] == 1 && !s.wrap[0]);
  /* twisted parent: the whole torus stays twisted; half of z loses the twisted wraparounds */
  p = parseOk("4x4x8:twist", 128);
  int *all = malloc(sizeof(int) * 128);
  for (int i = 0; i < 128; i++) all[i] = i;
  topoSubBlock(&p, all, 128, &s);
  CU_ASSERT(s.twisted && s.ndims == 3 && s.dims[2] == 8);
  topoSubBlock(&p, all, 64, &s);
  CU_ASSERT(!s.twisted && s.dims[2] == 4 && !s.wrap[0] && !s.wrap[1] && !s.wrap[2]);
  int xhalf[64];
  for (int i = 0; i < 64; i++) xhalf[i] = (i % 2) + 4 * (i / 2); /* x in 0..1, y, z whole */
  topoSubBlock(&p, xhalf, 64, &s);
  CU_ASSERT(!s.twisted && s.dims[0] == 2 && !s.wrap[0] && !s.wrap[1] && s.wrap[2]);
  free(all);
}

static void expectBad(const char *spec, int nranks, const char *what) {
  tdTopo t;
  err[0] = '\0';
  CU_ASSERT_EQUAL(topoParse(spec, nranks, &t, err), tpudistInvalidArgument);
  if (!strstr(err, what)) fprintf(stderr, "'%s': message '%s' lacks '%s'\n", spec, err, what);
  CU_ASSERT_PTR_NOT_NULL(strstr(err, what));
}

static void testParseErrors(void) {
  expectBad("4x", 0, "missing length after 'x'");
  expectBad("0x4", 0, "axis x has length 0");
  expectBad("4x0", 0, "axis y has length 0");
  expectBad("4x4:wrap=1", 0, "wrap lists 1 value for 2 dimensions");
  expectBad("3x3x3:twist", 0, "twist needs an n x n x 2n or n x 2n x 2n shape");
  expectBad("2x2x2x2x2", 0, "5 dimensions; at most 4");
  expectBad("4x4", 8, "has 16 ranks but the communicator has 8 ranks");
  expectBad("", 0, "empty");
  expectBad("x4", 0, "expected a length at position 1");
  expectBad("-4", 0, "expected a length");
  expectBad("4x4:torus", 0, "unknown option 'torus'");
  expectBad("4x4:wrap=1,2", 0, "not 0 or 1");
  expectBad("4x4:wrap=1,1:wrap=1,1", 0, "wrap given twice");
  expectBad("4x4:twist", 0, "twist needs");
  expectBad("4x4x8:wrap=1,1,0:twist", 0, "twist needs x, y and z to wrap (z does not)");
  expectBad("4x4 4", 0, "unexpected ' ' at position 4");
  expectBad("4x4:hosts=3,1", 0, "does not divide");
  expectBad("4x4:hosts=2", 0, "hosts lists 1 value for 2 dimensions");
  expectBad("99999999x2", 0, "above");
  expectBad("4096x4096x4096", 0, "more than");
  expectBad("flat(x)", 0, "flat(N)");
  /* every message names the string it rejects */
  expectBad("0x4", 0, "topology '0x4': ");
}

/* Slices as the outer level (DCN between, the ICI torus inside), and hosts of a flat topology. */
static void testSlices(void) {
  tdTopo t = parseOk("4x4x4:slices=2", 128);
  CU_ASSERT(t.ndims == 4 && t.dims[3] == 2 && !t.wrap[3] && t.wrap[0] && t.wrap[2]);
  CU_ASSERT(topoNumSlices(&t) == 2 && topoSliceOf(&t, 63) == 0 && topoSliceOf(&t, 64) == 1);
  CU_ASSERT(topoSliceOf(&t, 128) == -1);
  /* inside a slice the torus neighbours; across slices the slice axis */
  CU_ASSERT_EQUAL(topoNeighbor(&t, 3, 0, +1), 0);
  CU_ASSERT_EQUAL(topoNeighbor(&t, 5, 3, +1), 69);
  CU_ASSERT_EQUAL(topoNeighbor(&t, 69, 3, +1), -1);
  /* hosts stay inside their slice: 2x2x1 chips per host, 16 hosts per slice */
  t = parseOk("4x4x4:hosts=2,2,1:slices=2", 128);
  CU_ASSERT(topoNumHosts(&t) == 32 && topoHostOf(&t, 64) == 16 && topoHostOf(&t, 63) == 15);
  t = parseOk("2x2:slices=4", 16);
  CU_ASSERT(topoNumSlices(&t) == 4 && topoSliceOf(&t, 13) == 3 && !t.wrap[2]);
  /* flat slices and hosts: flat(N) is N ranks per slice */
  t = parseOk("flat(4):slices=2", 8);
  CU_ASSERT(t.ndims == 0 && t.nranks == 8 && topoSliceOf(&t, 5) == 1 && topoNumHosts(&t) == 8);
  t = parseOk("flat:hosts=2", 6);
  CU_ASSERT(topoNumHosts(&t) == 3 && topoHostOf(&t, 3) == 1 && topoNumSlices(&t) == 1);
  t = parseOk("flat:hosts=2:slices=2", 8);
  CU_ASSERT(topoNumHosts(&t) == 4 && topoHostOf(&t, 5) == 2 && topoSliceOf(&t, 5) == 1);
  CU_ASSERT_EQUAL(topoSetFlatHosts(&t, 3, err), tpudistInvalidArgument);
  CU_ASSERT_PTR_NOT_NULL(strstr(err, "do not divide 4 ranks per slice"));
  /* a sub-block: one slice of two is that slice's torus; a block across both keeps two */
  t = parseOk("2x2:slices=2", 8);
  int one[] = {4, 5, 6, 7}, across[] = {0, 1, 4, 5};
  tdTopo sub;
  topoSubBlock(&t, one, 4, &sub);
  CU_ASSERT(sub.ndims == 3 && topoNumSlices(&sub) == 1 && sub.nranks == 4);
  topoSubBlock(&t, across, 4, &sub);
  CU_ASSERT(topoNumSlices(&sub) == 2 && topoSliceOf(&sub, 2) == 1);
  /* errors */
  expectBad("4x4:slices=0", 0, "slices: expected a number >= 1");
  expectBad("4x4:slices=2:slices=2", 0, "slices given twice");
  expectBad("2x2x2x2:slices=2", 0, "leaves no axis for the slice level");
  expectBad("4x4x8:twist:slices=2", 0, "slices of a twisted torus are not supported");
  expectBad("4x4:slices=2", 16, "has 32 ranks but the communicator has 16 ranks");
  expectBad("flat(4):slices=2", 4, "has 8 ranks but the communicator has 4 ranks");
  expectBad("flat:wrap=1", 4, "takes only hosts=K");
  expectBad("flat:hosts=3", 4, "do not divide");
}

static void checkFormat(const char *spec, const char *want) {
  tdTopo t = parseOk(spec, 0), back;
  char buf[64];
  topoFormat(&t, buf, sizeof(buf));
  CU_ASSERT_STRING_EQUAL(buf, want);
  CU_ASSERT_EQUAL(topoParse(buf, t.nranks, &back, err), tpudistSuccess);
  CU_ASSERT(memcmp(&t, &back, sizeof(t)) == 0);
}

static void testParseFormat(void) {
  checkFormat("4x4x4", "4x4x4");
  checkFormat("4x4x4:slices=2", "4x4x4:slices=2");
  checkFormat("4x4:wrap=1,0:hosts=2,2:slices=3", "4x4:wrap=1,0:hosts=2,2:slices=3");
  checkFormat("flat(4):slices=2", "flat(4):slices=2");
  checkFormat("flat(6):hosts=3", "flat(6):hosts=3");
  checkFormat(" 4X4x8:twist ", "4x4x8:twist");
  checkFormat("4x4:wrap=1,0", "4x4:wrap=1,0");
  checkFormat("4x4:wrap=1,1", "4x4");
  checkFormat("2x2:wrap=1,1", "2x2:wrap=1,1");
  checkFormat("4x4x4:hosts=2,2,1:wrap=0,1,1", "4x4x4:wrap=0,1,1:hosts=2,2,1");
  checkFormat("8x8x16:twist:hosts=2,2,1", "8x8x16:twist:hosts=2,2,1");
  checkFormat("2x2x4x2:twist", "2x2x4x2:twist");
  tdTopo t = parseOk("6", 6);
  CU_ASSERT(t.ndims == 1 && t.wrap[0] && t.dims[1] == 1 && t.nranks == 6);
  char tiny[6];
  topoFormat(&t, tiny, sizeof(tiny));
  CU_ASSERT_STRING_EQUAL(tiny, "6");
  t = parseOk("16x16x16", 4096);
  topoFormat(&t, tiny, sizeof(tiny));
  CU_ASSERT_STRING_EQUAL(tiny, "16x16"); /* cut to fit, still terminated */
}

static tpudistResult_t fromEnv(const char *type, const char *topo, const char *wrap, int nranks,
                               tdTopo *t) {
  tdTpuEnv env = {.accelerator_type = type, .topology = topo, .topology_wrap = wrap};
  err[0] = '\0';
  return topoFromTpuEnv(&env, nranks, t, err);
}

static int wraps(const tdTopo *t, int w0, int w1, int w2) {
  return t->wrap[0] == w0 && t->wrap[1] == w1 && (t->ndims < 3 || t->wrap[2] == w2);
}

static void testTpuWrapRules(void) {
  tdTopo t;
  CU_ASSERT_EQUAL(fromEnv("v5p-8", "2x2x1", NULL, 4, &t), tpudistSuccess);
  CU_ASSERT(t.ndims == 3 && t.nranks == 4 && wraps(&t, 0, 0, 0));
  CU_ASSERT_EQUAL(fromEnv("v5p-128", "4x4x4", NULL, 64, &t), tpudistSuccess);
  CU_ASSERT(wraps(&t, 1, 1, 1));
  CU_ASSERT_EQUAL(fromEnv("v5p-64", "2x4x4", NULL, 32, &t), tpudistSuccess);
  CU_ASSERT(wraps(&t, 0, 0, 0)); /* smaller than a cube: no optical links, no wrap */
  CU_ASSERT_EQUAL(fromEnv("v4-256", "4x4x8", NULL, 128, &t), tpudistSuccess);
  CU_ASSERT(wraps(&t, 1, 1, 1));
  CU_ASSERT_EQUAL(fromEnv("v5litepod-128", "8x16", NULL, 128, &t), tpudistSuccess);
  CU_ASSERT(t.ndims == 2 && wraps(&t, 0, 1, 0));
  CU_ASSERT_EQUAL(fromEnv("v6e-256", "16x16", NULL, 256, &t), tpudistSuccess);
  CU_ASSERT(wraps(&t, 1, 1, 0));
  CU_ASSERT_EQUAL(fromEnv("v6e-16", "4x4", NULL, 16, &t), tpudistSuccess);
  CU_ASSERT(wraps(&t, 0, 0, 0));
  /* TPU_TOPOLOGY_WRAP, when set, is taken as written */
  CU_ASSERT_EQUAL(fromEnv("v5p-128", "4x4x4", "true,false,TRUE", 64, &t), tpudistSuccess);
  CU_ASSERT(wraps(&t, 1, 0, 1));
  CU_ASSERT_EQUAL(fromEnv("v5litepod-16", "4x4", "false,true,false", 16, &t), tpudistSuccess);
  CU_ASSERT(t.ndims == 2 && wraps(&t, 0, 1, 0));
  /* no generation: 3D takes the cube rule, 2D the rule of 16 */
  CU_ASSERT_EQUAL(fromEnv(NULL, "4x4x4", NULL, 0, &t), tpudistSuccess);
  CU_ASSERT(wraps(&t, 1, 1, 1));
  CU_ASSERT_EQUAL(fromEnv("", "8x16", NULL, 0, &t), tpudistSuccess);
  CU_ASSERT(wraps(&t, 0, 1, 0));
}

static void testTpuDefaults(void) {
  tdTopo t;
  /* the number counts TensorCores on v4/v5p/7x (two per chip), chips on v5e/v6e */
  CU_ASSERT_EQUAL(fromEnv("v4-256", NULL, NULL, 128, &t), tpudistSuccess);
  CU_ASSERT(t.dims[0] == 4 && t.dims[1] == 4 && t.dims[2] == 8 && wraps(&t, 1, 1, 1));
  CU_ASSERT_EQUAL(fromEnv("v5p-8", "", NULL, 4, &t), tpudistSuccess);
  CU_ASSERT(t.dims[0] == 2 && t.dims[1] == 2 && t.dims[2] == 1 && wraps(&t, 0, 0, 0));
  CU_ASSERT_EQUAL(fromEnv("v5litepod-16", NULL, NULL, 16, &t), tpudistSuccess);
  CU_ASSERT(t.ndims == 2 && t.dims[0] == 4 && t.dims[1] == 4);
  CU_ASSERT_EQUAL(fromEnv("v6e-256", NULL, NULL, 256, &t), tpudistSuccess);
  CU_ASSERT(t.ndims == 2 && t.dims[0] == 16 && wraps(&t, 1, 1, 0));
  CU_ASSERT_EQUAL(fromEnv(NULL, NULL, NULL, 8, &t), tpudistNotSupported);
  CU_ASSERT_EQUAL(fromEnv("v5p-96", NULL, NULL, 48, &t), tpudistNotSupported);
  CU_ASSERT_PTR_NOT_NULL(strstr(err, "set TPU_TOPOLOGY"));
  /* rank count not matching: both numbers in the message */
  CU_ASSERT_EQUAL(fromEnv("v5p-128", "4x4x4", NULL, 32, &t), tpudistInvalidArgument);
  CU_ASSERT(strstr(err, "64 chips") && strstr(err, "32 ranks"));
  CU_ASSERT_EQUAL(fromEnv("v5p-128", "4x4x4", NULL, 128, &t), tpudistInvalidArgument);
  CU_ASSERT_EQUAL(fromEnv("v5p-128", "4x4x", NULL, 64, &t), tpudistInvalidArgument);
  CU_ASSERT_PTR_NOT_NULL(strstr(err, "TPU_TOPOLOGY"));
  CU_ASSERT_EQUAL(fromEnv("v5p-128", "4x4x4", "yes,no,yes", 64, &t), tpudistInvalidArgument);
  CU_ASSERT_PTR_NOT_NULL(strstr(err, "TPU_TOPOLOGY_WRAP: 'yes' is not true or false"));
  CU_ASSERT_EQUAL(fromEnv("v5p-128", "4x4x4", "true,true", 64, &t), tpudistInvalidArgument);
}

static void testTpuTwistAndCores(void) {
  tdTopo t;
  tdTpuEnv env = {.accelerator_type = "v4-256", .topology = "4x4x8", .topology_alt = "true"};
  CU_ASSERT_EQUAL(topoFromTpuEnv(&env, 128, &t, err), tpudistSuccess);
  CU_ASSERT(t.twisted && wraps(&t, 1, 1, 1));
  env = (tdTpuEnv){
      .accelerator_type = "v5p-256", .topology = "4x4x8_twisted", .topology_alt = "false"};
  CU_ASSERT_EQUAL(topoFromTpuEnv(&env, 128, &t, err), tpudistSuccess);
  CU_ASSERT(t.twisted);
  env = (tdTpuEnv){.accelerator_type = "v5p-128", .topology = "4x4x4", .topology_alt = "true"};
  CU_ASSERT_EQUAL(topoFromTpuEnv(&env, 64, &t, err), tpudistInvalidArgument);
  CU_ASSERT_PTR_NOT_NULL(strstr(err, "twist needs"));
  env = (tdTpuEnv){.accelerator_type = "v6e-256", .topology = "16x16", .topology_alt = "true"};
  CU_ASSERT_EQUAL(topoFromTpuEnv(&env, 256, &t, err), tpudistInvalidArgument);
  CU_ASSERT_PTR_NOT_NULL(strstr(err, "v6e has no twisted tori"));
  /* TPU7x with one rank per TensorCore: a 4th axis of two cores, both on the chip's host */
  env = (tdTpuEnv){
      .accelerator_type = "tpu7x-128", .topology = "4x4x4", .chips_per_host_bounds = "2,2,1"};
  CU_ASSERT_EQUAL(topoFromTpuEnv(&env, 128, &t, err), tpudistSuccess);
  CU_ASSERT(t.ndims == 4 && t.dims[3] == 2 && !t.wrap[3] && wraps(&t, 1, 1, 1));
  CU_ASSERT(t.host_bounds[0] == 2 && t.host_bounds[2] == 1 && t.host_bounds[3] == 2);
  CU_ASSERT_EQUAL(topoNumHosts(&t), 16);
  int c[TD_MAX_DIMS];
  topoRankToCoords(&t, 4, c); /* host 0: x, y fastest, then the second core */
  CU_ASSERT(c[0] == 0 && c[1] == 0 && c[2] == 0 && c[3] == 1);
  CU_ASSERT_EQUAL(topoFromTpuEnv(&env, 64, &t, err), tpudistSuccess);
  CU_ASSERT(t.ndims == 3 && topoNumHosts(&t) == 16);
  /* host bounds: a one-host slice smaller than a host, and bad bounds */
  env = (tdTpuEnv){
      .accelerator_type = "v5litepod-4", .topology = "2x2", .chips_per_host_bounds = "2,4,1"};
  CU_ASSERT_EQUAL(topoFromTpuEnv(&env, 4, &t, err), tpudistSuccess);
  CU_ASSERT(topoNumHosts(&t) == 1 && t.host_bounds[1] == 2);
  env.topology = "8x16";
  CU_ASSERT_EQUAL(topoFromTpuEnv(&env, 128, &t, err), tpudistSuccess);
  CU_ASSERT_EQUAL(topoNumHosts(&t), 16);
  env.chips_per_host_bounds = "3,4,1";
  CU_ASSERT_EQUAL(topoFromTpuEnv(&env, 128, &t, err), tpudistInvalidArgument);
  CU_ASSERT_PTR_NOT_NULL(strstr(err, "TPU_CHIPS_PER_HOST_BOUNDS: "));
  env.chips_per_host_bounds = "2,4,2";
  CU_ASSERT_EQUAL(topoFromTpuEnv(&env, 128, &t, err), tpudistInvalidArgument);
}

/* topoTranslate is the torus group: c + delta equals |delta_a| neighbour steps per axis (wrap,
 * twist, hosts), -1 off a line; routes are translates of each other. */
static void testTranslate(void) {
  const char *shapes[] = {"4x4x8:twist",  "2x4x4:twist",       "3x5",
                          "4x3:wrap=0,1", "4x4x8:hosts=2,2,1", "3x2x2x2:wrap=1,0,1,1"};
  for (int si = 0; si < 6; si++) {
    tdTopo t;
    err[0] = '\0';
    CU_ASSERT_FATAL(topoParse(shapes[si], 0, &t, err) == tpudistSuccess);
    for (int q = 0; q < t.nranks; q += 3)
      for (int trial = 0; trial < 8; trial++) {
        int c[TD_MAX_DIMS], d[TD_MAX_DIMS] = {0}, r = q;
        topoRankToCoords(&t, q, c);
        for (int a = 0; a < t.ndims; a++) d[a] = (q * 7 + trial * 5 + a * 3) % 11 - 5;
        for (int a = 0; a < t.ndims && r >= 0; a++)
          for (int k = 0; k < (d[a] < 0 ? -d[a] : d[a]) && r >= 0; k++)
            r = topoNeighbor(&t, r, a, d[a] < 0 ? -1 : 1);
        if (r < 0 && t.twisted) continue; /* twisted: every step exists; lines end */
        CU_ASSERT_EQUAL(topoTranslate(&t, c, d, NULL), r);
      }
    int rings = 1; /* twisted tori too: translations are the group operation */
    for (int a = 0; a < t.ndims; a++) rings &= t.wrap[a] || t.dims[a] == 1;
    if (!rings) continue; /* lines: a translate may fall off the end */
    tdHop route[64], moved[64];
    for (int s = 0; s < t.nranks; s++) { /* route(s + g, d + g) = route(s, d) + g */
      int cs[TD_MAX_DIMS], cd[TD_MAX_DIMS], one[TD_MAX_DIMS] = {1, 1, 1, 1};
      int d = (s * 5 + 3) % t.nranks;
      topoRankToCoords(&t, s, cs);
      topoRankToCoords(&t, d, cd);
      int ms = topoTranslate(&t, cs, one, NULL), md = topoTranslate(&t, cd, one, NULL);
      int paths = topoPaths(&t, s, d);
      CU_ASSERT_EQUAL(paths, topoPaths(&t, ms, md));
      for (int j = 0; j < paths; j++) {
        int n = topoRoute(&t, s, d, j, route, 64), m = topoRoute(&t, ms, md, j, moved, 64);
        CU_ASSERT_EQUAL(n, m);
        for (int k = 0; k < n && k < m; k++) {
          int cf[TD_MAX_DIMS];
          topoRankToCoords(&t, route[k].from, cf);
          CU_ASSERT_EQUAL(topoTranslate(&t, cf, one, NULL), moved[k].from);
          CU_ASSERT(route[k].axis == moved[k].axis && route[k].dir == moved[k].dir);
        }
      }
    }
  }
}

int main(void) {
  CU_TestInfo tests[] = {
      {"translations (the torus group)", testTranslate},
      {"flat topology", testFlat},
      {"coordinates round trip, x fastest", testCoords},
      {"neighbours with and without wrap", testNeighbors},
      {"dimension-ordered shortest routes", testRoutes},
      {"twisted wiring", testTwistWiring},
      {"twisted hop counts", testTwistHops},
      {"host blocks", testHosts},
      {"sub-blocks for split", testSubBlock},
      {"parse errors", testParseErrors},
      {"parse and format", testParseFormat},
      {"slices and flat hosts", testSlices},
      {"TPU wrap rules per generation", testTpuWrapRules},
      {"TPU default shapes and errors", testTpuDefaults},
      {"TPU twist, cores and hosts", testTpuTwistAndCores},
      CU_TEST_INFO_NULL,
  };
  return tdCUnitMain("unit-topology", tests);
}
