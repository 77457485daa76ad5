/*
 * broadcast_hier.c - hierarchical broadcast (genBroadcastHier) for a topology with an outer level
 * (hier.h: G groups, slices or hosts, of L consecutive ranks; rank = g*L + l).
 *
 * Algorithm: the root (g0, l0) and the ranks with its local index l0 in the other groups are the
 * groups' leaders. A binary tree over the G leaders rooted at g0 (node (g - g0) mod G, children
 * 2v+1 and 2v+2) carries the message over DCN; inside each group a binary tree over the L ranks
 * rooted at the leader carries it on. The message is split into TD_HIER_CHUNKS chunks and every
 * rank forwards chunk c as soon as it has it (cross-group children first), so the two levels
 * pipeline chunk by chunk. Each group receives the message once over DCN.
 *
 * Cost (S bytes, k chunks): depth D = floor(lg G) + floor(lg L); (D + k - 1) chunk steps; per
 * group link S in and at most 2 S out (a leader with two children groups); latency about
 * (lg G) DCN + (lg L) local hops per chunk.
 * Preconditions: an outer level (else tpudistNotSupported: the tree is the same plan), any root,
 * any count, in place (INPUT = OUTPUT) or out of place; INPUT is read on the root only. No
 * reduction, no scratch. One stream.
 */
#include "broadcast.h"
#include "hier.h"

tpudistResult_t genBroadcastHier(const tdCollArgs *a, tdSched *s, char *err) {
  tdHier h;
  TD_CHECK(hierPlace(a, &h, err));
  uint32_t k = TD_HIER_CHUNKS;
  schedSetLayout(s, TD_BUF_INPUT, 1, k);
  schedSetLayout(s, TD_BUF_OUTPUT, 1, k);
  schedSetLayout(s, TD_BUF_SCRATCH, 0, 1);
  int parent, kids[4], nkids;
  hierTree(&h, a->root, &parent, kids, &nkids);
  tdBufKind from = parent < 0 ? TD_BUF_INPUT : TD_BUF_OUTPUT;
  if (parent < 0 && !a->inplace)
    TD_CHECK(schedPush(s, schedCopy(schedRef(TD_BUF_INPUT, 0, k), schedRef(TD_BUF_OUTPUT, 0, k))));
  for (uint32_t c = 0; c < k; c++) {
    if (parent >= 0) TD_CHECK(schedPush(s, schedRecv(parent, schedRef(TD_BUF_OUTPUT, c, 1))));
    for (int i = 0; i < nkids; i++)
      TD_CHECK(schedPush(s, schedSend(kids[i], schedRef(from, c, 1))));
  }
  return tpudistSuccess;
}
