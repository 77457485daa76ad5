/*
 * reducescatter_ring.c - reduce-scatter over a unidirectional ring.
 *
 * Algorithm: the partial sum of block b starts at rank b+1 and travels right, each rank adding
 * its own INPUT block, until it ends at rank b. Rank r, step i = 0 .. n-2: sends the partial of
 * block (r-i-1) mod n to r+1 (step 0: straight from INPUT) and receives the partial of block
 * (r-i-2) mod n from r-1, reducing it with its INPUT block into a SCRATCH slot (two slots used
 * alternately); the last step reduces block r into OUTPUT. Per element the order is fixed:
 * x_b (+) (x_{b-1} (+) ( ... (x_{b+2} (+) x_{b+1}))), written as dst = src (+) in at each rank.
 *
 * Cost: n-1 steps, each moving one block (recvcount elements) per rank and reducing it:
 * (n-1)(alpha + m beta + m gamma), m = recvcount * elem_size. Bandwidth-optimal.
 *
 * Preconditions: any nranks >= 1, any count, in place (OUTPUT = INPUT block rank: only the last
 * step writes it, and nothing else reads INPUT block rank) or out of place. SCRATCH: min(2, n-2)
 * blocks. One stream.
 */
#include "reducescatter.h"

tpudistResult_t genReducescatterRing(const tdCollArgs *a, tdSched *s, char *err) {
  int n = a->nranks, r = a->rank;
  (void)err;
  uint32_t nslots = n > 2 ? (uint32_t)TD_MIN(2, n - 2) : 0;
  schedSetLayout(s, TD_BUF_INPUT, (uint32_t)n, 1);
  schedSetLayout(s, TD_BUF_OUTPUT, 1, 1);
  schedSetLayout(s, TD_BUF_SCRATCH, nslots, 1);
  int right = (r + 1) % n, left = (r - 1 + n) % n;
  tdBufRef partial = schedRef(TD_BUF_INPUT, (uint32_t)left, 1); /* what goes out next */
  for (int i = 0; i < n - 1; i++) {
    uint32_t rb = (uint32_t)((r - i - 2 + 2 * n) % n);
    tdBufRef dst = i == n - 2 ? schedRef(TD_BUF_OUTPUT, 0, 1)
                              : schedRef(TD_BUF_SCRATCH, (uint32_t)i % nslots, 1);
    TD_CHECK(schedPush(s, schedSend(right, partial)));
    TD_CHECK(schedPush(s, schedRecvReduce(left, schedRef(TD_BUF_INPUT, rb, 1), dst)));
    partial = dst;
  }
  return tpudistSuccess;
}
