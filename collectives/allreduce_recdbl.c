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
 * Buffers: a partial result is sent from one buffer while the next one is received into another
 * (INPUT is only read; OUTPUT and SCRATCH blocks 0 and 1 are the working buffers), so a send never
 * races with the receive of the same step. When the fusion pass merges a lower partner's
 * RECV_REDUCE with the next exchange's SEND, the fused step reads its source until the forward
 * completes, so the exchange after it must not receive into that source either (both partners
 * would wait for each other). The buffer sequence is chosen by a small search under these two
 * rules so that the last exchange lands in OUTPUT; when no sequence does (in place with few
 * steps, e.g. p = 2), a final COPY into OUTPUT remains.
 *
 * Cost (alpha latency, beta per byte, gamma reduction per byte, n bytes):
 *   lg q (alpha + n beta + n gamma), plus 2 (alpha + n beta) + n gamma when p is not a power of
 *   two; every exchange moves the whole buffer both ways, so it is for small messages.
 * Preconditions: any p >= 1, any count, in place or out of place. SCRATCH: up to two blocks (n
 * elements each), depending on the rank. p = 1: one COPY, or nothing in place.
 */
#include <string.h>

#include "algos.h"

/* Working buffers: INPUT (read only), OUTPUT, SCRATCH blocks 0 and 1. */
enum { RD_IN, RD_OUT, RD_S0, RD_S1, RD_NONE };

static tdBufRef rdRef(int w) {
  if (w == RD_IN) return schedRef(TD_BUF_INPUT, 0, 1);
  if (w == RD_OUT) return schedRef(TD_BUF_OUTPUT, 0, 1);
  return schedRef(TD_BUF_SCRATCH, (uint32_t)(w - RD_S0), 1);
}

#define RD_MAX_STEPS 32

/* w[i]: where the partial result is after exchange i (w[0]: before the first, after the fold).
 * fused[i]: the step that produced w[i] is a RECV_REDUCE (the fold, or an exchange where this
 * rank is the lower partner), which the fusion pass may merge with the next SEND; that step then
 * reads its source until the forward completes, so the next exchange must not receive into it. */
typedef struct {
  int L, before; /* before: where the result is before w[0] (the fold's source), or RD_NONE */
  int w[RD_MAX_STEPS + 1];
  uint8_t fused[RD_MAX_STEPS + 1];
  uint8_t dead[RD_MAX_STEPS + 1][5][5];
} rdPlan;

static int rdAllowed(const rdPlan *pl, int i, int c) {
  int a = i > 0 ? pl->w[i - 1] : pl->before;
  return c != pl->w[i] && !(pl->fused[i] && c == a);
}

/* Chooses w[i+1..L] so that w[L] is OUTPUT; 0 if impossible from here. */
static int rdSearch(rdPlan *pl, int i) {
  int a = i > 0 ? pl->w[i - 1] : pl->before;
  if (i == pl->L) return pl->w[i] == RD_OUT;
  if (pl->dead[i][a][pl->w[i]]) return 0;
  for (int c = RD_OUT; c <= RD_S1; c++) {
    if (!rdAllowed(pl, i, c)) continue;
    pl->w[i + 1] = c;
    if (rdSearch(pl, i + 1)) return 1;
  }
  pl->dead[i][a][pl->w[i]] = 1;
  return 0;
}

/* Plans the buffers; own: where this rank's input is; folded: w[0] is the fold's target (free),
 * else own. Without a plan ending in OUTPUT, the first allowed buffers (a COPY follows). */
static void rdChoose(rdPlan *pl, int own, int folded) {
  pl->before = folded ? own : RD_NONE;
  for (int w0 = RD_OUT; w0 <= (folded ? RD_S1 : RD_OUT); w0++) {
    pl->w[0] = folded ? w0 : own;
    if (rdSearch(pl, 0)) return;
  }
  pl->w[0] = folded ? RD_OUT : own;
  for (int i = 0; i < pl->L; i++)
    for (pl->w[i + 1] = RD_OUT; !rdAllowed(pl, i, pl->w[i + 1]);) pl->w[i + 1]++;
}

