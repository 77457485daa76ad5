/*
 * comm_priv.h - src/core's private part of a communicator (struct tdCommPriv): the operation
 * queue and progress thread, the schedule cache, the selection table, the sequence numbers, the
 * asynchronous error. Also the helpers the API files share (live-communicator registry, error
 * recording, schedule lookup).
 */
#ifndef TD_COMM_PRIV_H_
#define TD_COMM_PRIV_H_

#include <pthread.h>

#include "comm.h"
#include "exec.h"
#include "select.h"

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

struct tdCommPriv {
  pthread_mutex_t lock;
  pthread_cond_t cond;
  pthread_t thread;
  int thread_started, stop, waiters;
  tdOp *head, *tail; /* queue, issue order */
  tdOp *free_ops;
  tdOp *all_ops;
  uint64_t coll_seq, batch_seq, split_seq;
  uint64_t small_seq; /* slot all-reduces issued (exec_small.c) */
  int small_reach;    /* every peer reached through shm slots: -1 not known yet, 0, 1 */
  uint64_t last_progress_ns;
  tpudistResult_t async_error;
  int broken;
  uint32_t *ord_send, *ord_recv; /* nranks counters used while binding (tdOrdCount) */
  /* selection */
  tdSelectTable *select;
  /* all-to-all-v in one phase with this algorithm (selected at every size and TD_ALGO_V_LOCAL),
   * or NULL: counts exchange first (comm_select.c); its plan, generated at the first call */
  const char *a2av_local;
  tdSched a2av_plan;
  int a2av_plan_ok;
  /* schedule cache */
  tdSchedEntry **cache;
  int ncache, cache_cap;
  tdSchedMemo last_sched[TD_NUM_COLLS]; /* per collective: the last lookup and its answer */
  tdSched *file_scheds;                 /* TPU_DIST_SCHED_FILE */
  int nfile_scheds;
  volatile int in_calls;
  int destroyed;
  struct tdFlight *flight; /* flight recorder (flight.c) */
  /* waits spin this long before yielding (0 when ranks outnumber cores) */
  int spin_us;
};

/* ---- registry of live communicators (comm.c) ---- */
/* Enters an API call on comm: checks that comm is live and not aborted; counts the call. */
tpudistResult_t commEnter(tdComm *comm, const char *fn);
void commLeave(tdComm *comm);

/* ---- errors (errors.c) ---- */
/* Records (and logs, once) an error for comm (NULL: the thread's), returns res. */
tpudistResult_t commError(tdComm *comm, tpudistResult_t res, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* As commError with an already formatted message. */
tpudistResult_t commErrorMsg(tdComm *comm, tpudistResult_t res, const char *msg);

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
/* The single-phase all-to-all-v schedule (priv->a2av_local) for this rank's send counts (row),
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
/* Prepends the signature exchange to a collective op (after its fields are set); user_op is
 * the reduction op as called (-1 for none). */
tpudistResult_t checkPrepare(tdComm *c, tdOp *op, int user_op, char *err);

/* ---- flight recorder (flight.c) ---- */
tpudistResult_t flightInit(tdComm *comm);
void flightFree(tdComm *comm);
/* Records op as it is queued (lock held). */
void flightRecord(tdComm *comm, const tdOp *op);
/* Logs the recorded operations with their state (lock held). */
void flightDump(tdComm *comm, const char *why);

/* ---- issuing (api_coll.c / request.c) ---- */
/* Issues op: in a group it is deferred; otherwise queued; with req NULL waits and releases it. */
tpudistResult_t commIssue(tdOp *op, tpudistRequest_t *req);

#endif /* TD_COMM_PRIV_H_ */
