/*
 * exec_flight.c - the flight recorder: each communicator keeps its last TPU_DIST_FLIGHT_RECORDS
 * operations (collective or point to point, sequence, count, datatype, algorithm, issue time) in
 * a ring, written when an operation is queued (one small copy under the lock the executor holds
 * anyway; nothing allocated on the hot path). When the communicator fails (timeout, dead peer,
 * mismatch), the ring is written to the log, oldest first, with each operation's state (done,
 * queued, running, failed) and, for the ones still running, what every stream waits for and a
 * per-peer summary of the pieces not yet received from or taken by that peer.
 */
#include <stdlib.h>
#include <string.h>

#include "exec.h"
#include "kernels.h"
#include "rt_log.h"

typedef struct {
  const tdOp *op;
  uint64_t batch, seq, count, t_ns;
  int kind, coll, dtype, root, peer;
  const char *algo;
} tdFlightRec;

struct tdFlight {
  int cap;
  uint64_t total; /* records written so far */
  tdFlightRec rec[];
};

tpudistResult_t flightInit(tdExec *ex, const tdConfig *cfg) {
  int cap = cfg->flight_records; /* at most 4096 (the table's range) */
  if (cap <= 0) return tpudistSuccess;
  struct tdFlight *f = calloc(1, sizeof(*f) + sizeof(tdFlightRec) * (size_t)cap);
  if (!f) return tpudistNoMemory;
  f->cap = cap;
  ex->flight = f;
  return tpudistSuccess;
}

void flightFree(tdExec *ex) {
  free(ex->flight);
  ex->flight = NULL;
}

void flightRecord(tdExec *ex, const tdOp *op) {
  struct tdFlight *f = ex->flight;
  if (!f) return;
  tdFlightRec *r = &f->rec[f->total++ % (uint64_t)f->cap];
  r->op = op;
  r->batch = op->batch;
  r->kind = op->kind;
  r->coll = op->coll;
  r->dtype = op->dtype;
  r->root = op->root;
  r->algo = op->algo;
  r->t_ns = clockCoarseNs();
  if (op->kind == TD_OP_SEND || op->kind == TD_OP_RECV) {
    r->seq = 0;
    r->peer = op->p2p.peer;
    r->count = op->esize ? op->p2p.len / op->esize : 0;
    return;
  }
  r->peer = -1;
  r->seq = op->chk_phase == 1 ? op->chk_seq : op->seq;
  r->count = op->chk_phase == 1 ? op->chk_n : op->n;
  if (op->coll == TD_COLL_ALLTOALLV) { /* elements this rank sends */
    r->count = 0;
    for (int p = 0; op->vbuf && p < ex->net->nranks; p++) r->count += op->vbuf[p];
  }
}

/* State of the recorded operation, judged from the live object (objects are reused, but a
 * failed one never is, and the batch number tells whether it still holds this record). */
static const char *recState(const tdFlightRec *r, char *buf, size_t len, int *running) {
  const tdOp *op = r->op;
  *running = 0;
  if (op->batch != r->batch) return "done";
  if (op->done) {
    if (op->result == tpudistSuccess) return "done";
    snprintf(buf, len, "failed (%s)", tpudistGetErrorString(op->result));
    return buf;
  }
  if (!op->started) return "queued";
  *running = 1;
  return "running";
}

