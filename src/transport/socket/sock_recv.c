/*
 * sock_recv.c - the socket transport's receiving side: frames in, on each stream of a pair.
 *
 * A frame header is checked (sockHeaderCheck), then its payload goes where its message goes:
 * - a whole message: straight into the posted receive it matches (peer-specific, then any-source),
 *   else into an unexpected message (heap buffer grown as its bytes arrive, so a header announcing
 *   gigabytes costs only what is really sent), matched when its receive is posted;
 * - a part of a split message: into the message's record, found among the peer's messages with
 *   parts still arriving (the oldest with the same key, length and part count whose part has not
 *   begun; a part that comes before part 0 opens the record). The message is matched when part 0
 *   begins: if no other part has begun and a receive is posted, every part goes straight into it;
 *   else the parts are buffered and delivered when the last one is complete.
 * Reducing receives read into a staging buffer (allocated at commInit) and reduce from there, each
 * stream keeping its partial element. A stream never waits for another: parts are kept until their
 * message can take them.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"
#include "socket_priv.h"

#define TD_SOCK_MAX_PER_CONN (8u << 20) /* bytes read per connection per progress call */
#define TD_SOCK_UNEXP_FIRST (4u << 20)  /* first allocation of an unexpected part at most */

_Static_assert(sizeof(tdWireHdr) == TD_SOCK_HDR_BYTES, "header size");

tpudistResult_t sockHeaderCheck(const void *msg, size_t len, tdMsgKey *key, uint64_t *plen,
                                int *part, int *nparts, char *err) {
  tdWireHdr h;
  if (len != sizeof(h)) return tdErr(err, tpudistRemoteError, "a frame header of %zu bytes", len);
  memcpy(&h, msg, sizeof(h));
  int n = h.part ? (int)(h.part & 0xffff) : 1, i = h.part ? (int)(h.part >> 16) : 0;
  if (n < 1 || n > TD_SOCK_MAX_STREAMS || i >= n || (h.part && n == 1))
    return tdErr(err, tpudistRemoteError, "a corrupt frame header (part word 0x%x)", h.part);
  if (h.len > TD_SOCK_MAX_MSG)
    return tdErr(err, tpudistRemoteError, "a frame announcing %llu bytes",
                 (unsigned long long)h.len);
  *key = (tdMsgKey){h.seq, h.stream, h.ordinal, h.piece};
  *plen = h.len;
  *part = i;
  *nparts = n;
  return tpudistSuccess;
}

/* ---- message records ----------------------------------------------------------------------- */

static tdSockMsg *msgNew(tdSockCtx *c, int p, const tdMsgKey *k, size_t len, int n) {
  tdSockMsg *m = c->spare;
  if (m)
    c->spare = m->next;
  else if (!(m = malloc(sizeof(*m))))
    return NULL;
  memset(m, 0, sizeof(*m));
  m->peer = p;
  m->key = *k;
  m->len = len;
  m->nparts = m->left = n;
  return m;
}

void sockMsgFree(tdSockCtx *c, tdSockMsg *m) {
  for (int i = 0; i < m->nparts; i++) free(m->buf[i].data);
  m->nparts = 0;
  m->next = c->spare;
  c->spare = m;
}

static void openAppend(tdSockPeer *pe, tdSockMsg *m) {
  tdSockMsg **pp = &pe->open;
  while (*pp) pp = &(*pp)->onext;
  m->onext = NULL;
  *pp = m;
}

static void openUnlink(tdSockPeer *pe, tdSockMsg *m) {
  tdSockMsg **pp = &pe->open;
  while (*pp != m) pp = &(*pp)->onext;
  *pp = m->onext;
}

static void queueUnexp(tdSockCtx *c, tdSockMsg *m) {
  m->next = NULL;
  m->queued = 1;
  if (c->unexp_tail)
    c->unexp_tail->next = m;
  else
    c->unexp_head = m;
  c->unexp_tail = m;
}

static void unexpUnlink(tdSockCtx *c, tdSockMsg *m) {
  tdSockMsg *prev = NULL;
  for (tdSockMsg *q = c->unexp_head; q != m; q = q->next) prev = q;
  if (prev)
    prev->next = m->next;
  else
    c->unexp_head = m->next;
  if (c->unexp_tail == m) c->unexp_tail = prev;
  m->queued = 0;
}

/* Delivers a fully received buffered message to r and frees it. */
static void unexpDeliver(tdNet *comm, tdSockCtx *c, tdSockMsg *m, tdXfer *r) {
  if (m->len != r->len) {
    transportLenMismatch(comm, r, m->peer, m->len);
  } else {
    for (int i = 0; i < m->nparts; i++) {
      size_t off, len;
      sockPartRange(m->len, m->nparts, i, &off, &len);
      if (len) transportDeliver(r, off, m->buf[i].data, len);
    }
    transportComplete(r, tpudistSuccess, m->peer);
  }
  sockMsgFree(c, m);
}

