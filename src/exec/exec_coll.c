/*
 * exec_coll.c - executing one rank's schedule (docs/schedule-ir.md). Binding: each step's
 * symbolic buffer references become pointers (schedRefRange with the bound count), its bytes are
 * sliced into pieces (pieceBytes), and each message gets its key (sequence, stream,
 * ordinal per (stream, ordered pair), piece). Issue rule: within a stream, steps issue in order; a
 * step issues when its cross-stream deps are done and it conflicts with no earlier incomplete step
 * of its stream (schedSpansConflict over the spans of step_sem.h, bound as address ranges, so
 * in-place aliasing is handled). Receives that reduce pass reduce_src to the transport; fused
 * steps forward each piece as soon as it has arrived; local steps (COPY, REDUCE) apply their
 * effect (memmove, kernelReduce) when issued. A parted operation (a fused host) binds each step
 * into pieces with their own pointers instead (exec_parts.c), and orders its steps on element
 * spans after in-place aliasing.
 */
#include <stdlib.h>
#include <string.h>

#include "exec.h"
#include "kernels.h"
#include "registry.h"
#include "rt_log.h"
#include "step_sem.h"

#define TD_NONE UINT32_MAX

/* Piece size of a step of len bytes: the communicator's chunk (TPU_DIST_CHUNK_BYTES, else from
 * the host's caches), or larger so that the step has at most
 * TPU_DIST_MAX_PIECES pieces (fewer descriptors, reads and acknowledgements per byte on long
 * steps). Both ends of a message compute it from the same length and configuration. Single-phase
 * all-to-all-v sends every message whole (one piece), since its two ends may disagree on the
 * length (see vMismatch). */
static size_t pieceBytes(const tdOp *op, size_t len) {
  if (op->vlocal) return SIZE_MAX >> 2;
  const tdConfig *cfg = op->net->cfg;
  size_t p = (size_t)op->net->chunk_bytes;
  if (cfg->max_pieces > 0 && len / (size_t)cfg->max_pieces > p)
    p = (len + (size_t)cfg->max_pieces - 1) / (size_t)cfg->max_pieces;
  p -= p % op->esize;
  return p ? p : op->esize;
}

static tpudistResult_t growBuf(void **buf, size_t *cap, size_t need, size_t elem, int prefault) {
  if (need <= *cap) return tpudistSuccess;
  size_t n = need + need / 4;
  void *p = NULL;
  if (posix_memalign(&p, 64, n * elem) != 0) return tpudistNoMemory;
  if (prefault) memset(p, 0, n * elem);
  free(*buf);
  *buf = p;
  *cap = n;
  return tpudistSuccess;
}

/* Element range of ref: [*b, *b + *elems). */
static tpudistResult_t refRange(const tdOp *op, tdBufRef ref, uint64_t *b, uint64_t *elems,
                                char *err) {
  uint64_t e;
  if (schedRefRange(op->sched, ref, op->n, b, &e) != tpudistSuccess)
    return tdErr(err, tpudistInternalError, "schedule %s/%s: bad reference %s chunk %u+%u",
                 schedCollName(op->sched->coll), op->sched->algo, schedBufName(ref.buf), ref.chunk,
                 ref.nchunks);
  *elems = e - *b;
  return tpudistSuccess;
}

static tpudistResult_t bindRef(const tdOp *op, tdBufRef ref, uint64_t b, size_t len, char **ptr,
                               char *err) {
  *ptr = op->bufs[ref.buf] ? op->bufs[ref.buf] + b * op->esize : NULL;
  return len && !*ptr ? execNullBuf(op, ref.buf, err) : tpudistSuccess;
}

/* 1 if op's INPUT and OUTPUT are its parts (a fused host's plan; not while the signature check's
 * exchange runs in its place). */
static int partedNow(const tdOp *op) {
  return op->parted && op->chk_phase != 1;
}

/* Binds step st into rt: pointers (or pieces of a parted operation), length, pieces, read/write
 * ranges (addresses; elements after in-place aliasing in a parted operation, whose members are
 * either in the in-place form or disjoint). */
