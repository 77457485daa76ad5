/*
 * ofi_req.c - each ofi transfer's request and its libfabric operations (the protocol is described
 * in ofi_priv.h): a request's life (new, detached, finished, released), a failed peer's requests,
 * issuing a request's next operation, retrying those the provider refused for now (FI_EAGAIN),
 * and reading the completion queue.
 */
#include <stdlib.h>
#include <string.h>

#include "ofi_priv.h"

int ofiPeerAddr(tdNet *comm, tdOfiComm *c, int p) {
  if (c->addr[p] != FI_ADDR_NOTAVAIL) return 0;
  int n = fi_av_insert(c->av, comm->peers[p].ofi_addr, 1, &c->addr[p], 0, NULL);
  if (n == 1) return 0;
  c->addr[p] = FI_ADDR_NOTAVAIL;
  return n < 0 ? n : -FI_EINVAL;
}

tdOfiReq *ofiReqNew(tdOfiComm *c, tdXfer *x) {
  tdOfiReq *r = c->spare;
  if (r)
    c->spare = r->next;
  else if (!(r = malloc(sizeof(*r))))
    return NULL;
  memset(r, 0, sizeof(*r));
  r->main.req = r->fin.req = r;
  r->x = x;
  r->peer = x->peer;
  r->live = 1;
  r->lnext = c->live;
  if (c->live) c->live->lprev = r;
  c->live = r;
  return r;
}

tdXfer *ofiReqDetach(tdOfiComm *c, tdOfiReq *r) {
  tdXfer *x = r->x;
  r->x = NULL;
  if (x && r->counted) c->busy[r->peer]--;
  r->counted = 0;
  return x;
}

void ofiReqFinish(tdOfiComm *c, tdOfiReq *r, tpudistResult_t res) {
  tdXfer *x = ofiReqDetach(c, r);
  if (x) transportComplete(x, res, r->peer);
}

void ofiReqRelease(tdOfiComm *c, tdOfiReq *r) {
  if (!r->live || r->x || r->main.busy || r->fin.busy || r->queued || r->state != OR_WAIT) return;
  r->live = 0;
  if (r->mr) ofiMrPut(c, r->mr);
  if (r->stage) ofiStagePut(r->stage);
  if (r->lprev)
    r->lprev->lnext = r->lnext;
  else
    c->live = r->lnext;
  if (r->lnext) r->lnext->lprev = r->lprev;
  r->next = c->spare;
  c->spare = r;
}

tpudistResult_t ofiPeerFail(tdNet *comm, tdOfiComm *c, int p, const char *why) {
  if (!c->why[p]) c->why[p] = strdup(why);
  for (tdOfiReq *r = c->live, *next; r; r = next) {
    next = r->lnext;
    if (r->peer != p) continue;
    if (r->main.busy) fi_cancel(&c->ep->fid, &r->main.fc);
    if (r->fin.busy) fi_cancel(&c->ep->fid, &r->fin.fc);
    if (!r->queued) r->state = OR_WAIT; /* nothing more is sent to it */
    ofiReqFinish(c, r, tpudistRemoteError);
    ofiReqRelease(c, r);
  }
  return transportError(comm, tpudistRemoteError, "ofi: rank %d: %s", p,
                        c->why[p] ? c->why[p] : why);
}

static uint64_t lowMask(int bits) {
  return bits >= 64 ? ~0ull : (1ull << bits) - 1;
}

