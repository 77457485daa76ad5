/*
 * comm.h - the communicator (struct tpudistComm, internally tdComm), owned by src/core. It embeds
 * what the layers below see of it: net (rt_net.h: identity, peers, transports, errors), which the
 * transports and the executor get as a tdNet, and exec (exec.h: the executor's queue, thread and
 * sequence numbers), which src/core drives through exec.h's functions. The rest is src/core's:
 * topology, selection, the schedule cache, the live registry, the last algorithm. Also the
 * helpers the API files share (live-communicator registry, error recording, schedule lookup).
 */
#ifndef TD_COMM_H_
#define TD_COMM_H_

#include <pthread.h>
#include <stddef.h>

#include "exec.h"
#include "rt_net.h"
#include "select.h"
#include "torus.h"

typedef struct {
  tdColl coll;
  int root, inplace;
  char algo[16];
  tpudistResult_t gen_res; /* success, or why this algorithm refused the shape */
  tdSched sched;
} tdSchedEntry;

/* One remembered schedule lookup: repeated calls with the same key skip the search. */
typedef struct {
  int valid, root, inplace;
  uint64_t bytes;
  const tdSched *sched;
  const char *algo;
} tdSchedMemo;

/* A buffer of the defer-mode pool (defer.c): fused hosts borrow one while they run. */
typedef struct {
  void *buf;
  size_t cap;
  int used;
} tdPackBuf;

/* The channel every shrink of a communicator agrees on (lineage.c; comm_shrink.c): the first
 * channel of its line of shrinks, i.e. the communicator that was shrunk first (a copy of its
 * bootstrap channel that can only agree and meet, its peers' info, topology and mode), this
 * communicator's ranks there, and the sequence number of that first shrink. A communicator not
 * made by a shrink is the first of its own line and has none. */
typedef struct tdLineage {
  struct tdBootstrap *bs; /* bootstrapShadow of the first channel */
  tdPeerInfo *peers;      /* its bs->nranks peer infos (agreement addresses, pids) */
  tdTopo topo;
  int mode;
  int *map;     /* the communicator's rank -> rank of the first channel */
  uint32_t seq; /* every agreement of the line runs under this sequence number */
} tdLineage;

/* What a split or shrink inherits from where it comes from. */
typedef struct {
  const tdTopo *topo; /* members are ranks of this topology */
  int mode;
} tdParentView;

/* Defer mode's state of one communicator (defer.c; the deferred list is the executor's, all of it
 * under exec.lock). deferFree releases what it holds. */
typedef struct {
  uint64_t next_dseq;          /* dseq of the next deferred operation */
  uint64_t win_ops, win_bytes; /* deferred since the last flush point of the caller */
  uint64_t agree_no;           /* agreements started */
  uint64_t fifo_target[16];    /* flush requests not yet agreed: last dseq to run ... */
  int fifo_kind[16], nfifo;    /* ... and what asked for it (tdDeferTrigger) */
  tdOp **batch, **taken;       /* scratch lists: what a flush queues, what it took */
  size_t batch_cap, taken_cap;
  tdPackBuf *packs; /* slot and gathered hosts' buffers: as many as were ever in use at once */
  /* the largest plan scratch a fused host has used: lent to the next host (hosts are operation
   * objects from the free list, so the one that ran a host is a member or an agreement later) */
  void *host_scratch;
  size_t host_scratch_cap;
  size_t npacks, packs_cap;
  /* counters: agreements (flushes), fused hosts, operations they carried, gathered hosts */
  uint64_t stat_agreements, stat_hosts, stat_fused, stat_gathered;
  uint64_t stat_direct;       /* fused hosts bound to their members' buffers (no copies) */
  uint32_t stat_host_colls;   /* 1 << coll for each collective fused so far */
  uint32_t stat_direct_colls; /* ... and for each one fused without copies */
} tdDefer;