static tpudistResult_t bindStep(tdOp *op, const tdStep *st, tdStepRt *rt, char *err) {
  unsigned f = tdStepSemTable[st->op].flags;
  uint64_t sb = 0, se = 0, db = 0, de = 0;
  if (schedUsesSrc(st->op)) TD_CHECK(refRange(op, st->src, &sb, &se, err));
  if (schedUsesDst(st->op)) TD_CHECK(refRange(op, st->dst, &db, &de, err));
  size_t slen = (size_t)se * op->esize, dlen = (size_t)de * op->esize;
  if ((f & TD_SEM_READ_SRC) && (f & TD_SEM_WRITE_DST) && slen != dlen)
    return tdErr(err, tpudistInternalError,
                 "schedule %s/%s: %s step with %zu source and %zu "
                 "destination bytes",
                 schedCollName(op->sched->coll), op->sched->algo, tdStepSemTable[st->op].name, slen,
                 dlen);
  rt->len = (f & TD_SEM_WRITE_DST) ? dlen : slen;
  int wire = (f & (TD_SEM_WIRE_IN | TD_SEM_WIRE_OUT)) != 0;
  size_t P = pieceBytes(op, rt->len);
  rt->psize = P;
  rt->src = rt->dst = NULL;
  if (partedNow(op)) {
    TD_CHECK(execPartsBind(op, st, rt, sb, db, rt->len / op->esize, wire ? P : SIZE_MAX, err));
    if (schedStepSpans(op->sched, st, op->n, &rt->sp) != tpudistSuccess)
      return tdErr(err, tpudistInternalError, "schedule %s/%s: bad step spans",
                   schedCollName(op->sched->coll), op->sched->algo);
  } else {
    if (schedUsesSrc(st->op)) TD_CHECK(bindRef(op, st->src, sb, slen, &rt->src, err));
    if (schedUsesDst(st->op)) TD_CHECK(bindRef(op, st->dst, db, dlen, &rt->dst, err));
    rt->piece0 = TD_NO_PIECE;
    rt->npieces = wire ? (rt->len ? (uint32_t)((rt->len + P - 1) / P) : 1) : 1;
    tdSpan sa = {(uintptr_t)rt->src, (uintptr_t)rt->src + slen, 0, 0};
    tdSpan da = {(uintptr_t)rt->dst, (uintptr_t)rt->dst + dlen, 0, 0};
    schedSpansOf(st, sa, da, &rt->sp);
  }
  rt->state = TD_RT_WAIT;
  rt->rin = rt->rout = rt->fwd = 0;
  rt->xin = rt->xout = TD_NONE;
  if (f & TD_SEM_WIRE_IN) {
    rt->xin = (uint32_t)op->nxfers;
    op->nxfers += rt->npieces;
  }
  if (f & TD_SEM_WIRE_OUT) {
    rt->xout = (uint32_t)op->nxfers;
    op->nxfers += rt->npieces;
  }
  return tpudistSuccess;
}

static tpudistResult_t checkStep(const tdOp *op, const tdStep *st, char *err) {
  const tdSched *s = op->sched;
  int n = op->net->nranks;
  if (st->op >= TD_NUM_STEP_OPS) return tdErr(err, tpudistInternalError, "bad step op %u", st->op);
  int rp = schedRecvPeer(st), sp = schedSendPeer(st);
  unsigned f = tdStepSemTable[st->op].flags;
  if (((f & TD_SEM_WIRE_IN) && (rp < 0 || rp >= n)) ||
      ((f & TD_SEM_WIRE_OUT) && (sp < 0 || sp >= n)))
    return tdErr(err, tpudistInternalError, "schedule %s/%s: peer out of range (%d/%d of %d)",
                 schedCollName(s->coll), s->algo, rp, sp, n);
  for (int k = 0; k < 2; k++)
    if (st->deps[k].stream != TD_NO_DEP &&
        (st->deps[k].stream >= s->nstreams ||
         st->deps[k].step >= s->streams[st->deps[k].stream].nsteps))
      return tdErr(err, tpudistInternalError, "schedule %s/%s: dependency on missing step %u:%u",
                   schedCollName(s->coll), s->algo, st->deps[k].stream, st->deps[k].step);
  return tpudistSuccess;
}

