/*
 * rt_topo.h - the topology the configuration names (runtime base): TPU_DIST_TOPOLOGY, else the TPU
 * runtime's variables (TPU_ACCELERATOR_TYPE, TPU_TOPOLOGY, ...), else flat; with
 * MEGASCALE_NUM_SLICES=S > 1 that is one slice, and the topology is S of them joined by DCN (unless
 * TPU_DIST_TOPOLOGY names its slices, which must then be S). The one place that order is decided:
 * communicators (src/core) and tools/tpudist-info both ask here. Also the cost model's DCN figures
 * the configuration sets.
 */
#ifndef TD_RT_TOPO_H_
#define TD_RT_TOPO_H_

#include "cost.h"
#include "rt_config.h"
#include "torus.h"

/* The configured topology for nranks ranks (nranks <= 0: as many as the topology names; flat then
 * needs nranks). *source says which setting it came from ("TPU_DIST_TOPOLOGY", "TPU_* variables"
 * or "flat"). */
tpudistResult_t configTopology(const tdConfig *cfg, int nranks, tdTopo *out, const char **source,
                               char *err);

/* The cost of a copy between NUMA nodes against one within a node, in percent, that selection
 * uses: TPU_DIST_NUMA_FACTOR_PCT where it is set, else host_pct (> 0: from the host's NUMA
 * distances, hostNumaFactorPct), else TD_COST_NUMA_FACTOR. *source (if not NULL) says which:
 * "TPU_DIST_NUMA_FACTOR_PCT", "hwloc distances" or "default". */
int configNumaFactorPct(const tdConfig *cfg, int host_pct, const char **source);

/* The cost model selection uses on topology t: costModelDefault, with TPU_DIST_DCN_GBPS,
 * TPU_DIST_DCN_LATENCY_US and TPU_DIST_DCN_FLOWS applied where they are set, and the NUMA factor
 * of configNumaFactorPct (host_pct: the host's, 0 for none). */
void configCostModel(const tdConfig *cfg, const tdTopo *t, int host_pct, tdCostModel *m);

#endif /* TD_RT_TOPO_H_ */
