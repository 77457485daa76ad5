/*
 * exec.c - the progress engine: the per-communicator operation queue (batches in issue order),
 * one progress pass (transports, then the active batch), waits that progress inline with a
 * spin / sched_yield / nanosleep back-off (rt_clock.h) and a timeout, drain and abort, and the
 * operation free list (operations, their step state, transfers and scratch are
 * reused, so the hot path neither allocates nor first-touches memory).
 */
#include "exec.h"

#include <stdlib.h>
#include <string.h>

#include "kernels.h"
#include "registry.h"
#include "rt_log.h"

/* ---- operation objects ------------------------------------------------------------------- */

/* The body of execOpAllocLocked, inlined into execOpAlloc (one call less per operation). */
static inline tdOp *opAllocLocked(tdExec *ex) {
  tdOp *op = ex->free_ops;
  if (op) {
    ex->free_ops = op->next;
  } else if ((op = calloc(1, sizeof(*op))) != NULL) {
    op->all_next = ex->all_ops;
    ex->all_ops = op;
  }
  if (!op) return NULL;
  op->magic = TD_OP_MAGIC;
  op->ex = ex;
  op->net = ex->net;
  op->queued = op->started = op->done = 0;
  op->result = tpudistSuccess;
  op->source = -1;
  op->next = NULL;
  op->sched = NULL;
  op->owns_sched = 0;
  op->algo = NULL;
  op->avg = 0;
  op->avg_count = 0;
  op->phase = NULL;
  op->vphase = 0;
  op->vlocal = 0;
  op->vres = tpudistSuccess;
  op->chk_phase = 0;
  op->nxfers = 0;
  op->inflight = 0;
  op->deferred = op->internal = 0;
  op->label = NULL;
  op->settle = 0;
  op->user_op = -1;
  op->members = NULL;
  op->parted = 0;
  op->nparts = op->npieces = 0;
  memset(op->bufs, 0, sizeof(op->bufs));
  return op;
}

tdOp *execOpAllocLocked(tdExec *ex) {
  return opAllocLocked(ex);
}

tdOp *execOpAlloc(tdExec *ex) {
  pthread_mutex_lock(&ex->lock);
  tdOp *op = opAllocLocked(ex);
  pthread_mutex_unlock(&ex->lock);
  return op;
}

/* Back to the free list, unless transfers of a failed operation may still reference it. Lock held.
 */
static inline void releaseLocked(tdOp *op) {
  tdExec *p = op->ex;
  if (op->owns_sched) schedFree(&op->own_sched);
  op->owns_sched = 0;
  op->magic = TD_OP_FREED;
  if (op->done && (op->result == tpudistSuccess || op->inflight == 0) && !op->queued) {
    op->next = p->free_ops;
    p->free_ops = op;
  }
}

void execOpRelease(tdOp *op) {
  tdExec *p = op->ex;
  pthread_mutex_lock(&p->lock);
  releaseLocked(op);
  pthread_mutex_unlock(&p->lock);
}

static void opFreeMem(tdOp *op) {
  if (op->owns_sched) schedFree(&op->own_sched);
  free(op->rt);
  free(op->xfers);
  free(op->scratch);
  free(op->vbuf);
  free(op->chk_buf);
  free(op->pack);
  free(op->parts);
  free(op->pieces);
  free(op);
}

void execFree(tdExec *ex) {
  tdOp *op = ex->all_ops;
  while (op) {
    tdOp *n = op->all_next;
    opFreeMem(op);
    op = n;
  }
  ex->all_ops = ex->free_ops = ex->head = ex->tail = ex->dhead = ex->dtail = NULL;
  flightFree(ex);
  free(ex->ord_send);
  free(ex->ord_recv);
  ex->ord_send = ex->ord_recv = NULL;
  if (ex->net) { /* initialised */
    pthread_mutex_destroy(&ex->lock);
    pthread_cond_destroy(&ex->cond);
    ex->net = NULL;
  }
}

