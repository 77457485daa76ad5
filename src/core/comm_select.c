/*
 * comm_select.c - the communicator's algorithm selection: the selection table built once at
 * creation (selectBuild over the communicator's topology, with TPU_DIST_ALGO applied) by rank 0
 * and sent to the others over the bootstrap channel, and the
 * candidates for one call. A TPU_DIST_ALGO entry that this communicator's shape refuses (e.g.
 * torus on a flat split) is ignored here with a warning; unknown names are errors. Also decides,
 * once, whether all-to-all-v needs its counts exchange (a2avDecide).
 */
#include <stdlib.h>

#include "bootstrap.h"
#include "comm.h"
#include "rt_log.h"
#include "rt_topo.h"

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

static tpudistResult_t buildTable(tdComm *comm, char *err) {
  tdCostModel m;
  configCostModel(comm->net.cfg, &comm->topo, comm->numa_pct, &m);
  tpudistResult_t r =
      selectBuild(&comm->topo, comm->net.nranks, comm->net.cfg->algo, &m, &comm->select, err);
  if (r == tpudistNotSupported && comm->net.cfg->algo) {
    /* TPU_DIST_ALGO names an algorithm this communicator's shape refuses (torus on a flat split):
     * the override applies where it can; here the selection decides. */
    TD_WARN(TD_SUBSYS_TUNE, "%s: %s; TPU_DIST_ALGO is ignored on this communicator", comm->net.name,
            err);
    r = selectBuild(&comm->topo, comm->net.nranks, NULL, &m, &comm->select, err);
  }
  return r;
}

/* What rank 0 sends: its result, its message on failure, then the packed table. */
typedef struct {
  int32_t res;
  char msg[TD_ERRLEN];
  char table[];
} tdSelectMsg;

/* Rank 0 builds the table and sends it to the others over the bootstrap channel: every rank has
 * the same table by construction, and the host spends one build, not one per rank (1.3 s of CPU
 * each for 64 flat ranks). */
tpudistResult_t commSelectInit(tdComm *comm, char *err) {
  tdNet *net = &comm->net;
  if (net->nranks == 1) {
    TD_CHECK(buildTable(comm, err));
    a2avDecide(comm);
    return tpudistSuccess;
  }
  size_t len = sizeof(tdSelectMsg) + selectPackedBytes();
  tdSelectMsg *m = calloc(1, len);
  if (!m) return tdErr(err, tpudistNoMemory, "selection: out of memory");
  if (net->rank == 0) {
    m->res = buildTable(comm, m->msg);
    if (m->res == tpudistSuccess) selectPack(comm->select, m->table);
  }
  tpudistResult_t r = bootstrapBroadcast(net->bootstrap, m, len, err);
  if (r == tpudistSuccess && m->res != tpudistSuccess) {
    m->msg[sizeof(m->msg) - 1] = 0;
    r = m->res > tpudistSuccess && m->res < tpudistNumResults ? (tpudistResult_t)m->res
                                                              : tpudistInternalError;
    tdErr(err, r, "%s%s", net->rank ? "rank 0: " : "", m->msg);
  }
  if (r == tpudistSuccess && net->rank != 0)
    r = selectUnpack(m->table, selectPackedBytes(), &comm->topo, net->nranks, &comm->select, err);
  free(m);
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
