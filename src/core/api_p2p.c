/*
 * api_p2p.c - point to point (tpudistSend / tpudistRecv, any source) and all-to-all-v. Point to
 * point messages use the p2p stream and one key per ordered pair, matched in order (messages
 * between two ranks arrive in the order sent), so an any-source receive can take any sender's
 * next message.
 *
 * All-to-all-v runs in one of two ways, decided once per communicator (comm_select.c):
 * - one phase, when the algorithm selected at every size needs only this rank's row and column of
 *   the count matrix (direct, pairwise: TD_ALGO_V_LOCAL): the plan is generated from sendcounts
 *   and recvcounts at the call, with one message per ordered pair, empty ones included, each sent
 *   whole. A pair whose counts disagree meets as a length mismatch at the receiver (and at a
 *   single-copy sender): that rank's call returns tpudistInvalidUsage naming the peer and the
 *   counts, every other message still flows, so no rank waits, and the communicator stays usable.
 * - two phases inside one operation (torus, or sizes that select different algorithms): an
 *   all-gather of every rank's send counts (the count matrix), then the data plan generated from
 *   that matrix; a rank whose recvcounts disagree with the matrix fails there, which breaks its
 *   communicator (its peers see it released).
 */
#include <stdlib.h>
#include <string.h>

#include "comm.h"
#include "kernels.h"

static tpudistResult_t p2pCall(const char *fn, tdOpKind kind, void *buf, size_t count,
                               tpudistDataType_t dtype, int peer, tpudistComm_t comm,
                               tpudistRequest_t *req) {
  TD_CHECK(commEnter(comm ? &comm->c : NULL, fn));
  tdComm *c = &comm->c;
  tpudistResult_t r = tpudistSuccess;
  size_t esize = kernelDtypeValid(dtype) ? kernelDtypeSize(dtype) : 0, bytes = 0;
  if (!esize) {
    r = commError(c, tpudistInvalidArgument, "%s: unknown datatype %d", fn, (int)dtype);
  } else if (__builtin_mul_overflow(count, esize, &bytes) || bytes > (SIZE_MAX >> 1)) {
    r = commError(c, tpudistInvalidArgument, "%s: count %zu overflows", fn, count);
  } else if ((peer < 0 || peer >= c->net.nranks) &&
             !(kind == TD_OP_RECV && peer == tpudistAnySource)) {
    r = commError(c, tpudistInvalidArgument, "%s: peer %d out of range [0, %d)", fn, peer,
                  c->net.nranks);
  } else if (count && !buf) {
    r = commError(c, tpudistInvalidArgument, "%s: buffer is NULL", fn);
  }
  if (r != tpudistSuccess) goto out;
  tdOp *op = execOpAlloc(&c->exec);
  if (!op) {
    r = commError(c, tpudistNoMemory, "%s: out of memory", fn);
    goto out;
  }
  op->kind = kind;
  op->seq = 0;
  op->esize = esize;
  op->dtype = dtype;
  memset(&op->p2p, 0, sizeof(op->p2p));
  op->p2p.peer = peer;
  op->p2p.key.seq = 0;
  op->p2p.key.stream = TD_P2P_STREAM;
  op->p2p.buf = buf;
  op->p2p.len = bytes;
  op->p2p.dtype = dtype;
  op->p2p.source = -1;
  r = commIssue(op, req);
out:
  commLeave(c);
  return r;
}

TPUDIST_API tpudistResult_t tpudistSend(const void *sendbuff, size_t count,
                                        tpudistDataType_t datatype, int peer, tpudistComm_t comm,
                                        tpudistRequest_t *req) {
  return p2pCall("Send", TD_OP_SEND, (void *)sendbuff, count, datatype, peer, comm, req);
}

TPUDIST_API tpudistResult_t tpudistRecv(void *recvbuff, size_t count, tpudistDataType_t datatype,
                                        int peer, tpudistComm_t comm, tpudistRequest_t *req) {
  return p2pCall("Recv", TD_OP_RECV, recvbuff, count, datatype, peer, comm, req);
}

/* ---- all-to-all-v ------------------------------------------------------------------------ */

