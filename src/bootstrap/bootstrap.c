/*
 * bootstrap.c - the out-of-band channel (see bootstrap.h): unique ids, the joining side of a
 * rendezvous, allgather, barrier and split. The root's side is boot_admit.c; the messages and the
 * handshake are in boot_priv.h, their checks in boot_wire.c, the cryptography in auth.c.
 *
 * Unique id (128 bytes): {magic, version, flags, 256-bit secret, root address}.
 * bootstrapGetUniqueId opens an ephemeral listener (kept in a process table until rank 0's
 * bootstrapInit takes it) and draws the secret with getrandom(). With comm_id "host:port"
 * (TPU_DIST_COMM_ID) nothing is opened: every rank builds the same id, rank 0 listens on that
 * address in bootstrapInit, and the key is derived (HKDF-SHA256) from TPU_DIST_COMM_SECRET or the
 * contents of TPU_DIST_COMM_SECRET_FILE (read once; refused when group or others may read it) and
 * the address. Without either, the key is derived from the address alone, which anyone can compute:
 * on an address other than loopback one warning says so.
 *
 * Rendezvous (star through rank 0): every rank opens its own ephemeral listener, connects to the
 * root (retry with backoff until the timeout) and runs the handshake: the root admits only ranks
 * that prove knowledge of the key (others are answered "rejected" and dropped while the real ranks
 * continue), and fails the whole rendezvous, telling everyone why, on a version mismatch ("peer X
 * runs tpu_dist version A, this rank B"), a duplicate or out-of-range rank or a different nranks.
 * It then sends every rank the table of listen addresses. A rank whose connection the root dropped
 * before answering (a flood filled its handshake table) connects again. The connections to the
 * root stay open: AllGather and Barrier go through the root (gather, then broadcast).
 *
 * Reconfiguration (bootstrapInitReconf): the same rendezvous at member 0's reconfiguration
 * listener, under a key derived from its endpoint's secret and the uuid; member 0 drops, before
 * the challenge, hellos of another uuid (members of a later reconfiguration that came early), and
 * they connect again.
 *
 * Split: the members connect to their new rank 0's own listener (address from the parent table)
 * and prove the parent's key in a hello of kind SPLIT carrying the caller's tag; a rank that is new
 * rank 0 of one split may receive hellos for a later split first, which it keeps (stash) for that
 * split. The child's key is derived from the parent's and the tag. No global rendezvous is needed,
 * and the child owns new listeners so it can outlive its parent. Every read is bounded in length
 * and time (the communicator timeout) and every wait polls an abort flag (bootstrapAbort).
 */
#include "bootstrap.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "boot_priv.h"
#include "rt_config.h"
#include "rt_log.h"

#define TD_MAX_PENDING_IDS 16
#define TD_SECRET_FILE_MAX 4096

typedef struct {
  uint32_t op, rank;
  uint64_t len;
} tdCollHdr;

_Static_assert(sizeof(tdIdBody) <= sizeof(tpudistUniqueId), "unique id too small");
_Static_assert(offsetof(tdIdBody, secret) == 16, "the secret sits at byte 16 of the id");

/* Listeners opened by bootstrapGetUniqueId, waiting for rank 0's bootstrapInit. */
static struct {
  tdKey key;
  int fd;
} gPending[TD_MAX_PENDING_IDS];
static int gNpending;
static pthread_mutex_t gPendingLock = PTHREAD_MUTEX_INITIALIZER;

static uint64_t mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/* Host identity only (not a secret): FNV-1a then a mixer. */
static uint64_t hashBytes(uint64_t h, const void *p, size_t n) {
  const unsigned char *c = p;
  h ^= 0xcbf29ce484222325ull;
  for (size_t i = 0; i < n; i++) h = (h ^ c[i]) * 0x100000001b3ull;
  return mix64(h);
}

/* TPU_DIST_COMM_SECRET_FILE, read once per process. */
static struct {
  pthread_once_t once;
  tpudistResult_t res;
  char err[TD_ERRLEN];
  size_t len;
  char data[TD_SECRET_FILE_MAX];
} gSecretFile = {PTHREAD_ONCE_INIT, tpudistSuccess, "", 0, ""};

