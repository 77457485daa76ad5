/*
 * exec_p2p.c - the send and receive kinds of operation (execP2pOps): one transfer posted to the
 * transport at start, done when the transport marks it done.
 */
#include <stdio.h>

#include "exec.h"
#include "registry.h"

static const char *p2pName(const tdOp *op) {
  return op->kind == TD_OP_SEND ? "send" : "recv";
}

static tpudistResult_t p2pStart(tdOp *op, char *err) {
  tdXfer *x = &op->p2p;
  x->done = 0;
  x->result = tpudistSuccess;
  x->source = -1;
  x->next = NULL;
  op->inflight = 1;
  tpudistResult_t r =
      op->kind == TD_OP_SEND ? transportPostSend(op->net, x) : transportPostRecv(op->net, x);
  if (r != tpudistSuccess)
    return tdErr(err, r, "%s to/from rank %d: the transport refused it (%s)", p2pName(op), x->peer,
                 op->net->err.msg);
  return r;
}

static tpudistResult_t p2pProgress(tdOp *op, int *progressed, char *err) {
  if (!op->p2p.done) return tpudistSuccess;
  __atomic_thread_fence(__ATOMIC_ACQUIRE);
  op->inflight = 0;
  op->source = op->p2p.source;
  *progressed = 1;
  op->result = op->p2p.result;
  op->done = 1;
  if (op->p2p.result != tpudistSuccess)
    return tdErr(err, op->p2p.result, "%s with rank %d failed (%s)", p2pName(op), op->p2p.peer,
                 op->net->err.msg);
  return tpudistSuccess;
}

static void p2pDescribe(const tdOp *op, char *buf, size_t len) {
  snprintf(buf, len, "waiting for rank %d", op->p2p.peer);
}

static int p2pWaitPeer(const tdOp *op) {
  return op->p2p.peer;
}

const tdOpKindOps execP2pOps = {p2pStart, p2pProgress, p2pDescribe, p2pWaitPeer};
