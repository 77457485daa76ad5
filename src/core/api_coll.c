/*
 * api_coll.c - the collective entry points: argument validation (null pointers, count x size
 * overflow, unknown datatype or op, root out of range, overlapping buffers that are not the
 * in-place form, use after destroy) with tpudistInvalidArgument / tpudistInvalidUsage and a
 * message; then the schedule (selected, cached) bound into an operation and issued, or, for small
 * all-reduces, all-gathers and all-to-alls on one host, the slot operation (src/exec/exec_small.c).
 * Avg reduces as Sum and divides OUTPUT at the end (kernelFinishAvg).
 */
#include <string.h>

#include "comm.h"
#include "kernels.h"

typedef struct {
  const char *fn;
  tdColl coll;
  const void *send;
  void *recv;
  size_t count;
  int dtype, op, root;
} tdCall;

static int reduces(tdColl c) {
  return c == TD_COLL_ALLREDUCE || c == TD_COLL_REDUCE || c == TD_COLL_REDUCESCATTER;
}

/* Blocks per buffer side that count multiplies (for the overflow check and selection). */
static uint64_t callBlocks(const tdCall *a, int nranks) {
  return (a->coll == TD_COLL_ALLGATHER || a->coll == TD_COLL_REDUCESCATTER ||
          a->coll == TD_COLL_ALLTOALL)
             ? (uint64_t)nranks
             : 1;
}

static int overlaps(const void *a, size_t alen, const void *b, size_t blen) {
  uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
  return alen && blen && x < y + blen && y < x + alen;
}

/* In-place form of the call (docs/schedule-ir.md), or an error for other overlaps. */
static tpudistResult_t callInplace(tdComm *c, const tdCall *a, size_t esize, int *inplace) {
  size_t one = a->count * esize, all = one * (size_t)c->net.nranks;
  const char *s = a->send;
  char *r = a->recv;
  int root = a->root == c->net.rank;
  *inplace = 0;
  switch (a->coll) {
    case TD_COLL_ALLREDUCE:
      *inplace = s == r;
      if (!*inplace && overlaps(s, one, r, one)) goto bad;
      return tpudistSuccess;
    case TD_COLL_BROADCAST:
      *inplace = s == r || (!root && !s);
      if (root && !*inplace && overlaps(s, one, r, one)) goto bad;
      return tpudistSuccess;
    case TD_COLL_REDUCE:
      *inplace = s == r;
      if (root && !*inplace && overlaps(s, one, r, one)) goto bad;
      return tpudistSuccess;
    case TD_COLL_ALLGATHER:
      *inplace = r && s == r + (size_t)c->net.rank * one;
      if (!*inplace && overlaps(s, one, r, all)) goto bad;
      return tpudistSuccess;
    case TD_COLL_REDUCESCATTER:
      *inplace = s && r == s + (size_t)c->net.rank * one;
      if (!*inplace && overlaps(s, all, r, one)) goto bad;
      return tpudistSuccess;
    default:
      if (overlaps(s, all, r, all))
        return commError(c, tpudistInvalidArgument,
                         "%s: send and receive buffers overlap "
                         "(not supported in place)",
                         a->fn);
      return tpudistSuccess;
  }
bad:
  return commError(c, tpudistInvalidArgument,
                   "%s: send and receive buffers overlap but are not the in-place form", a->fn);
}

