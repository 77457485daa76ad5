/*
 * engine.c - the simulator's discrete-event engine: issues every rank's steps by the IR's rules
 * (docs/schedule-ir.md "Ordering"), matches message ends by (source, destination, stream,
 * ordinal), turns matched pairs into flows on the network (net.c) and completes steps as their
 * flows are delivered or their local work ends.
 *
 * Issue rules: a stream's steps issue in order; a step waits while it conflicts with an earlier
 * incomplete step of its stream (schedStepSpans and schedSpansConflict), while a cross-stream dep
 * is incomplete, and while max_inflight steps of its stream are incomplete (the executor's depth).
 * A fused receive-and-send forwards after its receive (and reduction) completes. A stream's sends
 * to one peer leave one at a time, in the order they are matched (a DMA queue per stream and peer).
 */
#include <stdlib.h>
#include <string.h>

#include "kernels.h"
#include "sim_int.h"

#define SIM_NO_SLOT UINT32_MAX

/* ---- match table (td_map.h): posts waiting for their peer, by mkKey ---- */
static uint64_t mkKey(int src, int dst, uint32_t stream, uint32_t ord, int side) {
  return (1ull << 63) | ((uint64_t)(uint32_t)src << 42) | ((uint64_t)(uint32_t)dst << 21) |
         ((uint64_t)stream << 17) | ((uint64_t)ord << 1) | (uint64_t)side;
}

/* Removes and returns the slot posted under key, or SIM_NO_SLOT. */
static uint32_t tableTake(simEngine *e, uint64_t key) {
  uint32_t slot;
  return tdMapTake(&e->table, key, &slot) ? slot : SIM_NO_SLOT;
}

static tpudistResult_t tablePut(simEngine *e, uint64_t key, uint32_t slot) {
  return tdMapPut(&e->table, key, slot) ? tpudistNoMemory : tpudistSuccess;
}

/* ---- slots: issued steps ---- */
static tpudistResult_t slotAlloc(simEngine *e, uint32_t *id) {
  uint32_t gen = 0;
  if (e->nfreeslots) {
    *id = e->freeslots[--e->nfreeslots];
    gen = e->slots[*id].gen + 1;
  } else {
    if (e->nslots == e->capslots) {
      uint32_t c = e->capslots ? e->capslots * 2 : 1024;
      simSlot *a = realloc(e->slots, sizeof(simSlot) * c);
      uint32_t *f = realloc(e->freeslots, sizeof(uint32_t) * c);
      if (a) e->slots = a;
      if (f) e->freeslots = f;
      if (!a || !f) return tpudistNoMemory;
      e->capslots = c;
    }
    *id = e->nslots++;
  }
  memset(&e->slots[*id], 0, sizeof(simSlot));
  e->slots[*id].gen = gen;
  e->slots[*id].used = 1;
  e->slots[*id].recv_flow = SIM_NO_FLOW;
  e->slots[*id].recv_done = -1;
  return tpudistSuccess;
}

static uint64_t refBytes(const simEngine *e, int r, tdBufRef ref) {
  const tdSched *l = &e->ranks[r].lay;
  tdSpan sp;
  if (schedRefSpan(l, ref, l->count, &sp) != tpudistSuccess) return UINT64_MAX;
  return (sp.e - sp.b) * e->es;
}

/* ---- DMA queues: a chip sends at most max_dma messages at once over one port (first link);
 * further matched messages wait in order ---- */
