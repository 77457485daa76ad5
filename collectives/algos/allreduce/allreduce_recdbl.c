/*
 * allreduce_recdbl.c - recursive-doubling all-reduce (genAllreduceRecdbl).
 *
 * Algorithm: let q be the largest power of two <= p and e = p - q. Fold: of the first 2e ranks,
 * each even rank 2i sends its whole input to 2i+1, which reduces it into its own (RECV_REDUCE) and
 * goes on as "new rank" i; ranks >= 2e go on as new rank r - e. Exchange, lg q steps: in the step
 * of distance d = 1, 2, ..., q/2 every new rank swaps its whole partial result with new rank v ^ d
 * and combines the two. Unfold: each 2i+1 sends the result to 2i. The whole buffer moves in each
 * message (one chunk).
 *
 * Determinism: both partners of an exchange compute the same value, lower (+) upper, where "lower"
 * is the partial result of the partner with the smaller new rank: the lower partner receives and
 * reduces in one step (RECV_REDUCE, dst = own (+) incoming); the upper partner receives into the
 * other working buffer and reduces its own value into it (RECV, then REDUCE: dst = incoming (+)
 * own). By induction over the steps, after the step of distance d every new rank of an aligned
 * group of 2d holds bit-identical values, computed with the same association -- the balanced tree
 * ((v0 (+) v1) (+) (v2 (+) v3)) ... over new ranks -- and the same operand order, so the result is
 * identical on every rank without relying on the operation being commutative bit for bit (NaN
 * payloads included). Folded ranks receive a copy.
 *
 * Buffers: a partial result is sent from one buffer while the next one is received into the other
 * (OUTPUT and SCRATCH alternate, INPUT is only read), so a send never races with the receive of
 * the same step, and the alternation is planned backwards so that the last step lands in OUTPUT;
 * only in place with an odd number of exchanges (and no fold) a final COPY SCRATCH -> OUTPUT
 * remains. The fusion pass leaves the exchanges unfused: every received partial result is read
 * again by the next exchange (a fused forward would hold it and could close a wait-for cycle
 * between partners).
 *
 * Cost (alpha latency, beta per byte, gamma reduction per byte, n bytes):
 *   lg q (alpha + n beta + n gamma), plus 2 (alpha + n beta) + n gamma when p is not a power of
 *   two; every exchange moves the whole buffer both ways, so it is for small messages.
 * Preconditions: any p >= 1, any count, in place or out of place. SCRATCH: one block (n
 * elements) on ranks that alternate through it. p = 1: one COPY, or nothing in place.
 */
#include "allreduce.h"

typedef struct {
  tdSched *s;
  tdBufKind cur; /* where this rank's partial result lives now */
  int scratch;   /* SCRATCH used */
} rdState;

static tdBufRef rdAll(tdBufKind b) {
  return schedRef(b, 0, 1);
}

static tpudistResult_t rdAdd(tdSched *s, tdStep st, uint32_t *idx) {
  return schedAppend(s, 0, &st, idx);
}

/* Buffer that should hold the partial result after exchange i of L (i = 0: before the first), so
 * that alternating buffers ends in OUTPUT. */
static tdBufKind rdWant(int L, int i) {
  return ((L - i) % 2 == 0) ? TD_BUF_OUTPUT : TD_BUF_SCRATCH;
}

static void rdUse(rdState *st, tdBufKind b) {
  if (b == TD_BUF_SCRATCH) st->scratch = 1;
}

/* Exchange i with rank peer; lower: this rank's new rank is the smaller one. */
static tpudistResult_t rdExchange(rdState *st, int peer, int lower, tdBufKind want) {
  tdBufKind tgt = want;
  if (tgt == st->cur) tgt = st->cur == TD_BUF_OUTPUT ? TD_BUF_SCRATCH : TD_BUF_OUTPUT;
  rdUse(st, tgt);
  TD_CHECK(rdAdd(st->s, schedSend(peer, rdAll(st->cur)), NULL));
  if (lower) {
    TD_CHECK(rdAdd(st->s, schedRecvReduce(peer, rdAll(st->cur), rdAll(tgt)), NULL));
  } else {
    TD_CHECK(rdAdd(st->s, schedRecv(peer, rdAll(tgt)), NULL));
    TD_CHECK(rdAdd(st->s, schedReduce(rdAll(st->cur), rdAll(tgt)), NULL));
  }
  st->cur = tgt;
  return tpudistSuccess;
}

static int rdLog2(int q) {
  int L = 0;
  while ((1 << L) < q) L++;
  return L;
}

static tpudistResult_t rdBuild(tdSched *s, int p, int r) {
  int q = algoFoldPow2(p), e = p - q, L = rdLog2(q), v = algoFoldNewRank(e, r);
  rdState st = {s, s->inplace ? TD_BUF_OUTPUT : TD_BUF_INPUT, 0};
  if (v < 0) { /* even rank of the first 2e: hand the input over, get the result back */
    TD_CHECK(rdAdd(s, schedSend(r + 1, rdAll(st.cur)), NULL));
    return rdAdd(s, schedRecv(r + 1, rdAll(TD_BUF_OUTPUT)), NULL);
  }
  if (r < 2 * e) { /* fold: own (+) the even neighbour's input, into the first working buffer */
    tdBufKind w = rdWant(L, 0);
    rdUse(&st, w);
    TD_CHECK(rdAdd(s, schedRecvReduce(r - 1, rdAll(st.cur), rdAll(w)), NULL));
    st.cur = w;
  }
  for (int i = 1, d = 1; d < q; i++, d *= 2) {
    int pv = v ^ d;
    TD_CHECK(rdExchange(&st, algoFoldOldRank(e, pv), v < pv, rdWant(L, i)));
  }
  if (st.cur != TD_BUF_OUTPUT)
    TD_CHECK(rdAdd(s, schedCopy(rdAll(st.cur), rdAll(TD_BUF_OUTPUT)), NULL));
  if (r < 2 * e) TD_CHECK(rdAdd(s, schedSend(r - 1, rdAll(TD_BUF_OUTPUT)), NULL));
  schedSetLayout(s, TD_BUF_SCRATCH, st.scratch ? 1 : 0, st.scratch ? 1 : 0);
  return tpudistSuccess;
}

tpudistResult_t genAllreduceRecdbl(const tdCollArgs *a, tdSched *s, char *err) {
  (void)err;
  schedSetLayout(s, TD_BUF_INPUT, 1, 1);
  schedSetLayout(s, TD_BUF_OUTPUT, 1, 1);
  schedSetLayout(s, TD_BUF_SCRATCH, 0, 0);
  return rdBuild(s, a->nranks, a->rank);
}
