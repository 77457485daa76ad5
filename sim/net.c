/*
 * net.c - the simulator's network: directed ICI links plus a per-chip injection and ejection
 * resource, flows routed over them, per-link fair shares, and the event heap.
 *
 * Rates are max-min fair (rate.c). A flow between DCN domains (slices; hosts of a flat topology,
 * topoDcnDomain) takes no ICI link: it crosses its source host's NIC out and its destination
 * host's NIC in (one resource each, dcn_bw, shared by the host's ranks) and pays dcn_latency.
 * Routes are the torus model's dimension-ordered shortest routes; when one crosses a failed link
 * the flow takes a shortest path over healthy links (breadth-first search). In the translation
 * quotient (sym.c) every link and injection/ejection resource is its representative's, so a flow
 * crossing k links of one class counts k times in its share. The event heap is events.c.
 */
#include <stdlib.h>
#include <string.h>

#include "sim_int.h"

/* In the translation quotient (sym.c) every link is its representative's link. */
static uint32_t linkId(const simNet *n, int rank, int axis, int dir) {
  return (uint32_t)(((n->rep ? n->rep[rank] : rank) * n->nd + axis) * 2 + (dir > 0 ? 0 : 1));
}

static uint32_t injId(const simNet *n, int rank) {
  return n->nlinks + (uint32_t)(n->rep ? n->rep[rank] : rank);
}

static uint32_t ejId(const simNet *n, int rank) {
  return n->nlinks + (uint32_t)n->topo->nranks + (uint32_t)(n->rep ? n->rep[rank] : rank);
}

static void failLink(simNet *n, int rank, int axis, int dir) {
  int nb = topoNeighbor(n->topo, rank, axis, dir);
  if (nb < 0) return;
  n->res[linkId(n, rank, axis, dir)].failed = 1;
  /* the way back: the neighbour of nb in the opposite direction is rank on a plain torus; on a
   * twisted one search nb's links for the one that lands on rank along the same axis */
  for (int d = -1; d <= 1; d += 2)
    if (topoNeighbor(n->topo, nb, axis, d) == rank) n->res[linkId(n, nb, axis, d)].failed = 1;
}

/* DCN (sim.h): every rank's domain and NIC, and the NICs' resources after the others. */
static tpudistResult_t netDcn(simNet *n, const simConfig *cfg, size_t *nres, char *err) {
  const tdTopo *t = cfg->topo;
  n->dcn_t0 = n->dcn_t1 = -1;
  if (!topoHasDcn(t)) return tpudistSuccess;
  if (!(cfg->dcn_bw > 0))
    return tdErr(err, tpudistInvalidArgument, "sim: a DCN level needs a DCN bandwidth > 0");
  n->dcn_dom = malloc(sizeof(int) * 2 * (size_t)t->nranks);
  if (!n->dcn_dom) return tdErr(err, tpudistNoMemory, "sim: no memory for DCN");
  n->dcn_nic = n->dcn_dom + t->nranks;
  for (int r = 0; r < t->nranks; r++) {
    n->dcn_dom[r] = topoDcnDomain(t, r);
    n->dcn_nic[r] = topoHostOf(t, r);
  }
  n->nic_base = (uint32_t)*nres;
  n->nnics = (uint32_t)topoNumHosts(t);
  n->dcn_latency = cfg->dcn_latency;
  *nres += 2 * (size_t)n->nnics;
  return tpudistSuccess;
}

