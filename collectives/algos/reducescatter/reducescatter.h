/*
 * reducescatter.h - the reduce-scatter generators (reducescatter_<algo>.c) and their rows of the
 * algorithm table.
 */
#ifndef TD_REDUCESCATTER_H_
#define TD_REDUCESCATTER_H_

#include "generator.h"

tpudistResult_t genReducescatterRing(const tdCollArgs *a, tdSched *s, char *err);
tpudistResult_t genReducescatterRecdbl(const tdCollArgs *a, tdSched *s, char *err);
tpudistResult_t genReducescatterTorus(const tdCollArgs *a, tdSched *s, char *err);
tpudistResult_t genReducescatterDirect(const tdCollArgs *a, tdSched *s, char *err);
tpudistResult_t genReducescatterHier(const tdCollArgs *a, tdSched *s, char *err);

/* Its rows of the algorithm table (algos.c), in the order its candidates are considered. */
/* clang-format off */
#define TD_ALGO_ROWS_REDUCESCATTER                              \
  {TD_COLL_REDUCESCATTER, "ring", genReducescatterRing, 0},     \
  {TD_COLL_REDUCESCATTER, "recdbl", genReducescatterRecdbl, 0}, \
  {TD_COLL_REDUCESCATTER, "direct", genReducescatterDirect, 0}, \
  {TD_COLL_REDUCESCATTER, "torus", genReducescatterTorus, 0},   \
  {TD_COLL_REDUCESCATTER, "hier", genReducescatterHier, 0}
/* clang-format on */

#endif /* TD_REDUCESCATTER_H_ */