/* Message ordinals (schedOrdNext): position among messages of the same stream and ordered pair. */
static void assignOrdinals(tdOp *op, uint32_t s) {
  const tdStream *str = &op->sched->streams[s];
  tdOrdCount c = {op->ex->ord_send, op->ex->ord_recv, op->net->nranks};
  for (uint32_t j = 0; j < str->nsteps; j++) {
    tdStepRt *rt = &op->rt[op->stream_base[s] + j];
    schedOrdNext(&c, &str->steps[j], &rt->ord_out, &rt->ord_in);
  }
  schedOrdReset(&c, str->steps, str->nsteps);
}

/* 1 when rt and xfers are bound to exactly this call: cached schedule, count, element size and
 * buffers unchanged (per-call schedules, such as two-phase all-to-all-v plans, and single-phase
 * all-to-all-v, whose layouts are each call's counts, are never reused). */
static int boundSame(const tdOp *op) {
  return op->bound_sched == op->sched && !op->owns_sched && !op->vlocal && !op->parted &&
         op->bound_n == op->n && op->bound_esize == op->esize && op->chk_phase != 1 &&
         op->bound_bufs[TD_BUF_INPUT] == op->bufs[TD_BUF_INPUT] &&
         op->bound_bufs[TD_BUF_OUTPUT] == op->bufs[TD_BUF_OUTPUT];
}

/* Rewinds a bound operation to its first step (binding, pieces and ordinals stay valid). */
static void rewindBound(tdOp *op) {
  const tdSched *s = op->sched;
  op->bufs[TD_BUF_SCRATCH] = op->bound_bufs[TD_BUF_SCRATCH];
  op->inflight = 0;
  for (uint32_t i = 0; i < s->nstreams; i++) {
    op->lo[i] = op->nx[i] = 0;
    tdStepRt *rt = op->rt + op->stream_base[i];
    for (uint32_t j = 0; j < s->streams[i].nsteps; j++) {
      rt[j].state = TD_RT_WAIT;
      rt[j].rin = rt[j].rout = rt[j].fwd = 0;
    }
  }
}

static tpudistResult_t execCollStart(tdOp *op, char *err) {
  const tdSched *s = op->sched;
  if (boundSame(op)) {
    rewindBound(op);
    return tpudistSuccess;
  }
  op->bound_sched = NULL;
  size_t total = 0;
  for (uint32_t i = 0; i < s->nstreams; i++) total += s->streams[i].nsteps;
  if (growBuf((void **)&op->rt, &op->rt_cap, total ? total : 1, sizeof(tdStepRt), 0) !=
      tpudistSuccess)
    return tdErr(err, tpudistNoMemory, "out of memory for %zu schedule steps", total);
  size_t scratch = (size_t)schedBufElems(s, TD_BUF_SCRATCH, op->n) * op->esize;
  if (growBuf(&op->scratch, &op->scratch_cap, scratch, 1, 1) != tpudistSuccess)
    return tdErr(err, tpudistNoMemory, "out of memory for %zu scratch bytes", scratch);
  op->bufs[TD_BUF_SCRATCH] = scratch ? op->scratch : NULL;
  op->nxfers = 0;
  op->npieces = 0;
  op->inflight = 0;
  size_t base = 0;
  for (uint32_t i = 0; i < s->nstreams; i++) {
    op->stream_base[i] = (uint32_t)base;
    op->lo[i] = op->nx[i] = 0;
    for (uint32_t j = 0; j < s->streams[i].nsteps; j++) {
      TD_CHECK(checkStep(op, &s->streams[i].steps[j], err));
      TD_CHECK(bindStep(op, &s->streams[i].steps[j], &op->rt[base + j], err));
    }
    assignOrdinals(op, i);
    base += s->streams[i].nsteps;
  }
  if (growBuf((void **)&op->xfers, &op->xfer_cap, op->nxfers ? op->nxfers : 1, sizeof(tdXfer), 0) !=
      tpudistSuccess)
    return tdErr(err, tpudistNoMemory, "out of memory for %zu transfers", op->nxfers);
  op->bound_sched = s;
  op->bound_n = op->n;
  op->bound_esize = op->esize;
  memcpy(op->bound_bufs, op->bufs, sizeof(op->bufs));
  return tpudistSuccess;
}

static int canIssue(const tdOp *op, uint32_t s, uint32_t j) {
  const tdStep *st = &op->sched->streams[s].steps[j];
  for (int k = 0; k < 2; k++) {
    const tdDep *d = &st->deps[k];
    if (d->stream != TD_NO_DEP && op->rt[op->stream_base[d->stream] + d->step].state != TD_RT_DONE)
      return 0;
  }
  const tdStepRt *rt = op->rt + op->stream_base[s];
  for (uint32_t i = op->lo[s]; i < j; i++)
    if (rt[i].state != TD_RT_DONE && schedSpansConflict(&rt[i].sp, &rt[j].sp)) return 0;
  return 1;
}