int sockRecvUnexpected(tdNet *comm, tdSockCtx *c, tdXfer *x, int probe) {
  for (tdSockMsg *m = c->unexp_head; m; m = m->next) {
    if ((!probe && m->peer != x->peer) || m->waiter || !keyEq(&m->key, &x->key)) continue;
    if (probe) x->tp_priv[3] = (void *)&tdTransportSocket;
    if (m->left > 0) { /* still arriving: it completes x when done */
      m->waiter = x;
      return 1;
    }
    unexpUnlink(c, m);
    unexpDeliver(comm, c, m, x);
    return 1;
  }
  return 0;
}

int sockRecvDrop(tdSockCtx *c, int p) {
  tdSockPeer *pe = &c->peers[p];
  int pending = 0;
  for (int s = 0; s < pe->nconn; s++) {
    tdSockConn *cn = &pe->conn[s];
    if (cn->rx == RX_XFER && !cn->rmsg && cn->rcur) {
      transportComplete(cn->rcur, tpudistRemoteError, p);
      pending = 1;
    }
    cn->rx = RX_HDR;
    cn->rgot = 0;
    cn->rcur = NULL;
    cn->rmsg = NULL;
  }
  while (pe->open) { /* cut short: they can never complete a receive */
    tdSockMsg *m = pe->open;
    pe->open = m->onext;
    tdXfer *r = m->dst ? m->dst : m->waiter;
    if (r) {
      transportComplete(r, tpudistRemoteError, p);
      pending = 1;
    }
    if (m->queued) unexpUnlink(c, m);
    sockMsgFree(c, m);
  }
  return pending;
}

/* ---- frames -------------------------------------------------------------------------------- */

static tpudistResult_t noMemory(tdNet *comm, tdSockCtx *c, int p) {
  return sockPeerFail(comm, c, p, SK_FAILED, "out of memory for an unexpected message");
}

/* The record part i of a split message (k, len, n) arriving on stream s goes into: the oldest open
 * one whose part i has not begun and that has no part on s (a stream carries one part of a
 * message), else a new one. NULL: out of memory. */
static tdSockMsg *partRecord(tdSockCtx *c, int p, int s, const tdMsgKey *k, size_t len, int n,
                             int i) {
  tdSockPeer *pe = &c->peers[p];
  for (tdSockMsg *m = pe->open; m; m = m->onext)
    if (m->nparts == n && m->len == len && !(m->claimed & (1u << i)) && !(m->streams & (1u << s)) &&
        keyEq(&m->key, k))
      return m;
  tdSockMsg *m = msgNew(c, p, k, len, n);
  if (m) openAppend(pe, m);
  return m;
}

/* Part 0 of m has begun: match it. */
static void recordMatch(tdNet *comm, tdSockCtx *c, tdSockMsg *m) {
  tdXfer *x = transportMatchRecv(comm, &c->posted, m->peer, &m->key, &tdTransportSocket);
  if (x && m->claimed == 1u) { /* nothing buffered yet: straight into x */
    if (x->len == m->len)
      m->dst = x;
    else {
      transportLenMismatch(comm, x, m->peer, m->len);
      m->discard = 1;
    }
    return;
  }
  queueUnexp(c, m);
  m->waiter = x;
}

/* A header is complete: choose where the payload goes. */
static tpudistResult_t rxStart(tdNet *comm, tdSockCtx *c, int p, int s) {
  tdSockConn *cn = &c->peers[p].conn[s];
  tdMsgKey k;
  uint64_t wlen;
  int i, n;
  char why[TD_ERRLEN];
  if (sockHeaderCheck(&cn->rhdr, sizeof(cn->rhdr), &k, &wlen, &i, &n, why) != tpudistSuccess)
    return sockPeerFail(comm, c, p, SK_FAILED, why);
  size_t len = (size_t)wlen;
  cn->rgot = 0;
  cn->stage_fill = 0;
  cn->rpart = i;
  cn->rcur = NULL;
  cn->rmsg = NULL;
  sockPartRange(len, n, i, &cn->roff, &cn->rlen);
  tdSockMsg *m = NULL;
  if (n == 1) {
    tdXfer *x = transportMatchRecv(comm, &c->posted, p, &k, &tdTransportSocket);
    if (x && x->len != len) {
      transportLenMismatch(comm, x, p, len);
      cn->rx = RX_DISCARD;
      return tpudistSuccess;
    }
    if (x) {
      cn->rcur = x;
      cn->rx = RX_XFER;
      return tpudistSuccess;
    }
    if (!(m = msgNew(c, p, &k, len, 1))) return noMemory(comm, c, p);
    openAppend(&c->peers[p], m);
  } else if (!(m = partRecord(c, p, s, &k, len, n, i))) {
    return noMemory(comm, c, p);
  }
  m->claimed |= 1u << i;
  m->streams |= 1u << s;
  if (i == 0) recordMatch(comm, c, m);
  cn->rmsg = m;
  cn->rcur = m->dst;
  cn->rx = m->dst ? RX_XFER : m->discard ? RX_DISCARD : RX_UNEXP;
  return tpudistSuccess;
}

