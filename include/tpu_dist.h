/*
 * tpu_dist.h - public C API of tpu_dist, a collective communications library for
 * torus interconnects (TPU ICI style), shaped like NCCL.
 *
 * Porting from NCCL is a rename: ncclAllReduce -> tpudistAllReduce, ncclComm_t -> tpudistComm_t,
 * with the same argument order and meaning, except that the trailing CUDA stream is replaced by a
 * request pointer:
 *
 *   tpudistRequest_t *req == NULL   the call blocks until the operation is complete
 *   tpudistRequest_t *req != NULL   the call returns at once; complete it with tpudistWait() or
 *                                   tpudistTest(). Inside tpudistGroupStart/End a NULL request
 * means "complete at tpudistGroupEnd".
 *
 * Operations on one communicator execute in issue order. Calls on one communicator must come from
 * one thread at a time, except tpudistCommAbort, which is safe from any thread. Different
 * communicators may be used from different threads concurrently. fork() after init is not
 * supported.
 *
 * Every rank gets bit-identical results, and results are deterministic run to run for a fixed
 * configuration. float16/bfloat16 travel as themselves; each local reduction computes in float32
 * and rounds back (round to nearest even). Integer arithmetic wraps. Avg on integers is the sum
 * divided by the rank count, truncating. Max/min propagate NaN.
 */
#ifndef TPU_DIST_H_
#define TPU_DIST_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(TPU_DIST_BUILDING) && defined(__GNUC__)
#define TPUDIST_API __attribute__((visibility("default")))
#else
#define TPUDIST_API
#endif

/* ---- Version ------------------------------------------------------------------------------ */
#define TPUDIST_MAJOR 0
#define TPUDIST_MINOR 1
#define TPUDIST_PATCH 0
/* X*10000 + Y*100 + Z, as NCCL_VERSION_CODE. */
#define TPUDIST_VERSION_CODE (TPUDIST_MAJOR * 10000 + TPUDIST_MINOR * 100 + TPUDIST_PATCH)

/* Writes TPUDIST_VERSION_CODE of the loaded library into *version. */
TPUDIST_API int tpudistGetVersion(int *version);

/* ---- Handles ------------------------------------------------------------------------------ */
typedef struct tpudistComm *tpudistComm_t;
typedef struct tpudistRequest *tpudistRequest_t;

/* ---- Results ------------------------------------------------------------------------------ */
typedef enum {
  tpudistSuccess = 0,
  tpudistSystemError = 2,     /* a system call or the OS failed (errno in the message) */
  tpudistInternalError = 3,   /* a bug in tpu_dist */
  tpudistInvalidArgument = 4, /* a bad argument: null pointer, bad dtype/op, rank out of range */
  tpudistInvalidUsage = 5,    /* a call not allowed now: e.g. inside a group, after destroy */
  tpudistRemoteError = 6,     /* a peer failed or disconnected */
  tpudistInProgress = 7,      /* a non-blocking operation has not completed yet */
  tpudistNotSupported = 8,    /* not available in this build or for this shape */
  tpudistTimeout = 9,         /* a bounded wait expired (TPU_DIST_TIMEOUT_MS / config.timeoutMs) */
  tpudistAborted = 10,        /* the communicator was aborted */
  tpudistNoMemory = 11,       /* allocation or shared memory space exhausted */
  tpudistNumResults = 12
} tpudistResult_t;

/* Static text for a result code. Never NULL. */
TPUDIST_API const char *tpudistGetErrorString(tpudistResult_t result);

/* The last detailed error message seen on comm (or, with comm == NULL, the last error of this
 * thread before any communicator existed, e.g. from init). Never NULL; "" when none. */
TPUDIST_API const char *tpudistGetLastError(tpudistComm_t comm);