static tpudistResult_t readSecretFile(const char *path, char *buf, size_t *len, char *err) {
  struct stat st;
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
  if (fd < 0)
    return tdErr(err, tpudistInvalidArgument, "TPU_DIST_COMM_SECRET_FILE %s: %s", path,
                 strerror(errno));
  tpudistResult_t res = tpudistInvalidArgument;
  ssize_t n = -1;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
    tdErr(err, res, "TPU_DIST_COMM_SECRET_FILE %s is not a regular file", path);
  else if (st.st_mode & (S_IRWXG | S_IRWXO))
    tdErr(err, res,
          "TPU_DIST_COMM_SECRET_FILE %s may be read or written by group or others (mode %03o): "
          "chmod 600 it",
          path, (unsigned)(st.st_mode & 0777));
  else if (st.st_uid != geteuid())
    tdErr(err, res, "TPU_DIST_COMM_SECRET_FILE %s belongs to another user (uid %u)", path,
          (unsigned)st.st_uid);
  else if ((n = read(fd, buf, TD_SECRET_FILE_MAX)) < 0)
    tdErr(err, tpudistSystemError, "TPU_DIST_COMM_SECRET_FILE %s: %s", path, strerror(errno));
  while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' ')) n--;
  if (n == 0)
    tdErr(err, res, "TPU_DIST_COMM_SECRET_FILE %s is empty", path);
  else if (n == TD_SECRET_FILE_MAX)
    tdErr(err, res, "TPU_DIST_COMM_SECRET_FILE %s is longer than %d bytes", path,
          TD_SECRET_FILE_MAX - 1);
  else if (n > 0)
    res = tpudistSuccess;
  close(fd);
  *len = n > 0 ? (size_t)n : 0;
  return res;
}

static void loadSecretFile(void) {
  gSecretFile.res = readSecretFile(configGet()->comm_secret_file, gSecretFile.data,
                                   &gSecretFile.len, gSecretFile.err);
}

static int isLoopback(const tdNetAddr *a) {
  static const uint8_t v6lo[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
  if (a->family == AF_INET) return a->addr[0] == 127;
  return memcmp(a->addr, v6lo, 16) == 0;
}

/* The key of a TPU_DIST_COMM_ID job: HKDF of the configured secret, bound to the address. */
static tpudistResult_t commIdKey(const char *comm_id, const tdNetAddr *root, tdKey *key,
                                 char *err) {
  static int warned;
  const tdConfig *cfg = configGet();
  const char *ikm = cfg->comm_secret;
  size_t n = ikm ? strlen(ikm) : 0;
  char label[320];
  if (cfg->comm_secret && cfg->comm_secret_file)
    return tdErr(err, tpudistInvalidArgument,
                 "set TPU_DIST_COMM_SECRET or TPU_DIST_COMM_SECRET_FILE, not both");
  if (cfg->comm_secret_file) {
    pthread_once(&gSecretFile.once, loadSecretFile);
    if (gSecretFile.res != tpudistSuccess)
      return tdErr(err, gSecretFile.res, "%s", gSecretFile.err);
    ikm = gSecretFile.data;
    n = gSecretFile.len;
  }
  if (!ikm) {
    ikm = comm_id; /* public: anyone can compute it */
    n = strlen(comm_id);
    if (!isLoopback(root) && !__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED))
      logPrint(TD_LOG_WARN, TD_SUBSYS_BOOT, __FILE__, __LINE__,
               "TPU_DIST_COMM_ID=%s without TPU_DIST_COMM_SECRET or TPU_DIST_COMM_SECRET_FILE: "
               "anyone who can reach %s can join this job",
               comm_id, comm_id);
  }
  snprintf(label, sizeof(label), "tpu_dist/comm-id/v1 %s", comm_id);
  return authDeriveKey(ikm, n, label, key, err);
}

