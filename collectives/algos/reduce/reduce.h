/*
 * reduce.h - the reduce generators (reduce_<algo>.c) and their rows of the algorithm table.
 */
#ifndef TD_REDUCE_H_
#define TD_REDUCE_H_

#include "generator.h"

tpudistResult_t genReduceChain(const tdCollArgs *a, tdSched *s, char *err);
tpudistResult_t genReduceTree(const tdCollArgs *a, tdSched *s, char *err);
tpudistResult_t genReduceHier(const tdCollArgs *a, tdSched *s, char *err);

/* The steps of a reduce tree node, chunk by chunk (k chunks): reduce the children's partials into
 * acc in the order of kids (the first into its own input), then send the result to parent (none
 * at the root, -1). reduce_tree.c. */
tpudistResult_t algoTreeReduceSteps(tdSched *s, const int *kids, int nkids, int parent,
                                    tdBufKind acc, uint32_t k);

/* Its rows of the algorithm table (algos.c), in the order its candidates are considered. */
/* clang-format off */
#define TD_ALGO_ROWS_REDUCE                     \
  {TD_COLL_REDUCE, "chain", genReduceChain, 0}, \
  {TD_COLL_REDUCE, "tree", genReduceTree, 0},   \
  {TD_COLL_REDUCE, "hier", genReduceHier, 0}
/* clang-format on */

#endif /* TD_REDUCE_H_ */
