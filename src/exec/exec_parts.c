/*
 * exec_parts.c - binding the steps of a parted operation (a fused host in defer mode,
 * docs/runtime.md "Defer mode: fusion"). Its INPUT and OUTPUT are its parts' buffers concatenated
 * block by block: element w of block b of the operation's buffer is element w - off of block b of
 * the part whose [off, off + n) holds w. A step's element range is cut where it crosses a part
 * (in its source or its destination range), and wire steps further into pieces of the usual
 * piece size within each part, so that every piece has one source and one destination pointer.
 * SCRATCH is the operation's own, contiguous, and cut at the same places (its blocks have the same
 * length), so that a piece of scratch and the piece of INPUT or OUTPUT at the other end of its
 * message have the same length. Both ends of a message therefore derive the same pieces: the ranks
 * agreed on the members and their counts, and a message's two ends cover the same positions within
 * their blocks.
 */
#include <string.h>

#include "exec.h"
#include "step_sem.h"

/* The part holding position w of a block (parts cover [0, op->n) in order, none empty). */
static const tdPart *partAt(const tdOp *op, uint64_t w) {
  size_t lo = 0, hi = op->nparts;
  while (hi - lo > 1) {
    size_t mid = lo + (hi - lo) / 2;
    if (op->parts[mid].off <= w)
      lo = mid;
    else
      hi = mid;
  }
  return &op->parts[lo];
}

/* Pointer to element x of buffer kind k, and *run: elements from x to the end of its part. */
static char *partRun(const tdOp *op, unsigned k, uint64_t x, uint64_t *run) {
  uint64_t blk = x / op->n, w = x % op->n;
  const tdPart *p = partAt(op, w);
  *run = p->off + p->n - w;
  if (k == TD_BUF_SCRATCH) return op->bufs[TD_BUF_SCRATCH] + x * op->esize;
  char *b = p->bufs[k];
  return b ? b + (blk * p->n + w - p->off) * op->esize : NULL;
}

tpudistResult_t execNullBuf(const tdOp *op, unsigned k, char *err) {
  return tdErr(err, tpudistInternalError, "schedule %s/%s uses %s, which is NULL on rank %d",
               schedCollName(op->sched->coll), op->sched->algo, schedBufName((tdBufKind)k),
               op->net->rank);
}

static tpudistResult_t pieceAdd(tdOp *op, char *src, char *dst, size_t len, char *err) {
  if (tdGrow(&op->pieces, &op->pieces_cap, op->npieces + 1, sizeof(tdPiece), 64))
    return tdErr(err, tpudistNoMemory, "out of memory for %zu pieces", op->npieces + 1);
  op->pieces[op->npieces++] = (tdPiece){src, dst, len};
  return tpudistSuccess;
}

tpudistResult_t execPartsBind(tdOp *op, const tdStep *st, tdStepRt *rt, uint64_t sb, uint64_t db,
                              uint64_t elems, size_t piece, char *err) {
  int use_src = schedUsesSrc(st->op), use_dst = schedUsesDst(st->op);
  uint64_t per = piece / op->esize ? piece / op->esize : 1, t = 0;
  size_t first = op->npieces;
  if (first >= TD_NO_PIECE) return tdErr(err, tpudistNoMemory, "too many pieces (%zu)", first);
  do { /* an empty step is one empty piece, as in an unfused operation */
    uint64_t run = TD_MIN(elems - t, per), r = 0;
    char *s = NULL, *d = NULL;
    if (use_src && elems) {
      s = partRun(op, st->src.buf, sb + t, &r);
      if (!s) return execNullBuf(op, st->src.buf, err);
      run = TD_MIN(run, r);
    }
    if (use_dst && elems) {
      d = partRun(op, st->dst.buf, db + t, &r);
      if (!d) return execNullBuf(op, st->dst.buf, err);
      run = TD_MIN(run, r);
    }
    TD_CHECK(pieceAdd(op, s, d, (size_t)run * op->esize, err));
    t += run;
  } while (t < elems);
  rt->piece0 = (uint32_t)first;
  rt->npieces = (uint32_t)(op->npieces - first);
  return tpudistSuccess;
}
