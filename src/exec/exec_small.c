/*
 * exec_small.c - latency-bound all-reduces, all-gathers and all-to-alls among ranks that all share
 * this host, through the shm transport's slots (src/transport/shm/shm_slots.c) instead of a
 * schedule.
 *
 * Algorithm (one shot): every rank copies what each other rank needs into its slot for that rank
 * (the flag travels with the data): its whole input for all-reduce, its block for all-gather,
 * block p of its input for rank p in all-to-all. It reads every other rank's payload in place:
 * all-gather and all-to-all copy it into output block p and acknowledge it at once; all-reduce
 * waits for all of them and reduces them in rank order (rank 0's, then 1's, ...), so every rank
 * computes the same bits, then acknowledges them. Cost: one cache-line transfer each way for
 * payloads up to 56 bytes, n - 1 writes and n - 1 reads per rank, no executor steps, pieces, ring
 * records or descriptors.
 *
 * Why not a schedule: binding and progressing even the recursive-doubling plan costs several times
 * what this path costs per call (docs/results/design-choices.md, "The slot path").
 *
 * When (execSmallEligible, identical on every rank): a payload per peer of 1..TPU_DIST_SMALL_BYTES
 * bytes (at most a slot, 2104 bytes), 2..8 ranks all reached through shm; src/core also skips it
 * under the signature check, TPU_DIST_SCHED_FILE or a TPU_DIST_ALGO override of that collective.
 * Slot sequence numbers count these operations per communicator in the order they start (the
 * queue's order, which is issue order outside defer mode), the same on every
 * rank.
 */
#include <string.h>

#include "exec.h"
#include "kernels.h"
#include "registry.h"
#include "shm_slots.h"

int execSmallEligible(tdExec *ex, tdColl coll, uint64_t bytes) {
  tdNet *comm = ex->net;
  const tdConfig *cfg = comm->cfg;
  tdExec *p = ex;
  if (coll != TD_COLL_ALLREDUCE && coll != TD_COLL_ALLGATHER && coll != TD_COLL_ALLTOALL) return 0;
  uint64_t payload = coll == TD_COLL_ALLREDUCE ? bytes : bytes / (uint64_t)comm->nranks;
  if (payload == 0 || payload > (uint64_t)cfg->small_bytes || payload > TD_SMALL_MAX_BYTES)
    return 0;
  if (p->small_reach < 0) /* the configuration and the peers' transports never change */
    p->small_reach = TD_SMALL_MAX_BYTES <= shmSlotMax() && comm->nranks <= TD_SMALL_MAX_RANKS &&
                     shmSlotsReachAll(comm);
  return p->small_reach;
}

/* Bytes of one block: the payload each peer gets (the whole input for all-reduce). */
static size_t blockBytes(const tdOp *op) {
  return op->n * op->esize;
}

/* What this rank sends rank r. */
static const void *payloadFor(const tdOp *op, int r) {
  if (op->coll == TD_COLL_ALLREDUCE) return op->small_in;
  if (op->coll == TD_COLL_ALLTOALL) return op->bufs[TD_BUF_INPUT] + (size_t)r * blockBytes(op);
  return op->bufs[TD_BUF_INPUT];
}

/* Takes a copy of the input (OUTPUT may be INPUT). */
static tpudistResult_t execSmallStart(tdOp *op, char *err) {
  (void)err; /* cannot fail */
  size_t b = blockBytes(op);
  op->small_seq = ++op->ex->small_seq; /* at start: the same order on every rank in every mode */
  char *own = op->bufs[TD_BUF_OUTPUT] + (size_t)op->net->rank * b;
  if (op->coll == TD_COLL_ALLREDUCE) /* OUTPUT may be INPUT: keep a copy to send and reduce */
    memcpy(op->small_in, op->bufs[TD_BUF_INPUT], b);
  else if (own != payloadFor(op, op->net->rank)) /* own block; in place it is already there */
    memcpy(own, payloadFor(op, op->net->rank), b);
  return tpudistSuccess;
}

void execSmallInit(tdOp *op) {
  op->kind = TD_OP_SMALL;
  op->small_written = op->small_arrived = 1u << op->net->rank;
  op->algo = "slots";
}

/* All payloads are here: reduce them in rank order into OUTPUT, then release the slots. */
static void smallReduce(tdOp *op) {
  tdNet *comm = op->net;
  size_t bytes = blockBytes(op);
  char *out = op->bufs[TD_BUF_OUTPUT];
  for (int r = 0; r < comm->nranks; r++) {
    const void *src = r == comm->rank ? op->small_in : op->small_src[r];
    if (r == 0)
      memcpy(out, src, bytes);
    else
      kernelReduce(out, out, src, op->n, (tpudistDataType_t)op->dtype, (tpudistRedOp_t)op->redop);
  }
  for (int r = 0; r < comm->nranks; r++)
    if (r != comm->rank) shmSlotAck(comm, r, op->small_seq);
  if (op->avg_count) kernelFinishAvg(out, op->avg_count, op->dtype, comm->nranks);
}

/* Rank r's payload has arrived: all-gather and all-to-all take it into output block r and free
 * the slot at once; all-reduce keeps it in place until every payload is there. */