static tpudistResult_t vCheck(tdComm *c, const size_t *sc, const size_t *sd, const size_t *rc,
                              const size_t *rd, const void *sb, const void *rb, size_t esize) {
  if (!sc || !sd || !rc || !rd)
    return commError(c, tpudistInvalidArgument,
                     "AllToAllv: a counts or displacements array is NULL");
  for (int p = 0; p < c->net.nranks; p++) {
    size_t end;
    if (__builtin_add_overflow(sd[p], sc[p], &end) || __builtin_mul_overflow(end, esize, &end) ||
        __builtin_add_overflow(rd[p], rc[p], &end) || __builtin_mul_overflow(end, esize, &end))
      return commError(c, tpudistInvalidArgument, "AllToAllv: counts for peer %d overflow", p);
    if ((sc[p] && !sb) || (rc[p] && !rb))
      return commError(c, tpudistInvalidArgument, "AllToAllv: %s is NULL",
                       sb ? "recvbuff" : "sendbuff");
  }
  return tpudistSuccess;
}

/* The operation's count buffer (op->vbuf) with room for words uint64 words. */
static tpudistResult_t vBuf(tdComm *c, tdOp *op, size_t words) {
  if (words <= op->vbuf_cap) return tpudistSuccess;
  free(op->vbuf);
  op->vbuf = malloc(words * sizeof(uint64_t));
  op->vbuf_cap = op->vbuf ? words : 0;
  if (op->vbuf) return tpudistSuccess;
  return commError(c, tpudistNoMemory, "AllToAllv: out of memory for the counts");
}

/* Single phase (comm->a2av_local): the plan comes from this rank's row and column alone and
 * carries every message, empty ones included; op->vbuf (sendcounts | recvcounts | sdispls |
 * rdispls) is its INPUT/OUTPUT layouts. Counts to and from self that differ cannot be checked by a
 * peer: the block is left out and the operation, which still exchanges with every peer, ends with
 * tpudistInvalidUsage. */
static tpudistResult_t vLocalPlan(tdComm *c, tdOp *op, const size_t *sc, const size_t *sd,
                                  const size_t *rc, const size_t *rd, size_t esize) {
  int n = c->net.nranks, me = c->net.rank;
  char err[TD_ERRLEN] = "";
  TD_CHECK(vBuf(c, op, 4 * (size_t)n));
  uint64_t *vs = op->vbuf, *vr = vs + n, *vsd = vr + n, *vrd = vsd + n;
  for (int p = 0; p < n; p++) {
    vs[p] = sc[p];
    vr[p] = rc[p];
    vsd[p] = sd[p];
    vrd[p] = rd[p];
  }
  if (vs[me] != vr[me]) {
    op->vres = commError(c, tpudistInvalidUsage,
                         "AllToAllv: rank %d sends %zu elements to itself but expects %zu", me,
                         sc[me], rc[me]);
    vs[me] = vr[me] = 0;
  }
  tpudistResult_t r = commAlltoallvLocal(c, vs, vr, vsd, vrd, &op->own_sched, err);
  if (r != tpudistSuccess) return commError(c, r, "AllToAllv: %s", err);
  op->owns_sched = 0; /* a view of the communicator's plan, its layouts in op->vbuf */
  op->sched = &op->own_sched;
  op->algo = c->last_algo;
  op->vlocal = 1;
  op->vphase = 1;
  op->seq = c->exec.coll_seq++;
  op->n = 0;
  op->esize = esize;
  op->bufs[TD_BUF_INPUT] = op->vsend;
  op->bufs[TD_BUF_OUTPUT] = op->vrecv;
  return tpudistSuccess;
}

/* Two phases: op->vbuf: [0,n) send counts | [n, n+n*n) matrix | sdispls | rdispls | recvcounts;
 * the counts exchange (an all-gather of the send counts) runs first. */
