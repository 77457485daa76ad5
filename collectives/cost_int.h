/*
 * cost_int.h - private to cost.c / cost_eval.c: the prepared plan and evaluation state.
 */
#ifndef TD_COST_INT_H_
#define TD_COST_INT_H_

#include "cost.h"

#define TD_COST_NO_KEY UINT64_MAX

typedef struct {
  uint32_t pred_first, npred;
  uint64_t skey, rkey; /* send / receive match keys, TD_COST_NO_KEY if none */
  int rank;
  uint16_t stream;
  uint32_t idx;
} cpStep;

typedef struct {
  uint32_t first, n; /* steps [first, first + n) */
  int rank;
} cpStream;

typedef struct {
  double t;
  uint32_t g;
  uint32_t kind; /* 0: step done, 1: fused step's receive done (post its send) */
} cpEvent;

typedef struct {
  uint64_t key;
  uint32_t g;
  int side; /* 0 send, 1 receive */
} cpPost;

struct tdCostPlan {
  const tdTopo *topo;
  int nranks;
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
  size_t nlinks;
  uint32_t *next, *cursor;
  cpEvent *heap;
  size_t nheap, capheap;
  cpPost *table;
  size_t tcap;
  const tdCostModel *m;
  uint64_t count;
  uint32_t es;
  uint64_t messages;
  double link_bytes;
  tdHop *hops;
};

#endif /* TD_COST_INT_H_ */
