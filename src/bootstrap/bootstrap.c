/*
 * bootstrap.c - the out-of-band channel (see bootstrap.h).
 *
 * Unique id (128 bytes): {magic, version, flags, secret, root address}. bootstrapGetUniqueId opens
 * an ephemeral listener (kept in a process table until rank 0's bootstrapInit takes it) and draws
 * the secret with getrandom(). With comm_id "host:port" (TPU_DIST_COMM_ID) nothing is opened: every
 * rank builds the same id, rank 0 listens on that address in bootstrapInit, and the secret is a
 * hash of the address string and TPU_DIST_COMM_SECRET (set the latter to a private value on shared
 * machines: without it anyone who knows host:port can join).
 *
 * Rendezvous (star through rank 0): every rank opens its own ephemeral listener, connects to the
 * root (retry with backoff until the timeout) and sends a hello {magic, secret, version, kind, tag,
 * rank, nranks, own listen address}. The root admits only hellos with the right secret (others are
 * answered with an error and dropped while the real ranks continue), and fails the whole
 * rendezvous, telling everyone why, on a version mismatch ("peer X runs tpu_dist version A, this
 * rank B"), a duplicate or out-of-range rank or a different nranks. It then sends every rank the
 * table of listen addresses. The connections to the root stay open: AllGather and Barrier go
 * through the root (gather, then broadcast the whole buffer).
 *
 * Split: the members connect to their new rank 0's own listener (address from the parent table)
 * with a hello of kind SPLIT carrying the parent secret and the caller's tag; a rank that is new
 * rank 0 of one split may receive hellos for a later split first, which it keeps (stash) for that
 * split. No global rendezvous is needed, and the child owns new listeners so it can outlive its
 * parent. Every read is bounded in length and time (the communicator timeout) and every wait
 * polls an abort flag (bootstrapAbort).
 */
#include "bootstrap.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rt_config.h"
#include "rt_log.h"
#include "net.h"

#define TD_BOOT_MAGIC 0x31306f6f62647470ull /* "ptdboo01" */
#define TD_ID_FIXED 1u
#define TD_HELLO_INIT 1u
#define TD_HELLO_SPLIT 2u
#define TD_HELLO_WAIT_MS 2000 /* how long the root waits for a connected peer's hello */
#define TD_MAX_PENDING_IDS 16

typedef struct {
  uint64_t magic;
  uint32_t version;
  uint32_t flags;
  uint64_t secret;
  tdNetAddr root;
} tdIdBody;

typedef struct {
  uint64_t magic;
  uint64_t secret;
  uint32_t version;
  uint32_t kind;
  uint64_t tag;
  int32_t rank, nranks;
  tdNetAddr addr;
} tdHello;

typedef struct {
  uint64_t magic;
  int32_t status;
  int32_t nranks;
  uint64_t nonce; /* drawn by the root: makes the hash unique even when an id is reused */
  char msg[200];
} tdReply;

typedef struct {
  uint32_t op, rank;
  uint64_t len;
} tdCollHdr;

typedef struct tdStash {
  int fd;
  tdHello hello;
  struct tdStash *next;
} tdStash;

struct tdBootstrap {
  int rank, nranks;
  uint64_t secret, hash;
  int timeout_ms;
  volatile int aborted;
  int listen_fd;    /* own listener: the rendezvous point of splits where this rank is root */
  tdNetAddr *addrs; /* nranks listen addresses */
  int root_fd;      /* non-root: connection to rank 0 */
  int *peer_fds;    /* root: connections to ranks 1..n-1 */
  tdStash *stash;   /* hellos of later splits that arrived on listen_fd */
};

_Static_assert(sizeof(tdIdBody) <= sizeof(tpudistUniqueId), "unique id too small");

/* Listeners opened by bootstrapGetUniqueId, waiting for rank 0's bootstrapInit. */
static struct {
  uint64_t secret;
  int fd;
} gPending[TD_MAX_PENDING_IDS];
static int gNpending;
static pthread_mutex_t gPendingLock = PTHREAD_MUTEX_INITIALIZER;

/* The version this process presents (tests pretend to be another release). */
static uint32_t gVersion = TPUDIST_VERSION_CODE;

