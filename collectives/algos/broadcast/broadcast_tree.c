/*
 * broadcast_tree.c - pipelined binary-tree broadcast.
 *
 * Algorithm: ranks are renumbered v = (rank - root) mod n and arranged as a binary heap rooted
 * at v = 0: the children of v are 2v+1 and 2v+2 (when < n), its parent (v-1)/2. The message is
 * split into k chunks (k = 4 when the tree has two or more levels below the root, else 1: few,
 * since the tree is the small- and medium-message broadcast and each chunk costs a latency per
 * level). The root sends chunk c to each child (from INPUT; out of place it also copies INPUT to
 * OUTPUT); every other rank receives chunk c into OUTPUT from its parent, then forwards it to its
 * children. Receives of later chunks may be posted while earlier chunks are being forwarded, so
 * the levels of the tree pipeline chunk by chunk (a node with two children reads each received
 * chunk twice, so schedFuse leaves its steps apart; a node with one child gets recv_copy_send).
 *
 * Cost: depth D = floor(log2 n); (D + k - 1) chunk steps, each sending a chunk to up to two
 * children: about (D + k - 1)(alpha + 2 (M/k) beta), M = count * elem_size.
 *
 * Preconditions: any nranks >= 1, any root in [0, n), any count, in place (INPUT = OUTPUT) or out
 * of place; INPUT is read on the root only. No reduction, no scratch. One stream.
 */
#include "broadcast.h"

#define TD_BCAST_TREE_CHUNKS 4u

tpudistResult_t genBroadcastTree(const tdCollArgs *a, tdSched *s, char *err) {
  int n = a->nranks, r = a->rank, root = a->root;
  (void)err;
  uint32_t k = n >= 4 ? TD_BCAST_TREE_CHUNKS : 1;
  schedSetLayout(s, TD_BUF_INPUT, 1, k);
  schedSetLayout(s, TD_BUF_OUTPUT, 1, k);
  schedSetLayout(s, TD_BUF_SCRATCH, 0, 1);
  int v = (r - root + n) % n, nkids, kids[2], parent;
  algoBinaryTree(n, root, r, &parent, kids, &nkids);
  tdBufKind from = TD_BUF_OUTPUT;
  if (v == 0) {
    from = TD_BUF_INPUT;
    if (!a->inplace)
      TD_CHECK(
          schedPush(s, schedCopy(schedRef(TD_BUF_INPUT, 0, k), schedRef(TD_BUF_OUTPUT, 0, k))));
  }
  for (uint32_t c = 0; c < k; c++) {
    if (parent >= 0) TD_CHECK(schedPush(s, schedRecv(parent, schedRef(TD_BUF_OUTPUT, c, 1))));
    for (int i = 0; i < nkids; i++)
      TD_CHECK(schedPush(s, schedSend(kids[i], schedRef(from, c, 1))));
  }
  return tpudistSuccess;
}
