/*
 * validate.h - the schedule validator: proves a full set of per-rank schedules (all ranks of one
 * collective) correct for one block count, by three checks (docs/schedule-ir.md):
 *
 *  1. Structure and matching: metadata agree across ranks, ops/peers/deps are in range, every ref
 *     the op uses binds to a contiguous range inside its buffer, and every message (send, or the
 *     forwarding half of a fused step) has exactly one receive with the same key (stream, ordered
 *     pair, ordinal) and the same element count.
 *  2. Progress: all ranks are executed together under the issue rules (in-order issue per stream,
 *     a step waits for earlier incomplete steps of its stream that it conflicts with by the
 *     read/write sets of tdStepSemTable, and for its cross-stream deps; sends are rendezvous: a
 *     message completes when its sender and receiver are both issued and, for a fused sender,
 *     its own receive has completed). If nothing can progress the wait-for cycle is reported.
 *     Two steps of different streams in flight together that write/write or read/write
 *     overlapping elements are a data race (optionally also searched in randomised orders).
 *  3. Data: symbolic execution tracks, for every element of every buffer, the reduction tree of
 *     contributions it holds (its set of ranks) and the logical element index; reductions must
 *     combine equal indices and disjoint sets (a contribution added twice is an error); at the
 *     end every element of the caller's buffers must hold exactly the collective's result, or its
 *     original contents where the collective defines no result (with the in-place aliasing of the
 *     spec applied); all-reduce ranks must reduce in the same order. The caller's send buffer is
 *     read-only unless it aliases the output.
 *
 * Pure: no logging, no environment. Memory is proportional to the number of steps and runs of
 * equal-valued elements, not to the count, so counts may be large; sets are dynamic bitsets.
 */
#ifndef TD_VALIDATE_H_
#define TD_VALIDATE_H_

#include "sched_ir.h"

typedef struct {
  /* All-to-all-v only: the nranks x nranks count matrix (elements from s to r at
     v_counts[s * nranks + r]); required for alltoallv. Displacements, also nranks x nranks:
     v_sdispls[s * nranks + r] = where rank s's block for r starts in its send buffer,
     v_rdispls[r * nranks + s] = where rank r's block from s starts in its receive buffer; NULL
     means packed in rank order (prefix sums of the row / column). */
  const uint64_t *v_counts;
  const uint64_t *v_sdispls;
  const uint64_t *v_rdispls;
  /* Extra executions in randomised completion orders (each round a random subset of what could
     complete does), searching for data races that the lock-step order hides; seed picks them. */
  uint32_t random_runs;
  uint64_t seed;
  /* Optional: a longer report than err's TD_ERRLEN (e.g. a whole deadlock cycle). */
  char *report;
  size_t report_len;
  /* Filled on success (may be left NULL): rounds of the lock-step execution (a rough depth) and
     messages matched. */
  uint64_t *out_rounds;
  uint64_t *out_messages;
} tdValidateOpts;

/* Validates scheds[0..nranks-1] (scheds[r] is rank r's schedule) bound with block count `count`
 * (ignored for alltoallv: use validateSchedulesOpts). Returns tpudistSuccess, or
 * tpudistInternalError with "rank R stream S step I (op ...): what is wrong" in err,
 * tpudistInvalidArgument for bad arguments, tpudistNoMemory. */
tpudistResult_t validateSchedules(tdSched *const *scheds, int nranks, uint64_t count, char *err);
tpudistResult_t validateSchedulesOpts(tdSched *const *scheds, int nranks, uint64_t count,
                                      const tdValidateOpts *opts, char *err);

#endif /* TD_VALIDATE_H_ */
