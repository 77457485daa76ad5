/*
 * boot_agree.c - the survivors' side of a channel (tpudistCommShrink): the agreement listener,
 * the agreement on the failed set (no exclude list), and the split that forms the shrunk
 * communicator at the agreement listeners.
 *
 * Agreement listener: opened when the communicator is set up, its address published in the peer
 * info; unlike the channel's own listener it stays open after a failure (the closed own listener
 * tells unconnected peers that this rank released the communicator), until bootstrapFree.
 *
 * Coordinator protocol (after ULFM's agree, without its log): every survivor knows a set of ranks
 * it is certain have failed (its caller's probe: a process gone on this host). The coordinator is
 * the lowest rank not in that set.
 *   participant -> coordinator  PROPOSE {its failed set}
 *   coordinator -> participant  DECIDE  {the union of all proposals, plus every rank that did not
 *                                        propose within the wait}
 * Each message is {magic, channel hash, sequence, type, rank, nranks, bitmap} followed by an
 * HMAC-SHA256 with the channel key over all of it, so nobody without the key, and no message of
 * another channel or an earlier agreement, is taken. One TCP connection per proposal, to the
 * coordinator's agreement listener.
 *
 * Bounds (T = timeout_ms): a participant connects to the coordinator (retrying for up to T), then
 * waits up to 3T for the decision; a coordinator that is certainly dead, refuses past T, or closes
 * the connection is added to the set and the next lowest rank becomes coordinator. The coordinator
 * waits until every rank not in its set has proposed, or 2T: who has not proposed by then is
 * failed. When the coordinator dies after sending some decisions, the ranks that got one carry on
 * with it and the rest elect the next coordinator, which counts them failed: the shrunk
 * communicator's rendezvous fails for the first group (its new rank 0 is the dead coordinator:
 * bounded, an error), and never joins different member lists. A rank that nobody answered (it came
 * after the others had decided) gets an error saying so.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "boot_priv.h"
#include "rt_log.h"

#define TD_AGREE_MAGIC 0x31307267616474ull /* "tdagr01" */
#define TD_AGREE_PROPOSE 1u
#define TD_AGREE_DECIDE 2u
#define TD_AGREE_LABEL "tpu_dist/agree/v1"

typedef struct {
  uint64_t magic, hash;
  uint32_t seq, type;
  int32_t rank, nranks;
} tdAgreeHdr;

typedef struct {
  tdBootstrap *bs;
  uint8_t *failed; /* nranks: 1 = failed */
  uint32_t seq;
  int timeout_ms;
  tdAgreeDeadFn dead;
  void *ctx;
  int guessed;      /* ranks counted failed for not answering (not known to be gone) */
  tdNetAddr *addrs; /* every rank's agreement listener */
  volatile int *ab; /* every wait stops when it is set */
  /* listener probes (agreeGone): per rank a pending connect or -1, when to start the next one,
   * and 1 once its agreement listener refused */
  int *pfd;
  int64_t *pnext;
  uint8_t *gone;
} tdAgree;

static size_t agreeMsgLen(int nranks) {
  return sizeof(tdAgreeHdr) + ((size_t)nranks + 7) / 8 + TD_MAC_BYTES;
}

/* Builds a message of agreeMsgLen bytes into buf from a->failed. */
static void agreePack(const tdAgree *a, uint32_t type, uint8_t *buf) {
  tdAgreeHdr h = {TD_AGREE_MAGIC, a->bs->hash, a->seq, type, a->bs->rank, a->bs->nranks};
  size_t nb = ((size_t)a->bs->nranks + 7) / 8;
  memcpy(buf, &h, sizeof(h));
  uint8_t *bits = buf + sizeof(h);
  memset(bits, 0, nb);
  for (int r = 0; r < a->bs->nranks; r++)
    if (a->failed[r]) bits[r / 8] |= (uint8_t)(1u << (r % 8));
  authMac(&a->bs->key, TD_AGREE_LABEL, buf, sizeof(h) + nb, NULL, 0, bits + nb);
}