/* ---- Data types and reduction ops --------------------------------------------------------- */
typedef enum {
  tpudistInt8 = 0,
  tpudistChar = 0,
  tpudistUint8 = 1,
  tpudistInt32 = 2,
  tpudistInt = 2,
  tpudistUint32 = 3,
  tpudistInt64 = 4,
  tpudistUint64 = 5,
  tpudistFloat16 = 6,
  tpudistHalf = 6,
  tpudistFloat32 = 7,
  tpudistFloat = 7,
  tpudistFloat64 = 8,
  tpudistDouble = 8,
  tpudistBfloat16 = 9,
  tpudistNumTypes = 10
} tpudistDataType_t;

typedef enum {
  tpudistSum = 0,
  tpudistProd = 1,
  tpudistMax = 2,
  tpudistMin = 3,
  tpudistAvg = 4,
  tpudistNumOps = 5
} tpudistRedOp_t;

#define TPUDIST_UNIQUE_ID_BYTES 128
/* Opaque: the root's address and a random secret. Only peers presenting the secret are admitted. */
typedef struct {
  char internal[TPUDIST_UNIQUE_ID_BYTES];
} tpudistUniqueId;

/* tpudistRecv's peer for "any source"; tpudistRequestSource tells who sent. */
#define tpudistAnySource (-1)
/* CommSplit color meaning "not in any new communicator" (newcomm set to NULL). */
#define TPUDIST_SPLIT_NOCOLOR (-1)

/* ---- Config ------------------------------------------------------------------------------- */
#define TPUDIST_CONFIG_MAGIC 0x7d15c0f1u
#define TPUDIST_CONFIG_UNDEF_INT INT32_MIN

/* Initialise with TPUDIST_CONFIG_INITIALIZER, then set fields. Unset fields take the values of
 * the TPU_DIST_* environment (see docs/env.md). */
typedef struct {
  size_t size;          /* sizeof(tpudistConfig_t), set by the initializer */
  unsigned int magic;   /* TPUDIST_CONFIG_MAGIC */
  unsigned int version; /* TPUDIST_VERSION_CODE */
  int blocking;  /* 1 (default): init/split block; 0: they return tpudistInProgress (below) */
  int timeoutMs; /* bound on every wait in ms; default TPU_DIST_TIMEOUT_MS */
  const char *commName; /* name in logs and errors; may be NULL */
  const char *topology; /* torus for this communicator, TPU_DIST_TOPOLOGY syntax; NULL: env */
  int mode;             /* TPUDIST_MODE_STRICT, _DEBUG or _DEFER; default TPU_DIST_MODE */
} tpudistConfig_t;

/* Execution modes (config.mode, TPU_DIST_MODE). strict: every operation starts when issued, in
 * issue order. debug: every collective, blocking or not, has completed when its call returns
 * (a non-blocking call's request is then already done), the cross-rank signature check of
 * TPU_DIST_CHECK runs before every collective, and a failure is reported at the call that caused
 * it, naming the call's arguments: for hunting bugs, not speed (docs/performance.md). Point-to-
 * point calls keep their own semantics in debug mode (completing a send before the matching
 * receive is posted would deadlock correct programs). defer: non-blocking collectives (a request
 * given, outside a group) are queued, not started, until a flush point -- a wait or test on any of
 * them, a blocking call, GroupEnd, TPU_DIST_DEFER_OPS operations or TPU_DIST_DEFER_BYTES bytes
 * issued since the last flush point, or TPU_DIST_DEFER_US after the first queued one -- where the
 * ranks agree on how many queued operations to run and compatible ones (same collective, datatype,
 * op and root) run fused into one schedule; results are bit-identical to strict, and every request
 * completes and fails on its own (docs/runtime.md). All ranks of a communicator use one mode. */
#define TPUDIST_MODE_STRICT 0
#define TPUDIST_MODE_DEBUG 1
#define TPUDIST_MODE_DEFER 2

#define TPUDIST_CONFIG_INITIALIZER                                                                 \
  {                                                                                                \
    sizeof(tpudistConfig_t), TPUDIST_CONFIG_MAGIC, TPUDIST_VERSION_CODE, TPUDIST_CONFIG_UNDEF_INT, \
        TPUDIST_CONFIG_UNDEF_INT, NULL, NULL, TPUDIST_CONFIG_UNDEF_INT                             \
  }

