/*
 * sim_int.h - private to sim/: the network (resources, flows, fair shares), the event queue, the
 * per-rank step windows and the engine state.
 */
#ifndef TD_SIM_INT_H_
#define TD_SIM_INT_H_

#include "sim.h"
#include "step_sem.h"
#include "td_map.h"

/* ---- network (net.c) ---- */
#define SIM_INLINE_RES 40

typedef struct {
  double cap;      /* bytes/s */
  double bytes;    /* carried so far */
  uint32_t *flows; /* active flows */
  uint32_t n;
  size_t capn;
  double level; /* max-min water level: what an unconstrained flow here gets */
  int failed, queued;
} simRes;

typedef struct {
  uint32_t res_inline[SIM_INLINE_RES];
  uint32_t *heap; /* malloc'ed route when longer than res_inline (capres entries), else NULL */
  uint32_t nres, capres;
  int split; /* shares of the message (topoPaths): bytes, remaining and rate are one share's,
                res holds every share's links */
  double remaining, t_last, bytes, lat;
  uint32_t child;                /* the forward this flow feeds, or SIM_NO_FLOW */
  uint32_t hpos;                 /* position of its drain event in the heap, or SIM_NO_FLOW */
  uint32_t send_slot, recv_slot; /* engine slots of the two ends */
  int src, dst;
  uint32_t port; /* the port (first link) it leaves by */
  int dcn;       /* crosses DCN (the hosts' NICs) */
} simFlow;

/* What re-levelling reads of every flow on a resource, apart from the rest (simNet.hot, indexed
 * like flows): a few flows to a cache line. */
typedef struct {
  double rate;
  double cap_rate;  /* a forward runs no faster than the flow feeding it (1e300: free) */
  double lim;       /* smallest level over its resources (kept current by rate.c) */
  uint32_t lim_arg; /* the resource holding lim */
  uint32_t active;
} simFlowHot;

typedef struct {
  double t;
  uint32_t kind, id, version;
} simEvent;

typedef struct {
  double cap;
  uint32_t id;
} simCapped; /* maxmin.c: a flow with a feed cap */

enum { SIM_EV_DRAINED = 0, SIM_EV_DELIVER = 1, SIM_EV_LOCAL = 2, SIM_EV_PIECE = 3 };

typedef struct {
  const tdTopo *topo;
  int nd;          /* axes used for links (0 when flat) */
  uint32_t nlinks; /* directed ICI links; injection/ejection resources follow */
  int use_inj;     /* injection/ejection limits can bind (else left out of routes) */
  const int *rep;  /* translation quotient (sym.c): each rank's representative, whose links,
                      injection and ejection stand for its own; NULL: none */
  simRes *res;
  double *level; /* per resource: max-min water level (what an unconstrained flow gets there);
                    an array of its own for locality */
  simFlow *flows;
  simFlowHot *hot;
  uint32_t nflows, capflows, *freeflows, nfree;
  uint64_t active, max_active;
  simEvent *heap;
  size_t nheap, capheap;
  uint32_t *work; /* resources to re-level */
  size_t nwork, capwork;
  double *dem; /* scratch: demands on one resource */
  size_t capdem;
  int joined;     /* a flow joined since the last re-levelling (rateJoin; cleared by rateFlush) */
  uint64_t incid; /* flow-resource pairs of the active flows (one round of re-levelling reads) */
  uint64_t exact_rounds; /* rate.c solves exactly after this many rounds' reads in one instant */
  /* maxmin.c scratch: per resource capacity left, rising flows, heap and heap position; per flow
     whether it stopped rising; the flows with a feed cap by cap */
  double *mm_rem;
  uint32_t *mm_cnt, *mm_heap, *mm_pos, mm_nheap;
  size_t mm_capres, mm_capflows;
  uint8_t *mm_frozen;
  simCapped *mm_capped;
  double hop_latency, msg_overhead;
  size_t nres; /* links, injection, ejection, then the NICs (out, in) when there is DCN */
  /* DCN (sim.h): per rank its domain and NIC (host); NIC out h is res[nic_base + h], in
     res[nic_base + nnics + h]; NULL without a DCN level */
  int *dcn_dom, *dcn_nic;
  uint32_t nic_base, nnics;
  double dcn_latency;
  double dcn_t0, dcn_t1; /* first DCN flow's start, last one's delivery (-1: none yet) */
  tdHop *hops;
  int maxhops;
  int *bfs_prev, *bfs_queue; /* detours, allocated on first use */
} simNet;

#define SIM_NO_FLOW UINT32_MAX
#define SIM_FLOW_RES(f) ((f)->heap ? (f)->heap : (f)->res_inline)
/* The rate of a whole message (all its shares). */
static inline double netFlowRate(const simNet *n, uint32_t id) {
  return n->hot[id].rate * n->flows[id].split;
}

tpudistResult_t netInit(simNet *n, const simConfig *cfg, char *err);
void netFree(simNet *n);
/* Starts a flow of bytes from src to dst at time now; returns its id. */
/* feeder: the flow whose data this one forwards piece by piece (its rate caps this one's), or
 * SIM_NO_FLOW. */
tpudistResult_t netStart(simNet *n, int src, int dst, double bytes, double now, uint32_t send_slot,
                         uint32_t recv_slot, uint32_t feeder, uint32_t *id);
/* Ends a drained flow at time now (frees its links; the flow stays until netRelease). */
/* The port a message from src to dst leaves by: its first link, or src's injection resource
 * (flat topologies, self messages). */