void bootstrapTestSetVersion(uint32_t version) {
  gVersion = version;
}

static uint64_t mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

static uint64_t hashBytes(uint64_t h, const void *p, size_t n) {
  const unsigned char *c = p;
  h ^= 0xcbf29ce484222325ull;
  for (size_t i = 0; i < n; i++) h = (h ^ c[i]) * 0x100000001b3ull;
  return mix64(h);
}

tpudistResult_t bootstrapGetUniqueId(tpudistUniqueId *id, const char *comm_id, char *err) {
  tdIdBody b;
  memset(&b, 0, sizeof(b));
  b.magic = TD_BOOT_MAGIC;
  b.version = TPUDIST_VERSION_CODE;
  if (comm_id && *comm_id) {
    TD_CHECK(netParseHostPort(comm_id, &b.root, err));
    const char *sec = configGet()->comm_secret;
    b.flags = TD_ID_FIXED;
    b.secret = hashBytes(0x5ec7e7, comm_id, strlen(comm_id));
    if (sec) b.secret = hashBytes(b.secret, sec, strlen(sec));
  } else {
    tdNetAddr local;
    int fd;
    if (getrandom(&b.secret, sizeof(b.secret), 0) != (ssize_t)sizeof(b.secret))
      return tdErr(err, tpudistSystemError, "getrandom: %s", strerror(errno));
    TD_CHECK(netLocalAddr(configGet()->socket_ifname, &local, err));
    TD_CHECK(netListen(&local, &fd, &b.root, err));
    pthread_mutex_lock(&gPendingLock);
    if (gNpending == TD_MAX_PENDING_IDS) { /* drop the oldest unclaimed id */
      close(gPending[0].fd);
      memmove(gPending, gPending + 1, sizeof(gPending[0]) * (TD_MAX_PENDING_IDS - 1));
      gNpending--;
    }
    gPending[gNpending].secret = b.secret;
    gPending[gNpending].fd = fd;
    gNpending++;
    pthread_mutex_unlock(&gPendingLock);
  }
  memset(id, 0, sizeof(*id));
  memcpy(id->internal, &b, sizeof(b));
  return tpudistSuccess;
}

static int takePendingListener(uint64_t secret) {
  int fd = -1;
  pthread_mutex_lock(&gPendingLock);
  for (int i = 0; i < gNpending; i++) {
    if (gPending[i].secret != secret) continue;
    fd = gPending[i].fd;
    gPending[i] = gPending[--gNpending];
    break;
  }
  pthread_mutex_unlock(&gPendingLock);
  return fd;
}

static tdBootstrap *bsAlloc(int rank, int nranks, int timeout_ms) {
  tdBootstrap *bs = calloc(1, sizeof(*bs));
  if (!bs) return NULL;
  bs->addrs = calloc((size_t)nranks, sizeof(tdNetAddr));
  bs->peer_fds = calloc((size_t)nranks, sizeof(int));
  if (!bs->addrs || !bs->peer_fds) {
    free(bs->addrs);
    free(bs->peer_fds);
    free(bs);
    return NULL;
  }
  for (int i = 0; i < nranks; i++) bs->peer_fds[i] = -1;
  bs->rank = rank;
  bs->nranks = nranks;
  bs->timeout_ms = timeout_ms > 0 ? timeout_ms : 300000;
  bs->listen_fd = bs->root_fd = -1;
  return bs;
}

void bootstrapFree(tdBootstrap *bs) {
  if (!bs) return;
  if (bs->listen_fd >= 0) close(bs->listen_fd);
  if (bs->root_fd >= 0) close(bs->root_fd);
  for (int i = 0; i < bs->nranks; i++)
    if (bs->peer_fds[i] >= 0) close(bs->peer_fds[i]);
  while (bs->stash) {
    tdStash *s = bs->stash;
    bs->stash = s->next;
    close(s->fd);
    free(s);
  }
  free(bs->addrs);
  free(bs->peer_fds);
  free(bs);
}

void bootstrapRelease(tdBootstrap *bs) {
  if (bs && bs->listen_fd >= 0) {
    close(bs->listen_fd);
    bs->listen_fd = -1;
  }
}

