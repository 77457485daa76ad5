/*
 * algos.h - the per-collective algorithm tables: names (as in DESIGN.md), generators, and lookup.
 */
#ifndef TD_ALGOS_H_
#define TD_ALGOS_H_

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

/* All registered algorithms, terminated by an entry with name == NULL. */
extern const tdAlgo tdAlgoTable[];

/* The entry for (coll, name), or NULL. */
const tdAlgo *algoFind(tdColl coll, const char *name);
/* The entry whose generator is gen, or NULL (tests name generators by function). */
const tdAlgo *algoOfGen(tdGenFn gen);
/* Generates rank args->rank's schedule with the named algorithm into s (schedInit'ed here). */
tpudistResult_t algoGenerate(const tdCollArgs *args, const char *name, tdSched *s, char *err);
/* The same with an entry of the table: the shared prologue (the collective is the entry's, rank
 * and root in range, no in-place all-to-all(v), all-to-all-v counts given; one rank of a
 * collective with an in-place form is a copy) and then the entry's
 * generator, which may therefore assume valid arguments and at least two ranks where that applies.
 * Generators are called only through here. */
tpudistResult_t algoRun(const tdAlgo *algo, const tdCollArgs *args, tdSched *s, char *err);

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

/* The steps of a reduce tree node, chunk by chunk (k chunks): reduce the children's partials into
 * acc in the order of kids (the first into its own input), then send the result to parent (none
 * at the root, -1). reduce_tree.c. */
tpudistResult_t algoTreeReduceSteps(tdSched *s, const int *kids, int nkids, int parent,
                                    tdBufKind acc, uint32_t k);

/* Generators (one file per algorithm, <coll>_<algo>.c). */
tpudistResult_t genAllreduceRing(const tdCollArgs *a, tdSched *s, char *err);
tpudistResult_t genAllreduceRing2(const tdCollArgs *a, tdSched *s, char *err);
tpudistResult_t genAllreduceTree(const tdCollArgs *a, tdSched *s, char *err);
tpudistResult_t genAllreduceRecdbl(const tdCollArgs *a, tdSched *s, char *err);
tpudistResult_t genAllreduceRabenseifner(const tdCollArgs *a, tdSched *s, char *err);
tpudistResult_t genAllgatherRing(const tdCollArgs *a, tdSched *s, char *err);
tpudistResult_t genAllgatherRecdbl(const tdCollArgs *a, tdSched *s, char *err);
tpudistResult_t genReducescatterRing(const tdCollArgs *a, tdSched *s, char *err);
tpudistResult_t genReducescatterRecdbl(const tdCollArgs *a, tdSched *s, char *err);
tpudistResult_t genBroadcastChain(const tdCollArgs *a, tdSched *s, char *err);
tpudistResult_t genBroadcastTree(const tdCollArgs *a, tdSched *s, char *err);
tpudistResult_t genReduceChain(const tdCollArgs *a, tdSched *s, char *err);
tpudistResult_t genReduceTree(const tdCollArgs *a, tdSched *s, char *err);
tpudistResult_t genAlltoallPairwise(const tdCollArgs *a, tdSched *s, char *err);
tpudistResult_t genAlltoallDirect(const tdCollArgs *a, tdSched *s, char *err);
tpudistResult_t genAlltoallvPairwise(const tdCollArgs *a, tdSched *s, char *err);
tpudistResult_t genAlltoallvDirect(const tdCollArgs *a, tdSched *s, char *err);
tpudistResult_t genSendrecvDirect(const tdCollArgs *a, tdSched *s, char *err);
/* Torus generators (allreduce_torus.c, allgather_torus.c, reducescatter_torus.c,
 * alltoall_torus.c) and Bruck all-to-all (alltoall_bruck.c). */
tpudistResult_t genAllreduceTorus(const tdCollArgs *a, tdSched *s, char *err);
tpudistResult_t genAllreduceHier(const tdCollArgs *a, tdSched *s, char *err);
tpudistResult_t genAllgatherTorus(const tdCollArgs *a, tdSched *s, char *err);
tpudistResult_t genReducescatterTorus(const tdCollArgs *a, tdSched *s, char *err);
tpudistResult_t genAlltoallTorus(const tdCollArgs *a, tdSched *s, char *err);
tpudistResult_t genAlltoallvTorus(const tdCollArgs *a, tdSched *s, char *err);
tpudistResult_t genAlltoallBruck(const tdCollArgs *a, tdSched *s, char *err);
/* Hierarchical generators (<coll>_hier.c, hier.h): groups (slices, else hosts) as the outer
 * level. */
tpudistResult_t genAllgatherHier(const tdCollArgs *a, tdSched *s, char *err);
tpudistResult_t genReducescatterHier(const tdCollArgs *a, tdSched *s, char *err);
tpudistResult_t genBroadcastHier(const tdCollArgs *a, tdSched *s, char *err);
tpudistResult_t genReduceHier(const tdCollArgs *a, tdSched *s, char *err);
tpudistResult_t genAlltoallHier(const tdCollArgs *a, tdSched *s, char *err);
tpudistResult_t genAlltoallvHier(const tdCollArgs *a, tdSched *s, char *err);

#endif /* TD_ALGOS_H_ */