static tpudistResult_t callCheck(tdComm *c, const tdCall *a, size_t *esize) {
  if (!kernelDtypeValid(a->dtype))
    return commError(c, tpudistInvalidArgument, "%s: unknown datatype %d", a->fn, a->dtype);
  if (reduces(a->coll) && !kernelOpValid(a->op))
    return commError(c, tpudistInvalidArgument, "%s: unknown reduction op %d", a->fn, a->op);
  *esize = kernelDtypeSize((tpudistDataType_t)a->dtype);
  uint64_t bytes;
  if (__builtin_mul_overflow((uint64_t)a->count, (uint64_t)*esize, &bytes) ||
      __builtin_mul_overflow(bytes, callBlocks(a, c->net.nranks), &bytes) ||
      bytes > (SIZE_MAX >> 1))
    return commError(c, tpudistInvalidArgument, "%s: count %zu of %s overflows the address space",
                     a->fn, a->count, kernelDtypeName((tpudistDataType_t)a->dtype));
  int rooted = a->coll == TD_COLL_BROADCAST || a->coll == TD_COLL_REDUCE;
  if (rooted && (a->root < 0 || a->root >= c->net.nranks))
    return commError(c, tpudistInvalidArgument, "%s: root %d out of range [0, %d)", a->fn, a->root,
                     c->net.nranks);
  if (a->count) {
    int need_send = a->coll != TD_COLL_BROADCAST || a->root == c->net.rank;
    int need_recv = a->coll != TD_COLL_REDUCE || a->root == c->net.rank;
    if ((need_send && !a->send) || (need_recv && !a->recv))
      return commError(c, tpudistInvalidArgument, "%s: %s is NULL", a->fn,
                       need_send && !a->send ? "sendbuff" : "recvbuff");
  }
  return tpudistSuccess;
}

/* Debug mode: the failure at the call that caused it, with the call's arguments. */
static tpudistResult_t debugFailure(tdComm *c, const tdCall *a, uint64_t seq, tpudistResult_t r) {
  char cause[TD_ERRLEN];
  snprintf(cause, sizeof(cause), "%s", c->net.err.msg);
  const char *dt = kernelDtypeValid(a->dtype) ? kernelDtypeName((tpudistDataType_t)a->dtype) : "?";
  const char *op = reduces(a->coll) ? kernelOpName((tpudistRedOp_t)a->op) : "-";
  return commError(c, r, "%s(count %zu, %s, %s, root %d) seq %llu failed: %s", a->fn, a->count, dt,
                   op, a->root, (unsigned long long)seq, cause);
}

static tpudistResult_t collCall(tpudistComm_t comm, const tdCall *a, tpudistRequest_t *req) {
  TD_CHECK(commEnter(comm ? &comm->c : NULL, a->fn));
  tdComm *c = &comm->c;
  char err[TD_ERRLEN] = "";
  size_t esize = 0;
  int inplace = 0;
  const tdSched *sched = NULL;
  tpudistResult_t r = callCheck(c, a, &esize);
  if (r == tpudistSuccess) r = callInplace(c, a, esize, &inplace);
  if (r != tpudistSuccess) goto out;
  int rooted = a->coll == TD_COLL_BROADCAST || a->coll == TD_COLL_REDUCE;
  uint64_t bytes = (uint64_t)a->count * esize * callBlocks(a, c->net.nranks);
  int small = !c->check && !c->net.cfg->sched_file && !selectOverride(c->select, a->coll) &&
              execSmallEligible(&c->exec, a->coll, bytes);
  if (!small)
    r = commGetSched(c, a->coll, rooted ? a->root : 0, inplace, a->count, bytes, (uint32_t)esize,
                     &sched, err);
  if (r != tpudistSuccess) {
    r = commError(c, r, "%s: %s", a->fn, err);
    goto out;
  }
  tdOp *op = execOpAlloc(&c->exec);
  if (!op) {
    r = commError(c, tpudistNoMemory, "%s: out of memory", a->fn);
    goto out;
  }
  op->kind = TD_OP_COLL;
  op->coll = a->coll;
  op->sched = sched;
  op->algo = c->last_algo;
  op->seq = c->exec.coll_seq++;
  op->n = a->count;
  op->esize = esize;
  op->dtype = a->dtype;
  op->redop = a->op == tpudistAvg ? tpudistSum : a->op;
  op->root = a->root;
  op->bufs[TD_BUF_INPUT] = (char *)(a->send ? a->send : a->recv);
  op->bufs[TD_BUF_OUTPUT] = a->recv;
  if (a->op == tpudistAvg && reduces(a->coll) &&
      (a->coll != TD_COLL_REDUCE || a->root == c->net.rank))
    op->avg_count = a->count;
  if (small) {
    execSmallInit(op);
    c->last_algo = op->algo; /* tpudistLastAlgorithm */
  }
  if (!groupActive() && deferApplies(c, a->coll, req)) { /* checked, if at all, when it starts */
    op->user_op = reduces(a->coll) ? a->op : -1;
    if (c->check) op->dchk_seq = c->exec.coll_seq++;
    deferAdd(c, op, bytes);
    *req = (tpudistRequest_t)op;
    goto out;
  }
  if (small) {
    if (!req && !groupActive() && execSmallRun(op, &r))
      execOpRelease(op);
    else
      r = commIssue(op, req);
    goto out;
  }
  if ((r = checkPrepare(c, op, reduces(a->coll) ? a->op : -1, err)) != tpudistSuccess) {
    op->done = 1;
    execOpRelease(op);
    r = commError(c, r, "%s: %s", a->fn, err);
    goto out;
  }
  uint64_t seq = op->seq;
  r = commIssue(op, req);
  if (r != tpudistSuccess && c->mode == TPUDIST_MODE_DEBUG) r = debugFailure(c, a, seq, r);
out:
  commLeave(c);
  return r;
}

