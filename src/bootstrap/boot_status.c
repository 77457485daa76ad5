/*
 * boot_status.c - the wire protocol of health queries (tpudist-info --status): one request and one
 * answer over a TCP connection, both sides proving the job's key (auth.h), as the rendezvous does:
 *   C -> S  tdStatusHello {magic, version, kind, nonce_c}
 *   S -> C  tdStatusChallenge {magic, nonce_s}
 *   C -> S  proof_c = HMAC(key, "tpu_dist/status/v1/client" | hello | nonce_s)
 *   S -> C  tdStatusReply {magic, status, len, proof_s}, then len bytes of answer, where
 *           proof_s = HMAC(key, "tpu_dist/status/v1/server" | hello | nonce_s | status | len |
 *           answer)
 * The server computes an answer only for a client that proved the key (anyone else is dropped
 * without a word), and the client trusts an answer only with the server's proof. Every read and
 * write is bounded by the caller's deadline; an answer is at most TD_STATUS_MAX bytes.
 */
#include "boot_status.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "boot_priv.h"

#define TD_STATUS_MAGIC 0x31746174736474ull /* "tdstat1" */
#define TD_STATUS_LABEL_C "tpu_dist/status/v1/client"
#define TD_STATUS_LABEL_S "tpu_dist/status/v1/server"

typedef struct {
  uint64_t magic;
  uint32_t version, kind;
  uint8_t nonce[TD_NONCE_BYTES];
} tdStatusHello;

typedef struct {
  uint64_t magic;
  uint8_t nonce[TD_NONCE_BYTES];
} tdStatusChallenge;

typedef struct {
  uint64_t magic;
  int32_t status;
  uint32_t len;
  uint8_t mac[TD_MAC_BYTES];
} tdStatusReply;

/* What both proofs cover. */
typedef struct {
  tdStatusHello hello;
  uint8_t nonce_s[TD_NONCE_BYTES];
} tdStatusTranscript;

static void replyMac(const tdKey *key, const tdStatusTranscript *tr, tdStatusReply *rep,
                     const void *body, uint8_t out[TD_MAC_BYTES]) {
  uint8_t inner[TD_MAC_BYTES];
  struct {
    tdStatusTranscript tr;
    int32_t status;
    uint32_t len;
  } head = {*tr, rep->status, rep->len};
  authMac(key, TD_STATUS_LABEL_S, body, rep->len, NULL, 0, inner);
  authMac(key, TD_STATUS_LABEL_S, &head, sizeof(head), inner, sizeof(inner), out);
}

tpudistResult_t bootstrapStatusServe(int fd, const tdKey *key, int step_ms, volatile int *abort,
                                     tdStatusAnswer answer, void *ctx, char *err) {
  int64_t deadline_ms = netNowMs() + step_ms;
  tdStatusTranscript tr;
  tdStatusChallenge ch = {TD_STATUS_MAGIC, {0}};
  uint8_t proof[TD_MAC_BYTES], want[TD_MAC_BYTES];
  memset(&tr, 0, sizeof(tr));
  TD_CHECK(netRecvAll(fd, &tr.hello, sizeof(tr.hello), deadline_ms, abort, "status client", err));
  if (tr.hello.magic != TD_STATUS_MAGIC)
    return tdErr(err, tpudistRemoteError, "status: not a health query");
  TD_CHECK(authRandom(ch.nonce, sizeof(ch.nonce), err));
  memcpy(tr.nonce_s, ch.nonce, sizeof(ch.nonce));
  TD_CHECK(netSendAll(fd, &ch, sizeof(ch), deadline_ms, abort, "status client", err));
  TD_CHECK(netRecvAll(fd, proof, sizeof(proof), deadline_ms, abort, "status client", err));
  authMac(key, TD_STATUS_LABEL_C, &tr, sizeof(tr), NULL, 0, want);
  if (!authEqual(want, proof, sizeof(want)))
    return tdErr(err, tpudistRemoteError, "status: a client without the job's secret");
  char *body = NULL;
  size_t len = 0;
  tdStatusReply rep = {TD_STATUS_MAGIC, tpudistSuccess, 0, {0}};
  if (tr.hello.version != bootVersion())
    rep.status = tpudistInvalidUsage;
  else
    rep.status = answer(ctx, tr.hello.kind, &body, &len);
  if (rep.status != tpudistSuccess || !body) len = 0;
  rep.len = (uint32_t)TD_MIN(len, (size_t)TD_STATUS_MAX);
  replyMac(key, &tr, &rep, body, rep.mac);
  deadline_ms = netNowMs() + step_ms; /* the answer may have taken a while */
  tpudistResult_t r = netSendAll(fd, &rep, sizeof(rep), deadline_ms, abort, "status client", err);
  if (r == tpudistSuccess && rep.len)
    r = netSendAll(fd, body, rep.len, deadline_ms, abort, "status client", err);
  free(body);
  return r;
}

