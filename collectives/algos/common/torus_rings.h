/*
 * torus_rings.h - building blocks shared by the torus generators (allreduce_torus.c,
 * allgather_torus.c, reducescatter_torus.c): the group of ranks along one torus axis (a ring
 * when its wrap link is a real link, else a line), and reduce-scatter / all-gather over such a
 * group on "slots" (chunk ranges) whose buffer mapping depends on the collective.
 *
 * Ring (n >= 3, wrap link present): one direction per call (+1 or -1); n-1 steps of one block.
 * Line (no usable wrap, or n == 2): both directions at once; block b's partial sums flow from
 * each end toward position b, pipelined farthest block first.
 */
#ifndef TD_TORUS_RINGS_H_
#define TD_TORUS_RINGS_H_

#include "sched_ir.h"

#define TDT_MAX_LINE 256

/* Ranks along one axis through a rank. */
typedef struct {
  int n;                   /* positions */
  int pos;                 /* this rank's position */
  int ring;                /* 1: ranks[n-1] -> ranks[0] is a link */
  int ranks[TDT_MAX_LINE]; /* rank at each position */
} tdtGroup;

/* One level of a flow: the group it reduces or gathers over.
 * AXIS: the ranks along one axis (a ring or a line).
 * CYCLE: twisted tori only, first level: the cycle along a short axis, which crosses its twisted
 *   wraparound into the other half of the long axes and returns after 2n hops (a ring of 2n).
 * HALF: after a CYCLE level, the first long axis restricted to this rank's half (a line of n):
 *   its members share the CYCLE position.
 * SHIFTED: after a CYCLE level, another long axis (n x 2n x 2n), numbered from the cycle's base
 *   (the CYCLE moves it by n too), a ring of 2n. */
typedef enum { TDT_LV_AXIS = 0, TDT_LV_CYCLE, TDT_LV_HALF, TDT_LV_SHIFTED } tdtLevelKind;
typedef struct {
  int kind;
  int axis;
} tdtLevel;

/* How slots map onto buffers. */
typedef enum {
  TDT_MAP_AR = 0, /* slot c: in = INPUT chunk c, acc = OUTPUT chunk c */
  TDT_MAP_RS,     /* slot c: in = INPUT c; acc = OUTPUT (own block) or SCRATCH c */
  TDT_MAP_AG      /* slot c: acc = OUTPUT c; in = INPUT (own block only) */
} tdtMap;

typedef struct {
  tdSched *s;
  uint32_t stream;
  tdtMap map;
  uint32_t k; /* chunks per block (RS/AG maps) */
  int rank;
  uint8_t *touched; /* per slot: 1 once acc holds the slot's current value */
} tdtCtx;

/* A run of slots. */
typedef struct {
  uint32_t start, len;
} tdtRange;

/* Per-position lists of ranges: position j owns items[first[j] .. first[j+1]). */
typedef struct {
  tdtRange *items;
  int *first; /* n + 1 entries */
} tdtBlocks;

/* Fills g with the ranks along axis through rank; NotSupported if consecutive positions are not
 * linked (a shape this model cannot run on neighbours only). */
tpudistResult_t torusGroup(const tdTopo *t, int rank, int axis, tdtGroup *g, char *err);
/* Checks that topo is a torus matching nranks; lists the axes longer than 1 in ax. */
tpudistResult_t torusCheck(const tdTopo *t, int nranks, int *ax, int *nax, char *err);
/* Number of flows: one per axis, twice that when some axis is a ring (one per direction). */
int torusFlows(const tdTopo *t, const int *ax, int nax);
/* Axis order of flow f (rotated by f) and its ring direction. */
void torusFlowOrder(const int *ax, int nax, int f, int *order, int *dir);

/* The levels of a flow with axis order `order`. */
void torusFlowLevels(const tdTopo *t, const int *order, int nax, tdtLevel *lv);
/* Position of the rank with coordinates c in its group of level lv. */
int torusLevelPos(const tdTopo *t, const tdtLevel *lv, const int *c);
/* The group of rank at level lv (positions in order, links checked). */
tpudistResult_t torusGroupAt(const tdTopo *t, int rank, const tdtLevel *lv, tdtGroup *g, char *err);

/* Reduce-scatter over g: afterwards this rank's acc holds the group's sum of blocks[g->pos]. */
tpudistResult_t torusReduceScatter(tdtCtx *c, const tdtGroup *g, int dir, const tdtBlocks *b);
/* All-gather over g: position j holds blocks[j]; afterwards every position holds all. */
tpudistResult_t torusAllGather(tdtCtx *c, const tdtGroup *g, int dir, const tdtBlocks *b);

#endif /* TD_TORUS_RINGS_H_ */
