/*
 * socket.c - the TCP transport: one non-blocking connection per peer pair, opened lazily.
 *
 * Each rank listens (commInit) on the interface TPU_DIST_SOCKET_IFNAME picks (prefix, "^name" for
 * exact; default: the first up non-loopback interface, else loopback) and publishes the address in
 * tdPeerInfo.sock_addr. The first post that involves a peer (either side) starts a connect; the
 * connector sends a hello {magic, comm hash, secret, from, to} and waits for a one-byte verdict.
 * If both sides connect at once, the connection opened by the lower rank wins: the lower rank
 * rejects the higher rank's hello while its own is pending, and the higher rank drops its own
 * attempt when the lower rank's hello arrives. Hellos with a wrong hash or secret are dropped.
 *
 * Framing: a 32-byte header {seq, stream, ordinal, piece, len} then len payload bytes, written with
 * sendmsg(MSG_NOSIGNAL) (never SIGPIPE). A send completes once all its bytes are in the kernel.
 * The receiver matches each header against posted receives (peer-specific, then any-source); an
 * unmatched message is read into a heap buffer and matched later. Reducing receives read into a
 * staging buffer allocated at commInit and reduce from there. A closed or failed connection fails
 * every transfer pending with that peer with tpudistRemoteError naming the peer; a peer closing
 * with nothing pending (normal shutdown) only fails later posts to it.
 */
#include "socket.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "bootstrap.h"
#include "rt_config.h"
#include "kernels.h"
#include "rt_log.h"
#include "net.h"
#include "registry.h"

#define TD_SOCK_MAGIC 0x6b636f73647470ull /* "ptdsock" */
#define TD_SOCK_STAGE (256 * 1024)
#define TD_SOCK_MAX_PER_PEER (8u << 20) /* bytes read per peer per progress call */
#define TD_SOCK_HELLO_MS 10000          /* how long an accepted connection may stay silent */
#define TD_SOCK_MAX_ACCEPTING 64        /* connections without a complete hello kept at once */

enum { SK_NONE, SK_CONNECTING, SK_HELLO, SK_WAITPEER, SK_READY, SK_CLOSED, SK_FAILED };
enum { RX_HDR, RX_XFER, RX_UNEXP, RX_DISCARD };

typedef struct {
  uint64_t seq;
  uint32_t stream, ordinal, piece, pad;
  uint64_t len;
} tdWireHdr;

typedef struct {
  uint64_t magic, hash, secret;
  int32_t from, to;
} tdSockHello;

typedef struct tdSockMsg {
  int peer;
  tdMsgKey key;
  size_t len, got;
  tdXfer *waiter; /* a receive matched while the bytes were still arriving */
  struct tdSockMsg *next;
  char data[];
} tdSockMsg;

typedef struct {
  int state, fd;
  tdSockHello hello;
  size_t hs_done; /* bytes of hello sent */
  tdXferQueue sendq;
  tdWireHdr shdr;
  size_t sent; /* bytes of header + payload of sendq.head sent */
  int rx;
  tdWireHdr rhdr;
  size_t rgot; /* header bytes (RX_HDR) or payload bytes received */
  size_t rlen;
  tdXfer *rcur;
  tdSockMsg *rmsg;
  size_t stage_fill; /* bytes of a partial element kept in part (reducing receives) */
  char part[16];
  char why[160]; /* reason of SK_CLOSED / SK_FAILED */
} tdSockPeer;

typedef struct tdSockAccept {
  int fd;
  int64_t since_ms; /* accepted at; a connection silent past TD_SOCK_HELLO_MS is dropped */
  size_t got;
  tdSockHello hello;
  struct tdSockAccept *next;
} tdSockAccept;

typedef struct {
  int lfd;
  uint64_t secret;
  tdSockPeer *peers;
  int *active; /* peers with a connection (or an attempt), in first-use order */
  int nactive;
  int64_t next_listen_ms;
  tdSockAccept *accepting;
  tdXferQueue posted;
  tdSockMsg *unexp_head, *unexp_tail;
  char *stage;
  char discard[4096];
  struct pollfd *pfd;
  int *pfd_peer;
} tdSockCtx;

_Static_assert(sizeof(tdSockHello) == TD_SOCK_HELLO_BYTES, "hello size");
_Static_assert(sizeof(tdWireHdr) == TD_SOCK_HDR_BYTES, "header size");

