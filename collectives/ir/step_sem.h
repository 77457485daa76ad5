/*
 * step_sem.h - the step-semantics table (step_table.c): the one definition of what a schedule
 * step means (docs/schedule-ir.md). Per step op: what it reads and writes, which of its refs goes
 * on the wire, which field names the rank it sends to and the rank it receives from, and what it
 * computes into dst. On top of the table: the match-key ordinals of a stream, the element spans a
 * step reads and writes (in-place aliasing applied), and the conflict test between two steps'
 * spans. The executor, the simulator, the validator, the cost model and the test models call
 * these; none re-derives step meaning. Included by sched_ir.h.
 */
#ifndef TD_STEP_SEM_H_
#define TD_STEP_SEM_H_

#include "sched_ir.h"

#define TD_SEM_READ_SRC 0x1
#define TD_SEM_READ_DST 0x2
#define TD_SEM_WRITE_DST 0x4
#define TD_SEM_WIRE_IN 0x8   /* receives from peer */
#define TD_SEM_WIRE_OUT 0x10 /* sends src (SEND) or dst (fused) to peer / peer2 */
#define TD_SEM_REDUCES 0x20

/* An operand of a step: one of its refs, or the message it receives. */
typedef enum { TD_OPND_NONE = 0, TD_OPND_SRC, TD_OPND_DST, TD_OPND_WIRE } tdOpnd;
/* The step field that names a peer. */
typedef enum { TD_PEER_NONE = 0, TD_PEER_PEER, TD_PEER_PEER2 } tdPeerField;
/* What a step computes into dst: nothing, dst <- a, or dst <- a (+) b. */
typedef enum { TD_EFFECT_NONE = 0, TD_EFFECT_COPY, TD_EFFECT_REDUCE } tdEffect;

typedef struct {
  const char *name;  /* text form: "send", "recv", "recv_reduce", ... */
  unsigned flags;    /* TD_SEM_* */
  uint8_t wire;      /* tdOpnd: the ref it puts on the wire (SRC, DST), NONE if it sends nothing */
  uint8_t send_to;   /* tdPeerField: where it sends */
  uint8_t recv_from; /* tdPeerField: where it receives from */
  uint8_t effect;    /* tdEffect */
  uint8_t a, b;      /* tdOpnd: the effect's operands (b only for REDUCE) */
} tdStepSem;
extern const tdStepSem tdStepSemTable[TD_NUM_STEP_OPS];

static inline int schedPeerOf(const tdStep *st, unsigned field) {
  return field == TD_PEER_PEER ? st->peer : field == TD_PEER_PEER2 ? st->peer2 : -1;
}
/* Peer the step sends to, or -1. */
static inline int schedSendPeer(const tdStep *st) {
  return schedPeerOf(st, tdStepSemTable[st->op].send_to);
}
/* Peer the step receives from, or -1. */
static inline int schedRecvPeer(const tdStep *st) {
  return schedPeerOf(st, tdStepSemTable[st->op].recv_from);
}
/* The ref operand o (TD_OPND_SRC or TD_OPND_DST) names. */
static inline tdBufRef schedOpndRef(const tdStep *st, unsigned o) {
  return o == TD_OPND_SRC ? st->src : st->dst;
}
/* The ref a sending step puts on the wire (src for SEND, dst for fused). */
static inline tdBufRef schedWireRef(const tdStep *st) {
  return schedOpndRef(st, tdStepSemTable[st->op].wire);
}
/* A fused op: receives, then forwards what it received (dst) to peer2. */
static inline int schedFused(unsigned op) {
  unsigned f = tdStepSemTable[op].flags;
  return (f & TD_SEM_WIRE_IN) && (f & TD_SEM_WIRE_OUT);
}
/* Which refs an op uses (binds): src when it reads it; dst when it reads or writes it. */
static inline int schedUsesSrc(unsigned op) {
  return (tdStepSemTable[op].flags & TD_SEM_READ_SRC) != 0;
}
static inline int schedUsesDst(unsigned op) {
  return (tdStepSemTable[op].flags & (TD_SEM_WRITE_DST | TD_SEM_READ_DST)) != 0;
}

/* ---- match-key ordinals ---- */
/* The i-th message end of a stream between the same ordered pair of ranks has ordinal i (the
 * match key is (sequence, stream, ordinal)). Counters per peer for one stream, all zero when the
 * stream starts; ends whose peer is outside [0, nranks) get TD_NO_ORD and count nothing. */
