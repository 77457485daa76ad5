/*
 * comm.c - making communicators: the unique id, init (id, TPU_DIST_COMM_ID, external store,
 * reconfiguration's rendezvous), the checks of a caller's config, and what init, split and shrink
 * share once their bootstrap channel exists (transports, topology, selection, executor). The
 * object itself (alloc, release) is comm_object.c; running a creation job, comm_async.c; split,
 * destroy, abort and the queries, comm_life.c; the registry of live communicators, comm_live.c.
 */
#include "comm.h"

#include <stdlib.h>
#include <string.h>

#include "bootstrap.h"
#include "registry.h"
#include "rt_clock.h"
#include "rt_log.h"
#include "rt_topo.h"

/* ---- creation ---------------------------------------------------------------------------- */

/* The execution mode: config.mode, else the parent's (split, shrink), else TPU_DIST_MODE. */
static int configMode(const tpudistConfig_t *uc, const tdParentView *pv, const tdConfig *cfg) {
  if (TD_CONFIG_HAS(uc, mode) && uc->mode != TPUDIST_CONFIG_UNDEF_INT) return uc->mode;
  return pv ? pv->mode : cfg->mode;
}

int commConfigTimeout(const tpudistConfig_t *uc) {
  return (uc && uc->timeoutMs != TPUDIST_CONFIG_UNDEF_INT && uc->timeoutMs > 0) ? uc->timeoutMs : 0;
}

tpudistResult_t commCheckConfig(const tpudistConfig_t *uc, char *err) {
  if (!uc) return tpudistSuccess;
  if (uc->magic != TPUDIST_CONFIG_MAGIC || uc->size < sizeof(size_t) + 2 * sizeof(unsigned))
    return tdErr(err, tpudistInvalidArgument,
                 "config not initialised with TPUDIST_CONFIG_INITIALIZER (magic 0x%x)", uc->magic);
  if (TD_CONFIG_HAS(uc, mode) && uc->mode != TPUDIST_CONFIG_UNDEF_INT &&
      uc->mode != TPUDIST_MODE_STRICT && uc->mode != TPUDIST_MODE_DEBUG &&
      uc->mode != TPUDIST_MODE_DEFER)
    return tdErr(err, tpudistInvalidArgument,
                 "config.mode %d is not TPUDIST_MODE_STRICT, _DEBUG or _DEFER", uc->mode);
  if (TD_CONFIG_HAS(uc, blocking) && uc->blocking != TPUDIST_CONFIG_UNDEF_INT &&
      uc->blocking != 0 && uc->blocking != 1)
    return tdErr(err, tpudistInvalidArgument, "config.blocking %d is not 0 or 1", uc->blocking);
  return tpudistSuccess;
}

int commConfigNonBlocking(const tpudistConfig_t *uc, const tdComm *parent) {
  if (TD_CONFIG_HAS(uc, blocking) && uc->blocking != TPUDIST_CONFIG_UNDEF_INT)
    return uc->blocking == 0;
  return !uc && parent ? !parent->blocking : 0;
}

/* Ranks per host when every host holds the same number of consecutive ranks (the host level of
 * a flat communicator), else 0. */
static int commRanksPerHost(const tdNet *n) {
  int per = 1;
  while (per < n->nranks && n->peers[per].host_hash == n->peers[0].host_hash) per++;
  if (n->nranks % per) return 0;
  for (int r = 0; r < n->nranks; r++)
    if (n->peers[r].host_hash != n->peers[r - r % per].host_hash) return 0;
  for (int b = per; b < n->nranks; b += per) /* each host one block: no hash twice */
    for (int e = 0; e < b; e += per)
      if (n->peers[b].host_hash == n->peers[e].host_hash) return 0;
  return per;
}

/* Topology: config.topology, else the parent's sub-block, else TPU_DIST_TOPOLOGY, else the TPU
 * runtime variables, else flat; a flat one on one host then takes its NUMA level. */
