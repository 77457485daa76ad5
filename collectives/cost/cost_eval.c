/*
 * cost_eval.c - evaluating a prepared cost plan (cost.h) for one count: events in time order,
 * steps issued under the IR's rules, messages matched by key, transfers reserving the links of
 * their route.
 */
#include <stdlib.h>
#include <string.h>

#include "cost_int.h"
#include "cost_walk.h"

static uint64_t refBytes(const tdCostPlan *p, int rank, tdBufRef r) {
  uint64_t b, e;
  if (schedRefRange(&p->scheds[rank], r, p->count, &b, &e) != tpudistSuccess) return 0;
  return (e - b) * p->es;
}

static int evLess(const cpEvent *a, const cpEvent *b) {
  if (a->t != b->t) return a->t < b->t;
  if (a->g != b->g) return a->g < b->g;
  return a->kind < b->kind;
}

static tpudistResult_t heapPush(tdCostPlan *p, double t, uint32_t g, uint32_t kind) {
  if (kind == 0 && !p->steps[g].needed) { /* nothing waits for it: complete it now */
    p->done[g] = t;
    p->end = TD_MAX(p->end, t);
    return tpudistSuccess;
  }
  if (tdGrow(&p->heap, &p->capheap, p->nheap + 1, sizeof(cpEvent), 1024)) return tpudistNoMemory;
  size_t i = p->nheap++;
  p->heap[i] = (cpEvent){t, g, kind};
  cpEvent ev = p->heap[i];
  while (i > 0 && evLess(&ev, &p->heap[(i - 1) / 4])) { /* 4-ary heap */
    p->heap[i] = p->heap[(i - 1) / 4];
    i = (i - 1) / 4;
  }
  p->heap[i] = ev;
  return tpudistSuccess;
}

static cpEvent heapPop(tdCostPlan *p) {
  cpEvent top = p->heap[0], last = p->heap[--p->nheap];
  size_t i = 0, n = p->nheap;
  for (;;) {
    size_t c = 4 * i + 1, m = c;
    if (c >= n) break;
    for (size_t j = c + 1; j < c + 4 && j < n; j++)
      if (evLess(&p->heap[j], &p->heap[m])) m = j;
    if (!evLess(&p->heap[m], &last)) break;
    p->heap[i] = p->heap[m];
    i = m;
  }
  if (n > 0) p->heap[i] = last;
  return top;
}

/* Links (indices into busy[]) of the torus route src -> dst, every share's (topoPaths) one after
 * the other, *split shares; cached per pair when possible. */
static int routeLinks(tdCostPlan *p, uint32_t gs, int src, int dst, const uint32_t **links,
                      int *split) {
  size_t pair = p->route_by_step ? gs : (size_t)src * (size_t)p->nranks + (size_t)dst;
  if (p->route_first && p->route_first[pair] != TD_COST_NONE) {
    *links = p->route_links + p->route_first[pair];
    *split = p->route_split[pair];
    return p->route_len[pair];
  }
  int k = topoPaths(p->topo, src, dst), nh = 0;
  for (int s = 0; s < k; s++) {
    int h = topoRoute(p->topo, src, dst, s, p->hops, TD_COST_MAX_HOPS);
    if (h < 0 || h > TD_COST_MAX_HOPS) h = 0;
    for (int i = 0; i < h; i++) {
      const tdHop *hp = &p->hops[i];
      size_t from = p->mirror ? 0 : (size_t)hp->from; /* symmetric: the link's class */
      p->tmp_links[nh++] = (uint32_t)topoLinkIndex(p->topo, from, hp);
    }
  }
  *links = p->tmp_links;
  *split = k > 0 ? k : 1;
  if (!p->route_first || nh > UINT16_MAX) return nh;
  if (p->nroute_links + (size_t)nh > p->caproute_links) {
    size_t cap = TD_MAX(p->caproute_links * 2, p->nroute_links + (size_t)nh + 1024);
    uint32_t *n = realloc(p->route_links, sizeof(uint32_t) * cap);
    if (!n) return nh; /* no cache, still correct */
    p->route_links = n;
    p->caproute_links = cap;
  }
  memcpy(p->route_links + p->nroute_links, p->tmp_links, sizeof(uint32_t) * (size_t)nh);
  p->route_first[pair] = (uint32_t)p->nroute_links;
  p->route_len[pair] = (uint16_t)nh;
  p->route_split[pair] = (uint8_t)*split;
  p->nroute_links += (size_t)nh;
  *links = p->route_links + p->route_first[pair];
  return nh;
}

