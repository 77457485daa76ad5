/*
 * boot_priv.h - what bootstrap.c (ids, the joining side, allgather, split) and boot_admit.c (the
 * root's side of a rendezvous) share: the wire messages and the channel's state.
 *
 * A rendezvous connection, joining rank J to root R, runs the handshake of auth.h:
 *   J -> R  tdHello {magic, version, kind, tag, rank, nranks, J's listen address, nonce_j}
 *   R -> J  tdChallenge {magic, nonce_r}
 *   J -> R  proof_j = HMAC(key, "tpu_dist/boot/v1/rank" | hello | nonce_r)
 *   R -> J  tdReply {magic, status, nranks, hash nonce, message,
 *                    proof_r = HMAC(key, "tpu_dist/boot/v1/root" | hello | nonce_r | reply)}
 * then, on success, the table of listen addresses. R reads J's hello fields (version, ranks) only
 * after proof_j checked out, so nobody without the key can fail or join a rendezvous; J trusts a
 * successful reply only with a valid proof_r. The reply comes once every rank has joined.
 */
#ifndef TD_BOOT_PRIV_H_
#define TD_BOOT_PRIV_H_

#include "auth.h"
#include "bootstrap.h"
#include "net.h"

#define TD_BOOT_MAGIC 0x31306f6f62647470ull /* "ptdboo01" */
#define TD_ID_FIXED 1u
#define TD_HELLO_INIT 1u
#define TD_HELLO_SPLIT 2u
#define TD_HELLO_RECONF 3u
#define TD_BOOT_LABEL_RANK "tpu_dist/boot/v1/rank"
#define TD_BOOT_LABEL_ROOT "tpu_dist/boot/v1/root"

typedef struct {
  uint64_t magic;
  uint32_t version;
  uint32_t flags;
  uint8_t secret[TD_KEY_BYTES]; /* at byte 16 of the unique id */
  tdNetAddr root;
} tdIdBody;

typedef struct {
  uint64_t magic;
  uint32_t version;
  uint32_t kind;
  uint64_t tag;
  int32_t rank, nranks;
  tdNetAddr addr;
  uint8_t nonce[TD_NONCE_BYTES];
} tdHello;

typedef struct {
  uint64_t magic;
  uint8_t nonce[TD_NONCE_BYTES];
} tdChallenge;

typedef struct {
  uint64_t magic;
  int32_t status;
  int32_t nranks;
  uint64_t nonce; /* drawn by the root: makes the hash unique even when an id is reused */
  char msg[200];
  uint8_t mac[TD_MAC_BYTES]; /* proof_r (any status; a joining rank checks it on success) */
} tdReply;

/* What both proofs of one connection cover. */
typedef struct {
  tdHello hello;
  uint8_t nonce_r[TD_NONCE_BYTES];
} tdBootTranscript;

typedef struct tdStash {
  int fd;
  tdBootTranscript tr; /* an authenticated hello of a later split */
  struct tdStash *next;
} tdStash;

struct tdBootstrap {
  int rank, nranks;
  tdKey key; /* the job secret (or, in a split, the key derived from the parent's) */
  uint64_t hash;
  int timeout_ms;
  volatile int aborted;
  volatile int *abortp; /* the flag every wait polls: &aborted, or the creator's (bootstrapInit) */
  int listen_fd;        /* own listener: the rendezvous point of splits where this rank is root */
  tdNetAddr *addrs;     /* nranks listen addresses */
  int root_fd;          /* non-root: connection to rank 0 */
  int id_fd;      /* root of a TPU_DIST_COMM_ID id: the listener on the job's address, or -1 */
  int job_id;     /* made from a TPU_DIST_COMM_ID id */
  int *peer_fds;  /* root: connections to ranks 1..n-1 */
  tdStash *stash; /* hellos of later splits that arrived on listen_fd */
  int agree_fd;   /* the survivors' listener (boot_agree.c): open until the channel is freed */
};

/* The version this process presents (tests pretend to be another release). */
uint32_t bootVersion(void);
/* Root: a full rendezvous on lfd: handshakes (with the key), admission of every rank, replies and
 * the address table. owner: the parent channel for splits (its stash and abort flag), else NULL. */
tpudistResult_t bootRootRendezvous(tdBootstrap *bs, int lfd, tdBootstrap *owner, const tdKey *key,
                                   uint32_t kind, uint64_t tag, char *err);
/* A split of parent (see bootstrapSplit) whose new rank 0 admits on lfd and that the others
 * join at root (the new rank 0's address for lfd); the rendezvous is bounded by timeout_ms, the
 * child channel then has the parent's timeout. When lfd is the parent's agreement listener (a
 * shrink), a refusal there means the new rank 0 is gone: the join fails at once. */
tpudistResult_t bootSplitOn(tdBootstrap *parent, int lfd, const tdNetAddr *root, const int *members,
                            int n, int newrank, uint64_t tag, int timeout_ms, volatile int *abort,
                            tdBootstrap **out, char *err);
/* Opens this rank's own listener on the IP of ip (port 0) into *fd; its address into *bound. */
tpudistResult_t bootListenOn(const tdNetAddr *ip, int *fd, tdNetAddr *bound, char *err);
/* The reply's proof for transcript tr. */
void bootReplyMac(const tdKey *key, const tdBootTranscript *tr, tdReply *rep);

#endif /* TD_BOOT_PRIV_H_ */
