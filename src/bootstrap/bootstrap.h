/*
 * bootstrap.h - out-of-band setup channel: unique id, TCP rendezvous with a secret, external store
 * (set/get callbacks), allgather and barrier among the ranks of a communicator, and splitting it
 * for CommSplit without a new global rendezvous. Also the host identity.
 */
#ifndef TD_BOOTSTRAP_H_
#define TD_BOOTSTRAP_H_

#include "td_base.h"

typedef struct tdBootstrap tdBootstrap;

/* Fills id with this process's listening address (or comm_id "host:port" when given: then every
 * rank computes the same id) and a random secret. With comm_id, the secret is a hash of comm_id and
 * TPU_DIST_COMM_SECRET (callers pass configGet()->comm_id when the user set TPU_DIST_COMM_ID). An
 * id without comm_id must be used by rank 0 in this process (or a fork of it). */
tpudistResult_t bootstrapGetUniqueId(tpudistUniqueId *id, const char *comm_id, char *err);
/* Rendezvous of nranks ranks through the id's root (the root is rank 0). Checks the secret and
 * the library version of every peer; bounded by timeout_ms. */
tpudistResult_t bootstrapInit(const tpudistUniqueId *id, int rank, int nranks, int timeout_ms,
                              tdBootstrap **out, char *err);
/* Same, rendezvous through an external store under prefix. */
tpudistResult_t bootstrapInitStore(const tpudistStore_t *store, const char *prefix, int rank,
                                   int nranks, int timeout_ms, tdBootstrap **out, char *err);
/* data holds nranks slots of len bytes; this rank's slot is filled; on return all are. */
tpudistResult_t bootstrapAllGather(tdBootstrap *bs, void *data, size_t len, char *err);
tpudistResult_t bootstrapBarrier(tdBootstrap *bs, char *err);
/* Child channel over parent's connections for the members (parent ranks, in new rank order);
 * collective over the members only. tag distinguishes concurrent splits. */
tpudistResult_t bootstrapSplit(tdBootstrap *parent, const int *members, int n, int newrank,
                               uint64_t tag, tdBootstrap **out, char *err);
/* Unblocks every wait of bs (from any thread). */
void bootstrapAbort(tdBootstrap *bs);
void bootstrapFree(tdBootstrap *bs);

/* Accessors: rank and size in this channel, a hash unique to the communicator (from the id's secret
 * and address, or the parent's hash and the split tag), and the secret peers must present. */
int bootstrapRank(const tdBootstrap *bs);
int bootstrapNranks(const tdBootstrap *bs);
uint64_t bootstrapCommHash(const tdBootstrap *bs);
uint64_t bootstrapSecret(const tdBootstrap *bs);

/* Tests only: the library version this process presents in its hello. */
void bootstrapTestSetVersion(uint32_t version);

/* Host identity: hash of hostname, boot id and network namespace, or of hostid_override. */
uint64_t bootstrapHostHash(const char *hostid_override);

#endif /* TD_BOOTSTRAP_H_ */