/* For a running collective: each stream's progress, then the pieces pending per peer. */
static void dumpRunning(const tdNet *comm, const tdOp *op) {
  const tdSched *s = op->sched;
  int n = comm->nranks;
  uint32_t *rx = calloc((size_t)n * 2, sizeof(uint32_t)), *tx = rx ? rx + n : NULL;
  for (uint32_t i = 0; s && op->rt && i < s->nstreams; i++) {
    const tdStream *str = &s->streams[i];
    char what[160] = "all steps done";
    for (uint32_t j = op->lo[i]; j < op->nx[i] && j < str->nsteps; j++) {
      const tdStep *st = &str->steps[j];
      const tdStepRt *rt = &op->rt[op->stream_base[i] + j];
      int rp = schedRecvPeer(st), sp = schedSendPeer(st);
      uint32_t sent = schedFused(st->op) ? rt->fwd : rt->rout;
      if (rx && rp >= 0 && rp < n && rt->xin != UINT32_MAX) rx[rp] += rt->npieces - rt->rin;
      if (tx && sp >= 0 && sp < n && rt->xout != UINT32_MAX) tx[sp] += rt->npieces - sent;
      if (j == op->lo[i])
        snprintf(what, sizeof(what), "step %u (%s) of %u: received %u, sent %u of %u pieces", j,
                 tdStepSemTable[st->op].name, str->nsteps, rt->rin, sent, rt->npieces);
    }
    if (op->lo[i] < str->nsteps && op->nx[i] == op->lo[i])
      snprintf(what, sizeof(what), "step %u (%s) of %u not issued (dependencies)", op->lo[i],
               tdStepSemTable[str->steps[op->lo[i]].op].name, str->nsteps);
    TD_ERROR(TD_SUBSYS_COLL, "flight recorder:       stream %u: %s", i, what);
  }
  char line[512] = "";
  size_t used = 0;
  for (int p = 0; rx && p < n && used < sizeof(line) - 64; p++) {
    if (!rx[p] && !tx[p]) continue;
    used += (size_t)snprintf(line + used, sizeof(line) - used, "%s rank %d (recv %u, send %u)",
                             used ? "," : "", p, rx[p], tx[p]);
  }
  TD_ERROR(TD_SUBSYS_COLL, "flight recorder:       pieces pending per peer:%s",
           used ? line : " none");
  free(rx);
}

static void dumpRec(const tdNet *comm, const tdFlightRec *r, uint64_t idx, uint64_t now) {
  char sbuf[64], what[160];
  int running;
  const char *state = recState(r, sbuf, sizeof(sbuf), &running);
  char root[24] = "";
  if (r->coll == TD_COLL_BROADCAST || r->coll == TD_COLL_REDUCE)
    snprintf(root, sizeof(root), ", root %d", r->root);
  const char *dt = kernelDtypeValid(r->dtype) ? kernelDtypeName((tpudistDataType_t)r->dtype) : "?";
  if (r->kind == TD_OP_SEND || r->kind == TD_OP_RECV)
    snprintf(what, sizeof(what), "%s %s rank %d, count %llu %s",
             r->kind == TD_OP_SEND ? "send" : "recv", r->kind == TD_OP_SEND ? "to" : "from",
             r->peer, (unsigned long long)r->count, dt);
  else
    snprintf(what, sizeof(what), "%s seq %llu, count %llu %s%s, algorithm %s",
             schedCollName((tdColl)r->coll), (unsigned long long)r->seq,
             (unsigned long long)r->count, dt, root,
             r->op->batch == r->batch && r->op->algo ? r->op->algo
             : r->algo                               ? r->algo
                                                     : "-");
  TD_ERROR(TD_SUBSYS_COLL, "flight recorder:   #%llu %s: %s, issued %.1f ms ago",
           (unsigned long long)idx, what, state, (double)(now - r->t_ns) / 1e6);
  if (running && r->kind == TD_OP_COLL) dumpRunning(comm, r->op);
  if (running && r->kind == TD_OP_SMALL) {
    execSmallDescribe(r->op, what, sizeof(what));
    TD_ERROR(TD_SUBSYS_COLL, "flight recorder:       %s", what);
  }
}

void flightDump(tdExec *ex, const char *why) {
  struct tdFlight *f = ex->flight;
  const tdNet *comm = ex->net;
  if (!f) return;
  uint64_t first = f->total > (uint64_t)f->cap ? f->total - (uint64_t)f->cap : 0;
  TD_ERROR(TD_SUBSYS_COLL,
           "flight recorder: %s rank %d of %d (%s): the last %llu of %llu operations, oldest first",
           comm->name, comm->rank, comm->nranks, why, (unsigned long long)(f->total - first),
           (unsigned long long)f->total);
  uint64_t now = clockCoarseNs();
  for (uint64_t i = first; i < f->total; i++) dumpRec(comm, &f->rec[i % (uint64_t)f->cap], i, now);
}
