/*
 * cost.c - the cost model (cost.h): discrete-event execution of all ranks' schedules under a
 * link model. Preparation (count-independent) flattens the steps of every rank and stream into
 * one array, computes for each step the earlier steps of its stream it conflicts with (per chunk:
 * the last writer, and for a write also the readers since) plus its cross-stream deps, and the
 * match key of each message end. Evaluation for one count runs events in time order: a step
 * issues when its predecessor in the stream has issued and its conflicts/deps are complete; a
 * transfer starts when both ends are issued and reserves the links of its route.
 */
#include <stdlib.h>
#include <string.h>

#include "cost_int.h"

void costModelDefault(const tdTopo *t, tdCostModel *m) {
  memset(m, 0, sizeof(*m)); /* msg_latency 0: the runtime's figures have none */
  if (t && t->ndims > 0) {
    m->hop_latency = 1e-6;
    m->link_bw = 45e9;
    m->copy_bw = 45e9;
    m->mem_bw = 1e12;
    m->msg_overhead = 1e-7;
    m->piece_bytes = 131072;
    int per_host = t->nranks / (topoNumHosts(t) > 0 ? topoNumHosts(t) : 1);
    m->dcn_bw = TD_COST_DCN_CHIP_BW * (per_host > 0 ? per_host : 1);
    m->dcn_latency = TD_COST_DCN_TPU_LATENCY;
    m->dcn_flows = 0;
  } else {
    m->hop_latency = 1e-6;
    m->link_bw = 10e9;
    m->copy_bw = 10e9;
    m->mem_bw = 10e9;
    m->msg_overhead = 5e-7;
    m->shm_sync = TD_COST_SHM_SYNC;
    m->numa_factor = TD_COST_NUMA_FACTOR;
    m->piece_bytes = 131072;
    m->dcn_bw = TD_COST_DCN_HOST_BW;
    m->dcn_latency = TD_COST_DCN_TCP_LATENCY;
    m->dcn_flows = 0;
  }
}

/* ---- preparation ---- */

typedef struct {
  int32_t *last_writer[TD_NUM_BUFS];
  int32_t *reader_head[TD_NUM_BUFS];
  uint32_t nchunks[TD_NUM_BUFS];
  int32_t *pool_step, *pool_next;
  size_t npool, cappool;
  uint32_t *mark; /* per step of the stream: last step index that added it as a pred */
} cpConf;

static tpudistResult_t predPush(tdCostPlan *p, size_t *cap, uint32_t g) {
  if (tdGrow(&p->preds, cap, p->npreds + 1, sizeof(uint32_t), 1024)) return tpudistNoMemory;
  p->preds[p->npreds++] = g;
  return tpudistSuccess;
}

static tpudistResult_t addPred(tdCostPlan *p, size_t *cap, cpConf *c, uint32_t base, int32_t j,
                               uint32_t i) {
  if (j < 0 || (uint32_t)j == i || c->mark[j] == i + 1) return tpudistSuccess;
  c->mark[j] = i + 1;
  return predPush(p, cap, base + (uint32_t)j);
}

static tdSpan chunkSpan(tdBufRef r) {
  tdSpan sp = {r.chunk, (uint64_t)r.chunk + r.nchunks, r.buf, 0};
  return sp;
}

/* Room for n entries in the readers' pool (exactly, when n is known beforehand). */
static tpudistResult_t poolReserve(cpConf *c, size_t n) {
  int32_t *a = realloc(c->pool_step, sizeof(int32_t) * n);
  if (!a) return tpudistNoMemory;
  c->pool_step = a;
  int32_t *b = realloc(c->pool_next, sizeof(int32_t) * n);
  if (!b) return tpudistNoMemory;
  c->pool_next = b;
  c->cappool = n;
  return tpudistSuccess;
}

static tpudistResult_t poolPush(cpConf *c, int32_t step, int32_t next, int32_t *head) {
  if (c->npool == c->cappool) TD_CHECK(poolReserve(c, c->cappool ? c->cappool * 2 : 1024));
  c->pool_step[c->npool] = step;
  c->pool_next[c->npool] = next;
  *head = (int32_t)c->npool++;
  return tpudistSuccess;
}

/* The chunks a stream's steps read, each an entry of the readers' pool (spanPreds): counted
 * first, so that the pool of a long plan (the torus all-to-all's) is not up to twice as large. */
