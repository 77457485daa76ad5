/*
 * broadcast.h - the broadcast generators (broadcast_<algo>.c) and their rows of the algorithm
 * table.
 */
#ifndef TD_BROADCAST_H_
#define TD_BROADCAST_H_

#include "generator.h"

tpudistResult_t genBroadcastChain(const tdCollArgs *a, tdSched *s, char *err);
tpudistResult_t genBroadcastTree(const tdCollArgs *a, tdSched *s, char *err);
tpudistResult_t genBroadcastDirect(const tdCollArgs *a, tdSched *s, char *err);
tpudistResult_t genBroadcastHier(const tdCollArgs *a, tdSched *s, char *err);

/* Its rows of the algorithm table (algos.c), in the order its candidates are considered. */
/* clang-format off */
#define TD_ALGO_ROWS_BROADCAST                        \
  {TD_COLL_BROADCAST, "chain", genBroadcastChain, 0}, \
  {TD_COLL_BROADCAST, "tree", genBroadcastTree, 0},   \
  {TD_COLL_BROADCAST, "direct", genBroadcastDirect, 0}, \
  {TD_COLL_BROADCAST, "hier", genBroadcastHier, 0}
/* clang-format on */

#endif /* TD_BROADCAST_H_ */