static tpudistResult_t commTopoInit(tdComm *c, const tpudistConfig_t *uc, const tdParentView *pv,
                                    const int *members, char *err) {
  const tdConfig *cfg = c->net.cfg;
  if (TD_CONFIG_HAS(uc, topology) && uc->topology)
    return topoParse(uc->topology, c->net.nranks, &c->topo, err);
  if (pv) {
    topoSubBlock(pv->topo, members, c->net.nranks, &c->topo);
    return commNumaLevel(c, err);
  }
  const char *source;
  TD_CHECK(configTopology(cfg, c->net.nranks, &c->topo, &source, err));
  int slice = topoSliceOf(&c->topo, c->net.rank);
  if (cfg->megascale_slice_id >= 0 && topoNumSlices(&c->topo) > 1 &&
      cfg->megascale_slice_id != slice)
    return tdErr(err, tpudistInvalidArgument,
                 "MEGASCALE_SLICE_ID=%d but rank %d is in slice %d (ranks are slice-major)",
                 cfg->megascale_slice_id, c->net.rank, slice);
  /* a flat topology learns its hosts from host identity, unless the setting gave them (:hosts=K,
   * which one machine uses to emulate several hosts) */
  if (c->topo.ndims == 0 && c->topo.host_bounds[0] == 0)
    topoSetFlatHosts(&c->topo, commRanksPerHost(&c->net), NULL);
  return commNumaLevel(c, err);
}

static double msSince(uint64_t t0) {
  return (double)(clockNowNs() - t0) * 1e-6;
}

/* Everything after the bootstrap channel exists (t_boot: when its creation started):
 * transports, peer exchange, topology, selection, executor, health queries. pv: what a split or
 * shrink inherits (NULL for init). */
static tpudistResult_t commSetup(tdComm *c, const tpudistConfig_t *uc, const tdParentView *pv,
                                 const int *members, uint64_t t_boot, char *err) {
  double boot_ms = msSince(t_boot);
  uint64_t t = clockNowNs();
  TD_CHECK(transportConnect(&c->net, err));
  double peers_ms = msSince(t);
  TD_CHECK(commHostInit(c, err));
  t = clockNowNs();
  TD_CHECK(commTopoInit(c, uc, pv, members, err));
  TD_CHECK(commSelectInit(c, err));
  double select_ms = msSince(t);
  c->mode = configMode(uc, pv, c->net.cfg);
  c->check = c->net.cfg->check || c->mode == TPUDIST_MODE_DEBUG;
  TD_CHECK(execInit(&c->exec, &c->net, err));
  TD_CHECK(deferInit(c, err));
  if (!pv) TD_CHECK(commStatusStart(c, err));
  char topo[64];
  topoFormat(&c->topo, topo, sizeof(topo));
  TD_INFO(TD_SUBSYS_INIT,
          "%s: rank %d of %d, topology %s, %d transport(s), mode %s; created in %.1f ms "
          "(bootstrap %.1f, peer exchange %.1f, selection %.1f)",
          c->net.name, c->net.rank, c->net.nranks, topo, c->net.ntransports,
          configModeName(c->mode), msSince(t_boot), boot_ms, peers_ms, select_ms);
  return tpudistSuccess;
}

static void commSetName(tdComm *c, const tpudistConfig_t *uc, const char *dflt_prefix) {
  if (uc && uc->commName)
    snprintf(c->net.name, sizeof(c->net.name), "%s", uc->commName);
  else
    snprintf(c->net.name, sizeof(c->net.name), "%s%08llx", dflt_prefix,
             (unsigned long long)(c->net.comm_hash & 0xffffffffull));
  netNameErrors(&c->net);
}

/* What an init job needs, copied from the caller's arguments (a non-blocking init outlives the
 * call; the store's ctx must stay valid until the init has finished). */
typedef struct {
  tpudistUniqueId id;
  int has_reconf;
  tdReconfJoin reconf;
  int has_store;
  tpudistStore_t store;
  char prefix[];
} tdInitArgs;

