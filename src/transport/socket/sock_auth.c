/*
 * sock_auth.c - the socket transport's connection handshake (auth.h), both sides, non-blocking:
 *   connector -> listener   hello {magic, comm hash, from, to, stream, nstreams, nonce_c}
 *                                                                                    64 bytes
 *   listener -> connector   nonce_l                                                   32 bytes
 *   connector -> listener   HMAC(key, "tpu_dist/sock/v1/initiator" | hello | nonce_l) 32 bytes
 *   listener -> connector   verdict byte, HMAC(key, "tpu_dist/sock/v1/responder" | hello |
 *                           nonce_l | verdict)                                       33 bytes
 * The listener answers a hello only with a fresh nonce and reveals its verdict only to a
 * connector that proved the key; the connector uses the connection only after the listener's
 * proof. Verdict 1 adopts the connection as the pair's stream `stream`; 2 refuses it (simultaneous
 * connects: the lower rank's connection wins, see socket.c). Every stream of a pair is a connection
 * of its own with its own handshake; a hello whose stream count is not the pair's is dropped.
 * With TPU_DIST_TLS=1 a TLS 1.3 handshake comes first on both sides (state SK_TLS; a pending
 * connection's ssl) and these messages travel inside TLS (sock_tls.c); a TLS refusal fails the
 * pair at once on the connecting side, and is dropped and logged on the listening side.
 *
 * Floods: at most TPU_DIST_MAX_HANDSHAKES accepted connections are in their handshake at once; a
 * new one beyond drops the oldest that has not sent a byte (else the oldest); each has
 * TPU_DIST_HANDSHAKE_MS to finish. A connector whose connection is dropped before the verdict
 * connects again until the communicator timeout. Refusals are logged, the first few one by one,
 * then one line per thousand.
 */
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "net.h"
#include "rt_log.h"
#include "socket_priv.h"

#define TD_SOCK_DROP_LOG_FIRST 8

_Static_assert(sizeof(tdSockHello) == TD_SOCK_HELLO_BYTES, "hello size");

int sockHelloCheck(const void *msg, size_t len, uint64_t hash, int rank, int nranks, int *from,
                   int *stream, int *nstreams) {
  tdSockHello h;
  if (len != sizeof(h)) return 0;
  memcpy(&h, msg, sizeof(h));
  if (h.magic != TD_SOCK_MAGIC || h.hash != hash || h.to != rank || h.from < 0 ||
      h.from >= nranks || h.from == rank || h.nstreams < 1 || h.nstreams > TD_SOCK_MAX_STREAMS ||
      h.stream >= h.nstreams)
    return 0;
  *from = h.from;
  *stream = (int)h.stream;
  *nstreams = (int)h.nstreams;
  return 1;
}

int sockProofCheck(const tdKey *key, const void *hello, const uint8_t *nonce_r,
                   const uint8_t *proof) {
  return authProofOk(key, TD_SOCK_LABEL_INIT, hello, TD_SOCK_HELLO_BYTES, nonce_r, 0, proof);
}