typedef struct tdComm {
  tdNet net;   /* what the transports and the executor see */
  tdExec exec; /* the executor */
  tdTopo topo;
  /* its NUMA level (comm_host.c): the nodes its ranks use ("0-3"; empty: no level) and the cost
   * of a copy across them from the host's distances, in percent (0: the host states none) */
  char numa_nodes[32];
  int numa_pct;
  const char *last_algo; /* tpudistLastAlgorithm */
  int mode;              /* TPUDIST_MODE_STRICT / TPUDIST_MODE_DEBUG (config.mode, TPU_DIST_MODE) */
  int check;             /* signature check before each collective (TPU_DIST_CHECK or debug mode) */
  uint64_t split_seq;
  /* selection */
  tdSelectTable *select;
  /* all-to-all-v in one phase with this algorithm (selected at every size and TD_ALGO_V_LOCAL),
   * or NULL: counts exchange first (comm_select.c); its plan, generated at the first call */
  const char *a2av_local;
  tdSched a2av_plan;
  int a2av_plan_ok;
  /* schedule cache */
  tdSchedEntry **cache;
  int ncache;
  size_t cache_cap;
  tdSchedMemo last_sched[TD_NUM_COLLS]; /* per collective: the last lookup and its answer */
  tdSched *file_scheds;                 /* TPU_DIST_SCHED_FILE */
  int nfile_scheds;
  volatile int in_calls;
  int destroyed;
  /* creation (comm_async.c) */
  int blocking;              /* config.blocking (split inherits): 0 = creation in the background */
  volatile int create_state; /* tpudistSuccess (ready), tpudistInProgress, or why creation failed */
  struct tdCreate *create;   /* the running creation job, until joined */
  struct tdComm *parent;     /* split: the parent, held while the creation job runs */
  volatile int async_children;   /* creation jobs running over this communicator's bootstrap */
  struct tdStatusServer *status; /* health queries (comm_status.c), or NULL */
  /* the 8-word all-gather plan: defer mode's agreements and TPU_DIST_CHECK signatures */
  const tdSched *ag8;
  tdDefer defer; /* defer mode (defer.c) */
  /* fault tolerance (comm_shrink.c) */
  uint32_t shrink_seq;    /* shrinks started on this communicator (same on every survivor) */
  uint8_t *agreed_failed; /* nranks flags: the failed set of the last agreement, or NULL */
  tdLineage *lineage;     /* made by a shrink: where its own shrinks agree; else NULL */
} tdComm;

struct tpudistComm {
  tdComm c;
};

/* The communicator an executor belongs to. */
static inline tdComm *commOfExec(tdExec *ex) {
  return (tdComm *)((char *)ex - offsetof(tdComm, exec));
}
/* The communicator an operation was issued on. */
static inline tdComm *commOfOp(const tdOp *op) {
  return commOfExec(op->ex);
}

/* ---- registry of live communicators (comm_live.c) ---- */
/* Enters an API call on comm: checks that comm is live, created (not still in a non-blocking
 * creation, which is tpudistInvalidUsage, nor failed in one, which is that failure) and not
 * aborted; counts the call. fn NULL: only live (no message recorded). */
tpudistResult_t commEnter(tdComm *comm, const char *fn);
/* As commEnter, accepting a communicator whose creation is running or failed (destroy). */
tpudistResult_t commEnterAnyState(tdComm *comm, const char *fn);
void commLeave(tdComm *comm);
/* Adds c to / removes c from the registry (remove: 0 if it was not there). */
tpudistResult_t commLiveAdd(tdComm *c);
int commLiveRemove(tdComm *c);
/* Sets the abort flag of every creation job running over parent (lock: the registry's). */
void commAbortChildren(tdComm *parent);

/* ---- creation (comm_object.c, comm.c, comm_async.c) ---- */
/* A communicator object for nranks/rank with the configured defaults (not live), or NULL. */
tdComm *commAlloc(int nranks, int rank);
/* Releases everything c holds but the object itself (again: nothing). */
void commRelease(tdComm *c);
/* Joins a creation job, releases everything c holds and frees it (c is not live, or was removed
 * from the registry). */
void commDestroyNow(tdComm *c);
/* A creation job: builds c (bootstrap, transports, executor) from arg and the caller's config uc
 * (NULL: none), polling c->net.aborted in every wait; on failure it may leave parts built
 * (commCreate releases them) and writes the reason to err. */
typedef tpudistResult_t (*tdCreateJob)(tdComm *c, const tpudistConfig_t *uc, void *arg, char *err);
/* The one way communicators are created. blocking: runs job here; on success c becomes live and
 * *out = c; on failure c is freed and the error recorded (on c->parent if set, else the thread's).
 * Non-blocking: c becomes live at once in state tpudistInProgress, *out = c, the job runs on a
 * helper thread and publishes its result in c->create_state (tpudistCommGetAsyncError); returns
 * tpudistInProgress. Takes ownership of arg (freed with free()) and copies uc. c->parent, if set,
 * is held (in a call, async_children) until the job ends. */