static size_t streamReads(const cpConf *c, const tdStream *ss) {
  size_t n = 0;
  for (uint32_t i = 0; i < ss->nsteps; i++) {
    const tdStep *step = &ss->steps[i];
    tdSpans sp;
    schedSpansOf(step, chunkSpan(step->src), chunkSpan(step->dst), &sp);
    for (int k = 0; k < sp.n; k++) {
      const tdSpan *r = &sp.s[k];
      if (r->space < TD_NUM_BUFS && !r->write && r->e > r->b)
        n += (size_t)(TD_MIN(r->e, c->nchunks[r->space]) - TD_MIN(r->b, c->nchunks[r->space]));
    }
  }
  return n;
}

/* Conflict preds of step i (index in its stream) for one span it reads or writes, in chunks of
 * one buffer (schedSpansOf over chunk ranges: count-independent, no aliasing). */
static tpudistResult_t spanPreds(tdCostPlan *p, size_t *cap, cpConf *c, uint32_t base, uint32_t i,
                                 const tdSpan *r) {
  if (r->space >= TD_NUM_BUFS) return tpudistSuccess;
  int32_t *lw = c->last_writer[r->space], *rh = c->reader_head[r->space];
  uint32_t end = (uint32_t)TD_MIN(r->e, c->nchunks[r->space]);
  for (uint32_t ch = (uint32_t)r->b; ch < end; ch++) {
    TD_CHECK(addPred(p, cap, c, base, lw[ch], i));
    if (!r->write) {
      TD_CHECK(poolPush(c, (int32_t)i, rh[ch], &rh[ch]));
      continue;
    }
    for (int32_t n = rh[ch]; n >= 0; n = c->pool_next[n])
      TD_CHECK(addPred(p, cap, c, base, c->pool_step[n], i));
    rh[ch] = -1;
    lw[ch] = (int32_t)i;
  }
  return tpudistSuccess;
}

static tpudistResult_t confInit(cpConf *c, const tdSched *s, uint32_t nsteps) {
  memset(c->last_writer, 0, sizeof(c->last_writer));
  memset(c->reader_head, 0, sizeof(c->reader_head));
  c->mark = calloc(nsteps ? nsteps : 1, sizeof(uint32_t));
  if (!c->mark) return tpudistNoMemory;
  for (int b = 0; b < TD_NUM_BUFS; b++) {
    uint32_t n = s->layout[b].nblocks * s->layout[b].chunks_per_block;
    c->nchunks[b] = n;
    c->last_writer[b] = malloc(sizeof(int32_t) * (n ? n : 1));
    c->reader_head[b] = malloc(sizeof(int32_t) * (n ? n : 1));
    if (!c->last_writer[b] || !c->reader_head[b]) return tpudistNoMemory;
    for (uint32_t i = 0; i < n; i++) c->last_writer[b][i] = c->reader_head[b][i] = -1;
  }
  c->npool = 0;
  return tpudistSuccess;
}

static void confFree(cpConf *c) {
  for (int b = 0; b < TD_NUM_BUFS; b++) {
    free(c->last_writer[b]);
    free(c->reader_head[b]);
  }
  free(c->mark);
}

/* Global index of step (stream, step) of rank r, or -1. */
static int64_t globalStep(const tdCostPlan *p, int r, uint32_t stream, uint32_t step) {
  uint32_t sid = p->rank_streams[r] + stream;
  if (sid >= p->rank_streams[r + 1] || step >= p->streams[sid].n) return -1;
  return (int64_t)p->streams[sid].first + step;
}

