/*
 * socket.c - the TCP transport: one non-blocking connection per peer pair, opened lazily.
 *
 * Each rank listens (commInit) on the interface TPU_DIST_SOCKET_IFNAME picks (prefix, "^name" for
 * exact; default: the first up non-loopback interface, else loopback) and publishes the address in
 * tdPeerInfo.sock_addr. The first post that involves a peer (either side) starts a connect; the
 * two sides authenticate each other by challenge-response over the job's key (sock_auth.c) before
 * a byte of data flows. If both sides connect at once, the connection opened by the lower rank
 * wins: the lower rank refuses the higher rank's connection while its own is pending, and the
 * higher rank drops its own attempt when the lower rank's is adopted.
 *
 * Framing: a 32-byte header {seq, stream, ordinal, piece, len} then len payload bytes, written with
 * sendmsg(MSG_NOSIGNAL) (never SIGPIPE). A send completes once all its bytes are in the kernel.
 * The receiver matches each header against posted receives (peer-specific, then any-source); an
 * unmatched message is read into a heap buffer (grown as its bytes arrive, so a header announcing
 * gigabytes costs only what is really sent) and matched later. Reducing receives read into a
 * staging buffer allocated at commInit and reduce from there. A closed or failed connection fails
 * every transfer pending with that peer with tpudistRemoteError naming the peer; a peer closing
 * with nothing pending (normal shutdown) only fails later posts to it.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "bootstrap.h"
#include "kernels.h"
#include "net.h"
#include "rt_config.h"
#include "rt_log.h"
#include "socket_priv.h"

#define TD_SOCK_STAGE (256 * 1024)
#define TD_SOCK_MAX_PER_PEER (8u << 20) /* bytes read per peer per progress call */
#define TD_SOCK_UNEXP_FIRST (4u << 20)  /* first allocation of an unexpected message at most */

_Static_assert(sizeof(tdWireHdr) == TD_SOCK_HDR_BYTES, "header size");

tpudistResult_t sockHeaderCheck(const void *msg, size_t len, tdMsgKey *key, uint64_t *plen,
                                char *err) {
  tdWireHdr h;
  if (len != sizeof(h)) return tdErr(err, tpudistRemoteError, "a frame header of %zu bytes", len);
  memcpy(&h, msg, sizeof(h));
  if (h.pad != 0) return tdErr(err, tpudistRemoteError, "a corrupt frame header");
  if (h.len > TD_SOCK_MAX_MSG)
    return tdErr(err, tpudistRemoteError, "a frame announcing %llu bytes",
                 (unsigned long long)h.len);
  *key = (tdMsgKey){h.seq, h.stream, h.ordinal, h.piece};
  *plen = h.len;
  return tpudistSuccess;
}

static tdSockCtx *sockCtx(tdNet *comm) {
  int i = netTransportIndex(comm, &tdTransportSocket);
  return i < 0 ? NULL : comm->tp_ctx[i];
}

static int sockCanReach(tdNet *comm, int peer) {
  tdNetAddr a;
  if (peer == comm->rank || !comm->peers) return 0;
  memcpy(&a, comm->peers[peer].sock_addr, sizeof(a));
  return a.family != 0;
}