tpudistResult_t bootstrapGetUniqueId(tpudistUniqueId *id, const char *comm_id, char *err) {
  tdIdBody b;
  memset(&b, 0, sizeof(b));
  b.magic = TD_BOOT_MAGIC;
  b.version = TPUDIST_VERSION_CODE;
  if (comm_id && *comm_id) {
    tdKey key;
    TD_CHECK(netParseHostPort(comm_id, &b.root, err));
    TD_CHECK(commIdKey(comm_id, &b.root, &key, err));
    b.flags = TD_ID_FIXED;
    memcpy(b.secret, key.b, sizeof(b.secret));
  } else {
    tdNetAddr local;
    int fd;
    TD_CHECK(authRandom(b.secret, sizeof(b.secret), err));
    TD_CHECK(netLocalAddr(configGet()->socket_ifname, &local, err));
    TD_CHECK(netListen(&local, &fd, &b.root, err));
    pthread_mutex_lock(&gPendingLock);
    if (gNpending == TD_MAX_PENDING_IDS) { /* drop the oldest unclaimed id */
      close(gPending[0].fd);
      memmove(gPending, gPending + 1, sizeof(gPending[0]) * (TD_MAX_PENDING_IDS - 1));
      gNpending--;
    }
    memcpy(gPending[gNpending].key.b, b.secret, sizeof(b.secret));
    gPending[gNpending].fd = fd;
    gNpending++;
    pthread_mutex_unlock(&gPendingLock);
  }
  memset(id, 0, sizeof(*id));
  memcpy(id->internal, &b, sizeof(b));
  return tpudistSuccess;
}

static int takePendingListener(const uint8_t *secret) {
  int fd = -1;
  pthread_mutex_lock(&gPendingLock);
  for (int i = 0; i < gNpending; i++) {
    if (!authEqual(gPending[i].key.b, secret, TD_KEY_BYTES)) continue;
    fd = gPending[i].fd;
    gPending[i] = gPending[--gNpending];
    break;
  }
  pthread_mutex_unlock(&gPendingLock);
  return fd;
}

static tdBootstrap *bsAlloc(int rank, int nranks, int timeout_ms, volatile int *abort) {
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
  bs->listen_fd = bs->root_fd = bs->id_fd = bs->agree_fd = -1;
  bs->abortp = abort ? abort : &bs->aborted;
  return bs;
}

void bootstrapFree(tdBootstrap *bs) {
  if (!bs) return;
  if (bs->listen_fd >= 0) close(bs->listen_fd);
  if (bs->agree_fd >= 0) close(bs->agree_fd);
  if (bs->root_fd >= 0) close(bs->root_fd);
  if (bs->id_fd >= 0) close(bs->id_fd);
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
  if (!bs) return;
  bs->aborted = 1;
  *bs->abortp = 1;
}

int bootstrapJobId(const tdBootstrap *bs) {
  return bs->job_id;
}

int bootstrapTakeIdListener(tdBootstrap *bs) {
  int fd = bs->id_fd;
  bs->id_fd = -1;
  return fd;
}

tpudistResult_t bootListenOn(const tdNetAddr *ip, int *fd, tdNetAddr *bound, char *err) {
  tdNetAddr a = *ip;
  a.port = 0;
  return netListen(&a, fd, bound, err);
}

/* Opens this rank's own listener on the IP of ip (port 0). */
static tpudistResult_t openOwnListener(tdBootstrap *bs, const tdNetAddr *ip, char *err) {
  return bootListenOn(ip, &bs->listen_fd, &bs->addrs[bs->rank], err);
}