int bootstrapPeerReleased(const tdBootstrap *bs, int peer) {
  if (!bs || peer < 0 || peer >= bs->nranks || peer == bs->rank) return 0;
  int fd = -1;
  char err[TD_ERRLEN];
  if (netConnectStart(&bs->addrs[peer], &fd, err) != tpudistSuccess)
    return strstr(err, strerror(ECONNREFUSED)) != NULL;
  struct pollfd p = {fd, POLLOUT, 0};
  int refused = 0, e = 0;
  socklen_t el = sizeof(e);
  if (poll(&p, 1, 0) > 0 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &el) == 0)
    refused = e == ECONNREFUSED;
  close(fd);
  return refused;
}

void bootstrapAbort(tdBootstrap *bs) {
  if (bs) bs->aborted = 1;
}

/* Opens this rank's own listener on the IP of ip (port 0). */
static tpudistResult_t openOwnListener(tdBootstrap *bs, const tdNetAddr *ip, char *err) {
  tdNetAddr a = *ip, bound;
  a.port = 0;
  TD_CHECK(netListen(&a, &bs->listen_fd, &bound, err));
  bs->addrs[bs->rank] = bound;
  return tpudistSuccess;
}

static void sendReply(int fd, tpudistResult_t status, int nranks, const char *msg) {
  tdReply r;
  memset(&r, 0, sizeof(r));
  r.magic = TD_BOOT_MAGIC;
  r.status = status;
  r.nranks = nranks;
  snprintf(r.msg, sizeof(r.msg), "%s", msg ? msg : "");
  char e[TD_ERRLEN];
  netSendAll(fd, &r, sizeof(r), netNowMs() + 1000, NULL, "peer", e);
}

/* ---- wire checks ------------------------------------------------------------------------- */

tpudistResult_t bootstrapAddrCheck(const void *addr, size_t len, char *err) {
  tdNetAddr a;
  if (len != sizeof(a)) return tdErr(err, tpudistRemoteError, "address of %zu bytes", len);
  memcpy(&a, addr, sizeof(a));
  if ((a.family != AF_INET && a.family != AF_INET6) || a.port == 0)
    return tdErr(err, tpudistRemoteError, "not an IPv4/IPv6 listen address (family %u, port %u)",
                 a.family, a.port);
  return tpudistSuccess;
}

tdHelloVerdict bootstrapHelloCheck(const void *msg, size_t len, uint64_t secret, uint32_t version,
                                   int nranks, int *rank, uint32_t *kind, uint64_t *tag, void *addr,
                                   char *err) {
  tdHello h;
  char e[TD_ERRLEN];
  if (len != sizeof(h)) return TD_HELLO_FOREIGN;
  memcpy(&h, msg, sizeof(h));
  if (h.magic != TD_BOOT_MAGIC) return TD_HELLO_FOREIGN;
  if (h.secret != secret) return TD_HELLO_BAD_SECRET;
  if (h.version != version) {
    tdErr(err, tpudistInvalidUsage, "bootstrap: peer %d runs tpu_dist version %u, this rank %u",
          h.rank, h.version, version);
  } else if (h.nranks != nranks) {
    tdErr(err, tpudistInvalidUsage, "bootstrap: rank %d was started with nranks %d, rank 0 with %d",
          h.rank, h.nranks, nranks);
  } else if (h.rank <= 0 || h.rank >= nranks) {
    tdErr(err, tpudistInvalidUsage, "bootstrap: a peer presented rank %d (valid: 1..%d)", h.rank,
          nranks - 1);
  } else if (bootstrapAddrCheck(&h.addr, sizeof(h.addr), e) != tpudistSuccess) {
    tdErr(err, tpudistInvalidUsage, "bootstrap: rank %d presented a bad address: %s", h.rank, e);
  } else {
    *rank = h.rank;
    if (kind) *kind = h.kind;
    if (tag) *tag = h.tag;
    if (addr) memcpy(addr, &h.addr, sizeof(h.addr));
    return TD_HELLO_OK;
  }
  return TD_HELLO_FATAL;
}

