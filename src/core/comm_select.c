/*
 * comm_select.c - the communicator's algorithm selection: the selection table built once at
 * creation (selectBuild over the communicator's topology, with TPU_DIST_ALGO applied), and the
 * candidates for one call. A TPU_DIST_ALGO entry that this communicator's shape refuses (e.g.
 * torus on a flat split) is ignored here with a warning; unknown names are errors. Also decides,
 * once, whether all-to-all-v needs its counts exchange (a2avDecide).
 */
#include "comm.h"
#include "rt_log.h"

/* All-to-all-v runs in one phase (no counts exchange) when one algorithm is selected at every
 * size (or forced by TPU_DIST_ALGO) and it needs only this rank's row and column of the matrix:
 * the message sizes, hence the bucket, are not known locally, so the choice must not depend on
 * them. Deterministic: every rank builds the same table. */
static void a2avDecide(tdComm *comm) {
  comm->a2av_local = selectAlltoallvLocal(comm->select);
  TD_INFO(TD_SUBSYS_TUNE, "%s: alltoallv %s%s", comm->net.name,
          comm->a2av_local ? "in one phase with " : "exchanges counts first",
          comm->a2av_local ? comm->a2av_local : "");
}

tpudistResult_t commSelectInit(tdComm *comm, char *err) {
  tpudistResult_t r =
      selectBuild(&comm->topo, comm->net.nranks, comm->net.cfg->algo, &comm->select, err);
  if (r == tpudistNotSupported && comm->net.cfg->algo) {
    /* TPU_DIST_ALGO names an algorithm this communicator's shape refuses (torus on a flat split):
     * the override applies where it can; here the selection decides. */
    TD_WARN(TD_SUBSYS_TUNE, "%s: %s; TPU_DIST_ALGO is ignored on this communicator", comm->net.name,
            err);
    r = selectBuild(&comm->topo, comm->net.nranks, NULL, &comm->select, err);
  }
  if (r == tpudistSuccess) a2avDecide(comm);
  return r;
}

int commSelectCandidates(tdComm *comm, tdColl coll, uint64_t bytes, const char **names, int max) {
  return selectCandidates(comm->select, coll, bytes, names, max);
}

void commSelectFree(tdComm *comm) {
  if (comm->select) selectFree(comm->select);
  comm->select = NULL;
}
