/*
 * reducescatter_recdbl.c - reduce-scatter by recursive halving, with folding when the rank count
 * is not a power of two.
 *
 * Algorithm: let p = the largest power of two <= n and rem = n - p. Folding: among ranks
 * 0 .. 2rem-1, each even rank sends its whole INPUT to the odd rank above it, which reduces it
 * with its own (SCRATCH = x_odd (+) x_even) and stands for both in the halving; the even rank
 * then only waits for its block (algoFoldNewRank). Virtual rank v (0 .. p-1) is real rank 2v+1
 * for v < rem, else v+rem, and owns blocks [start(v), start(v+1)) with start(v) = 2v for v < rem,
 * else v+rem (contiguous, so every half below is one contiguous range of blocks). Halving: for d =
 * p/2 .. 1, virtual rank v and its partner v XOR d split their current window of 2d virtual ranks;
 * each sends the partner's half of its partial and receives and reduces its own half (dst = mine
 * (+) partner's). The last step writes the rank's own block into OUTPUT; an odd folded rank reduces
 * both its blocks into SCRATCH, copies its own to OUTPUT and sends the even rank's. Per element the
 * reduction tree is fixed by the rank count alone.
 *
 * Cost: log2(p) steps halving the data (+2 steps when n is not a power of two, the first moving
 * the whole input): log2(p) alpha + (p-1)/p * N beta (+ 2 alpha + (N + m) beta folded),
 * N = n * recvcount * elem_size, m = recvcount * elem_size. Latency-optimal for small messages.
 *
 * Preconditions: any nranks >= 1, any count, in place (OUTPUT = INPUT block rank) or out of
 * place. SCRATCH: the blocks of the rank's first kept half (all n blocks on an odd folded rank).
 * One stream.
 */
#include "reducescatter.h"

typedef struct {
  int n, r, p, rem;
  uint32_t sbase; /* first block held in SCRATCH (SCRATCH block i = block sbase + i) */
} rsPlan;

static int vStart(const rsPlan *P, int v) {
  return algoFoldFirstRank(P->rem, v);
}

/* Blocks of virtual ranks [v, v+d) in buffer buf (SCRATCH is offset by sbase). */
static tdBufRef vRange(const rsPlan *P, tdBufKind buf, int v, int d) {
  uint32_t b = (uint32_t)vStart(P, v), e = (uint32_t)vStart(P, v + d);
  if (buf == TD_BUF_SCRATCH) b -= P->sbase, e -= P->sbase;
  return schedRef(buf, b, e - b);
}

/* Recursive halving among the p virtual ranks; the partial starts in buffer `at`. */
static tpudistResult_t halve(const rsPlan *P, tdSched *s, int vr, tdBufKind at) {
  int lo = 0;
  for (int d = P->p / 2; d >= 1; d /= 2) {
    int vp = vr ^ d;
    int keep = (vr & d) ? lo + d : lo, give = (vr & d) ? lo : lo + d;
    tdBufRef dst = vRange(P, TD_BUF_SCRATCH, keep, d);
    if (d == 1 && vr >= P->rem) dst = schedRef(TD_BUF_OUTPUT, 0, 1);
    TD_CHECK(schedPush(s, schedSend(algoFoldOldRank(P->rem, vp), vRange(P, at, give, d))));
    TD_CHECK(
        schedPush(s, schedRecvReduce(algoFoldOldRank(P->rem, vp), vRange(P, at, keep, d), dst)));
    at = TD_BUF_SCRATCH;
    lo = keep;
  }
  return tpudistSuccess;
}

tpudistResult_t genReducescatterRecdbl(const tdCollArgs *a, tdSched *s, char *err) {
  int n = a->nranks, r = a->rank;
  (void)err;
  rsPlan P = {n, r, algoFoldPow2(n), 0, 0};
  P.rem = n - P.p;
  schedSetLayout(s, TD_BUF_INPUT, (uint32_t)n, 1);
  schedSetLayout(s, TD_BUF_OUTPUT, 1, 1);
  tdBufRef in_all = schedRef(TD_BUF_INPUT, 0, (uint32_t)n), out = schedRef(TD_BUF_OUTPUT, 0, 1);
  if (r < 2 * P.rem && r % 2 == 0) { /* folded out: hand everything over, get the block back */
    schedSetLayout(s, TD_BUF_SCRATCH, 0, 1);
    TD_CHECK(schedPush(s, schedSend(r + 1, in_all)));
    return schedPush(s, schedRecv(r + 1, out));
  }
  int vr = algoFoldNewRank(P.rem, r);
  if (r < 2 * P.rem) { /* odd folded: partial of all blocks in SCRATCH [0, n) */
    schedSetLayout(s, TD_BUF_SCRATCH, (uint32_t)n, 1);
    TD_CHECK(
        schedPush(s, schedRecvReduce(r - 1, in_all, schedRef(TD_BUF_SCRATCH, 0, (uint32_t)n))));
    TD_CHECK(halve(&P, s, vr, TD_BUF_SCRATCH));
    TD_CHECK(schedPush(s, schedSend(r - 1, schedRef(TD_BUF_SCRATCH, (uint32_t)(r - 1), 1))));
    return schedPush(s, schedCopy(schedRef(TD_BUF_SCRATCH, (uint32_t)r, 1), out));
  }
  int h = P.p / 2, kv = (vr & h) ? h : 0; /* the first kept half */
  P.sbase = (uint32_t)vStart(&P, kv);
  schedSetLayout(s, TD_BUF_SCRATCH, (uint32_t)(vStart(&P, kv + h) - vStart(&P, kv)), 1);
  return halve(&P, s, vr, TD_BUF_INPUT);
}