/* Reserves the resources of a message from src to dst for bytes starting at t0: each resource k
 * of res[0..n) is busy bytes / bw[k] from when it is free; the message has arrived when the last
 * is done (no earlier than floor plus one piece through the slowest) plus lat. *first: when its
 * first piece has arrived. */
static double reserve(tdCostPlan *p, const uint32_t *res, const double *bw, int n, uint64_t bytes,
                      double t0, double extra, double floor, double lat, double *first) {
  const tdCostModel *m = p->m;
  double piece = m->piece_bytes > 0 ? TD_MIN((double)bytes, m->piece_bytes) : (double)bytes;
  double fin = t0, start = t0, slow = 0;
  for (int h = 0; h < n; h++) {
    double b = TD_MAX(t0, p->busy[res[h]]), dt = extra + (double)bytes / bw[h];
    p->busy[res[h]] = b + dt;
    fin = TD_MAX(fin, b + dt);
    start = TD_MAX(start, b);
    slow = TD_MAX(slow, piece / bw[h]);
  }
  *first = start + extra + slow + lat;
  return TD_MAX(fin, floor + slow) + lat;
}

/* dcn_flows (cost.h): the slot of NIC direction k that a message from src to dst starting at t
 * takes (its pair's, else the one that finished first); *full: flow_win other pairs' messages
 * are unfinished there. NULL without a limit. */
static cpFlow *flowSlot(tdCostPlan *p, uint32_t k, int src, int dst, double t, int *full) {
  *full = 0;
  if (!p->flow_win) return NULL;
  cpFlow *f = p->flows + (size_t)k * p->flow_win, *slot = f;
  int busy = 0;
  for (uint32_t i = 0; i < p->flow_win; i++) {
    if (f[i].src == src && f[i].dst == dst) return &f[i]; /* the same connection */
    busy += f[i].fin > t;
    if (f[i].fin < slot->fin) slot = &f[i];
  }
  *full = busy == (int)p->flow_win;
  return slot;
}

static void flowTake(cpFlow *f, int src, int dst, double fin) {
  if (f) *f = (cpFlow){fin, src, dst};
}

/* A message across DCN: the sender's port (flat) or issue port (torus), its host's NIC out, the
 * receiver's host's NIC in, and on a flat topology the receiver's port; at half the rate on a NIC
 * direction whose flows are full. Not inlined: linkTime, the hot path of every evaluation, stays
 * small. */
__attribute__((noinline)) static double dcnTime(tdCostPlan *p, int src, int dst, uint64_t bytes,
                                                double t0, double floor, double *first) {
  const tdCostModel *m = p->m;
  int flat = p->topo->ndims <= 0, rs = p->mirror ? 0 : src, rd = p->mirror ? 0 : dst;
  double nic = m->dcn_bw / p->nic_share, bw[4] = {m->copy_bw, nic, nic, m->copy_bw}, fin;
  uint32_t ko = 2 * (uint32_t)p->dcn_nic[src], ki = 2 * (uint32_t)p->dcn_nic[dst] + 1;
  uint32_t res[4] = {(uint32_t)rs * 2, (uint32_t)(p->nic_base + (size_t)p->dcn_nic[src]),
                     (uint32_t)(p->nic_base + p->nnics + (size_t)p->dcn_nic[dst]),
                     (uint32_t)rd * 2 + 1};
  p->link_bytes += (double)bytes;
  if (!flat) {
    size_t inj = p->inj_base + (size_t)src;
    t0 = TD_MAX(t0, p->busy[inj]) + m->msg_overhead;
    p->busy[inj] = t0;
  }
  int full_o, full_i;
  cpFlow *fo = flowSlot(p, ko, src, dst, t0, &full_o), *fi = flowSlot(p, ki, src, dst, t0, &full_i);
  if (full_o) bw[1] /= 2;
  if (full_i) bw[2] /= 2;
  if (flat)
    fin = reserve(p, res, bw, 4, bytes, t0, m->msg_overhead, floor, m->dcn_latency, first);
  else
    fin = reserve(p, res + 1, bw + 1, 2, bytes, t0, 0, floor, m->dcn_latency, first);
  flowTake(fo, src, dst, p->busy[res[1]]);
  flowTake(fi, src, dst, p->busy[res[2]]);
  return fin;
}

/* Reserves the links from src to dst for bytes starting at t0. Returns the arrival time (no
 * earlier than floor + one piece), delayed by sync (the message's synchronisation step), and in
 * *first when the first piece has arrived. */