static tpudistResult_t rdAdd(tdSched *s, tdStep st) {
  return schedAppend(s, 0, &st, NULL);
}

/* Exchange i with rank peer: both partners compute lower (+) upper into w[i]. */
static tpudistResult_t rdExchange(tdSched *s, const rdPlan *pl, int i, int peer) {
  tdBufRef from = rdRef(pl->w[i - 1]), to = rdRef(pl->w[i]);
  TD_CHECK(rdAdd(s, schedSend(peer, from)));
  if (pl->fused[i]) return rdAdd(s, schedRecvReduce(peer, from, to)); /* own (+) incoming */
  TD_CHECK(rdAdd(s, schedRecv(peer, to)));
  return rdAdd(s, schedReduce(from, to)); /* incoming (+) own */
}

static int rdLog2(int q) {
  int L = 0;
  while ((1 << L) < q) L++;
  return L;
}

/* This rank's part when folded: new rank (or -1 when it only sends and receives the result). */
static int rdNewRank(int r, int e) {
  if (r < 2 * e) return (r % 2) ? r / 2 : -1;
  return r - e;
}

static int rdOldRank(int v, int e) {
  return v < e ? 2 * v + 1 : v + e;
}

static tpudistResult_t rdBuild(tdSched *s, int p, int r) {
  int q = 1;
  while (q * 2 <= p) q *= 2;
  int e = p - q, v = rdNewRank(r, e), own = s->inplace ? RD_OUT : RD_IN, folded = r < 2 * e;
  if (v < 0) { /* even rank of the first 2e: hand the input over, get the result back */
    TD_CHECK(rdAdd(s, schedSend(r + 1, rdRef(own))));
    return rdAdd(s, schedRecv(r + 1, rdRef(RD_OUT)));
  }
  rdPlan pl;
  memset(&pl, 0, sizeof(pl));
  pl.L = rdLog2(q);
  pl.fused[0] = (uint8_t)folded;
  for (int i = 1; i <= pl.L; i++) pl.fused[i] = !(v & (1 << (i - 1)));
  rdChoose(&pl, own, folded);
  if (folded) TD_CHECK(rdAdd(s, schedRecvReduce(r - 1, rdRef(own), rdRef(pl.w[0]))));
  int scratch = pl.w[0] >= RD_S0 ? pl.w[0] - RD_S0 + 1 : 0;
  for (int i = 1; i <= pl.L; i++) {
    TD_CHECK(rdExchange(s, &pl, i, rdOldRank(v ^ (1 << (i - 1)), e)));
    if (pl.w[i] >= RD_S0) scratch = TD_MAX(scratch, pl.w[i] - RD_S0 + 1);
  }
  if (pl.w[pl.L] != RD_OUT) TD_CHECK(rdAdd(s, schedCopy(rdRef(pl.w[pl.L]), rdRef(RD_OUT))));
  if (folded) TD_CHECK(rdAdd(s, schedSend(r - 1, rdRef(RD_OUT))));
  schedSetLayout(s, TD_BUF_SCRATCH, (uint32_t)scratch, scratch ? 1 : 0);
  return tpudistSuccess;
}

tpudistResult_t genAllreduceRecdbl(const tdCollArgs *a, tdSched *s, char *err) {
  if (a->coll != TD_COLL_ALLREDUCE)
    return tdErr(err, tpudistInvalidArgument, "recdbl all-reduce asked for %s",
                 schedCollName(a->coll));
  if (a->nranks < 1 || a->rank < 0 || a->rank >= a->nranks)
    return tdErr(err, tpudistInvalidArgument, "rank %d of %d ranks", a->rank, a->nranks);
  schedSetLayout(s, TD_BUF_INPUT, 1, 1);
  schedSetLayout(s, TD_BUF_OUTPUT, 1, 1);
  schedSetLayout(s, TD_BUF_SCRATCH, 0, 0);
  if (a->nranks == 1) {
    if (s->inplace) return tpudistSuccess;
    return rdAdd(s, schedCopy(rdRef(RD_IN), rdRef(RD_OUT)));
  }
  return rdBuild(s, a->nranks, a->rank);
}