static tpudistResult_t sockCommInit(tdNet *comm, tdPeerInfo *info) {
  const tdConfig *cfg = comm->cfg ? comm->cfg : configGet();
  int i = netTransportIndex(comm, &tdTransportSocket);
  char err[TD_ERRLEN];
  tdNetAddr local, bound;
  _Static_assert(sizeof(tdNetAddr) <= TD_ADDR_BYTES, "address too large");
  tdSockCtx *c = calloc(1, sizeof(*c));
  if (!c) return transportError(comm, tpudistNoMemory, "socket transport: out of memory");
  comm->tp_ctx[i] = c;
  c->lfd = -1;
  c->peers = calloc((size_t)comm->nranks, sizeof(tdSockPeer));
  c->handshake_ms = cfg->handshake_ms > 0 ? cfg->handshake_ms : 1;
  c->max_handshakes = cfg->max_handshakes > 0 ? cfg->max_handshakes : 1;
  /* poll set: the listener, the peers, the connections in their handshake */
  c->pfd = calloc((size_t)(comm->nranks + 1 + c->max_handshakes), sizeof(struct pollfd));
  c->pfd_peer = calloc((size_t)comm->nranks + 1, sizeof(int));
  c->active = calloc((size_t)comm->nranks, sizeof(int));
  c->stage = malloc(TD_SOCK_STAGE);
  if (!c->peers || !c->pfd || !c->pfd_peer || !c->active || !c->stage)
    return transportError(comm, tpudistNoMemory, "socket transport: out of memory");
  memset(c->stage, 0, TD_SOCK_STAGE); /* touched at setup, never faulted on the hot path */
  for (int p = 0; p < comm->nranks; p++) c->peers[p].fd = -1;
  if (comm->bootstrap) c->key = *bootstrapKey(comm->bootstrap);
  if (netLocalAddr(cfg->socket_ifname, &local, err) != tpudistSuccess ||
      netListen(&local, &c->lfd, &bound, err) != tpudistSuccess)
    return transportError(comm, tpudistSystemError, "socket transport: %s", err);
  memcpy(info->sock_addr, &bound, sizeof(bound));
  TD_INFO(TD_SUBSYS_SOCK, "%s rank %d listens on %s", comm->name, comm->rank,
          netAddrStr(&bound, err, sizeof(err)));
  return tpudistSuccess;
}

static void sockCommFini(tdNet *comm) {
  int i = netTransportIndex(comm, &tdTransportSocket);
  tdSockCtx *c = comm->tp_ctx[i];
  if (!c) return;
  if (c->lfd >= 0) close(c->lfd);
  for (int i = 0; c->peers && i < c->nactive; i++)
    if (c->peers[c->active[i]].fd >= 0) close(c->peers[c->active[i]].fd);
  while (c->accepting) {
    tdSockAccept *a = c->accepting;
    c->accepting = a->next;
    close(a->fd);
    free(a);
  }
  while (c->unexp_head) {
    tdSockMsg *m = c->unexp_head;
    c->unexp_head = m->next;
    free(m->data);
    free(m);
  }
  free(c->peers);
  free(c->pfd);
  free(c->pfd_peer);
  free(c->active);
  free(c->stage);
  free(c);
  comm->tp_ctx[i] = NULL;
}

/* Fails everything pending with peer p; returns tpudistRemoteError if anything was pending. */
/* Takes m out of the unexpected queue. */
static void unexpUnlink(tdSockCtx *c, tdSockMsg *m) {
  tdSockMsg *prev = NULL;
  for (tdSockMsg *q = c->unexp_head; q != m; q = q->next) prev = q;
  if (prev)
    prev->next = m->next;
  else
    c->unexp_head = m->next;
  if (c->unexp_tail == m) c->unexp_tail = prev;
}

tpudistResult_t sockPeerFail(tdNet *comm, tdSockCtx *c, int p, int state, const char *why) {
  tdSockPeer *pe = &c->peers[p];
  int pending = 0;
  if (pe->fd >= 0) close(pe->fd);
  pe->fd = -1;
  pe->state = state;
  snprintf(pe->why, sizeof(pe->why), "%s", why);
  for (tdXfer *x; (x = xqPop(&pe->sendq));) {
    transportComplete(x, tpudistRemoteError, p);
    pending = 1;
  }
  if (pe->rx == RX_XFER && pe->rcur) {
    transportComplete(pe->rcur, tpudistRemoteError, p);
    pending = 1;
  }
  if (pe->rx == RX_UNEXP && pe->rmsg) { /* cut short: it can never complete a receive */
    tdSockMsg *m = pe->rmsg;
    if (m->waiter) {
      transportComplete(m->waiter, tpudistRemoteError, p);
      pending = 1;
    }
    unexpUnlink(c, m);
    free(m->data);
    free(m);
  }
  pe->rmsg = NULL;
  pe->rcur = NULL;
  pe->rx = RX_HDR;
  tdXfer *prev = NULL, *x = c->posted.head;
  while (x) {
    tdXfer *next = x->next;
    if (x->peer == p) {
      xqUnlink(&c->posted, prev, x);
      transportComplete(x, tpudistRemoteError, p);
      pending = 1;
    } else {
      prev = x;
    }
    x = next;
  }
  if (!pending && state == SK_CLOSED) return tpudistSuccess;
  return transportError(comm, tpudistRemoteError, "socket: connection with rank %d: %s", p, why);
}