static tpudistResult_t flowStart(simEngine *e, uint32_t ss, uint32_t rs, double bytes,
                                 uint32_t port) {
  uint32_t fid;
  /* the receiver is the send's peer (in the quotient, rs is rank 0's image of the receive) */
  int from = e->slots[ss].rank, to = schedSendPeer(&e->slots[ss].step.t);
  uint32_t feeder = SIM_NO_FLOW, rf = e->slots[ss].recv_flow;
  if (e->slots[ss].phase && rf < e->net.nflows && e->net.hot[rf].active &&
      e->net.flows[rf].recv_slot == ss)
    feeder = rf;
  TD_CHECK(netStart(&e->net, from, to, bytes, e->now, ss, rs, feeder, &fid));
  e->net.flows[fid].src = from;
  e->net.flows[fid].dst = to;
  e->net.flows[fid].port = port;
  if (e->port_active) e->port_active[port]++;
  simSlot *s = &e->slots[ss], *r = &e->slots[rs];
  if (s->phase) s->fwd_flow = fid;
  if ((tdStepSemTable[r->step.t.op].flags & TD_SEM_WIRE_OUT) && !r->phase) {
    /* a fused receive: its forward starts once the first piece has landed (and is reduced) */
    const simFlow *f = &e->net.flows[fid];
    double rate = e->net.hot[fid].rate;
    double p = TD_MIN(bytes, e->cfg->piece_bytes > 0 ? e->cfg->piece_bytes : bytes);
    double t = e->now + f->lat + (rate > 0 && rate < 1e299 ? p / netFlowRate(&e->net, fid) : 0);
    if (tdStepSemTable[r->step.t.op].flags & TD_SEM_REDUCES) t += 3.0 * p / e->cfg->p.mem_bw;
    r->piece = p;
    r->recv_flow = fid;
    return netPush(&e->net, t, SIM_EV_PIECE, rs, r->gen);
  }
  return tpudistSuccess;
}

/* A queued message's entry in pend[]. */
static tpudistResult_t pendAlloc(simEngine *e, uint32_t ss, uint32_t rs, double bytes,
                                 uint32_t *out) {
  uint32_t id = e->freepend;
  if (id != SIM_NO_SLOT) {
    e->freepend = e->pend[id].next;
  } else {
    if (tdGrow(&e->pend, &e->cappend, (size_t)e->npend + 1, sizeof(simPending), 256))
      return tdErr(e->err, tpudistNoMemory, "sim: no memory for queued messages");
    id = e->npend++;
  }
  e->pend[id] = (simPending){ss, rs, SIM_NO_SLOT, bytes};
  *out = id;
  return tpudistSuccess;
}

static tpudistResult_t dmaStart(simEngine *e, uint32_t ss, uint32_t rs, double bytes) {
  if (e->cfg->max_dma <= 0) return flowStart(e, ss, rs, bytes, 0);
  uint32_t port = netPort(&e->net, e->slots[ss].rank, schedSendPeer(&e->slots[ss].step.t));
  if (e->port_active[port] < (uint32_t)e->cfg->max_dma) return flowStart(e, ss, rs, bytes, port);
  uint32_t id;
  TD_CHECK(pendAlloc(e, ss, rs, bytes, &id));
  if (e->port_tail[port] != SIM_NO_SLOT)
    e->pend[e->port_tail[port]].next = id;
  else
    e->port_head[port] = id;
  e->port_tail[port] = id;
  return tpudistSuccess;
}

/* A flow drained: its port takes the next queued message. */
static tpudistResult_t dmaDone(simEngine *e, uint32_t port) {
  if (!e->port_active) return tpudistSuccess;
  e->port_active[port]--;
  uint32_t id = e->port_head[port];
  if (id == SIM_NO_SLOT) return tpudistSuccess;
  e->port_head[port] = e->pend[id].next;
  if (e->port_head[port] == SIM_NO_SLOT) e->port_tail[port] = SIM_NO_SLOT;
  simPending p = e->pend[id];
  e->pend[id].next = e->freepend;
  e->freepend = id;
  return flowStart(e, p.ss, p.rs, p.bytes, port);
}

/* ---- stream queues: a stream's sends to one peer leave one at a time, in the order they are
 * matched (one DMA queue per stream and peer, fused forwards included); the next starts when the
 * last byte of the one before has left. In the match table while the queue is busy: the queue's
 * head and tail pend[] entries (which = 1, 2) while messages wait, and under which = 0 that it
 * is busy. ---- */
static uint64_t queueKey(const simEngine *e, uint32_t ss, int which) {
  const simSlot *s = &e->slots[ss];
  return mkKey(s->rank, schedSendPeer(&s->step.t), s->stream, (uint32_t)which, 1) & ~(1ull << 63);
}

