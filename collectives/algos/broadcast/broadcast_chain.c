/*
 * broadcast_chain.c - pipelined chain broadcast.
 *
 * Algorithm: the ranks form a chain root, root+1, ..., root+n-1 (mod n). The message is split
 * into k chunks (k = 2(n-1) clamped to [8, 256] for three or more ranks, else 1: enough
 * chunks that filling the chain costs little next to streaming the message); the root sends chunk c
 * to the next rank (straight from INPUT; out of place it also copies INPUT to its OUTPUT), and
 * every other rank receives chunk c into OUTPUT and, unless last, forwards it (recv + send of the
 * same chunk, fused into recv_copy_send by schedFuse). Receives of later chunks may be posted while
 * earlier chunks are still being forwarded, so the chain pipelines.
 *
 * Cost: (n-1 + k-1) chunk steps: (n+k-2)(alpha + (M/k) beta), M = count * elem_size; the
 * executor further pipelines each chunk in wire-sized pieces.
 *
 * Preconditions: any nranks >= 1, any root in [0, n), any count, in place (INPUT = OUTPUT) or out
 * of place; INPUT is read on the root only. No reduction, no scratch. One stream.
 */
#include "broadcast.h"

tpudistResult_t genBroadcastChain(const tdCollArgs *a, tdSched *s, char *err) {
  int n = a->nranks, r = a->rank, root = a->root;
  (void)err;
  uint32_t k = algoChainChunks(n);
  schedSetLayout(s, TD_BUF_INPUT, 1, k);
  schedSetLayout(s, TD_BUF_OUTPUT, 1, k);
  schedSetLayout(s, TD_BUF_SCRATCH, 0, 1);
  int pos = (r - root + n) % n, next = (r + 1) % n, prev = (r - 1 + n) % n;
  if (pos == 0) {
    if (!a->inplace)
      TD_CHECK(
          schedPush(s, schedCopy(schedRef(TD_BUF_INPUT, 0, k), schedRef(TD_BUF_OUTPUT, 0, k))));
    for (uint32_t c = 0; n > 1 && c < k; c++)
      TD_CHECK(schedPush(s, schedSend(next, schedRef(TD_BUF_INPUT, c, 1))));
    return tpudistSuccess;
  }
  for (uint32_t c = 0; c < k; c++) {
    TD_CHECK(schedPush(s, schedRecv(prev, schedRef(TD_BUF_OUTPUT, c, 1))));
    if (pos < n - 1) TD_CHECK(schedPush(s, schedSend(next, schedRef(TD_BUF_OUTPUT, c, 1))));
  }
  return tpudistSuccess;
}
