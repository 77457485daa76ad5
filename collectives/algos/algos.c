/*
 * algos.c - the algorithm table (every collective's rows, <coll>/<coll>.h) and lookup. Names follow
 * docs/design.md. Flags: see TD_ALGO_V_LOCAL in generator.h.
 */
#include "algos.h"

#include <string.h>

#include "allgather.h"
#include "allreduce.h"
#include "alltoall.h"
#include "broadcast.h"
#include "reduce.h"
#include "reducescatter.h"
#include "sendrecv.h"

/* Each collective's rows in the order of its folder's list; a collective's candidates are
 * considered in that order (select.c). */
/* clang-format off */
const tdAlgo tdAlgoTable[] = {
    TD_ALGO_ROWS_ALLREDUCE,
    TD_ALGO_ROWS_ALLGATHER,
    TD_ALGO_ROWS_REDUCESCATTER,
    TD_ALGO_ROWS_BROADCAST,
    TD_ALGO_ROWS_REDUCE,
    TD_ALGO_ROWS_ALLTOALL,
    TD_ALGO_ROWS_SENDRECV,
    {TD_NUM_COLLS, NULL, NULL, 0},
};
/* clang-format on */

const tdAlgo *algoFind(tdColl coll, const char *name) {
  for (const tdAlgo *a = tdAlgoTable; a->name; a++)
    if (a->coll == coll && name && strcmp(a->name, name) == 0) return a;
  return NULL;
}

/* The prologue every generator shares: the collective is the algorithm's, the rank and root are
 * in range, all-to-all(v) is not in place and all-to-all-v has its counts and displacements. */
static tpudistResult_t checkArgs(const tdAlgo *g, const tdCollArgs *a, char *err) {
  const char *algo = g->name;
  if (a->coll != g->coll)
    return tdErr(err, tpudistInvalidArgument, "%s %s asked for %s", schedCollName(g->coll), algo,
                 schedCollName(a->coll));
  int rooted = a->coll == TD_COLL_BROADCAST || a->coll == TD_COLL_REDUCE;
  if (a->nranks < 1 || a->rank < 0 || a->rank >= a->nranks)
    return tdErr(err, tpudistInvalidArgument, "%s %s: rank %d of %d ranks", schedCollName(a->coll),
                 algo, a->rank, a->nranks);
  if (rooted && (a->root < 0 || a->root >= a->nranks))
    return tdErr(err, tpudistInvalidArgument, "%s %s: root %d of %d ranks", schedCollName(a->coll),
                 algo, a->root, a->nranks);
  int a2a = a->coll == TD_COLL_ALLTOALL || a->coll == TD_COLL_ALLTOALLV;
  if (a2a && a->inplace)
    return tdErr(err, tpudistNotSupported, "%s has no in-place form", schedCollName(a->coll));
  if (a->coll == TD_COLL_ALLTOALLV &&
      ((a->v_local ? !a->v_sendcounts || !a->v_recvcounts : !a->v_counts) || !a->v_sdispls ||
       !a->v_rdispls))
    return tdErr(err, tpudistInvalidArgument, "alltoallv %s: counts or displacements missing",
                 algo);
  return tpudistSuccess;
}

/* One rank: a collective with an in-place form (all but all-to-all(v) and send/recv) is a copy of
 * INPUT into OUTPUT (none in place), whatever the algorithm. */
static int oneRankCopy(const tdCollArgs *a) {
  return a->nranks == 1 && a->coll != TD_COLL_ALLTOALL && a->coll != TD_COLL_ALLTOALLV &&
         a->coll != TD_COLL_SENDRECV;
}

static tpudistResult_t genOneRank(const tdCollArgs *a, tdSched *s) {
  schedSetLayout(s, TD_BUF_INPUT, 1, 1);
  schedSetLayout(s, TD_BUF_OUTPUT, 1, 1);
  schedSetLayout(s, TD_BUF_SCRATCH, 0, 1);
  if (a->inplace) return tpudistSuccess;
  tdStep st = schedCopy(schedRef(TD_BUF_INPUT, 0, 1), schedRef(TD_BUF_OUTPUT, 0, 1));
  return schedAppend(s, 0, &st, NULL);
}

const tdAlgo *algoOfGen(tdGenFn gen) {
  for (const tdAlgo *a = tdAlgoTable; a->name; a++)
    if (a->gen == gen) return a;
  return NULL;
}

tpudistResult_t algoGenerate(const tdCollArgs *args, const char *name, tdSched *s, char *err) {
  const tdAlgo *a = algoFind(args->coll, name);
  if (!a)
    return tdErr(err, tpudistInvalidArgument, "unknown algorithm '%s' for %s", name ? name : "",
                 schedCollName(args->coll));
  return algoRun(a, args, s, err);
}

tpudistResult_t algoRun(const tdAlgo *a, const tdCollArgs *args, tdSched *s, char *err) {
  TD_CHECK(checkArgs(a, args, err));
  schedInit(s, args, a->name);
  tpudistResult_t r = oneRankCopy(args) ? genOneRank(args, s) : a->gen(args, s, err);
  if (r != tpudistSuccess)
    schedFree(s);
  else
    schedTrim(s);
  return r;
}