static tpudistResult_t streamPreds(tdCostPlan *p, size_t *cap, int r, uint32_t st) {
  const tdSched *s = &p->scheds[r];
  const tdStream *ss = &s->streams[st];
  uint32_t base = p->streams[p->rank_streams[r] + st].first;
  cpConf c;
  memset(&c, 0, sizeof(c));
  c.pool_step = c.pool_next = NULL;
  c.cappool = 0;
  tpudistResult_t res = confInit(&c, s, ss->nsteps);
  size_t reads = res == tpudistSuccess ? streamReads(&c, ss) : 0;
  if (reads) res = poolReserve(&c, reads);
  for (uint32_t i = 0; i < ss->nsteps && res == tpudistSuccess; i++) {
    const tdStep *step = &ss->steps[i];
    tdSpans sp;
    schedSpansOf(step, chunkSpan(step->src), chunkSpan(step->dst), &sp);
    p->steps[base + i].pred_first = (uint32_t)p->npreds;
    for (int k = 0; k < sp.n && res == tpudistSuccess; k++)
      res = spanPreds(p, cap, &c, base, i, &sp.s[k]);
    for (int d = 0; d < 2 && res == tpudistSuccess; d++) {
      if (step->deps[d].stream == TD_NO_DEP) continue;
      int64_t g = globalStep(p, r, step->deps[d].stream, step->deps[d].step);
      if (g < 0)
        res = tpudistInternalError;
      else
        res = predPush(p, cap, (uint32_t)g);
      p->has_deps = 1;
    }
    p->steps[base + i].npred = (uint32_t)p->npreds - p->steps[base + i].pred_first;
  }
  confFree(&c);
  free(c.pool_step);
  free(c.pool_next);
  return res;
}

static uint64_t makeKey(int src, int dst, uint32_t stream, uint32_t ord) {
  return ((uint64_t)(uint32_t)src << 44) | ((uint64_t)(uint32_t)dst << 24) |
         ((uint64_t)stream << 20) | ord;
}

typedef struct {
  uint64_t key;
  uint32_t g;
  uint32_t side; /* 0 send end, 1 receive end */
} cpEnd;

static int endCmp(const void *x, const void *y) {
  const cpEnd *a = x, *b = y;
  if (a->key != b->key) return a->key < b->key ? -1 : 1;
  return (int)a->side - (int)b->side;
}

/* Message ends of rank r: key = (src, dst, stream, ordinal among that stream and pair). */
static void rankEnds(tdCostPlan *p, int r, tdOrdCount *c, cpEnd *ends, size_t *n) {
  const tdSched *s = &p->scheds[r];
  for (uint32_t st = 0; st < s->nstreams; st++) {
    uint32_t base = p->streams[p->rank_streams[r] + st].first;
    const tdStep *steps = s->streams[st].steps;
    for (uint32_t i = 0; i < s->streams[st].nsteps; i++) {
      uint32_t so, ro;
      schedOrdNext(c, &steps[i], &so, &ro);
      p->steps[base + i].smatch = p->steps[base + i].rmatch = TD_COST_NONE;
      if (so != TD_NO_ORD)
        ends[(*n)++] = (cpEnd){makeKey(r, schedSendPeer(&steps[i]), st, so), base + i, 0};
      if (ro != TD_NO_ORD) { /* symmetric: the send is rank 0's to mirror[rp] */
        int rp = schedRecvPeer(&steps[i]);
        ends[(*n)++] = (cpEnd){
            p->mirror ? makeKey(r, p->mirror[rp], st, ro) : makeKey(rp, r, st, ro), base + i, 1};
      }
    }
    schedOrdReset(c, steps, s->streams[st].nsteps);
  }
}

/* Pairs every send end with its receive end (count-independent). */
static tpudistResult_t planMatch(tdCostPlan *p, char *err) {
  cpEnd *ends = malloc(sizeof(cpEnd) * ((size_t)p->nsteps * 2 + 1));
  uint32_t *cnt = calloc((size_t)p->npeers * 2, sizeof(uint32_t));
  if (!ends || !cnt) {
    free(ends);
    free(cnt);
    return tpudistNoMemory;
  }
  size_t n = 0;
  tdOrdCount c = {cnt, cnt + p->npeers, p->npeers};
  for (int r = 0; r < p->nranks; r++) rankEnds(p, r, &c, ends, &n);
  qsort(ends, n, sizeof(cpEnd), endCmp);
  tpudistResult_t res = tpudistSuccess;
  for (size_t i = 0; i < n && res == tpudistSuccess; i += 2) {
    if (i + 1 >= n || ends[i].key != ends[i + 1].key || ends[i].side != 0 || ends[i + 1].side != 1)
      res = tdErr(err, tpudistInternalError, "cost: rank %d has an unmatched message",
                  p->steps[ends[i].g].rank);
    else {
      p->steps[ends[i].g].smatch = ends[i + 1].g;
      p->steps[ends[i + 1].g].rmatch = ends[i].g;
    }
  }
  free(ends);
  free(cnt);
  return res;
}