static void dropWarn(tdNet *comm, tdSockCtx *c, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void dropWarn(tdNet *comm, tdSockCtx *c, const char *fmt, ...) {
  char msg[TD_ERRLEN];
  va_list ap;
  c->dropped++;
  if (c->dropped > TD_SOCK_DROP_LOG_FIRST && c->dropped % 1000) return;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  if (c->dropped <= TD_SOCK_DROP_LOG_FIRST)
    TD_WARN(TD_SUBSYS_SOCK, "%s rank %d: %s", comm->name, comm->rank, msg);
  else
    TD_WARN(TD_SUBSYS_SOCK, "%s rank %d: dropped %ld connections so far (last: %s)", comm->name,
            comm->rank, c->dropped, msg);
}

/* ---- connector --------------------------------------------------------------------------- */

tpudistResult_t sockConnectorBegin(tdNet *comm, tdSockCtx *c, int p, int s, char *err) {
  tdSockConn *pe = &c->peers[p].conn[s];
  memset(&pe->hello, 0, sizeof(pe->hello));
  pe->hello.magic = TD_SOCK_MAGIC;
  pe->hello.hash = comm->comm_hash;
  pe->hello.from = comm->rank;
  pe->hello.to = p;
  pe->hello.stream = (uint32_t)s;
  pe->hello.nstreams = (uint32_t)c->peers[p].nconn;
  TD_CHECK(authRandom(pe->hello.nonce, sizeof(pe->hello.nonce), err));
  memcpy(pe->hs_out, &pe->hello, sizeof(pe->hello));
  pe->hs_out_len = sizeof(pe->hello);
  pe->hs_done = pe->hs_got = 0;
  pe->state = SK_CONNECTING;
  return tpudistSuccess;
}

/* Sends what is left of hs_out. 1 when all is sent, 0 when the socket is full, -1 on error (why).
 */
static int hsFlush(tdSockConn *pe, char *why, size_t wn) {
  while (pe->hs_done < pe->hs_out_len) {
    struct iovec iov = {pe->hs_out + pe->hs_done, pe->hs_out_len - pe->hs_done};
    ssize_t n = sockIoSend(pe->fd, pe->ssl, &iov, 1, why, wn);
    if (n > 0) {
      pe->hs_done += (size_t)n;
      continue;
    }
    return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) ? 0 : -1;
  }
  return 1;
}

/* One read of a handshake message: > 0 bytes, 0 nothing yet, -1 lost (why), -2 refused by TLS. */
static ssize_t hsRecv(int fd, SSL *ssl, void *buf, size_t len, char *why, size_t wn) {
  ssize_t n = sockIoRecv(fd, ssl, buf, len, why, wn);
  if (n > 0) return n;
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return 0;
  return n < 0 && ssl && errno == EPROTO ? -2 : -1;
}

/* The connection closed before the verdict: connect again while the timeout allows. */
static tpudistResult_t connectorLost(tdNet *comm, tdSockCtx *c, int p, int s, const char *why) {
  tdSockConn *pe = &c->peers[p].conn[s];
  if (netNowMs() - pe->hs_since < netTimeoutMs(comm)) {
    TD_INFO(TD_SUBSYS_SOCK,
            "%s rank %d: handshake with rank %d (stream %d) lost (%s): connecting again",
            comm->name, comm->rank, p, s, why);
    sockIoClose(pe->fd, pe->ssl, 0);
    pe->fd = -1;
    pe->ssl = NULL;
    return sockStartConnect(comm, c, p, s);
  }
  char msg[160];
  snprintf(msg, sizeof(msg), "handshake refused or connection closed (%s)", why);
  return sockPeerFail(comm, c, p, SK_FAILED, msg);
}

/* The verdict and the listener's proof are in. */
static tpudistResult_t connectorVerdict(tdNet *comm, tdSockCtx *c, int p, int s) {
  tdSockConn *pe = &c->peers[p].conn[s];
  int v = pe->hs_in[0];
  if (!authProofOk(&c->key, TD_SOCK_LABEL_RESP, &pe->hello, sizeof(pe->hello), pe->nonce_r, v,
                   pe->hs_in + 1))
    return sockPeerFail(comm, c, p, SK_FAILED,
                        "the peer did not prove it knows the job secret (another process at its "
                        "address?)");
  if (v == 1) {
    pe->state = SK_READY;
    TD_INFO(TD_SUBSYS_SOCK, "%s rank %d connected to rank %d (stream %d of %d)", comm->name,
            comm->rank, p, s, c->peers[p].nconn);
    return tpudistSuccess;
  }
  if (v == 2 && comm->rank > p) { /* the lower rank's own connection wins */
    TD_TRACE(TD_SUBSYS_SOCK, "%s rank %d: simultaneous connect with rank %d, lower rank's wins",
             comm->name, comm->rank, p);
    sockIoClose(pe->fd, pe->ssl, 1);
    pe->fd = -1;
    pe->ssl = NULL;
    pe->state = SK_WAITPEER;
    return tpudistSuccess;
  }
  return sockPeerFail(comm, c, p, SK_FAILED, "handshake refused by the peer");
}

/* A TLS refusal ends the pair at once (a connection lost is tried again instead). */
static tpudistResult_t connectorTlsRefused(tdNet *comm, tdSockCtx *c, int p, const char *why) {
  char msg[200];
  snprintf(msg, sizeof(msg), "TLS refused (%s)", why);
  return sockPeerFail(comm, c, p, SK_FAILED, msg);
}

