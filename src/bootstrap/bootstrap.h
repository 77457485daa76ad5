/*
 * bootstrap.h - out-of-band setup channel: unique id, TCP rendezvous with a secret, external store
 * (set/get callbacks), allgather and barrier among the ranks of a communicator, and splitting it
 * for CommSplit without a new global rendezvous. Also the host identity.
 */
#ifndef TD_BOOTSTRAP_H_
#define TD_BOOTSTRAP_H_

#include "auth.h"
#include "net.h"
#include "rt_net.h"
#include "td_base.h"

typedef struct tdBootstrap tdBootstrap;

/* Fills id with this process's listening address and a random 256-bit secret (getrandom), or,
 * with comm_id "host:port" (callers pass configGet()->comm_id when the user set TPU_DIST_COMM_ID),
 * with that address and a key every rank derives alike from TPU_DIST_COMM_SECRET or
 * TPU_DIST_COMM_SECRET_FILE (errors: both set, an unreadable file, a file group or others may
 * read). An id without comm_id must be used by rank 0 in this process (or a fork of it). */
tpudistResult_t bootstrapGetUniqueId(tpudistUniqueId *id, const char *comm_id, char *err);
/* Rendezvous of nranks ranks through the id's root (the root is rank 0). Every rank proves it
 * knows the secret (challenge-response, boot_priv.h), and the root proves it to every rank; the
 * root checks the library version of every peer; bounded by timeout_ms. abort (may be NULL): a flag
 * another thread may set to stop the rendezvous (seen within 20 ms); the channel keeps polling it
 * in its later waits, and bootstrapAbort sets it. */
tpudistResult_t bootstrapInit(const tpudistUniqueId *id, int rank, int nranks, int timeout_ms,
                              volatile int *abort, tdBootstrap **out, char *err);
/* One reconfiguration's meeting point (tpudistCommReconfigure): member 0's listener (-1 on the
 * other members), its address and secret, and the uuid the key is bound to. */
typedef struct tdReconfJoin {
  int lfd;
  tdNetAddr root;
  uint8_t secret[TD_KEY_BYTES];
  uint64_t uuid;
} tdReconfJoin;
/* The rendezvous of one reconfiguration: rank 0 admits the others on rj->lfd (left open), the
 * others join rj->root; the key is derived (HKDF) from the secret and the uuid, so only members
 * of this uuid prove it, and rank 0 drops (unanswered: they connect again) the hellos of other
 * uuids. timeout_ms and abort as in bootstrapInit. */
tpudistResult_t bootstrapInitReconf(const tdReconfJoin *rj, int rank, int nranks, int timeout_ms,
                                    volatile int *abort, tdBootstrap **out, char *err);
/* Same, rendezvous through an external store under prefix. */
tpudistResult_t bootstrapInitStore(const tpudistStore_t *store, const char *prefix, int rank,
                                   int nranks, int timeout_ms, volatile int *abort,
                                   tdBootstrap **out, char *err);
/* data holds nranks slots of len bytes; this rank's slot is filled; on return all are. */
tpudistResult_t bootstrapAllGather(tdBootstrap *bs, void *data, size_t len, char *err);
/* Rank 0's len bytes of data into every rank's data. */
tpudistResult_t bootstrapBroadcast(tdBootstrap *bs, void *data, size_t len, char *err);
/* As bootstrapAllGather, polling abort instead of the channel's flag (a non-blocking split's
 * exchange over its parent's channel stops when the split is aborted). */
tpudistResult_t bootstrapAllGatherWatch(tdBootstrap *bs, void *data, size_t len,
                                        volatile int *abort, char *err);
tpudistResult_t bootstrapBarrier(tdBootstrap *bs, char *err);
/* Child channel over parent's connections for the members (parent ranks, in new rank order);
 * collective over the members only. tag distinguishes concurrent splits; abort as in
 * bootstrapInit. */
tpudistResult_t bootstrapSplit(tdBootstrap *parent, const int *members, int n, int newrank,
                               uint64_t tag, volatile int *abort, tdBootstrap **out, char *err);
/* Rank 0 of a TPU_DIST_COMM_ID rendezvous keeps listening on the job's address; this hands that
 * listener to the caller (who closes it), or -1 (another rank, another kind of id, taken). */
int bootstrapTakeIdListener(tdBootstrap *bs);
/* 1 if bs was made from a TPU_DIST_COMM_ID id (every rank knows the job's address and key). */
int bootstrapJobId(const tdBootstrap *bs);
/* For a failed communicator: closes this rank's own listener, which peers probe with
 * bootstrapPeerReleased. The channel can no longer be split afterwards. */
void bootstrapRelease(tdBootstrap *bs);
/* 1 if peer's listener refuses connections at once (the peer released its communicator or its
 * process is gone); 0 if it accepts or the answer is not immediate. Cheap; never blocks. */
int bootstrapPeerReleased(const tdBootstrap *bs, int peer);
/* ---- survivors (boot_agree.c) ---- */
/* Opens this rank's agreement listener (once) and writes its address (a tdNetAddr) into addr
 * (len bytes, at least TD_ADDR_BYTES); the communicator publishes it with its peer info. Unlike
 * the channel's own listener it stays open after bootstrapRelease, until bootstrapFree: the
 * survivors of a failure meet there, while the closed own listener still tells peers that this
 * rank released the communicator. */
