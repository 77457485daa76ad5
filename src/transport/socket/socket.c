/*
 * socket.c - the TCP transport: TPU_DIST_SOCKET_NSTREAMS non-blocking connections (streams) per
 * peer pair, opened lazily; messages split across them (sock_send.c, sock_recv.c).
 *
 * Each rank listens (commInit) on the interface TPU_DIST_SOCKET_IFNAME picks (prefix, "^name" for
 * exact; default: the first up non-loopback interface, else loopback) and publishes the address and
 * its stream count in tdPeerInfo; a pair uses the smaller count. The first post that involves a
 * peer (either side) starts a connect of every stream; each connection authenticates both sides by
 * challenge-response over the job's key (sock_auth.c) before a byte of data flows. If both sides
 * connect a stream at once, the connection opened by the lower rank wins: the lower rank refuses
 * the higher rank's connection while its own is pending, and the higher rank drops its own attempt
 * when the lower rank's is adopted. With TPU_DIST_TLS=1 each connection first runs a TLS 1.3
 * handshake and everything after it travels in TLS records (sock_tls.c); the ranks publish their
 * TLS mode, and a pair whose modes differ fails at its first use.
 *
 * Framing: a 32-byte header {seq, stream, ordinal, piece, part, len} then the part's payload bytes,
 * written with sendmsg(MSG_NOSIGNAL) (never SIGPIPE; in TLS, send(MSG_NOSIGNAL) under libssl). A
 * send completes once all its bytes are in the kernel. A closed or failed connection fails the
 * whole pair: every transfer pending with that peer fails with tpudistRemoteError naming the peer;
 * a peer closing with nothing pending (normal shutdown) only fails later posts to it.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bootstrap.h"
#include "net.h"
#include "rt_config.h"
#include "rt_log.h"
#include "socket_priv.h"

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
  c->nstreams = TD_MAX(1, TD_MIN(cfg->socket_nstreams, TD_SOCK_MAX_STREAMS));
  /* poll set: the listener, the peers' connections, the connections in their handshake */
  size_t npfd = (size_t)comm->nranks * (size_t)c->nstreams + 1;
  c->pfd = calloc(npfd + (size_t)c->max_handshakes, sizeof(struct pollfd));
  c->pfd_peer = calloc(npfd, sizeof(int));
  c->pfd_conn = calloc(npfd, sizeof(int));
  c->active = calloc((size_t)comm->nranks, sizeof(int));
  c->stage = malloc(TD_SOCK_STAGE);
  if (!c->peers || !c->pfd || !c->pfd_peer || !c->pfd_conn || !c->active || !c->stage)
    return transportError(comm, tpudistNoMemory, "socket transport: out of memory");
  memset(c->stage, 0, TD_SOCK_STAGE); /* touched at setup, never faulted on the hot path */
  if (comm->bootstrap) c->key = *bootstrapKey(comm->bootstrap);
  if (sockTlsInit(comm, c, cfg, err) != tpudistSuccess)
    return transportError(comm, tpudistInvalidUsage, "socket transport: %s", err);
  if (netLocalAddr(cfg->socket_ifname, &local, err) != tpudistSuccess ||
      netListen(&local, &c->lfd, &bound, err) != tpudistSuccess)
    return transportError(comm, tpudistSystemError, "socket transport: %s", err);
  memcpy(info->sock_addr, &bound, sizeof(bound));
  info->sock_streams = c->nstreams;
  info->sock_tls = c->tls_mode;
  TD_INFO(TD_SUBSYS_SOCK, "%s rank %d listens on %s, %d streams per peer, %s", comm->name,
          comm->rank, netAddrStr(&bound, err, sizeof(err)), c->nstreams,
          sockTlsModeName(c->tls_mode));
  return tpudistSuccess;
}

static void msgListFree(tdSockMsg *m) {
  while (m) {
    tdSockMsg *next = m->next;
    for (int i = 0; i < m->nparts; i++) free(m->buf[i].data);
    free(m);
    m = next;
  }
}

