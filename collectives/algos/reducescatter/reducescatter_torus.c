/*
 * reducescatter_torus.c - torus reduce-scatter: reduce-scatter along each axis in turn. Along
 * the first axis of a flow, position j of each ring/line receives the partial sums of every block
 * whose destination has coordinate j on that axis; along the next axis the same for the blocks
 * left, and so on until each rank holds its own block, summed over all ranks.
 *
 * All axes busy at once: each block is split into F chunks (flows), one per axis (two per axis
 * when some axis is a ring, one per ring direction); flow f takes the axes rotated by f on its
 * own stream. Rings run one direction per flow; axes without a usable wrap run as lines
 * (partial sums from both ends); twisted tori use the twisted cycles (torus_rings.h, tdtLevel).
 * Every message goes to a torus neighbour.
 *
 * Cost (V = nranks * recvcount bytes in, D equal ring axes of length n, W1 per link direction):
 * about V * (n-1)/n / (2 D W1) for bandwidth, sum_d (n_d - 1) hops of latency; lines double
 * their axis' bandwidth term. One step per block per ring step (blocks are not contiguous).
 * Preconditions: torus topology with nranks chips. Scratch: nranks blocks (partial sums).
 */
#include <stdlib.h>

#include "reducescatter.h"
#include "torus_rings.h"

typedef struct {
  int (*coords)[TD_MAX_DIMS];
  int *rel, nrel;  /* blocks still travelling in this flow at this rank */
  tdtRange *items; /* nranks */
  int first[TDT_MAX_LINE + 1];
} rsWork;

/* Groups the blocks in rel by their position at level lv into w->items / first. */
static void rsBucket(rsWork *w, const tdTopo *t, const tdtLevel *lv, int n, uint32_t nf, int f) {
  int m = 0;
  for (int j = 0; j < n; j++) {
    w->first[j] = m;
    for (int i = 0; i < w->nrel; i++)
      if (torusLevelPos(t, lv, w->coords[w->rel[i]]) == j) {
        w->items[m].start = (uint32_t)w->rel[i] * nf + (uint32_t)f;
        w->items[m++].len = 1;
      }
  }
  w->first[n] = m;
}

static tpudistResult_t rsFlow(const tdCollArgs *a, tdtCtx *c, rsWork *w, int nax, int f, int nf,
                              const int *ax, char *err) {
  int order[TD_MAX_DIMS], dir;
  tdtGroup g;
  tdtLevel lv[TD_MAX_DIMS];
  torusFlowOrder(ax, nax, f, order, &dir);
  torusFlowLevels(a->topo, order, nax, lv);
  w->nrel = a->nranks;
  for (int b = 0; b < a->nranks; b++) w->rel[b] = b;
  for (int l = 0; l < nax; l++) {
    TD_CHECK(torusGroupAt(a->topo, a->rank, &lv[l], &g, err));
    rsBucket(w, a->topo, &lv[l], g.n, (uint32_t)nf, f);
    tdtBlocks blk = {w->items, w->first};
    TD_CHECK(torusReduceScatter(c, &g, dir, &blk));
    int m = 0;
    for (int i = w->first[g.pos]; i < w->first[g.pos + 1]; i++)
      w->rel[m++] = (int)(w->items[i].start / (uint32_t)nf);
    w->nrel = m;
  }
  return tpudistSuccess;
}

tpudistResult_t genReducescatterTorus(const tdCollArgs *a, tdSched *s, char *err) {
  int ax[TD_MAX_DIMS], nax;
  TD_CHECK(torusCheck(a->topo, a->nranks, ax, &nax, err));
  int nf = torusFlows(a->topo, ax, nax), n = a->nranks;
  schedSetLayout(s, TD_BUF_INPUT, (uint32_t)n, (uint32_t)nf);
  schedSetLayout(s, TD_BUF_OUTPUT, 1, (uint32_t)nf);
  if (nax == 0) {
    if (a->inplace) return tpudistSuccess;
    tdStep st = schedCopy(schedRef(TD_BUF_INPUT, 0, (uint32_t)nf),
                          schedRef(TD_BUF_OUTPUT, 0, (uint32_t)nf));
    return schedAppend(s, 0, &st, NULL);
  }
  schedSetLayout(s, TD_BUF_SCRATCH, (uint32_t)n, (uint32_t)nf);
  rsWork w;
  w.coords = malloc(sizeof(*w.coords) * (size_t)n);
  w.rel = malloc(sizeof(int) * (size_t)n);
  w.items = malloc(sizeof(tdtRange) * (size_t)n);
  uint8_t *touched = calloc((size_t)n * (size_t)nf, 1);
  tpudistResult_t r = tpudistNoMemory;
  if (w.coords && w.rel && w.items && touched) {
    for (int b = 0; b < n; b++) topoRankToCoords(a->topo, b, w.coords[b]);
    r = tpudistSuccess;
    for (int f = 0; f < nf && r == tpudistSuccess; f++) {
      tdtCtx c = {s, (uint32_t)f, TDT_MAP_RS, (uint32_t)nf, a->rank, touched};
      r = rsFlow(a, &c, &w, nax, f, nf, ax, err);
    }
  }
  free(w.coords);
  free(w.rel);
  free(w.items);
  free(touched);
  return r;
}
