/*
 * topo_slices.c - the levels above one slice's torus (torus.h): slices joined by DCN (the outer
 * level; on a torus an extra last axis that does not wrap, so ranks are slice-major and every
 * plan over the torus stays valid) and, on a flat topology, ranks per host; which ranks DCN joins.
 */
#include "topo_priv.h"

tpudistResult_t topoSetSlices(tdTopo *t, int slices, char *err) {
  if (!t) return tdErr(err, tpudistInvalidArgument, "NULL topology");
  if (slices < 1) return tdErr(err, tpudistInvalidArgument, "slices=%d: at least 1", slices);
  if (slices == 1) return tpudistSuccess;
  if (topoNumSlices(t) > 1) return tdErr(err, tpudistInvalidArgument, "slices given twice");
  if ((long long)t->nranks * slices > TD_TOPO_MAX_RANKS)
    return tdErr(err, tpudistInvalidArgument, "%d slices of %d ranks: more than %d ranks", slices,
                 t->nranks, TD_TOPO_MAX_RANKS);
  if (t->ndims > 0) {
    if (t->twisted)
      return tdErr(err, tpudistInvalidArgument, "slices of a twisted torus are not supported");
    if (t->ndims >= TD_MAX_DIMS)
      return tdErr(err, tpudistInvalidArgument,
                   "a slice of %d axes leaves no axis for the slice level (at most %d)", t->ndims,
                   TD_MAX_DIMS - 1);
    int a = t->ndims++;
    t->dims[a] = slices;
    t->wrap[a] = 0;
    if (t->host_bounds[0] > 0) t->host_bounds[a] = 1;
  }
  t->nranks *= slices;
  t->slices = slices;
  return tpudistSuccess;
}

int topoNumSlices(const tdTopo *t) {
  return t->slices > 1 ? t->slices : 1;
}

int topoSliceOf(const tdTopo *t, int rank) {
  if (rank < 0 || rank >= t->nranks) return -1;
  return rank / (t->nranks / topoNumSlices(t));
}

int topoHasDcn(const tdTopo *t) {
  return topoNumSlices(t) > 1 || (t->ndims == 0 && t->host_bounds[0] > 0 && topoNumHosts(t) > 1);
}

int topoDcnDomain(const tdTopo *t, int rank) {
  if (rank < 0 || rank >= t->nranks) return -1;
  if (t->ndims == 0 && t->host_bounds[0] > 0) return topoHostOf(t, rank);
  return topoSliceOf(t, rank);
}

tpudistResult_t topoSetFlatHosts(tdTopo *t, int per_host, char *err) {
  if (!t) return tdErr(err, tpudistInvalidArgument, "NULL topology");
  if (t->ndims != 0)
    return tdErr(err, tpudistInvalidArgument, "ranks per host apply to a flat topology");
  int slice = t->nranks / topoNumSlices(t);
  if (per_host < 0 || (per_host > 0 && (slice == 0 || slice % per_host != 0)))
    return tdErr(err, tpudistInvalidArgument, "%d ranks per host do not divide %d ranks%s",
                 per_host, slice, topoNumSlices(t) > 1 ? " per slice" : "");
  t->host_bounds[0] = per_host;
  return tpudistSuccess;
}

tpudistResult_t topoSetFlatNuma(tdTopo *t, int per_numa, char *err) {
  if (!t) return tdErr(err, tpudistInvalidArgument, "NULL topology");
  if (t->ndims != 0)
    return tdErr(err, tpudistInvalidArgument, "ranks per NUMA node apply to a flat topology");
  int host = t->host_bounds[0] > 0 ? t->host_bounds[0] : t->nranks / topoNumSlices(t);
  if (per_numa < 0 || (per_numa > 0 && (host == 0 || host % per_numa != 0)))
    return tdErr(err, tpudistInvalidArgument,
                 "%d ranks per NUMA node do not divide %d ranks per %s", per_numa, host,
                 t->host_bounds[0] > 0 ? "host" : "slice");
  t->numa = per_numa;
  return tpudistSuccess;
}

int topoNumNuma(const tdTopo *t) {
  return t->ndims == 0 && t->numa > 0 ? t->nranks / t->numa : 1;
}

int topoNumaOf(const tdTopo *t, int rank) {
  if (rank < 0 || rank >= t->nranks) return -1;
  return t->ndims == 0 && t->numa > 0 ? rank / t->numa : 0;
}
