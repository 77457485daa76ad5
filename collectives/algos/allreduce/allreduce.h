/*
 * allreduce.h - the all-reduce generators (allreduce_<algo>.c) and their rows of the algorithm
 * table.
 */
#ifndef TD_ALLREDUCE_H_
#define TD_ALLREDUCE_H_

#include "generator.h"

tpudistResult_t genAllreduceRing(const tdCollArgs *a, tdSched *s, char *err);
tpudistResult_t genAllreduceRing2(const tdCollArgs *a, tdSched *s, char *err);
tpudistResult_t genAllreduceTree(const tdCollArgs *a, tdSched *s, char *err);
tpudistResult_t genAllreduceRecdbl(const tdCollArgs *a, tdSched *s, char *err);
tpudistResult_t genAllreduceRabenseifner(const tdCollArgs *a, tdSched *s, char *err);
/* One-shot: direct reduce-scatter, then direct all-gather (common/direct.h). */
tpudistResult_t genAllreduceDirect(const tdCollArgs *a, tdSched *s, char *err);
tpudistResult_t genAllreduceTorus(const tdCollArgs *a, tdSched *s, char *err);
/* Groups (slices, else hosts) as the outer level (hier.h). */
tpudistResult_t genAllreduceHier(const tdCollArgs *a, tdSched *s, char *err);

/* Its rows of the algorithm table (algos.c), in the order its candidates are considered. */
/* clang-format off */
#define TD_ALGO_ROWS_ALLREDUCE                                      \
  {TD_COLL_ALLREDUCE, "ring", genAllreduceRing, 0},                 \
  {TD_COLL_ALLREDUCE, "ring2", genAllreduceRing2, 0},               \
  {TD_COLL_ALLREDUCE, "tree", genAllreduceTree, 0},                 \
  {TD_COLL_ALLREDUCE, "recdbl", genAllreduceRecdbl, 0},             \
  {TD_COLL_ALLREDUCE, "rabenseifner", genAllreduceRabenseifner, 0}, \
  {TD_COLL_ALLREDUCE, "direct", genAllreduceDirect, 0},             \
  {TD_COLL_ALLREDUCE, "torus", genAllreduceTorus, 0},               \
  {TD_COLL_ALLREDUCE, "hier", genAllreduceHier, 0}
/* clang-format on */

#endif /* TD_ALLREDUCE_H_ */
