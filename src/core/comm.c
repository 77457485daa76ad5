/*
 * comm.c - communicators: unique id, init (id, TPU_DIST_COMM_ID, external store), split (one
 * all-gather of (color, key) over the parent's bootstrap, then bootstrapSplit: no new global
 * rendezvous), destroy, abort (any thread), and the queries (count, rank, topology, async error).
 * Also the registry of live communicators that every API call checks (use after destroy is an
 * error, not a crash).
 */
#include "comm.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bootstrap.h"
#include "registry.h"
#include "rt_log.h"
#include "rt_topo.h"

static pthread_mutex_t gLiveLock = PTHREAD_MUTEX_INITIALIZER;
static tdComm **gLive;
static int gNLive;
static size_t gLiveCap;

static int liveIndex(const tdComm *c) {
  for (int i = 0; i < gNLive; i++)
    if (gLive[i] == c) return i;
  return -1;
}

static tpudistResult_t liveAdd(tdComm *c) {
  pthread_mutex_lock(&gLiveLock);
  if (tdGrow(&gLive, &gLiveCap, (size_t)gNLive + 1, sizeof(*gLive), 16)) {
    pthread_mutex_unlock(&gLiveLock);
    return tpudistNoMemory;
  }
  gLive[gNLive++] = c;
  pthread_mutex_unlock(&gLiveLock);
  return tpudistSuccess;
}

/* Removes c from the registry; returns 0 if it was not there. */
static int liveRemove(tdComm *c) {
  pthread_mutex_lock(&gLiveLock);
  int i = liveIndex(c);
  if (i >= 0) gLive[i] = gLive[--gNLive];
  pthread_mutex_unlock(&gLiveLock);
  return i >= 0;
}

tpudistResult_t commEnter(tdComm *comm, const char *fn) {
  if (!comm)
    return fn ? commError(NULL, tpudistInvalidArgument, "%s: comm is NULL", fn)
              : tpudistInvalidArgument;
  pthread_mutex_lock(&gLiveLock);
  int found = liveIndex(comm) >= 0;
  if (found) __atomic_add_fetch(&comm->in_calls, 1, __ATOMIC_SEQ_CST);
  pthread_mutex_unlock(&gLiveLock);
  if (!found)
    return fn ? commError(NULL, tpudistInvalidUsage,
                          "%s: communicator %p was destroyed or is not valid", fn, (void *)comm)
              : tpudistInvalidUsage;
  if (fn && comm->net.aborted) {
    commLeave(comm);
    return commError(NULL, tpudistAborted, "%s: communicator %s was aborted", fn, comm->net.name);
  }
  return tpudistSuccess;
}

void commLeave(tdComm *comm) {
  __atomic_sub_fetch(&comm->in_calls, 1, __ATOMIC_SEQ_CST);
}

/* ---- creation ---------------------------------------------------------------------------- */

static tdComm *commAlloc(int nranks, int rank) {
  tdComm *c = calloc(1, sizeof(struct tpudistComm));
  if (!c) return NULL;
  c->net.nranks = nranks;
  c->net.rank = rank;
  c->net.cfg = configGet();
  c->net.timeout_ms = c->net.cfg->timeout_ms;
  netNameErrors(&c->net);
  c->last_algo = "none";
  return c;
}

static void commFree(tdComm *c) {
  if (!c) return;
  execFree(&c->exec);
  commSchedFree(c);
  commSelectFree(c);
  if (c->net.bootstrap) bootstrapFree(c->net.bootstrap);
  free(c->agreed_failed);
  free(c);
}

/* 1 if the caller's config struct (of uc->size bytes: older callers' are shorter) has field. */
#define TD_CONFIG_HAS(uc, field) \
  ((uc) && (uc)->size >= offsetof(tpudistConfig_t, field) + sizeof((uc)->field))

/* The execution mode: config.mode, else the parent's (split), else TPU_DIST_MODE. */
static int configMode(const tpudistConfig_t *uc, const tdComm *parent, const tdConfig *cfg) {
  if (TD_CONFIG_HAS(uc, mode) && uc->mode != TPUDIST_CONFIG_UNDEF_INT) return uc->mode;
  return parent ? parent->mode : cfg->mode;
}

static int configTimeout(const tpudistConfig_t *uc) {
  return (uc && uc->timeoutMs != TPUDIST_CONFIG_UNDEF_INT && uc->timeoutMs > 0) ? uc->timeoutMs : 0;
}