/* The payload of the current frame is complete. */
static void rxFinish(tdNet *comm, tdSockCtx *c, int p, tdSockConn *cn) {
  tdSockMsg *m = cn->rmsg;
  if (!m && cn->rx == RX_XFER) transportComplete(cn->rcur, tpudistSuccess, p);
  if (m && --m->left == 0) {
    openUnlink(&c->peers[p], m);
    if (m->dst) {
      transportComplete(m->dst, tpudistSuccess, p);
      sockMsgFree(c, m);
    } else if (m->discard) {
      sockMsgFree(c, m);
    } else if (m->waiter) {
      unexpUnlink(c, m);
      unexpDeliver(comm, c, m, m->waiter);
    } /* else complete in the unexpected queue, until its receive is posted */
  }
  cn->rcur = NULL;
  cn->rmsg = NULL;
  cn->rx = RX_HDR;
  cn->rgot = 0;
}

/* Where the next bytes of the payload go, and how many at most; NULL: out of memory. */
static char *rxTarget(tdSockCtx *c, tdSockConn *cn, size_t *room) {
  size_t left = cn->rlen - cn->rgot;
  if (cn->rx == RX_UNEXP) {
    __typeof__(cn->rmsg->buf[0]) *b = &cn->rmsg->buf[cn->rpart];
    if (b->cap == cn->rgot) { /* grow: double, up to the part's length */
      size_t cap = TD_MIN(cn->rlen, TD_MAX(b->cap * 2, (size_t)TD_SOCK_UNEXP_FIRST));
      char *d = realloc(b->data, cap);
      if (!d) return NULL;
      b->data = d;
      b->cap = cap;
    }
    *room = TD_MIN(left, b->cap - cn->rgot);
    return b->data + cn->rgot;
  }
  if (cn->rx == RX_DISCARD) {
    *room = TD_MIN(left, sizeof(c->discard));
    return c->discard;
  }
  if (!cn->rcur->reduce_src) {
    *room = left;
    return (char *)cn->rcur->buf + cn->roff + cn->rgot;
  }
  /* The stage is shared by all connections: this one's partial element goes in front first. */
  memcpy(c->stage, cn->part, cn->stage_fill);
  *room = TD_MIN(left, TD_SOCK_STAGE - cn->stage_fill);
  return c->stage + cn->stage_fill;
}

tpudistResult_t sockProgressRecv(tdNet *comm, tdSockCtx *c, int p, int s, int *moved) {
  tdSockPeer *pe = &c->peers[p];
  tdSockConn *cn = &pe->conn[s];
  size_t budget = TD_SOCK_MAX_PER_CONN;
  while (budget > 0 && cn->state == SK_READY) {
    char *dst;
    size_t room;
    if (cn->rx == RX_HDR) {
      dst = (char *)&cn->rhdr + cn->rgot;
      room = sizeof(tdWireHdr) - cn->rgot;
    } else if (!(dst = rxTarget(c, cn, &room))) {
      return noMemory(comm, c, p);
    }
    char why[160];
    ssize_t n = room ? sockIoRecv(cn->fd, cn->ssl, dst, room, why, sizeof(why)) : 0;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return tpudistSuccess;
    if (n <= 0 && room) {
      int mid = cn->rx != RX_HDR || cn->rgot > 0;
      return sockPeerFail(comm, c, p, mid ? SK_FAILED : SK_CLOSED, why);
    }
    *moved = 1;
    budget -= TD_MIN(budget, (size_t)n);
    cn->rgot += (size_t)n;
    if (cn->rx == RX_HDR) {
      if (cn->rgot < sizeof(tdWireHdr)) continue;
      TD_CHECK(rxStart(comm, c, p, s));
      if (cn->rlen == 0) rxFinish(comm, c, p, cn);
      continue;
    }
    if (cn->rx == RX_XFER && cn->rcur->reduce_src) {
      size_t es = kernelDtypeSize((tpudistDataType_t)cn->rcur->dtype);
      cn->stage_fill += (size_t)n;
      size_t whole = cn->stage_fill - cn->stage_fill % es;
      size_t off = cn->roff + cn->rgot - cn->stage_fill;
      transportDeliver(cn->rcur, off, c->stage, whole);
      memcpy(cn->part, c->stage + whole, cn->stage_fill - whole);
      cn->stage_fill -= whole;
    }
    if (cn->rgot == cn->rlen) rxFinish(comm, c, p, cn);
  }
  return tpudistSuccess;
}