tpudistResult_t commCreate(tdComm *c, int blocking, const tpudistConfig_t *uc, tdCreateJob job,
                           void *arg, const char *fn, tpudistComm_t *out);
/* Waits for c's creation job (if any) to end and reclaims its thread. */
void commCreateJoin(tdComm *c);
/* 1 if config asks for non-blocking creation (config.blocking == 0); NULL config: parent's
 * (NULL parent: blocking). */
int commConfigNonBlocking(const tpudistConfig_t *uc, const tdComm *parent);
/* 1 if the caller's config struct (of uc->size bytes: older callers' are shorter) has field. */
#define TD_CONFIG_HAS(uc, field) \
  ((uc) && (uc)->size >= offsetof(tpudistConfig_t, field) + sizeof((uc)->field))
/* Checks a caller's config (magic, mode, blocking). */
tpudistResult_t commCheckConfig(const tpudistConfig_t *uc, char *err);
/* config.timeoutMs when set, else 0. */
int commConfigTimeout(const tpudistConfig_t *uc);
/* Split's creation: c (nranks, rank and timeout set) over parent's bootstrap channel for the
 * members (parent ranks, in new rank order); collective over the members; tag distinguishes
 * concurrent splits. */
tpudistResult_t commSplitCreate(tdComm *parent, tdComm *c, const int *members, uint64_t tag,
                                const tpudistConfig_t *uc, char *err);
/* Shrink's creation: the same over the lineage's first channel, meeting at the agreement
 * listeners (bootstrapShrinkSplit), which a failed communicator keeps; members are ranks of that
 * channel; every wait watches abort. */
tpudistResult_t commShrinkCreate(const tdLineage *l, tdComm *c, const int *members, uint64_t tag,
                                 volatile int *abort, const tpudistConfig_t *uc, char *err);
/* A new communicator of nranks members through rj's rendezvous (tpudistCommReconfigure);
 * timeout_ms > 0 bounds it (else the config's or the default). */
struct tdReconfJoin;
tpudistResult_t commInitReconf(tpudistComm_t *out, int nranks, int rank,
                               const struct tdReconfJoin *rj, int timeout_ms,
                               const tpudistConfig_t *uc);

/* ---- the line of shrinks (lineage.c) ---- */
/* The line a shrink of c agrees on: c's lineage, or c itself as the first of its line (then a view
 * of c with the identity map and a new sequence number). *owned: what to free afterwards. */
tpudistResult_t lineageView(tdComm *c, tdLineage *v, int **owned);
/* The lineage of a communicator made from view v with members (n ranks of v's channel). */
tpudistResult_t lineageMake(const tdLineage *v, const int *members, int n, tdLineage **out,
                            char *err);
/* Frees a lineage (NULL: nothing). */
void lineageFree(tdLineage *l);

/* ---- health queries (comm_status.c) ---- */
/* For a communicator created from a TPU_DIST_COMM_ID id with TPU_DIST_STATUS=1: starts answering
 * tpudist-info --status (rank 0 on the job's address, every rank on its own listener, whose
 * address this exchanges over the bootstrap). Nothing otherwise. */
tpudistResult_t commStatusStart(tdComm *c, char *err);
/* Stops the server and joins its thread (within about 20 ms). */
void commStatusStop(tdComm *c);

/* ---- errors (rt_error.h) ---- */
/* comm's error recorder, or NULL (the thread's) without a communicator. */
static inline tdErrRec *commErrors(tdComm *comm) {
  return comm ? &comm->net.err : NULL;
}
/* Records (and logs, once) an error for comm (NULL: the thread's); evaluates to res. */
#define commError(comm, res, ...) errRecordf(commErrors(comm), TD_SUBSYS_COLL, (res), __VA_ARGS__)
/* As commError with an already formatted message. */
static inline tpudistResult_t commErrorMsg(tdComm *comm, tpudistResult_t res, const char *msg) {
  return errRecord(commErrors(comm), TD_SUBSYS_COLL, res, msg);
}

/* ---- selection (comm_select.c) ---- */
/* comm_host.c: this process's placement (once per process) and the communicator's piece size. */
tpudistResult_t commHostInit(tdComm *c, char *err);
/* The NUMA level of the communicator's flat one-host topology from the nodes its ranks were placed
 * on, exchanged over the bootstrap channel, and the host's factor across those nodes (docs/host.md,
 * "NUMA level"); leaves the topology as it is when there is none. Fails only when the exchange
 * does. */
