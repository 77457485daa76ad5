/*
 * rt_topo.c - the topology the configuration names (rt_topo.h).
 */
#include "rt_topo.h"

#include <string.h>
#include <unistd.h>

/* One slice's topology (ranks per slice, or <= 0 for unchecked). */
static tpudistResult_t sliceTopology(const tdConfig *cfg, int nranks, tdTopo *out,
                                     const char **source, char *err) {
  if (cfg->topology) {
    *source = "TPU_DIST_TOPOLOGY";
    return topoParse(cfg->topology, nranks, out, err);
  }
  tdTpuEnv env = {cfg->tpu_accelerator_type, cfg->tpu_topology, cfg->tpu_topology_wrap,
                  cfg->tpu_topology_alt, cfg->tpu_chips_per_host_bounds};
  tpudistResult_t r = topoFromTpuEnv(&env, nranks, out, err);
  *source = "TPU_* variables";
  if (r != tpudistNotSupported) return r;
  *source = "flat";
  if (nranks < 1)
    return tdErr(err, tpudistInvalidArgument, "no topology configured and no rank count given");
  topoInitFlat(out, nranks);
  return tpudistSuccess;
}

tpudistResult_t configTopology(const tdConfig *cfg, int nranks, tdTopo *out, const char **source,
                               char *err) {
  int ns = cfg->megascale_num_slices;
  if (ns <= 1) return sliceTopology(cfg, nranks, out, source, err);
  /* MEGASCALE_NUM_SLICES: the configured topology is one slice, unless it names its slices */
  if (nranks > 0 && nranks % ns != 0)
    return tdErr(err, tpudistInvalidArgument,
                 "MEGASCALE_NUM_SLICES=%d does not divide the communicator's %d ranks", ns, nranks);
  tdTopo t;
  int named = cfg->topology && strstr(cfg->topology, "slices=");
  TD_CHECK(sliceTopology(cfg, named ? nranks : (nranks > 0 ? nranks / ns : 0), &t, source, err));
  if (topoNumSlices(&t) == 1) TD_CHECK(topoSetSlices(&t, ns, err));
  if (topoNumSlices(&t) != ns)
    return tdErr(err, tpudistInvalidArgument,
                 "MEGASCALE_NUM_SLICES=%d but TPU_DIST_TOPOLOGY='%s' has %d slices", ns,
                 cfg->topology, topoNumSlices(&t));
  if (nranks > 0 && t.nranks != nranks) {
    char shape[64];
    topoFormat(&t, shape, sizeof(shape));
    return tdErr(err, tpudistInvalidArgument, "%s has %d ranks but the communicator has %d ranks",
                 shape, t.nranks, nranks);
  }
  *out = t;
  return tpudistSuccess;
}

int configNumaFactorPct(const tdConfig *cfg, int host_pct, const char **source) {
  const char *from = "default";
  int pct = (int)(TD_COST_NUMA_FACTOR * 100 + 0.5);
  if (cfg->numa_factor_pct >= 0)
    pct = cfg->numa_factor_pct, from = "TPU_DIST_NUMA_FACTOR_PCT";
  else if (host_pct > 0)
    pct = host_pct, from = "hwloc distances";
  if (source) *source = from;
  return pct;
}

void configCostModel(const tdConfig *cfg, const tdTopo *t, int host_pct, tdCostModel *m) {
  costModelDefault(t, m);
  if (cfg->dcn_gbps > 0) m->dcn_bw = cfg->dcn_gbps * 1e9 / 8;
  if (cfg->dcn_latency_us >= 0) m->dcn_latency = cfg->dcn_latency_us * 1e-6;
  m->dcn_flows = cfg->dcn_flows;
  m->numa_factor = configNumaFactorPct(cfg, host_pct, NULL) / 100.0;
  if (cfg->shm_sync_ns >= 0) {
    m->shm_sync = cfg->shm_sync_ns * 1e-9;
    return;
  }
  /* flat (the only topology that uses it): ranks per host when hosts are known, else one host */
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  int per_host = t->host_bounds[0] > 0 ? t->host_bounds[0] : t->nranks;
  if (cores > 0 && per_host > cores) m->shm_sync *= (double)per_host / (double)cores;
}
