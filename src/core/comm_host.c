/*
 * comm_host.c - a communicator and its host (docs/host.md): the ranks that share this rank's host
 * (local rank and size), this process's placement under TPU_DIST_BIND decided and applied once per
 * process (the first communicator; later ones report the same), and the pipeline piece size from
 * the host's caches unless TPU_DIST_CHUNK_BYTES is set, and the NUMA level of a one-host flat
 * topology. The host is read with hwloc once per process; a host hwloc cannot read leaves the
 * process unbound with the default piece size and no NUMA level.
 */
#include "comm.h"
#include "host_detect.h"
#include "rt_log.h"

tpudistResult_t commHostInit(tdComm *c, char *err) {
  const tdConfig *cfg = c->net.cfg;
  char why[TD_ERRLEN];
  const tdHost *h = hostThis(NULL, why);
  c->net.chunk_bytes = hostChunkBytes(h, cfg->chunk_bytes);
  if (!h) {
    TD_WARN(TD_SUBSYS_INIT, "%s: host topology unknown (%s): not placed, pieces of %ld bytes",
            c->net.name, why, c->net.chunk_bytes);
    return tpudistSuccess;
  }
  int lr, ls, first;
  netLocalRank(&c->net, &lr, &ls);
  tdHostPlace p;
  if (hostBindOnce(lr, ls, cfg->bind, &p, &first, err) != tpudistSuccess) return tpudistSystemError;
  char cpus[256];
  hostCpusNow(cpus, sizeof(cpus));
  if (first)
    TD_INFO(TD_SUBSYS_INIT,
            "%s: rank %d is local rank %d of %d on %s (%d packages, %d NUMA nodes, %d cores, %d "
            "PUs, read in %.1f ms); TPU_DIST_BIND=%s: %s; runs on PUs %s; pieces of %ld bytes%s",
            c->net.name, c->net.rank, lr, ls, h->source, h->npackages, h->nnuma, h->ncores, h->npus,
            h->read_ms, hostBindName(cfg->bind), p.why, cpus, c->net.chunk_bytes,
            cfg->chunk_bytes ? " (TPU_DIST_CHUNK_BYTES)" : " (from the caches)");
  return tpudistSuccess;
}

/* One host only: every rank reads the same host and places itself by the same rule (hostPlace),
 * so each computes the same blocks without a word exchanged (hosts could differ in their nodes;
 * their ranks would then disagree on the topology, which selectUnpack refuses). A rank its
 * launcher bound, or whose decision was made for another local size (an earlier communicator of
 * this process), knows only its own node: no level then. A synthetic or recorded host places
 * without binding, and the level follows the placement it describes. */
void commNumaLevel(tdComm *c) {
  tdTopo *t = &c->topo;
  const tdConfig *cfg = c->net.cfg;
  if (t->ndims != 0 || t->numa > 0 || topoNumSlices(t) > 1) return;
  char why[TD_ERRLEN];
  const tdHost *h = hostThis(NULL, why);
  int lr, ls, first;
  netLocalRank(&c->net, &lr, &ls);
  if (!h || ls != t->nranks) return;
  tdHostPlace p, q;
  if (hostBindOnce(lr, ls, cfg->bind, &p, &first, why) != tpudistSuccess) return;
  hostPlace(h, lr, ls, cfg->bind, NULL, &q);
  if (p.action == TD_PLACE_LAUNCHER || p.numa != q.numa) return;
  int k = hostNumaRanks(h, ls, cfg->bind);
  if (k > 0 && topoSetFlatNuma(t, k, NULL) == tpudistSuccess)
    TD_INFO(TD_SUBSYS_INIT, "%s: NUMA level: %d ranks per node, %d nodes (TPU_DIST_BIND=%s)",
            c->net.name, k, ls / k, hostBindName(cfg->bind));
}