static void sockCommFini(tdNet *comm) {
  int i = netTransportIndex(comm, &tdTransportSocket);
  tdSockCtx *c = comm->tp_ctx[i];
  if (!c) return;
  if (c->lfd >= 0) close(c->lfd);
  for (int p = 0; c->peers && p < comm->nranks; p++) {
    tdSockPeer *pe = &c->peers[p];
    for (int s = 0; s < pe->nconn; s++) sockIoClose(pe->conn[s].fd, pe->conn[s].ssl, 1);
    for (tdSockMsg *m = pe->open, *next; m; m = next) {
      next = m->onext;
      if (m->queued) continue; /* freed with the unexpected queue */
      m->next = NULL;
      msgListFree(m);
    }
    free(pe->conn);
  }
  while (c->accepting) {
    tdSockAccept *a = c->accepting;
    c->accepting = a->next;
    sockIoClose(a->fd, a->ssl, 0);
    free(a);
  }
  msgListFree(c->unexp_head);
  msgListFree(c->spare);
  free(c->peers);
  free(c->pfd);
  free(c->pfd_peer);
  free(c->pfd_conn);
  free(c->active);
  free(c->stage);
  sockTlsFini(c);
  free(c);
  comm->tp_ctx[i] = NULL;
}

tpudistResult_t sockPeerFail(tdNet *comm, tdSockCtx *c, int p, int state, const char *why) {
  tdSockPeer *pe = &c->peers[p];
  int pending = 0;
  for (int s = 0; s < pe->nconn; s++) {
    tdSockConn *cn = &pe->conn[s];
    sockIoClose(cn->fd, cn->ssl, state == SK_CLOSED);
    cn->fd = -1;
    cn->ssl = NULL;
    cn->state = state;
    cn->cur = NULL;
    cn->sent = cn->qbytes = 0;
  }
  pe->state = state;
  snprintf(pe->why, sizeof(pe->why), "%s", why);
  for (tdXfer *x; (x = xqPop(&pe->sendq));) {
    transportComplete(x, tpudistRemoteError, p);
    pending = 1;
  }
  pending |= sockRecvDrop(c, p);
  if (xqFailPeer(&c->posted, p, tpudistRemoteError)) pending = 1;
  if (!pending && state == SK_CLOSED) return tpudistSuccess;
  return transportError(comm, tpudistRemoteError, "socket: connection with rank %d: %s", p, why);
}

tpudistResult_t sockPeerConns(tdNet *comm, tdSockCtx *c, int p) {
  tdSockPeer *pe = &c->peers[p];
  if (pe->state != SK_NONE) return tpudistSuccess;
  int theirs = comm->peers ? comm->peers[p].sock_streams : 1;
  int k = TD_MAX(1, TD_MIN(c->nstreams, theirs));
  int tls = comm->peers ? comm->peers[p].sock_tls : c->tls_mode;
  if (tls != c->tls_mode) {
    char why[160];
    snprintf(why, sizeof(why), "it uses %s, this rank %s (TPU_DIST_TLS and its files must agree)",
             sockTlsModeName(tls), sockTlsModeName(c->tls_mode));
    return sockPeerFail(comm, c, p, SK_FAILED, why);
  }
  pe->conn = calloc((size_t)k, sizeof(tdSockConn));
  if (!pe->conn) return sockPeerFail(comm, c, p, SK_FAILED, "out of memory for its connections");
  pe->nconn = k;
  for (int s = 0; s < k; s++) pe->conn[s].fd = -1;
  c->active[c->nactive++] = p;
  pe->state = SK_READY;
  return tpudistSuccess;
}

tpudistResult_t sockStartConnect(tdNet *comm, tdSockCtx *c, int p, int s) {
  tdSockConn *cn = &c->peers[p].conn[s];
  if (cn->state == SK_NONE) cn->hs_since = netNowMs();
  tdNetAddr a;
  char err[TD_ERRLEN];
  memcpy(&a, comm->peers[p].sock_addr, sizeof(a));
  if (netConnectStart(&a, &cn->fd, err) != tpudistSuccess ||
      sockConnectorBegin(comm, c, p, s, err) != tpudistSuccess)
    return sockPeerFail(comm, c, p, SK_FAILED, err);
  return tpudistSuccess;
}

/* Makes sure the connections to p exist or are being opened. */
static tpudistResult_t peerEnsure(tdNet *comm, tdSockCtx *c, int p) {
  if (c->peers[p].state != SK_NONE) return tpudistSuccess;
  TD_CHECK(sockPeerConns(comm, c, p));
  for (int s = 0; s < c->peers[p].nconn && c->peers[p].state == SK_READY; s++)
    if (c->peers[p].conn[s].state == SK_NONE) TD_CHECK(sockStartConnect(comm, c, p, s));
  return tpudistSuccess;
}

static tpudistResult_t sockPostSend(tdNet *comm, tdXfer *x) {
  tdSockCtx *c = sockCtx(comm);
  tdSockPeer *pe = &c->peers[x->peer];
  if (pe->state == SK_CLOSED || pe->state == SK_FAILED) {
    transportComplete(x, tpudistRemoteError, x->peer);
    return transportError(comm, tpudistRemoteError, "socket: send to rank %d: %s", x->peer,
                          pe->why);
  }
  TD_CHECK(peerEnsure(comm, c, x->peer));
  sockSendQueue(c, x->peer, x);
  return tpudistSuccess;
}

