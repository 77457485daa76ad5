/*
 * allgather_recdbl.c - all-gather by recursive doubling (Bruck-style dissemination when the rank
 * count is not a power of two).
 *
 * Algorithm, n a power of two: in step j (d = 2^j) rank r exchanges with r XOR d the d blocks its
 * aligned group [r & ~(d-1), +d) already holds; the partner's group arrives in OUTPUT directly, so
 * after log2(n) steps OUTPUT is complete. Held blocks are always contiguous in OUTPUT.
 * Any other n (dissemination, Bruck et al.): in step j (d = 2^j) rank r holds blocks
 * [r, r+d) mod n; it sends the first s = min(d, n-d) of them to rank r-d and receives blocks
 * [r+d, r+d+s) mod n from rank r+d, so it then holds [r, r+min(2d, n)). Blocks are written at
 * their final place in OUTPUT (no final rotation); a range that wraps past block n-1 travels as
 * two messages, split identically by sender and receiver (both use absolute block numbers).
 * Out of place, OUTPUT block r is first copied from INPUT (the first send reads INPUT directly).
 *
 * Cost: ceil(log2 n) steps (+1 message when a range wraps); step j moves min(2^j, n-2^j) blocks:
 * ceil(log2 n) alpha + (n-1) m beta, m = sendcount * elem_size. Latency-optimal.
 *
 * Preconditions: any nranks >= 1, any count, in place (INPUT = OUTPUT block rank) or out of
 * place. No reduction, no scratch. One stream.
 */
#include "allgather.h"

/* nb blocks of OUTPUT from block b. */
static tdBufRef outRef(uint32_t b, uint32_t nb) {
  return schedRef(TD_BUF_OUTPUT, b, nb);
}

static tpudistResult_t genPow2(const tdCollArgs *a, tdSched *s) {
  int n = a->nranks, r = a->rank;
  for (int d = 1; d < n; d <<= 1) {
    int p = r ^ d;
    uint32_t mine = (uint32_t)(r & ~(d - 1)), theirs = (uint32_t)(p & ~(d - 1));
    tdBufRef src = d == 1 ? schedRef(TD_BUF_INPUT, 0, 1) : outRef(mine, (uint32_t)d);
    TD_CHECK(schedPush(s, schedSend(p, src)));
    TD_CHECK(schedPush(s, schedRecv(p, outRef(theirs, (uint32_t)d))));
  }
  return tpudistSuccess;
}

/* Blocks [first, first+cnt) mod n as at most two contiguous refs: sends or receives them. */
static tpudistResult_t moveWrapped(tdSched *s, int send, int peer, int n, int first, int cnt,
                                   int from_input) {
  int runs[2][2], nr = 0;
  if (first + cnt <= n) {
    runs[nr][0] = first, runs[nr][1] = cnt, nr++;
  } else {
    runs[nr][0] = first, runs[nr][1] = n - first, nr++;
    runs[nr][0] = 0, runs[nr][1] = first + cnt - n, nr++;
  }
  for (int i = 0; i < nr; i++) {
    tdBufRef ref = outRef((uint32_t)runs[i][0], (uint32_t)runs[i][1]);
    if (from_input) ref = schedRef(TD_BUF_INPUT, 0, 1); /* the one own block, cnt == 1 */
    TD_CHECK(schedPush(s, send ? schedSend(peer, ref) : schedRecv(peer, ref)));
  }
  return tpudistSuccess;
}

static tpudistResult_t genBruck(const tdCollArgs *a, tdSched *s) {
  int n = a->nranks, r = a->rank;
  for (int d = 1; d < n; d <<= 1) {
    int cnt = TD_MIN(d, n - d);
    int to = (r - d + n) % n, from = (r + d) % n;
    TD_CHECK(moveWrapped(s, 1, to, n, r, cnt, d == 1));
    TD_CHECK(moveWrapped(s, 0, from, n, from, cnt, 0));
  }
  return tpudistSuccess;
}

tpudistResult_t genAllgatherRecdbl(const tdCollArgs *a, tdSched *s, char *err) {
  int n = a->nranks;
  (void)err;
  TD_CHECK(allgatherOwnBlock(a, s));
  return (n & (n - 1)) == 0 ? genPow2(a, s) : genBruck(a, s);
}