/* The TCP connect finished: 1 to go on with the handshake, 0 to wait, -1 failed (res set). */
static int connectorConnected(tdNet *comm, tdSockCtx *c, int p, int s, short rev,
                              tpudistResult_t *res) {
  tdSockConn *pe = &c->peers[p].conn[s];
  char why[160];
  int soerr = 0;
  socklen_t sl = sizeof(soerr);
  if (!(rev & (POLLOUT | POLLERR | POLLHUP))) return 0;
  getsockopt(pe->fd, SOL_SOCKET, SO_ERROR, &soerr, &sl);
  if (soerr) {
    char msg[TD_ERRLEN];
    snprintf(msg, sizeof(msg), "connect failed: %s", strerror(soerr));
    if (c->tls) { /* a peer that refused our TLS handshake and left: say what it refused */
      int ignored = 0;
      sockAcceptProgress(comm, c, NULL, 0, &ignored);
      if (c->tls_dropped[0])
        snprintf(msg + strlen(msg), sizeof(msg) - strlen(msg),
                 " after a connection was refused in its TLS handshake (%s)", c->tls_dropped);
    }
    *res = sockPeerFail(comm, c, p, SK_FAILED, msg);
    return -1;
  }
  pe->state = SK_CHALLENGE;
  if (!c->tls) return 1;
  if (!(pe->ssl = sockTlsNew(c, pe->fd, 1, why))) {
    *res = sockPeerFail(comm, c, p, SK_FAILED, why);
    return -1;
  }
  pe->state = SK_TLS;
  pe->tls_want = POLLOUT;
  return 1;
}

tpudistResult_t sockConnectorStep(tdNet *comm, tdSockCtx *c, int p, int s, short rev, int *moved) {
  tdSockConn *pe = &c->peers[p].conn[s];
  char why[160];
  tpudistResult_t res = tpudistSuccess;
  if (pe->state == SK_CONNECTING) {
    int k = connectorConnected(comm, c, p, s, rev, &res);
    if (k <= 0) return res;
    *moved = 1;
  }
  if (pe->state == SK_TLS) {
    int t = sockTlsHandshake(pe->ssl, &pe->tls_want, why, sizeof(why));
    if (t == TD_TLS_AGAIN) return tpudistSuccess;
    *moved = 1;
    if (t == TD_TLS_CLOSED) return connectorLost(comm, c, p, s, why);
    if (t == TD_TLS_ERROR) return connectorTlsRefused(comm, c, p, why);
    pe->state = SK_CHALLENGE;
  }
  int f = hsFlush(pe, why, sizeof(why));
  if (f < 0) return connectorLost(comm, c, p, s, why);
  size_t want = pe->state == SK_CHALLENGE ? TD_NONCE_BYTES : TD_SOCK_VERDICT_BYTES;
  ssize_t n = hsRecv(pe->fd, pe->ssl, pe->hs_in + pe->hs_got, want - pe->hs_got, why, sizeof(why));
  if (n == 0) return tpudistSuccess;
  *moved = 1;
  if (n == -2) return connectorTlsRefused(comm, c, p, why);
  if (n < 0) return connectorLost(comm, c, p, s, why);
  pe->hs_got += (size_t)n;
  if (pe->hs_got < want) return tpudistSuccess;
  pe->hs_got = 0;
  if (pe->state == SK_VERDICT) return connectorVerdict(comm, c, p, s);
  memcpy(pe->nonce_r, pe->hs_in, TD_NONCE_BYTES);
  authProof(&c->key, TD_SOCK_LABEL_INIT, &pe->hello, sizeof(pe->hello), pe->nonce_r, 0, pe->hs_out);
  pe->hs_out_len = TD_MAC_BYTES;
  pe->hs_done = 0;
  pe->state = SK_VERDICT;
  if (hsFlush(pe, why, sizeof(why)) < 0) return connectorLost(comm, c, p, s, why);
  return tpudistSuccess;
}

/* ---- listener ---------------------------------------------------------------------------- */

