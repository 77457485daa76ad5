/*
 * sock_send.c - the socket transport's sending side: a send is split over the pair's streams
 * (socket_priv.h) and each stream writes its frames on its own, so a stream whose connection is
 * slow holds back only its own parts, never another stream's.
 *
 * Every send of a pair sits in the peer's send queue in post order until all its parts are in the
 * kernel. tp_priv[0] counts its parts not yet sent, tp_priv[1] holds its part count and the stream
 * of part 0. Each stream walks the queue in order, taking the part it carries of each send (cur);
 * a send with no part on a stream is skipped by it. Part 0 of a point-to-point message always goes
 * on stream 0 (such messages share one key per pair and must be matched in the order sent: the
 * receiver matches a message when its part 0 arrives, and stream 0 keeps their order); part 0 of
 * any other message goes on the stream with the fewest bytes waiting.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "socket_priv.h"

static int partCount(const tdXfer *x) {
  return (int)((uintptr_t)x->tp_priv[1] & 0xff);
}
static int partFirst(const tdXfer *x) {
  return (int)((uintptr_t)x->tp_priv[1] >> 8);
}

/* The part of x that stream s carries, or -1. */
static int partOnStream(const tdXfer *x, int s, int nconn) {
  int i = (s - partFirst(x) + nconn) % nconn;
  return i < partCount(x) ? i : -1;
}

static void partLen(const tdXfer *x, int i, size_t *off, size_t *len) {
  sockPartRange(x->len, partCount(x), i, off, len);
}

void sockSendQueue(tdSockCtx *c, int p, tdXfer *x) {
  tdSockPeer *pe = &c->peers[p];
  int k = pe->nconn, n = 1, first = 0;
  if (k > 1 && x->len >= 2 * (size_t)TD_SOCK_MIN_PART)
    n = (int)TD_MIN((size_t)k, x->len / TD_SOCK_MIN_PART);
  if (x->key.stream != TD_P2P_STREAM) { /* the least loaded stream, ties in round robin */
    first = (int)(pe->next_first++ % (uint32_t)k);
    for (int s = 0; s < k; s++)
      if (pe->conn[s].qbytes < pe->conn[first].qbytes) first = s;
  }
  x->tp_priv[0] = (void *)(uintptr_t)n;
  x->tp_priv[1] = (void *)(uintptr_t)((unsigned)first << 8 | (unsigned)n);
  xqPush(&pe->sendq, x);
  for (int i = 0; i < n; i++) {
    int s = (first + i) % k;
    size_t off, len;
    partLen(x, i, &off, &len);
    pe->conn[s].qbytes += len;
    if (!pe->conn[s].cur) {
      pe->conn[s].cur = x;
      pe->conn[s].spart = i;
      pe->conn[s].sent = 0;
    }
  }
}

/* Stream s has sent its part of x: move it to its next send; complete x if it was the last part. */
static void partDone(tdNet *comm, tdSockPeer *pe, int s, tdXfer *x) {
  tdSockConn *cn = &pe->conn[s];
  tdXfer *nx = x->next;
  while (nx && partOnStream(nx, s, pe->nconn) < 0) nx = nx->next;
  cn->cur = nx;
  cn->spart = nx ? partOnStream(nx, s, pe->nconn) : 0;
  cn->sent = 0;
  uintptr_t left = (uintptr_t)x->tp_priv[0] - 1;
  x->tp_priv[0] = (void *)left;
  if (left) return;
  tdXfer *prev = NULL;
  for (tdXfer *q = pe->sendq.head; q != x; q = q->next) prev = q;
  xqUnlink(&pe->sendq, prev, x);
  transportComplete(x, tpudistSuccess, comm->rank);
}

tpudistResult_t sockProgressSend(tdNet *comm, tdSockCtx *c, int p, int s, int *moved) {
  tdSockPeer *pe = &c->peers[p];
  tdSockConn *cn = &pe->conn[s];
  while (cn->cur && cn->state == SK_READY) {
    tdXfer *x = cn->cur;
    int n = partCount(x), i = cn->spart;
    size_t off, len, hs = sizeof(tdWireHdr);
    partLen(x, i, &off, &len);
    if (cn->sent == 0)
      cn->shdr = (tdWireHdr){x->key.seq,
                             x->key.stream,
                             x->key.ordinal,
                             x->key.piece,
                             n > 1 ? (uint32_t)i << 16 | (uint32_t)n : 0,
                             x->len};
    struct iovec iov[2];
    int niov = 0;
    if (cn->sent < hs) iov[niov++] = (struct iovec){(char *)&cn->shdr + cn->sent, hs - cn->sent};
    size_t poff = cn->sent > hs ? cn->sent - hs : 0;
    if (len > poff) iov[niov++] = (struct iovec){(char *)x->buf + off + poff, len - poff};
    char why[160], msg[200];
    ssize_t w = niov ? sockIoSend(cn->fd, cn->ssl, iov, niov, why, sizeof(why)) : 0;
    if (w < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return tpudistSuccess;
      snprintf(msg, sizeof(msg), "send failed: %s", why);
      return sockPeerFail(comm, c, p, SK_FAILED, msg);
    }
    size_t was = cn->sent;
    cn->sent += (size_t)w;
    cn->qbytes -=
        TD_MIN(cn->qbytes, (cn->sent > hs ? cn->sent - hs : 0) - (was > hs ? was - hs : 0));
    *moved = 1;
    if (cn->sent < hs + len) return tpudistSuccess;
    partDone(comm, pe, s, x);
  }
  return tpudistSuccess;
}
