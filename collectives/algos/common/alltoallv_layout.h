/*
 * alltoallv_layout.h - the explicit INPUT/OUTPUT layouts of an all-to-all-v schedule (see
 * docs/schedule-ir.md, "Explicit layouts"), shared by the all-to-all-v generators: INPUT block j
 * is what this rank sends to j (sdispls[j], counts[rank][j]); OUTPUT block j is what it receives
 * from j (rdispls[j], counts[j][rank]). One chunk per block; no scratch. The counts come from the
 * whole matrix (v_counts) or, in the local form (v_local), from this rank's row (v_sendcounts) and
 * column (v_recvcounts); alltoallvKeep says which messages a generator emits.
 * Private to alltoall_pairwise.c and alltoall_direct.c.
 */
#ifndef TD_ALLTOALLV_LAYOUT_H_
#define TD_ALLTOALLV_LAYOUT_H_

#include <stdlib.h>

#include "generator.h"

/* Elements this rank (a->rank) sends to rank j / receives from rank j. */
static inline uint64_t alltoallvSendCount(const tdCollArgs *a, int j) {
  return a->v_local ? a->v_sendcounts[j] : a->v_counts[(size_t)a->rank * a->nranks + j];
}
static inline uint64_t alltoallvRecvCount(const tdCollArgs *a, int j) {
  return a->v_local ? a->v_recvcounts[j] : a->v_counts[(size_t)j * a->nranks + a->rank];
}

/* Does the plan carry a message (or the self COPY) of count elements? Whole matrix: only non-empty
 * ones (both ends read the same entry). Local form: every one, empty included (the ends may
 * disagree; an empty message is what lets the receiver see it), so that its steps do not depend
 * on the counts at all, only its layouts do. */
static inline int alltoallvKeep(const tdCollArgs *a, uint64_t count) {
  return a->v_local || count != 0;
}

/* The uniform all-to-all layouts: block j of INPUT goes to rank j, block j of OUTPUT comes from j.
 */
static inline void alltoallLayouts(tdSched *s, int n) {
  schedSetLayout(s, TD_BUF_INPUT, (uint32_t)n, 1);
  schedSetLayout(s, TD_BUF_OUTPUT, (uint32_t)n, 1);
  schedSetLayout(s, TD_BUF_SCRATCH, 0, 1);
}

/* The explicit all-to-all-v layouts (the counts and displacements are there: algoRun checked). */
static inline tpudistResult_t alltoallvLayouts(const tdCollArgs *a, tdSched *s, char *err) {
  int n = a->nranks;
  uint64_t *c = calloc((size_t)n, sizeof(uint64_t));
  if (!c) return tdErr(err, tpudistNoMemory, "alltoallv: out of memory");
  for (int j = 0; j < n; j++) c[j] = alltoallvSendCount(a, j);
  tpudistResult_t res = schedSetLayoutExplicit(s, TD_BUF_INPUT, (uint32_t)n, 1, a->v_sdispls, c);
  for (int j = 0; j < n; j++) c[j] = alltoallvRecvCount(a, j);
  if (res == tpudistSuccess)
    res = schedSetLayoutExplicit(s, TD_BUF_OUTPUT, (uint32_t)n, 1, a->v_rdispls, c);
  free(c);
  if (res != tpudistSuccess) return tdErr(err, res, "alltoallv: out of memory");
  schedSetLayout(s, TD_BUF_SCRATCH, 0, 1);
  return tpudistSuccess;
}

#endif /* TD_ALLTOALLV_LAYOUT_H_ */
