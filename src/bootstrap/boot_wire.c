/*
 * boot_wire.c - the bootstrap's messages as they cross the wire (boot_priv.h): the version this
 * process presents, the proof of a root's reply, and the checks every message a peer sends passes
 * before use (bootstrap.h; also the entry points of the fuzz targets). Both sides of a rendezvous
 * use them: the joining side (bootstrap.c) and the root (boot_admit.c).
 */
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>

#include "boot_priv.h"

/* The version this process presents (tests pretend to be another release). */
static uint32_t gVersion = TPUDIST_VERSION_CODE;

void bootstrapTestSetVersion(uint32_t version) {
  gVersion = version;
}

uint32_t bootVersion(void) {
  return gVersion;
}

void bootReplyMac(const tdKey *key, const tdBootTranscript *tr, tdReply *rep) {
  authMac(key, TD_BOOT_LABEL_ROOT, tr, sizeof(*tr), rep, offsetof(tdReply, mac), rep->mac);
}

tpudistResult_t bootstrapAddrCheck(const void *addr, size_t len, char *err) {
  tdNetAddr a;
  if (len != sizeof(a)) return tdErr(err, tpudistRemoteError, "address of %zu bytes", len);
  memcpy(&a, addr, sizeof(a));
  if ((a.family != AF_INET && a.family != AF_INET6) || a.port == 0)
    return tdErr(err, tpudistRemoteError, "not an IPv4/IPv6 listen address (family %u, port %u)",
                 a.family, a.port);
  return tpudistSuccess;
}

tdHelloVerdict bootstrapHelloCheck(const void *msg, size_t len, uint32_t version, int nranks,
                                   int *rank, uint32_t *kind, uint64_t *tag, void *addr,
                                   char *err) {
  tdHello h;
  char e[TD_ERRLEN];
  if (len != sizeof(h)) return TD_HELLO_FOREIGN;
  memcpy(&h, msg, sizeof(h));
  if (h.magic != TD_BOOT_MAGIC) return TD_HELLO_FOREIGN;
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

tpudistResult_t bootstrapChallengeCheck(const void *msg, size_t len, uint8_t *nonce, char *err) {
  tdChallenge ch;
  if (len != sizeof(ch))
    return tdErr(err, tpudistRemoteError, "bootstrap: a challenge of %zu bytes", len);
  memcpy(&ch, msg, sizeof(ch));
  if (ch.magic != TD_BOOT_MAGIC)
    return tdErr(err, tpudistRemoteError, "bootstrap: the root does not speak the protocol");
  memcpy(nonce, ch.nonce, TD_NONCE_BYTES);
  return tpudistSuccess;
}

tpudistResult_t bootstrapReplyCheck(const void *msg, size_t len, int nranks, const tdKey *key,
                                    const void *transcript, size_t tlen, uint64_t *nonce,
                                    char *err) {
  tdReply rep, want;
  tdBootTranscript tr;
  if (len != sizeof(rep))
    return tdErr(err, tpudistRemoteError, "bootstrap: a reply of %zu bytes", len);
  if (tlen != sizeof(tr)) return tdErr(err, tpudistInternalError, "bootstrap: bad transcript");
  memcpy(&rep, msg, sizeof(rep));
  memcpy(&tr, transcript, sizeof(tr));
  if (rep.magic != TD_BOOT_MAGIC)
    return tdErr(err, tpudistRemoteError, "bootstrap: the root does not speak the protocol");
  if (rep.status != tpudistSuccess) { /* a failure needs no proof: it only stops this rank */
    rep.msg[sizeof(rep.msg) - 1] = 0;
    tpudistResult_t st = rep.status > tpudistSuccess && rep.status < tpudistNumResults
                             ? (tpudistResult_t)rep.status
                             : tpudistRemoteError;
    return tdErr(err, st, "bootstrap rejected by rank 0: %s", rep.msg);
  }
  want = rep;
  bootReplyMac(key, &tr, &want);
  if (!authEqual(want.mac, rep.mac, sizeof(rep.mac)))
    return tdErr(err, tpudistRemoteError,
                 "bootstrap: rank 0 did not prove it knows the job secret (wrong secret, or "
                 "another process at its address)");
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