/* One handshake with the root on bs->root_fd; the reply in *rep on success. */
static tpudistResult_t clientHandshake(tdBootstrap *bs, const tdKey *key, uint32_t kind,
                                       uint64_t tag, int64_t deadline, const char *rs,
                                       uint64_t *nonce, char *err) {
  tdBootTranscript tr;
  tdChallenge ch;
  tdReply rep;
  uint8_t proof[TD_MAC_BYTES];
  char e[TD_ERRLEN];
  memset(&tr, 0, sizeof(tr));
  tr.hello.magic = TD_BOOT_MAGIC;
  tr.hello.version = bootVersion();
  tr.hello.kind = kind;
  tr.hello.tag = tag;
  tr.hello.rank = bs->rank;
  tr.hello.nranks = bs->nranks;
  tr.hello.addr = bs->addrs[bs->rank];
  TD_CHECK(authRandom(tr.hello.nonce, sizeof(tr.hello.nonce), err));
  TD_CHECK(netSendAll(bs->root_fd, &tr.hello, sizeof(tr.hello), deadline, bs->abortp, rs, err));
  TD_CHECK(netRecvAll(bs->root_fd, &ch, sizeof(ch), deadline, bs->abortp, rs, err));
  tpudistResult_t r = bootstrapChallengeCheck(&ch, sizeof(ch), tr.nonce_r, e);
  if (r != tpudistSuccess) return tdErr(err, r, "%s (from %s)", e, rs);
  authMac(key, TD_BOOT_LABEL_RANK, &tr, sizeof(tr), NULL, 0, proof);
  TD_CHECK(netSendAll(bs->root_fd, proof, sizeof(proof), deadline, bs->abortp, rs, err));
  TD_CHECK(netRecvAll(bs->root_fd, &rep, sizeof(rep), deadline, bs->abortp, rs, err));
  r = bootstrapReplyCheck(&rep, sizeof(rep), bs->nranks, key, &tr, sizeof(tr), nonce, e);
  if (r != tpudistSuccess) return tdErr(err, r, "%s (from %s)", e, rs);
  return tpudistSuccess;
}

/* Non-root: connects to the root, opens its own listener on the route's local IP, runs the
 * handshake (again when the root dropped the connection before answering) and reads the table.
 * root_live: the root's listener is open for as long as the root can answer (an agreement
 * listener), so a refusal fails the join at once instead of being retried until the timeout. */