static void smallArrived(tdOp *op, int r) {
  if (op->coll == TD_COLL_ALLREDUCE) return;
  size_t b = blockBytes(op);
  memcpy(op->bufs[TD_BUF_OUTPUT] + (size_t)r * b, op->small_src[r], b);
  shmSlotAck(op->net, r, op->small_seq);
}

static tpudistResult_t execSmallProgress(tdOp *op, int *progressed, char *err) {
  tdNet *comm = op->net;
  uint32_t all = comm->nranks >= 32 ? ~0u : (1u << comm->nranks) - 1;
  size_t bytes = blockBytes(op);
  for (int r = 0; r < comm->nranks; r++) {
    uint32_t bit = 1u << r;
    tpudistResult_t res = tpudistSuccess;
    if (!(op->small_written & bit)) {
      int written = 0;
      res = shmSlotWrite(comm, r, op->small_seq, payloadFor(op, r), bytes, &written);
      if (written) op->small_written |= bit, *progressed = 1;
    }
    if (res == tpudistSuccess && !(op->small_arrived & bit)) {
      res = shmSlotPeek(comm, r, op->small_seq, bytes, &op->small_src[r]);
      if (op->small_src[r]) {
        op->small_arrived |= bit;
        *progressed = 1;
        smallArrived(op, r);
      }
    }
    if (res != tpudistSuccess)
      return tdErr(err, res, "%s", comm->err.msg); /* names the rank and the cause */
  }
  if (op->small_written != all || op->small_arrived != all) return tpudistSuccess;
  if (op->coll == TD_COLL_ALLREDUCE) smallReduce(op);
  op->result = tpudistSuccess;
  op->done = 1;
  *progressed = 1;
  return tpudistSuccess;
}

static void execSmallDescribe(const tdOp *op, char *buf, size_t len) {
  for (int r = 0; r < op->net->nranks; r++) {
    uint32_t bit = 1u << r;
    if (!(op->small_arrived & bit)) {
      snprintf(buf, len, "small %s (slot sequence %llu) waiting for rank %d's payload",
               schedCollName(op->coll), (unsigned long long)op->small_seq, r);
      return;
    }
    if (!(op->small_written & bit)) {
      snprintf(buf, len, "small %s (slot sequence %llu) waiting for rank %d to free a slot",
               schedCollName(op->coll), (unsigned long long)op->small_seq, r);
      return;
    }
  }
  snprintf(buf, len, "nothing pending");
}

static int execSmallWaitPeer(const tdOp *op) {
  for (int r = 0; r < op->net->nranks; r++)
    if (!(op->small_arrived & (1u << r)) || !(op->small_written & (1u << r))) return r;
  return -1;
}

/* The inline loop of execSmallRun; lock held. Returns the result, err describing a failure. */
static tpudistResult_t smallLoop(tdOp *op, char *err) {
  tdNet *comm = op->net;
  tdExec *p = op->ex;
  tdBackoff bo;
  backoffInit(&bo, p->spin_us);
  uint64_t since = clockCoarseNs(), polled = since;
  for (;;) {
    int progressed = 0;
    if (p->broken) return p->async_error; /* revoked from another thread: transports may be gone */
    TD_CHECK(execSmallProgress(op, &progressed, err));
    if (op->done) return tpudistSuccess;
    if (comm->aborted) return tpudistAborted;
    uint64_t now = clockCoarseNs();
    if (progressed) since = now;
    if (now != polled) { /* once per clock tick: peer liveness and the other transports' work */
      int moved = 0;
      polled = now;
      if (transportProgressAll(comm, &moved) != tpudistSuccess)
        return tdErr(err, tpudistRemoteError, "transport failure: %s", comm->err.msg);
      if (now - since > (uint64_t)netTimeoutMs(comm) * 1000000ull) {
        char what[160];
        execSmallDescribe(op, what, sizeof(what));
        return tdErr(err, tpudistTimeout, "%s seq %llu timed out after %d ms: %s",
                     schedCollName(op->coll), (unsigned long long)op->seq, netTimeoutMs(comm),
                     what);
      }
    }
    pthread_mutex_unlock(&p->lock);
    backoffStep(&bo, progressed);
    pthread_mutex_lock(&p->lock);
  }
}

int execSmallRun(tdOp *op, tpudistResult_t *res) {
  tdNet *comm = op->net;
  tdExec *p = op->ex;
  pthread_mutex_lock(&p->lock);
  if (p->head || p->dhead || p->broken || comm->aborted) {
    pthread_mutex_unlock(&p->lock);
    return 0;
  }
  op->batch = ++p->batch_seq;
  flightRecord(p, op);
  op->started = 1;
  execSmallStart(op, NULL);
  p->waiters++; /* the progress thread stays asleep */
  char err[TD_ERRLEN] = "";
  tpudistResult_t r = smallLoop(op, err);
  p->waiters--;
  if (r != tpudistSuccess && r != tpudistAborted) execFailLocked(p, r, err);
  op->result = r;
  op->done = 1;
  pthread_mutex_unlock(&p->lock);
  *res = r;
  return 1;
}

const tdOpKindOps execSmallOps = {execSmallStart, execSmallProgress, execSmallDescribe,
                                  execSmallWaitPeer};
