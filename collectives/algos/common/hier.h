/*
 * hier.h - the outer level shared by the hierarchical generators (<coll>_hier.c): the ranks form
 * G groups of L consecutive ranks, rank = g*L + l, the groups being the topology's slices (joined
 * by DCN, topoNumSlices), else its hosts (topoNumHosts), else, on one host, its NUMA nodes
 * (topoNumNuma: the two-level form inside a host, docs/host.md). Slices, hosts and NUMA nodes are
 * all blocks of consecutive ranks (docs/topology.md), so local rank l of every group is the same
 * position.
 */
#ifndef TD_HIER_H_
#define TD_HIER_H_

#include <stdlib.h>

#include "generator.h"

typedef struct {
  int G, L; /* groups, ranks per group */
  int g, l; /* this rank's group and local index */
} tdHier;

/* Groups of the topology for n ranks: slices, else hosts (when a host holds more than one rank
 * and there is more than one host), else NUMA nodes (one host's, each holding more than one
 * rank), else 1. */
static inline int hierGroups(const tdTopo *t, int n) {
  if (!t || t->nranks != n) return 1;
  if (topoNumSlices(t) > 1) return topoNumSlices(t);
  int h = topoNumHosts(t), m = topoNumNuma(t);
  if (h > 1 && h < n) return h;
  return m > 1 && m < n ? m : 1;
}

static inline int hierMod(int a, int m) {
  return ((a % m) + m) % m;
}

/* Rank of local index l in group g, both taken modulo their counts. */
static inline int hierRank(const tdHier *h, int g, int l) {
  return hierMod(g, h->G) * h->L + hierMod(l, h->L);
}

/* This rank's place; tpudistNotSupported without an outer level (one group: the flat algorithms
 * are the same plan without the detour). */
static inline tpudistResult_t hierPlace(const tdCollArgs *a, tdHier *h, char *err) {
  h->G = hierGroups(a->topo, a->nranks);
  h->L = a->nranks / h->G;
  h->g = a->rank / h->L;
  h->l = a->rank % h->L;
  if (h->G < 2)
    return tdErr(err, tpudistNotSupported,
                 "%s hier: not supported without an outer level (slices, hosts or NUMA nodes of "
                 "several ranks)",
                 schedCollName(a->coll));
  return tpudistSuccess;
}

/* st, issued only once step idx of stream `stream` has completed. */
static inline tdStep hierAfter(tdStep st, uint32_t stream, uint32_t idx) {
  st.deps[0].stream = (uint16_t)stream, st.deps[0].step = idx;
  return st;
}

/* Chunks of the pipelined two-level trees (broadcast, reduce). */
#define TD_HIER_CHUNKS 8u

/* Parent (-1 at the root) and children of this rank in the two-level tree (hier.h's groups;
 * leaders are local index l0): a leader's children are its children groups' leaders first, then
 * its local children (broadcast_hier.c, reduce_hier.c). */
static inline void hierTree(const tdHier *h, int root, int *parent, int kids[4], int *nkids) {
  int g0 = root / h->L, l0 = root % h->L, p, k[2], nk, lp, lk[2], nlk;
  algoBinaryTree(h->L, l0, h->l, &lp, lk, &nlk);
  *nkids = 0;
  *parent = lp >= 0 ? hierRank(h, h->g, lp) : -1;
  if (h->l == l0) {
    algoBinaryTree(h->G, g0, h->g, &p, k, &nk);
    *parent = p >= 0 ? hierRank(h, p, l0) : -1;
    for (int i = 0; i < nk; i++) kids[(*nkids)++] = hierRank(h, k[i], l0);
  }
  for (int i = 0; i < nlk; i++) kids[(*nkids)++] = hierRank(h, h->g, lk[i]);
}

#endif /* TD_HIER_H_ */