void sockMarkActive(tdSockCtx *c, int p) {
  if (c->peers[p].state == SK_NONE) c->active[c->nactive++] = p;
}

tpudistResult_t sockStartConnect(tdNet *comm, tdSockCtx *c, int p) {
  tdSockPeer *pe = &c->peers[p];
  if (pe->state == SK_NONE) pe->hs_since = netNowMs();
  sockMarkActive(c, p);
  tdNetAddr a;
  char err[TD_ERRLEN];
  memcpy(&a, comm->peers[p].sock_addr, sizeof(a));
  if (netConnectStart(&a, &pe->fd, err) != tpudistSuccess ||
      sockConnectorBegin(comm, c, p, err) != tpudistSuccess)
    return sockPeerFail(comm, c, p, SK_FAILED, err);
  return tpudistSuccess;
}

/* Makes sure a connection to p exists or is being opened. */
static tpudistResult_t peerEnsure(tdNet *comm, tdSockCtx *c, int p) {
  if (c->peers[p].state == SK_NONE) return sockStartConnect(comm, c, p);
  return tpudistSuccess;
}

static void queueUnexp(tdSockCtx *c, tdSockMsg *m) {
  m->next = NULL;
  if (c->unexp_tail)
    c->unexp_tail->next = m;
  else
    c->unexp_head = m;
  c->unexp_tail = m;
}

static tpudistResult_t sockPostSend(tdNet *comm, tdXfer *x) {
  tdSockCtx *c = sockCtx(comm);
  tdSockPeer *pe = &c->peers[x->peer];
  if (pe->state == SK_CLOSED || pe->state == SK_FAILED) {
    transportComplete(x, tpudistRemoteError, x->peer);
    return transportError(comm, tpudistRemoteError, "socket: send to rank %d: %s", x->peer,
                          pe->why);
  }
  x->tp_priv[0] = NULL;
  xqPush(&pe->sendq, x);
  return peerEnsure(comm, c, x->peer);
}

/* Delivers a fully received unexpected message to r and frees it. */
static void unexpDeliver(tdNet *comm, tdSockMsg *m, tdXfer *r) {
  if (m->len != r->len)
    transportLenMismatch(comm, r, m->peer, m->len);
  else {
    transportDeliver(r, 0, m->data, m->len);
    transportComplete(r, tpudistSuccess, m->peer);
  }
  free(m->data);
  free(m);
}

static tpudistResult_t sockPostRecv(tdNet *comm, tdXfer *x) {
  tdSockCtx *c = sockCtx(comm);
  int probe = x->tp_priv[3] == TD_ANY_PROBE;
  TD_CHECK(transportCheckRecv(comm, x));
  tdSockMsg *prev = NULL;
  for (tdSockMsg *m = c->unexp_head; m; prev = m, m = m->next) {
    if ((!probe && m->peer != x->peer) || m->waiter || !keyEq(&m->key, &x->key)) continue;
    if (probe) x->tp_priv[3] = (void *)&tdTransportSocket;
    if (m->got < m->len) { /* still arriving: it completes x when done */
      m->waiter = x;
      return tpudistSuccess;
    }
    if (prev)
      prev->next = m->next;
    else
      c->unexp_head = m->next;
    if (c->unexp_tail == m) c->unexp_tail = prev;
    unexpDeliver(comm, m, x);
    return tpudistSuccess;
  }
  if (probe) { /* an any-source receive: open every connection this transport serves */
    for (int p = 0; p < comm->nranks; p++)
      if (transportForPeer(comm, p) == &tdTransportSocket) TD_CHECK(peerEnsure(comm, c, p));
    return tpudistSuccess;
  }
  tdSockPeer *pe = &c->peers[x->peer];
  if (pe->state == SK_CLOSED || pe->state == SK_FAILED) {
    transportComplete(x, tpudistRemoteError, x->peer);
    return transportError(comm, tpudistRemoteError, "socket: receive from rank %d: %s", x->peer,
                          pe->why);
  }
  xqPush(&c->posted, x);
  return peerEnsure(comm, c, x->peer);
}