tpudistResult_t netInit(simNet *n, const simConfig *cfg, char *err) {
  memset(n, 0, sizeof(*n));
  n->topo = cfg->topo;
  n->nd = cfg->topo->ndims;
  int nr = cfg->topo->nranks;
  n->nlinks = (uint32_t)(nr * n->nd * 2);
  size_t nres = n->nlinks + 2 * (size_t)nr;
  TD_CHECK(netDcn(n, cfg, &nres, err));
  n->nres = nres;
  n->exact_rounds = 8; /* rate.c: where the iteration has cost that much, solve exactly */
  n->res = calloc(nres, sizeof(simRes));
  n->maxhops = 64;
  n->hops = malloc(sizeof(tdHop) * (size_t)n->maxhops);
  if (!n->res || !n->hops) return tdErr(err, tpudistNoMemory, "sim: no memory for %zu links", nres);
  n->level = malloc(sizeof(double) * (nres ? nres : 1));
  if (!n->level) return tdErr(err, tpudistNoMemory, "sim: no memory for %zu links", nres);
  for (uint32_t i = 0; i < n->nlinks; i++) n->res[i].cap = n->level[i] = cfg->p.link_bw;
  double inj = cfg->p.inj_bw > 0 ? cfg->p.inj_bw : cfg->p.link_bw * (n->nd ? 2 * n->nd : 1);
  for (size_t i = n->nlinks; i < nres; i++)
    n->res[i].cap = n->level[i] = i >= n->nic_base && n->dcn_dom ? cfg->dcn_bw : inj;
  /* a chip's flows leave (and arrive) over its own links: an injection limit at or above their
   * sum never binds, and is left out of the routes */
  n->use_inj = n->nd == 0 || inj < cfg->p.link_bw * 2 * n->nd * (1 - 1e-12);
  n->hop_latency = cfg->p.hop_latency;
  n->msg_overhead = cfg->p.msg_overhead;
  for (int i = 0; i < cfg->nfailed; i++) {
    const simFailedLink *f = &cfg->failed[i];
    if (n->nd == 0 || f->rank < 0 || f->rank >= nr || f->axis < 0 || f->axis >= n->nd ||
        (f->dir != 1 && f->dir != -1) || topoNeighbor(n->topo, f->rank, f->axis, f->dir) < 0)
      return tdErr(err, tpudistInvalidArgument, "sim: no link at rank %d axis %d dir %d", f->rank,
                   f->axis, f->dir);
    failLink(n, f->rank, f->axis, f->dir);
  }
  return tpudistSuccess;
}

void netFree(simNet *n) {
  for (size_t i = 0; n->res && i < n->nres; i++) free(n->res[i].flows);
  free(n->dcn_dom);
  for (uint32_t i = 0; i < n->nflows; i++) free(n->flows[i].heap);
  free(n->res);
  free(n->level);
  free(n->flows);
  free(n->hot);
  free(n->freeflows);
  free(n->heap);
  free(n->hops);
  free(n->bfs_prev);
  free(n->work);
  free(n->dem);
  free(n->bfs_queue);
  free(n->mm_rem);
  free(n->mm_cnt);
  free(n->mm_heap);
  free(n->mm_pos);
  free(n->mm_frozen);
  free(n->mm_capped);
  memset(n, 0, sizeof(*n));
}

/* ---- routes ---- */
static tpudistResult_t addRes(simFlow *f, uint32_t r) {
  uint32_t cap = f->heap ? f->capres : SIM_INLINE_RES;
  if (f->nres == cap) {
    uint32_t *h = realloc(f->heap, sizeof(uint32_t) * cap * 2);
    if (!h) return tpudistNoMemory;
    if (!f->heap) memcpy(h, f->res_inline, sizeof(f->res_inline));
    f->heap = h;
    f->capres = cap * 2;
  }
  SIM_FLOW_RES(f)[f->nres++] = r;
  return tpudistSuccess;
}

