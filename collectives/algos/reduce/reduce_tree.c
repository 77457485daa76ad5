/*
 * reduce_tree.c - pipelined binary-tree reduce.
 *
 * Algorithm: ranks are renumbered v = (rank - root) mod n and arranged as a binary heap rooted
 * at v = 0 (children 2v+1 and 2v+2 when < n, parent (v-1)/2). The message is split into k chunks
 * (k = 4 when the tree has two or more levels below the root, else 1: few, since
 * the tree is the small- and medium-message reduce and each chunk costs a latency per level). For
 * each chunk a leaf sends its INPUT chunk to its parent; an inner rank receives its left child's
 * partial and reduces it with its INPUT chunk (acc = x_v (+) left), then its right child's (acc =
 * acc (+) right), and sends acc up. acc is OUTPUT on the root and SCRATCH elsewhere. Per element
 * the order is fixed by the tree: T(v) = (x_v (+) T(2v+1)) (+) T(2v+2).
 *
 * Cost: depth D = floor(log2 n); (D + k - 1) chunk steps, each receiving and reducing up to two
 * chunks: about (D + k - 1)(alpha + 2 (M/k)(beta + gamma)), M = count * elem_size.
 *
 * Preconditions: any nranks >= 1, any root in [0, n), any count, in place (INPUT = OUTPUT) or out
 * of place. The result is written only to the root's OUTPUT; other ranks never touch OUTPUT
 * (it may be NULL there) and inner ranks use one SCRATCH block. One stream.
 */
#include "reduce.h"

#define TD_REDUCE_TREE_CHUNKS 4u

tpudistResult_t algoTreeReduceSteps(tdSched *s, const int *kids, int nkids, int parent,
                                    tdBufKind acc, uint32_t k) {
  for (uint32_t c = 0; c < k; c++) {
    tdBufRef part = schedRef(TD_BUF_INPUT, c, 1);
    for (int i = 0; i < nkids; i++) {
      tdBufRef dst = schedRef(acc, c, 1);
      TD_CHECK(schedPush(s, schedRecvReduce(kids[i], part, dst)));
      part = dst;
    }
    if (parent >= 0) TD_CHECK(schedPush(s, schedSend(parent, part)));
  }
  return tpudistSuccess;
}

tpudistResult_t genReduceTree(const tdCollArgs *a, tdSched *s, char *err) {
  int n = a->nranks, r = a->rank, root = a->root;
  (void)err;
  uint32_t k = n >= 4 ? TD_REDUCE_TREE_CHUNKS : 1;
  int v = (r - root + n) % n, nkids, kids[2], parent;
  algoBinaryTree(n, root, r, &parent, kids, &nkids);
  schedSetLayout(s, TD_BUF_INPUT, 1, k);
  schedSetLayout(s, TD_BUF_OUTPUT, 1, k);
  schedSetLayout(s, TD_BUF_SCRATCH, v > 0 && nkids > 0 ? 1 : 0, k);
  tdBufKind acc = v == 0 ? TD_BUF_OUTPUT : TD_BUF_SCRATCH;
  return algoTreeReduceSteps(s, kids, nkids, parent, acc, k);
}