int sockHelloCheck(const void *msg, size_t len, uint64_t hash, uint64_t secret, int rank,
                   int nranks, int *from) {
  tdSockHello h;
  if (len != sizeof(h)) return 0;
  memcpy(&h, msg, sizeof(h));
  if (h.magic != TD_SOCK_MAGIC || h.hash != hash || h.secret != secret || h.to != rank ||
      h.from < 0 || h.from >= nranks || h.from == rank)
    return 0;
  *from = h.from;
  return 1;
}

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
  c->pfd = calloc((size_t)comm->nranks + 1, sizeof(struct pollfd));
  c->pfd_peer = calloc((size_t)comm->nranks + 1, sizeof(int));
  c->active = calloc((size_t)comm->nranks, sizeof(int));
  c->stage = malloc(TD_SOCK_STAGE);
  if (!c->peers || !c->pfd || !c->pfd_peer || !c->active || !c->stage)
    return transportError(comm, tpudistNoMemory, "socket transport: out of memory");
  memset(c->stage, 0, TD_SOCK_STAGE); /* touched at setup, never faulted on the hot path */
  for (int p = 0; p < comm->nranks; p++) c->peers[p].fd = -1;
  c->secret = comm->bootstrap ? bootstrapSecret(comm->bootstrap) : 0;
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
static tpudistResult_t peerFail(tdNet *comm, tdSockCtx *c, int p, int state, const char *why) {
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
  if (pe->rx == RX_UNEXP && pe->rmsg && pe->rmsg->waiter) {
    transportComplete(pe->rmsg->waiter, tpudistRemoteError, p);
    pe->rmsg->waiter = NULL;
    pending = 1;
  }
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

static void markActive(tdSockCtx *c, int p) {
  if (c->peers[p].state == SK_NONE) c->active[c->nactive++] = p;
}

static tpudistResult_t peerStartConnect(tdNet *comm, tdSockCtx *c, int p) {
  tdSockPeer *pe = &c->peers[p];
  markActive(c, p);
  tdNetAddr a;
  char err[TD_ERRLEN];
  memcpy(&a, comm->peers[p].sock_addr, sizeof(a));
  if (netConnectStart(&a, &pe->fd, err) != tpudistSuccess)
    return peerFail(comm, c, p, SK_FAILED, err);
  pe->state = SK_CONNECTING;
  pe->hello.magic = TD_SOCK_MAGIC;
  pe->hello.hash = comm->comm_hash;
  pe->hello.secret = c->secret;
  pe->hello.from = comm->rank;
  pe->hello.to = p;
  pe->hs_done = 0;
  return tpudistSuccess;
}

/* Makes sure a connection to p exists or is being opened. */
static tpudistResult_t peerEnsure(tdNet *comm, tdSockCtx *c, int p) {
  if (c->peers[p].state == SK_NONE) return peerStartConnect(comm, c, p);
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

/* Connector side of the handshake. */
static tpudistResult_t peerHandshake(tdNet *comm, tdSockCtx *c, int p, short rev, int *moved) {
  tdSockPeer *pe = &c->peers[p];
  char why[160];
  if (pe->state == SK_CONNECTING) {
    int soerr = 0;
    socklen_t sl = sizeof(soerr);
    if (!(rev & (POLLOUT | POLLERR | POLLHUP))) return tpudistSuccess;
    getsockopt(pe->fd, SOL_SOCKET, SO_ERROR, &soerr, &sl);
    if (soerr) {
      snprintf(why, sizeof(why), "connect failed: %s", strerror(soerr));
      return peerFail(comm, c, p, SK_FAILED, why);
    }
    ssize_t n = send(pe->fd, (char *)&pe->hello + pe->hs_done, sizeof(pe->hello) - pe->hs_done,
                     MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) pe->hs_done += (size_t)n;
    if (pe->hs_done == sizeof(pe->hello)) pe->state = SK_HELLO;
    *moved = 1;
    return tpudistSuccess;
  }
  /* SK_HELLO: wait for the verdict byte */
  unsigned char v;
  ssize_t n = recv(pe->fd, &v, 1, MSG_DONTWAIT);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return tpudistSuccess;
  *moved = 1;
  if (n == 1 && v == 1) {
    pe->state = SK_READY;
    TD_INFO(TD_SUBSYS_SOCK, "%s rank %d connected to rank %d", comm->name, comm->rank, p);
    return tpudistSuccess;
  }
  if (n == 1 && v == 2 && comm->rank > p) { /* the lower rank's own connection wins */
    TD_TRACE(TD_SUBSYS_SOCK, "%s rank %d: simultaneous connect with rank %d, lower rank's wins",
             comm->name, comm->rank, p);
    close(pe->fd);
    pe->fd = -1;
    pe->state = SK_WAITPEER;
    return tpudistSuccess;
  }
  snprintf(why, sizeof(why), "handshake refused or connection closed (%s)",
           n < 0 ? strerror(errno) : "peer closed");
  return peerFail(comm, c, p, SK_FAILED, why);
}

/* Acceptor side: validates a complete hello and adopts or rejects the connection. */
static void acceptHello(tdNet *comm, tdSockCtx *c, tdSockAccept *a) {
  unsigned char verdict = 1;
  int p = -1;
  if (!sockHelloCheck(&a->hello, sizeof(a->hello), comm->comm_hash, c->secret, comm->rank,
                      comm->nranks, &p)) {
    TD_WARN(TD_SUBSYS_SOCK, "%s rank %d: dropped a connection with a wrong hello", comm->name,
            comm->rank);
    close(a->fd);
    return;
  }
  tdSockPeer *pe = &c->peers[p];
  if (pe->state == SK_READY || pe->state == SK_CLOSED || pe->state == SK_FAILED ||
      ((pe->state == SK_CONNECTING || pe->state == SK_HELLO) && comm->rank < p))
    verdict = 2;
  if (verdict == 1 && send(a->fd, &verdict, 1, MSG_NOSIGNAL | MSG_DONTWAIT) == 1) {
    markActive(c, p);
    if (pe->fd >= 0) { /* our own attempt (we are the higher rank) loses */
      TD_TRACE(TD_SUBSYS_SOCK, "%s rank %d: simultaneous connect with rank %d, lower rank's wins",
               comm->name, comm->rank, p);
      close(pe->fd);
    }
    pe->fd = a->fd;
    pe->state = SK_READY;
    TD_INFO(TD_SUBSYS_SOCK, "%s rank %d accepted rank %d", comm->name, comm->rank, p);
    return;
  }
  verdict = 2;
  send(a->fd, &verdict, 1, MSG_NOSIGNAL | MSG_DONTWAIT);
  close(a->fd);
}

static void progressAccept(tdNet *comm, tdSockCtx *c, int *moved) {
  int64_t now = netNowMs();
  int naccepting = 0;
  for (tdSockAccept *a = c->accepting; a; a = a->next) naccepting++;
  for (;;) {
    int fd;
    char err[TD_ERRLEN];
    if (netAccept(c->lfd, &fd, err) != tpudistSuccess || fd < 0) break;
    tdSockAccept *a = naccepting < TD_SOCK_MAX_ACCEPTING ? calloc(1, sizeof(*a)) : NULL;
    if (!a) { /* a flood of connections without hellos: the newest are refused */
      TD_WARN(TD_SUBSYS_SOCK, "%s rank %d: refused a connection (%d without a hello)", comm->name,
              comm->rank, naccepting);
      close(fd);
      continue;
    }
    naccepting++;
    a->fd = fd;
    a->since_ms = now;
    a->next = c->accepting;
    c->accepting = a;
    *moved = 1;
  }
  for (tdSockAccept **pp = &c->accepting; *pp;) {
    tdSockAccept *a = *pp;
    ssize_t n = recv(a->fd, (char *)&a->hello + a->got, sizeof(a->hello) - a->got, MSG_DONTWAIT);
    if (n > 0) a->got += (size_t)n;
    int gone = n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
    if (!gone && a->got < sizeof(a->hello) && now - a->since_ms > TD_SOCK_HELLO_MS) {
      TD_WARN(TD_SUBSYS_SOCK, "%s rank %d: dropped a connection silent for %d ms", comm->name,
              comm->rank, TD_SOCK_HELLO_MS);
      gone = 1;
    }
    if (gone || a->got == sizeof(a->hello)) {
      *pp = a->next;
      if (gone)
        close(a->fd);
      else
        acceptHello(comm, c, a);
      free(a);
      *moved = 1;
    } else {
      pp = &a->next;
    }
  }
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
      return peerFail(comm, c, p, SK_FAILED, why);
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
    return peerFail(comm, c, p, SK_FAILED, why);
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
    tdSockMsg *m = malloc(sizeof(*m) + len);
    if (!m) return peerFail(comm, c, p, SK_FAILED, "out of memory for an unexpected message");
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
    tdSockMsg *m = pe->rmsg, *prev = NULL;
    for (tdSockMsg *q = c->unexp_head; q != m; q = q->next) prev = q;
    if (prev)
      prev->next = m->next;
    else
      c->unexp_head = m->next;
    if (c->unexp_tail == m) c->unexp_tail = prev;
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
    *room = left;
    return pe->rmsg->data + pe->rgot;
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
    } else {
      dst = rxTarget(c, pe, &room);
    }
    ssize_t n = room ? recv(pe->fd, dst, room, MSG_DONTWAIT) : 0;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return tpudistSuccess;
    if (n <= 0 && room) {
      char why[160];
      snprintf(why, sizeof(why), "%s", n == 0 ? "rank closed the connection" : strerror(errno));
      int mid = pe->rx != RX_HDR || pe->rgot > 0;
      return peerFail(comm, c, p, mid ? SK_FAILED : SK_CLOSED, why);
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
    if (pe->state == SK_CONNECTING || (pe->state == SK_READY && pe->sendq.head)) ev |= POLLOUT;
    c->pfd[n] = (struct pollfd){pe->fd, ev, 0};
    c->pfd_peer[n++] = p;
  }
  if (poll(c->pfd, (nfds_t)n, 0) < 0) return tpudistSuccess;
  if (c->pfd[0].revents || c->accepting) progressAccept(comm, c, &moved);
  for (int i = 1; i < n; i++) {
    int p = c->pfd_peer[i];
    short rev = c->pfd[i].revents;
    tdSockPeer *pe = &c->peers[p];
    tpudistResult_t res = tpudistSuccess;
    if (!rev || pe->fd != c->pfd[i].fd) continue;
    if (pe->state == SK_CONNECTING || pe->state == SK_HELLO)
      res = peerHandshake(comm, c, p, rev, &moved);
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

const tdTransport tdTransportSocket = {
    .name = "socket",
    .canReach = sockCanReach,
    .commInit = sockCommInit,
    .commFini = sockCommFini,
    .postSend = sockPostSend,
    .postRecv = sockPostRecv,
    .progress = sockProgress,
};
