/*
 * alltoall_direct.c - all-to-all and all-to-all-v with every message posted at once.
 *
 * Algorithm: the block to self is a COPY; the exchange with peer distance i = 1..n-1 (send INPUT
 * block (r+i) mod n to rank r+i, receive OUTPUT block (r-i) mod n from rank r-i) goes on stream
 * (i-1) mod S, S = min(n-1, 8). No step conflicts with another, so all sends and receives are in
 * flight together, spread over S streams (direct.h) that the executor progresses concurrently; both
 * ends of a message use the same distance i, hence the same stream. The v form uses the explicit
 * layouts of docs/schedule-ir.md and leaves out zero-element messages, except in the local form
 * (tdCollArgs.v_local: only this rank's row and column known), which keeps every message.
 *
 * Cost: one round of n-1 concurrent messages each way: alpha + (n-1) m beta at best, bounded by
 * injection bandwidth and contention; m = count * elem_size.
 *
 * Preconditions: any nranks >= 1, any count; no in-place form (refused:
 * tpudistNotSupported). v form: args->v_counts (n x n), or v_local with v_sendcounts and
 * v_recvcounts, and v_sdispls and v_rdispls must be set; the schedule is bound to those counts
 * (in the local form only through its layouts: its steps are the same for all counts). A self
 * block whose send and receive counts differ is left to the caller (COPY of unequal sizes fails
 * at binding). No reduction, no scratch.
 */
#include "alltoall.h"
#include "alltoallv_layout.h"
#include "direct.h"

static tpudistResult_t add(tdSched *s, uint32_t stream, tdStep st) {
  return schedAppend(s, stream, &st, NULL);
}

/* v = NULL for the uniform form (every message kept); else the all-to-all-v arguments. */
static tpudistResult_t direct(tdSched *s, int n, int r, const tdCollArgs *v) {
  if (!v || alltoallvKeep(v, alltoallvSendCount(v, r)))
    TD_CHECK(add(s, 0,
                 schedCopy(schedRef(TD_BUF_INPUT, (uint32_t)r, 1),
                           schedRef(TD_BUF_OUTPUT, (uint32_t)r, 1))));
  for (int i = 1; i < n; i++) {
    int to = (r + i) % n, from = (r - i + n) % n;
    uint32_t st = directStream(n, i);
    if (!v || alltoallvKeep(v, alltoallvSendCount(v, to)))
      TD_CHECK(add(s, st, schedSend(to, schedRef(TD_BUF_INPUT, (uint32_t)to, 1))));
    if (!v || alltoallvKeep(v, alltoallvRecvCount(v, from)))
      TD_CHECK(add(s, st, schedRecv(from, schedRef(TD_BUF_OUTPUT, (uint32_t)from, 1))));
  }
  return tpudistSuccess;
}

tpudistResult_t genAlltoallDirect(const tdCollArgs *a, tdSched *s, char *err) {
  (void)err;
  alltoallLayouts(s, a->nranks);
  return direct(s, a->nranks, a->rank, NULL);
}

tpudistResult_t genAlltoallvDirect(const tdCollArgs *a, tdSched *s, char *err) {
  TD_CHECK(alltoallvLayouts(a, s, err));
  return direct(s, a->nranks, a->rank, a);
}