uint32_t netPort(simNet *n, int src, int dst);
tpudistResult_t netDrained(simNet *n, uint32_t id, double now);
void netRelease(simNet *n, uint32_t id);
/* The event heap (events.c). */
tpudistResult_t netPush(simNet *n, double t, uint32_t kind, uint32_t id, uint32_t version);
int netPop(simNet *n, simEvent *ev);
/* (Re)schedules flow id's drain event at t (one per flow, moved in place). */
tpudistResult_t netSetDrain(simNet *n, uint32_t id, double t);

/* Max-min fair rates (rate.c): flow id joined / left its resources at now. */
tpudistResult_t rateJoin(simNet *n, uint32_t id, double now);
tpudistResult_t rateLeave(simNet *n, uint32_t id, double now);
/* Re-levels what joins and leaves queued at this instant (before time moves on). */
tpudistResult_t rateFlush(simNet *n, double now);
/* Sets every resource's level to the exact max-min fair solution for the active flows, their
 * routes and feed caps (maxmin.c); rates are rate.c's to apply. */
tpudistResult_t maxminLevels(simNet *n);

/* ---- engine (engine.c) ---- */
typedef struct {
  tdStep t;
  uint32_t sord, rord; /* match ordinals of the send and receive ends (schedOrdNext) */
} simStep;

typedef struct {
  uint32_t slot; /* engine slot of the issued step */
  uint32_t idx;  /* step index in the stream */
} simInflight;

typedef struct {
  simStep *win; /* steps [win_first, win_first + win_n) */
  uint32_t win_first, win_n;
  uint32_t nsteps, cursor;
  simInflight *inflight;
  uint32_t ninflight;
  size_t capinflight;
  uint8_t *done; /* one bit per step: completed (deps are looked up here) */
  /* the in-flight step the cursor step last conflicted with (skip rechecks while it stands) */
  uint32_t blk_slot, blk_gen;
  int blk_rd, blk_valid;
} simStreamState;

typedef struct {
  tdSched lay; /* layouts, inplace, count: only what binding needs (no streams) */
  simStreamState *st;
  uint32_t nstreams;
  uint32_t live; /* streams not yet finished */
  int loaded, done;
  double finish;
  void *buf[TD_NUM_BUFS]; /* functional mode */
} simRankState;

typedef struct {
  uint32_t ss, rs, next;
  double bytes;
} simPending;

typedef struct {
  simStep step;
  tdSpans sp; /* schedStepSpans, computed once at issue */
  int rank;
  uint16_t stream;
  uint32_t idx;
  uint32_t gen;       /* bumped on every reuse: events name (slot, gen) */
  uint32_t ipos;      /* position in its stream's in-flight list */
  int phase;          /* fused: 0 receiving only, 1 also forwarding */
  int fwd_waiting;    /* fused: the forward drained before the receive was done */
  uint32_t fwd_flow;  /* fused: the forward's flow */
  uint32_t recv_flow; /* fused: the receive's flow (feeds the forward) */
  double recv_done;   /* fused: when the last piece was received and reduced (< 0: not yet) */
  double piece;       /* fused: bytes of one piece */
  int used;
} simSlot;

typedef struct {
  const simConfig *cfg;
  tdCollArgs args;
  const char *algo;
  int nranks;
  uint32_t es;
  simNet net;
  simRankState *ranks;
  simSlot *slots;
  uint32_t nslots, capslots, *freeslots, nfreeslots;
  tdMap table;      /* the match table: posted message ends (and busy DMA queues) by key */
  uint32_t *ordcnt; /* nranks scratch counters for ordinals */
  simPending *pend;
  uint32_t npend, freepend;
  size_t cappend;
  uint32_t *port_active, *port_head, *port_tail; /* per port (first link): DMA queues */
  uint64_t held, max_held, generations, messages;
  double wire_bytes, now;
  int ranks_left;
  int sym;                 /* rank 0 stands for every rank (sym.c): 1 step for step, 2 as sets */
  int sym_samples;         /* ranks whose plans were checked against rank 0's */
  int nsim;                /* ranks simulated: the representatives when sym, else all */
  int *sim_ranks;          /* sym: the nsim representatives (NULL: ranks 0 .. nsim-1) */
  int *rep;                /* sym: each rank's representative (net.rep) */
  int period[TD_MAX_DIMS]; /* sym: translations by multiples of period[a] along axis a */
  char *err;
  tpudistResult_t fail;
} simEngine;

/* Rank r's schedule as the simulator runs it (generated, fused), into s (window.c). */
tpudistResult_t winGenerate(simEngine *e, int r, tdSched *s);
#define SIM_RANK(e, i) ((e)->sim_ranks ? (e)->sim_ranks[i] : (i))

/* Loads (or reloads) a window of rank r's schedule (window.c). */
tpudistResult_t winLoad(simEngine *e, int r, uint32_t stream_needing);

/* Turns the translation quotient on when the plans allow it (sym.c): sets sym, nsim, sim_ranks,
 * rep, period and net.rep (else nsim = nranks). */
tpudistResult_t symSetup(simEngine *e);
/* The message (from, to) moved by the translation of the quotient that takes to to its
 * representative (the frame in which both ends are matched). */
void symCanon(const simEngine *e, int *from, int *to);

/* Functional mode (func.c). */
tpudistResult_t funcInit(simEngine *e);
void funcFree(simEngine *e);
/* Applies the data effect of a completed receive (from sender slot ss into receiver slot rs). */
tpudistResult_t funcDeliver(simEngine *e, const simSlot *ss, const simSlot *rs);
/* Applies the data effect of a completed local step. */
tpudistResult_t funcLocal(simEngine *e, const simSlot *s);
/* Checks the outputs against an independent reference; writes a message. */
int funcCheck(simEngine *e, char *msg);

#endif /* TD_SIM_INT_H_ */