/* The bound pointer of operand o (tdOpnd SRC or DST) of a step. */
static char *opndPtr(const tdStepRt *rt, unsigned o) {
  return o == TD_OPND_SRC ? rt->src : rt->dst;
}

/* The pointer of operand o (tdOpnd SRC or DST) of a piece of a parted operation. */
static char *pieceOpnd(const tdPiece *pc, unsigned o) {
  return o == TD_OPND_SRC ? pc->src : pc->dst;
}

/* Piece k of a parted operation's step: its pointers and length into x. */
static void partedPiece(const tdOp *op, const tdStepRt *rt, const tdStepSem *m, uint32_t k,
                        int send, tdXfer *x) {
  const tdPiece *pc = &op->pieces[rt->piece0 + k];
  x->len = pc->len;
  x->buf = send ? pieceOpnd(pc, m->wire) : pc->dst;
  if (!send && m->effect == TD_EFFECT_REDUCE) x->reduce_src = pieceOpnd(pc, m->a);
}

/* A local step (COPY, REDUCE) of a parted operation: its effect piece by piece. */
static void partedLocal(const tdOp *op, const tdStepRt *rt, const tdStepSem *m) {
  for (uint32_t k = 0; k < rt->npieces; k++) {
    const tdPiece *pc = &op->pieces[rt->piece0 + k];
    char *a = pieceOpnd(pc, m->a);
    if (pc->len && m->effect == TD_EFFECT_REDUCE)
      kernelReduce(pc->dst, a, pieceOpnd(pc, m->b), pc->len / op->esize, op->dtype, op->redop);
    else if (pc->len && m->effect == TD_EFFECT_COPY && pc->dst != a)
      memmove(pc->dst, a, pc->len);
  }
}

static tpudistResult_t postPiece(tdOp *op, const tdStep *st, tdStepRt *rt, uint32_t s, uint32_t k,
                                 int send, char *err) {
  const tdStepSem *m = &tdStepSemTable[st->op];
  size_t P = rt->psize, off = (size_t)k * P;
  tdXfer *x = &op->xfers[(send ? rt->xout : rt->xin) + k];
  memset(x, 0, sizeof(*x));
  x->peer = send ? schedSendPeer(st) : schedRecvPeer(st);
  x->key.seq = op->seq;
  x->key.stream = s;
  x->key.ordinal = send ? rt->ord_out : rt->ord_in;
  x->key.piece = k;
  if (rt->piece0 != TD_NO_PIECE) {
    partedPiece(op, rt, m, k, send, x);
  } else {
    x->len = rt->len ? TD_MIN(P, rt->len - off) : 0;
    char *base = send ? opndPtr(rt, m->wire) : rt->dst;
    x->buf = base ? base + off : NULL;
    if (!send && m->effect == TD_EFFECT_REDUCE) {
      char *red = opndPtr(rt, m->a);
      x->reduce_src = red ? red + off : NULL;
    }
  }
  x->dtype = op->dtype;
  x->op = op->redop;
  x->peer_reduces = send && (op->coll == TD_COLL_ALLREDUCE || op->coll == TD_COLL_REDUCE ||
                             op->coll == TD_COLL_REDUCESCATTER);
  x->source = -1;
  op->inflight++;
  tpudistResult_t r = send ? transportPostSend(op->net, x) : transportPostRecv(op->net, x);
  if (r != tpudistSuccess)
    return tdErr(err, r, "stream %u: posting a %s of %zu bytes %s rank %d failed: %s", s,
                 send ? "send" : "receive", x->len, send ? "to" : "from", x->peer,
                 op->net->err.msg);
  return tpudistSuccess;
}