static tpudistResult_t queueStart(simEngine *e, uint32_t ss, uint32_t rs, double bytes) {
  uint64_t ck = queueKey(e, ss, 0), hk = queueKey(e, ss, 1), tk = queueKey(e, ss, 2);
  uint32_t id;
  if (tableTake(e, ck) == SIM_NO_SLOT) { /* idle: start it */
    TD_CHECK(tablePut(e, ck, 0));
    return dmaStart(e, ss, rs, bytes);
  }
  TD_CHECK(tablePut(e, ck, 0));
  TD_CHECK(pendAlloc(e, ss, rs, bytes, &id));
  uint32_t tail = tableTake(e, tk);
  if (tail == SIM_NO_SLOT)
    TD_CHECK(tablePut(e, hk, id));
  else
    e->pend[tail].next = id;
  return tablePut(e, tk, id);
}

/* The message sent from slot ss left: its queue starts the next one, or goes idle. */
static tpudistResult_t queueDone(simEngine *e, uint32_t ss) {
  uint64_t hk = queueKey(e, ss, 1);
  uint32_t head = tableTake(e, hk);
  if (head == SIM_NO_SLOT) { /* nothing waits: idle */
    tableTake(e, queueKey(e, ss, 0));
    return tpudistSuccess;
  }
  simPending p = e->pend[head];
  if (p.next == SIM_NO_SLOT)
    tableTake(e, queueKey(e, ss, 2));
  else
    TD_CHECK(tablePut(e, hk, p.next));
  e->pend[head].next = e->freepend;
  e->freepend = head;
  return dmaStart(e, p.ss, p.rs, p.bytes);
}

/* ---- message ends ---- */
static tpudistResult_t postEnd(simEngine *e, uint32_t slot, int send) {
  simSlot *s = &e->slots[slot];
  const simStep *st = &s->step;
  int peer = send ? schedSendPeer(&st->t) : schedRecvPeer(&st->t);
  if (peer < 0 || peer >= e->nranks)
    return tdErr(e->err, tpudistInternalError, "sim: rank %d stream %u step %u: peer %d", s->rank,
                 s->stream, s->idx, peer);
  uint32_t ord = send ? st->sord : st->rord;
  if (ord >= (1u << 16))
    return tdErr(e->err, tpudistNotSupported, "sim: more than 65536 messages on one stream pair");
  int from = send ? s->rank : peer, to = send ? peer : s->rank;
  uint32_t stream = s->stream;
  if (e->sym) symCanon(e, &from, &to); /* a representative's send meets its translate's receive */
  if (e->sym == 2) /* images as sets: one message per pair, whatever its stream (sym.c) */
    stream = 0, ord = 0;
  uint64_t mine = mkKey(from, to, stream, ord, send), other = mine ^ 1ull;
  uint32_t o = tableTake(e, other);
  if (o == SIM_NO_SLOT) return tablePut(e, mine, slot);
  uint32_t ss = send ? slot : o, rs = send ? o : slot;
  tdBufRef wire = schedWireRef(&e->slots[ss].step.t);
  uint64_t sb = refBytes(e, e->slots[ss].rank, wire);
  uint64_t rb = refBytes(e, e->slots[rs].rank, e->slots[rs].step.t.dst);
  if (sb == UINT64_MAX || sb != rb)
    return tdErr(e->err, tpudistInternalError,
                 "sim: message %d->%d stream %u #%u: %llu bytes sent, %llu expected", from, to,
                 s->stream, ord, (unsigned long long)sb, (unsigned long long)rb);
  e->messages++;
  e->wire_bytes += (double)sb;
  return queueStart(e, ss, rs, (double)sb);
}

/* ---- issue ---- */
static int stepComplete(const simRankState *rs, uint32_t stream, uint32_t idx) {
  const simStreamState *ss = &rs->st[stream];
  return idx < ss->cursor && (ss->done[idx >> 3] >> (idx & 7) & 1);
}

static tpudistResult_t stepSpans(const simEngine *e, int r, const simStep *st, tdSpans *sp) {
  const tdSched *l = &e->ranks[r].lay;
  return schedStepSpans(l, &st->t, l->count, sp);
}

/* What an issued step still touches: a fused step whose receive is done only reads dst. */
static tdSpans slotSpans(const simSlot *s) {
  tdSpans sp = s->sp;
  if (s->recv_done >= 0) schedSpansAfterRecv(&sp);
  return sp;
}

