/*
 * comm_select.c - the communicator's algorithm selection: the selection table built once at
 * creation (selectBuild over the communicator's topology, with TPU_DIST_ALGO applied), and the
 * candidates for one call. While no selection table is linked into the build, a fixed choice per
 * collective (ring / chain / pairwise, or the TPU_DIST_ALGO override) stands in.
 */
#include <stdlib.h>
#include <string.h>

#include "algos.h"
#include "comm_priv.h"

#pragma weak selectBuild
#pragma weak selectCandidates
#pragma weak selectFree

static const char *const fallbackDefault[TD_NUM_COLLS] = {
    [TD_COLL_ALLREDUCE] = "ring",     [TD_COLL_BROADCAST] = "chain",
    [TD_COLL_REDUCE] = "chain",       [TD_COLL_ALLGATHER] = "ring",
    [TD_COLL_REDUCESCATTER] = "ring", [TD_COLL_ALLTOALL] = "pairwise",
    [TD_COLL_ALLTOALLV] = "pairwise", [TD_COLL_SENDRECV] = "direct"};

/* "allreduce=ring,alltoall=direct" onto names[]. */
static tpudistResult_t parseOverride(const char *spec, const char **names, char *err) {
  const char *p = spec;
  while (p && *p) {
    const char *end = strchr(p, ',');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    char item[64];
    snprintf(item, sizeof(item), "%.*s", (int)TD_MIN(len, sizeof(item) - 1), p);
    char *eq = strchr(item, '=');
    if (!eq)
      return tdErr(err, tpudistInvalidArgument, "TPU_DIST_ALGO: '%s' is not coll=algo", item);
    *eq = 0;
    int coll = schedCollFromName(item);
    if (coll < 0)
      return tdErr(err, tpudistInvalidArgument, "TPU_DIST_ALGO: unknown collective '%s'", item);
    const tdAlgo *a = algoFind((tdColl)coll, eq + 1);
    if (!a)
      return tdErr(err, tpudistInvalidArgument, "TPU_DIST_ALGO: unknown algorithm '%s' for %s",
                   eq + 1, item);
    names[coll] = a->name;
    p = end ? end + 1 : NULL;
  }
  return tpudistSuccess;
}

tpudistResult_t commSelectInit(tdComm *comm, char *err) {
  struct tdCommPriv *p = comm->priv;
  if (selectBuild) return selectBuild(&comm->topo, comm->nranks, comm->cfg->algo, &p->select, err);
  memcpy(p->fallback_algo, fallbackDefault, sizeof(fallbackDefault));
  return parseOverride(comm->cfg->algo, p->fallback_algo, err);
}

int commSelectCandidates(tdComm *comm, tdColl coll, uint64_t bytes, const char **names, int max) {
  struct tdCommPriv *p = comm->priv;
  if (p->select && selectCandidates) return selectCandidates(p->select, coll, bytes, names, max);
  if (max < 1 || !p->fallback_algo[coll]) return 0;
  names[0] = p->fallback_algo[coll];
  return 1;
}

void commSelectFree(tdComm *comm) {
  if (comm->priv->select && selectFree) selectFree(comm->priv->select);
  comm->priv->select = NULL;
}