/* Sends what the socket takes from the send queue of p. */
static tpudistResult_t progressSend(tdNet *comm, tdSockCtx *c, int p, int *moved) {
  tdSockPeer *pe = &c->peers[p];
  while (pe->sendq.head) {
    tdXfer *x = pe->sendq.head;
    if (pe->sent == 0) {
      pe->shdr = (tdWireHdr){x->key.seq, x->key.stream, x->key.ordinal, x->key.piece, 0, x->len};
    }
    struct iovec iov[2];
    int niov = 0;
    size_t hs = sizeof(tdWireHdr);
    if (pe->sent < hs) iov[niov++] = (struct iovec){(char *)&pe->shdr + pe->sent, hs - pe->sent};
    size_t poff = pe->sent > hs ? pe->sent - hs : 0;
    if (x->len > poff) iov[niov++] = (struct iovec){(char *)x->buf + poff, x->len - poff};
    struct msghdr mh = {.msg_iov = iov, .msg_iovlen = (size_t)niov};
    ssize_t n = niov ? sendmsg(pe->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT) : 0;
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return tpudistSuccess;
      char why[160];
      snprintf(why, sizeof(why), "send failed: %s", strerror(errno));
      return sockPeerFail(comm, c, p, SK_FAILED, why);
    }
    pe->sent += (size_t)n;
    *moved = 1;
    if (pe->sent < hs + x->len) return tpudistSuccess;
    xqPop(&pe->sendq);
    pe->sent = 0;
    transportComplete(x, tpudistSuccess, comm->rank);
  }
  return tpudistSuccess;
}

/* A header is complete: choose where the payload goes. */
static tpudistResult_t rxStart(tdNet *comm, tdSockCtx *c, int p) {
  tdSockPeer *pe = &c->peers[p];
  tdMsgKey k;
  uint64_t wlen;
  char why[TD_ERRLEN];
  if (sockHeaderCheck(&pe->rhdr, sizeof(pe->rhdr), &k, &wlen, why) != tpudistSuccess)
    return sockPeerFail(comm, c, p, SK_FAILED, why);
  size_t len = (size_t)wlen;
  pe->rgot = 0;
  pe->rlen = len;
  pe->stage_fill = 0;
  tdXfer *x = transportMatchRecv(comm, &c->posted, p, &k, &tdTransportSocket);
  if (x && x->len != len) {
    transportLenMismatch(comm, x, p, len);
    pe->rx = RX_DISCARD;
  } else if (x) {
    pe->rcur = x;
    pe->rx = RX_XFER;
  } else {
    /* memory follows the bytes that arrive, not what the header announces */
    tdSockMsg *m = malloc(sizeof(*m));
    size_t cap = TD_MIN(len, (size_t)TD_SOCK_UNEXP_FIRST);
    char *data = cap ? malloc(cap) : NULL;
    if (!m || (cap && !data)) {
      free(m);
      free(data);
      return sockPeerFail(comm, c, p, SK_FAILED, "out of memory for an unexpected message");
    }
    m->data = data;
    m->cap = cap;
    m->peer = p;
    m->key = k;
    m->len = len;
    m->got = 0;
    m->waiter = NULL;
    queueUnexp(c, m);
    pe->rmsg = m;
    pe->rx = RX_UNEXP;
  }
  return tpudistSuccess;
}