static double linkTime(tdCostPlan *p, uint32_t gs, int src, int dst, uint64_t bytes, double t0,
                       double floor, double sync, double *first, double *left) {
  const tdCostModel *m = p->m;
  double piece = m->piece_bytes > 0 ? TD_MIN((double)bytes, m->piece_bytes) : (double)bytes;
  if (src == dst) {
    *first = t0 + piece / m->mem_bw;
    return *left = TD_MAX(t0 + (double)bytes / m->mem_bw, floor + piece / m->mem_bw);
  }
  if (p->dcn_dom && p->dcn_dom[src] != p->dcn_dom[dst])
    return *left = dcnTime(p, src, dst, bytes, t0, floor, first);
  int flat = !p->topo || p->topo->ndims <= 0, nh = 1, split = 1;
  const uint32_t *links;
  uint32_t ports[2];
  double bw = flat ? m->copy_bw : m->link_bw;
  if (flat && m->numa_factor > 1 && p->topo && topoNumaOf(p->topo, src) != topoNumaOf(p->topo, dst))
    bw /= m->numa_factor; /* across NUMA nodes: the far node's memory */
  double dt = (double)bytes / bw;
  if (flat) { /* sender's out port, receiver's in port, each busy overhead + bytes / copy_bw */
    ports[0] = (uint32_t)src * 2, ports[1] = (uint32_t)(p->mirror ? 0 : dst) * 2 + 1;
    links = ports, nh = 2, dt += m->msg_overhead;
  } else { /* the route (after the sender's issue port, transfer): each share's links carry its
              bytes */
    nh = routeLinks(p, gs, src, dst, &links, &split);
    dt /= split;
    piece = TD_MIN(piece, (double)bytes / split);
  }
  double start, fin = costReserve(p->busy, links, nh, t0, dt, &start);
  int lat = flat ? 1 : nh / split;
  double delay = lat * m->hop_latency + m->msg_latency + sync;
  p->link_bytes += (double)bytes * (flat ? 1 : (double)nh / split);
  *first = start + (flat ? m->msg_overhead : 0) + piece / bw + delay;
  *left = TD_MAX(fin, floor + piece / bw);
  return *left + delay;
}

/* Where a message goes: its receiver, or in a symmetric plan the sender's peer. */
static int msgDest(const tdCostPlan *p, uint32_t gs, uint32_t gr) {
  if (!p->mirror) return p->steps[gr].rank;
  const cpStep *s = &p->steps[gs];
  return schedSendPeer(&p->scheds[0].streams[s->stream].steps[s->idx]);
}

/* The synchronisation step of a message within a host on a flat topology (shm_sync; none across
 * DCN or on a torus): it arrives no earlier than shm_sync after its send was posted at ts (a
 * receiver already waiting must first see the post, its peer be scheduled); a receive posted that
 * long after finds it there and pays nothing. So a plan pays it once per round of dependent
 * messages. A delay like the hop latency, not a reservation: the ports stay free meanwhile. */
static double syncStep(const tdCostPlan *p, uint32_t gs, uint32_t gr, double ts, double t0) {
  int src = p->steps[gs].rank, dst = msgDest(p, gs, gr);
  if ((p->topo && p->topo->ndims > 0) || (p->dcn_dom && p->dcn_dom[src] != p->dcn_dom[dst]))
    return 0;
  return TD_MAX(0, ts + p->m->shm_sync - t0);
}

/* A message between two chips of the torus (not to itself, not across DCN): it passes the
 * sender's issue port and its DMA queue. */
static int onIci(const tdCostPlan *p, int src, int dst) {
  return p->topo && p->topo->ndims > 0 && src != dst &&
         !(p->dcn_dom && p->dcn_dom[src] != p->dcn_dom[dst]);
}

/* The DMA queue of send gs's stream and destination dst, made on first use; NULL without
 * memory. Keys carry bit 63, as the map's keys must not be 0. */
static cpQueue *queueOf(tdCostPlan *p, uint32_t gs, int dst) {
  int src = p->steps[gs].rank;
  uint64_t key =
      1ull << 63 | (uint64_t)(p->rank_streams[src] + p->steps[gs].stream) << 32 | (uint32_t)dst;
  tdMapSlot *s = tdMapFind(&p->qmap, key);
  if (s) return &p->queues[s->val];
  if (tdGrow(&p->queues, &p->capqueues, (size_t)p->nqueues + 1, sizeof(cpQueue), 256) ||
      tdMapPut(&p->qmap, key, p->nqueues))
    return NULL;
  p->queues[p->nqueues] = (cpQueue){0, TD_COST_NONE, TD_COST_NONE};
  return &p->queues[p->nqueues++];
}