tpudistResult_t execAsyncError(tdExec *ex) {
  pthread_mutex_lock(&ex->lock);
  tpudistResult_t r = ex->async_error;
  pthread_mutex_unlock(&ex->lock);
  return r;
}

/* ---- queue ------------------------------------------------------------------------------- */

static const char *opName(const tdOp *op) {
  return op->kind == TD_OP_SEND   ? "send"
         : op->kind == TD_OP_RECV ? "recv"
                                  : schedCollName(op->coll);
}

static void opFinish(tdOp *op, tpudistResult_t res) {
  op->result = res;
  op->done = 1;
}

/* An operation has left the queue done: a fused host completes its members, and what the library
 * issued itself goes back to the free list. Lock held; op->next is not read afterwards. */
static tpudistResult_t opEnded(tdExec *ex, tdOp *op, char *err) {
  tpudistResult_t r = op->settle && ex->on_settle ? ex->on_settle(op, err) : tpudistSuccess;
  if (op->internal) releaseLocked(op);
  return r;
}

void execFailAllLocked(tdExec *ex, tpudistResult_t res) {
  tdOp *op = ex->head;
  ex->head = ex->tail = NULL;
  while (op) {
    tdOp *next = op->next;
    op->queued = 0;
    if (!op->done) opFinish(op, res);
    opEnded(ex, op, NULL);
    op = next;
  }
  for (op = ex->dhead; op; op = op->next) {
    op->deferred = 0;
    if (!op->done) opFinish(op, res);
  }
  ex->dhead = ex->dtail = NULL;
  ex->dagree = 0;
  ex->timer_ns = 0;
  pthread_cond_broadcast(&ex->cond);
}

void execFailLocked(tdExec *ex, tpudistResult_t res, const char *msg) {
  tdExec *p = ex;
  if (!p->broken) {
    p->broken = 1;
    if (p->async_error == tpudistSuccess) p->async_error = res;
    if (msg) errRecord(&ex->net->err, TD_SUBSYS_COLL, res, msg);
    flightDump(ex, tpudistGetErrorString(res));
    /* Peers waiting on this rank learn of the failure now, not at their timeout. */
    transportReleaseAll(ex->net);
  }
  execFailAllLocked(ex, res);
}

/* The body of execEnqueueLocked, inlined into execEnqueue (one call less per operation). */
static inline void enqueueLocked(tdExec *ex, tdOp **ops, int n, int will_wait) {
  tdExec *p = ex;
  tdNet *comm = ex->net;
  uint64_t batch = ++p->batch_seq;
  if (!p->head) p->last_progress_ns = clockCoarseNs();
  for (int i = 0; i < n; i++) {
    tdOp *op = ops[i];
    op->batch = batch;
    op->next = NULL;
    flightRecord(ex, op);
    if (p->broken || comm->aborted) {
      opFinish(op, comm->aborted ? tpudistAborted : p->async_error);
      opEnded(ex, op, NULL);
      continue;
    }
    op->queued = 1;
    if (p->tail)
      p->tail->next = op;
    else
      p->head = op;
    p->tail = op;
  }
  if (p->waiters == 0 && !will_wait) pthread_cond_signal(&p->cond);
}

void execEnqueueLocked(tdExec *ex, tdOp **ops, int n, int will_wait) {
  enqueueLocked(ex, ops, n, will_wait);
}

void execEnqueue(tdExec *ex, tdOp **ops, int n, int will_wait) {
  pthread_mutex_lock(&ex->lock);
  enqueueLocked(ex, ops, n, will_wait);
  pthread_mutex_unlock(&ex->lock);
}

const tdOpKindOps *const execOpKinds[] = {[TD_OP_COLL] = &execCollOps,
                                          [TD_OP_SEND] = &execP2pOps,
                                          [TD_OP_RECV] = &execP2pOps,
                                          [TD_OP_SMALL] = &execSmallOps};

static tpudistResult_t opStart(tdOp *op, char *err) {
  op->started = 1;
  return execOpKinds[op->kind]->start(op, err);
}

static tpudistResult_t opProgress(tdOp *op, int *progressed, char *err) {
  return execOpKinds[op->kind]->progress(op, progressed, err);
}