/* Checks a received message of type; merges its set into a->failed. Returns the sender or -1. */
static int agreeUnpack(tdAgree *a, uint32_t type, const uint8_t *buf) {
  tdAgreeHdr h;
  size_t nb = ((size_t)a->bs->nranks + 7) / 8;
  uint8_t mac[TD_MAC_BYTES];
  memcpy(&h, buf, sizeof(h));
  authMac(&a->bs->key, TD_AGREE_LABEL, buf, sizeof(h) + nb, NULL, 0, mac);
  if (!authEqual(mac, buf + sizeof(h) + nb, TD_MAC_BYTES) || h.magic != TD_AGREE_MAGIC ||
      h.hash != a->bs->hash || h.seq != a->seq || h.type != type || h.nranks != a->bs->nranks ||
      h.rank < 0 || h.rank >= a->bs->nranks || h.rank == a->bs->rank)
    return -1;
  if (type == TD_AGREE_PROPOSE && a->failed[h.rank]) return -1; /* already out: a stale proposal */
  for (int r = 0; r < a->bs->nranks; r++) { /* a proposal adds to the set, a decision is it */
    int bit = (buf[sizeof(h) + r / 8] >> (r % 8)) & 1;
    if (bit || type == TD_AGREE_DECIDE) a->failed[r] = (uint8_t)bit;
  }
  return h.rank;
}

/* The failed set as a list, for the log. */
static const char *agreeSetStr(const tdAgree *a, char *buf, size_t len) {
  size_t o = 0;
  buf[0] = 0;
  for (int r = 0; r < a->bs->nranks && o + 12 < len; r++)
    if (a->failed[r]) o += (size_t)snprintf(buf + o, len - o, "%s%d", o ? "," : "", r);
  if (!o) snprintf(buf, len, "none");
  return buf;
}

/* 1 once rank r's agreement listener refuses a connection: that listener stays open from the
 * communicator's setup until it is destroyed (and while a communicator shrunk from it lives),
 * through any failure, so a refusal means the process is gone or no longer has the communicator:
 * certain on any host, unlike an EOF on a data connection (a survivor that failed releases its
 * connections too). Never blocks: a connect is started, and its answer read at a later call
 * (after one round trip); a listener that accepts is probed again 100 ms later. */
static int agreeGone(tdAgree *a, int r) {
  if (a->gone[r]) return 1;
  int64_t now = netNowMs();
  if (a->pfd[r] < 0) {
    char e[TD_ERRLEN];
    if (now < a->pnext[r]) return 0;
    if (netConnectStart(&a->addrs[r], &a->pfd[r], e) != tpudistSuccess) {
      a->pfd[r] = -1;
      a->pnext[r] = now + 100;
      return a->gone[r] = strstr(e, strerror(ECONNREFUSED)) != NULL;
    }
  }
  struct pollfd p = {a->pfd[r], POLLOUT, 0};
  if (poll(&p, 1, 0) <= 0) return 0; /* no answer yet */
  int soerr = 0;
  socklen_t sl = sizeof(soerr);
  getsockopt(a->pfd[r], SOL_SOCKET, SO_ERROR, &soerr, &sl);
  close(a->pfd[r]);
  a->pfd[r] = -1;
  a->pnext[r] = now + 100;
  return a->gone[r] = soerr == ECONNREFUSED;
}

/* Marks every rank (not in skip, when given) that is certainly gone: the caller's probe (a
 * process gone on this host) or a refusing agreement listener (any host). The latter also counts
 * as guessed: the rank may have destroyed the communicator after shrinking without this one, and a
 * rank left alone that way must hear that it was excluded. */
static void agreeProbe(tdAgree *a, const int *skip) {
  for (int r = 0; r < a->bs->nranks; r++) {
    if (r == a->bs->rank || a->failed[r] || (skip && skip[r] >= 0)) continue;
    if (a->dead && a->dead(a->ctx, r))
      a->failed[r] = 1;
    else if (agreeGone(a, r))
      a->failed[r] = 1, a->guessed++;
  }
}

/* Coordinator: reads one proposal from a new connection; keeps its fd in fds[sender]. */
static void agreeTakeProposal(tdAgree *a, int fd, int *fds, uint8_t *buf) {
  char e[TD_ERRLEN];
  int64_t deadline = netNowMs() + TD_MIN(a->timeout_ms, 1000);
  int from = -1;
  if (netRecvAll(fd, buf, agreeMsgLen(a->bs->nranks), deadline, a->ab, "a proposal", e) ==
      tpudistSuccess)
    from = agreeUnpack(a, TD_AGREE_PROPOSE, buf);
  if (from < 0) { /* a liveness probe, a stale or foreign message: not ours */
    close(fd);
    return;
  }
  if (fds[from] >= 0) close(fds[from]); /* the sender connected again */
  fds[from] = fd;
}