tpudistResult_t bootstrapReplyCheck(const void *msg, size_t len, int nranks, uint64_t *nonce,
                                    char *err) {
  tdReply rep;
  if (len != sizeof(rep))
    return tdErr(err, tpudistRemoteError, "bootstrap: a reply of %zu bytes", len);
  memcpy(&rep, msg, sizeof(rep));
  rep.msg[sizeof(rep.msg) - 1] = 0;
  if (rep.magic != TD_BOOT_MAGIC)
    return tdErr(err, tpudistRemoteError, "bootstrap: the root does not speak the protocol");
  if (rep.status != tpudistSuccess) {
    tpudistResult_t st = rep.status > tpudistSuccess && rep.status < tpudistNumResults
                             ? (tpudistResult_t)rep.status
                             : tpudistRemoteError;
    return tdErr(err, st, "bootstrap rejected by rank 0: %s", rep.msg);
  }
  if (rep.nranks != nranks)
    return tdErr(err, tpudistRemoteError, "bootstrap: bad table length %d", rep.nranks);
  *nonce = rep.nonce;
  return tpudistSuccess;
}

tpudistResult_t bootstrapIdCheck(const tpudistUniqueId *id, char *err) {
  tdIdBody b;
  char e[TD_ERRLEN];
  memcpy(&b, id->internal, sizeof(b));
  if (b.magic != TD_BOOT_MAGIC || (b.flags & ~TD_ID_FIXED) ||
      bootstrapAddrCheck(&b.root, sizeof(b.root), e) != tpudistSuccess)
    return tdErr(err, tpudistInvalidArgument, "bootstrap: the unique id is not valid");
  return tpudistSuccess;
}

/* Root side of a rendezvous: state of the ranks admitted so far. */
typedef struct {
  tdBootstrap *bs; /* the new channel (rank 0) */
  uint64_t secret; /* what hellos must present */
  uint32_t kind;
  uint64_t tag;
  int joined;
} tdAdmit;

/* Checks one hello. Returns 1 admitted, 0 dropped (fd closed), or a fatal error (< 0 sets err). */
static int admitHello(tdAdmit *ad, int fd, const tdHello *h, char *err) {
  tdBootstrap *bs = ad->bs;
  int rank = -1;
  tdNetAddr addr;
  tdHelloVerdict v = bootstrapHelloCheck(h, sizeof(*h), ad->secret, gVersion, bs->nranks, &rank,
                                         NULL, NULL, &addr, err);
  if (v == TD_HELLO_FOREIGN) {
    TD_WARN(TD_SUBSYS_BOOT, "bootstrap: dropped a connection that does not speak the protocol");
    close(fd);
    return 0;
  }
  if (v == TD_HELLO_BAD_SECRET) {
    TD_WARN(TD_SUBSYS_BOOT, "bootstrap: rejected a peer (claiming rank %d) with a wrong secret",
            h->rank);
    sendReply(fd, tpudistInvalidUsage, 0, "rejected: wrong secret (unique id of another job?)");
    close(fd);
    return 0;
  }
  if (v == TD_HELLO_OK && bs->peer_fds[rank] >= 0) {
    tdErr(err, tpudistInvalidUsage, "bootstrap: two processes presented rank %d", rank);
  } else if (v == TD_HELLO_OK) {
    bs->peer_fds[rank] = fd;
    bs->addrs[rank] = addr;
    ad->joined++;
    return 1;
  }
  sendReply(fd, tpudistInvalidUsage, 0, err);
  close(fd);
  return -1;
}

/* Takes stashed hellos of this split from the parent's stash. */
static tpudistResult_t admitStashed(tdAdmit *ad, tdBootstrap *owner, char *err) {
  tdStash **pp = &owner->stash;
  while (*pp) {
    tdStash *s = *pp;
    if (s->hello.kind == ad->kind && s->hello.tag == ad->tag) {
      *pp = s->next;
      int rc = admitHello(ad, s->fd, &s->hello, err);
      free(s);
      if (rc < 0) return tpudistInvalidUsage;
    } else {
      pp = &s->next;
    }
  }
  return tpudistSuccess;
}