static tpudistResult_t checkUserConfig(const tpudistConfig_t *uc, char *err) {
  if (!uc) return tpudistSuccess;
  if (uc->magic != TPUDIST_CONFIG_MAGIC || uc->size < sizeof(size_t) + 2 * sizeof(unsigned))
    return tdErr(err, tpudistInvalidArgument,
                 "config not initialised with TPUDIST_CONFIG_INITIALIZER (magic 0x%x)", uc->magic);
  if (TD_CONFIG_HAS(uc, mode) && uc->mode != TPUDIST_CONFIG_UNDEF_INT &&
      uc->mode != TPUDIST_MODE_STRICT && uc->mode != TPUDIST_MODE_DEBUG)
    return tdErr(err, tpudistInvalidArgument,
                 "config.mode %d is not TPUDIST_MODE_STRICT or TPUDIST_MODE_DEBUG", uc->mode);
  return tpudistSuccess;
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
 * runtime variables, else flat. */
static tpudistResult_t commTopoInit(tdComm *c, const tpudistConfig_t *uc, const tdComm *parent,
                                    const int *members, char *err) {
  const tdConfig *cfg = c->net.cfg;
  if (TD_CONFIG_HAS(uc, topology) && uc->topology)
    return topoParse(uc->topology, c->net.nranks, &c->topo, err);
  if (parent) {
    topoSubBlock(&parent->topo, members, c->net.nranks, &c->topo);
    return tpudistSuccess;
  }
  const char *source;
  TD_CHECK(configTopology(cfg, c->net.nranks, &c->topo, &source, err));
  int slice = topoSliceOf(&c->topo, c->net.rank);
  if (cfg->megascale_slice_id >= 0 && topoNumSlices(&c->topo) > 1 &&
      cfg->megascale_slice_id != slice)
    return tdErr(err, tpudistInvalidArgument,
                 "MEGASCALE_SLICE_ID=%d but rank %d is in slice %d (ranks are slice-major)",
                 cfg->megascale_slice_id, c->net.rank, slice);
  if (c->topo.ndims == 0) topoSetFlatHosts(&c->topo, commRanksPerHost(&c->net), NULL);
  return tpudistSuccess;
}

/* Everything after the bootstrap channel exists: transports, peer exchange, topology,
 * selection, executor. */
static tpudistResult_t commSetup(tdComm *c, const tpudistConfig_t *uc, const tdComm *parent,
                                 const int *members, char *err) {
  TD_CHECK(transportConnect(&c->net, err));
  TD_CHECK(commTopoInit(c, uc, parent, members, err));
  TD_CHECK(commSelectInit(c, err));
  c->mode = configMode(uc, parent, c->net.cfg);
  c->check = c->net.cfg->check || c->mode == TPUDIST_MODE_DEBUG;
  TD_CHECK(execInit(&c->exec, &c->net, err));
  char topo[64];
  topoFormat(&c->topo, topo, sizeof(topo));
  TD_INFO(TD_SUBSYS_INIT, "%s: rank %d of %d, topology %s, %d transport(s), mode %s", c->net.name,
          c->net.rank, c->net.nranks, topo, c->net.ntransports, configModeName(c->mode));
  return liveAdd(c);
}

static void commSetName(tdComm *c, const tpudistConfig_t *uc, const char *dflt_prefix) {
  if (uc && uc->commName)
    snprintf(c->net.name, sizeof(c->net.name), "%s", uc->commName);
  else
    snprintf(c->net.name, sizeof(c->net.name), "%s%08llx", dflt_prefix,
             (unsigned long long)(c->net.comm_hash & 0xffffffffull));
  netNameErrors(&c->net);
}

/* Tears down a communicator that never became live. */
static void commDiscard(tdComm *c) {
  execStop(&c->exec);
  transportFiniAll(&c->net);
  commFree(c);
}

static tpudistResult_t initCommon(tpudistComm_t *out, int nranks, const tpudistUniqueId *id,
                                  int rank, const tpudistStore_t *store, const char *prefix,
                                  const tpudistConfig_t *uc) {
  char err[TD_ERRLEN] = "";
  tpudistResult_t r;
  if (!out) return commError(NULL, tpudistInvalidArgument, "init: comm pointer is NULL");
  if (nranks < 1 || rank < 0 || rank >= nranks)
    return commError(NULL, tpudistInvalidArgument, "init: rank %d out of range for %d ranks", rank,
                     nranks);
  if ((r = checkUserConfig(uc, err)) != tpudistSuccess) return commErrorMsg(NULL, r, err);
  if (configError()) return commErrorMsg(NULL, tpudistInvalidArgument, configError());
  tdComm *c = commAlloc(nranks, rank);
  if (!c) return commError(NULL, tpudistNoMemory, "init: out of memory");
  if (configTimeout(uc)) c->net.timeout_ms = configTimeout(uc);
  if (store)
    r = bootstrapInitStore(store, prefix, rank, nranks, c->net.timeout_ms, &c->net.bootstrap, err);
  else
    r = bootstrapInit(id, rank, nranks, c->net.timeout_ms, &c->net.bootstrap, err);
  if (r != tpudistSuccess) {
    commFree(c);
    return commErrorMsg(NULL, r, err);
  }
  c->net.comm_hash = bootstrapCommHash(c->net.bootstrap);
  commSetName(c, uc, "comm-");
  if ((r = commSetup(c, uc, NULL, NULL, err)) != tpudistSuccess) {
    commDiscard(c);
    return commErrorMsg(NULL, r, err);
  }
  *out = (tpudistComm_t)c;
  return tpudistSuccess;
}

TPUDIST_API tpudistResult_t tpudistGetUniqueId(tpudistUniqueId *uniqueId) {
  char err[TD_ERRLEN] = "";
  if (!uniqueId) return commError(NULL, tpudistInvalidArgument, "GetUniqueId: id is NULL");
  tpudistResult_t r = bootstrapGetUniqueId(uniqueId, configGet()->comm_id, err);
  return r == tpudistSuccess ? r : commErrorMsg(NULL, r, err);
}

TPUDIST_API tpudistResult_t tpudistCommInitRank(tpudistComm_t *comm, int nranks,
                                                tpudistUniqueId commId, int rank) {
  return initCommon(comm, nranks, &commId, rank, NULL, NULL, NULL);
}

TPUDIST_API tpudistResult_t tpudistCommInitRankConfig(tpudistComm_t *comm, int nranks,
                                                      tpudistUniqueId commId, int rank,
                                                      const tpudistConfig_t *config) {
  return initCommon(comm, nranks, &commId, rank, NULL, NULL, config);
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
  return initCommon(comm, nranks, &id, rank, NULL, NULL, config);
}

TPUDIST_API tpudistResult_t tpudistCommInitStore(tpudistComm_t *comm, int nranks, int rank,
                                                 const tpudistStore_t *store, const char *prefix,
                                                 const tpudistConfig_t *config) {
  if (!store || !store->set || !store->get || !prefix)
    return commError(NULL, tpudistInvalidArgument,
                     "CommInitStore: store, its set/get callbacks and prefix must not be NULL");
  return initCommon(comm, nranks, NULL, rank, store, prefix, config);
}

/* ---- split, destroy (used by comm_life.c) ------------------------------------------------ */

tpudistResult_t commSplitCreate(tdComm *parent, int n, int newrank, const int *members,
                                uint64_t tag, int shrink, const tpudistConfig_t *uc, tdComm **out,
                                char *err) {
  TD_CHECK(checkUserConfig(uc, err));
  tdComm *c = commAlloc(n, newrank);
  if (!c) return tdErr(err, tpudistNoMemory, "split: out of memory");
  c->net.timeout_ms = configTimeout(uc) ? configTimeout(uc) : parent->net.timeout_ms;
  tpudistResult_t r =
      shrink
          ? bootstrapShrinkSplit(parent->net.bootstrap, parent->net.peers, members, n, newrank, tag,
                                 c->net.cfg->agree_timeout_ms, &c->net.bootstrap, err)
          : bootstrapSplit(parent->net.bootstrap, members, n, newrank, tag, &c->net.bootstrap, err);
  if (r != tpudistSuccess) {
    commFree(c);
    return r;
  }
  c->net.comm_hash = bootstrapCommHash(c->net.bootstrap);
  commSetName(c, uc, "comm-");
  if ((r = commSetup(c, uc, parent, members, err)) != tpudistSuccess) {
    commDiscard(c);
    return r;
  }
  *out = c;
  return tpudistSuccess;
}

int commLiveRemove(tdComm *c) {
  return liveRemove(c);
}

void commDestroyNow(tdComm *c) {
  execStop(&c->exec);
  transportFiniAll(&c->net);
  commFree(c);
}