static tpudistResult_t planIndex(tdCostPlan *p) {
  p->rank_streams = malloc(sizeof(uint32_t) * ((size_t)p->nranks + 1));
  if (!p->rank_streams) return tpudistNoMemory;
  p->nstreams = p->nsteps = 0;
  for (int r = 0; r < p->nranks; r++) {
    p->rank_streams[r] = p->nstreams;
    p->nstreams += p->scheds[r].nstreams;
    for (uint32_t st = 0; st < p->scheds[r].nstreams; st++)
      p->nsteps += p->scheds[r].streams[st].nsteps;
  }
  p->rank_streams[p->nranks] = p->nstreams;
  p->streams = calloc(p->nstreams ? p->nstreams : 1, sizeof(cpStream));
  p->steps = calloc(p->nsteps ? p->nsteps : 1, sizeof(cpStep));
  if (!p->streams || !p->steps) return tpudistNoMemory;
  uint32_t g = 0, sid = 0;
  for (int r = 0; r < p->nranks; r++)
    for (uint32_t st = 0; st < p->scheds[r].nstreams; st++, sid++) {
      p->streams[sid].first = g;
      p->streams[sid].n = p->scheds[r].streams[st].nsteps;
      p->streams[sid].rank = r;
      for (uint32_t i = 0; i < p->streams[sid].n; i++, g++) {
        p->steps[g].rank = r;
        p->steps[g].stream = (uint16_t)st;
        p->steps[g].idx = i;
        const tdStep *x = &p->scheds[r].streams[st].steps[i];
        p->steps[g].op = x->op;
        p->steps[g].wire =
            (tdStepSemTable[x->op].flags & TD_SEM_WIRE_OUT) ? schedWireRef(x) : x->src;
      }
    }
  return tpudistSuccess;
}

/* DCN domains and NICs of the peer ranks (cost.h); nothing without a DCN level. */
static tpudistResult_t planDcn(tdCostPlan *p) {
  const tdTopo *t = p->topo;
  if (!t || !topoHasDcn(t) || t->nranks != p->npeers) return tpudistSuccess;
  p->dcn_dom = malloc(sizeof(int) * (size_t)p->npeers * 2);
  if (!p->dcn_dom) return tpudistNoMemory;
  p->dcn_nic = p->dcn_dom + p->npeers;
  for (int r = 0; r < p->npeers; r++) {
    p->dcn_dom[r] = topoDcnDomain(t, r);
    p->dcn_nic[r] = p->mirror ? 0 : topoHostOf(t, r);
  }
  p->nnics = p->mirror ? 1 : (uint32_t)topoNumHosts(t);
  p->nic_share = p->mirror ? (double)p->npeers / topoNumHosts(t) : 1;
  return tpudistSuccess;
}