/* Shortest path over healthy links (breadth first); returns hops or -1. */
static int netDetour(simNet *n, simFlow *f, int src, int dst) {
  int nr = n->topo->nranks;
  if (!n->bfs_prev) {
    n->bfs_prev = malloc(sizeof(int) * (size_t)nr);
    n->bfs_queue = malloc(sizeof(int) * (size_t)nr);
    if (!n->bfs_prev || !n->bfs_queue) return -1;
  }
  for (int i = 0; i < nr; i++) n->bfs_prev[i] = -1;
  int head = 0, tail = 0;
  n->bfs_queue[tail++] = src;
  n->bfs_prev[src] = src;
  while (head < tail && n->bfs_prev[dst] < 0) {
    int u = n->bfs_queue[head++];
    for (int a = 0; a < n->nd; a++)
      for (int d = 1; d >= -1; d -= 2) {
        int v = topoNeighbor(n->topo, u, a, d);
        if (v < 0 || n->bfs_prev[v] >= 0 || n->res[linkId(n, u, a, d)].failed) continue;
        n->bfs_prev[v] = u * 16 + a * 2 + (d > 0 ? 0 : 1);
        if (v == src) continue;
        n->bfs_queue[tail++] = v;
      }
  }
  if (n->bfs_prev[dst] < 0) return -1;
  int hops = 0;
  uint32_t path[SIM_INLINE_RES * 8];
  for (int v = dst; v != src && hops < SIM_INLINE_RES * 8 - 2; hops++) {
    int code = n->bfs_prev[v], u = code / 16, a = (code % 16) / 2, d = code % 2 ? -1 : 1;
    path[hops] = linkId(n, u, a, d);
    v = u;
  }
  for (int i = hops - 1; i >= 0; i--)
    if (addRes(f, path[i]) != tpudistSuccess) return -1;
  return hops;
}

/* The hops of share path of the route src -> dst into n->hops (grown as needed); their count. */
static int netPath(simNet *n, int src, int dst, int path) {
  int h = topoRoute(n->topo, src, dst, path, n->hops, n->maxhops);
  if (h > n->maxhops) {
    tdHop *nh = realloc(n->hops, sizeof(tdHop) * (size_t)h);
    if (!nh) return -1;
    n->hops = nh;
    n->maxhops = h;
    h = topoRoute(n->topo, src, dst, path, n->hops, n->maxhops);
  }
  return h;
}

/* The links of every share of the route (topoPaths), or a detour when one crosses a failed
 * link; *split: the shares (the flow carries one share's bytes over all of them). */
static tpudistResult_t netRoute(simNet *n, simFlow *f, int src, int dst, int *nhops, int *split) {
  int k = topoPaths(n->topo, src, dst), h = 0, broken = 0;
  for (int p = 0; p < k && !broken; p++) {
    if ((h = netPath(n, src, dst, p)) < 0) return tpudistNoMemory;
    for (int i = 0; i < h; i++)
      if (n->res[linkId(n, n->hops[i].from, n->hops[i].axis, n->hops[i].dir)].failed) broken = 1;
  }
  *split = 1;
  if (broken) {
    *nhops = netDetour(n, f, src, dst);
    return *nhops < 0 ? tpudistRemoteError : tpudistSuccess;
  }
  for (int p = 0; p < k; p++) {
    h = netPath(n, src, dst, p);
    for (int i = 0; i < h; i++)
      TD_CHECK(addRes(f, linkId(n, n->hops[i].from, n->hops[i].axis, n->hops[i].dir)));
  }
  *nhops = h;
  *split = k;
  return tpudistSuccess;
}

/* 1 if a flow from src to dst crosses DCN. */
static int netCrossesDcn(const simNet *n, int src, int dst) {
  return n->dcn_dom && n->dcn_dom[src] != n->dcn_dom[dst];
}

uint32_t netPort(simNet *n, int src, int dst) {
  tdHop h;
  if (n->nd == 0 || src == dst || netCrossesDcn(n, src, dst) ||
      topoRoute(n->topo, src, dst, 0, &h, 1) < 1)
    return injId(n, src);
  return linkId(n, h.from, h.axis, h.dir);
}

/* ---- flows ---- */
static tpudistResult_t resAdd(simRes *r, uint32_t id) {
  if (tdGrow(&r->flows, &r->capn, (size_t)r->n + 1, sizeof(uint32_t), 4)) return tpudistNoMemory;
  r->flows[r->n++] = id;
  return tpudistSuccess;
}