static tpudistResult_t initJob(tdComm *c, const tpudistConfig_t *uc, void *arg, char *err) {
  tdInitArgs *a = arg;
  uint64_t t_boot = clockNowNs();
  int n = c->net.nranks, rank = c->net.rank;
  volatile int *abort = c->blocking ? NULL : &c->net.aborted; /* nobody aborts a blocking one */
  if (a->has_reconf)
    TD_CHECK(
        bootstrapInitReconf(&a->reconf, rank, n, c->net.timeout_ms, abort, &c->net.bootstrap, err));
  else if (a->has_store)
    TD_CHECK(bootstrapInitStore(&a->store, a->prefix, rank, n, c->net.timeout_ms, abort,
                                &c->net.bootstrap, err));
  else
    TD_CHECK(bootstrapInit(&a->id, rank, n, c->net.timeout_ms, abort, &c->net.bootstrap, err));
  c->net.comm_hash = bootstrapCommHash(c->net.bootstrap);
  commSetName(c, uc, "comm-");
  return commSetup(c, uc, NULL, NULL, t_boot, err);
}

static tpudistResult_t initCommon(tpudistComm_t *out, int nranks, const tpudistUniqueId *id,
                                  int rank, const tpudistStore_t *store, const char *prefix,
                                  const tdReconfJoin *rj, int timeout_ms,
                                  const tpudistConfig_t *uc) {
  char err[TD_ERRLEN] = "";
  tpudistResult_t r;
  if (!out) return commError(NULL, tpudistInvalidArgument, "init: comm pointer is NULL");
  if (nranks < 1 || rank < 0 || rank >= nranks)
    return commError(NULL, tpudistInvalidArgument, "init: rank %d out of range for %d ranks", rank,
                     nranks);
  if ((r = commCheckConfig(uc, err)) != tpudistSuccess) return commErrorMsg(NULL, r, err);
  if (configError()) return commErrorMsg(NULL, tpudistInvalidArgument, configError());
  size_t plen = prefix ? strlen(prefix) + 1 : 1;
  tdInitArgs *a = calloc(1, sizeof(*a) + plen);
  tdComm *c = commAlloc(nranks, rank);
  if (!a || !c) {
    free(a);
    free(c);
    return commError(NULL, tpudistNoMemory, "init: out of memory");
  }
  if (id) a->id = *id;
  if (store) a->has_store = 1, a->store = *store;
  if (prefix) memcpy(a->prefix, prefix, plen);
  if (rj) a->has_reconf = 1, a->reconf = *rj;
  if (commConfigTimeout(uc)) c->net.timeout_ms = commConfigTimeout(uc);
  if (timeout_ms > 0) c->net.timeout_ms = timeout_ms;
  return commCreate(c, !commConfigNonBlocking(uc, NULL), uc, initJob, a, "init", out);
}

TPUDIST_API tpudistResult_t tpudistGetUniqueId(tpudistUniqueId *uniqueId) {
  char err[TD_ERRLEN] = "";
  if (!uniqueId) return commError(NULL, tpudistInvalidArgument, "GetUniqueId: id is NULL");
  tpudistResult_t r = bootstrapGetUniqueId(uniqueId, configGet()->comm_id, err);
  return r == tpudistSuccess ? r : commErrorMsg(NULL, r, err);
}

TPUDIST_API tpudistResult_t tpudistCommInitRank(tpudistComm_t *comm, int nranks,
                                                tpudistUniqueId commId, int rank) {
  return initCommon(comm, nranks, &commId, rank, NULL, NULL, NULL, 0, NULL);
}

TPUDIST_API tpudistResult_t tpudistCommInitRankConfig(tpudistComm_t *comm, int nranks,
                                                      tpudistUniqueId commId, int rank,
                                                      const tpudistConfig_t *config) {
  return initCommon(comm, nranks, &commId, rank, NULL, NULL, NULL, 0, config);
}

