/*
 * allreduce_rabenseifner.c - Rabenseifner's all-reduce (genAllreduceRabenseifner): a
 * recursive-halving reduce-scatter followed by a recursive-doubling all-gather.
 *
 * Algorithm: let q be the largest power of two <= p and e = p - q. Fold: of the first 2e ranks,
 * each even rank 2i sends its whole input to 2i+1, which reduces it into its own (RECV_REDUCE) and
 * goes on as new rank i; ranks >= 2e go on as new rank r - e. The buffer is split into q chunks.
 * Reduce-scatter by recursive halving, lg q steps: in the step of distance d = 1, 2, ..., q/2 (as
 * MPICH: the largest messages go to the nearest partners) new rank v keeps the lower half of its
 * current range of chunks if (v & d) == 0, else the upper half, sends the other half to new rank
 * v ^ d and reduces the half it keeps with the one it receives (RECV_REDUCE into OUTPUT).
 * Afterwards new rank v holds one complete chunk (chunk index = v bit-reversed). All-gather by
 * recursive doubling, the same steps in reverse order: partners swap the ranges they hold (1, 2,
 * ... chunks), each sending the range it kept and receiving the one it gave away. Unfold: each
 * 2i+1 sends the whole result to 2i.
 *
 * Determinism: every element is reduced in one place per step -- only the partner that keeps a
 * half reduces it -- so the complete value of chunk v is computed once, by one fixed tree (the
 * fold, then the halving partners in a fixed order), on new rank v, and copied everywhere else by
 * the all-gather and the unfold. Every rank holds the same bits.
 *
 * Cost (alpha latency, beta per byte, gamma reduction per byte, n bytes):
 *   2 lg q alpha + 2 (q-1)/q n beta + (q-1)/q n gamma, plus 2 (alpha + n beta) + n gamma when p
 *   is not a power of two (the fold and the unfold).
 * Preconditions: any p >= 1, any count (with fewer than q elements some chunks are empty), in
 * place or out of place; no SCRATCH. Out of place the first halving step reads INPUT and writes
 * OUTPUT; everything after works in OUTPUT. p = 1: one COPY, or nothing in place.
 */
#include "allreduce.h"

/* The chunk range this rank keeps and the one it gives away in each halving step. */
typedef struct {
  uint32_t keep[32], give[32], len[32];
  int steps;
} rabPlan;

/* Recursive halving over q chunks, distance 1 first (the largest messages to the nearest
 * partners); own: where this rank's contribution is at the start. */
static tpudistResult_t rabReduceScatter(tdSched *s, int q, int v, int e, tdBufKind own,
                                        rabPlan *pl) {
  uint32_t lo = 0, len = (uint32_t)q;
  pl->steps = 0;
  for (int d = 1; d < q; d *= 2, pl->steps++) {
    int peer = algoFoldOldRank(e, v ^ d);
    uint32_t half = len / 2, keep = (v & d) ? lo + half : lo, give = (v & d) ? lo : lo + half;
    TD_CHECK(schedPush(s, schedSend(peer, schedRef(own, give, half))));
    TD_CHECK(schedPush(
        s, schedRecvReduce(peer, schedRef(own, keep, half), schedRef(TD_BUF_OUTPUT, keep, half))));
    pl->keep[pl->steps] = lo = keep;
    pl->give[pl->steps] = give;
    pl->len[pl->steps] = len = half;
    own = TD_BUF_OUTPUT;
  }
  return tpudistSuccess;
}

/* Recursive doubling, the halving steps in reverse: send what was kept (now complete), receive
 * what was given away (completed by the partner). */
static tpudistResult_t rabAllgather(tdSched *s, int v, int e, const rabPlan *pl) {
  for (int i = pl->steps - 1; i >= 0; i--) {
    int peer = algoFoldOldRank(e, v ^ (1 << i));
    TD_CHECK(schedPush(s, schedSend(peer, schedRef(TD_BUF_OUTPUT, pl->keep[i], pl->len[i]))));
    TD_CHECK(schedPush(s, schedRecv(peer, schedRef(TD_BUF_OUTPUT, pl->give[i], pl->len[i]))));
  }
  return tpudistSuccess;
}

static tpudistResult_t rabBuild(tdSched *s, int p, int r) {
  int q = algoFoldPow2(p), e = p - q, v = algoFoldNewRank(e, r);
  tdBufKind own = s->inplace ? TD_BUF_OUTPUT : TD_BUF_INPUT;
  tdBufRef all = schedRef(own, 0, (uint32_t)q), out = schedRef(TD_BUF_OUTPUT, 0, (uint32_t)q);
  schedSetLayout(s, TD_BUF_INPUT, 1, (uint32_t)q);
  schedSetLayout(s, TD_BUF_OUTPUT, 1, (uint32_t)q);
  if (v < 0) { /* even rank of the first 2e: hand the input over, get the result back */
    TD_CHECK(schedPush(s, schedSend(r + 1, all)));
    return schedPush(s, schedRecv(r + 1, out));
  }
  if (r < 2 * e) {
    TD_CHECK(schedPush(s, schedRecvReduce(r - 1, all, out)));
    own = TD_BUF_OUTPUT;
  }
  rabPlan pl;
  TD_CHECK(rabReduceScatter(s, q, v, e, own, &pl));
  TD_CHECK(rabAllgather(s, v, e, &pl));
  if (r < 2 * e) TD_CHECK(schedPush(s, schedSend(r - 1, out)));
  return tpudistSuccess;
}

tpudistResult_t genAllreduceRabenseifner(const tdCollArgs *a, tdSched *s, char *err) {
  (void)err;
  schedSetLayout(s, TD_BUF_INPUT, 1, 1);
  schedSetLayout(s, TD_BUF_OUTPUT, 1, 1);
  schedSetLayout(s, TD_BUF_SCRATCH, 0, 0);
  return rabBuild(s, a->nranks, a->rank);
}