/* Accepts hellos on lfd until every rank has joined; later splits' hellos go to owner's stash. */
static tpudistResult_t admitAll(tdAdmit *ad, int lfd, tdBootstrap *owner, int64_t deadline,
                                char *err) {
  tdBootstrap *bs = ad->bs;
  if (owner) TD_CHECK(admitStashed(ad, owner, err));
  while (ad->joined < bs->nranks - 1) {
    int fd;
    if (bs->aborted || (owner && owner->aborted))
      return tdErr(err, tpudistAborted, "bootstrap aborted while waiting for peers");
    if (netNowMs() >= deadline)
      return tdErr(err, tpudistTimeout, "bootstrap: only %d of %d ranks joined before the timeout",
                   ad->joined + 1, bs->nranks);
    TD_CHECK(netAccept(lfd, &fd, err));
    if (fd < 0) {
      struct timespec ts = {0, 2000000};
      nanosleep(&ts, NULL);
      continue;
    }
    tdHello h;
    char e[TD_ERRLEN];
    if (netRecvAll(fd, &h, sizeof(h), TD_MIN(deadline, netNowMs() + TD_HELLO_WAIT_MS), &bs->aborted,
                   "a connecting peer", e) != tpudistSuccess) {
      TD_WARN(TD_SUBSYS_BOOT, "bootstrap: dropped a connection: %s", e);
      close(fd);
      continue;
    }
    if (owner && h.magic == TD_BOOT_MAGIC && h.secret == ad->secret &&
        (h.kind != ad->kind || h.tag != ad->tag)) {
      tdStash *s = malloc(sizeof(*s));
      if (!s) return tdErr(err, tpudistNoMemory, "bootstrap: out of memory");
      s->fd = fd;
      s->hello = h;
      s->next = owner->stash;
      owner->stash = s;
      continue;
    }
    if (admitHello(ad, fd, &h, err) < 0) return tpudistInvalidUsage;
  }
  return tpudistSuccess;
}

/* Root: tells every admitted rank the result and, on success, the address table. */
static tpudistResult_t rootFinish(tdBootstrap *bs, tpudistResult_t res, const char *msg,
                                  int64_t deadline, char *err) {
  uint64_t nonce = 0;
  if (res == tpudistSuccess) {
    if (getrandom(&nonce, sizeof(nonce), 0) != (ssize_t)sizeof(nonce))
      nonce = mix64((uint64_t)netNowMs() ^ ((uint64_t)getpid() << 32));
    bs->hash = mix64(bs->hash ^ nonce);
  }
  for (int r = 1; r < bs->nranks; r++) {
    if (bs->peer_fds[r] < 0) continue;
    tdReply rep;
    memset(&rep, 0, sizeof(rep));
    rep.magic = TD_BOOT_MAGIC;
    rep.status = res;
    rep.nranks = bs->nranks;
    rep.nonce = nonce;
    snprintf(rep.msg, sizeof(rep.msg), "%s", res == tpudistSuccess ? "" : msg);
    char what[32];
    snprintf(what, sizeof(what), "rank %d", r);
    tpudistResult_t sr =
        netSendAll(bs->peer_fds[r], &rep, sizeof(rep), deadline, &bs->aborted, what, err);
    if (sr == tpudistSuccess && res == tpudistSuccess)
      sr = netSendAll(bs->peer_fds[r], bs->addrs, sizeof(tdNetAddr) * (size_t)bs->nranks, deadline,
                      &bs->aborted, what, err);
    if (sr != tpudistSuccess && res == tpudistSuccess) return sr;
  }
  return res;
}

/* Root: runs a full rendezvous on lfd. */
static tpudistResult_t rootRendezvous(tdBootstrap *bs, int lfd, tdBootstrap *owner, uint64_t secret,
                                      uint32_t kind, uint64_t tag, char *err) {
  int64_t deadline = netNowMs() + bs->timeout_ms;
  tdAdmit ad = {bs, secret, kind, tag, 0};
  tpudistResult_t res = admitAll(&ad, lfd, owner, deadline, err);
  if (res != tpudistSuccess) {
    rootFinish(bs, res, err ? err : "bootstrap failed on rank 0", deadline, NULL);
    return res;
  }
  return rootFinish(bs, tpudistSuccess, NULL, deadline, err);
}

/* Non-root: connects to the root, opens its own listener on the route's local IP, sends its hello
 * and reads the table. */
