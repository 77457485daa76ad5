/*
 * allgather_torus.c - torus all-gather: all-gather along each axis in turn, each time passing on
 * everything gathered so far. After the first axis gathered a rank holds the blocks of its line
 * along that axis, after the second those of its plane, and so on. A flow's levels are gathered
 * last to first, as the all-gather half of the torus all-reduce, so that its first level (the
 * rotated axis, or the twisted cycle) carries the largest stage.
 *
 * All axes busy at once: each block is split into F chunks (flows), one per axis (two per axis
 * when some axis is a ring, one per ring direction); flow f takes the axes rotated by f on its
 * own stream. Rings run one direction per flow; axes without a usable wrap run as lines (each
 * rank sends both ways and forwards). Every message goes to a torus neighbour.
 *
 * Cost (V = nranks * sendcount bytes out, D equal ring axes of length n, W1 per link direction):
 * about V * (n-1)/n / (2 D W1) for bandwidth, sum_d (n_d - 1) hops of latency; lines double
 * their axis' bandwidth term. One step per block per ring step.
 * Preconditions: torus topology with nranks chips.
 */
#include <stdlib.h>

#include "allgather.h"
#include "torus_rings.h"

typedef struct {
  int (*coords)[TD_MAX_DIMS];
  tdtRange *items; /* nranks */
  int first[TDT_MAX_LINE + 1];
} agWork;

/* Blocks held by position j at level l (levels are gathered last to first): position j there,
 * the same positions as this rank at every level still to come (0 .. l-1); levels done are
 * free. */
static void agBucket(agWork *w, const tdCollArgs *a, const tdtLevel *lv, int nax, int l, int n,
                     int nf, int f) {
  int mine[TD_MAX_DIMS], m = 0, pm[TD_MAX_DIMS];
  topoRankToCoords(a->topo, a->rank, mine);
  (void)nax;
  for (int k = 0; k < l; k++) pm[k] = torusLevelPos(a->topo, &lv[k], mine);
  for (int j = 0; j < n; j++) {
    w->first[j] = m;
    for (int b = 0; b < a->nranks; b++) {
      int ok = torusLevelPos(a->topo, &lv[l], w->coords[b]) == j;
      for (int k = 0; k < l && ok; k++)
        if (torusLevelPos(a->topo, &lv[k], w->coords[b]) != pm[k]) ok = 0;
      if (!ok) continue;
      w->items[m].start = (uint32_t)b * (uint32_t)nf + (uint32_t)f;
      w->items[m++].len = 1;
    }
  }
  w->first[n] = m;
}

static tpudistResult_t agFlow(const tdCollArgs *a, tdtCtx *c, agWork *w, const int *ax, int nax,
                              int f, int nf, char *err) {
  int order[TD_MAX_DIMS], dir;
  tdtGroup g;
  tdtLevel lv[TD_MAX_DIMS];
  torusFlowOrder(ax, nax, f, order, &dir);
  torusFlowLevels(a->topo, order, nax, lv);
  for (int l = nax - 1; l >= 0; l--) { /* the first level, the largest, last (as in all-reduce) */
    TD_CHECK(torusGroupAt(a->topo, a->rank, &lv[l], &g, err));
    agBucket(w, a, lv, nax, l, g.n, nf, f);
    tdtBlocks blk = {w->items, w->first};
    TD_CHECK(torusAllGather(c, &g, dir, &blk));
  }
  return tpudistSuccess;
}

tpudistResult_t genAllgatherTorus(const tdCollArgs *a, tdSched *s, char *err) {
  int ax[TD_MAX_DIMS], nax;
  TD_CHECK(torusCheck(a->topo, a->nranks, ax, &nax, err));
  int nf = torusFlows(a->topo, ax, nax), n = a->nranks;
  schedSetLayout(s, TD_BUF_INPUT, 1, (uint32_t)nf);
  schedSetLayout(s, TD_BUF_OUTPUT, (uint32_t)n, (uint32_t)nf);
  if (!a->inplace) {
    tdStep st = schedCopy(schedRef(TD_BUF_INPUT, 0, (uint32_t)nf),
                          schedRef(TD_BUF_OUTPUT, (uint32_t)(a->rank * nf), (uint32_t)nf));
    TD_CHECK(schedAppend(s, 0, &st, NULL));
  }
  if (nax == 0) return tpudistSuccess;
  agWork w;
  w.coords = malloc(sizeof(*w.coords) * (size_t)n);
  w.items = malloc(sizeof(tdtRange) * (size_t)n);
  uint8_t *touched = calloc((size_t)n * (size_t)nf, 1);
  tpudistResult_t r = tpudistNoMemory;
  if (w.coords && w.items && touched) {
    for (int b = 0; b < n; b++) topoRankToCoords(a->topo, b, w.coords[b]);
    r = tpudistSuccess;
    for (int f = 0; f < nf && r == tpudistSuccess; f++) {
      tdtCtx c = {s, (uint32_t)f, TDT_MAP_AG, (uint32_t)nf, a->rank, touched};
      r = agFlow(a, &c, &w, ax, nax, f, nf, err);
    }
  }
  free(w.coords);
  free(w.items);
  free(touched);
  return r;
}