int ofiTag(const tdOfiComm *c, const tdMsgKey *k, int fin, uint64_t *tag, char *err) {
  int p2p = k->stream == TD_P2P_STREAM;
  uint64_t stream = p2p ? TD_OFI_STREAM_P2P : k->stream;
  if (stream > TD_OFI_STREAM_P2P || (stream == TD_OFI_STREAM_P2P && !p2p) ||
      (!p2p && k->ordinal >> TD_OFI_ORD_BITS) || k->piece >> TD_OFI_PIECE_BITS)
    return tdErr(err, tpudistInvalidUsage,
                 "ofi: message key (stream %u ordinal %u piece %u) does not fit the tag (at most "
                 "%u streams, %u messages per stream and pair, %u pieces; see "
                 "TPU_DIST_MAX_PIECES)",
                 k->stream, k->ordinal, k->piece, TD_OFI_STREAM_P2P, 1u << TD_OFI_ORD_BITS,
                 1u << TD_OFI_PIECE_BITS),
           -1;
  int hi_bits = c->tag_bits - 1 - TD_OFI_KEY_LOW_BITS;
  uint64_t hi = p2p ? (uint64_t)(k->ordinal >> TD_OFI_ORD_BITS) : k->seq;
  uint64_t ord = k->ordinal & lowMask(TD_OFI_ORD_BITS);
  *tag = (uint64_t)k->piece | ord << TD_OFI_PIECE_BITS |
         stream << (TD_OFI_PIECE_BITS + TD_OFI_ORD_BITS) |
         (hi & lowMask(hi_bits)) << TD_OFI_KEY_LOW_BITS | (uint64_t)(fin != 0) << (c->tag_bits - 1);
  return 0;
}

static fi_addr_t srcAddr(const tdOfiComm *c, const tdOfiReq *r) {
  return r->peer >= 0 ? c->addr[r->peer] : FI_ADDR_UNSPEC;
}

static uint64_t finTag(const tdOfiComm *c, const tdOfiReq *r) {
  return r->tag | 1ull << (c->tag_bits - 1);
}

/* rc, the result of posting an operation on ctx, as ofiReqIssue returns it; ctx is busy once the
 * provider took the operation. */
static int posted(tdOfiCtx *ctx, ssize_t rc) {
  if (rc == 0) ctx->busy = 1;
  return rc == -FI_EAGAIN ? 1 : (int)rc;
}

static uint64_t cqData(tdNet *comm, int rts) {
  return (uint64_t)comm->rank | (rts ? TD_OFI_RTS_FLAG : 0);
}

int ofiReqIssue(tdNet *comm, tdOfiComm *c, tdOfiReq *r) {
  tdXfer *x = r->x;
  int rc = 0;
  switch (r->state) {
    case OR_SEND:
      rc = posted(&r->main, fi_tsenddata(c->ep, x->buf, x->len, NULL, cqData(comm, 0),
                                         c->addr[r->peer], r->tag, &r->main.fc));
      break;
    case OR_RTS:
      rc = posted(&r->fin,
                  fi_trecv(c->ep, NULL, 0, NULL, c->addr[r->peer], finTag(c, r), 0, &r->fin.fc));
      if (rc != 0) return rc;
      r->state = OR_RTS_SEND;
      /* fall through */
    case OR_RTS_SEND:
      rc = posted(&r->main, fi_tsenddata(c->ep, &r->rts, sizeof(r->rts), NULL, cqData(comm, 1),
                                         c->addr[r->peer], r->tag, &r->main.fc));
      break;
    case OR_RECV:
      rc = posted(&r->main,
                  fi_trecv(c->ep, r->land, r->cap, NULL, srcAddr(c, r), r->tag, 0, &r->main.fc));
      break;
    case OR_READ:
      rc = posted(&r->main, fi_read(c->ep, r->land, (size_t)r->rts.len, NULL, c->addr[r->peer],
                                    r->rts.addr, r->rts.key, &r->main.fc));
      break;
    case OR_FIN:
      rc = (int)fi_tinject(c->ep, NULL, 0, c->addr[r->peer], finTag(c, r));
      if (rc == -FI_EAGAIN) return 1;
      if (rc == 0) r->state = OR_WAIT;
      return rc;
    default:
      return 0;
  }
  if (rc == 0) r->state = OR_WAIT;
  return rc;
}

/* r's next operation could not be posted (libfabric error rc): its peer fails. */
static tpudistResult_t issueFailed(tdNet *comm, tdOfiComm *c, tdOfiReq *r, int rc) {
  r->state = OR_WAIT;
  if (r->peer >= 0) return ofiPeerFail(comm, c, r->peer, c->lib->strerror(-rc));
  ofiReqFinish(c, r, tpudistSystemError);
  return transportError(comm, tpudistSystemError, "ofi: posting an any-source receive: %s",
                        c->lib->strerror(-rc));
}