static tpudistResult_t issueStep(tdOp *op, uint32_t s, uint32_t j, char *err) {
  const tdStep *st = &op->sched->streams[s].steps[j];
  tdStepRt *rt = &op->rt[op->stream_base[s] + j];
  const tdStepSem *m = &tdStepSemTable[st->op];
  rt->state = TD_RT_ISSUED;
  if (m->flags & (TD_SEM_WIRE_IN | TD_SEM_WIRE_OUT)) { /* a fused step posts its receives first */
    int send = !(m->flags & TD_SEM_WIRE_IN);
    for (uint32_t k = 0; k < rt->npieces; k++) TD_CHECK(postPiece(op, st, rt, s, k, send, err));
    return tpudistSuccess;
  }
  char *a = opndPtr(rt, m->a);
  if (rt->piece0 != TD_NO_PIECE)
    partedLocal(op, rt, m);
  else if (rt->len && m->effect == TD_EFFECT_REDUCE)
    kernelReduce(rt->dst, a, opndPtr(rt, m->b), rt->len / op->esize, op->dtype, op->redop);
  else if (rt->len && m->effect == TD_EFFECT_COPY && rt->dst != a)
    memmove(rt->dst, a, rt->len);
  rt->state = TD_RT_DONE;
  return tpudistSuccess;
}

/* Single-phase all-to-all-v: a message whose length the two ends disagree on (the receiver's
 * transport reports tpudistInvalidUsage; a single-copy sender learns it from the receiver) is
 * consumed whole by the transport, since every message is one piece, so the plan can run on:
 * every other message still flows and no peer waits for one that never comes. The operation ends
 * with the first such error; the communicator is not broken. */
static int vMismatch(tdOp *op, const tdXfer *x, int send) {
  if (!op->vlocal || op->chk_phase == 1 || x->result != tpudistInvalidUsage) return 0;
  if (op->vres == tpudistSuccess) {
    tdNet *c = op->net;
    size_t es = op->esize ? op->esize : 1;
    op->vres = errRecordf(&c->err, TD_SUBSYS_COLL, tpudistInvalidUsage,
                          "AllToAllv seq %llu: rank %d's %s disagree with this rank's (rank %d) "
                          "%s[%d] = %zu elements of %zu bytes: %s",
                          (unsigned long long)op->seq, x->peer, send ? "recvcounts" : "sendcounts",
                          c->rank, send ? "sendcounts" : "recvcounts", x->peer, x->len / es, es,
                          c->err.msg);
  }
  return 1;
}

static tpudistResult_t xferDone(tdOp *op, const tdXfer *x, uint32_t s, const char *what,
                                char *err) {
  __atomic_thread_fence(__ATOMIC_ACQUIRE);
  op->inflight--;
  if (x->result == tpudistSuccess || vMismatch(op, x, what[0] == 's')) return tpudistSuccess;
  return tdErr(err, x->result, "stream %u: %s rank %d failed: %s", s, what, x->peer,
               op->net->err.msg);
}

/* Advances an issued step: counts finished pieces, forwards fused pieces in order. */
static tpudistResult_t pollStep(tdOp *op, uint32_t s, uint32_t j, int *changed, char *err) {
  const tdStep *st = &op->sched->streams[s].steps[j];
  tdStepRt *rt = &op->rt[op->stream_base[s] + j];
  if (rt->xin != TD_NONE)
    while (rt->rin < rt->npieces && op->xfers[rt->xin + rt->rin].done) {
      TD_CHECK(xferDone(op, &op->xfers[rt->xin + rt->rin], s, "receive from", err));
      rt->rin++;
      *changed = 1;
    }
  int fused = schedFused(st->op);
  while (fused && rt->fwd < rt->rin) {
    TD_CHECK(postPiece(op, st, rt, s, rt->fwd, 1, err));
    rt->fwd++;
    *changed = 1;
  }
  if (rt->xout != TD_NONE) {
    uint32_t posted = fused ? rt->fwd : rt->npieces;
    while (rt->rout < posted && op->xfers[rt->xout + rt->rout].done) {
      TD_CHECK(xferDone(op, &op->xfers[rt->xout + rt->rout], s, "send to", err));
      rt->rout++;
      *changed = 1;
    }
  }
  if ((rt->xin == TD_NONE || rt->rin == rt->npieces) &&
      (rt->xout == TD_NONE || rt->rout == rt->npieces)) {
    rt->state = TD_RT_DONE;
    *changed = 1;
  }
  return tpudistSuccess;
}