/* ---- Communicators ------------------------------------------------------------------------ */
/* Creates an id on the root rank (rank 0 by convention); distribute it out of band (MPI_Bcast).
 * With TPU_DIST_COMM_ID=host:port set, the id names that address instead of a fresh listener. */
TPUDIST_API tpudistResult_t tpudistGetUniqueId(tpudistUniqueId *uniqueId);

/* Collective over nranks processes. */
TPUDIST_API tpudistResult_t tpudistCommInitRank(tpudistComm_t *comm, int nranks,
                                                tpudistUniqueId commId, int rank);
TPUDIST_API tpudistResult_t tpudistCommInitRankConfig(tpudistComm_t *comm, int nranks,
                                                      tpudistUniqueId commId, int rank,
                                                      const tpudistConfig_t *config);

/* Bootstrap without an id: from TPU_DIST_COMM_ID=host:port. nranks/rank < 0 read WORLD_SIZE/RANK.
 * Rank 0 listens on host:port. */
TPUDIST_API tpudistResult_t tpudistCommInitEnv(tpudistComm_t *comm, int nranks, int rank,
                                               const tpudistConfig_t *config);

/* An external key-value store (e.g. torch's c10d Store). All callbacks return 0 on success.
 * get() must block until the key exists or timeoutMs passes; it allocates *value with malloc()
 * and the library frees it. */
typedef struct {
  void *ctx;
  int (*set)(void *ctx, const char *key, const void *value, size_t len);
  int (*get)(void *ctx, const char *key, void **value, size_t *len, int timeoutMs);
} tpudistStore_t;

/* Init through an external store: every rank publishes its address under prefix, reads the
 * others'. prefix must be unique per communicator (e.g. per torch process group). */
TPUDIST_API tpudistResult_t tpudistCommInitStore(tpudistComm_t *comm, int nranks, int rank,
                                                 const tpudistStore_t *store, const char *prefix,
                                                 const tpudistConfig_t *config);

/* MPI_Comm_split semantics, as ncclCommSplit: ranks with equal color form a communicator ordered
 * by (key, old rank). color TPUDIST_SPLIT_NOCOLOR gives *newcomm = NULL. config NULL inherits. */
TPUDIST_API tpudistResult_t tpudistCommSplit(tpudistComm_t comm, int color, int key,
                                             tpudistComm_t *newcomm, const tpudistConfig_t *config);

/* Non-blocking creation (as NCCL's non-blocking communicators): with config.blocking = 0,
 * CommInitRankConfig, CommInitEnv, CommInitStore, CommSplit and CommShrink return
 * tpudistInProgress at once with *comm / *newcomm set to a handle whose creation runs in the
 * background (config NULL in CommSplit and CommShrink inherits the parent's blocking). Poll
 * tpudistCommGetAsyncError(handle, &state) until state is tpudistSuccess (ready) or an error (the
 * creation failed; destroy the handle). Until then every other call on the handle fails with
 * tpudistInvalidUsage (NCCL answers ncclInvalidArgument), except tpudistGetLastError,
 * tpudistCommDestroy (waits for the creation, which is bounded by the timeout, then frees) and
 * tpudistCommAbort (stops the creation within 100 ms and frees everything: thread, sockets, shared
 * memory). While a non-blocking split runs, its parent can be used for operations but not split
 * again or destroyed (tpudistInvalidUsage); aborting the parent aborts the split. A rank passing
 * TPUDIST_SPLIT_NOCOLOR takes part in the exchange of colors at the call and gets *newcomm = NULL
 * and tpudistSuccess. An external store's ctx must stay valid until the creation has finished. */

/* Completes outstanding work, then frees everything. */
TPUDIST_API tpudistResult_t tpudistCommDestroy(tpudistComm_t comm);
/* Safe from any thread: fails every pending and future operation with tpudistAborted and
 * releases every wait at once, then frees the communicator. During a non-blocking creation:
 * stops it and frees everything within 100 ms. */
