/*
 * select_est.c - pod-scale estimates of plans from their structure (select.h), for candidates
 * whose every rank's plan is too many steps to evaluate there and that no symmetry covers: the
 * pipelined chain (broadcast, reduce), the double binary tree all-reduce (both rooted) and the
 * recursive doubling family on a rank count that is not a power of two (folded: the ranks' plans
 * are not images of each other). All use the cost model's terms (cost.h): per message its hops'
 * latency, msg_latency and the sender's msg_overhead; a piece (piece_bytes) ahead of the rest
 * where a step forwards as it receives (fused), the whole chunk where it stores first; bytes over
 * link_bw times the shares of its route, or dcn_bw across DCN (the chain; the other estimates
 * cover one torus without DCN); a reduction at mem_bw. The chain and the tree are formulas over
 * their links; the recursive doubling family is walked message by message in time order, as the
 * cost model executes it, from its rounds (a few per rank) instead of its steps.
 */
#include <stdlib.h>
#include <string.h>

#include "algos.h"
#include "cost_walk.h"
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

/* Adds a message from a to b (add) or returns its seconds per byte on its busiest link (!add:
 * the messages there share it). */
static double estMessage(estNet *e, int a, int b, int add) {
  tdHop hops[1024];
  int np = topoPaths(e->topo, a, b);
  double worst = 0;
  for (int p = 0; p < np; p++) {
    int nh = topoRoute(e->topo, a, b, p, hops, (int)TD_ARRAY_SIZE(hops));
    for (int h = 0; h < TD_MIN(nh, (int)TD_ARRAY_SIZE(hops)); h++) {
      float *l = &e->link[topoLinkIndex(e->topo, (size_t)hops[h].from, &hops[h])];
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

/* The folded recursive doubling family, round by round: what rank r sends (to, sbytes) and
 * receives (from, rbytes, reduced or not) in round i of the plan; -1: nothing. */
typedef struct {
  int to, from, reduce;
  double sbytes, rbytes;
  double swrap; /* of sbytes, what a second send to the same peer carries (wrapped blocks) */
} foldMsg;

typedef enum { FOLD_RECDBL = 0, FOLD_RABENSEIFNER, FOLD_HALVING, FOLD_DISSEMINATION } foldKind;

typedef struct {
  foldKind kind;
  int n, q, e, lg, rounds;
  double bytes; /* all-reduce: the buffer; reduce-scatter and all-gather: one block */
} foldPlan;

/* Round 0 folds (the even rank of the first 2e hands over bytes to the odd one, which reduces),
 * the last round unfolds (bytes back); between them the exchanges of new ranks (algoFold*). */
static void foldEnds(const foldPlan *f, int r, int i, double in, double back, foldMsg *o) {
  if (r >= 2 * f->e) return;
  int even = r % 2 == 0;
  if (i == 0 && even) o->to = r + 1, o->sbytes = in;
  if (i == 0 && !even) o->from = r - 1, o->rbytes = in, o->reduce = 1;
  if (i == f->rounds - 1 && !even) o->to = r - 1, o->sbytes = back;
  if (i == f->rounds - 1 && even) o->from = r + 1, o->rbytes = back;
}

/* Reduce-scatter by halving (reducescatter_recdbl.c): distance q/2 first; new rank v sends the
 * blocks of the new ranks of the half it gives and reduces those of the half it keeps. */
static void foldHalving(const foldPlan *f, int v, int i, foldMsg *o) {
  int d = f->q >> i, lo = v & ~(2 * d - 1), keep = (v & d) ? lo + d : lo, give = keep ^ d;
  o->to = o->from = algoFoldOldRank(f->e, v ^ d);
  o->sbytes = (algoFoldFirstRank(f->e, give + d) - algoFoldFirstRank(f->e, give)) * f->bytes;
  o->rbytes = (algoFoldFirstRank(f->e, keep + d) - algoFoldFirstRank(f->e, keep)) * f->bytes;
  o->reduce = 1;
}

static void foldRound(const foldPlan *f, int r, int i, foldMsg *o) {
  o->to = o->from = -1, o->reduce = 0, o->sbytes = o->rbytes = o->swrap = 0;
  if (f->kind == FOLD_DISSEMINATION) { /* allgather_recdbl.c (Bruck) */
    int d = 1 << i;
    o->to = (r - d + f->n) % f->n, o->from = (r + d) % f->n;
    int cnt = TD_MIN(d, f->n - d);
    o->sbytes = o->rbytes = cnt * f->bytes;
    o->swrap = TD_MAX(0, r + cnt - f->n) * f->bytes; /* blocks r.., then 0.. */
    return;
  }
  double all = f->kind == FOLD_HALVING ? f->n * f->bytes : f->bytes;
  foldEnds(f, r, i, all, f->kind == FOLD_HALVING ? f->bytes : all, o);
  int v = algoFoldNewRank(f->e, r);
  if (i == 0 || i == f->rounds - 1 || v < 0) return;
  if (f->kind == FOLD_HALVING) return foldHalving(f, v, i, o);
  int k = i - 1; /* exchange k: distance 2^k (Rabenseifner: halving k, then doubling back) */
  if (f->kind == FOLD_RABENSEIFNER && k >= f->lg) k = 2 * f->lg - 1 - k;
  o->to = o->from = algoFoldOldRank(f->e, v ^ (1 << k));
  o->sbytes = o->rbytes = f->kind == FOLD_RECDBL ? all : all / (2 << k);
  o->reduce = f->kind == FOLD_RECDBL || i - 1 < f->lg;
}

typedef struct {
  double t;
  int r;
} foldDue;

/* The walk's state: per rank the first round it has not finished; per rank and round when it
 * posted its send and its receive (< 0: not yet), how many of its messages that end the round are
 * unfinished (< 0: not posted) and when the last ends; per directed link and per rank's issue port
 * when it is free; the ranks due to go on, earliest first (a heap). gate: a round ends when its
 * send has arrived too (the all-reduce's exchanges alternate two buffers, so the next receive
 * overwrites what was sent); else when its receive has (the next steps touch other chunks). */
typedef struct {
  const tdTopo *topo;
  const tdCostModel *m;
  const foldPlan *f;
  int *round, *left, nheap, gate, moving;
  foldDue *heap;
  double *sposted, *rposted, *end, *busy, *inj, last;
  /* per rank and round the links of its send's route (every share's), computed once for all
     sizes: first (UINT32_MAX: not yet) and count in pool, shares */
  uint32_t *lfirst, *pool;
  uint16_t *lcount;
  uint8_t *lsplit;
  size_t npool, cappool;
  int oom;
} foldWalk;

static void heapPush(foldWalk *w, int r, double t) {
  int i = w->nheap++;
  while (i > 0 && w->heap[(i - 1) / 2].t > t) w->heap[i] = w->heap[(i - 1) / 2], i = (i - 1) / 2;
  w->heap[i] = (foldDue){t, r};
}

static foldDue heapPop(foldWalk *w) {
  foldDue top = w->heap[0], last = w->heap[--w->nheap];
  int i = 0;
  for (;;) {
    int c = 2 * i + 1;
    if (c >= w->nheap) break;
    if (c + 1 < w->nheap && w->heap[c + 1].t < w->heap[c].t) c++;
    if (w->heap[c].t >= last.t) break;
    w->heap[i] = w->heap[c], i = c;
  }
  w->heap[i] = last;
  return top;
}

static size_t foldAt(const foldWalk *w, int r, int i) {
  return (size_t)r * (size_t)w->f->rounds + (size_t)i;
}

/* A message that ends round i of rank r is done at t: when it was the last of the round r waits
 * for, r goes on then. */
static void foldDone(foldWalk *w, int r, int i, double t) {
  size_t k = foldAt(w, r, i);
  w->end[k] = TD_MAX(w->end[k], t);
  w->last = TD_MAX(w->last, t);
  if (--w->left[k] == 0 && i == w->round[r] && r != w->moving) heapPush(w, r, w->end[k]);
}

/* The links of rank src's send in round i to dst (every share's), *split shares; out of memory:
 * none, and the walk fails (oom). */
static int foldLinks(foldWalk *w, int src, int dst, int i, const uint32_t **links, int *split) {
  size_t k = foldAt(w, src, i);
  if (w->lfirst[k] == UINT32_MAX) {
    tdHop hops[1024];
    int np = topoPaths(w->topo, src, dst), nh = 0;
    for (int p = 0; p < np; p++) {
      int h = TD_MIN(topoRoute(w->topo, src, dst, p, hops, (int)TD_ARRAY_SIZE(hops)),
                     (int)TD_ARRAY_SIZE(hops));
      if (w->npool + (size_t)nh + (size_t)h > w->cappool) {
        size_t cap = TD_MAX(2 * w->cappool, w->npool + (size_t)nh + (size_t)h + 4096);
        uint32_t *g = realloc(w->pool, sizeof(uint32_t) * cap);
        if (!g || cap > UINT32_MAX) {
          free(g);
          w->oom = 1, *split = 1;
          return 0;
        }
        w->pool = g, w->cappool = cap;
      }
      for (int j = 0; j < h; j++)
        w->pool[w->npool + (size_t)nh++] =
            (uint32_t)topoLinkIndex(w->topo, (size_t)hops[j].from, &hops[j]);
    }
    w->lfirst[k] = (uint32_t)w->npool, w->lcount[k] = (uint16_t)nh, w->lsplit[k] = (uint8_t)np;
    w->npool += (size_t)nh;
  }
  *links = w->pool + w->lfirst[k];
  *split = w->lsplit[k];
  return w->lcount[k];
}

/* Reserves the route's links (each share's) for bytes from t0; returns when the last byte is
 * through (the message has left its DMA queue). */
static double foldReserve(foldWalk *w, const uint32_t *links, int nh, int np, double bytes,
                          double t0) {
  double start;
  return costReserve(w->busy, links, nh, t0, bytes / w->m->link_bw / np, &start);
}

/* The message of o (src's in round i) to dst is through at fin: its receiver (and, under gate,
 * its sender) may go on after the hops' latency and the synchronisation. */
static void foldArrive(foldWalk *w, int src, int dst, int i, int nh, int np, const foldMsg *o,
                       int reduce, double fin) {
  const tdCostModel *m = w->m;
  fin += (double)nh / np * m->hop_latency + m->msg_latency;
  if (w->gate) foldDone(w, src, i, fin);
  foldDone(w, dst, i, fin + (reduce ? o->sbytes / m->mem_bw : 0));
}

/* The message of o (src's in round i) to dst, both ends posted at t0, as the cost model takes
 * it (cost.h): the sender's issue cost, every link of its route (each share's) reserved from when
 * it is free, the hops' latency and the synchronisation after the last byte; the receiver reduces
 * it. Wrapped blocks are a second send to the same peer, issued after the first and started, as
 * an event of its own, when the first has left (one DMA queue per stream and peer). */
static void foldMessage(foldWalk *w, int src, int dst, int i, const foldMsg *o, int reduce,
                        double t0) {
  const uint32_t *links;
  int np, nh = foldLinks(w, src, dst, i, &links, &np);
  t0 = TD_MAX(t0, w->inj[src]) + w->m->msg_overhead;
  double fin = foldReserve(w, links, nh, np, o->sbytes - o->swrap, t0);
  w->inj[src] = t0;
  if (o->swrap <= 0) return foldArrive(w, src, dst, i, nh, np, o, reduce, fin);
  w->inj[src] = t0 + w->m->msg_overhead;
  heapPush(w, w->f->n + (int)foldAt(w, src, i), TD_MAX(fin, w->inj[src]));
}

/* The second send of src's round k (foldAt) starts at t. */
static void foldWrap(foldWalk *w, size_t k, double t) {
  int src = (int)(k / (size_t)w->f->rounds), i = (int)(k % (size_t)w->f->rounds);
  foldMsg o, p;
  foldRound(w->f, src, i, &o);
  foldRound(w->f, o.to, i, &p);
  const uint32_t *links;
  int np, nh = foldLinks(w, src, o.to, i, &links, &np);
  foldArrive(w, src, o.to, i, nh, np, &o, p.reduce, foldReserve(w, links, nh, np, o.swrap, t));
}

/* The rounds before round i whose receives its send needs: all, but in Bruck's dissemination
 * the last round sends blocks complete since round ceil(lg cnt) (the only round that can start
 * before the one before it ends). */
static int foldNeeds(const foldPlan *f, int i) {
  if (f->kind != FOLD_DISSEMINATION) return i;
  int cnt = TD_MIN(1 << i, f->n - (1 << i)), k = 0;
  while ((1 << k) < cnt) k++;
  return k;
}

/* Rank r posts round i at t: a message whose other end is posted already starts (a transfer
 * starts when both its send and its receive are issued). */
static void foldPost(foldWalk *w, int r, int i, double t) {
  const foldPlan *f = w->f;
  foldMsg o, p;
  foldRound(f, r, i, &o);
  size_t k = foldAt(w, r, i);
  w->end[k] = t, w->left[k] = (o.from >= 0) + (o.to >= 0 && w->gate);
  if (o.to >= 0) w->sposted[k] = t;
  if (o.from >= 0) w->rposted[k] = t;
  int send = o.to >= 0 && w->rposted[foldAt(w, o.to, i)] >= 0;
  int recv = o.from >= 0 && w->sposted[foldAt(w, o.from, i)] >= 0;
  if (send) {
    foldRound(f, o.to, i, &p);
    foldMessage(w, r, o.to, i, &o, p.reduce, t);
  }
  if (recv) {
    foldRound(f, o.from, i, &p);
    foldMessage(w, o.from, r, i, &p, o.reduce, t);
  }
}

/* Rank r has finished its rounds before round[r] at t: it posts its rounds in order until one
 * that ends later, and the last round if its send needs no more. A round whose messages
 * started when posted goes on as an event when it ends, so that every message starts in time
 * order (the links are reserved in that order). */
static void foldAdvance(foldWalk *w, int r, double t) {
  int n = w->f->rounds, i = w->round[r];
  w->moving = r;
  for (; i < n; i++) {
    size_t k = foldAt(w, r, i);
    if (w->left[k] < 0) foldPost(w, r, i, t);
    if (w->left[k] > 0 || w->end[k] > t) break;
  }
  if (i + 1 < n && w->left[foldAt(w, r, n - 1)] < 0 && foldNeeds(w->f, n - 1) <= i)
    foldPost(w, r, n - 1, t);
  w->round[r] = i; /* one event at a time: the round that ends later, or its messages' */
  if (i < n && w->left[foldAt(w, r, i)] == 0) heapPush(w, r, w->end[foldAt(w, r, i)]);
  w->moving = -1;
}

/* One walk for bytes: every rank posts its first round at 0; returns when the last is done. */
static double foldWalkOnce(foldWalk *w) {
  int n = w->f->n;
  size_t nl = (size_t)n * (size_t)w->topo->ndims * 2;
  for (size_t l = 0; l < nl; l++) w->busy[l] = 0;
  for (size_t k = 0; k < (size_t)n * (size_t)w->f->rounds; k++)
    w->sposted[k] = w->rposted[k] = -1, w->left[k] = -1;
  w->last = 0, w->moving = -1;
  w->nheap = 0;
  for (int r = 0; r < n; r++) {
    w->round[r] = 0, w->inj[r] = 0;
    heapPush(w, r, 0);
  }
  while (w->nheap > 0) {
    foldDue d = heapPop(w);
    if (d.r >= n)
      foldWrap(w, (size_t)(d.r - n), d.t);
    else
      foldAdvance(w, d.r, d.t);
  }
  return w->last;
}

/* select.h. */
int selectFoldEstimate(const tdTopo *topo, tdColl c, const char *algo, const tdCostModel *m,
                       int nsizes, const uint64_t *bytes, double *out) {
  int n = topo->nranks, rab = strcmp(algo, "rabenseifner") == 0, ok = 0;
  double est[64];
  if (nsizes > (int)TD_ARRAY_SIZE(est) || topo->ndims <= 0 || topoHasDcn(topo) || n < 3 ||
      (!rab && strcmp(algo, "recdbl") != 0))
    return 0;
  foldPlan f = {FOLD_RECDBL, n, algoFoldPow2(n), 0, 0, 0, 0};
  f.e = n - f.q;
  while ((1 << f.lg) < f.q) f.lg++;
  f.rounds = f.lg + 2;
  if (c == TD_COLL_ALLREDUCE && rab)
    f.kind = FOLD_RABENSEIFNER, f.rounds = 2 * f.lg + 2;
  else if (c == TD_COLL_REDUCESCATTER && !rab)
    f.kind = FOLD_HALVING;
  else if (c == TD_COLL_ALLGATHER && !rab && f.e > 0) /* Bruck's dissemination: no fold */
    f.kind = FOLD_DISSEMINATION, f.rounds = f.lg + 1;
  else if (c != TD_COLL_ALLREDUCE || rab)
    return 0;
  size_t nl = (size_t)n * (size_t)topo->ndims * 2;
  foldWalk w;
  memset(&w, 0, sizeof(w));
  w.topo = topo, w.m = m, w.f = &f;
  size_t nr = (size_t)n * (size_t)f.rounds;
  w.round = malloc(sizeof(int) * ((size_t)n + nr));
  w.left = w.round + n;
  w.heap = malloc(sizeof(foldDue) * ((size_t)n + nr)); /* ranks and second sends */
  w.gate = f.kind == FOLD_RECDBL;
  w.sposted = malloc(sizeof(double) * (3 * nr + (size_t)n + nl));
  w.rposted = w.sposted + nr, w.end = w.rposted + nr, w.inj = w.end + nr, w.busy = w.inj + n;
  w.lfirst = malloc(sizeof(uint32_t) * nr);
  w.lcount = malloc(sizeof(uint16_t) * nr);
  w.lsplit = malloc(nr);
  if (w.round && w.heap && w.sposted && w.lfirst && w.lcount && w.lsplit) {
    for (size_t k = 0; k < nr; k++) w.lfirst[k] = UINT32_MAX;
    for (int i = 0; i < nsizes && !w.oom; i++) {
      f.bytes = (double)bytes[i];
      est[i] = foldWalkOnce(&w);
    }
    ok = !w.oom;
    for (int i = 0; i < nsizes && ok; i++) out[i] = est[i];
  }
  free(w.round);
  free(w.heap);
  free(w.sposted);
  free(w.lfirst);
  free(w.lcount);
  free(w.lsplit);
  free(w.pool);
  return ok;
}
