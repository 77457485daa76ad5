/*
 * generator.h - what every generator (one file per algorithm, <coll>/<coll>_<algo>.c) and every
 * row of the algorithm table shares: the row type, its flags and the small patterns of several
 * collectives. Each collective's folder declares its generators and its table rows in <coll>.h;
 * algos.c gathers the rows into the table.
 */
#ifndef TD_GENERATOR_H_
#define TD_GENERATOR_H_

#include "sched_ir.h"

typedef struct {
  tdColl coll;
  const char *name; /* ring, ring2, tree, recdbl, rabenseifner, torus, hier, chain, pairwise, bruck,
                           direct */
  tdGenFn gen;
  unsigned flags; /* TD_ALGO_* */
} tdAlgo;

/* The all-to-all-v generator needs only this rank's row (send counts) and column (receive counts)
 * of the count matrix: it accepts the local form (tdCollArgs.v_local), so the runtime may run
 * all-to-all-v without exchanging counts first. In the local form its steps must not depend on
 * the counts (only the INPUT/OUTPUT layouts do), so the runtime generates the plan once per
 * communicator and binds each call's counts and displacements as layouts (tests/sched checks
 * it). A generator that forwards through other ranks (torus) needs the whole matrix and has no
 * such flag. */
#define TD_ALGO_V_LOCAL 0x1u

/* Chunks of a pipelined chain (broadcast and reduce): 2(n-1) clamped to [8, 256] from three ranks
 * on (filling the chain then costs little next to streaming the message), else 1. */
static inline uint32_t algoChainChunks(int n) {
  return n >= 3 ? (uint32_t)TD_MIN(TD_MAX(2 * (n - 1), 8), 256) : 1;
}

/* The binary tree of n ranks rooted at root (node v = (rank - root) mod n has children 2v+1 and
 * 2v+2): rank r's parent (-1 at the root) and children (*nkids of them). */
static inline void algoBinaryTree(int n, int root, int r, int *parent, int kids[2], int *nkids) {
  int v = (r - root + n) % n;
  *nkids = 0;
  for (int c = 2 * v + 1; c <= 2 * v + 2 && c < n; c++) kids[(*nkids)++] = (c + root) % n;
  *parent = v > 0 ? ((v - 1) / 2 + root) % n : -1;
}

#endif /* TD_GENERATOR_H_ */
