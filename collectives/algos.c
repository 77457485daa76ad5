/*
 * algos.c - the per-collective algorithm tables and lookup. Names follow DESIGN.md.
 */
#include "algos.h"

#include <string.h>

const tdAlgo tdAlgoTable[] = {
    {TD_COLL_ALLREDUCE, "ring", genAllreduceRing},
    {TD_COLL_ALLREDUCE, "ring2", genAllreduceRing2},
    {TD_COLL_ALLREDUCE, "tree", genAllreduceTree},
    {TD_COLL_ALLREDUCE, "recdbl", genAllreduceRecdbl},
    {TD_COLL_ALLREDUCE, "rabenseifner", genAllreduceRabenseifner},
    {TD_COLL_ALLGATHER, "ring", genAllgatherRing},
    {TD_COLL_ALLGATHER, "recdbl", genAllgatherRecdbl},
    {TD_COLL_REDUCESCATTER, "ring", genReducescatterRing},
    {TD_COLL_REDUCESCATTER, "recdbl", genReducescatterRecdbl},
    {TD_COLL_BROADCAST, "chain", genBroadcastChain},
    {TD_COLL_BROADCAST, "tree", genBroadcastTree},
    {TD_COLL_REDUCE, "chain", genReduceChain},
    {TD_COLL_REDUCE, "tree", genReduceTree},
    {TD_COLL_ALLTOALL, "pairwise", genAlltoallPairwise},
    {TD_COLL_ALLTOALL, "direct", genAlltoallDirect},
    {TD_COLL_ALLTOALLV, "pairwise", genAlltoallvPairwise},
    {TD_COLL_ALLTOALLV, "direct", genAlltoallvDirect},
    {TD_COLL_SENDRECV, "direct", genSendrecvDirect},
    {TD_COLL_ALLREDUCE, "torus", genAllreduceTorus},
    {TD_COLL_ALLGATHER, "torus", genAllgatherTorus},
    {TD_COLL_REDUCESCATTER, "torus", genReducescatterTorus},
    {TD_COLL_ALLTOALL, "torus", genAlltoallTorus},
    {TD_COLL_ALLTOALLV, "torus", genAlltoallvTorus},
    {TD_COLL_ALLTOALL, "bruck", genAlltoallBruck},
    {TD_NUM_COLLS, NULL, NULL},
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