tpudistResult_t commNumaLevel(tdComm *c, char *err);
tpudistResult_t commSelectInit(tdComm *comm, char *err);
int commSelectCandidates(tdComm *comm, tdColl coll, uint64_t bytes, const char **names, int max);
void commSelectFree(tdComm *comm);

/* ---- schedules (comm_sched.c) ---- */
/* The schedule for (coll, root, inplace) at bytes: the first candidate that accepts the shape,
 * cached. *algo names it. */
tpudistResult_t commGetSched(tdComm *comm, tdColl coll, int root, int inplace, uint64_t count,
                             uint64_t bytes, uint32_t esize, const tdSched **out, char *err);
/* Generates the all-to-all-v schedule for the exchanged matrix into s (not cached). */
tpudistResult_t commGenAlltoallv(tdComm *comm, const uint64_t *matrix, const uint64_t *sdispls,
                                 const uint64_t *rdispls, uint32_t esize, tdSched *s, char *err);
/* The single-phase all-to-all-v schedule (comm->a2av_local) for this rank's send counts (row),
 * receive counts (column) and displacements, into *s: a copy of the communicator's plan whose
 * INPUT/OUTPUT layouts point at these arrays, which must outlive it; nothing of s is to be freed.
 */
tpudistResult_t commAlltoallvLocal(tdComm *comm, uint64_t *sendcounts, uint64_t *recvcounts,
                                   uint64_t *sdispls, uint64_t *rdispls, tdSched *s, char *err);
void commSchedFree(tdComm *comm);

/* ---- groups (group.c) ---- */
int groupActive(void);
/* Adds op to the thread's group (queued at GroupEnd). release: the call had a NULL request
 * (GroupEnd waits for op and releases it); at_call: op completes before GroupEnd returns (the
 * issuer's rule: debug mode's collectives). */
tpudistResult_t groupAdd(tdOp *op, int release, int at_call);

/* ---- TPU_DIST_CHECK (check.c) ---- */
/* Prepends the signature exchange to a collective op (after its fields are set, op->phase
 * included); user_op is the reduction op as called (-1 for none). The exchange runs first and its
 * phase callback (checkVerify) installs the real plan. */
tpudistResult_t checkPrepare(tdComm *c, tdOp *op, int user_op, char *err);

/* As checkPrepare, with real_seq as the real plan's sequence number (reserved by the caller). */
tpudistResult_t checkPrepareSeq(tdComm *c, tdOp *op, int user_op, uint64_t real_seq, char *err);

/* ---- defer mode (defer.c) ---- */
/* What asks for a flush (shown in divergence reports). */
typedef enum {
  TD_FLUSH_WAIT = 1,
  TD_FLUSH_TEST,
  TD_FLUSH_CALL, /* a blocking or not deferrable call */
  TD_FLUSH_GROUP,
  TD_FLUSH_OPS,
  TD_FLUSH_BYTES,
  TD_FLUSH_DESTROY,
  TD_FLUSH_TIMER
} tdDeferTrigger;
/* Sets up defer mode's hooks and the all-gather plan (defer mode or TPU_DIST_CHECK). */
tpudistResult_t deferInit(tdComm *c, char *err);
/* Releases what d holds (its scratch lists, pooled buffers and host scratch; again: nothing); its
 * counters stay. */
void deferFree(tdDefer *d);
/* 1 if a collective called with req on c outside a group is deferred (defer mode, a request;
 * inside a group nothing is deferred: the caller asks groupActive first). */
int deferApplies(const tdComm *c, tdColl coll, const tpudistRequest_t *req);
/* Queues op (all fields set, no check phase yet) as deferred; bytes as selection counts them. */
void deferAdd(tdComm *c, tdOp *op, uint64_t bytes);
/* Flushes every deferred operation of c and waits until they have all started (bounded). */
tpudistResult_t deferFlush(tdComm *c, tdDeferTrigger why);
/* A wait or test on op: if it is still deferred, a flush of everything deferred starts. */
void deferTouch(tdOp *op, tdDeferTrigger why);

/* ---- all-to-all-v (api_p2p.c) ---- */
/* Phase callback of a two-phase all-to-all-v: after the counts exchange, the data plan. */
tpudistResult_t collAlltoallvData(tdOp *op, char *err);

/* ---- issuing (request.c) ---- */
/* Issues op: in a group it is deferred; otherwise queued; with req NULL waits and releases it. */
tpudistResult_t commIssue(tdOp *op, tpudistRequest_t *req);

#endif /* TD_COMM_H_ */