static tpudistResult_t planPrepare(tdCostPlan *p, char *err) {
  TD_CHECK(planIndex(p));
  size_t cap = 0;
  TD_CHECK(planMatch(p, err));
  tpudistResult_t r = tpudistSuccess;
  for (int rk = 0; rk < p->nranks && r == tpudistSuccess; rk++)
    for (uint32_t st = 0; st < p->scheds[rk].nstreams && r == tpudistSuccess; st++)
      r = streamPreds(p, &cap, rk, st);
  if (r != tpudistSuccess) return tdErr(err, r, "cost: cannot prepare the schedules");
  for (size_t i = 0; i < p->npreds; i++) p->steps[p->preds[i]].needed = 1;
  /* links: torus (rank, axis, direction), then one issue port per rank; flat: out, in ports;
     symmetric: (axis, direction) classes and rank 0's issue port; flat: one out, one in; then
     the NICs, out and in, when there is DCN */
  size_t nl = p->topo && p->topo->ndims > 0
                  ? (size_t)p->nranks * (size_t)p->topo->ndims * 2 + (size_t)p->nranks
                  : (size_t)p->nranks * 2;
  p->inj_base = nl - (size_t)p->nranks;
  p->nic_base = nl;
  TD_CHECK(planDcn(p));
  nl += 2 * (size_t)p->nnics;
  p->nlinks = nl;
  p->done = malloc(sizeof(double) * (p->nsteps ? p->nsteps : 1));
  p->busy = malloc(sizeof(double) * (nl ? nl : 1));
  p->next = malloc(sizeof(uint32_t) * (p->nstreams ? p->nstreams : 1) * 2);
  p->cursor = p->next ? p->next + (p->nstreams ? p->nstreams : 1) : NULL;
  p->floor = malloc(sizeof(double) * (p->nsteps ? p->nsteps : 1));
  p->posted_s = malloc(sizeof(double) * (p->nsteps ? p->nsteps : 1) * 2);
  p->posted_r = p->posted_s ? p->posted_s + (p->nsteps ? p->nsteps : 1) : NULL;
  p->qnext = malloc(sizeof(uint32_t) * (p->nsteps ? p->nsteps : 1));
  p->hops = malloc(sizeof(tdHop) * TD_COST_MAX_HOPS);
  p->tmp_links = malloc(sizeof(uint32_t) * TD_COST_MAX_HOPS * TD_MAX_PATHS);
  if (!p->done || !p->busy || !p->next || !p->posted_s || !p->floor || !p->qnext || !p->hops ||
      !p->tmp_links)
    return tpudistNoMemory;
  if (p->topo && p->topo->ndims > 0) {
    p->route_by_step = p->nranks > TD_COST_ROUTE_CACHE_RANKS || p->mirror;
    size_t n2 = p->route_by_step ? (size_t)p->nsteps + 1 : (size_t)p->nranks * (size_t)p->nranks;
    p->route_first = malloc(sizeof(uint32_t) * n2);
    p->route_len = malloc(sizeof(uint16_t) * n2);
    p->route_split = malloc(n2);
    if (!p->route_first || !p->route_len || !p->route_split) return tpudistNoMemory;
    for (size_t i = 0; i < n2; i++) p->route_first[i] = TD_COST_NONE;
  }
  return tpudistSuccess;
}

tpudistResult_t costPlanCreate(const tdTopo *topo, tdSched *scheds, int nranks, tdCostPlan **out,
                               char *err) {
  tdCostPlan *p = calloc(1, sizeof(*p));
  if (!p) {
    for (int r = 0; r < nranks; r++) schedFree(&scheds[r]);
    free(scheds);
    return tpudistNoMemory;
  }
  p->topo = topo;
  p->nranks = p->npeers = nranks;
  p->scheds = scheds;
  tpudistResult_t r = planPrepare(p, err);
  if (r != tpudistSuccess) {
    costPlanFree(p);
    return r;
  }
  *out = p;
  return tpudistSuccess;
}

tpudistResult_t costPlanCreateSym(const tdTopo *topo, int npeers, tdSched *sched, const int *mirror,
                                  tdCostPlan **out, char *err) {
  tdCostPlan *p = calloc(1, sizeof(*p));
  int *m = malloc(sizeof(int) * (size_t)(npeers > 0 ? npeers : 1));
  if (!p || !m) {
    free(p);
    free(m);
    schedFree(sched);
    free(sched);
    return tpudistNoMemory;
  }
  memcpy(m, mirror, sizeof(int) * (size_t)npeers);
  p->topo = topo;
  p->nranks = 1;
  p->npeers = npeers;
  p->mirror = m;
  p->scheds = sched;
  tpudistResult_t r = planPrepare(p, err);
  if (r != tpudistSuccess) {
    costPlanFree(p);
    return r;
  }
  *out = p;
  return tpudistSuccess;
}

void costPlanFree(tdCostPlan *p) {
  if (!p) return;
  free(p->mirror);
  free(p->dcn_dom);
  for (int r = 0; r < p->nranks && p->scheds; r++) schedFree(&p->scheds[r]);
  free(p->scheds);
  free(p->steps);
  free(p->preds);
  free(p->streams);
  free(p->rank_streams);
  free(p->done);
  free(p->busy);
  free(p->flows);
  free(p->next);
  free(p->heap);
  free(p->posted_s);
  free(p->floor);
  free(p->qnext);
  free(p->queues);
  tdMapFree(&p->qmap);
  free(p->hops);
  free(p->tmp_links);
  free(p->route_first);
  free(p->route_len);
  free(p->route_split);
  free(p->route_links);
  free(p);
}

uint64_t costPlanSteps(const tdCostPlan *p) {
  return p->nsteps;
}

void costPlanStats(const tdCostPlan *p, uint64_t *messages, double *link_bytes) {
  if (messages) *messages = p->messages;
  if (link_bytes) *link_bytes = p->link_bytes;
}
