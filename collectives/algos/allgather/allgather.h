/*
 * allgather.h - the all-gather generators (allgather_<algo>.c) and their rows of the algorithm
 * table.
 */
#ifndef TD_ALLGATHER_H_
#define TD_ALLGATHER_H_

#include "generator.h"

tpudistResult_t genAllgatherRing(const tdCollArgs *a, tdSched *s, char *err);
tpudistResult_t genAllgatherRecdbl(const tdCollArgs *a, tdSched *s, char *err);
tpudistResult_t genAllgatherTorus(const tdCollArgs *a, tdSched *s, char *err);
tpudistResult_t genAllgatherDirect(const tdCollArgs *a, tdSched *s, char *err);
tpudistResult_t genAllgatherHier(const tdCollArgs *a, tdSched *s, char *err);

/* The layout every flat all-gather shares (INPUT one block, OUTPUT n blocks, no scratch) and,
 * out of place, the copy of this rank's own block into OUTPUT block rank. */
static inline tpudistResult_t allgatherOwnBlock(const tdCollArgs *a, tdSched *s) {
  schedSetLayout(s, TD_BUF_INPUT, 1, 1);
  schedSetLayout(s, TD_BUF_OUTPUT, (uint32_t)a->nranks, 1);
  schedSetLayout(s, TD_BUF_SCRATCH, 0, 1);
  if (a->inplace) return tpudistSuccess;
  return schedPush(
      s, schedCopy(schedRef(TD_BUF_INPUT, 0, 1), schedRef(TD_BUF_OUTPUT, (uint32_t)a->rank, 1)));
}

/* Its rows of the algorithm table (algos.c), in the order its candidates are considered. */
/* clang-format off */
#define TD_ALGO_ROWS_ALLGATHER                          \
  {TD_COLL_ALLGATHER, "ring", genAllgatherRing, 0},     \
  {TD_COLL_ALLGATHER, "recdbl", genAllgatherRecdbl, 0}, \
  {TD_COLL_ALLGATHER, "direct", genAllgatherDirect, 0}, \
  {TD_COLL_ALLGATHER, "torus", genAllgatherTorus, 0},   \
  {TD_COLL_ALLGATHER, "hier", genAllgatherHier, 0}
/* clang-format on */

#endif /* TD_ALLGATHER_H_ */
