/*
 * select_est.c - pod-scale estimates of rooted plans from their structure (select.h), for
 * candidates whose every rank's plan is too many steps to evaluate there and that no symmetry
 * covers: the pipelined chain (broadcast, reduce) and the double binary tree all-reduce. Both use
 * the cost model's terms (cost.h): per message its hops' latency, msg_latency and the sender's
 * msg_overhead; a piece (piece_bytes) ahead of the rest where a step forwards as it receives
 * (fused), the whole chunk where it stores first; bytes over link_bw times the shares of its
 * route, or dcn_bw across DCN (the chain; the tree's estimate covers one torus without DCN);
 * a reduction at mem_bw.
 */
#include <stdlib.h>

#include "algos.h"
#include "select.h"

/* select.h. The links of consecutive pairs are taken as disjoint (one message per link in
 * flight); a sender issues a chunk per msg_overhead at most. */
double selectChainEstimate(const tdTopo *topo, tdColl c, const tdCostModel *m, uint64_t bytes) {
  int n = topo->nranks, red = c == TD_COLL_REDUCE;
  double lat = 0, inv_piece = 0, slow = 0;
  tdHop hops[512];
  for (int j = 0; j + 1 < n; j++) {
    int dcn = topoDcnDomain(topo, j) != topoDcnDomain(topo, j + 1);
    int h = dcn ? 0 : topoRoute(topo, j, j + 1, 0, hops, (int)TD_ARRAY_SIZE(hops));
    double bw = dcn ? m->dcn_bw : m->link_bw * topoPaths(topo, j, j + 1);
    lat +=
        (dcn ? m->dcn_latency : TD_MAX(h, 1) * m->hop_latency) + m->msg_latency + m->msg_overhead;
    inv_piece += 1 / bw + (red ? 1 / m->mem_bw : 0);
    slow = TD_MAX(slow, 1 / bw + (red ? 1 / m->mem_bw : 0));
  }
  uint32_t k = algoChainChunks(n);
  double chunk = (double)bytes / k;
  double piece = m->piece_bytes > 0 ? TD_MIN(chunk, m->piece_bytes) : chunk;
  /* behind the head, a chunk per slowest link time, or per issue cost if that is longer */
  return lat + piece * inv_piece + (chunk - piece) * slow +
         (k - 1) * TD_MAX(chunk * slow, m->msg_overhead);
}

/* The messages of one chunk round of both trees on the torus: per directed link (rank, axis,
 * direction) the messages that cross it (a route split into shares counts each share's part);
 * per rank the messages it sends. */
typedef struct {
  const tdTopo *topo;
  const tdCostModel *m;
  float *link; /* nranks x 2 x ndims */
  int *sends;
  int n;
} estNet;

static size_t estLink(const estNet *e, const tdHop *h) {
  return ((size_t)h->from * (size_t)e->topo->ndims + (size_t)h->axis) * 2 + (h->dir > 0);
}

/* Adds a message from a to b (add) or returns its seconds per byte on its busiest link (!add:
 * the messages there share it). */
static double estMessage(estNet *e, int a, int b, int add) {
  tdHop hops[1024];
  int np = topoPaths(e->topo, a, b);
  double worst = 0;
  for (int p = 0; p < np; p++) {
    int nh = topoRoute(e->topo, a, b, p, hops, (int)TD_ARRAY_SIZE(hops));
    for (int h = 0; h < TD_MIN(nh, (int)TD_ARRAY_SIZE(hops)); h++) {
      float *l = &e->link[estLink(e, &hops[h])];
      if (add) *l += 1.0f / (float)np;
      worst = TD_MAX(worst, *l);
    }
  }
  return worst / e->m->link_bw;
}

/* Latency of a message from a to b: hops, synchronisation, issue. */
static double estLatency(const estNet *e, int a, int b) {
  const tdCostModel *m = e->m;
  return TD_MAX(topoHops(e->topo, a, b), 1) * m->hop_latency + m->msg_latency + m->msg_overhead;
}