TPUDIST_API tpudistResult_t tpudistCommAbort(tpudistComm_t comm);
/* ---- fault tolerance: survivors carry on (docs/reliability.md) ---- */
#define TPUDIST_SHRINK_DEFAULT 0 /* comm healthy: in-flight work completes first */
#define TPUDIST_SHRINK_ABORT 1   /* comm failed: pending work is aborted first (as by Revoke) */
/* Ranks of comm not in excludeRanks form *newcomm, renumbered in old-rank order, without a new
 * rendezvous (no TPU_DIST_COMM_ID, no store): the survivors meet over comm's own bootstrap
 * channel. Every surviving member calls it with the same list; a caller in the list gets
 * tpudistInvalidArgument. excludeRanks == NULL (excludeCount 0) means: the failed set this
 * communicator detected, agreed among the survivors (every survivor ends with the same set, also
 * when survivors saw different failures or a rank dies during the agreement or the new
 * communicator's rendezvous; bounded by a few TPU_DIST_AGREE_TIMEOUT_MS); a survivor that the
 * others counted as failed (it came later than the bound) gets tpudistRemoteError and no
 * communicator. The new communicator keeps a torus topology when the survivors form an axis-aligned
 * sub-block of comm's torus, else it is flat (selection then picks among the flat algorithms); a
 * split communicator shrinks alike. config NULL inherits the parent's (blocking = 0: the shrink,
 * agreement included, runs in the background, see non-blocking creation above). A shrunk
 * communicator may already hold a rank that died while it was being created (a later failure:
 * shrink it again; the survivors that saw the death first meet it there). comm stays valid: destroy
 * it afterwards (it does not wait for the failed ranks). Collective over the survivors; not inside
 * a group. */
TPUDIST_API tpudistResult_t tpudistCommShrink(tpudistComm_t comm, const int *excludeRanks,
                                              int excludeCount, tpudistComm_t *newcomm,
                                              const tpudistConfig_t *config, int shrinkFlags);
/* Fails every in-flight and future operation on comm with tpudistAborted but keeps the
 * communicator, so it can still be shrunk or destroyed. Safe from any thread. Its connections are
 * released as on a failure: peers waiting on this rank in comm fail with tpudistRemoteError at
 * once (they revoke or shrink in turn). */
TPUDIST_API tpudistResult_t tpudistCommRevoke(tpudistComm_t comm);
/* ---- reconfiguration: a communicator over any set of processes (docs/reliability.md) ----
 * Each process opens one endpoint (a listener and a random 256-bit secret) and publishes its
 * handle, a string naming both ("tpu_dist:<secret hex>@<host:port>"); the handle stays valid, and
 * may be used in any number of reconfigurations, until the endpoint is destroyed. Handles travel
 * out of band and are as secret as a unique id: whoever holds one can join reconfigurations
 * rooted at its process. */
typedef struct tpudistReconf *tpudistReconf_t;
#define TPUDIST_RECONF_HANDLE_BYTES 160 /* room for any handle, its NUL included */
/* Opens an endpoint; its handle (NUL-terminated) into handle (len bytes, at least
 * TPUDIST_RECONF_HANDLE_BYTES). */
TPUDIST_API tpudistResult_t tpudistReconfCreate(tpudistReconf_t *endpoint, char *handle,
                                                size_t len);
/* A new communicator *newcomm over the processes whose handles are handles[0..nhandles-1]:
 * rank = position in the list; this endpoint's handle must appear exactly once. It needs no
 * existing communicator: the members may come from different communicators or none (as
 * ncclCommGrow admits new ranks), and the members meet at the endpoint of handles[0], with the
 * same challenge-response as every rendezvous, under a key bound to uuid. uuid identifies this
 * reconfiguration: every member passes the same one, and an endpoint takes each uuid once (a
 * reused uuid fails with tpudistInvalidUsage, "already used"), so concurrent reconfigurations of
 * disjoint sets use their own uuids. Bounded by timeoutMs (<= 0: the config's timeout, else
 * TPU_DIST_TIMEOUT_MS); a member that does not come fails it with tpudistTimeout. config as in
 * tpudistCommInitRankConfig (blocking = 0: the endpoint must outlive the creation). Calls on
 * one endpoint must not overlap. */