tpudistResult_t ofiReqNext(tdNet *comm, tdOfiComm *c, tdOfiReq *r) {
  int rc = ofiReqIssue(comm, c, r);
  if (rc == 1) {
    r->queued = 1;
    r->next = NULL;
    if (c->retry_tail)
      c->retry_tail->next = r;
    else
      c->retry_head = r;
    c->retry_tail = r;
  }
  return rc < 0 ? issueFailed(comm, c, r, rc) : tpudistSuccess;
}

tpudistResult_t ofiRetry(tdNet *comm, tdOfiComm *c, int *moved) {
  tpudistResult_t first = tpudistSuccess;
  while (c->retry_head) {
    tdOfiReq *r = c->retry_head;
    int dead = r->peer >= 0 && c->why[r->peer];
    int rc = dead ? 0 : ofiReqIssue(comm, c, r);
    if (rc == 1) break;
    c->retry_head = r->next;
    if (!c->retry_head) c->retry_tail = NULL;
    r->next = NULL;
    r->queued = 0;
    *moved = 1;
    if (dead) {
      r->state = OR_WAIT;
      ofiReqFinish(c, r, tpudistRemoteError);
    } else if (rc < 0) {
      tpudistResult_t res = issueFailed(comm, c, r, rc);
      if (first == tpudistSuccess) first = res;
    }
    ofiReqRelease(c, r);
  }
  return first;
}

/* The sender of a receive's message (from the remote CQ data); -1 if absent or not a rank. */
static int msgSource(tdNet *comm, uint64_t flags, uint64_t data) {
  if (!(flags & FI_REMOTE_CQ_DATA)) return -1;
  uint32_t src = (uint32_t)data & ~TD_OFI_RTS_FLAG;
  return src < (uint32_t)comm->nranks ? (int)src : -1;
}

/* r's receive got a message of got bytes from src where it expects x->len: fails it naming the
 * sender. */
static void recvMismatch(tdNet *comm, tdOfiComm *c, tdOfiReq *r, int src, size_t got) {
  tdXfer *x = ofiReqDetach(c, r);
  if (x) transportLenMismatch(comm, x, src, got);
}

/* An announcement arrived for r from src (already in r->rts unless truncated): the payload is
 * read, or, when the lengths differ, the receive fails; the sender gets its FIN either way. */
static void rtsArrived(tdNet *comm, tdOfiComm *c, tdOfiReq *r, int src, size_t got) {
  r->rma = 1;
  if (got != sizeof(r->rts) || r->rts.magic != TD_OFI_RTS_MAGIC || r->rts.len != r->x->len) {
    recvMismatch(comm, c, r, src, got == sizeof(r->rts) ? (size_t)r->rts.len : got);
    r->state = OR_FIN;
  } else {
    r->state = OR_READ;
  }
  ofiReqNext(comm, c, r);
}

/* The tagged receive of r completed: a whole message or an announcement. */
static void recvDone(tdNet *comm, tdOfiComm *c, tdOfiReq *r, const struct fi_cq_tagged_entry *e) {
  int src = msgSource(comm, e->flags, e->data);
  if (src < 0 || ofiPeerAddr(comm, c, src) != 0) {
    transportError(comm, tpudistRemoteError, "ofi: a message without a valid sender rank");
    ofiReqFinish(c, r, tpudistRemoteError);
    return;
  }
  if (r->peer < 0) r->peer = src; /* an any-source receive learns its sender */
  if (e->data & TD_OFI_RTS_FLAG) {
    memcpy(&r->rts, r->land, TD_MIN(sizeof(r->rts), e->len));
    rtsArrived(comm, c, r, src, e->len);
  } else if (e->len != r->x->len) {
    recvMismatch(comm, c, r, src, e->len);
  } else {
    if (r->stage) transportDeliver(r->x, 0, r->stage->buf, r->x->len);
    ofiReqFinish(c, r, tpudistSuccess);
  }
}