static tpudistResult_t canIssue(simEngine *e, int r, uint32_t stream, const simStep *st, int *ok) {
  simRankState *rs = &e->ranks[r];
  simStreamState *ss = &rs->st[stream];
  *ok = 0;
  if (e->cfg->max_inflight > 0 && ss->ninflight >= (uint32_t)e->cfg->max_inflight)
    return tpudistSuccess;
  for (int d = 0; d < 2; d++) {
    const tdDep *dep = &st->t.deps[d];
    if (dep->stream == TD_NO_DEP) continue;
    if (dep->stream >= rs->nstreams)
      return tdErr(e->err, tpudistInternalError, "sim: rank %d: dep on stream %u", r, dep->stream);
    if (!stepComplete(rs, dep->stream, dep->step)) return tpudistSuccess;
  }
  if (ss->blk_valid) {
    const simSlot *b = &e->slots[ss->blk_slot];
    if (b->used && b->gen == ss->blk_gen && (b->recv_done >= 0) == ss->blk_rd)
      return tpudistSuccess; /* the step it conflicted with still stands as it was */
    ss->blk_valid = 0;
  }
  if (ss->ninflight) {
    tdSpans me;
    TD_CHECK(stepSpans(e, r, st, &me));
    for (uint32_t i = ss->ninflight; i-- > 0;) { /* latest first: likeliest conflict */
      const simSlot *o = &e->slots[ss->inflight[i].slot];
      tdSpans other = slotSpans(o);
      if (schedSpansConflict(&me, &other)) {
        ss->blk_valid = 1;
        ss->blk_slot = ss->inflight[i].slot;
        ss->blk_gen = o->gen;
        ss->blk_rd = o->recv_done >= 0;
        return tpudistSuccess;
      }
    }
  }
  *ok = 1;
  return tpudistSuccess;
}

static tpudistResult_t issue(simEngine *e, int r, uint32_t stream, const simStep *st) {
  simStreamState *ss = &e->ranks[r].st[stream];
  if (tdGrow(&ss->inflight, &ss->capinflight, (size_t)ss->ninflight + 1, sizeof(simInflight), 8))
    return tdErr(e->err, tpudistNoMemory, "sim: no memory for steps in flight");
  uint32_t id;
  TD_CHECK(slotAlloc(e, &id));
  simSlot *s = &e->slots[id];
  s->step = *st;
  TD_CHECK(stepSpans(e, r, st, &s->sp));
  s->rank = r;
  s->stream = (uint16_t)stream;
  s->idx = ss->cursor;
  s->ipos = ss->ninflight;
  ss->inflight[ss->ninflight].slot = id;
  ss->inflight[ss->ninflight++].idx = ss->cursor;
  ss->cursor++;
  ss->blk_valid = 0;
  unsigned f = tdStepSemTable[st->t.op].flags;
  if (f & TD_SEM_WIRE_IN) return postEnd(e, id, 0);
  if (f & TD_SEM_WIRE_OUT) return postEnd(e, id, 1);
  /* local: copy reads and writes, reduce reads two and writes one */
  uint64_t bytes = refBytes(e, r, st->t.dst);
  if (bytes == UINT64_MAX) return tdErr(e->err, tpudistInternalError, "sim: bad ref (rank %d)", r);
  double k = (f & TD_SEM_REDUCES) ? 3.0 : 2.0;
  return netPush(&e->net, e->now + k * (double)bytes / e->cfg->p.mem_bw, SIM_EV_LOCAL, id, 0);
}

static void rankFinish(simEngine *e, int r) {
  simRankState *rs = &e->ranks[r];
  for (uint32_t i = 0; i < rs->nstreams; i++) {
    e->held -= rs->st[i].win_n;
    free(rs->st[i].win);
    free(rs->st[i].inflight);
    free(rs->st[i].done);
  }
  free(rs->st);
  rs->st = NULL;
  rs->done = 1;
  rs->finish = e->now;
  e->ranks_left--;
}

/* Issues what rank r can issue now. */
static tpudistResult_t advance(simEngine *e, int r) {
  simRankState *rs = &e->ranks[r];
  if (rs->done) return tpudistSuccess;
  for (uint32_t i = 0; i < rs->nstreams; i++) {
    simStreamState *ss = &rs->st[i];
    while (ss->cursor < ss->nsteps) {
      if (ss->cursor >= ss->win_first + ss->win_n) TD_CHECK(winLoad(e, r, i));
      const simStep *st = &ss->win[ss->cursor - ss->win_first];
      int ok;
      TD_CHECK(canIssue(e, r, i, st, &ok));
      if (!ok) break;
      TD_CHECK(issue(e, r, i, st));
    }
  }
  uint32_t live = 0;
  for (uint32_t i = 0; i < rs->nstreams; i++)
    if (rs->st[i].cursor < rs->st[i].nsteps || rs->st[i].ninflight) live++;
  if (!live) rankFinish(e, r);
  return tpudistSuccess;
}

