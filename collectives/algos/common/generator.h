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

/* The double binary tree of the tree all-reduce (allreduce_tree.c), NCCL's trees: tree 0 is the
 * "btree" rooted at rank 0 (internal nodes have a run of trailing zero bits; the root has one
 * child), tree 1 is tree 0 mirrored (r -> p-1-r) when p is even, else shifted by one rank. Each
 * tree carries half of the buffer in TD_ALGO_DTREE_CHUNKS chunks (the pipeline depth between its
 * up and down phases). */
#define TD_ALGO_DTREE_CHUNKS 4

static inline void algoBtree(int p, int r, int *up, int down[2]) {
  int bit = 1;
  *up = down[0] = down[1] = -1;
  while (bit < p && !(bit & r)) bit <<= 1;
  if (r == 0) {
    if (p > 1) down[1] = bit >> 1;
    return;
  }
  *up = (r ^ bit) | (bit << 1);
  if (*up >= p) *up = r ^ bit;
  int low = bit >> 1;
  if (low) down[0] = r - low;
  while (low && r + low >= p) low >>= 1;
  if (low) down[1] = r + low;
}

static inline int algoDtreeMap(int p, int tree, int r, int inverse) {
  if (r < 0 || tree == 0) return r;
  if (p % 2 == 0) return p - 1 - r;
  return inverse ? (r - 1 + p) % p : (r + 1) % p;
}

/* Rank r's parent (-1 at the root) and children (slots 0 and 1, -1 when absent) in tree 0 or 1
 * of p ranks. */
static inline void algoDoubleTree(int p, int tree, int r, int *up, int down[2]) {
  int u, d[2];
  algoBtree(p, algoDtreeMap(p, tree, r, 1), &u, d);
  *up = algoDtreeMap(p, tree, u, 0);
  for (int k = 0; k < 2; k++) down[k] = algoDtreeMap(p, tree, d[k], 0);
}

/* Folding for recursive doubling and halving on p ranks (allreduce_recdbl.c,
 * allreduce_rabenseifner.c, reducescatter_recdbl.c): q = the largest power of two <= p and
 * e = p - q; of the first 2e ranks each even rank hands its data to the odd rank above it, which
 * goes on as new rank r / 2; ranks from 2e on go on as new rank r - e. New ranks 0 .. q-1 then
 * pair by exclusive-or. */
static inline int algoFoldPow2(int p) {
  int q = 1;
  while (q * 2 <= p) q *= 2;
  return q;
}

/* Rank r's new rank, or -1 for an even rank of the first 2e (it only hands over and receives). */
static inline int algoFoldNewRank(int e, int r) {
  if (r < 2 * e) return (r % 2) ? r / 2 : -1;
  return r - e;
}

static inline int algoFoldOldRank(int e, int v) {
  return v < e ? 2 * v + 1 : v + e;
}

/* The lowest rank new rank v stands for (its ranks are algoFoldFirstRank(e, v) .. the old rank). */
static inline int algoFoldFirstRank(int e, int v) {
  return v < e ? 2 * v : v + e;
}

#endif /* TD_GENERATOR_H_ */