/* One pass over stream s: poll in-flight steps, retire the done prefix, issue what may issue. */
static tpudistResult_t streamPass(tdOp *op, uint32_t s, int *changed, char *err) {
  uint32_t n = op->sched->streams[s].nsteps;
  tdStepRt *rt = op->rt + op->stream_base[s];
  for (uint32_t j = op->lo[s]; j < op->nx[s]; j++)
    if (rt[j].state == TD_RT_ISSUED) TD_CHECK(pollStep(op, s, j, changed, err));
  while (op->lo[s] < op->nx[s] && rt[op->lo[s]].state == TD_RT_DONE) op->lo[s]++;
  while (op->nx[s] < n && canIssue(op, s, op->nx[s])) {
    TD_CHECK(issueStep(op, s, op->nx[s], err));
    op->nx[s]++;
    *changed = 1;
  }
  while (op->lo[s] < op->nx[s] && rt[op->lo[s]].state == TD_RT_DONE) op->lo[s]++;
  return tpudistSuccess;
}

static tpudistResult_t execCollProgress(tdOp *op, int *progressed, char *err) {
  for (;;) {
    int changed;
    do {
      changed = 0;
      for (uint32_t s = 0; s < op->sched->nstreams; s++) TD_CHECK(streamPass(op, s, &changed, err));
      if (changed) *progressed = 1;
    } while (changed);
    for (uint32_t s = 0; s < op->sched->nstreams; s++)
      if (op->lo[s] < op->sched->streams[s].nsteps) return tpudistSuccess;
    if (op->phase) { /* the next phase's plan (set by the op's issuer) */
      tdOpPhase next = op->phase;
      op->phase = NULL;
      TD_CHECK(next(op, err));
      TD_CHECK(execCollStart(op, err));
      *progressed = 1;
      continue;
    }
    if (op->avg_count)
      kernelFinishAvg(op->bufs[TD_BUF_OUTPUT], op->avg_count, op->dtype, op->net->nranks);
    op->result = op->vres;
    op->done = 1;
    *progressed = 1;
    return tpudistSuccess;
  }
}

static void execCollDescribe(const tdOp *op, char *buf, size_t len) {
  const tdSched *s = op->sched;
  size_t off = 0;
  buf[0] = 0;
  for (uint32_t i = 0; s && i < s->nstreams && off + 1 < len; i++) {
    if (op->lo[i] >= s->streams[i].nsteps) continue;
    uint32_t j = op->lo[i];
    const tdStep *st = &s->streams[i].steps[j];
    const tdStepRt *rt = &op->rt[op->stream_base[i] + j];
    const char *name = tdStepSemTable[st->op].name;
    int n;
    if (rt->state == TD_RT_WAIT)
      n = snprintf(buf + off, len - off, "%s stream %u step %u (%s) not issued (dependencies); ",
                   s->algo, i, j, name);
    else if (rt->xin != TD_NONE && rt->rin < rt->npieces)
      n = snprintf(buf + off, len - off,
                   "%s stream %u step %u (%s) waiting for rank %d (piece %u of %u; %u steps "
                   "issued); ",
                   s->algo, i, j, name, schedRecvPeer(st), rt->rin, rt->npieces, op->nx[i] - j);
    else
      n = snprintf(buf + off, len - off,
                   "%s stream %u step %u (%s) waiting for rank %d to take piece %u of %u; ",
                   s->algo, i, j, name, schedSendPeer(st), rt->rout, rt->npieces);
    off += n > 0 ? (size_t)n : 0;
  }
  if (off >= 2 && off < len) buf[off - 2] = 0;
  if (!buf[0]) snprintf(buf, len, "nothing pending");
}

static int execCollWaitPeer(const tdOp *op) {
  const tdSched *s = op->sched;
  for (uint32_t i = 0; s && op->rt && i < s->nstreams; i++) {
    if (op->lo[i] >= s->streams[i].nsteps) continue;
    const tdStep *st = &s->streams[i].steps[op->lo[i]];
    const tdStepRt *rt = &op->rt[op->stream_base[i] + op->lo[i]];
    if (rt->state == TD_RT_WAIT) continue; /* waits for a local dependency */
    if (rt->xin != TD_NONE && rt->rin < rt->npieces) return schedRecvPeer(st);
    return schedSendPeer(st);
  }
  return -1;
}

const tdOpKindOps execCollOps = {execCollStart, execCollProgress, execCollDescribe,
                                 execCollWaitPeer};
