/*
 * reduce_hier.c - hierarchical reduce (genReduceHier) for a topology with an outer level (hier.h:
 * G groups, slices or hosts, of L consecutive ranks; rank = g*L + l): the mirror of
 * broadcast_hier.c, on the same two-level tree (hierTree).
 *
 * Algorithm: inside each group a binary tree over the L ranks reduces to the group's leader (the
 * rank with the root's local index l0); a binary tree over the G leaders rooted at the root's
 * group then reduces the groups' sums to the root over DCN. The message is split into
 * TD_HIER_CHUNKS chunks, pipelined: a rank sends chunk c up as soon as it has reduced it. Only
 * group sums cross DCN, once per group.
 *
 * Determinism: per element the order is fixed by the tree, acc = x_v, then acc = acc (+) child
 * for the local children and then the children groups' leaders, in that order.
 *
 * Cost (S bytes, k chunks): depth D = floor(lg G) + floor(lg L); (D + k - 1) chunk steps, each
 * receiving and reducing up to four chunks on a leader (two local, two remote); per group link at
 * most 2 S in and S out.
 * Preconditions: an outer level (else tpudistNotSupported: the tree is the same plan), any root,
 * any count, in place (INPUT = OUTPUT) or out of place. The result is written only to the root's
 * OUTPUT; inner ranks other than the root accumulate in one SCRATCH block. One stream.
 */
#include "hier.h"
#include "reduce.h"

tpudistResult_t genReduceHier(const tdCollArgs *a, tdSched *s, char *err) {
  tdHier h;
  TD_CHECK(hierPlace(a, &h, err));
  uint32_t k = TD_HIER_CHUNKS;
  int parent, kids[4], nkids;
  hierTree(&h, a->root, &parent, kids, &nkids);
  schedSetLayout(s, TD_BUF_INPUT, 1, k);
  schedSetLayout(s, TD_BUF_OUTPUT, 1, k);
  schedSetLayout(s, TD_BUF_SCRATCH, parent >= 0 && nkids > 0 ? 1 : 0, k);
  tdBufKind acc = parent < 0 ? TD_BUF_OUTPUT : TD_BUF_SCRATCH;
  /* local children come after the remote ones in hierTree's list; reduce them first */
  int order[4], n = 0;
  for (int i = 0; i < nkids; i++)
    if (kids[i] / h.L == h.g) order[n++] = kids[i];
  for (int i = 0; i < nkids; i++)
    if (kids[i] / h.L != h.g) order[n++] = kids[i];
  return algoTreeReduceSteps(s, order, n, parent, acc, k);
}