TPUDIST_API tpudistResult_t tpudistAllReduce(const void *sendbuff, void *recvbuff, size_t count,
                                             tpudistDataType_t datatype, tpudistRedOp_t op,
                                             tpudistComm_t comm, tpudistRequest_t *req) {
  tdCall a = {"AllReduce", TD_COLL_ALLREDUCE, sendbuff, recvbuff, count, datatype, op, 0};
  return collCall(comm, &a, req);
}

TPUDIST_API tpudistResult_t tpudistBroadcast(const void *sendbuff, void *recvbuff, size_t count,
                                             tpudistDataType_t datatype, int root,
                                             tpudistComm_t comm, tpudistRequest_t *req) {
  tdCall a = {"Broadcast", TD_COLL_BROADCAST, sendbuff,   recvbuff,
              count,       datatype,          tpudistSum, root};
  return collCall(comm, &a, req);
}

TPUDIST_API tpudistResult_t tpudistReduce(const void *sendbuff, void *recvbuff, size_t count,
                                          tpudistDataType_t datatype, tpudistRedOp_t op, int root,
                                          tpudistComm_t comm, tpudistRequest_t *req) {
  tdCall a = {"Reduce", TD_COLL_REDUCE, sendbuff, recvbuff, count, datatype, op, root};
  return collCall(comm, &a, req);
}

TPUDIST_API tpudistResult_t tpudistAllGather(const void *sendbuff, void *recvbuff, size_t sendcount,
                                             tpudistDataType_t datatype, tpudistComm_t comm,
                                             tpudistRequest_t *req) {
  tdCall a = {"AllGather", TD_COLL_ALLGATHER, sendbuff,   recvbuff,
              sendcount,   datatype,          tpudistSum, 0};
  return collCall(comm, &a, req);
}

TPUDIST_API tpudistResult_t tpudistReduceScatter(const void *sendbuff, void *recvbuff,
                                                 size_t recvcount, tpudistDataType_t datatype,
                                                 tpudistRedOp_t op, tpudistComm_t comm,
                                                 tpudistRequest_t *req) {
  tdCall a = {
      "ReduceScatter", TD_COLL_REDUCESCATTER, sendbuff, recvbuff, recvcount, datatype, op, 0};
  return collCall(comm, &a, req);
}

TPUDIST_API tpudistResult_t tpudistAllToAll(const void *sendbuff, void *recvbuff, size_t count,
                                            tpudistDataType_t datatype, tpudistComm_t comm,
                                            tpudistRequest_t *req) {
  tdCall a = {"AllToAll", TD_COLL_ALLTOALL, sendbuff, recvbuff, count, datatype, tpudistSum, 0};
  return collCall(comm, &a, req);
}

TPUDIST_API tpudistResult_t tpudistAllToAllCounts(const size_t sendcounts[], size_t recvcounts[],
                                                  tpudistComm_t comm, tpudistRequest_t *req) {
  _Static_assert(sizeof(size_t) == sizeof(uint64_t), "size_t travels as uint64");
  tdCall a = {"AllToAllCounts", TD_COLL_ALLTOALL, sendcounts, recvcounts, 1,
              tpudistUint64,    tpudistSum,       0};
  if ((comm && (!sendcounts || !recvcounts)))
    return commError(NULL, tpudistInvalidArgument, "AllToAllCounts: %s is NULL",
                     sendcounts ? "recvcounts" : "sendcounts");
  return collCall(comm, &a, req);
}
