/*
 * alltoall.h - the all-to-all and all-to-all-v generators (alltoall_<algo>.c) and their rows of the
 * algorithm table.
 */
#ifndef TD_ALLTOALL_H_
#define TD_ALLTOALL_H_

#include "generator.h"

tpudistResult_t genAlltoallPairwise(const tdCollArgs *a, tdSched *s, char *err);
tpudistResult_t genAlltoallDirect(const tdCollArgs *a, tdSched *s, char *err);
tpudistResult_t genAlltoallTorus(const tdCollArgs *a, tdSched *s, char *err);
tpudistResult_t genAlltoallBruck(const tdCollArgs *a, tdSched *s, char *err);
tpudistResult_t genAlltoallHier(const tdCollArgs *a, tdSched *s, char *err);
tpudistResult_t genAlltoallvPairwise(const tdCollArgs *a, tdSched *s, char *err);
tpudistResult_t genAlltoallvDirect(const tdCollArgs *a, tdSched *s, char *err);
tpudistResult_t genAlltoallvTorus(const tdCollArgs *a, tdSched *s, char *err);
tpudistResult_t genAlltoallvHier(const tdCollArgs *a, tdSched *s, char *err);

/* Its rows of the algorithm table (algos.c), in the order its candidates are considered. */
/* clang-format off */
#define TD_ALGO_ROWS_ALLTOALL                                             \
  {TD_COLL_ALLTOALL, "pairwise", genAlltoallPairwise, 0},                 \
  {TD_COLL_ALLTOALL, "direct", genAlltoallDirect, 0},                     \
  {TD_COLL_ALLTOALL, "torus", genAlltoallTorus, 0},                       \
  {TD_COLL_ALLTOALL, "bruck", genAlltoallBruck, 0},                       \
  {TD_COLL_ALLTOALL, "hier", genAlltoallHier, 0},                         \
  {TD_COLL_ALLTOALLV, "pairwise", genAlltoallvPairwise, TD_ALGO_V_LOCAL}, \
  {TD_COLL_ALLTOALLV, "direct", genAlltoallvDirect, TD_ALGO_V_LOCAL},     \
  {TD_COLL_ALLTOALLV, "torus", genAlltoallvTorus, 0},                     \
  {TD_COLL_ALLTOALLV, "hier", genAlltoallvHier, 0}
/* clang-format on */

#endif /* TD_ALLTOALL_H_ */