static tpudistResult_t clientJoin(tdBootstrap *bs, const tdNetAddr *root, const tdKey *key,
                                  uint32_t kind, uint64_t tag, int root_live, char *err) {
  int64_t deadline = netNowMs() + bs->timeout_ms;
  char rs[64], e[TD_ERRLEN];
  uint64_t nonce = 0;
  netAddrStr(root, rs, sizeof(rs));
  for (int attempt = 0;; attempt++) {
    if (root_live)
      TD_CHECK(netConnectLive(root, deadline, bs->abortp, &bs->root_fd, err));
    else
      TD_CHECK(netConnectRetry(root, deadline, bs->abortp, &bs->root_fd, err));
    if (bs->listen_fd < 0) {
      struct sockaddr_storage ss;
      socklen_t sl = sizeof(ss);
      tdNetAddr local;
      getsockname(bs->root_fd, (struct sockaddr *)&ss, &sl);
      netFromSockaddr((struct sockaddr *)&ss, &local);
      TD_CHECK(openOwnListener(bs, &local, err));
    }
    tpudistResult_t r = clientHandshake(bs, key, kind, tag, deadline, rs, &nonce, e);
    if (r == tpudistSuccess) break;
    close(bs->root_fd);
    bs->root_fd = -1;
    /* dropped before an answer (the root's handshake table was full): try again */
    int dropped = strstr(e, "closed the connection") || strstr(e, strerror(ECONNRESET)) ||
                  strstr(e, strerror(EPIPE));
    if (r != tpudistRemoteError || !dropped || netNowMs() >= deadline)
      return tdErr(err, r, "%s", e);
    TD_INFO(TD_SUBSYS_BOOT, "bootstrap: rank %d connects to %s again (attempt %d): %s", bs->rank,
            rs, attempt + 2, e);
    struct timespec ts = {0, (long)TD_MIN(attempt + 1, 50) * 1000000L};
    nanosleep(&ts, NULL);
  }
  bs->hash ^= nonce;
  bs->hash = authId64(&bs->key, "tpu_dist/comm-hash/v1", &bs->hash, sizeof(bs->hash));
  tdNetAddr mine = bs->addrs[bs->rank];
  TD_CHECK(netRecvAll(bs->root_fd, bs->addrs, sizeof(tdNetAddr) * (size_t)bs->nranks, deadline,
                      bs->abortp, rs, err));
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

/* Root of a rendezvous on lfd (left open): opens its own listener on the IP of root (or, when that
 * is not a local address, of the interface), then admits every rank. */
static tpudistResult_t rootAdmit(tdBootstrap *bs, int lfd, const tdNetAddr *root, uint32_t kind,
                                 uint64_t tag, char *err) {
  tpudistResult_t res = openOwnListener(bs, root, err);
  if (res != tpudistSuccess) {
    tdNetAddr local;
    res = netLocalAddr(configGet()->socket_ifname, &local, err);
    if (res == tpudistSuccess) res = openOwnListener(bs, &local, err);
  }
  if (res == tpudistSuccess) res = bootRootRendezvous(bs, lfd, NULL, &bs->key, kind, tag, err);
  return res;
}

tpudistResult_t bootstrapInit(const tpudistUniqueId *id, int rank, int nranks, int timeout_ms,
                              volatile int *abort, tdBootstrap **out, char *err) {
  tdIdBody b;
  TD_CHECK(bootstrapIdCheck(id, err));
  memcpy(&b, id->internal, sizeof(b));
  /* A different library version is reported by rank 0 from the hello, naming both versions. */
  if (nranks < 1 || rank < 0 || rank >= nranks)
    return tdErr(err, tpudistInvalidArgument, "bootstrap: rank %d out of range for nranks %d", rank,
                 nranks);
  tdBootstrap *bs = bsAlloc(rank, nranks, timeout_ms, abort);
  if (!bs) return tdErr(err, tpudistNoMemory, "bootstrap: out of memory");
  memcpy(bs->key.b, b.secret, sizeof(bs->key.b));
  bs->job_id = (b.flags & TD_ID_FIXED) != 0;
  bs->hash = authId64(&bs->key, "tpu_dist/comm-hash/v1", &b.root, sizeof(b.root));
  tpudistResult_t res;
  if (rank == 0) {
    int lfd = -1;
    TD_CHECK_GOTO(rootListener(&b, &lfd, err), res, fail);
    res = rootAdmit(bs, lfd, &b.root, TD_HELLO_INIT, 0, err);
    if (res == tpudistSuccess && (b.flags & TD_ID_FIXED))
      bs->id_fd = lfd; /* the job's address: kept for bootstrapTakeIdListener */
    else
      close(lfd);
    if (res != tpudistSuccess) goto fail;
  } else {
    TD_CHECK_GOTO(clientJoin(bs, &b.root, &bs->key, TD_HELLO_INIT, 0, 0, err), res, fail);
  }
  TD_INFO(TD_SUBSYS_BOOT, "bootstrap: rank %d of %d joined (hash %016llx)", rank, nranks,
          (unsigned long long)bs->hash);
  *out = bs;
  return tpudistSuccess;
fail:
  bootstrapFree(bs);
  return res;
}

tpudistResult_t bootstrapInitReconf(const tdReconfJoin *rj, int rank, int nranks, int timeout_ms,
                                    volatile int *abort, tdBootstrap **out, char *err) {
  char label[64];
  tpudistResult_t res;
  if (nranks < 1 || rank < 0 || rank >= nranks || (rank == 0) != (rj->lfd >= 0))
    return tdErr(err, tpudistInvalidArgument, "bootstrap: reconfiguration rank %d of %d", rank,
                 nranks);
  tdBootstrap *bs = bsAlloc(rank, nranks, timeout_ms, abort);
  if (!bs) return tdErr(err, tpudistNoMemory, "bootstrap: out of memory");
  snprintf(label, sizeof(label), "tpu_dist/reconf/v1 %llu", (unsigned long long)rj->uuid);
  TD_CHECK_GOTO(authDeriveKey(rj->secret, TD_KEY_BYTES, label, &bs->key, err), res, fail);
  bs->hash = authId64(&bs->key, "tpu_dist/comm-hash/v1", &rj->root, sizeof(rj->root));
  if (rank == 0)
    res = rootAdmit(bs, rj->lfd, &rj->root, TD_HELLO_RECONF, rj->uuid, err);
  else
    res = clientJoin(bs, &rj->root, &bs->key, TD_HELLO_RECONF, rj->uuid, 0, err);
  if (rank != 0 && (res == tpudistTimeout || res == tpudistRemoteError)) {
    char rs[64], e[TD_ERRLEN];
    snprintf(e, sizeof(e), "%s", err);
    res = tdErr(err, tpudistTimeout,
                "reconfiguration %lld: member 0 at %s did not admit this process before the "
                "timeout (is it in this reconfiguration, with the same uuid?): %s",
                (long long)rj->uuid, netAddrStr(&rj->root, rs, sizeof(rs)), e);
  }
  if (res != tpudistSuccess) goto fail;
  *out = bs;
  return tpudistSuccess;
fail:
  bootstrapFree(bs);
  return res;
}

/* store->get; with an abort flag in slices of TD_STORE_SLICE_MS (a slice that fails at once is
 * padded to its length), so that the flag is seen promptly although a callback cannot be
 * interrupted (a store that ignores the timeout argument is seen only when its get returns). */
#define TD_STORE_SLICE_MS 20
static tpudistResult_t storeGet(const tpudistStore_t *store, const char *key, int timeout_ms,
                                volatile int *abort, void **val, size_t *len, char *err) {
  int64_t deadline = netNowMs() + timeout_ms;
  for (;;) {
    int64_t t0 = netNowMs();
    int slice = abort ? (int)TD_MIN(deadline - t0, TD_STORE_SLICE_MS) : timeout_ms;
    if (slice > 0 && store->get(store->ctx, key, val, len, slice) == 0 && *val)
      return tpudistSuccess;
    if (abort && *abort)
      return tdErr(err, tpudistAborted, "bootstrap: aborted while waiting for store key '%s'", key);
    int64_t now = netNowMs();
    if (!abort || now >= deadline)
      return tdErr(err, tpudistTimeout, "bootstrap: store get('%s') failed or timed out", key);
    if (now - t0 < slice) {
      struct timespec ts = {0, (long)(slice - (now - t0)) * 1000000L};
      nanosleep(&ts, NULL);
    }
  }
}

tpudistResult_t bootstrapInitStore(const tpudistStore_t *store, const char *prefix, int rank,
                                   int nranks, int timeout_ms, volatile int *abort,
                                   tdBootstrap **out, char *err) {
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
    TD_CHECK(storeGet(store, key, timeout_ms, abort, &val, &len, err));
    if (len != sizeof(id)) {
      free(val);
      return tdErr(err, tpudistInvalidUsage, "bootstrap: store key '%s' holds %zu bytes, not %zu",
                   key, len, sizeof(id));
    }
    memcpy(&id, val, sizeof(id));
    free(val);
  }
  return bootstrapInit(&id, rank, nranks, timeout_ms, abort, out, err);
}

