/*
 * sizes.c - NCCL-convention sizes (what --bytes means per collective, algbw and busbw factors)
 * and the simulator's algorithm pick when none is named.
 */
#include <string.h>

#include "algos.h"
#include "select.h"
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

/* The library's selection (select.h): its first candidate for (coll, bytes). Falls back to the
 * first generator that accepts the shape when selection fails. */
tpudistResult_t simSelectAlgo(const tdTopo *topo, const tdCostModel *m, tdColl coll, uint64_t bytes,
                              char *out, size_t len, char *err) {
  tdSelectTable *t = NULL;
  const char *names[TD_SELECT_MAX_CANDIDATES];
  int n = 0;
  char e2[TD_ERRLEN];
  if (selectBuild(topo, topo->nranks, NULL, m, &t, e2) == tpudistSuccess)
    n = selectCandidates(t, coll, bytes, names, TD_SELECT_MAX_CANDIDATES);
  if (n > 0) {
    snprintf(out, len, "%s", names[0]);
    selectFree(t);
    return tpudistSuccess;
  }
  selectFree(t);
  for (const tdAlgo *a = tdAlgoTable; a->name; a++) {
    if (a->coll != coll || !a->gen) continue;
    tdCollArgs args;
    memset(&args, 0, sizeof(args));
    args.coll = coll;
    args.nranks = topo->nranks;
    args.count = 1;
    args.topo = topo;
    args.elem_size = 4;
    tdSched s;
    memset(&s, 0, sizeof(s));
    tpudistResult_t r = algoGenerate(&args, a->name, &s, e2);
    schedFree(&s);
    if (r == tpudistSuccess) {
      snprintf(out, len, "%s", a->name);
      return tpudistSuccess;
    }
  }
  return tdErr(err, tpudistNotSupported, "sim: no algorithm accepts %s on %d ranks",
               schedCollName(coll), topo->nranks);
}