TPUDIST_API tpudistResult_t tpudistCommInitEnv(tpudistComm_t *comm, int nranks, int rank,
                                               const tpudistConfig_t *config) {
  const tdConfig *cfg = configGet();
  char err[TD_ERRLEN] = "";
  tpudistUniqueId id;
  if (!cfg->comm_id)
    return commError(NULL, tpudistInvalidArgument, "CommInitEnv: TPU_DIST_COMM_ID is not set");
  /* rank and size from one launcher: torchrun's, else mpirun's, else srun's */
  const char *from = "RANK/WORLD_SIZE";
  int er = cfg->env_rank, en = cfg->env_world_size;
  if (er < 0 && en < 0 && cfg->ompi_rank >= 0)
    from = "OMPI_COMM_WORLD_RANK/SIZE", er = cfg->ompi_rank, en = cfg->ompi_size;
  else if (er < 0 && en < 0 && cfg->slurm_procid >= 0)
    from = "SLURM_PROCID/NTASKS", er = cfg->slurm_procid, en = cfg->slurm_ntasks;
  if (nranks < 0) nranks = en;
  if (rank < 0) rank = er;
  if (nranks < 1 || rank < 0 || rank >= nranks)
    return commError(NULL, tpudistInvalidArgument,
                     "CommInitEnv: rank %d / size %d not given or out of range (set RANK and "
                     "WORLD_SIZE, or launch with mpirun or srun)",
                     rank, nranks);
  if (er == cfg->slurm_procid && cfg->slurm_localid >= 0 && !strcmp(from, "SLURM_PROCID/NTASKS"))
    TD_INFO(TD_SUBSYS_INIT, "CommInitEnv: rank %d of %d from %s, local rank %d", rank, nranks, from,
            cfg->slurm_localid);
  else
    TD_INFO(TD_SUBSYS_INIT, "CommInitEnv: rank %d of %d from %s", rank, nranks, from);
  tpudistResult_t r = bootstrapGetUniqueId(&id, cfg->comm_id, err);
  if (r != tpudistSuccess) return commErrorMsg(NULL, r, err);
  return initCommon(comm, nranks, &id, rank, NULL, NULL, NULL, 0, config);
}

TPUDIST_API tpudistResult_t tpudistCommInitStore(tpudistComm_t *comm, int nranks, int rank,
                                                 const tpudistStore_t *store, const char *prefix,
                                                 const tpudistConfig_t *config) {
  if (!store || !store->set || !store->get || !prefix)
    return commError(NULL, tpudistInvalidArgument,
                     "CommInitStore: store, its set/get callbacks and prefix must not be NULL");
  return initCommon(comm, nranks, NULL, rank, store, prefix, NULL, 0, config);
}

tpudistResult_t commInitReconf(tpudistComm_t *out, int nranks, int rank,
                               const struct tdReconfJoin *rj, int timeout_ms,
                               const tpudistConfig_t *uc) {
  return initCommon(out, nranks, NULL, rank, NULL, NULL, rj, timeout_ms, uc);
}

/* ---- split (used by comm_life.c) ---------------------------------------------------------- */

tpudistResult_t commSplitCreate(tdComm *parent, tdComm *c, const int *members, uint64_t tag,
                                const tpudistConfig_t *uc, char *err) {
  uint64_t t_boot = clockNowNs();
  tdParentView pv = {&parent->topo, parent->mode};
  TD_CHECK(bootstrapSplit(parent->net.bootstrap, members, c->net.nranks, c->net.rank, tag,
                          c->blocking ? NULL : &c->net.aborted, &c->net.bootstrap, err));
  c->net.comm_hash = bootstrapCommHash(c->net.bootstrap);
  commSetName(c, uc, "comm-");
  return commSetup(c, uc, &pv, members, t_boot, err);
}

tpudistResult_t commShrinkCreate(const tdLineage *l, tdComm *c, const int *members, uint64_t tag,
                                 volatile int *abort, const tpudistConfig_t *uc, char *err) {
  uint64_t t_boot = clockNowNs();
  tdParentView pv = {&l->topo, l->mode};
  TD_CHECK(bootstrapShrinkSplit(l->bs, l->peers, members, c->net.nranks, c->net.rank, tag,
                                c->net.cfg->agree_timeout_ms, abort, &c->net.bootstrap, err));
  c->net.comm_hash = bootstrapCommHash(c->net.bootstrap);
  commSetName(c, uc, "comm-");
  return commSetup(c, uc, &pv, members, t_boot, err);
}