#define TD_NO_ORD UINT32_MAX
typedef struct {
  uint32_t *send, *recv; /* nranks counters each */
  int nranks;
} tdOrdCount;
/* Ordinals of step st's send and receive ends (TD_NO_ORD where it has none); advances c. */
static inline void schedOrdNext(tdOrdCount *c, const tdStep *st, uint32_t *sord, uint32_t *rord) {
  int sp = schedSendPeer(st), rp = schedRecvPeer(st);
  *sord = sp >= 0 && sp < c->nranks ? c->send[sp]++ : TD_NO_ORD;
  *rord = rp >= 0 && rp < c->nranks ? c->recv[rp]++ : TD_NO_ORD;
}
/* Zeroes the counters that steps[0, n) advanced (the next stream starts from zero). */
void schedOrdReset(tdOrdCount *c, const tdStep *steps, uint32_t n);

/* ---- spans and conflicts ---- */
/* Elements [b, e) of memory space `space`; the unit is whatever the engine binds (elements of a
 * buffer after aliasing, or addresses in one space). */
typedef struct {
  uint64_t b, e;
  uint8_t space; /* tdBufKind after in-place aliasing (0 for a single address space) */
  uint8_t write; /* the step writes it (else only reads) */
} tdSpan;
/* What a step touches: s[src] read (when it reads src), s[dst] read or written (when it uses
 * dst); src/dst = -1 where unused. Entries from n on are empty spans. */
typedef struct {
  tdSpan s[2];
  int8_t n, src, dst;
} tdSpans;

/* In-place aliasing (docs/schedule-ir.md, "In place"): buffer buf of s lives in buffer *space
 * from block *block on (element shift block * n). All-gather: INPUT is block rank of OUTPUT;
 * reduce-scatter: OUTPUT is block rank of INPUT; otherwise INPUT is OUTPUT. */
void schedAlias(const tdSched *s, tdBufKind buf, tdBufKind *space, uint32_t *block);
/* Element span of ref for block count n, aliasing applied (write = 0). Fails as schedRefRange. */
tpudistResult_t schedRefSpan(const tdSched *s, tdBufRef ref, uint64_t n, tdSpan *out);
/* A step's spans from its bound src and dst spans (either ignored when unused). */
static inline void schedSpansOf(const tdStep *st, tdSpan src, tdSpan dst, tdSpans *out) {
  unsigned f = tdStepSemTable[st->op].flags;
  tdSpan none = {0, 0, 0, 0};
  out->n = 0;
  out->src = out->dst = -1;
  out->s[0] = out->s[1] = none;
  if (f & TD_SEM_READ_SRC) {
    src.write = 0;
    out->s[out->src = out->n++] = src;
  }
  if (f & (TD_SEM_READ_DST | TD_SEM_WRITE_DST)) {
    dst.write = (f & TD_SEM_WRITE_DST) != 0;
    out->s[out->dst = out->n++] = dst;
  }
}
/* A step's element spans for block count n (schedRefSpan of the refs it uses). */
tpudistResult_t schedStepSpans(const tdSched *s, const tdStep *st, uint64_t n, tdSpans *out);
/* What a fused step still touches once its receive is done: it only reads dst (to forward it). */
static inline void schedSpansAfterRecv(tdSpans *sp) {
  if (sp->dst < 0) return;
  tdSpan none = {0, 0, 0, 0};
  sp->s[0] = sp->s[sp->dst];
  sp->s[0].write = 0;
  sp->s[1] = none;
  sp->n = 1;
  sp->src = -1;
  sp->dst = 0;
}

/* The conflict rule (docs/schedule-ir.md, "Ordering"): two spans conflict when one of them is
 * written and they share an element of one space. */
static inline int schedSpanConflict(const tdSpan *x, const tdSpan *y) {
  return x->b < y->e && y->b < x->e && x->b < x->e && y->b < y->e && x->space == y->space &&
         (x->write || y->write);
}
/* 1 if steps with spans a and b may not be in flight together: schedSpanConflict on the pairs
 * with a written span (only dst is ever written). */
static inline int schedSpansConflict(const tdSpans *a, const tdSpans *b) {
  if (a->dst >= 0 && a->s[a->dst].write)
    for (int j = 0; j < b->n; j++)
      if (schedSpanConflict(&a->s[a->dst], &b->s[j])) return 1;
  if (b->dst >= 0 && b->s[b->dst].write)
    for (int i = 0; i < a->n; i++)
      if (schedSpanConflict(&a->s[i], &b->s[b->dst])) return 1;
  return 0;
}
#define TD_CONFLICT_WW 1 /* both write */
#define TD_CONFLICT_RW 2 /* a reads what b writes */
#define TD_CONFLICT_WR 3 /* a writes what b reads */
/* The kind of the conflict between a and b (0: none), the lowest kind first, and the spans that
 * meet (earliest of a, then of b). */
int schedSpansConflictKind(const tdSpans *a, const tdSpans *b, int *ia, int *ib);

#endif /* TD_STEP_SEM_H_ */