/* The connector proved the key: adopt the connection as stream s of p or refuse it, and say so
 * with a proof. */
static void acceptProved(tdNet *comm, tdSockCtx *c, tdSockAccept *a, int p, int s) {
  uint8_t out[TD_SOCK_VERDICT_BYTES];
  tdSockPeer *peer = &c->peers[p];
  int verdict = 1;
  if (peer->state == SK_NONE && sockPeerConns(comm, c, p) != tpudistSuccess) verdict = 2;
  tdSockConn *pe = verdict == 1 ? &peer->conn[s] : NULL;
  if (peer->state == SK_CLOSED || peer->state == SK_FAILED || !pe || pe->state == SK_READY ||
      ((pe->state == SK_CONNECTING || pe->state == SK_CHALLENGE || pe->state == SK_VERDICT) &&
       comm->rank < p))
    verdict = 2;
  out[0] = (uint8_t)verdict;
  authProof(&c->key, TD_SOCK_LABEL_RESP, &a->hello, sizeof(a->hello), a->nonce_r, verdict, out + 1);
  char why[160];
  struct iovec iov = {out, sizeof(out)};
  int sent = sockIoSend(a->fd, a->ssl, &iov, 1, why, sizeof(why)) == (ssize_t)sizeof(out);
  if (verdict == 1 && sent) {
    if (pe->fd >= 0) { /* our own attempt (we are the higher rank) loses */
      TD_TRACE(TD_SUBSYS_SOCK, "%s rank %d: simultaneous connect with rank %d, lower rank's wins",
               comm->name, comm->rank, p);
      sockIoClose(pe->fd, pe->ssl, 0);
    }
    pe->fd = a->fd;
    pe->ssl = a->ssl;
    pe->state = SK_READY;
    TD_INFO(TD_SUBSYS_SOCK, "%s rank %d accepted rank %d (stream %d of %d)", comm->name, comm->rank,
            p, s, peer->nconn);
    return;
  }
  sockIoClose(a->fd, a->ssl, 1);
}

/* Drops pending connection a (closed, its session freed). Returns 1 (finished). */
static int acceptDrop(tdSockAccept *a) {
  sockIoClose(a->fd, a->ssl, 0);
  return 1;
}

/* The TLS handshake of a pending connection: 1 when done, 0 in progress, -1 dropped. */
static int acceptTls(tdNet *comm, tdSockCtx *c, tdSockAccept *a, int64_t now) {
  char why[160];
  if (!a->ssl || SSL_is_init_finished(a->ssl)) return 1;
  int t = sockTlsHandshake(a->ssl, &a->tls_want, why, sizeof(why));
  if (t == TD_TLS_DONE) return 1;
  if (t == TD_TLS_AGAIN && now - a->since_ms <= c->handshake_ms) return 0;
  if (t == TD_TLS_AGAIN) snprintf(why, sizeof(why), "deadline");
  snprintf(c->tls_dropped, sizeof(c->tls_dropped), "%s", why);
  dropWarn(comm, c, "refused a connection in its TLS handshake: %s", why);
  acceptDrop(a);
  return -1;
}

/* The hello is in: check it and send the challenge. 1 when finished (dropped), else 0. */
static int acceptHello(tdNet *comm, tdSockCtx *c, tdSockAccept *a) {
  int p = -1, s = 0, k = 0;
  char why[160];
  if (!sockHelloCheck(&a->hello, sizeof(a->hello), comm->comm_hash, comm->rank, comm->nranks, &p,
                      &s, &k)) {
    dropWarn(comm, c, "dropped a connection with a wrong hello");
    return acceptDrop(a);
  }
  int pair = TD_MAX(1, TD_MIN(c->nstreams, comm->peers ? comm->peers[p].sock_streams : 1));
  if (k != pair) {
    dropWarn(comm, c, "dropped a hello from rank %d for %d streams: the pair has %d", p, k, pair);
    return acceptDrop(a);
  }
  struct iovec iov = {a->nonce_r, sizeof(a->nonce_r)};
  if (authRandom(a->nonce_r, sizeof(a->nonce_r), NULL) != tpudistSuccess ||
      sockIoSend(a->fd, a->ssl, &iov, 1, why, sizeof(why)) != (ssize_t)sizeof(a->nonce_r))
    return acceptDrop(a);
  a->stage = 1;
  return 0;
}