static tpudistResult_t sockPostRecv(tdNet *comm, tdXfer *x) {
  tdSockCtx *c = sockCtx(comm);
  int probe = x->tp_priv[3] == TD_ANY_PROBE;
  TD_CHECK(transportCheckRecv(comm, x));
  if (sockRecvUnexpected(comm, c, x, probe)) return tpudistSuccess;
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

/* Moves connection s of p on after poll said rev. */
static tpudistResult_t connProgress(tdNet *comm, tdSockCtx *c, int p, int s, short rev,
                                    int *moved) {
  tdSockConn *cn = &c->peers[p].conn[s];
  tpudistResult_t res = tpudistSuccess;
  if (cn->state == SK_CONNECTING || cn->state == SK_TLS || cn->state == SK_CHALLENGE ||
      cn->state == SK_VERDICT)
    res = sockConnectorStep(comm, c, p, s, rev, moved);
  if (res == tpudistSuccess && cn->state == SK_READY && (rev & POLLOUT))
    res = sockProgressSend(comm, c, p, s, moved);
  if (res == tpudistSuccess && cn->state == SK_READY && (rev & (POLLIN | POLLHUP | POLLERR)))
    res = sockProgressRecv(comm, c, p, s, moved);
  if (res == tpudistSuccess && cn->state == SK_READY && cn->cur && !(rev & POLLOUT))
    res = sockProgressSend(comm, c, p, s, moved); /* just became ready */
  return res;
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
    for (int s = 0; s < pe->nconn; s++) {
      tdSockConn *cn = &pe->conn[s];
      if (cn->fd < 0) continue;
      short ev = POLLIN;
      if (cn->state == SK_CONNECTING || (cn->state == SK_READY && cn->cur) ||
          (cn->hs_done < cn->hs_out_len && cn->state != SK_READY) ||
          (cn->state == SK_TLS && cn->tls_want == POLLOUT))
        ev |= POLLOUT;
      c->pfd[n] = (struct pollfd){cn->fd, ev, 0};
      c->pfd_conn[n] = s;
      c->pfd_peer[n++] = p;
    }
  }
  int nconns = n, nacc = sockAcceptPollFill(c, c->pfd + n);
  if (poll(c->pfd, (nfds_t)(n + nacc), 0) < 0) return tpudistSuccess;
  if (c->pfd[0].revents || nacc) sockAcceptProgress(comm, c, c->pfd + nconns, nacc, &moved);
  for (int i = 1; i < nconns; i++) {
    int p = c->pfd_peer[i], s = c->pfd_conn[i];
    short rev = c->pfd[i].revents;
    if (sockIoPending(c->peers[p].conn[s].ssl)) rev |= POLLIN; /* TLS read ahead */
    if (!rev || c->peers[p].conn[s].fd != c->pfd[i].fd) continue;
    tpudistResult_t res = connProgress(comm, c, p, s, rev, &moved);
    if (res != tpudistSuccess && first == tpudistSuccess) first = res;
  }
  *progressed = moved;
  return first;
}

void sockTestAdopt(tdNet *comm, int p, int fd) {
  tdSockCtx *c = sockCtx(comm);
  tdSockPeer *pe = &c->peers[p];
  for (int s = 0; s < pe->nconn; s++) sockIoClose(pe->conn[s].fd, pe->conn[s].ssl, 0);
  for (tdSockMsg **pp = &c->unexp_head; *pp;) {
    tdSockMsg *m = *pp;
    if (m->waiter) {
      pp = &m->next;
      continue;
    }
    *pp = m->next;
    m->queued = 0;
    sockMsgFree(c, m);
  }
  c->unexp_tail = NULL;
  for (tdSockMsg *m = c->unexp_head; m; m = m->next) c->unexp_tail = m;
  if (pe->state == SK_NONE && sockPeerConns(comm, c, p) != tpudistSuccess) return;
  pe->nconn = 1;
  pe->state = SK_READY;
  tdSockConn *cn = &pe->conn[0];
  memset(cn, 0, sizeof(*cn));
  cn->fd = fd;
  cn->state = SK_READY;
  cn->rx = RX_HDR;
}

int sockTestPeerOpen(tdNet *comm, int p) {
  int st = sockCtx(comm)->peers[p].state;
  return st != SK_CLOSED && st != SK_FAILED;
}

TD_TRANSPORT_DEFINE(tdTransportSocket, "socket", sock);