/* Payload of the current message is complete. */
static void rxFinish(tdNet *comm, tdSockCtx *c, int p) {
  tdSockPeer *pe = &c->peers[p];
  if (pe->rx == RX_XFER) {
    transportComplete(pe->rcur, tpudistSuccess, p);
  } else if (pe->rx == RX_UNEXP && pe->rmsg->waiter) {
    tdSockMsg *m = pe->rmsg;
    unexpUnlink(c, m);
    unexpDeliver(comm, m, m->waiter);
  }
  pe->rcur = NULL;
  pe->rmsg = NULL;
  pe->rx = RX_HDR;
  pe->rgot = 0;
}

/* Where the next bytes of the payload go, and how many at most. */
static char *rxTarget(tdSockCtx *c, tdSockPeer *pe, size_t *room) {
  size_t left = pe->rlen - pe->rgot;
  if (pe->rx == RX_UNEXP) {
    tdSockMsg *m = pe->rmsg;
    if (m->cap == pe->rgot) { /* grow: double, up to the message length */
      size_t cap = TD_MIN(m->len, TD_MAX(m->cap * 2, (size_t)TD_SOCK_UNEXP_FIRST));
      char *d = realloc(m->data, cap);
      if (!d) return NULL;
      m->data = d;
      m->cap = cap;
    }
    *room = TD_MIN(left, m->cap - pe->rgot);
    return m->data + pe->rgot;
  }
  if (pe->rx == RX_DISCARD) {
    *room = TD_MIN(left, sizeof(c->discard));
    return c->discard;
  }
  if (!pe->rcur->reduce_src) {
    *room = left;
    return (char *)pe->rcur->buf + pe->rgot;
  }
  /* The stage is shared by all peers: this peer's partial element goes in front first. */
  memcpy(c->stage, pe->part, pe->stage_fill);
  *room = TD_MIN(left, TD_SOCK_STAGE - pe->stage_fill);
  return c->stage + pe->stage_fill;
}

static tpudistResult_t progressRecv(tdNet *comm, tdSockCtx *c, int p, int *moved) {
  tdSockPeer *pe = &c->peers[p];
  size_t budget = TD_SOCK_MAX_PER_PEER;
  while (budget > 0 && pe->state == SK_READY) {
    char *dst;
    size_t room;
    if (pe->rx == RX_HDR) {
      dst = (char *)&pe->rhdr + pe->rgot;
      room = sizeof(tdWireHdr) - pe->rgot;
    } else if (!(dst = rxTarget(c, pe, &room))) {
      return sockPeerFail(comm, c, p, SK_FAILED, "out of memory for an unexpected message");
    }
    ssize_t n = room ? recv(pe->fd, dst, room, MSG_DONTWAIT) : 0;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return tpudistSuccess;
    if (n <= 0 && room) {
      char why[160];
      snprintf(why, sizeof(why), "%s", n == 0 ? "rank closed the connection" : strerror(errno));
      int mid = pe->rx != RX_HDR || pe->rgot > 0;
      return sockPeerFail(comm, c, p, mid ? SK_FAILED : SK_CLOSED, why);
    }
    *moved = 1;
    budget -= TD_MIN(budget, (size_t)n);
    if (pe->rx == RX_HDR) {
      pe->rgot += (size_t)n;
      if (pe->rgot < sizeof(tdWireHdr)) continue;
      TD_CHECK(rxStart(comm, c, p));
      if (pe->rlen == 0) rxFinish(comm, c, p);
      continue;
    }
    pe->rgot += (size_t)n;
    if (pe->rx == RX_UNEXP) pe->rmsg->got = pe->rgot;
    if (pe->rx == RX_XFER && pe->rcur->reduce_src) {
      size_t es = kernelDtypeSize((tpudistDataType_t)pe->rcur->dtype);
      pe->stage_fill += (size_t)n;
      size_t whole = pe->stage_fill - pe->stage_fill % es;
      size_t off = pe->rgot - pe->stage_fill;
      transportDeliver(pe->rcur, off, c->stage, whole);
      memcpy(pe->part, c->stage + whole, pe->stage_fill - whole);
      pe->stage_fill -= whole;
    }
    if (pe->rgot == pe->rlen) rxFinish(comm, c, p);
  }
  return tpudistSuccess;
}