static tpudistResult_t complete(simEngine *e, uint32_t slot) {
  simSlot *s = &e->slots[slot];
  int r = s->rank;
  simStreamState *ss = &e->ranks[r].st[s->stream];
  uint32_t i = s->ipos;
  ss->inflight[i] = ss->inflight[--ss->ninflight];
  if (i < ss->ninflight) e->slots[ss->inflight[i].slot].ipos = i;
  ss->done[s->idx >> 3] |= (uint8_t)(1u << (s->idx & 7));
  s->used = 0;
  e->freeslots[e->nfreeslots++] = slot;
  return advance(e, r);
}

/* ---- events ---- */
/* Delivery time of a fused step's forward that drained at now: not before its last piece was
 * received and reduced, plus that piece's time on a link. */
static double fwdDeliverAt(const simEngine *e, const simSlot *s, double lat) {
  return TD_MAX(e->now, s->recv_done + s->piece / e->cfg->p.link_bw) + lat;
}

static tpudistResult_t onDeliver(simEngine *e, uint32_t fid) {
  simFlow *f = &e->net.flows[fid];
  uint32_t ss = f->send_slot, rs = f->recv_slot;
  netRelease(&e->net, fid);
  if (e->cfg->functional) TD_CHECK(funcDeliver(e, &e->slots[ss], &e->slots[rs]));
  unsigned rf = tdStepSemTable[e->slots[rs].step.t.op].flags;
  TD_CHECK(complete(e, ss));   /* the send end (a fused step's forward) is done */
  simSlot *rv = &e->slots[rs]; /* after complete: slots may have moved */
  double red = (rf & TD_SEM_REDUCES) ? 3.0 * (double)refBytes(e, rv->rank, rv->step.t.dst) : 0;
  if (!(rf & TD_SEM_WIRE_OUT)) {
    if (!(rf & TD_SEM_REDUCES)) return complete(e, rs);
    return netPush(&e->net, e->now + red / e->cfg->p.mem_bw, SIM_EV_LOCAL, rs, 0);
  }
  /* fused: the last piece still has to be reduced; the forward may already be under way */
  rv->recv_done = e->now + (rf & TD_SEM_REDUCES ? 3.0 * rv->piece / e->cfg->p.mem_bw : 0);
  if (!rv->phase) {
    rv->phase = 1;
    TD_CHECK(postEnd(e, rs, 1));
  } else if (rv->fwd_waiting) {
    rv->fwd_waiting = 0;
    const simFlow *g = &e->net.flows[rv->fwd_flow];
    TD_CHECK(netPush(&e->net, fwdDeliverAt(e, rv, g->lat), SIM_EV_DELIVER, rv->fwd_flow, 0));
  }
  return advance(e, e->slots[rs].rank); /* its receive footprint is released */
}

static tpudistResult_t onEvent(simEngine *e, const simEvent *ev) {
  switch (ev->kind) {
    case SIM_EV_DRAINED: {
      simFlow *f = &e->net.flows[ev->id];
      if (!e->net.hot[ev->id].active) return tpudistSuccess;
      TD_CHECK(netDrained(&e->net, ev->id, e->now));
      simSlot *s = &e->slots[f->send_slot];
      if (s->phase && s->recv_done < 0)
        s->fwd_waiting = 1; /* delivered once its receive is done */
      else
        TD_CHECK(netPush(&e->net, s->phase ? fwdDeliverAt(e, s, f->lat) : e->now + f->lat,
                         SIM_EV_DELIVER, ev->id, 0));
      TD_CHECK(queueDone(e, f->send_slot));
      return dmaDone(e, e->net.flows[ev->id].port);
    }
    case SIM_EV_DELIVER:
      return onDeliver(e, ev->id);
    case SIM_EV_PIECE: /* a fused step's first piece is in: start forwarding */
      if (!e->slots[ev->id].used || e->slots[ev->id].gen != ev->version || e->slots[ev->id].phase)
        return tpudistSuccess; /* forwarding already (or the step is long done) */
      e->slots[ev->id].phase = 1;
      return postEnd(e, ev->id, 1);
    case SIM_EV_LOCAL:
      if (e->cfg->functional &&
          !(tdStepSemTable[e->slots[ev->id].step.t.op].flags & TD_SEM_WIRE_IN))
        TD_CHECK(funcLocal(e, &e->slots[ev->id]));
      return complete(e, ev->id);
  }
  return tpudistInternalError;
}