/* Sends what is left of hdr + data (sent[r] bytes went already) to rank r without blocking.
 * Returns 1 when all of it is sent, 0 when the socket is full, -1 on an error (err set). */
static int sendSome(tdBootstrap *bs, int r, const tdCollHdr *h, const void *data, size_t *sent,
                    char *err) {
  size_t total = sizeof(*h) + h->len;
  while (*sent < total) {
    struct iovec iov[2];
    int k = 0;
    if (*sent < sizeof(*h)) iov[k++] = (struct iovec){(char *)h + *sent, sizeof(*h) - *sent};
    size_t doff = *sent < sizeof(*h) ? 0 : *sent - sizeof(*h);
    if (h->len > doff) iov[k++] = (struct iovec){(char *)data + doff, h->len - doff};
    struct msghdr m = {.msg_iov = iov, .msg_iovlen = (size_t)k};
    ssize_t n = sendmsg(bs->peer_fds[r], &m, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      *sent += (size_t)n;
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return 0;
    tdErr(err, tpudistRemoteError, "bootstrap: send to rank %d: %s", r, strerror(errno));
    return -1;
  }
  return 1;
}

/* Root: hdr and its h->len bytes of data to every other rank, to all at once (one poll over
 * every connection): a rank slow to read holds up no other (a loop of blocking sends would wait
 * for each reader in turn, hundreds of context switches in a row on an oversubscribed host). */
static tpudistResult_t rootFanOut(tdBootstrap *bs, const tdCollHdr *h, const void *data,
                                  int64_t deadline, volatile int *ab, char *err) {
  int n = bs->nranks, left = n - 1;
  size_t *sent = calloc((size_t)n, sizeof(size_t));
  struct pollfd *pfd = calloc((size_t)n, sizeof(*pfd));
  tpudistResult_t res = tpudistSuccess;
  if (!sent || !pfd) res = tdErr(err, tpudistNoMemory, "bootstrap: out of memory");
  while (res == tpudistSuccess && left > 0) {
    int np = 0;
    for (int r = 1; r < n && res == tpudistSuccess; r++) {
      if (sent[r] == sizeof(*h) + h->len) continue;
      int st = sendSome(bs, r, h, data, &sent[r], err);
      if (st < 0) res = tpudistRemoteError;
      if (st > 0) left--;
      if (st == 0) pfd[np++] = (struct pollfd){bs->peer_fds[r], POLLOUT, 0};
    }
    if (res != tpudistSuccess || left == 0) break;
    if (*ab)
      res = tdErr(err, tpudistAborted, "bootstrap aborted while sending");
    else if (netNowMs() >= deadline)
      res = tdErr(err, tpudistTimeout, "bootstrap: timeout sending to %d ranks", left);
    else
      poll(pfd, (nfds_t)np, 50);
  }
  free(sent);
  free(pfd);
  return res;
}

/* Non-root: the root's header for op with len bytes, then the bytes into data. */
static tpudistResult_t recvFromRoot(tdBootstrap *bs, uint32_t op, void *data, size_t len,
                                    int64_t deadline, volatile int *ab, const char *what,
                                    char *err) {
  tdCollHdr r;
  TD_CHECK(netRecvAll(bs->root_fd, &r, sizeof(r), deadline, ab, "rank 0", err));
  if (r.op != op || r.len != len)
    return tdErr(err, tpudistInvalidUsage,
                 "bootstrap %s: rank 0 sent %llu bytes, expected %zu (mismatched calls)", what,
                 (unsigned long long)r.len, len);
  return netRecvAll(bs->root_fd, data, len, deadline, ab, "rank 0", err);
}

tpudistResult_t bootstrapAllGatherWatch(tdBootstrap *bs, void *data, size_t len,
                                        volatile int *abort, char *err) {
  volatile int *ab = abort ? abort : bs->abortp;
  int64_t deadline = netNowMs() + bs->timeout_ms;
  char *d = data;
  char what[32];
  tdCollHdr h = {1, (uint32_t)bs->rank, len};
  if (bs->nranks == 1) return tpudistSuccess;
  if (bs->rank != 0) {
    TD_CHECK(netSendAll(bs->root_fd, &h, sizeof(h), deadline, ab, "rank 0", err));
    TD_CHECK(netSendAll(bs->root_fd, d + len * (size_t)bs->rank, len, deadline, ab, "rank 0", err));
    return recvFromRoot(bs, 1, d, len * (size_t)bs->nranks, deadline, ab, "allgather", err);
  }
  for (int r = 1; r < bs->nranks; r++) {
    tdCollHdr in;
    snprintf(what, sizeof(what), "rank %d", r);
    TD_CHECK(netRecvAll(bs->peer_fds[r], &in, sizeof(in), deadline, ab, what, err));
    if (in.op != 1 || in.rank != (uint32_t)r || in.len != len)
      return tdErr(err, tpudistInvalidUsage,
                   "bootstrap allgather: rank %d contributes %llu bytes, rank 0 %zu "
                   "(mismatched calls)",
                   r, (unsigned long long)in.len, len);
    TD_CHECK(netRecvAll(bs->peer_fds[r], d + len * (size_t)r, len, deadline, ab, what, err));
  }
  h.len = len * (size_t)bs->nranks;
  return rootFanOut(bs, &h, d, deadline, ab, err);
}

tpudistResult_t bootstrapBroadcast(tdBootstrap *bs, void *data, size_t len, char *err) {
  int64_t deadline = netNowMs() + bs->timeout_ms;
  tdCollHdr h = {2, 0, len};
  if (bs->nranks == 1) return tpudistSuccess;
  if (bs->rank != 0) return recvFromRoot(bs, 2, data, len, deadline, bs->abortp, "broadcast", err);
  return rootFanOut(bs, &h, data, deadline, bs->abortp, err);
}

tpudistResult_t bootstrapAllGather(tdBootstrap *bs, void *data, size_t len, char *err) {
  return bootstrapAllGatherWatch(bs, data, len, NULL, err);
}

tpudistResult_t bootstrapBarrier(tdBootstrap *bs, char *err) {
  char *b = calloc((size_t)bs->nranks, 1);
  if (!b) return tdErr(err, tpudistNoMemory, "bootstrap: out of memory");
  tpudistResult_t res = bootstrapAllGather(bs, b, 1, err);
  free(b);
  return res;
}

tpudistResult_t bootstrapSplit(tdBootstrap *parent, const int *members, int n, int newrank,
                               uint64_t tag, volatile int *abort, tdBootstrap **out, char *err) {
  if (n < 1 || members[0] < 0 || members[0] >= parent->nranks)
    return tdErr(err, tpudistInvalidArgument, "bootstrap split: member out of range");
  return bootSplitOn(parent, parent->listen_fd, &parent->addrs[members[0]], members, n, newrank,
                     tag, parent->timeout_ms, abort, out, err);
}

tpudistResult_t bootSplitOn(tdBootstrap *parent, int lfd, const tdNetAddr *root, const int *members,
                            int n, int newrank, uint64_t tag, int timeout_ms, volatile int *abort,
                            tdBootstrap **out, char *err) {
  if (n < 1 || newrank < 0 || newrank >= n || members[newrank] != parent->rank)
    return tdErr(err, tpudistInvalidArgument,
                 "bootstrap split: rank %d is not member %d of the %d members", parent->rank,
                 newrank, n);
  for (int i = 0; i < n; i++)
    if (members[i] < 0 || members[i] >= parent->nranks)
      return tdErr(err, tpudistInvalidArgument, "bootstrap split: member %d out of range",
                   members[i]);
  tdBootstrap *bs = bsAlloc(newrank, n, timeout_ms, abort);
  if (!bs) return tdErr(err, tpudistNoMemory, "bootstrap: out of memory");
  authChildKey(&parent->key, "tpu_dist/split-key/v1", tag, &bs->key);
  bs->hash = authId64(&bs->key, "tpu_dist/split-hash/v1", &parent->hash, sizeof(parent->hash));
  tpudistResult_t res;
  if (newrank == 0) {
    res = openOwnListener(bs, &parent->addrs[parent->rank], err);
    if (res == tpudistSuccess)
      res = bootRootRendezvous(bs, lfd, parent, &parent->key, TD_HELLO_SPLIT, tag, err);
  } else {
    res = clientJoin(bs, root, &parent->key, TD_HELLO_SPLIT, tag, lfd == parent->agree_fd, err);
  }
  if (res != tpudistSuccess) {
    bootstrapFree(bs);
    return res;
  }
  bs->timeout_ms = parent->timeout_ms; /* the rendezvous' own bound ends here */
  *out = bs;
  return tpudistSuccess;
}

tpudistResult_t bootstrapShadow(const tdBootstrap *bs, tdBootstrap **out, char *err) {
  tdBootstrap *sh = bsAlloc(bs->rank, bs->nranks, bs->timeout_ms, NULL);
  if (!sh) return tdErr(err, tpudistNoMemory, "bootstrap: out of memory");
  sh->key = bs->key;
  sh->hash = bs->hash;
  memcpy(sh->addrs, bs->addrs, sizeof(tdNetAddr) * (size_t)bs->nranks);
  if (bs->agree_fd >= 0 && (sh->agree_fd = dup(bs->agree_fd)) < 0) {
    bootstrapFree(sh);
    return tdErr(err, tpudistSystemError, "bootstrap: dup of the agreement listener: %s",
                 strerror(errno));
  }
  *out = sh;
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
const tdKey *bootstrapKey(const tdBootstrap *bs) {
  return &bs->key;
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