static void mainDone(tdNet *comm, tdOfiComm *c, tdOfiReq *r, const struct fi_cq_tagged_entry *e) {
  if (!r->x) return; /* failed or cancelled earlier: only its completions are awaited */
  if (r->send) {
    if (!r->fin.busy) ofiReqFinish(c, r, tpudistSuccess);
  } else if (!r->rma) {
    recvDone(comm, c, r, e);
  } else { /* the read of an announced message */
    if (r->stage) transportDeliver(r->x, 0, r->stage->buf, r->x->len);
    r->state = OR_FIN;
    ofiReqFinish(c, r, tpudistSuccess);
    ofiReqNext(comm, c, r);
  }
}

/* An error completion of one of r's operations. */
static tpudistResult_t opError(tdNet *comm, tdOfiComm *c, tdOfiReq *r, const tdOfiCtx *ctx,
                               const struct fi_cq_err_entry *ee) {
  if (ee->err == FI_ECANCELED || !r->x) return tpudistSuccess;
  if (ee->err == FI_ETRUNC && ctx == &r->main && !r->send && !r->rma) {
    int src = msgSource(comm, ee->flags, ee->data);
    if (src < 0) src = r->peer;
    tdXfer *x = ofiReqDetach(c, r); /* an announcement always fits: this is a whole message */
    transportError(comm, tpudistInvalidUsage,
                   "message from rank %d (seq %llu stream %u ordinal %u piece %u) is longer "
                   "than the %zu bytes the receive expects (mismatched calls?)",
                   src, (unsigned long long)x->key.seq, x->key.stream, x->key.ordinal, x->key.piece,
                   x->len);
    transportComplete(x, tpudistInvalidUsage, src);
    return tpudistInvalidUsage;
  }
  char why[TD_ERRLEN];
  snprintf(why, sizeof(why), "%s (provider: %s)", c->lib->strerror(ee->err),
           fi_cq_strerror(c->cq, ee->prov_errno, ee->err_data, NULL, 0));
  if (r->peer < 0) {
    ofiReqFinish(c, r, tpudistSystemError);
    return transportError(comm, tpudistSystemError, "ofi: any-source receive: %s", why);
  }
  return ofiPeerFail(comm, c, r->peer, why);
}

tpudistResult_t ofiPollCq(tdNet *comm, tdOfiComm *c, int *moved) {
  tpudistResult_t first = tpudistSuccess;
  struct fi_cq_tagged_entry e[16];
  /* An empty read still progresses the provider, which may handle only one event of its own per
   * read (tcp;ofi_rxm: FI_OFI_RXM_COMP_PER_PROGRESS, 1): with requests in flight, a few empty
   * reads are allowed before giving up. */
  int empty = c->live ? 16 : 1;
  for (int round = 0; round < 64; round++) {
    ssize_t n = fi_cq_read(c->cq, e, TD_ARRAY_SIZE(e));
    if (n == -FI_EAGAIN && --empty > 0) continue;
    if (n == -FI_EAGAIN) break;
    if (n == -FI_EAVAIL) {
      struct fi_cq_err_entry ee;
      memset(&ee, 0, sizeof(ee));
      if (fi_cq_readerr(c->cq, &ee, 0) != 1) break;
      tdOfiCtx *ctx = ee.op_context;
      ctx->busy = 0;
      *moved = 1;
      tpudistResult_t res = opError(comm, c, ctx->req, ctx, &ee);
      if (res != tpudistSuccess && first == tpudistSuccess) first = res;
      ofiReqRelease(c, ctx->req);
      continue;
    }
    if (n < 0)
      return transportError(comm, tpudistSystemError, "ofi: reading the completion queue: %s",
                            c->lib->strerror((int)-n));
    for (ssize_t i = 0; i < n; i++) {
      tdOfiCtx *ctx = e[i].op_context;
      ctx->busy = 0;
      if (ctx == &ctx->req->main)
        mainDone(comm, c, ctx->req, &e[i]);
      else if (ctx->req->x && !ctx->req->main.busy) /* the FIN of an RMA send */
        ofiReqFinish(c, ctx->req, tpudistSuccess);
      ofiReqRelease(c, ctx->req);
    }
    *moved = 1;
    if (n < (ssize_t)TD_ARRAY_SIZE(e)) break;
  }
  return first;
}
