/*
 * comm_host.c - a communicator and its host (docs/host.md): the ranks that share this rank's host
 * (local rank and size), this process's placement under TPU_DIST_BIND decided and applied once per
 * process (the first communicator; later ones report the same), and the pipeline piece size from
 * the host's caches unless TPU_DIST_CHUNK_BYTES is set, and the NUMA level of a one-host flat
 * topology with the cost of a copy across its nodes. The host is read with hwloc once per process;
 * a host hwloc cannot read leaves the process unbound with the default piece size and no NUMA
 * level.
 */
#include <stdlib.h>

#include "bootstrap.h"
#include "comm.h"
#include "host_detect.h"
#include "rt_log.h"
#include "rt_topo.h"

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

/* This rank's NUMA node: where this library placed it (on a synthetic or recorded host, the node
 * the placement describes) or where its launcher bound it; -1 when it is not placed, its
 * launcher's binding spans several nodes, or the host is unknown. */
static int ownNode(const tdComm *c) {
  char why[TD_ERRLEN];
  int lr, ls, first;
  tdHostPlace p;
  netLocalRank(&c->net, &lr, &ls);
  if (!hostThis(NULL, why) ||
      hostBindOnce(lr, ls, c->net.cfg->bind, &p, &first, why) != tpudistSuccess)
    return -1;
  return p.numa;
}

/* One host only (agreed by every rank: the host identities are exchanged): the ranks exchange
 * their nodes, and the level is there when they lie in consecutive blocks of equal size, one block
 * a node (hostNumaBlocks). The same for a communicator made by init, split or shrink: each rank's
 * node is where its process was placed, whichever communicator decided it. The factor is the
 * host's distance ratio among the nodes used, where hwloc has a matrix. */
tpudistResult_t commNumaLevel(tdComm *c, char *err) {
  tdTopo *t = &c->topo;
  const tdConfig *cfg = c->net.cfg;
  int lr, ls, n = c->net.nranks;
  netLocalRank(&c->net, &lr, &ls);
  if (t->ndims != 0 || t->numa > 0 || topoNumSlices(t) > 1 || ls != n || n < 2)
    return tpudistSuccess;
  int *node = calloc((size_t)n, sizeof(int));
  if (!node) return tdErr(err, tpudistNoMemory, "%s: no memory for the NUMA level", c->net.name);
  node[c->net.rank] = ownNode(c);
  tpudistResult_t r = bootstrapAllGather(c->net.bootstrap, node, sizeof(int), err);
  int k = r == tpudistSuccess ? hostNumaBlocks(node, n) : 0;
  if (k > 0 && topoSetFlatNuma(t, k, NULL) == tpudistSuccess) {
    char why[TD_ERRLEN];
    const tdHost *h = hostThis(NULL, why);
    const char *from;
    c->numa_pct = h ? hostNumaFactorPct(h, node, n) : 0;
    hostNodeList(node, n, c->numa_nodes, sizeof(c->numa_nodes));
    int pct = configNumaFactorPct(cfg, c->numa_pct, &from);
    TD_INFO(TD_SUBSYS_INIT,
            "%s: NUMA level: %d ranks per node, %d nodes (TPU_DIST_BIND=%s): nodes %s, a copy "
            "across them costs %d%% (%s)",
            c->net.name, k, n / k, hostBindName(cfg->bind), c->numa_nodes, pct, from);
  }
  free(node);
  return r;
}
