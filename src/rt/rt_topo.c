/*
 * rt_topo.c - the topology the configuration names (rt_topo.h).
 */
#include "rt_topo.h"

tpudistResult_t configTopology(const tdConfig *cfg, int nranks, tdTopo *out, const char **source,
                               char *err) {
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
