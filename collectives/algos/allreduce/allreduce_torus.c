/*
 * allreduce_torus.c - torus all-reduce: reduce-scatter along each axis in turn, each time on the
 * shard the previous axis left, then all-gather back in reverse axis order.
 *
 * All axes busy at once: the buffer is split into F flows, one per axis (two per axis when some
 * axis is a ring: one per ring direction); flow f takes the axes in the order rotated by f, and
 * runs on its own stream. A ring axis (wrap link present, length >= 3) runs a unidirectional ring
 * in the flow's direction; an axis without wrap (or of length 2) runs as a line with partial sums
 * flowing from both ends. On a twisted torus a flow starting on a short axis uses that axis'
 * twisted cycle (2n ranks) as its first ring, then the long axes as half-lines / shifted rings
 * (torus_rings.h, tdtLevel). Every message goes to a torus neighbour.
 *
 * Cost (V bytes, D axes of length n_d, W1 bytes/s per link direction, alpha per hop): about
 * 2 * V * (n-1)/n / (2 D W1) for equal ring axes (each link direction carries one flow's first
 * level; the deeper levels move 1/n as much), plus 2 * sum_d (n_d - 1) * alpha of latency.
 * Lines double the bandwidth term of their axis.
 * Preconditions: a torus topology whose chip count equals nranks; consecutive positions along
 * every axis linked. Layout: one block split into F * nranks chunks.
 */
#include <stdlib.h>

#include "allreduce.h"
#include "torus_rings.h"

/* One flow: reduce-scatter down the levels, all-gather back up. */
static tpudistResult_t arFlow(const tdTopo *t, tdtCtx *c, const int *order, int nax, int dir,
                              uint32_t start, uint32_t len, char *err) {
  tdtLevel lv[TD_MAX_DIMS];
  torusFlowLevels(t, order, nax, lv);
  tdtGroup g;
  uint32_t st[TD_MAX_DIMS], ln[TD_MAX_DIMS];
  tdtRange items[TDT_MAX_LINE];
  int first[TDT_MAX_LINE + 1];
  tdtBlocks b = {items, first};
  for (int pass = 0; pass < 2; pass++) {
    for (int s = 0; s < nax; s++) {
      int l = pass == 0 ? s : nax - 1 - s;
      TD_CHECK(torusGroupAt(t, c->rank, &lv[l], &g, err));
      if (pass == 0) {
        st[l] = start;
        ln[l] = len;
      }
      uint32_t part = ln[l] / (uint32_t)g.n;
      for (int j = 0; j < g.n; j++) {
        items[j].start = st[l] + (uint32_t)j * part;
        items[j].len = part;
        first[j] = j;
      }
      first[g.n] = g.n;
      if (pass == 0) {
        TD_CHECK(torusReduceScatter(c, &g, dir, &b));
        start = st[l] + (uint32_t)g.pos * part;
        len = part;
      } else {
        TD_CHECK(torusAllGather(c, &g, dir, &b));
      }
    }
  }
  return tpudistSuccess;
}

tpudistResult_t genAllreduceTorus(const tdCollArgs *a, tdSched *s, char *err) {
  int ax[TD_MAX_DIMS], nax, order[TD_MAX_DIMS], dir;
  TD_CHECK(torusCheck(a->topo, a->nranks, ax, &nax, err));
  int nf = torusFlows(a->topo, ax, nax);
  uint32_t n = (uint32_t)a->nranks, k = (uint32_t)nf * n;
  schedSetLayout(s, TD_BUF_INPUT, 1, k);
  schedSetLayout(s, TD_BUF_OUTPUT, 1, k);
  if (nax == 0) {
    if (a->inplace) return tpudistSuccess;
    tdStep st = schedCopy(schedRef(TD_BUF_INPUT, 0, k), schedRef(TD_BUF_OUTPUT, 0, k));
    return schedAppend(s, 0, &st, NULL);
  }
  uint8_t *touched = calloc(k, 1);
  if (!touched) return tpudistNoMemory;
  tpudistResult_t r = tpudistSuccess;
  for (int f = 0; f < nf && r == tpudistSuccess; f++) {
    tdtCtx c = {s, (uint32_t)f, TDT_MAP_AR, k, a->rank, touched};
    torusFlowOrder(ax, nax, f, order, &dir);
    r = arFlow(a->topo, &c, order, nax, dir, (uint32_t)f * n, n, err);
  }
  free(touched);
  return r;
}