/* ---- run ---- */
void simConfigDefault(simConfig *c, const simPreset *p, const tdTopo *topo) {
  memset(c, 0, sizeof(*c));
  c->p = *p;
  c->p.link_bw = p->link_bw * (p->link_eff > 0 ? p->link_eff : 1); /* what transfers reach */
  c->topo = topo;
  c->window = 256;
  c->fuse = 1;
  c->symmetric = 1;
  c->piece_bytes = 131072;
  c->dtype = tpudistFloat32;
  c->op = tpudistSum;
  int hosts = topo && topo->nranks > 0 ? topoNumHosts(topo) : 1;
  c->dcn_bw = p->dcn_chip_bw * (topo && hosts > 0 ? topo->nranks / hosts : 1);
  c->dcn_latency = p->dcn_latency;
}

static void engineFree(simEngine *e) {
  for (int r = 0; e->ranks && r < e->nranks; r++) {
    simRankState *rs = &e->ranks[r];
    for (uint32_t i = 0; rs->st && i < rs->nstreams; i++) {
      free(rs->st[i].win);
      free(rs->st[i].inflight);
      free(rs->st[i].done);
    }
    free(rs->st);
    for (int b = 0; b < TD_NUM_BUFS; b++) {
      free(rs->lay.layout[b].offsets);
      free(rs->lay.layout[b].counts);
    }
  }
  funcFree(e);
  free(e->ranks);
  free(e->slots);
  free(e->freeslots);
  tdMapFree(&e->table);
  free(e->ordcnt);
  free(e->sim_ranks);
  free(e->rep);
  free(e->pend);
  free(e->port_active);
  free(e->port_head);
  free(e->port_tail);
  netFree(&e->net);
}

static void engineResult(simEngine *e, simResult *res) {
  simNet *n = &e->net;
  /* in the quotient a representative's messages, links and flows stand for their orbit's */
  uint64_t orbit = (uint64_t)(e->nranks / e->nsim);
  double k = (double)orbit;
  res->time = e->now;
  for (int r = 0; r < e->nranks; r++) res->time = TD_MAX(res->time, e->ranks[r].finish);
  res->time += e->cfg->p.launch; /* every rank starts launch later: the same run, shifted */
  res->messages = e->messages * orbit;
  res->wire_bytes = e->wire_bytes * k;
  res->nlinks = (int)n->nlinks;
  double sum = 0;
  for (uint32_t i = 0; i < n->nlinks; i++) {
    res->link_bytes += n->res[i].bytes * k;
    double u = res->time > 0 ? n->res[i].bytes / (res->time * n->res[i].cap) : 0;
    sum += u * k;
    res->util_max = TD_MAX(res->util_max, u);
  }
  res->util_mean = n->nlinks ? sum / n->nlinks : 0;
  res->dcn_span = n->dcn_t0 >= 0 ? n->dcn_t1 - n->dcn_t0 : 0;
  for (uint32_t h = 0; n->dcn_dom && h < 2 * n->nnics; h++) {
    const simRes *x = &n->res[n->nic_base + h];
    if (h < n->nnics) res->dcn_bytes += x->bytes * k;
    if (res->dcn_span > 0)
      res->dcn_util_max = TD_MAX(res->dcn_util_max, x->bytes / (res->dcn_span * x->cap));
  }
  res->max_flows = n->max_active * orbit;
  res->symmetric = e->sym;
  res->sym_ranks = e->nsim;
  res->sym_samples = e->sym_samples;
  res->max_steps = e->max_held;
  res->generations = e->generations;
}

