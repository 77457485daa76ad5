/*
 * comm_host.c - a communicator and its host (docs/host.md): the ranks that share this rank's host
 * (local rank and size), this process's placement under TPU_DIST_BIND decided and applied once per
 * process (the first communicator; later ones report the same), and the pipeline piece size from
 * the host's caches unless TPU_DIST_CHUNK_BYTES is set. The host is read with hwloc once per
 * process; a host hwloc cannot read leaves the process unbound with the default piece size.
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
