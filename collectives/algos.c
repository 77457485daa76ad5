/*
 * algos.c - the per-collective algorithm tables and lookup. Names follow DESIGN.md. Flags: see
 * TD_ALGO_V_LOCAL in algos.h.
 */
#include "algos.h"

#include <string.h>

const tdAlgo tdAlgoTable[] = {
    {TD_COLL_ALLREDUCE, "ring", genAllreduceRing, 0},
    {TD_COLL_ALLREDUCE, "ring2", genAllreduceRing2, 0},
    {TD_COLL_ALLREDUCE, "tree", genAllreduceTree, 0},
    {TD_COLL_ALLREDUCE, "recdbl", genAllreduceRecdbl, 0},
    {TD_COLL_ALLREDUCE, "rabenseifner", genAllreduceRabenseifner, 0},
    {TD_COLL_ALLGATHER, "ring", genAllgatherRing, 0},
    {TD_COLL_ALLGATHER, "recdbl", genAllgatherRecdbl, 0},
    {TD_COLL_REDUCESCATTER, "ring", genReducescatterRing, 0},
    {TD_COLL_REDUCESCATTER, "recdbl", genReducescatterRecdbl, 0},
    {TD_COLL_BROADCAST, "chain", genBroadcastChain, 0},
    {TD_COLL_BROADCAST, "tree", genBroadcastTree, 0},
    {TD_COLL_REDUCE, "chain", genReduceChain, 0},
    {TD_COLL_REDUCE, "tree", genReduceTree, 0},
    {TD_COLL_ALLTOALL, "pairwise", genAlltoallPairwise, 0},
    {TD_COLL_ALLTOALL, "direct", genAlltoallDirect, 0},
    {TD_COLL_ALLTOALLV, "pairwise", genAlltoallvPairwise, TD_ALGO_V_LOCAL},
    {TD_COLL_ALLTOALLV, "direct", genAlltoallvDirect, TD_ALGO_V_LOCAL},
    {TD_COLL_SENDRECV, "direct", genSendrecvDirect, 0},
    {TD_COLL_ALLREDUCE, "torus", genAllreduceTorus, 0},
    {TD_COLL_ALLGATHER, "torus", genAllgatherTorus, 0},
    {TD_COLL_REDUCESCATTER, "torus", genReducescatterTorus, 0},
    {TD_COLL_ALLTOALL, "torus", genAlltoallTorus, 0},
    {TD_COLL_ALLTOALLV, "torus", genAlltoallvTorus, 0},
    {TD_COLL_ALLTOALL, "bruck", genAlltoallBruck, 0},
    {TD_NUM_COLLS, NULL, NULL, 0},
};

const tdAlgo *algoFind(tdColl coll, const char *name) {
  for (const tdAlgo *a = tdAlgoTable; a->name; a++)
    if (a->coll == coll && name && strcmp(a->name, name) == 0) return a;
  return NULL;
}

tpudistResult_t algoGenerate(const tdCollArgs *args, const char *name, tdSched *s, char *err) {
  const tdAlgo *a = algoFind(args->coll, name);
  if (!a)
    return tdErr(err, tpudistInvalidArgument, "unknown algorithm '%s' for %s", name ? name : "",
                 schedCollName(args->coll));
  schedInit(s, args, a->name);
  tpudistResult_t r = a->gen(args, s, err);
  if (r != tpudistSuccess) schedFree(s);
  return r;
}
