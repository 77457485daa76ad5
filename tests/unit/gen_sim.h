/*
 * gen_sim.h - a concrete-execution model of a set of schedules, used to test generators: runs
 * every rank's schedule on tagged element values under rendezvous sends (a send completes only
 * when its receive is posted), the IR's issue rules (in order per stream, a step waits for
 * conflicting earlier steps of its stream and for its deps) and the NCCL in-place aliasing, then
 * checks each rank's OUTPUT against the collective's definition and that INPUT is unchanged.
 */
#ifndef TD_GEN_SIM_H_
#define TD_GEN_SIM_H_

#include "algos.h"

/* Generates all ranks' schedules for args (rank ignored) with algo and runs them. vcounts: the
 * all-to-all-v matrix (row = sender); the model lays blocks out with gaps (INPUT) and in reverse
 * order (OUTPUT). At most 64 ranks. Returns 0 if every check
 * passes, else writes a reason into msg (TD_ERRLEN) and returns -1. */
int simCheck(const tdCollArgs *args, const char *algo, char *msg);

#endif /* TD_GEN_SIM_H_ */