/* Progresses the operations of the head batch; unlinks finished ones. Lock held. */
static int batchProgress(tdExec *ex) {
  tdExec *p = ex;
  char err[TD_ERRLEN] = "";
  int progressed = 0;
  uint64_t batch = p->head->batch;
  tdOp *prev = NULL, *op = p->head;
  while (op && op->batch == batch) {
    tpudistResult_t r = tpudistSuccess;
    if (!op->started) {
      r = opStart(op, err);
      progressed = 1;
    }
    if (r == tpudistSuccess) r = opProgress(op, &progressed, err);
    if (r != tpudistSuccess) {
      char msg[TD_ERRLEN + 64];
      if (op->label)
        snprintf(msg, sizeof(msg), "%s: %s", op->label, err);
      else
        snprintf(msg, sizeof(msg), "%s seq %llu: %s", opName(op), (unsigned long long)op->seq, err);
      execFailLocked(ex, r, msg);
      return 1;
    }
    tdOp *next = op->next;
    if (op->done) {
      op->queued = 0;
      if (prev)
        prev->next = next;
      else
        p->head = next;
      if (p->tail == op) p->tail = prev;
      const char *label = op->label;
      if ((r = opEnded(ex, op, err)) != tpudistSuccess) {
        char msg[TD_ERRLEN + 64];
        snprintf(msg, sizeof(msg), "%s: %s", label ? label : opName(op), err);
        execFailLocked(ex, r, msg);
        return 1;
      }
      progressed = 1;
    } else {
      prev = op;
    }
    op = next;
  }
  return progressed;
}

static void timeoutFail(tdExec *ex, uint64_t idle_ns) {
  tdNet *comm = ex->net;
  tdOp *op = ex->head;
  char what[400] = "";
  execOpKinds[op->kind]->describe(op, what, sizeof(what));
  char msg[TD_ERRLEN + 512], name[64];
  if (op->label)
    snprintf(name, sizeof(name), "%s", op->label);
  else
    snprintf(name, sizeof(name), "%s seq %llu", opName(op), (unsigned long long)op->seq);
  snprintf(msg, sizeof(msg), "%s timed out after %llu ms without progress: %s", name,
           (unsigned long long)(idle_ns / 1000000), what);
  /* the whole description in the log; the recorded error keeps what fits (not logged again) */
  TD_ERROR(TD_SUBSYS_EXEC, "%s rank %d: %s", comm->name, comm->rank, msg);
  errNote(&comm->err, "%.*s", TD_ERRLEN - 1, msg);
  execFailLocked(ex, tpudistTimeout, comm->err.msg);
}

int execProgressLocked(tdExec *ex) {
  tdExec *p = ex;
  tdNet *comm = ex->net;
  if (p->broken || comm->aborted) return 0;
  int progressed = 0;
  if (p->timer_ns && clockNowNs() >= p->timer_ns) { /* defer mode: a flush is due */
    p->timer_ns = 0;
    if (p->on_timer) p->on_timer(p);
    progressed = 1;
  }
  tpudistResult_t r = transportProgressAll(comm, &progressed);
  if (r != tpudistSuccess) {
    /* the transport logged the cause; record it without logging it again */
    char cause[TD_ERRLEN];
    snprintf(cause, sizeof(cause), "%s", comm->err.msg);
    errNote(&comm->err, "transport failure: %s", cause);
    execFailLocked(ex, r, comm->err.msg);
    return 1;
  }
  for (int round = 0; round < 2 && p->head; round++) {
    uint64_t batch = p->head->batch;
    if (batchProgress(ex)) progressed = 1;
    if (!p->head || p->head->batch == batch) break;
  }
  uint64_t now = clockCoarseNs();
  if (progressed || !p->head) {
    p->last_progress_ns = now;
  } else if (now - p->last_progress_ns > (uint64_t)netTimeoutMs(comm) * 1000000ull) {
    timeoutFail(ex, now - p->last_progress_ns);
    progressed = 1;
  }
  return progressed;
}