/* Chunk round of tree t: every edge up (child to parent) and down once. */
static void estAddTree(estNet *e, int t) {
  for (int r = 0; r < e->n; r++) {
    int up, down[2];
    algoDoubleTree(e->n, t, r, &up, down);
    if (up < 0) continue;
    estMessage(e, r, up, 1);
    estMessage(e, up, r, 1);
    e->sends[r]++, e->sends[up]++;
  }
}

/* The links as the chunks behind the first find them: the largest seconds per byte of an edge on
 * idle links and on links shared with every edge's messages of a round, and the mean latency of
 * an edge (both trees). */
typedef struct {
  double idle, busy, lat;
} estShare;

/* A rank's edge to its parent in one tree: latencies and seconds per byte up (with the
 * reduction) and down, and whether each forwards a piece ahead (fused receive and send) or stores
 * the whole chunk first. */
typedef struct {
  int parent;
  uint8_t own_slot, fuse_up, fuse_dn;
  double lat_up, lat_dn, s_up, s_dn; /* s: seconds per byte on idle links (the first chunk) */
  double sib_lat, sib_s; /* down: the first child's edge this one waits for (lat < 0: none) */
} estEdge;

/* Tree t's edges (ed[r] for every rank but the root) and its ranks parents first (order). The
 * generator fuses up from the child in its parent's own slot (its slot in the grandparent; the
 * root has none: it needs the whole chunk) and down to a rank's first child; the child in the
 * other slot and a root's children store the chunk. sh: what the chunks behind the first see. */
static void estTree(estNet *e, int t, estEdge *ed, int *order, estShare *sh) {
  int n = e->n, top = 0, up, down[2], root = 0;
  algoDoubleTree(n, t, 0, &up, down);
  while (up >= 0) root = up, algoDoubleTree(n, t, root, &up, down);
  order[top++] = root;
  for (int i = 0; i < top; i++) {
    int v = order[i], vu, slot, first = 1;
    algoDoubleTree(n, t, v, &vu, down);
    if (vu >= 0) {
      int pu, pd[2];
      algoDoubleTree(n, t, vu, &pu, pd);
      slot = pd[0] == v ? 0 : 1;
    } else {
      slot = down[0] >= 0 ? 0 : 1;
    }
    for (int k = 0; k < 2; k++) {
      int w = down[k];
      if (w < 0) continue;
      estEdge *x = &ed[w];
      x->parent = v;
      x->own_slot = k == slot || down[slot] < 0; /* the only child is taken as the main one */
      x->fuse_up = vu >= 0 && k == slot;
      x->fuse_dn = vu >= 0 && first;
      x->lat_up = estLatency(e, w, v);
      x->lat_dn = estLatency(e, v, w);
      double idle = 1 / (e->m->link_bw * topoPaths(e->topo, v, w));
      x->s_up = idle + 1 / e->m->mem_bw;
      x->s_dn = idle;
      sh->busy = TD_MAX(sh->busy, TD_MAX(estMessage(e, w, v, 0), estMessage(e, v, w, 0)));
      sh->idle = TD_MAX(sh->idle, idle);
      sh->lat += (x->lat_up + x->lat_dn) / 2 / (2 * (n - 1));
      x->sib_lat = -1;
      if (vu >= 0 && !first) x->sib_lat = ed[down[0]].lat_dn, x->sib_s = ed[down[0]].s_dn;
      first = 0;
      order[top++] = w;
    }
  }
}

/* The first chunk of a tree through idle links: when its up phase has reached the root (from
 * every leaf) plus the latest arrival of its down phase at a rank. Up, a rank with two children
 * stores the other-slot child's chunk (and reduces its own into it) before it takes its own-slot
 * child's, so that edge starts no earlier than the other has arrived; down, a rank's second child
 * waits for the whole chunk and its head at the first child. w: 4n scratch entries. */