static tpudistResult_t clientJoin(tdBootstrap *bs, const tdNetAddr *root, uint64_t secret,
                                  uint32_t kind, uint64_t tag, char *err) {
  int64_t deadline = netNowMs() + bs->timeout_ms;
  char rs[64];
  netAddrStr(root, rs, sizeof(rs));
  TD_CHECK(netConnectRetry(root, deadline, &bs->aborted, &bs->root_fd, err));
  struct sockaddr_storage ss;
  socklen_t sl = sizeof(ss);
  tdNetAddr local;
  getsockname(bs->root_fd, (struct sockaddr *)&ss, &sl);
  netFromSockaddr((struct sockaddr *)&ss, &local);
  TD_CHECK(openOwnListener(bs, &local, err));
  tdHello h;
  memset(&h, 0, sizeof(h));
  h.magic = TD_BOOT_MAGIC;
  h.secret = secret;
  h.version = gVersion;
  h.kind = kind;
  h.tag = tag;
  h.rank = bs->rank;
  h.nranks = bs->nranks;
  h.addr = bs->addrs[bs->rank];
  TD_CHECK(netSendAll(bs->root_fd, &h, sizeof(h), deadline, &bs->aborted, rs, err));
  tdReply rep;
  uint64_t nonce = 0;
  char e[TD_ERRLEN];
  TD_CHECK(netRecvAll(bs->root_fd, &rep, sizeof(rep), deadline, &bs->aborted, rs, err));
  tpudistResult_t r = bootstrapReplyCheck(&rep, sizeof(rep), bs->nranks, &nonce, e);
  if (r != tpudistSuccess) return tdErr(err, r, "%s (from %s)", e, rs);
  bs->hash = mix64(bs->hash ^ nonce);
  tdNetAddr mine = bs->addrs[bs->rank];
  TD_CHECK(netRecvAll(bs->root_fd, bs->addrs, sizeof(tdNetAddr) * (size_t)bs->nranks, deadline,
                      &bs->aborted, rs, err));
  bs->addrs[bs->rank] = mine;
  for (int q = 0; q < bs->nranks; q++)
    if (bootstrapAddrCheck(&bs->addrs[q], sizeof(tdNetAddr), e) != tpudistSuccess)
      return tdErr(err, tpudistRemoteError, "bootstrap: %s sent a bad address for rank %d: %s", rs,
                   q, e);
  return tpudistSuccess;
}

static tpudistResult_t rootListener(const tdIdBody *b, int *lfd, char *err) {
  *lfd = takePendingListener(b->secret);
  if (*lfd >= 0) return tpudistSuccess;
  if (!(b->flags & TD_ID_FIXED))
    return tdErr(err, tpudistInvalidUsage,
                 "bootstrap: rank 0 must run in the process that created the unique id");
  tdNetAddr bound;
  if (netListen(&b->root, lfd, &bound, err) == tpudistSuccess) return tpudistSuccess;
  tdNetAddr any = b->root; /* the name may not be a local address (NAT): listen on all */
  memset(any.addr, 0, sizeof(any.addr));
  return netListen(&any, lfd, &bound, err);
}

tpudistResult_t bootstrapInit(const tpudistUniqueId *id, int rank, int nranks, int timeout_ms,
                              tdBootstrap **out, char *err) {
  tdIdBody b;
  TD_CHECK(bootstrapIdCheck(id, err));
  memcpy(&b, id->internal, sizeof(b));
  /* A different library version is reported by rank 0 from the hello, naming both versions. */
  if (nranks < 1 || rank < 0 || rank >= nranks)
    return tdErr(err, tpudistInvalidArgument, "bootstrap: rank %d out of range for nranks %d", rank,
                 nranks);
  tdBootstrap *bs = bsAlloc(rank, nranks, timeout_ms);
  if (!bs) return tdErr(err, tpudistNoMemory, "bootstrap: out of memory");
  bs->secret = b.secret;
  bs->hash = hashBytes(b.secret, &b.root, sizeof(b.root));
  tpudistResult_t res;
  if (rank == 0) {
    int lfd = -1;
    TD_CHECK_GOTO(rootListener(&b, &lfd, err), res, fail);
    res = openOwnListener(bs, &b.root, err);
    if (res != tpudistSuccess) { /* the id's name is not a local address: use the interface */
      tdNetAddr local;
      res = netLocalAddr(configGet()->socket_ifname, &local, err);
      if (res == tpudistSuccess) res = openOwnListener(bs, &local, err);
    }
    if (res == tpudistSuccess) res = rootRendezvous(bs, lfd, NULL, b.secret, TD_HELLO_INIT, 0, err);
    close(lfd);
    if (res != tpudistSuccess) goto fail;
  } else {
    TD_CHECK_GOTO(clientJoin(bs, &b.root, b.secret, TD_HELLO_INIT, 0, err), res, fail);
  }
  TD_INFO(TD_SUBSYS_BOOT, "bootstrap: rank %d of %d joined (hash %016llx)", rank, nranks,
          (unsigned long long)bs->hash);
  *out = bs;
  return tpudistSuccess;
fail:
  bootstrapFree(bs);
  return res;
}

