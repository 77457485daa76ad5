/*
 * drive.h - the by-name drivers: generate every rank's schedule of a collective with a named
 * algorithm of the table (algos.h) and hand the set to the validator (validate.h) or the cost
 * model (cost.h). They sit above all three, so that neither the validator nor the cost model
 * knows the generators.
 */
#ifndef TD_DRIVE_H_
#define TD_DRIVE_H_

#include "cost.h"
#include "validate.h"

/* Convenience for generator tests: generates every rank's schedule for args (args->rank is
 * ignored) with algorithm algo, optionally runs schedFuse on each, and validates the set at
 * args->count (or args->v_counts for alltoallv, packed displacements). Returns the generator's
 * tpudistNotSupported as is (err says why). */
tpudistResult_t validateAlgo(const tdCollArgs *args, const char *algo, int fuse, char *err);

/* Generates every rank's schedule for args (args->rank ignored) with algorithm algo and prepares
 * the cost plan, applying the fusion pass as the runtime does (to plans of up to 2048 steps per
 * rank: the pass is quadratic in the worst case). For alltoallv args->v_counts is required;
 * displacements are taken as packed. */
tpudistResult_t costPlanGenerate(const tdCollArgs *args, const char *algo, tdCostPlan **out,
                                 char *err);
/* costPlanGenerate + costPlanEval + costPlanFree. */
tpudistResult_t costEstimate(const tdCollArgs *args, const char *algo, const tdCostModel *m,
                             double *seconds, char *err);

#endif /* TD_DRIVE_H_ */
