/*
 * cost_int.h - private to cost.c / cost_eval.c: the prepared plan and evaluation state.
 */
#ifndef TD_COST_INT_H_
#define TD_COST_INT_H_

#include "cost.h"
#include "step_sem.h"
#include "td_map.h"

#define TD_COST_NONE UINT32_MAX
#define TD_COST_ROUTE_CACHE_RANKS 2048
#define TD_COST_MAX_HOPS 4096

typedef struct {
  uint32_t pred_first, npred;
  uint32_t smatch, rmatch; /* the other end of this step's send / receive, TD_COST_NONE if none */
  int rank;
  uint16_t stream;
  uint8_t needed; /* some later step waits for this one's completion */
  uint8_t op;     /* tdStepOp */
  tdBufRef wire;  /* what a send (or fused forward) puts on the wire; src of a local step */
  uint32_t idx;
} cpStep;

typedef struct {
  uint32_t first, n; /* steps [first, first + n) */
  int rank;
} cpStream;

typedef struct {
  double t;
  uint32_t g;
  uint32_t kind; /* 0: step done, 1: fused step's receive done (post its send), 2: queue g's
                    message before has left (start its next) */
} cpEvent;

/* A DMA queue (torus): one sending stream's messages to one peer leave one at a time, each when
   the last byte of the one before has left; sends matched meanwhile wait in it, in order. Found
   by global stream and destination rank (cost_eval.c, queueOf). */
typedef struct {
  double free;         /* when the last byte of its latest message leaves */
  uint32_t head, tail; /* queued sends (linked by qnext), TD_COST_NONE if none */
} cpQueue;

typedef struct {
  double fin;
  int src, dst;
} cpFlow;

struct tdCostPlan {
  const tdTopo *topo;
  int nranks;
  int npeers;  /* ranks the peers of the schedules range over (nranks unless symmetric) */
  int *mirror; /* symmetric plans (costPlanCreateSym): npeers entries; NULL otherwise */
  tdSched *scheds;
  cpStep *steps;
  uint32_t nsteps;
  uint32_t *preds;
  size_t npreds;
  cpStream *streams;
  uint32_t nstreams;
  uint32_t *rank_streams; /* first stream of each rank, nranks + 1 */
  /* evaluation state */
  double *done;
  double *busy;
  size_t nlinks;   /* resources in busy[]: links (torus) or ports (flat), issue ports, NICs */
  size_t inj_base; /* torus: the issue port of rank r is busy[inj_base + r] */
  /* DCN (cost.h): per peer rank its domain and NIC (host); NIC out n is busy[nic_base + n], in
     busy[nic_base + nnics + n]; a symmetric plan has one NIC of each direction standing for all,
     whose rank-0 share is 1 / nic_share of it. NULL / 0 without a DCN level. */
  int *dcn_dom, *dcn_nic;
  size_t nic_base;
  uint32_t nnics;
  double nic_share;
  /* dcn_flows: per NIC direction (out n at 2n, in n at 2n + 1) flow_win slots, each the
     latest message of one sender-receiver pair (a TCP connection: its messages are one flow)
     and when it finishes there; flow_win = dcn_flows / nic_share (at least 1), 0: no limit */
  cpFlow *flows;
  uint32_t flow_win, flow_cap;
  uint32_t *next, *cursor;
  cpEvent *heap;
  size_t nheap, capheap;
  double *floor; /* fused steps: when their receive completes (their send cannot end before) */
  double *posted_s, *posted_r; /* when each step's send / receive end was issued, -1 if not */
  int has_deps;                /* some step depends on another stream */
  /* DMA queues (torus): queues[0..nqueues), found by key through qmap (key to index); qnext: per
     step, the next send queued behind */
  cpQueue *queues;
  uint32_t nqueues;
  size_t capqueues;
  tdMap qmap;
  uint32_t *qnext;
  const tdCostModel *m;
  uint64_t count;
  uint32_t es;
  double end; /* latest completion so far */
  uint64_t messages;
  double link_bytes;
  tdHop *hops;
  /* route cache: links of the route per (src, dst) when nranks <= TD_COST_ROUTE_CACHE_RANKS,
     else (and in symmetric plans) per sending step; every share's links one after the other
     (topoPaths: route_split shares, route_len links in all) */
  int route_by_step;
  uint32_t *route_first; /* nranks^2 or nsteps, UINT32_MAX = not computed yet */
  uint16_t *route_len;
  uint8_t *route_split;
  uint32_t *route_links, *tmp_links;
  size_t nroute_links, caproute_links;
};

#endif /* TD_COST_INT_H_ */
