/*
 * exec.c - the progress engine: the per-communicator operation queue (batches in issue order),
 * one progress pass (transports, then the active batch), waits that progress inline with a
 * spin / sched_yield / nanosleep backoff and a timeout, the background progress thread, drain and
 * abort, and the operation free list (operations, their step state, transfers and scratch are
 * reused, so the hot path neither allocates nor first-touches memory).
 */
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "comm_priv.h"
#include "kernels.h"
#include "log.h"
#include "registry.h"

uint64_t execNowNs(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Millisecond-grained clock for progress timestamps and timeouts: cheaper than execNowNs on
 * every pass of a wait. */
uint64_t execCoarseNs(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void execBackoffInit(tdBackoff *b, int spin_us) {
  b->idle_since_ns = 0;
  b->spin_us = spin_us < 0 ? 0 : spin_us;
}

/* Spin for spin_us after the last progress, then yield for 2 ms, then sleep in short naps. */
void execBackoff(tdBackoff *b, int progressed) {
  if (progressed) { /* the idle period starts at the next idle pass: no clock read here */
    b->idle_since_ns = 0;
    return;
  }
  uint64_t now = execNowNs();
  if (!b->idle_since_ns) {
    b->idle_since_ns = now;
    return;
  }
  uint64_t idle = now - b->idle_since_ns, spin = (uint64_t)b->spin_us * 1000;
  if (idle < spin) return;
  if (idle < spin + 2000000ull) {
    sched_yield();
    return;
  }
  struct timespec ts = {0, idle < 50000000ull ? 20000 : 200000};
  nanosleep(&ts, NULL);
}

/* ---- operation objects ------------------------------------------------------------------- */

tdOp *execOpAlloc(tdComm *comm) {
  struct tdCommPriv *p = comm->priv;
  pthread_mutex_lock(&p->lock);
  tdOp *op = p->free_ops;
  if (op) {
    p->free_ops = op->next;
  } else if ((op = calloc(1, sizeof(*op))) != NULL) {
    op->all_next = p->all_ops;
    p->all_ops = op;
  }
  pthread_mutex_unlock(&p->lock);
  if (!op) return NULL;
  op->magic = TD_OP_MAGIC;
  op->comm = comm;
  op->queued = op->started = op->done = 0;
  op->result = tpudistSuccess;
  op->source = -1;
  op->next = NULL;
  op->sched = NULL;
  op->owns_sched = 0;
  op->algo = NULL;
  op->avg = 0;
  op->avg_count = 0;
  op->vphase = 0;
  op->vlocal = 0;
  op->vres = tpudistSuccess;
  op->chk_phase = 0;
  op->nxfers = 0;
  op->inflight = 0;
  memset(op->bufs, 0, sizeof(op->bufs));
  return op;
}

void execOpRelease(tdOp *op) {
  tdComm *comm = op->comm;
  struct tdCommPriv *p = comm->priv;
  pthread_mutex_lock(&p->lock);
  if (op->owns_sched) schedFree(&op->own_sched);
  op->owns_sched = 0;
  op->magic = TD_OP_FREED;
  /* A failed operation may still have transfers inside a transport: never reuse it. */
  if (op->done && (op->result == tpudistSuccess || op->inflight == 0) && !op->queued) {
    op->next = p->free_ops;
    p->free_ops = op;
  }
  pthread_mutex_unlock(&p->lock);
}

static void opFreeMem(tdOp *op) {
  if (op->owns_sched) schedFree(&op->own_sched);
  free(op->rt);
  free(op->xfers);
  free(op->scratch);
  free(op->vbuf);
  free(op->chk_buf);
  free(op);
}

void execCommFree(tdComm *comm) {
  struct tdCommPriv *p = comm->priv;
  tdOp *op = p->all_ops;
  while (op) {
    tdOp *n = op->all_next;
    opFreeMem(op);
    op = n;
  }
  p->all_ops = p->free_ops = p->head = p->tail = NULL;
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

void execFailLocked(tdComm *comm, tpudistResult_t res, const char *msg) {
  struct tdCommPriv *p = comm->priv;
  if (!p->broken) {
    p->broken = 1;
    if (p->async_error == tpudistSuccess) p->async_error = res;
    if (msg) commErrorMsg(comm, res, msg);
    flightDump(comm, tpudistGetErrorString(res));
    /* Peers waiting on this rank learn of the failure now, not at their timeout. */
    transportReleaseAll(comm);
  }
  for (tdOp *op = p->head; op; op = op->next) {
    op->queued = 0;
    if (!op->done) opFinish(op, res);
  }
  p->head = p->tail = NULL;
  pthread_cond_broadcast(&p->cond);
}

void execEnqueue(tdComm *comm, tdOp **ops, int n, int will_wait) {
  struct tdCommPriv *p = comm->priv;
  pthread_mutex_lock(&p->lock);
  uint64_t batch = ++p->batch_seq;
  if (!p->head) p->last_progress_ns = execCoarseNs();
  for (int i = 0; i < n; i++) {
    tdOp *op = ops[i];
    op->batch = batch;
    op->next = NULL;
    flightRecord(comm, op);
    if (p->broken || comm->aborted) {
      opFinish(op, comm->aborted ? tpudistAborted : p->async_error);
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
  pthread_mutex_unlock(&p->lock);
}

static tpudistResult_t opStart(tdOp *op, char *err) {
  op->started = 1;
  if (op->kind == TD_OP_COLL) return execCollStart(op, err);
  if (op->kind == TD_OP_SMALL) {
    execSmallStart(op);
    return tpudistSuccess;
  }
  tdXfer *x = &op->p2p;
  x->done = 0;
  x->result = tpudistSuccess;
  x->source = -1;
  x->next = NULL;
  op->inflight = 1;
  tpudistResult_t r =
      op->kind == TD_OP_SEND ? execPostSend(op->comm, x) : execPostRecv(op->comm, x);
  if (r != tpudistSuccess)
    return tdErr(err, r, "%s to/from rank %d: the transport refused it (%s)", opName(op), x->peer,
                 op->comm->last_error);
  return r;
}

static tpudistResult_t opProgress(tdOp *op, int *progressed, char *err) {
  if (op->kind == TD_OP_COLL) return execCollProgress(op, progressed, err);
  if (op->kind == TD_OP_SMALL) return execSmallProgress(op, progressed, err);
  if (!op->p2p.done) return tpudistSuccess;
  __atomic_thread_fence(__ATOMIC_ACQUIRE);
  op->inflight = 0;
  op->source = op->p2p.source;
  *progressed = 1;
  opFinish(op, op->p2p.result);
  if (op->p2p.result != tpudistSuccess)
    return tdErr(err, op->p2p.result, "%s with rank %d failed (%s)", opName(op), op->p2p.peer,
                 op->comm->last_error);
  return tpudistSuccess;
}

/* Progresses the operations of the head batch; unlinks finished ones. Lock held. */
static int batchProgress(tdComm *comm) {
  struct tdCommPriv *p = comm->priv;
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
      snprintf(msg, sizeof(msg), "%s seq %llu: %s", opName(op), (unsigned long long)op->seq, err);
      execFailLocked(comm, r, msg);
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
      progressed = 1;
    } else {
      prev = op;
    }
    op = next;
  }
  return progressed;
}

static void timeoutFail(tdComm *comm, uint64_t idle_ns) {
  tdOp *op = comm->priv->head;
  char what[400] = "";
  if (op->kind == TD_OP_COLL)
    execCollDescribe(op, what, sizeof(what));
  else if (op->kind == TD_OP_SMALL)
    execSmallDescribe(op, what, sizeof(what));
  else
    snprintf(what, sizeof(what), "waiting for rank %d", op->p2p.peer);
  char msg[TD_ERRLEN + 512];
  snprintf(msg, sizeof(msg), "%s seq %llu timed out after %llu ms without progress: %s", opName(op),
           (unsigned long long)op->seq, (unsigned long long)(idle_ns / 1000000), what);
  /* the whole description in the log; last_error keeps what fits (logged once: same text) */
  TD_ERROR(TD_SUBSYS_EXEC, "%s rank %d: %s", comm->name, comm->rank, msg);
  snprintf(comm->last_error, sizeof(comm->last_error), "%.*s", (int)sizeof(comm->last_error) - 1,
           msg);
  execFailLocked(comm, tpudistTimeout, comm->last_error);
}

int execProgressLocked(tdComm *comm) {
  struct tdCommPriv *p = comm->priv;
  if (p->broken || comm->aborted) return 0;
  int progressed = 0;
  tpudistResult_t r = transportProgressAll(comm, &progressed);
  if (r != tpudistSuccess) {
    /* the transport logged the cause; record it without logging it again */
    char msg[TD_ERRLEN + 32];
    snprintf(msg, sizeof(msg), "transport failure: %s", comm->last_error);
    snprintf(comm->last_error, sizeof(comm->last_error), "%.*s", (int)sizeof(comm->last_error) - 1,
             msg);
    execFailLocked(comm, r, comm->last_error);
    return 1;
  }
  for (int round = 0; round < 2 && p->head; round++) {
    uint64_t batch = p->head->batch;
    if (batchProgress(comm)) progressed = 1;
    if (!p->head || p->head->batch == batch) break;
  }
  uint64_t now = execCoarseNs();
  if (progressed || !p->head) {
    p->last_progress_ns = now;
  } else if (now - p->last_progress_ns > (uint64_t)comm->timeout_ms * 1000000ull) {
    timeoutFail(comm, now - p->last_progress_ns);
    progressed = 1;
  }
  return progressed;
}

tpudistResult_t execPostSend(tdComm *comm, tdXfer *x) {
  return transportPostSend(comm, x);
}
tpudistResult_t execPostRecv(tdComm *comm, tdXfer *x) {
  return transportPostRecv(comm, x);
}
