/*
 * sim_moe.h - tpudist-sim --moe (sim_moe.c): the dispatch and combine all-to-all-v of one
 * mixture-of-experts layer on the simulated slice, per algorithm.
 */
#ifndef TD_SIM_MOE_H_
#define TD_SIM_MOE_H_

#include "sim.h"

/* Prints a table (and appends CSV rows to csv_path unless NULL: chips, placement, skew, algo,
 * dispatch_s, combine_s, bound_s, bisection_s, selected algo, slices, DCN bound_s, settle) for the
 * comma-separated algorithms (NULL: pairwise,direct,torus) and cases ("place:skew",
 * comma-separated; NULL: all four) with `tokens` tokens per chip. Returns 0, or -1 if one failed.
 */
int simMoe(const simConfig *cfg, const char *algos, const char *cases, uint64_t tokens,
           const char *csv_path);

#endif /* TD_SIM_MOE_H_ */