static tpudistResult_t engineLoop(simEngine *e) {
  for (int i = 0; i < e->nsim; i++) TD_CHECK(winLoad(e, SIM_RANK(e, i), 0));
  if (e->cfg->functional) TD_CHECK(funcInit(e));
  for (int i = 0; i < e->nsim; i++) TD_CHECK(advance(e, SIM_RANK(e, i)));
  simEvent ev;
  double first = -1; /* the instant of the oldest change not yet re-levelled */
  for (;;) {
    if (e->net.nwork && first < 0) first = e->now;
    /* re-level once this instant is over; leaves alone may wait (simConfig.settle) */
    double until = e->net.joined ? e->now : first * (1 + e->cfg->settle);
    if (e->net.nwork && (!e->net.nheap || e->net.heap[0].t > until)) {
      TD_CHECK(rateFlush(&e->net, e->now));
      first = -1;
    }
    if (!netPop(&e->net, &ev)) break;
    e->now = ev.t;
    TD_CHECK(onEvent(e, &ev));
  }
  for (int i = 0; i < e->nsim; i++) {
    int r = SIM_RANK(e, i);
    simRankState *rs = &e->ranks[r];
    if (rs->done) continue;
    for (uint32_t s = 0; s < rs->nstreams; s++)
      if (rs->st[s].cursor < rs->st[s].nsteps || rs->st[s].ninflight)
        return tdErr(e->err, tpudistInternalError,
                     "sim: deadlock: rank %d stream %u stuck at step %u of %u (%u in flight)", r, s,
                     rs->st[s].cursor, rs->st[s].nsteps, rs->st[s].ninflight);
  }
  return tpudistSuccess;
}

tpudistResult_t simRun(const simConfig *cfg, const tdCollArgs *args, const char *algo,
                       simResult *res, char *err) {
  memset(res, 0, sizeof(*res));
  if (!cfg || !cfg->topo || !args || !algo)
    return tdErr(err, tpudistInvalidArgument, "sim: NULL argument");
  if (cfg->window < 1 || cfg->p.link_bw <= 0 || cfg->p.mem_bw <= 0 || !(cfg->settle >= 0))
    return tdErr(err, tpudistInvalidArgument,
                 "sim: window, depth and bandwidths must be > 0, settle >= 0");
  simEngine e;
  memset(&e, 0, sizeof(e));
  char local[TD_ERRLEN] = "";
  e.err = err ? err : local;
  e.err[0] = 0;
  e.cfg = cfg;
  e.args = *args;
  e.args.topo = cfg->topo;
  e.algo = algo;
  e.nranks = args->nranks;
  e.es = args->elem_size ? args->elem_size : 4;
  if (cfg->functional) e.es = (uint32_t)kernelDtypeSize(cfg->dtype);
  e.args.elem_size = e.es;
  e.ranks_left = e.nranks;
  e.freepend = SIM_NO_SLOT;
  if (e.nranks != cfg->topo->nranks || e.nranks < 1 || e.nranks >= (1 << 21))
    return tdErr(e.err, tpudistInvalidArgument, "sim: %d ranks on a topology of %d", e.nranks,
                 cfg->topo->nranks);
  e.ranks = calloc((size_t)e.nranks, sizeof(simRankState));
  e.ordcnt = calloc((size_t)e.nranks * 2, sizeof(uint32_t));
  tpudistResult_t r = tpudistNoMemory;
  if (e.ranks && e.ordcnt) r = netInit(&e.net, cfg, e.err);
  if (r == tpudistSuccess && cfg->max_dma > 0) {
    size_t np = e.net.nlinks + 2 * (size_t)e.nranks;
    e.port_active = calloc(np, sizeof(uint32_t));
    e.port_head = malloc(np * sizeof(uint32_t));
    e.port_tail = malloc(np * sizeof(uint32_t));
    if (!e.port_active || !e.port_head || !e.port_tail) r = tpudistNoMemory;
    for (size_t i = 0; r == tpudistSuccess && i < np; i++)
      e.port_head[i] = e.port_tail[i] = SIM_NO_SLOT;
  }
  if (r == tpudistSuccess) r = symSetup(&e);
  if (r == tpudistSuccess) r = engineLoop(&e);
  if (r == tpudistSuccess) {
    engineResult(&e, res);
    res->functional_ok = cfg->functional ? funcCheck(&e, res->check_msg) : 0;
  } else if (!e.err[0]) {
    tdErr(e.err, r, "sim: failed (%d)", (int)r);
  }
  engineFree(&e);
  return r;
}