/* Starts the message of send gs (posted at ts) and receive gr at t0; q: its DMA queue, or NULL. */
static tpudistResult_t start(tdCostPlan *p, uint32_t gs, uint32_t gr, double ts, double t0,
                             cpQueue *q) {
  uint64_t bytes = refBytes(p, p->steps[gs].rank, p->steps[gs].wire);
  int fwd = (tdStepSemTable[p->steps[gs].op].flags & TD_SEM_WIRE_IN) != 0; /* fused sender */
  double first, left,
      fin = linkTime(p, gs, p->steps[gs].rank, msgDest(p, gs, gr), bytes, t0,
                     fwd ? p->floor[gs] : 0, syncStep(p, gs, gr, ts, t0), &first, &left);
  if (q) q->free = left;
  p->messages++;
  TD_CHECK(heapPush(p, fin, gs, 0));
  unsigned f = tdStepSemTable[p->steps[gr].op].flags;
  double red = (f & TD_SEM_REDUCES) ? 1 / p->m->mem_bw : 0;
  if (!(f & TD_SEM_WIRE_OUT)) return heapPush(p, fin + (double)bytes * red, gr, 0);
  /* fused receiver: its send may start once the first piece is in (and reduced) */
  double piece = p->m->piece_bytes > 0 ? TD_MIN((double)bytes, p->m->piece_bytes) : (double)bytes;
  p->floor[gr] = fin + (double)bytes * red;
  return heapPush(p, TD_MIN(first + piece * red, p->floor[gr]), gr, 1);
}

/* Send gs (posted at ts) and receive gr are both posted at t0. On the torus the sender's issue
 * port takes the message (msg_overhead each, one after the other), and it starts then, or when
 * the messages ahead of it in its DMA queue have left. */
static tpudistResult_t transfer(tdCostPlan *p, uint32_t gs, uint32_t gr, double ts, double t0) {
  int src = p->steps[gs].rank, dst = msgDest(p, gs, gr);
  if (!onIci(p, src, dst)) return start(p, gs, gr, ts, t0, NULL);
  size_t inj = p->inj_base + (size_t)src;
  t0 = p->busy[inj] = TD_MAX(t0, p->busy[inj]) + p->m->msg_overhead;
  cpQueue *q = queueOf(p, gs, dst);
  if (!q || (q->head == TD_COST_NONE && q->free <= t0)) return start(p, gs, gr, t0, t0, q);
  p->posted_s[gs] = t0; /* issued (no synchronisation step on the torus) */
  p->qnext[gs] = TD_COST_NONE;
  if (q->head != TD_COST_NONE) {
    p->qnext[q->tail] = gs;
    q->tail = gs;
    return tpudistSuccess;
  }
  q->head = q->tail = gs;
  return heapPush(p, q->free, (uint32_t)(q - p->queues), 2);
}

/* Queue k's message before has left at t: its next one starts. */
static tpudistResult_t queueNext(tdCostPlan *p, uint32_t k, double t) {
  cpQueue *q = &p->queues[k];
  uint32_t gs = q->head;
  q->head = p->qnext[gs];
  if (q->head == TD_COST_NONE) q->tail = TD_COST_NONE;
  double t0 = TD_MAX(t, p->posted_s[gs]);
  TD_CHECK(start(p, gs, p->steps[gs].smatch, t0, t0, q));
  return q->head == TD_COST_NONE ? tpudistSuccess : heapPush(p, q->free, k, 2);
}

/* One end of a message is issued: start the transfer if the other end is, else wait for it. */
static tpudistResult_t post(tdCostPlan *p, uint32_t g, int side, double t) {
  if (side == 0) {
    uint32_t o = p->steps[g].smatch;
    if (o == TD_COST_NONE) return tpudistInternalError;
    if (p->posted_r[o] >= 0) return transfer(p, g, o, t, t);
    p->posted_s[g] = t;
  } else {
    uint32_t o = p->steps[g].rmatch;
    if (o == TD_COST_NONE) return tpudistInternalError;
    if (p->posted_s[o] >= 0) return transfer(p, o, g, p->posted_s[o], t);
    p->posted_r[g] = t;
  }
  return tpudistSuccess;
}

static tpudistResult_t issue(tdCostPlan *p, uint32_t g, double t) {
  unsigned f = tdStepSemTable[p->steps[g].op].flags;
  if (f & TD_SEM_WIRE_IN) return post(p, g, 1, t);
  if (f & TD_SEM_WIRE_OUT) return post(p, g, 0, t);
  double bytes = (double)refBytes(p, p->steps[g].rank, p->steps[g].wire);
  return heapPush(p, t + bytes / p->m->mem_bw, g, 0);
}