/* Ranks not failed that have not proposed yet. */
static int agreeMissing(const tdAgree *a, const int *fds) {
  int n = 0;
  for (int r = 0; r < a->bs->nranks; r++)
    if (r != a->bs->rank && !a->failed[r] && fds[r] < 0) n++;
  return n;
}

static tpudistResult_t agreeCoordinate(tdAgree *a, char *err) {
  tdBootstrap *bs = a->bs;
  size_t len = agreeMsgLen(bs->nranks);
  int *fds = malloc(sizeof(int) * (size_t)bs->nranks);
  uint8_t *buf = malloc(len);
  if (!fds || !buf) {
    free(fds);
    free(buf);
    return tdErr(err, tpudistNoMemory, "shrink agreement: out of memory");
  }
  for (int r = 0; r < bs->nranks; r++) fds[r] = -1;
  int64_t deadline = netNowMs() + 2 * (int64_t)a->timeout_ms, next_probe = 0;
  while (agreeMissing(a, fds) > 0 && netNowMs() < deadline && !*a->ab) {
    struct pollfd p = {bs->agree_fd, POLLIN, 0};
    if (poll(&p, 1, 20) > 0) {
      int fd = -1;
      char e[TD_ERRLEN];
      if (netAccept(bs->agree_fd, &fd, e) == tpudistSuccess && fd >= 0)
        agreeTakeProposal(a, fd, fds, buf);
    }
    if (netNowMs() >= next_probe) {
      agreeProbe(a, fds); /* who proposed is alive */
      next_probe = netNowMs() + 50;
    }
  }
  for (int r = 0; r < bs->nranks; r++) {
    if (r != bs->rank && fds[r] < 0 && !a->failed[r]) a->failed[r] = 1, a->guessed++; /* silent */
  }
  agreePack(a, TD_AGREE_DECIDE, buf);
  char set[256];
  TD_INFO(TD_SUBSYS_BOOT, "shrink agreement %u: rank %d (coordinator) decides failed {%s}", a->seq,
          bs->rank, agreeSetStr(a, set, sizeof(set)));
  for (int r = 0; r < bs->nranks; r++) {
    if (fds[r] < 0) continue;
    char e[TD_ERRLEN];
    if (netSendAll(fds[r], buf, len, netNowMs() + a->timeout_ms, a->ab, "a participant", e) !=
        tpudistSuccess)
      TD_WARN(TD_SUBSYS_BOOT, "shrink agreement: the decision did not reach rank %d: %s", r, e);
    close(fds[r]);
  }
  free(fds);
  free(buf);
  if (*a->ab) return tdErr(err, tpudistAborted, "shrink agreement: aborted");
  return tpudistSuccess;
}

/* Participant, one exchange: connects (retrying refusals until connect_by), proposes, waits for
 * the decision until the deadline. 0 decided; 1 no connection by connect_by, or the coordinator
 * is gone; 2 timed out waiting; 3 closed (or answered garbage) before deciding; <0 aborted. */
static int agreeExchange(tdAgree *a, int coord, int64_t connect_by, int64_t deadline,
                         uint8_t *buf) {
  tdBootstrap *bs = a->bs;
  size_t len = agreeMsgLen(bs->nranks);
  char e[TD_ERRLEN];
  int fd = -1, res = 3;
  while (fd < 0 && netNowMs() < connect_by && !*a->ab) {
    if ((a->dead && a->dead(a->ctx, coord)) || agreeGone(a, coord)) return 1;
    if (netConnectRetry(&a->addrs[coord], TD_MIN(netNowMs() + 100, connect_by), a->ab, &fd, e) !=
        tpudistSuccess)
      fd = -1;
  }
  if (fd < 0) return *a->ab ? -1 : 1;
  agreePack(a, TD_AGREE_PROPOSE, buf);
  if (netSendAll(fd, buf, len, netNowMs() + a->timeout_ms, a->ab, "the coordinator", e) ==
      tpudistSuccess) {
    res = 2;
    while (netNowMs() < deadline && !*a->ab) {
      struct pollfd p = {fd, POLLIN, 0};
      if (poll(&p, 1, 50) > 0) {
        res = netRecvAll(fd, buf, len, netNowMs() + a->timeout_ms, a->ab, "the coordinator", e) ==
                          tpudistSuccess &&
                      agreeUnpack(a, TD_AGREE_DECIDE, buf) == coord
                  ? 0
                  : 3;
        break;
      }
      if (a->dead && a->dead(a->ctx, coord)) {
        res = 1;
        break;
      }
    }
  }
  close(fd);
  return *a->ab ? -1 : res;
}

