/*
 * request.c - requests (a request is the operation object itself): issuing an operation (deferred
 * in a group; with a NULL request outside a group the call blocks; in debug mode a collective
 * completes before its call returns, its request already done; in defer mode earlier deferred
 * operations start first), tpudistWait, tpudistTest (flush points in defer mode),
 * tpudistRequestSource and tpudistLastAlgorithm.
 */
#include "comm.h"

/* Debug mode completes collectives at their call (point-to-point keeps its semantics). */
static int completesAtCall(const tdOp *op) {
  return commOfOp(op)->mode == TPUDIST_MODE_DEBUG && op->kind != TD_OP_SEND &&
         op->kind != TD_OP_RECV;
}

tpudistResult_t commIssue(tdOp *op, tpudistRequest_t *req) {
  tdComm *comm = commOfOp(op);
  int at_call = completesAtCall(op);
  if (groupActive()) {
    tpudistResult_t r = groupAdd(op, req == NULL, at_call);
    if (r != tpudistSuccess) {
      op->done = 1;
      execOpRelease(op);
      return r;
    }
    if (req) *req = (tpudistRequest_t)op;
    return tpudistSuccess;
  }
  if (comm->mode == TPUDIST_MODE_DEFER) deferFlush(comm, TD_FLUSH_CALL); /* deferred ones first */
  execEnqueue(&comm->exec, &op, 1, req == NULL || at_call);
  if (req && !at_call) {
    *req = (tpudistRequest_t)op;
    return tpudistSuccess;
  }
  tpudistResult_t r = execWait(op);
  if (req && r == tpudistSuccess) { /* debug mode: the request is handed back done */
    *req = (tpudistRequest_t)op;
    return r;
  }
  execOpRelease(op);
  return r;
}

static tpudistResult_t reqCheck(tdOp *op, const char *fn, int allow_freed) {
  if (!op) return commError(NULL, tpudistInvalidArgument, "%s: request is NULL", fn);
  if (op->magic == TD_OP_MAGIC || (allow_freed && op->magic == TD_OP_FREED)) return tpudistSuccess;
  return commError(NULL, tpudistInvalidUsage, "%s: request is not valid (already completed?)", fn);
}

TPUDIST_API tpudistResult_t tpudistWait(tpudistRequest_t req) {
  tdOp *op = (tdOp *)req;
  TD_CHECK(reqCheck(op, "Wait", 0));
  tdComm *comm = commOfOp(op);
  TD_CHECK(commEnter(comm, "Wait"));
  deferTouch(op, TD_FLUSH_WAIT);
  tpudistResult_t r = execWait(op);
  if (op->done) execOpRelease(op);
  commLeave(comm);
  return r;
}

TPUDIST_API tpudistResult_t tpudistTest(tpudistRequest_t req, int *done) {
  tdOp *op = (tdOp *)req;
  TD_CHECK(reqCheck(op, "Test", 0));
  tdComm *comm = commOfOp(op);
  if (!done) return commError(comm, tpudistInvalidArgument, "Test: done is NULL");
  TD_CHECK(commEnter(comm, "Test"));
  deferTouch(op, TD_FLUSH_TEST);
  int d = 0;
  tpudistResult_t r = execTest(op, &d);
  if (d && op->done) execOpRelease(op);
  *done = d;
  commLeave(comm);
  return r;
}

TPUDIST_API tpudistResult_t tpudistRequestSource(tpudistRequest_t req, int *source) {
  tdOp *op = (tdOp *)req;
  TD_CHECK(reqCheck(op, "RequestSource", 1));
  if (!source)
    return commError(commOfOp(op), tpudistInvalidArgument, "RequestSource: source is NULL");
  if (op->kind != TD_OP_RECV)
    return commError(commOfOp(op), tpudistInvalidArgument, "RequestSource: not a receive request");
  /* Progress until the receive is matched (the source is known before the data has arrived). */
  tdBackoff b;
  backoffInit(&b, op->ex->spin_us);
  uint64_t deadline = clockNowNs() + (uint64_t)netTimeoutMs(&commOfOp(op)->net) * 1000000ull;
  for (;;) {
    int s = op->done ? op->source : op->p2p.source;
    if (s >= 0) {
      *source = s;
      return tpudistSuccess;
    }
    int done = 0;
    tpudistResult_t r = execTest(op, &done);
    if (r != tpudistSuccess) return r;
    if (done && op->source < 0)
      return commError(commOfOp(op), tpudistInternalError,
                       "RequestSource: completed without a source");
    if (!done && clockNowNs() > deadline)
      return commError(commOfOp(op), tpudistTimeout,
                       "RequestSource: no matching message within %d ms",
                       netTimeoutMs(&commOfOp(op)->net));
    backoffStep(&b, 0);
  }
}

TPUDIST_API const char *tpudistLastAlgorithm(tpudistComm_t comm) {
  if (!comm || commEnter(&comm->c, NULL) != tpudistSuccess) return "invalid";
  const char *a = comm->c.last_algo;
  commLeave(&comm->c);
  return a;
}
