/*
 * sizes.c - NCCL-convention sizes (what --bytes means per collective, algbw and busbw factors)
 * and the simulator's algorithm pick when none is named.
 */
#include <string.h>

#include "algos.h"
#include "sim.h"

uint64_t simCountForBytes(tdColl coll, int nranks, uint64_t bytes, uint32_t elem_size) {
  uint64_t elems = bytes / (elem_size ? elem_size : 1);
  switch (coll) {
    case TD_COLL_ALLGATHER:
    case TD_COLL_REDUCESCATTER:
    case TD_COLL_ALLTOALL:
      return elems / (uint64_t)(nranks > 0 ? nranks : 1);
    default:
      return elems;
  }
}

double simAlgBytes(tdColl coll, int nranks, uint64_t count, uint32_t elem_size) {
  double b = (double)count * elem_size;
  if (coll == TD_COLL_ALLGATHER || coll == TD_COLL_REDUCESCATTER || coll == TD_COLL_ALLTOALL)
    b *= nranks;
  return b;
}

double simBusFactor(tdColl coll, int nranks) {
  double n = nranks;
  switch (coll) {
    case TD_COLL_ALLREDUCE:
      return 2.0 * (n - 1) / n;
    case TD_COLL_ALLGATHER:
    case TD_COLL_REDUCESCATTER:
    case TD_COLL_ALLTOALL:
      return (n - 1) / n;
    default:
      return 1.0;
  }
}

/* Preference when no algorithm is named: topology-aware first on a torus, bandwidth-optimal
 * rings for large messages, logarithmic ones for small (the order the library's selection uses
 * for its candidates, without its cost evaluation). */
tpudistResult_t simSelectAlgo(const tdTopo *topo, tdColl coll, uint64_t bytes, char *out,
                              size_t len, char *err) {
  static const char *const large[] = {"torus", "ring2",  "ring",   "pairwise", "chain",
                                      "tree",  "direct", "recdbl", NULL};
  static const char *const small[] = {"recdbl",   "tree",  "torus",  "bruck", "ring",
                                      "pairwise", "chain", "direct", NULL};
  const char *const *pref = bytes >= (1u << 20) || coll == TD_COLL_ALLTOALL ? large : small;
  int n = topo->nranks;
  for (; *pref; pref++) {
    const tdAlgo *a = algoFind(coll, *pref);
    if (!a) continue;
    tdCollArgs args;
    memset(&args, 0, sizeof(args));
    args.coll = coll;
    args.nranks = n;
    args.rank = n - 1;
    args.count = 1;
    args.topo = topo;
    args.elem_size = 4;
    tdSched s;
    memset(&s, 0, sizeof(s));
    char e2[TD_ERRLEN];
    tpudistResult_t r = algoGenerate(&args, *pref, &s, e2);
    schedFree(&s);
    if (r == tpudistSuccess) {
      snprintf(out, len, "%s", *pref);
      return tpudistSuccess;
    }
  }
  return tdErr(err, tpudistNotSupported, "sim: no algorithm accepts %s on %d ranks",
               schedCollName(coll), n);
}