tpudistResult_t bootstrapInitStore(const tpudistStore_t *store, const char *prefix, int rank,
                                   int nranks, int timeout_ms, tdBootstrap **out, char *err) {
  char key[512];
  tpudistUniqueId id;
  if (!store || !store->set || !store->get || !prefix)
    return tdErr(err, tpudistInvalidArgument, "bootstrap: incomplete store");
  snprintf(key, sizeof(key), "%s/addr/0", prefix);
  if (rank == 0) {
    TD_CHECK(bootstrapGetUniqueId(&id, NULL, err));
    if (store->set(store->ctx, key, &id, sizeof(id)) != 0) {
      tdIdBody b;
      memcpy(&b, id.internal, sizeof(b));
      int fd = takePendingListener(b.secret);
      if (fd >= 0) close(fd);
      return tdErr(err, tpudistRemoteError, "bootstrap: store set('%s') failed", key);
    }
  } else {
    void *val = NULL;
    size_t len = 0;
    if (store->get(store->ctx, key, &val, &len, timeout_ms) != 0 || !val)
      return tdErr(err, tpudistTimeout, "bootstrap: store get('%s') failed or timed out", key);
    if (len != sizeof(id)) {
      free(val);
      return tdErr(err, tpudistInvalidUsage, "bootstrap: store key '%s' holds %zu bytes, not %zu",
                   key, len, sizeof(id));
    }
    memcpy(&id, val, sizeof(id));
    free(val);
  }
  return bootstrapInit(&id, rank, nranks, timeout_ms, out, err);
}

tpudistResult_t bootstrapAllGather(tdBootstrap *bs, void *data, size_t len, char *err) {
  int64_t deadline = netNowMs() + bs->timeout_ms;
  char *d = data;
  char what[32];
  tdCollHdr h = {1, (uint32_t)bs->rank, len};
  if (bs->nranks == 1) return tpudistSuccess;
  if (bs->rank != 0) {
    tdCollHdr r;
    TD_CHECK(netSendAll(bs->root_fd, &h, sizeof(h), deadline, &bs->aborted, "rank 0", err));
    TD_CHECK(netSendAll(bs->root_fd, d + len * (size_t)bs->rank, len, deadline, &bs->aborted,
                        "rank 0", err));
    TD_CHECK(netRecvAll(bs->root_fd, &r, sizeof(r), deadline, &bs->aborted, "rank 0", err));
    if (r.op != 1 || r.len != len * (size_t)bs->nranks)
      return tdErr(err, tpudistInvalidUsage,
                   "bootstrap allgather: rank 0 sent %llu bytes, expected %zu (mismatched calls)",
                   (unsigned long long)r.len, len * (size_t)bs->nranks);
    return netRecvAll(bs->root_fd, d, len * (size_t)bs->nranks, deadline, &bs->aborted, "rank 0",
                      err);
  }
  for (int r = 1; r < bs->nranks; r++) {
    tdCollHdr in;
    snprintf(what, sizeof(what), "rank %d", r);
    TD_CHECK(netRecvAll(bs->peer_fds[r], &in, sizeof(in), deadline, &bs->aborted, what, err));
    if (in.op != 1 || in.rank != (uint32_t)r || in.len != len)
      return tdErr(err, tpudistInvalidUsage,
                   "bootstrap allgather: rank %d contributes %llu bytes, rank 0 %zu "
                   "(mismatched calls)",
                   r, (unsigned long long)in.len, len);
    TD_CHECK(
        netRecvAll(bs->peer_fds[r], d + len * (size_t)r, len, deadline, &bs->aborted, what, err));
  }
  h.len = len * (size_t)bs->nranks;
  for (int r = 1; r < bs->nranks; r++) {
    snprintf(what, sizeof(what), "rank %d", r);
    TD_CHECK(netSendAll(bs->peer_fds[r], &h, sizeof(h), deadline, &bs->aborted, what, err));
    TD_CHECK(netSendAll(bs->peer_fds[r], d, h.len, deadline, &bs->aborted, what, err));
  }
  return tpudistSuccess;
}