/* Participant: 0 decided (a->failed holds the decision), 1 the coordinator failed, <0 aborted.
 * A connection the coordinator closes before deciding (it is still busy with the rendezvous of an
 * earlier decision, which drops what is not a hello) is tried again until 3T, while the coordinator
 * is not known to be gone; refusals count as failed after T. */
static int agreeParticipate(tdAgree *a, int coord) {
  uint8_t *buf = malloc(agreeMsgLen(a->bs->nranks));
  if (!buf) return 1;
  int64_t deadline = netNowMs() + 3 * (int64_t)a->timeout_ms;
  int r;
  for (;;) {
    r = agreeExchange(a, coord, TD_MIN(netNowMs() + a->timeout_ms, deadline), deadline, buf);
    if (r != 3 || (a->dead && a->dead(a->ctx, coord)) || agreeGone(a, coord) ||
        netNowMs() >= deadline)
      break;
    struct timespec ts = {0, 10 * 1000000L};
    nanosleep(&ts, NULL);
  }
  free(buf);
  return r < 0 ? -1 : r == 0 ? 0 : 1;
}

/* The rounds: coordinator after coordinator until a decision. */
static tpudistResult_t agreeRun(tdAgree *ap, char *err) {
  tdAgree a = *ap;
  tdBootstrap *bs = a.bs;
  uint8_t *failed = a.failed;
  tdAgreeDeadFn dead = a.dead;
  void *ctx = a.ctx;
  failed[bs->rank] = 0;
  char set[256];
  TD_INFO(TD_SUBSYS_BOOT, "shrink agreement %u: rank %d starts knowing failed {%s}", a.seq,
          bs->rank, agreeSetStr(&a, set, sizeof(set)));
  for (;;) {
    agreeProbe(&a, NULL);
    int coord = 0;
    while (failed[coord]) coord++; /* this rank is never failed here: coord <= rank */
    if (coord == bs->rank) {
      TD_CHECK(agreeCoordinate(&a, err));
      break;
    }
    int r = agreeParticipate(&a, coord);
    if (r < 0) return tdErr(err, tpudistAborted, "shrink agreement: aborted");
    if (r == 0) {
      TD_INFO(TD_SUBSYS_BOOT, "shrink agreement %u: rank %d takes rank %d's decision: failed {%s}",
              a.seq, bs->rank, coord, agreeSetStr(&a, set, sizeof(set)));
      break;
    }
    TD_INFO(TD_SUBSYS_BOOT, "shrink agreement: coordinator rank %d failed; rank %d tries the next",
            coord, bs->rank);
    failed[coord] = 1;
    a.guessed += !(dead && dead(ctx, coord)); /* a refusing listener: gone, or moved on */
  }
  int others = 0;
  for (int r = 0; r < bs->nranks; r++) others += r != bs->rank && !failed[r];
  if (others == 0 && a.guessed > 0)
    return tdErr(err, tpudistRemoteError,
                 "shrink agreement: no other rank answered rank %d within the bounds (%d ms per "
                 "coordinator, %d ms as coordinator) though not all are known to be gone: the "
                 "others probably excluded it (it came too late), or it is cut off from them",
                 bs->rank, a.timeout_ms, 2 * a.timeout_ms);
  if (failed[bs->rank])
    return tdErr(err, tpudistRemoteError,
                 "shrink agreement: the other survivors count rank %d as failed (it joined the "
                 "agreement too late): it is not a member of the shrunk communicator",
                 bs->rank);
  return tpudistSuccess;
}

