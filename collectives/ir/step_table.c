/*
 * step_table.c - the one table of step semantics (step_sem.h): what each step op reads, writes,
 * puts on or takes off the wire and computes, and the functions every engine derives step meaning
 * from: match-key ordinals, element spans with in-place aliasing, and the conflict test.
 */
#include "step_sem.h"

#define S TD_OPND_SRC
#define D TD_OPND_DST
#define W TD_OPND_WIRE
#define NO 0

const tdStepSem tdStepSemTable[TD_NUM_STEP_OPS] = {
    /* wire(peer) <- src */
    [TD_STEP_SEND] = {"send", TD_SEM_READ_SRC | TD_SEM_WIRE_OUT, S, TD_PEER_PEER, NO,
                      TD_EFFECT_NONE, NO, NO},
    /* dst <- wire(peer) */
    [TD_STEP_RECV] = {"recv", TD_SEM_WRITE_DST | TD_SEM_WIRE_IN, NO, NO, TD_PEER_PEER,
                      TD_EFFECT_COPY, W, NO},
    /* dst <- src (+) wire(peer) */
    [TD_STEP_RECV_REDUCE] = {"recv_reduce",
                             TD_SEM_READ_SRC | TD_SEM_WRITE_DST | TD_SEM_WIRE_IN | TD_SEM_REDUCES,
                             NO, NO, TD_PEER_PEER, TD_EFFECT_REDUCE, S, W},
    /* dst <- src */
    [TD_STEP_COPY] = {"copy", TD_SEM_READ_SRC | TD_SEM_WRITE_DST, NO, NO, NO, TD_EFFECT_COPY, S,
                      NO},
    /* dst <- dst (+) src */
    [TD_STEP_REDUCE] = {"reduce",
                        TD_SEM_READ_SRC | TD_SEM_READ_DST | TD_SEM_WRITE_DST | TD_SEM_REDUCES, NO,
                        NO, NO, TD_EFFECT_REDUCE, D, S},
    /* dst <- src (+) wire(peer); wire(peer2) <- dst */
    [TD_STEP_RECV_REDUCE_SEND] = {"recv_reduce_send",
                                  TD_SEM_READ_SRC | TD_SEM_WRITE_DST | TD_SEM_WIRE_IN |
                                      TD_SEM_WIRE_OUT | TD_SEM_REDUCES,
                                  D, TD_PEER_PEER2, TD_PEER_PEER, TD_EFFECT_REDUCE, S, W},
    /* dst <- wire(peer); wire(peer2) <- dst */
    [TD_STEP_RECV_COPY_SEND] = {"recv_copy_send",
                                TD_SEM_WRITE_DST | TD_SEM_WIRE_IN | TD_SEM_WIRE_OUT, D,
                                TD_PEER_PEER2, TD_PEER_PEER, TD_EFFECT_COPY, W, NO},
};

#undef S
#undef D
#undef W
#undef NO

void schedOrdReset(tdOrdCount *c, const tdStep *steps, uint32_t n) {
  for (uint32_t i = 0; i < n; i++) {
    int sp = schedSendPeer(&steps[i]), rp = schedRecvPeer(&steps[i]);
    if (sp >= 0 && sp < c->nranks) c->send[sp] = 0;
    if (rp >= 0 && rp < c->nranks) c->recv[rp] = 0;
  }
}

void schedAlias(const tdSched *s, tdBufKind buf, tdBufKind *space, uint32_t *block) {
  *space = buf;
  *block = 0;
  if (!s->inplace) return;
  if (s->coll == TD_COLL_REDUCESCATTER) {
    if (buf == TD_BUF_OUTPUT) *space = TD_BUF_INPUT, *block = (uint32_t)s->rank;
  } else if (buf == TD_BUF_INPUT) {
    *space = TD_BUF_OUTPUT;
    if (s->coll == TD_COLL_ALLGATHER) *block = (uint32_t)s->rank;
  }
}

tpudistResult_t schedRefSpan(const tdSched *s, tdBufRef ref, uint64_t n, tdSpan *out) {
  TD_CHECK(schedRefRange(s, ref, n, &out->b, &out->e));
  tdBufKind space;
  uint32_t block;
  schedAlias(s, (tdBufKind)ref.buf, &space, &block);
  out->space = (uint8_t)space;
  out->write = 0;
  out->b += (uint64_t)block * n;
  out->e += (uint64_t)block * n;
  return tpudistSuccess;
}

tpudistResult_t schedStepSpans(const tdSched *s, const tdStep *st, uint64_t n, tdSpans *out) {
  tdSpan src = {0, 0, 0, 0}, dst = {0, 0, 0, 0};
  if (schedUsesSrc(st->op)) TD_CHECK(schedRefSpan(s, st->src, n, &src));
  if (schedUsesDst(st->op)) TD_CHECK(schedRefSpan(s, st->dst, n, &dst));
  schedSpansOf(st, src, dst, out);
  return tpudistSuccess;
}

int schedSpansConflictKind(const tdSpans *a, const tdSpans *b, int *ia, int *ib) {
  int kind = 0;
  for (int i = 0; i < a->n; i++)
    for (int j = 0; j < b->n; j++) {
      const tdSpan *x = &a->s[i], *y = &b->s[j];
      if (!schedSpanConflict(x, y)) continue;
      int k = x->write && y->write ? TD_CONFLICT_WW : y->write ? TD_CONFLICT_RW : TD_CONFLICT_WR;
      if (kind && k >= kind) continue;
      kind = k;
      *ia = i;
      *ib = j;
    }
  return kind;
}