static double estTreeFirst(int n, const estEdge *ed, const int *order, double chunk, double piece,
                           double *w) {
  double *ready = w, *oth = w + n, *mstart = w + 2 * n, *mcost = w + 3 * n, dmax = 0;
  for (int i = 0; i < n; i++) oth[i] = mstart[i] = 0, mcost[i] = -1;
  for (int i = n - 1; i >= 0; i--) { /* children before parents */
    int v = order[i];
    ready[v] = mcost[v] >= 0 ? TD_MAX(mstart[v], oth[v]) + mcost[v] : oth[v];
    if (i == 0) break;
    const estEdge *x = &ed[v];
    if (x->own_slot) {
      mstart[x->parent] = ready[v];
      mcost[x->parent] = x->lat_up + (x->fuse_up ? piece : chunk) * x->s_up;
    } else {
      oth[x->parent] = ready[v] + x->lat_up + chunk * x->s_up;
    }
  }
  double up = ready[order[0]], *sd = w;
  sd[order[0]] = 0;
  for (int i = 1; i < n; i++) {
    const estEdge *x = &ed[order[i]];
    const estEdge *y = &ed[x->parent]; /* the parent's own edge, when it has a first child */
    double t = sd[x->parent];
    if (x->sib_lat >= 0) /* after the whole chunk is in and its head at the first child */
      t += (y->fuse_dn ? (chunk - piece) * y->s_dn : 0) + x->sib_lat + piece * x->sib_s;
    sd[order[i]] = t + x->lat_dn + (x->fuse_dn ? piece : chunk) * x->s_dn;
    dmax = TD_MAX(dmax, sd[order[i]]);
  }
  return up + dmax;
}

/* select.h. */
int selectTreeEstimate(const tdTopo *topo, const tdCostModel *m, int nsizes, const uint64_t *bytes,
                       double *out) {
  int n = topo->nranks, nd = topo->ndims, ok = 0;
  if (nd <= 0 || topoHasDcn(topo) || n < 2) return 0; /* one torus's links only */
  estNet e = {topo, m, calloc((size_t)n * 2 * (size_t)nd, sizeof(float)),
              calloc((size_t)n, sizeof(int)), n};
  estEdge *ed = malloc(sizeof(estEdge) * 2 * (size_t)n);
  int *order = malloc(sizeof(int) * 2 * (size_t)n);
  double *su = malloc(sizeof(double) * 4 * (size_t)n);
  estShare sh = {0, 0, 0};
  if (e.link && e.sends && ed && order && su) {
    estAddTree(&e, 0);
    estAddTree(&e, 1);
    for (int t = 0; t < 2; t++) estTree(&e, t, ed + (size_t)t * n, order + (size_t)t * n, &sh);
    int most = 0;
    for (int r = 0; r < n; r++) most = TD_MAX(most, e.sends[r]);
    for (int i = 0; i < nsizes; i++) {
      double chunk = (double)bytes[i] / (2 * TD_ALGO_DTREE_CHUNKS), first = 0;
      double piece = m->piece_bytes > 0 ? TD_MIN(chunk, m->piece_bytes) : chunk;
      for (int t = 0; t < 2; t++)
        first = TD_MAX(
            first, estTreeFirst(n, ed + (size_t)t * n, order + (size_t)t * n, chunk, piece, su));
      /* Behind it a chunk per chunk time of the busiest link, less what it overlaps: the messages
         that share a link belong to different levels of the trees, an edge's latency or more
         apart on either side; at least a chunk time on idle links or the issue cost of the most
         sends of a rank. */
      double gap = 2 * sh.lat;
      double tail = TD_MAX((chunk - piece) * sh.idle, (chunk - piece) * sh.busy - gap);
      double next = TD_MAX(TD_MAX(chunk * sh.idle, chunk * sh.busy - gap), most * m->msg_overhead);
      out[i] = first + tail + (TD_ALGO_DTREE_CHUNKS - 1) * next;
    }
    ok = 1;
  }
  free(e.link);
  free(e.sends);
  free(ed);
  free(order);
  free(su);
  return ok;
}
