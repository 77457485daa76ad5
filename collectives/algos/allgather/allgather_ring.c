/*
 * allgather_ring.c - all-gather over a unidirectional ring.
 *
 * Algorithm: rank r places its own block in OUTPUT block r (a COPY out of place; nothing in place,
 * where INPUT already is OUTPUT block r), then for i = 0 .. n-2 sends OUTPUT block (r-i) mod n to
 * rank r+1 and receives OUTPUT block (r-i-1) mod n from rank r-1. Each block travels n-1 hops; the
 * send of step i+1 reads what the receive of step i wrote, so it waits for it (stream ordering),
 * while the receive of step i+1 may be posted as soon as the send of step i is.
 * One stream; the first send reads INPUT directly so it does not wait for the local copy.
 *
 * Cost: n-1 steps, each moving one block (sendcount elements) per rank: (n-1)(alpha + m*beta),
 * m = sendcount * elem_size; bandwidth-optimal.
 *
 * Preconditions: any nranks >= 1, any count (uniform layouts, count binds at execution time),
 * in place (INPUT = OUTPUT block rank) or out of place. No reduction, no scratch.
 */
#include "allgather.h"

tpudistResult_t genAllgatherRing(const tdCollArgs *a, tdSched *s, char *err) {
  int n = a->nranks, r = a->rank;
  (void)err;
  TD_CHECK(allgatherOwnBlock(a, s));
  int right = (r + 1) % n, left = (r - 1 + n) % n;
  for (int i = 0; i < n - 1; i++) {
    int sb = (r - i + n) % n, rb = (r - i - 1 + n) % n;
    tdBufRef src = i == 0 ? schedRef(TD_BUF_INPUT, 0, 1) : schedRef(TD_BUF_OUTPUT, (uint32_t)sb, 1);
    TD_CHECK(schedPush(s, schedSend(right, src)));
    TD_CHECK(schedPush(s, schedRecv(left, schedRef(TD_BUF_OUTPUT, (uint32_t)rb, 1))));
  }
  return tpudistSuccess;
}