static tpudistResult_t vExchangePlan(tdComm *c, tdOp *op, const size_t *sc, const size_t *sd,
                                     const size_t *rc, const size_t *rd) {
  int n = c->net.nranks;
  char err[TD_ERRLEN] = "";
  const tdSched *sched = NULL;
  tpudistResult_t r =
      commGetSched(c, TD_COLL_ALLGATHER, 0, 0, (uint64_t)n, (uint64_t)n * n * 8, 8, &sched, err);
  if (r != tpudistSuccess) return commError(c, r, "AllToAllv: counts exchange: %s", err);
  TD_CHECK(vBuf(c, op, (size_t)n * n + 4 * (size_t)n));
  uint64_t *v = op->vbuf, *vsd = v + n + (size_t)n * n, *vrd = vsd + n, *vrc = vrd + n;
  for (int p = 0; p < n; p++) {
    v[p] = sc[p];
    vsd[p] = sd[p];
    vrd[p] = rd[p];
    vrc[p] = rc[p];
  }
  op->vphase = 0;
  op->phase = collAlltoallvData;
  op->sched = sched;
  op->seq = c->exec.coll_seq;
  c->exec.coll_seq += 2;
  op->n = (uint64_t)n;
  op->esize = 8;
  op->bufs[TD_BUF_INPUT] = (char *)v;
  op->bufs[TD_BUF_OUTPUT] = (char *)(v + n);
  return tpudistSuccess;
}

TPUDIST_API tpudistResult_t tpudistAllToAllv(const void *sendbuff, const size_t sendcounts[],
                                             const size_t sdispls[], void *recvbuff,
                                             const size_t recvcounts[], const size_t rdispls[],
                                             tpudistDataType_t datatype, tpudistComm_t comm,
                                             tpudistRequest_t *req) {
  TD_CHECK(commEnter(comm ? &comm->c : NULL, "AllToAllv"));
  tdComm *c = &comm->c;
  char err[TD_ERRLEN] = "";
  tdOp *op = NULL;
  tpudistResult_t r = tpudistSuccess;
  if (!kernelDtypeValid(datatype)) {
    r = commError(c, tpudistInvalidArgument, "AllToAllv: unknown datatype %d", (int)datatype);
    goto out;
  }
  size_t esize = kernelDtypeSize(datatype);
  if ((r = vCheck(c, sendcounts, sdispls, recvcounts, rdispls, sendbuff, recvbuff, esize)))
    goto out;
  if (!(op = execOpAlloc(&c->exec))) {
    r = commError(c, tpudistNoMemory, "AllToAllv: out of memory");
    goto out;
  }
  op->kind = TD_OP_COLL;
  op->coll = TD_COLL_ALLTOALLV;
  op->dtype = datatype;
  op->redop = tpudistSum;
  op->vsend = (void *)sendbuff;
  op->vrecv = recvbuff;
  if (c->a2av_local)
    r = vLocalPlan(c, op, sendcounts, sdispls, recvcounts, rdispls, esize);
  else
    r = vExchangePlan(c, op, sendcounts, sdispls, recvcounts, rdispls);
  if (r == tpudistSuccess && (r = checkPrepare(c, op, -1, err)) != tpudistSuccess)
    r = commError(c, r, "AllToAllv: %s", err);
  if (r != tpudistSuccess) {
    op->done = 1;
    execOpRelease(op);
    goto out;
  }
  r = commIssue(op, req);
out:
  commLeave(c);
  return r;
}

/* Phase two, called by the executor (lock held) when the counts exchange is done. */
tpudistResult_t collAlltoallvData(tdOp *op, char *err) {
  tdComm *c = commOfOp(op);
  int n = c->net.nranks;
  uint64_t *v = op->vbuf, *m = v + n, *sd = m + (size_t)n * n, *rd = sd + n, *rc = rd + n;
  for (int p = 0; p < n; p++)
    if (m[(size_t)p * n + c->net.rank] != rc[p])
      return tdErr(err, tpudistInvalidArgument,
                   "AllToAllv: rank %d sends %llu elements to rank %d, which expects %llu", p,
                   (unsigned long long)m[(size_t)p * n + c->net.rank], c->net.rank,
                   (unsigned long long)rc[p]);
  size_t esize = kernelDtypeSize((tpudistDataType_t)op->dtype);
  if (op->owns_sched) schedFree(&op->own_sched);
  op->owns_sched = 0;
  TD_CHECK(commGenAlltoallv(c, m, sd, rd, (uint32_t)esize, &op->own_sched, err));
  op->owns_sched = 1;
  op->sched = &op->own_sched;
  op->algo = c->last_algo;
  op->vphase = 1;
  op->seq++;
  op->n = 0;
  op->esize = esize;
  op->bufs[TD_BUF_INPUT] = op->vsend;
  op->bufs[TD_BUF_OUTPUT] = op->vrecv;
  return tpudistSuccess;
}
