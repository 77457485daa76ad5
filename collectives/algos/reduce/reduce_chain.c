/*
 * reduce_chain.c - pipelined chain reduce.
 *
 * Algorithm: positions q = (rank - root) mod n; partial sums flow from q = n-1 down to the root
 * (q = 0), each rank passing to rank-1. The message is split into k chunks (k = 2(n-1) clamped to
 * [8, 256] for three or more ranks, else 1). The last rank sends its INPUT chunks; a middle rank
 * receives chunk c, reduces it with its INPUT chunk into SCRATCH (dst = src (+) in) and forwards it
 * (fused into recv_reduce_send by schedFuse); the root reduces into OUTPUT. Per element the order
 * is fixed: x_root (+) (x_1 (+) ( ... (x_{n-2} (+) x_{n-1}))) by position.
 *
 * Cost: (n-1 + k-1) chunk steps: (n+k-2)(alpha + (M/k)(beta + gamma)), M = count * elem_size.
 *
 * Preconditions: any nranks >= 1, any root in [0, n), any count, in place (INPUT = OUTPUT) or out
 * of place. The result is written only to the root's OUTPUT; other ranks never touch OUTPUT
 * (it may be NULL there) and use one SCRATCH block. One stream.
 */
#include "reduce.h"

tpudistResult_t genReduceChain(const tdCollArgs *a, tdSched *s, char *err) {
  int n = a->nranks, r = a->rank, root = a->root;
  (void)err;
  uint32_t k = algoChainChunks(n);
  int q = (r - root + n) % n, up = (r - 1 + n) % n, down = (r + 1) % n;
  schedSetLayout(s, TD_BUF_INPUT, 1, k);
  schedSetLayout(s, TD_BUF_OUTPUT, 1, k);
  schedSetLayout(s, TD_BUF_SCRATCH, q > 0 && q < n - 1 ? 1 : 0, k);
  tdBufKind acc = q == 0 ? TD_BUF_OUTPUT : TD_BUF_SCRATCH;
  for (uint32_t c = 0; c < k; c++) {
    tdBufRef in = schedRef(TD_BUF_INPUT, c, 1), part = schedRef(acc, c, 1);
    if (q == n - 1) {
      TD_CHECK(schedPush(s, schedSend(up, in)));
      continue;
    }
    TD_CHECK(schedPush(s, schedRecvReduce(down, in, part)));
    if (q > 0) TD_CHECK(schedPush(s, schedSend(up, part)));
  }
  return tpudistSuccess;
}
