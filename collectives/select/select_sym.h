/*
 * select_sym.h - private to the selection (select.c): costing a candidate from rank 0's plan when
 * its plans are images of each other under a symmetry of the rank set.
 */
#ifndef TD_SELECT_SYM_H_
#define TD_SELECT_SYM_H_

#include "cost.h"
#include "sched_ir.h"

/* A symmetric cost plan (costPlanCreateSym) from rank 0's schedule of algo for base's collective
 * on nranks ranks of topo, or *p = NULL when algo's plans have no symmetry. exact: only
 * translations of a wrapped torus (the others cost links approximately). The first symmetry they
 * have is taken. Errors: rank 0's refusal, in err. */
tpudistResult_t selectSymPlan(const tdTopo *topo, int nranks, const tdCollArgs *base,
                              const char *algo, int exact, tdCostPlan **p, char *err);

#endif /* TD_SELECT_SYM_H_ */