/* The agreement listeners' addresses from peers, checked. */
static tpudistResult_t agreeAddrs(const tdBootstrap *bs, const tdPeerInfo *peers, tdNetAddr *addrs,
                                  char *err) {
  for (int r = 0; r < bs->nranks; r++) {
    char e[TD_ERRLEN];
    memcpy(&addrs[r], peers[r].agree_addr, sizeof(tdNetAddr));
    if (bootstrapAddrCheck(&addrs[r], sizeof(tdNetAddr), e) != tpudistSuccess)
      return tdErr(err, tpudistInternalError, "shrink: rank %d's agreement address: %s", r, e);
  }
  return tpudistSuccess;
}

tpudistResult_t bootstrapAgree(tdBootstrap *bs, const tdPeerInfo *peers, uint8_t *failed,
                               uint32_t seq, int timeout_ms, tdAgreeDeadFn dead, void *ctx,
                               volatile int *abort, char *err) {
  tdAgree a = {bs,   failed, seq,  timeout_ms > 0 ? timeout_ms : 1, dead,
               ctx,  0,      NULL, abort ? abort : &bs->aborted,    NULL,
               NULL, NULL};
  if (bs->agree_fd < 0) return tdErr(err, tpudistInternalError, "shrink agreement: no listener");
  size_t n = (size_t)bs->nranks;
  a.addrs = malloc(sizeof(tdNetAddr) * n);
  a.pfd = malloc(sizeof(int) * n);
  a.pnext = calloc(n, sizeof(int64_t));
  a.gone = calloc(n, 1);
  tpudistResult_t res = tdErr(err, tpudistNoMemory, "shrink agreement: out of memory");
  if (a.addrs && a.pfd && a.pnext && a.gone) {
    for (size_t r = 0; r < n; r++) a.pfd[r] = -1;
    res = agreeAddrs(bs, peers, a.addrs, err);
    if (res == tpudistSuccess) res = agreeRun(&a, err);
    for (size_t r = 0; r < n; r++)
      if (a.pfd[r] >= 0) close(a.pfd[r]);
  }
  free(a.addrs);
  free(a.pfd);
  free(a.pnext);
  free(a.gone);
  return res;
}

tpudistResult_t bootstrapAgreeListen(tdBootstrap *bs, void *addr, size_t len, char *err) {
  if (len < sizeof(tdNetAddr))
    return tdErr(err, tpudistInternalError, "agreement listener: %zu bytes of room", len);
  tdNetAddr a;
  if (bs->agree_fd < 0) {
    TD_CHECK(bootListenOn(&bs->addrs[bs->rank], &bs->agree_fd, &a, err));
  } else { /* asked again (a communicator built twice on one channel): the same listener */
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    getsockname(bs->agree_fd, (struct sockaddr *)&ss, &sl);
    netFromSockaddr((struct sockaddr *)&ss, &a);
  }
  memset(addr, 0, len);
  memcpy(addr, &a, sizeof(a));
  return tpudistSuccess;
}

tpudistResult_t bootstrapShrinkSplit(tdBootstrap *parent, const tdPeerInfo *peers,
                                     const int *members, int n, int newrank, uint64_t tag,
                                     int timeout_ms, volatile int *abort, tdBootstrap **out,
                                     char *err) {
  tdNetAddr root;
  char e[TD_ERRLEN];
  if (n < 1 || members[0] < 0 || members[0] >= parent->nranks || parent->agree_fd < 0)
    return tdErr(err, tpudistInvalidArgument, "shrink: bad member list or no agreement listener");
  memcpy(&root, peers[members[0]].agree_addr, sizeof(root));
  if (bootstrapAddrCheck(&root, sizeof(root), e) != tpudistSuccess)
    return tdErr(err, tpudistInternalError, "shrink: the new rank 0's address: %s", e);
  TD_CHECK(bootSplitOn(parent, parent->agree_fd, &root, members, n, newrank, tag, timeout_ms, abort,
                       out, err));
  if (((*out)->agree_fd = dup(parent->agree_fd)) < 0) {
    tpudistResult_t r = tdErr(err, tpudistSystemError, "shrink: dup of the agreement listener: %s",
                              strerror(errno));
    bootstrapFree(*out);
    *out = NULL;
    return r;
  }
  return tpudistSuccess;
}
