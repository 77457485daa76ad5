/*
 * alltoall_pairwise.c - all-to-all and all-to-all-v by pairwise exchange.
 *
 * Algorithm: step 0 copies the block to self (INPUT block r -> OUTPUT block r); step i = 1..n-1
 * sends INPUT block (r+i) mod n to rank (r+i) mod n and receives OUTPUT block (r-i) mod n from
 * rank (r-i) mod n. Every rank talks to one peer in each direction per step, in the same order;
 * steps alternate between two streams and each waits, through explicit dependencies, for the
 * previous one to complete, so at most one exchange per rank is in flight. The v form uses the
 * explicit layouts of docs/schedule-ir.md (INPUT block j at sdispls[j] with counts[r][j] elements,
 * OUTPUT block j at rdispls[j] with counts[j][r]) and leaves out zero-element messages (sender and
 * receiver both read the same matrix entry); the local form (tdCollArgs.v_local: only this rank's
 * row and column known) keeps every message, empty ones included.
 *
 * Cost: n-1 steps of one block each way: (n-1)(alpha + m beta), m = count * elem_size
 * (v form: the largest block per step).
 *
 * Preconditions: any nranks >= 1, any count; no in-place form (refused: tpudistNotSupported). v
 * form: args->v_counts (n x n), or v_local with v_sendcounts and v_recvcounts, and v_sdispls and
 * v_rdispls (this rank's) must be set; the schedule is bound to those counts (count = 0; in the
 * local form only through its layouts: its steps are the same for all counts). No
 * reduction, no scratch.
 */
#include "alltoall.h"
#include "alltoallv_layout.h"

/* Steps of the exchange alternate between streams 0 and 1 (step i on stream i % 2; both ends of a
 * message use the same i). The first step appended for distance i depends on the last send and
 * the last receive of the other stream (those of distance i-1), so one exchange completes before
 * the next begins, as in a pairwise exchange, while its send and receive still overlap. */
typedef struct {
  tdSched *s;
  int64_t last[2][2]; /* [stream][0 send, 1 recv]: index of the last such step, or -1 */
} Pacer;

static tpudistResult_t paced(Pacer *p, uint32_t q, int first, tdStep st, int kind) {
  uint32_t o = 1 - q;
  if (first)
    for (int k = 0; k < 2; k++)
      if (p->last[o][k] >= 0)
        st.deps[k].stream = (uint16_t)o, st.deps[k].step = (uint32_t)p->last[o][k];
  uint32_t idx;
  TD_CHECK(schedAppend(p->s, q, &st, &idx));
  p->last[q][kind] = idx;
  return tpudistSuccess;
}

/* The exchange itself; v = NULL for the uniform form (every message kept), else the all-to-all-v
 * arguments. */
static tpudistResult_t pairwise(tdSched *s, int n, int r, const tdCollArgs *v) {
  Pacer p = {s, {{-1, -1}, {-1, -1}}};
  if (!v || alltoallvKeep(v, alltoallvSendCount(v, r))) {
    tdStep cp =
        schedCopy(schedRef(TD_BUF_INPUT, (uint32_t)r, 1), schedRef(TD_BUF_OUTPUT, (uint32_t)r, 1));
    TD_CHECK(schedAppend(s, 0, &cp, NULL));
  }
  for (int i = 1; i < n; i++) {
    int to = (r + i) % n, from = (r - i + n) % n, first = 1;
    uint32_t q = (uint32_t)(i % 2);
    if (!v || alltoallvKeep(v, alltoallvSendCount(v, to))) {
      TD_CHECK(paced(&p, q, first, schedSend(to, schedRef(TD_BUF_INPUT, (uint32_t)to, 1)), 0));
      first = 0;
    }
    if (!v || alltoallvKeep(v, alltoallvRecvCount(v, from)))
      TD_CHECK(paced(&p, q, first, schedRecv(from, schedRef(TD_BUF_OUTPUT, (uint32_t)from, 1)), 1));
  }
  return tpudistSuccess;
}

tpudistResult_t genAlltoallPairwise(const tdCollArgs *a, tdSched *s, char *err) {
  (void)err;
  alltoallLayouts(s, a->nranks);
  return pairwise(s, a->nranks, a->rank, NULL);
}

tpudistResult_t genAlltoallvPairwise(const tdCollArgs *a, tdSched *s, char *err) {
  TD_CHECK(alltoallvLayouts(a, s, err));
  return pairwise(s, a->nranks, a->rank, a);
}
