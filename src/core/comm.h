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

typedef struct tdComm {
  tdNet net;   /* what the transports and the executor see */
  tdExec exec; /* the executor */
  tdTopo topo;
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
  /* fault tolerance (comm_shrink.c) */
  uint32_t shrink_seq;    /* shrinks started on this communicator (same on every survivor) */
  uint8_t *agreed_failed; /* nranks flags: the failed set of the last agreement, or NULL */
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

/* ---- registry of live communicators (comm.c) ---- */
/* Enters an API call on comm: checks that comm is live and not aborted; counts the call. */
tpudistResult_t commEnter(tdComm *comm, const char *fn);
void commLeave(tdComm *comm);

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

/* ---- split (comm.c) ---- */
/* The communicator of the members (parent ranks, in new rank order) over parent's bootstrap
 * channel; collective over the members; tag distinguishes concurrent splits. shrink: meet at the
 * agreement listeners (bootstrapShrinkSplit), which a failed parent keeps. */
tpudistResult_t commSplitCreate(tdComm *parent, int n, int newrank, const int *members,
                                uint64_t tag, int shrink, const tpudistConfig_t *uc, tdComm **out,
                                char *err);

/* ---- selection (comm_select.c) ---- */
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
/* Adds op to the thread's group (queued at GroupEnd); wait_at_end: NULL request given. */
tpudistResult_t groupAdd(tdOp *op, int wait_at_end);

/* ---- TPU_DIST_CHECK (check.c) ---- */
/* Prepends the signature exchange to a collective op (after its fields are set, op->phase
 * included); user_op is the reduction op as called (-1 for none). The exchange runs first and its
 * phase callback (checkVerify) installs the real plan. */
tpudistResult_t checkPrepare(tdComm *c, tdOp *op, int user_op, char *err);

/* ---- all-to-all-v (api_p2p.c) ---- */
/* Phase callback of a two-phase all-to-all-v: after the counts exchange, the data plan. */
tpudistResult_t collAlltoallvData(tdOp *op, char *err);

/* ---- issuing (api_coll.c / request.c) ---- */
/* 1 if op completes before its call returns (debug mode, collectives). */
int commCompletesAtCall(const tdOp *op);
/* Issues op: in a group it is deferred; otherwise queued; with req NULL waits and releases it. */
tpudistResult_t commIssue(tdOp *op, tpudistRequest_t *req);

#endif /* TD_COMM_H_ */
