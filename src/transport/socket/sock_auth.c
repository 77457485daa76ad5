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

/* Sends what is left of hs_out. 1 when all is sent, 0 when the socket is full, -1 on error. */
static int hsFlush(tdSockConn *pe) {
  while (pe->hs_done < pe->hs_out_len) {
    ssize_t n = send(pe->fd, pe->hs_out + pe->hs_done, pe->hs_out_len - pe->hs_done,
                     MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      pe->hs_done += (size_t)n;
      continue;
    }
    return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) ? 0 : -1;
  }
  return 1;
}

/* The connection closed before the verdict: connect again while the timeout allows. */
static tpudistResult_t connectorLost(tdNet *comm, tdSockCtx *c, int p, int s, const char *why) {
  tdSockConn *pe = &c->peers[p].conn[s];
  if (netNowMs() - pe->hs_since < comm->timeout_ms) {
    TD_INFO(TD_SUBSYS_SOCK,
            "%s rank %d: handshake with rank %d (stream %d) lost (%s): connecting again",
            comm->name, comm->rank, p, s, why);
    close(pe->fd);
    pe->fd = -1;
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
    close(pe->fd);
    pe->fd = -1;
    pe->state = SK_WAITPEER;
    return tpudistSuccess;
  }
  return sockPeerFail(comm, c, p, SK_FAILED, "handshake refused by the peer");
}

tpudistResult_t sockConnectorStep(tdNet *comm, tdSockCtx *c, int p, int s, short rev, int *moved) {
  tdSockConn *pe = &c->peers[p].conn[s];
  char why[160];
  if (pe->state == SK_CONNECTING) {
    int soerr = 0;
    socklen_t sl = sizeof(soerr);
    if (!(rev & (POLLOUT | POLLERR | POLLHUP))) return tpudistSuccess;
    getsockopt(pe->fd, SOL_SOCKET, SO_ERROR, &soerr, &sl);
    if (soerr) {
      snprintf(why, sizeof(why), "connect failed: %s", strerror(soerr));
      return sockPeerFail(comm, c, p, SK_FAILED, why);
    }
    pe->state = SK_CHALLENGE;
    *moved = 1;
  }
  int f = hsFlush(pe);
  if (f < 0) return connectorLost(comm, c, p, s, strerror(errno));
  size_t want = pe->state == SK_CHALLENGE ? TD_NONCE_BYTES : TD_SOCK_VERDICT_BYTES;
  ssize_t n = recv(pe->fd, pe->hs_in + pe->hs_got, want - pe->hs_got, MSG_DONTWAIT);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return tpudistSuccess;
  *moved = 1;
  if (n <= 0) return connectorLost(comm, c, p, s, n < 0 ? strerror(errno) : "peer closed");
  pe->hs_got += (size_t)n;
  if (pe->hs_got < want) return tpudistSuccess;
  pe->hs_got = 0;
  if (pe->state == SK_VERDICT) return connectorVerdict(comm, c, p, s);
  memcpy(pe->nonce_r, pe->hs_in, TD_NONCE_BYTES);
  authProof(&c->key, TD_SOCK_LABEL_INIT, &pe->hello, sizeof(pe->hello), pe->nonce_r, 0, pe->hs_out);
  pe->hs_out_len = TD_MAC_BYTES;
  pe->hs_done = 0;
  pe->state = SK_VERDICT;
  if (hsFlush(pe) < 0) return connectorLost(comm, c, p, s, strerror(errno));
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
  int sent = send(a->fd, out, sizeof(out), MSG_NOSIGNAL | MSG_DONTWAIT) == (ssize_t)sizeof(out);
  if (verdict == 1 && sent) {
    if (pe->fd >= 0) { /* our own attempt (we are the higher rank) loses */
      TD_TRACE(TD_SUBSYS_SOCK, "%s rank %d: simultaneous connect with rank %d, lower rank's wins",
               comm->name, comm->rank, p);
      close(pe->fd);
    }
    pe->fd = a->fd;
    pe->state = SK_READY;
    TD_INFO(TD_SUBSYS_SOCK, "%s rank %d accepted rank %d (stream %d of %d)", comm->name, comm->rank,
            p, s, peer->nconn);
    return;
  }
  close(a->fd);
}

/* Moves one pending connection on. Returns 1 when it is finished (adopted or dropped). */
static int acceptStep(tdNet *comm, tdSockCtx *c, tdSockAccept *a, int64_t now) {
  char *dst = a->stage == 0 ? (char *)&a->hello : (char *)a->proof;
  size_t want = a->stage == 0 ? sizeof(a->hello) : sizeof(a->proof);
  ssize_t n = recv(a->fd, dst + a->got, want - a->got, MSG_DONTWAIT);
  if (n > 0) a->got += (size_t)n;
  int gone = n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
  if (gone || (a->got < want && now - a->since_ms > c->handshake_ms)) {
    dropWarn(comm, c, "dropped a connection that did not finish its handshake (%s)",
             gone ? "closed" : "deadline");
    close(a->fd);
    return 1;
  }
  if (a->got < want) return 0;
  a->got = 0;
  int p = -1, s = 0, k = 0;
  if (a->stage == 0) {
    if (!sockHelloCheck(&a->hello, sizeof(a->hello), comm->comm_hash, comm->rank, comm->nranks, &p,
                        &s, &k)) {
      dropWarn(comm, c, "dropped a connection with a wrong hello");
      close(a->fd);
      return 1;
    }
    int pair = TD_MAX(1, TD_MIN(c->nstreams, comm->peers ? comm->peers[p].sock_streams : 1));
    if (k != pair) {
      dropWarn(comm, c, "dropped a hello from rank %d for %d streams: the pair has %d", p, k, pair);
      close(a->fd);
      return 1;
    }
    if (authRandom(a->nonce_r, sizeof(a->nonce_r), NULL) != tpudistSuccess ||
        send(a->fd, a->nonce_r, sizeof(a->nonce_r), MSG_NOSIGNAL | MSG_DONTWAIT) !=
            (ssize_t)sizeof(a->nonce_r)) {
      close(a->fd);
      return 1;
    }
    a->stage = 1;
    return 0;
  }
  p = a->hello.from;
  if (!sockProofCheck(&c->key, &a->hello, a->nonce_r, a->proof)) {
    dropWarn(comm, c, "refused a connection claiming rank %d: wrong proof of the job secret", p);
    close(a->fd);
    return 1;
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
  close(v->fd);
  free(v);
  c->naccepting--;
}

int sockAcceptPollFill(tdSockCtx *c, struct pollfd *pfd) {
  int n = 0;
  for (tdSockAccept *a = c->accepting; a; a = a->next) pfd[n++] = (struct pollfd){a->fd, POLLIN, 0};
  return n;
}

void sockAcceptProgress(tdNet *comm, tdSockCtx *c, const struct pollfd *pfd, int n, int *moved) {
  int64_t now = netNowMs();
  int i = 0;
  for (tdSockAccept **pp = &c->accepting; *pp; i++) {
    tdSockAccept *a = *pp;
    int due = i >= n || pfd[i].revents || now - a->since_ms > c->handshake_ms;
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
    if (acceptStep(comm, c, a, now)) { /* the hello is often there already */
      free(a);
      continue;
    }
    a->next = c->accepting;
    c->accepting = a;
    c->naccepting++;
  }
}