static tpudistResult_t queryOn(int fd, const tdKey *key, uint32_t kind, int64_t deadline_ms,
                               volatile int *abort, const char *what, char **body, size_t *len,
                               char *err) {
  tdStatusTranscript tr;
  tdStatusChallenge ch;
  tdStatusReply rep;
  uint8_t proof[TD_MAC_BYTES], want[TD_MAC_BYTES];
  memset(&tr, 0, sizeof(tr));
  tr.hello = (tdStatusHello){TD_STATUS_MAGIC, bootVersion(), kind, {0}};
  TD_CHECK(authRandom(tr.hello.nonce, sizeof(tr.hello.nonce), err));
  TD_CHECK(netSendAll(fd, &tr.hello, sizeof(tr.hello), deadline_ms, abort, what, err));
  TD_CHECK(netRecvAll(fd, &ch, sizeof(ch), deadline_ms, abort, what, err));
  if (ch.magic != TD_STATUS_MAGIC)
    return tdErr(err, tpudistRemoteError, "status: %s does not answer health queries", what);
  memcpy(tr.nonce_s, ch.nonce, sizeof(ch.nonce));
  authMac(key, TD_STATUS_LABEL_C, &tr, sizeof(tr), NULL, 0, proof);
  TD_CHECK(netSendAll(fd, proof, sizeof(proof), deadline_ms, abort, what, err));
  TD_CHECK(netRecvAll(fd, &rep, sizeof(rep), deadline_ms, abort, what, err));
  if (rep.magic != TD_STATUS_MAGIC || rep.len > TD_STATUS_MAX)
    return tdErr(err, tpudistRemoteError, "status: a malformed answer from %s", what);
  char *b = malloc((size_t)rep.len + 1);
  if (!b) return tdErr(err, tpudistNoMemory, "status: out of memory");
  tpudistResult_t r = netRecvAll(fd, b, rep.len, deadline_ms, abort, what, err);
  b[rep.len] = 0;
  replyMac(key, &tr, &rep, b, want);
  if (r == tpudistSuccess && !authEqual(want, rep.mac, sizeof(want)))
    r = tdErr(err, tpudistRemoteError,
              "status: %s did not prove it knows the job's secret (wrong secret?)", what);
  else if (r == tpudistSuccess && rep.status != tpudistSuccess)
    r = tdErr(err, tpudistRemoteError, "status: %s refused the query (%s)", what,
              rep.status > 0 && rep.status < tpudistNumResults
                  ? tpudistGetErrorString((tpudistResult_t)rep.status)
                  : "unknown error");
  if (r != tpudistSuccess) {
    free(b);
    return r;
  }
  *body = b;
  *len = rep.len;
  return tpudistSuccess;
}

tpudistResult_t bootstrapStatusQuery(const tdNetAddr *addr, const tdKey *key, uint32_t kind,
                                     int64_t deadline_ms, volatile int *abort, char **body,
                                     size_t *len, char *err) {
  char what[64];
  int fd = -1;
  netAddrStr(addr, what, sizeof(what));
  TD_CHECK(netConnectRetry(addr, deadline_ms, abort, &fd, err));
  tpudistResult_t r = queryOn(fd, key, kind, deadline_ms, abort, what, body, len, err);
  close(fd);
  return r;
}

tpudistResult_t bootstrapJobKey(const char *comm_id, tdNetAddr *addr, tdKey *key, char *err) {
  tpudistUniqueId id;
  tdIdBody b;
  if (!comm_id || !*comm_id)
    return tdErr(err, tpudistInvalidArgument, "status: no job address (host:port) given");
  TD_CHECK(bootstrapGetUniqueId(&id, comm_id, err));
  memcpy(&b, id.internal, sizeof(b));
  memcpy(key->b, b.secret, sizeof(key->b));
  *addr = b.root;
  return tpudistSuccess;
}

tpudistResult_t bootstrapStatusListen(const tdBootstrap *bs, int *fd, tdNetAddr *bound, char *err) {
  tdNetAddr a = bs->addrs[bs->rank];
  a.port = 0;
  return netListen(&a, fd, bound, err);
}
