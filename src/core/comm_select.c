/*
 * comm_select.c - the communicator's algorithm selection: the selection table built once at
 * creation (selectBuild over the communicator's topology, with TPU_DIST_ALGO applied), and the
 * candidates for one call. A TPU_DIST_ALGO entry that this communicator's shape refuses (e.g.
 * torus on a flat split) is ignored here with a warning; unknown names are errors.
 */
#include "comm_priv.h"
#include "log.h"

tpudistResult_t commSelectInit(tdComm *comm, char *err) {
  tpudistResult_t r =
      selectBuild(&comm->topo, comm->nranks, comm->cfg->algo, &comm->priv->select, err);
  if (r != tpudistNotSupported || !comm->cfg->algo) return r;
  /* TPU_DIST_ALGO names an algorithm this communicator's shape refuses (torus on a flat split):
   * the override applies where it can; here the selection decides. */
  TD_WARN(TD_SUBSYS_TUNE, "%s: %s; TPU_DIST_ALGO is ignored on this communicator", comm->name, err);
  return selectBuild(&comm->topo, comm->nranks, NULL, &comm->priv->select, err);
}

int commSelectCandidates(tdComm *comm, tdColl coll, uint64_t bytes, const char **names, int max) {
  return selectCandidates(comm->priv->select, coll, bytes, names, max);
}

void commSelectFree(tdComm *comm) {
  if (comm->priv->select) selectFree(comm->priv->select);
  comm->priv->select = NULL;
}