tpudistResult_t bootstrapBarrier(tdBootstrap *bs, char *err) {
  char *b = calloc((size_t)bs->nranks, 1);
  if (!b) return tdErr(err, tpudistNoMemory, "bootstrap: out of memory");
  tpudistResult_t res = bootstrapAllGather(bs, b, 1, err);
  free(b);
  return res;
}

tpudistResult_t bootstrapSplit(tdBootstrap *parent, const int *members, int n, int newrank,
                               uint64_t tag, tdBootstrap **out, char *err) {
  if (n < 1 || newrank < 0 || newrank >= n || members[newrank] != parent->rank)
    return tdErr(err, tpudistInvalidArgument,
                 "bootstrap split: rank %d is not member %d of the %d members", parent->rank,
                 newrank, n);
  for (int i = 0; i < n; i++)
    if (members[i] < 0 || members[i] >= parent->nranks)
      return tdErr(err, tpudistInvalidArgument, "bootstrap split: member %d out of range",
                   members[i]);
  tdBootstrap *bs = bsAlloc(newrank, n, parent->timeout_ms);
  if (!bs) return tdErr(err, tpudistNoMemory, "bootstrap: out of memory");
  bs->secret = mix64(parent->secret ^ mix64(tag + 0x51u));
  bs->hash = mix64(parent->hash ^ mix64(tag + 0x3bu));
  tpudistResult_t res;
  if (newrank == 0) {
    res = openOwnListener(bs, &parent->addrs[parent->rank], err);
    if (res == tpudistSuccess)
      res = rootRendezvous(bs, parent->listen_fd, parent, parent->secret, TD_HELLO_SPLIT, tag, err);
  } else {
    res = clientJoin(bs, &parent->addrs[members[0]], parent->secret, TD_HELLO_SPLIT, tag, err);
  }
  if (res != tpudistSuccess) {
    bootstrapFree(bs);
    return res;
  }
  *out = bs;
  return tpudistSuccess;
}

int bootstrapRank(const tdBootstrap *bs) {
  return bs->rank;
}
int bootstrapNranks(const tdBootstrap *bs) {
  return bs->nranks;
}
uint64_t bootstrapCommHash(const tdBootstrap *bs) {
  return bs->hash;
}
uint64_t bootstrapSecret(const tdBootstrap *bs) {
  return bs->secret;
}

static size_t readSmallFile(const char *path, char *buf, size_t size) {
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  size_t n = fread(buf, 1, size - 1, f);
  fclose(f);
  buf[n] = 0;
  return n;
}

uint64_t bootstrapHostHash(const char *hostid_override) {
  char buf[512];
  uint64_t h;
  if (hostid_override && *hostid_override)
    return hashBytes(0x4057, hostid_override, strlen(hostid_override));
  if (gethostname(buf, sizeof(buf)) != 0) buf[0] = 0;
  buf[sizeof(buf) - 1] = 0;
  h = hashBytes(0x4057, buf, strlen(buf));
  size_t n = readSmallFile("/proc/sys/kernel/random/boot_id", buf, sizeof(buf));
  h = hashBytes(h, buf, n);
  ssize_t l = readlink("/proc/self/ns/net", buf, sizeof(buf) - 1);
  if (l > 0) h = hashBytes(h, buf, (size_t)l);
  return h;
}