static tpudistResult_t flowAlloc(simNet *n, uint32_t *id) {
  if (n->nfree) {
    *id = n->freeflows[--n->nfree];
    return tpudistSuccess;
  }
  if (n->nflows == n->capflows) {
    uint32_t c = n->capflows ? n->capflows * 2 : 1024;
    simFlow *a = realloc(n->flows, sizeof(simFlow) * c);
    simFlowHot *h = realloc(n->hot, sizeof(simFlowHot) * c);
    uint32_t *fr = realloc(n->freeflows, sizeof(uint32_t) * c);
    if (a) n->flows = a;
    if (h) n->hot = h;
    if (fr) n->freeflows = fr;
    if (!a || !h || !fr) return tpudistNoMemory;
    n->capflows = c;
  }
  *id = n->nflows++;
  n->flows[*id].heap = NULL;
  return tpudistSuccess;
}

tpudistResult_t netStart(simNet *n, int src, int dst, double bytes, double now, uint32_t send_slot,
                         uint32_t recv_slot, uint32_t feeder, uint32_t *id) {
  TD_CHECK(flowAlloc(n, id));
  simFlow *f = &n->flows[*id];
  simFlowHot *h = &n->hot[*id];
  int hops = 0;
  f->nres = 0;
  f->child = SIM_NO_FLOW;
  f->hpos = SIM_NO_FLOW;
  h->cap_rate = 1e300;
  h->rate = 0;
  f->send_slot = send_slot;
  f->recv_slot = recv_slot;
  f->t_last = now;
  h->active = 1;
  f->split = 1;
  int dcn = netCrossesDcn(n, src, dst);
  if (src != dst) {
    if (dcn) { /* the hosts' NICs instead of ICI */
      TD_CHECK(addRes(f, n->nic_base + (uint32_t)n->dcn_nic[src]));
      TD_CHECK(addRes(f, n->nic_base + n->nnics + (uint32_t)n->dcn_nic[dst]));
    } else if (n->nd > 0) {
      TD_CHECK(netRoute(n, f, src, dst, &hops, &f->split));
    }
    for (int i = 0; n->use_inj && i < f->split; i++) { /* every share leaves and arrives */
      TD_CHECK(addRes(f, injId(n, src)));
      TD_CHECK(addRes(f, ejId(n, dst)));
    }
  }
  f->remaining = f->bytes = bytes / f->split; /* one share: f->rate is a share's rate */
  if (feeder != SIM_NO_FLOW && n->hot[feeder].active) {
    n->flows[feeder].child = *id;
    h->cap_rate = netFlowRate(n, feeder) / f->split;
  }
  f->lat = src == dst ? 0 : n->msg_overhead + n->hop_latency * (n->nd ? hops : 1);
  f->dcn = dcn;
  if (dcn) {
    f->lat = n->msg_overhead + n->dcn_latency;
    if (n->dcn_t0 < 0) n->dcn_t0 = now;
  }
  if (++n->active > n->max_active) n->max_active = n->active;
  if (bytes <= 0 || !f->nres) {
    h->rate = 1e300;
    return netSetDrain(n, *id, now);
  }
  for (uint32_t i = 0; i < f->nres; i++) TD_CHECK(resAdd(&n->res[SIM_FLOW_RES(f)[i]], *id));
  n->incid += f->nres;
  return rateJoin(n, *id, now);
}

tpudistResult_t netDrained(simNet *n, uint32_t id, double now) {
  simFlow *f = &n->flows[id];
  n->hot[id].active = 0;
  if (f->dcn) n->dcn_t1 = TD_MAX(n->dcn_t1, now + f->lat);
  n->active--;
  for (uint32_t i = 0; i < f->nres; i++) {
    simRes *r = &n->res[SIM_FLOW_RES(f)[i]];
    r->bytes += f->bytes;
    for (uint32_t j = 0; j < r->n; j++)
      if (r->flows[j] == id) {
        r->flows[j] = r->flows[--r->n];
        n->incid--;
        break;
      }
  }
  return rateLeave(n, id, now);
}

void netRelease(simNet *n, uint32_t id) {
  simFlow *f = &n->flows[id];
  free(f->heap);
  f->heap = NULL;
  f->nres = 0;
  f->child = SIM_NO_FLOW;
  n->freeflows[n->nfree++] = id;
}