static tpudistResult_t sockProgress(tdNet *comm, int *progressed) {
  tdSockCtx *c = sockCtx(comm);
  tpudistResult_t first = tpudistSuccess;
  int n = 0, moved = 0;
  *progressed = 0;
  if (c->nactive == 0 && !c->accepting) { /* idle: look at the listener once per millisecond */
    int64_t now = netNowMs();
    if (now < c->next_listen_ms) return tpudistSuccess;
    c->next_listen_ms = now + 1;
  }
  c->pfd[n] = (struct pollfd){c->lfd, POLLIN, 0};
  c->pfd_peer[n++] = -1;
  for (int i = 0; i < c->nactive; i++) {
    int p = c->active[i];
    tdSockPeer *pe = &c->peers[p];
    if (pe->fd < 0) continue;
    short ev = POLLIN;
    if (pe->state == SK_CONNECTING || (pe->state == SK_READY && pe->sendq.head) ||
        (pe->hs_done < pe->hs_out_len && pe->state != SK_READY))
      ev |= POLLOUT;
    c->pfd[n] = (struct pollfd){pe->fd, ev, 0};
    c->pfd_peer[n++] = p;
  }
  int npeers = n, nacc = sockAcceptPollFill(c, c->pfd + n);
  if (poll(c->pfd, (nfds_t)(n + nacc), 0) < 0) return tpudistSuccess;
  if (c->pfd[0].revents || nacc) sockAcceptProgress(comm, c, c->pfd + npeers, nacc, &moved);
  for (int i = 1; i < npeers; i++) {
    int p = c->pfd_peer[i];
    short rev = c->pfd[i].revents;
    tdSockPeer *pe = &c->peers[p];
    tpudistResult_t res = tpudistSuccess;
    if (!rev || pe->fd != c->pfd[i].fd) continue;
    if (pe->state == SK_CONNECTING || pe->state == SK_CHALLENGE || pe->state == SK_VERDICT)
      res = sockConnectorStep(comm, c, p, rev, &moved);
    if (res == tpudistSuccess && pe->state == SK_READY && (rev & POLLOUT))
      res = progressSend(comm, c, p, &moved);
    if (res == tpudistSuccess && pe->state == SK_READY && (rev & (POLLIN | POLLHUP | POLLERR)))
      res = progressRecv(comm, c, p, &moved);
    if (res == tpudistSuccess && pe->state == SK_READY && pe->sendq.head && !(rev & POLLOUT))
      res = progressSend(comm, c, p, &moved); /* just became ready */
    if (res != tpudistSuccess && first == tpudistSuccess) first = res;
  }
  *progressed = moved;
  return first;
}

void sockTestAdopt(tdNet *comm, int p, int fd) {
  tdSockCtx *c = sockCtx(comm);
  tdSockPeer *pe = &c->peers[p];
  if (pe->fd >= 0) close(pe->fd);
  for (tdSockMsg **pp = &c->unexp_head; *pp;) {
    tdSockMsg *m = *pp;
    if (m->waiter) {
      pp = &m->next;
      continue;
    }
    *pp = m->next;
    free(m->data);
    free(m);
  }
  c->unexp_tail = NULL;
  for (tdSockMsg *m = c->unexp_head; m; m = m->next) c->unexp_tail = m;
  sockMarkActive(c, p);
  pe->fd = fd;
  pe->state = SK_READY;
  pe->rx = RX_HDR;
  pe->rgot = pe->rlen = pe->stage_fill = 0;
  pe->rcur = NULL;
  pe->rmsg = NULL;
}

int sockTestPeerOpen(tdNet *comm, int p) {
  int st = sockCtx(comm)->peers[p].state;
  return st != SK_CLOSED && st != SK_FAILED;
}

const tdTransport tdTransportSocket = {
    .name = "socket",
    .canReach = sockCanReach,
    .commInit = sockCommInit,
    .commFini = sockCommFini,
    .postSend = sockPostSend,
    .postRecv = sockPostRecv,
    .progress = sockProgress,
};
