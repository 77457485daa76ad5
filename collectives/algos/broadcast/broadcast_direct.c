/*
 * broadcast_direct.c - one-shot broadcast for ranks that share memory.
 *
 * Algorithm: the root sends its INPUT to every other rank at once (out of place it also copies
 * INPUT to its OUTPUT), each on the stream of its distance from the root (direct.h); every other
 * rank receives it into OUTPUT. One synchronisation step instead of a chain's n+k-2 or a tree's
 * ~lg n + k.
 *
 * Cost: alpha + (n-1) M beta on a sender that pushes every copy; on shared memory the receivers'
 * single-copy reads run concurrently, so it suits small and medium messages. M = count *
 * elem_size.
 *
 * Preconditions: one host (directOneHost: no torus, no DCN), any nranks >= 1, any root, any count,
 * in place (INPUT = OUTPUT) or out of place; INPUT is read on the root only. No reduction, no
 * scratch. Streams: min(n-1, 8).
 */
#include "broadcast.h"
#include "direct.h"

tpudistResult_t genBroadcastDirect(const tdCollArgs *a, tdSched *s, char *err) {
  TD_CHECK(directOneHost(a, err));
  int n = a->nranks, r = a->rank, root = a->root;
  schedSetLayout(s, TD_BUF_INPUT, 1, 1);
  schedSetLayout(s, TD_BUF_OUTPUT, 1, 1);
  schedSetLayout(s, TD_BUF_SCRATCH, 0, 1);
  tdBufRef in = schedRef(TD_BUF_INPUT, 0, 1), out = schedRef(TD_BUF_OUTPUT, 0, 1);
  if (r != root) {
    tdStep st = schedRecv(root, out);
    return schedAppend(s, directStream(n, (r - root + n) % n), &st, NULL);
  }
  if (!a->inplace) TD_CHECK(schedPush(s, schedCopy(in, out)));
  for (int i = 1; i < n; i++) {
    tdStep st = schedSend((root + i) % n, in);
    TD_CHECK(schedAppend(s, directStream(n, i), &st, NULL));
  }
  return tpudistSuccess;
}