tpudistResult_t bootstrapAgreeListen(tdBootstrap *bs, void *addr, size_t len, char *err);
/* 1 if rank is certainly gone (the caller's probe, e.g. its process exited on this host). */
typedef int (*tdAgreeDeadFn)(void *ctx, int rank);
/* Agreement of the ranks still alive on the failed set: failed holds nranks flags, on entry the
 * ranks this rank knows to have failed, on success the set every survivor ends with (the union of
 * what they knew, plus every rank that did not take part within the bounds). peers: every rank's
 * info (its agree_addr from bootstrapAgreeListen). seq must be the same on every rank and differ
 * between agreements of one channel. Bounded by a few timeout_ms (boot_agree.c gives the bounds);
 * dead, polled while waiting, may be NULL. Every wait stops (tpudistAborted) within about 50 ms
 * of *abort being set (NULL: the channel's own flag). A rank the others count as failed, or that
 * finds no other rank answering, gets tpudistRemoteError. */
tpudistResult_t bootstrapAgree(tdBootstrap *bs, const tdPeerInfo *peers, uint8_t *failed,
                               uint32_t seq, int timeout_ms, tdAgreeDeadFn dead, void *ctx,
                               volatile int *abort, char *err);
/* bootstrapSplit through the agreement listeners (works after bootstrapRelease); its rendezvous
 * is bounded by timeout_ms (the members were alive a moment ago: a short bound lets the survivors
 * agree again soon when one of them dies now). The new channel shares parent's agreement listener
 * (bootstrapAgreeListen then gives its address) instead of opening one, and its waits watch
 * abort (NULL: its own flag). */
tpudistResult_t bootstrapShrinkSplit(tdBootstrap *parent, const tdPeerInfo *peers,
                                     const int *members, int n, int newrank, uint64_t tag,
                                     int timeout_ms, volatile int *abort, tdBootstrap **out,
                                     char *err);
/* A copy of bs that can only agree and shrink-split (bootstrapAgree, bootstrapShrinkSplit): the
 * same rank, size, key, hash and addresses, and the same agreement listener (a duplicate
 * descriptor: it stays open while any copy lives). A shrunk communicator keeps one of its lineage's
 * first channel, so every later shrink of it meets, on that channel, the ranks still in an earlier
 * shrink of it (docs/reliability.md). */
tpudistResult_t bootstrapShadow(const tdBootstrap *bs, tdBootstrap **out, char *err);
/* Unblocks every wait of bs (from any thread). */
void bootstrapAbort(tdBootstrap *bs);
void bootstrapFree(tdBootstrap *bs);

/* Accessors: rank and size in this channel, a public hash unique to the communicator (derived
 * from the key, the id's address and the root's nonce, or from the split's key), and the key peers
 * must prove they know (transport handshakes use it too). */
int bootstrapRank(const tdBootstrap *bs);
int bootstrapNranks(const tdBootstrap *bs);
uint64_t bootstrapCommHash(const tdBootstrap *bs);
const tdKey *bootstrapKey(const tdBootstrap *bs);

/* Tests only: the library version this process presents in its hello. */
void bootstrapTestSetVersion(uint32_t version);

/* ---- wire checks: every message a peer sends is checked by one of these before use (they are
 * also the entry points of the fuzz targets in tests/fuzz) ---- */
typedef enum {
  TD_HELLO_OK = 0,
  TD_HELLO_FOREIGN, /* not this protocol (short, or wrong magic): drop without an answer */
  TD_HELLO_FATAL    /* a real rank with a conflicting setup: fail the rendezvous (err says why) */
} tdHelloVerdict;
/* Checks a rendezvous hello of len bytes (its sender has proved the key) against the root's
 * version and nranks. On TD_HELLO_OK: *rank, *kind, *tag and the rank's listen address (struct
 * tdNetAddr, may be NULL). */
tdHelloVerdict bootstrapHelloCheck(const void *msg, size_t len, uint32_t version, int nranks,
                                   int *rank, uint32_t *kind, uint64_t *tag, void *addr, char *err);
/* Checks the root's challenge of len bytes (magic); its nonce (TD_NONCE_BYTES) into nonce. */
tpudistResult_t bootstrapChallengeCheck(const void *msg, size_t len, uint8_t *nonce, char *err);
/* Checks the root's reply of len bytes: a failure status gives that status and the root's message
 * in err; a success needs the root's proof over transcript (this connection's hello and
 * challenge nonce, tlen bytes) with key, and nranks; then *nonce. */
tpudistResult_t bootstrapReplyCheck(const void *msg, size_t len, int nranks, const tdKey *key,
                                    const void *transcript, size_t tlen, uint64_t *nonce,
                                    char *err);
/* Checks a unique id (magic, flags, root address) before it is used. */
tpudistResult_t bootstrapIdCheck(const tpudistUniqueId *id, char *err);
/* Checks a listen address received from a peer (family, port). */
tpudistResult_t bootstrapAddrCheck(const void *addr, size_t len, char *err);

/* Host identity: hash of hostname, boot id and network namespace, or of hostid_override. */
uint64_t bootstrapHostHash(const char *hostid_override);

#endif /* TD_BOOTSTRAP_H_ */