static tpudistResult_t tryStream(tdCostPlan *p, uint32_t sid, double t) {
  const cpStream *cs = &p->streams[sid];
  while (p->next[sid] < cs->n) {
    uint32_t g = cs->first + p->next[sid];
    const cpStep *s = &p->steps[g];
    for (uint32_t c = p->cursor[sid]; c < s->npred; c++)
      if (p->done[p->preds[s->pred_first + c]] < 0) {
        p->cursor[sid] = c;
        return tpudistSuccess;
      }
    TD_CHECK(issue(p, g, t));
    p->next[sid]++;
    p->cursor[sid] = 0;
  }
  return tpudistSuccess;
}

/* The flow slots of dcn_flows: empty (no pair, finished at 0). */
static tpudistResult_t flowsReset(tdCostPlan *p) {
  double w = p->m->dcn_flows / p->nic_share;
  uint32_t win = (uint32_t)TD_MIN(w, TD_COST_DCN_MAX_FLOWS);
  if (win < w && win < TD_COST_DCN_MAX_FLOWS) win++;
  p->flow_win = p->dcn_dom && p->m->dcn_flows > 0 ? TD_MAX(win, 1) : 0;
  size_t n = 2 * (size_t)p->nnics * p->flow_win;
  if (p->flow_cap < p->flow_win) {
    cpFlow *f = realloc(p->flows, sizeof(cpFlow) * n);
    if (!f) return tpudistNoMemory;
    p->flows = f;
    p->flow_cap = p->flow_win;
  }
  for (size_t i = 0; i < n; i++) p->flows[i] = (cpFlow){0, -1, -1};
  return tpudistSuccess;
}

static tpudistResult_t evalReset(tdCostPlan *p) {
  for (uint32_t i = 0; i < p->nsteps; i++) p->done[i] = -1;
  for (size_t i = 0; i < p->nlinks; i++) p->busy[i] = 0;
  memset(p->next, 0, sizeof(uint32_t) * p->nstreams);
  memset(p->cursor, 0, sizeof(uint32_t) * p->nstreams);
  for (uint32_t i = 0; i < p->nsteps; i++) p->posted_s[i] = p->posted_r[i] = p->floor[i] = -1;
  p->nheap = 0;
  p->nqueues = 0;
  tdMapClear(&p->qmap);
  p->end = 0;
  p->messages = 0;
  p->link_bytes = 0;
  return flowsReset(p);
}

tpudistResult_t costPlanEval(tdCostPlan *p, const tdCostModel *m, uint64_t count,
                             uint32_t elem_size, double *seconds, char *err) {
  p->m = m;
  p->count = count;
  p->es = elem_size ? elem_size : 1;
  TD_CHECK(evalReset(p));
  tpudistResult_t r = tpudistSuccess;
  for (uint32_t sid = 0; sid < p->nstreams && r == tpudistSuccess; sid++) r = tryStream(p, sid, 0);
  while (p->nheap > 0 && r == tpudistSuccess) {
    cpEvent e = heapPop(p);
    if (e.kind == 1) {
      r = post(p, e.g, 0, e.t);
      continue;
    }
    if (e.kind == 2) {
      r = queueNext(p, e.g, e.t);
      continue;
    }
    p->done[e.g] = e.t;
    p->end = TD_MAX(p->end, e.t);
    int rk = p->steps[e.g].rank;
    if (!p->has_deps) { /* only the step's own stream can be waiting for it */
      r = tryStream(p, p->rank_streams[rk] + p->steps[e.g].stream, e.t);
      continue;
    }
    for (uint32_t sid = p->rank_streams[rk]; sid < p->rank_streams[rk + 1] && r == tpudistSuccess;
         sid++)
      r = tryStream(p, sid, e.t);
  }
  if (r != tpudistSuccess) return tdErr(err, r, "cost: unmatched message or no memory");
  for (uint32_t sid = 0; sid < p->nstreams; sid++)
    if (p->next[sid] < p->streams[sid].n)
      return tdErr(err, tpudistInternalError, "cost: rank %d stream stalls at step %u",
                   p->streams[sid].rank, p->next[sid]);
  for (uint32_t g = 0; g < p->nsteps; g++)
    if (p->done[g] < 0)
      return tdErr(err, tpudistInternalError, "cost: rank %d step never completes (unmatched)",
                   p->steps[g].rank);
  *seconds = p->end;
  return tpudistSuccess;
}