TPUDIST_API tpudistResult_t tpudistCommReconfigure(tpudistReconf_t endpoint, int64_t uuid,
                                                   const char *const handles[], int nhandles,
                                                   int timeoutMs, const tpudistConfig_t *config,
                                                   tpudistComm_t *newcomm);
/* Closes the endpoint (communicators made through it are independent of it). NULL: nothing. */
TPUDIST_API tpudistResult_t tpudistReconfDestroy(tpudistReconf_t endpoint);
/* The ranks comm knows to have failed, ascending: processes on this host that exited, and the
 * failed set of the last agreement (tpudistCommShrink with no list) on comm. *count: in, the room
 * in ranks; out, how many failed (only the first min(in, out) are written; ranks may be NULL with
 * *count 0 to ask for the number). */
TPUDIST_API tpudistResult_t tpudistCommGetFailedRanks(tpudistComm_t comm, int *ranks, int *count);
/* The first asynchronous error (e.g. a dead peer seen by the progress thread), or success. */
/* During a non-blocking creation: tpudistInProgress, then its result. After: the first
 * asynchronous error (e.g. a dead peer seen by the progress thread), or success. */
TPUDIST_API tpudistResult_t tpudistCommGetAsyncError(tpudistComm_t comm,
                                                     tpudistResult_t *asyncError);
/* Writes comm's flight record (its last TPU_DIST_FLIGHT_RECORDS operations with their state) as
 * JSON in the shape of torch's flight recorder dumps into dir (NULL: TPU_DIST_FR_DUMP_DIR), one
 * file per rank and communicator: <dir>/tpu_dist_fr_<comm name>_rank<R>.json. With
 * TPU_DIST_FR_DUMP_DIR set the same is written when the communicator fails or times out.
 * docs/reliability.md describes the fields. */
TPUDIST_API tpudistResult_t tpudistCommDumpFlightRecord(tpudistComm_t comm, const char *dir);
/* Sets comm's bound on every wait (config.timeoutMs) to timeoutMs (> 0), from any thread: waits
 * that start afterwards, and those running that have not yet waited that long, use it. */
TPUDIST_API tpudistResult_t tpudistCommSetTimeout(tpudistComm_t comm, int timeoutMs);
TPUDIST_API tpudistResult_t tpudistCommCount(const tpudistComm_t comm, int *count);
TPUDIST_API tpudistResult_t tpudistCommUserRank(const tpudistComm_t comm, int *rank);

/* Topology of a communicator: ndims = 0 means flat (fully connected). */
#define TPUDIST_MAX_DIMS 4
typedef struct {
  int ndims;
  int dims[TPUDIST_MAX_DIMS];
  int wrap[TPUDIST_MAX_DIMS];
  int twisted;
  int coords[TPUDIST_MAX_DIMS]; /* this rank's coordinates */
  int nhosts;                   /* distinct hosts in the communicator */
} tpudistTopology_t;
TPUDIST_API tpudistResult_t tpudistCommTopology(const tpudistComm_t comm,
                                                tpudistTopology_t *topology);

/* ---- Collectives -------------------------------------------------------------------------- */
/* In place when sendbuff == recvbuff. */
TPUDIST_API tpudistResult_t tpudistAllReduce(const void *sendbuff, void *recvbuff, size_t count,
                                             tpudistDataType_t datatype, tpudistRedOp_t op,
                                             tpudistComm_t comm, tpudistRequest_t *req);
/* sendbuff is read on root only; in place when sendbuff == recvbuff. */
TPUDIST_API tpudistResult_t tpudistBroadcast(const void *sendbuff, void *recvbuff, size_t count,
                                             tpudistDataType_t datatype, int root,
                                             tpudistComm_t comm, tpudistRequest_t *req);