/* Moves one pending connection on. Returns 1 when it is finished (adopted or dropped). */
static int acceptStep(tdNet *comm, tdSockCtx *c, tdSockAccept *a, int64_t now) {
  int t = acceptTls(comm, c, a, now);
  if (t <= 0) return t < 0;
  char *dst = a->stage == 0 ? (char *)&a->hello : (char *)a->proof, why[160];
  size_t want = a->stage == 0 ? sizeof(a->hello) : sizeof(a->proof);
  ssize_t n = sockIoRecv(a->fd, a->ssl, dst + a->got, want - a->got, why, sizeof(why));
  if (n > 0) a->got += (size_t)n;
  int gone = n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
  if (gone || (a->got < want && now - a->since_ms > c->handshake_ms)) {
    dropWarn(comm, c, "dropped a connection that did not finish its handshake (%s)",
             gone ? why : "deadline");
    return acceptDrop(a);
  }
  if (a->got < want) return 0;
  a->got = 0;
  if (a->stage == 0) return acceptHello(comm, c, a);
  int p = a->hello.from;
  if (!sockProofCheck(&c->key, &a->hello, a->nonce_r, a->proof)) {
    dropWarn(comm, c, "refused a connection claiming rank %d: wrong proof of the job secret", p);
    return acceptDrop(a);
  }
  acceptProved(comm, c, a, p, (int)a->hello.stream);
  return 1;
}

/* Room for one more pending connection: drops the oldest silent one (else the oldest) if full. */
static void acceptMakeRoom(tdNet *comm, tdSockCtx *c) {
  if (c->naccepting < c->max_handshakes) return;
  tdSockAccept **oldest = NULL, **oldest_silent = NULL;
  for (tdSockAccept **pp = &c->accepting; *pp; pp = &(*pp)->next) { /* newest first */
    oldest = pp;
    if ((*pp)->stage == 0 && (*pp)->got == 0) oldest_silent = pp;
  }
  tdSockAccept **victim = oldest_silent ? oldest_silent : oldest;
  tdSockAccept *v = *victim;
  *victim = v->next;
  dropWarn(comm, c, "dropped a connection: %d handshakes in progress at once (a flood?)",
           c->naccepting);
  sockIoClose(v->fd, v->ssl, 0);
  free(v);
  c->naccepting--;
}

int sockAcceptPollFill(tdSockCtx *c, struct pollfd *pfd) {
  int n = 0;
  for (tdSockAccept *a = c->accepting; a; a = a->next)
    pfd[n++] = (struct pollfd){a->fd, (short)(POLLIN | (a->ssl ? a->tls_want : 0)), 0};
  return n;
}

void sockAcceptProgress(tdNet *comm, tdSockCtx *c, const struct pollfd *pfd, int n, int *moved) {
  int64_t now = netNowMs();
  int i = 0;
  for (tdSockAccept **pp = &c->accepting; *pp; i++) {
    tdSockAccept *a = *pp;
    int due =
        i >= n || pfd[i].revents || now - a->since_ms > c->handshake_ms || sockIoPending(a->ssl);
    if (due && acceptStep(comm, c, a, now)) {
      *pp = a->next;
      free(a);
      c->naccepting--;
      *moved = 1;
    } else {
      pp = &a->next;
    }
  }
  for (;;) {
    int fd;
    char err[TD_ERRLEN];
    if (netAccept(c->lfd, &fd, err) != tpudistSuccess || fd < 0) break;
    acceptMakeRoom(comm, c);
    tdSockAccept *a = calloc(1, sizeof(*a));
    if (!a) {
      close(fd);
      continue;
    }
    a->fd = fd;
    a->since_ms = now;
    *moved = 1;
    if (c->tls && !(a->ssl = sockTlsNew(c, fd, 0, err))) {
      close(fd);
      free(a);
      continue;
    }
    if (acceptStep(comm, c, a, now)) { /* the hello is often there already */
      free(a);
      continue;
    }
    a->next = c->accepting;
    c->accepting = a;
    c->naccepting++;
  }
}
