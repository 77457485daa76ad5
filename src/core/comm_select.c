/*
 * comm_select.c - the communicator's algorithm selection: the selection table built once at
 * creation (selectBuild over the communicator's topology, with TPU_DIST_ALGO applied), and the
 * candidates for one call.
 */
#include "comm_priv.h"

tpudistResult_t commSelectInit(tdComm *comm, char *err) {
  return selectBuild(&comm->topo, comm->nranks, comm->cfg->algo, &comm->priv->select, err);
}

int commSelectCandidates(tdComm *comm, tdColl coll, uint64_t bytes, const char **names, int max) {
  return selectCandidates(comm->priv->select, coll, bytes, names, max);
}

void commSelectFree(tdComm *comm) {
  if (comm->priv->select) selectFree(comm->priv->select);
  comm->priv->select = NULL;
}