/* recvbuff is written on root only (may be NULL elsewhere). */
TPUDIST_API tpudistResult_t tpudistReduce(const void *sendbuff, void *recvbuff, size_t count,
                                          tpudistDataType_t datatype, tpudistRedOp_t op, int root,
                                          tpudistComm_t comm, tpudistRequest_t *req);
/* sendcount per rank; recvbuff holds nranks*sendcount. In place iff
 * sendbuff == recvbuff + rank*sendcount (in elements). */
TPUDIST_API tpudistResult_t tpudistAllGather(const void *sendbuff, void *recvbuff, size_t sendcount,
                                             tpudistDataType_t datatype, tpudistComm_t comm,
                                             tpudistRequest_t *req);
/* recvcount per rank; sendbuff holds nranks*recvcount. In place iff
 * recvbuff == sendbuff + rank*recvcount (in elements). */
TPUDIST_API tpudistResult_t tpudistReduceScatter(const void *sendbuff, void *recvbuff,
                                                 size_t recvcount, tpudistDataType_t datatype,
                                                 tpudistRedOp_t op, tpudistComm_t comm,
                                                 tpudistRequest_t *req);
/* count elements to and from each peer; buffers hold nranks*count. Not in place. */
TPUDIST_API tpudistResult_t tpudistAllToAll(const void *sendbuff, void *recvbuff, size_t count,
                                            tpudistDataType_t datatype, tpudistComm_t comm,
                                            tpudistRequest_t *req);
/* As RCCL's ncclAllToAllv: counts and displacements in elements, one per peer. Not in place. */
TPUDIST_API tpudistResult_t tpudistAllToAllv(const void *sendbuff, const size_t sendcounts[],
                                             const size_t sdispls[], void *recvbuff,
                                             const size_t recvcounts[], const size_t rdispls[],
                                             tpudistDataType_t datatype, tpudistComm_t comm,
                                             tpudistRequest_t *req);
/* Counts exchange for all-to-all-v (MoE dispatch): each rank gives sendcounts[nranks] and gets
 * recvcounts[nranks] (recvcounts[p] = what p sends to this rank). Blocking or with req. */
TPUDIST_API tpudistResult_t tpudistAllToAllCounts(const size_t sendcounts[], size_t recvcounts[],
                                                  tpudistComm_t comm, tpudistRequest_t *req);

/* Point to point. Concurrent sends/recvs that depend on each other belong in one group. */
TPUDIST_API tpudistResult_t tpudistSend(const void *sendbuff, size_t count,
                                        tpudistDataType_t datatype, int peer, tpudistComm_t comm,
                                        tpudistRequest_t *req);
/* peer may be tpudistAnySource. The message must have exactly count elements. */
TPUDIST_API tpudistResult_t tpudistRecv(void *recvbuff, size_t count, tpudistDataType_t datatype,
                                        int peer, tpudistComm_t comm, tpudistRequest_t *req);

/* ---- Groups and requests ------------------------------------------------------------------ */
TPUDIST_API tpudistResult_t tpudistGroupStart(void);
/* Issues the group's operations together; blocks until those issued with a NULL request are done.
 */
TPUDIST_API tpudistResult_t tpudistGroupEnd(void);

/* Completes the request (bounded by the communicator's timeout) and frees it. */
TPUDIST_API tpudistResult_t tpudistWait(tpudistRequest_t req);
/* *done = 1 and the request is freed once complete (its result returned); else *done = 0. */
TPUDIST_API tpudistResult_t tpudistTest(tpudistRequest_t req, int *done);
/* For a pending receive (call before tpudistWait/Test, which free the request): progresses until
 * the receive is matched (bounded by the communicator's timeout) and gives the sender's rank. */
TPUDIST_API tpudistResult_t tpudistRequestSource(tpudistRequest_t req, int *source);

/* Name of the algorithm of the most recent collective issued on comm ("ring", "torus", ...). */
TPUDIST_API const char *tpudistLastAlgorithm(tpudistComm_t comm);

#ifdef __cplusplus
}
#endif
#endif /* TPU_DIST_H_ */
