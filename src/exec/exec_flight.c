/*
 * exec_flight.c - the flight recorder: each communicator keeps its last TPU_DIST_FLIGHT_RECORDS
 * operations (collective or point to point, sequence, count, datatype, algorithm, issue time) in
 * a ring, written when an operation is queued (one small copy under the lock the executor holds
 * anyway; nothing allocated on the hot path). When the communicator fails (timeout, dead peer,
 * mismatch), the ring is written to the log, oldest first, with each operation's state (done,
 * queued, running, failed) and, for the ones still running, what every stream waits for and a
 * per-peer summary of the pieces not yet received from or taken by that peer.
 *
 * The same ring is written as JSON (TPU_DIST_FR_DUMP_DIR, tpudistCommDumpFlightRecord) in the
 * shape of torch's flight recorder dumps, so tools that read those (torch's fr_trace analyzer)
 * read ours: {version, rank, pg_config, entries: [{record_id, collective_seq_id, p2p_seq_id,
 * profiling_name "tpu_dist:all_reduce", input_sizes, output_sizes, dtypes, state, time_created_ns,
 * ...}]}. And flightStatus answers the health query: the operation in flight and its peer.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "exec.h"
#include "kernels.h"
#include "rt_log.h"
#include "step_sem.h"

typedef struct {
  const tdOp *op;
  uint64_t batch, seq, count, t_ns, p2p_seq;
  int kind, coll, dtype, root, peer;
  const char *algo;
} tdFlightRec;

struct tdFlight {
  int cap;
  uint64_t total;   /* records written so far */
  uint64_t p2p_seq; /* point-to-point records so far */
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
    r->p2p_seq = ++f->p2p_seq;
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
  if (running && r->kind == TD_OP_COLL) {
    dumpRunning(comm, r->op); /* every stream's position */
  } else if (running) {
    execOpKinds[r->kind]->describe(r->op, what, sizeof(what));
    TD_ERROR(TD_SUBSYS_COLL, "flight recorder:       %s", what);
  }
}

/* ---- JSON (torch flight recorder entries) ------------------------------------------------ */

/* A JSON string: quotes, backslashes and control characters escaped. */
static void jsonStr(FILE *f, const char *s) {
  fputc('"', f);
  for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
    if (*p == '"' || *p == '\\')
      fprintf(f, "\\%c", *p);
    else if (*p < 0x20)
      fprintf(f, "\\u%04x", *p);
    else
      fputc(*p, f);
  }
  fputc('"', f);
}

/* torch's names: collectives as c10d records them, dtypes as c10::ScalarType prints them. */
static const char *torchCollName(int coll) {
  static const char *names[] = {"all_reduce",     "broadcast",  "reduce",     "all_gather",
                                "reduce_scatter", "all_to_all", "all_to_all", "send_recv"};
  return coll >= 0 && coll < (int)TD_ARRAY_SIZE(names) ? names[coll] : "unknown";
}

static const char *torchDtype(int dtype) {
  static const char *names[] = {"Char",   "Byte", "Int",   "UInt32", "Long",
                                "UInt64", "Half", "Float", "Double", "BFloat16"};
  return dtype >= 0 && dtype < (int)TD_ARRAY_SIZE(names) ? names[dtype] : "Undefined";
}

/* Elements in and out of a collective of count (the API's count) on n ranks. */
static void collSizes(int coll, uint64_t count, int n, uint64_t *in, uint64_t *out) {
  *in = *out = count;
  if (coll == TD_COLL_ALLGATHER) *out = count * (uint64_t)n;
  if (coll == TD_COLL_REDUCESCATTER) *in = count * (uint64_t)n;
  if (coll == TD_COLL_ALLTOALL) *in = *out = count * (uint64_t)n;
}

/* The entry's state; *error: why it failed (fail: the failure being dumped, which every
 * unfinished operation is about to end with), or NULL. */
static const char *jsonState(const tdFlightRec *r, const char *fail, const char **error) {
  const tdOp *op = r->op;
  *error = NULL;
  if (op->batch != r->batch || (op->done && op->result == tpudistSuccess)) return "completed";
  *error = op->done ? tpudistGetErrorString(op->result) : fail;
  return op->started ? "started" : "scheduled";
}

static void jsonRec(FILE *f, const tdNet *net, const tdFlightRec *r, uint64_t idx, int comma,
                    const char *fail, int64_t wall_off) {
  const char *error, *state = jsonState(r, fail, &error);
  int p2p = r->kind == TD_OP_SEND || r->kind == TD_OP_RECV;
  uint64_t in, out;
  char name[64];
  collSizes(r->coll, r->count, net->nranks, &in, &out);
  if (p2p && r->kind == TD_OP_SEND)
    snprintf(name, sizeof(name), "tpu_dist:send %d->%d", net->rank, r->peer);
  else if (p2p)
    snprintf(name, sizeof(name), "tpu_dist:recv %d<-%d", net->rank, r->peer);
  else
    snprintf(name, sizeof(name), "tpu_dist:%s", torchCollName(r->coll));
  const char *algo = r->op->batch == r->batch && r->op->algo ? r->op->algo : r->algo;
  fprintf(f, "%s\n    {\"record_id\": %llu, \"pg_id\": 0, \"process_group\": [", comma ? "," : "",
          (unsigned long long)idx);
  jsonStr(f, net->name);
  fprintf(f,
          ", \"tpu_dist\"], \"collective_seq_id\": %llu, \"p2p_seq_id\": %llu, \"op_id\": %llu, ",
          (unsigned long long)r->seq, (unsigned long long)(p2p ? r->p2p_seq : 0),
          (unsigned long long)idx);
  fprintf(f, "\"profiling_name\": ");
  jsonStr(f, name);
  fprintf(f,
          ", \"time_created_ns\": %lld, \"input_sizes\": [[%llu]], \"input_dtypes\": [\"%s\"], "
          "\"output_sizes\": [[%llu]], \"output_dtypes\": [\"%s\"], \"state\": \"%s\", ",
          (long long)((int64_t)r->t_ns + wall_off), (unsigned long long)in, torchDtype(r->dtype),
          (unsigned long long)out, torchDtype(r->dtype), state);
  fprintf(f,
          "\"time_discovered_started_ns\": null, \"time_discovered_completed_ns\": null, "
          "\"retired\": %s, \"timeout_ms\": %d, \"is_p2p\": %s, \"duration_ms\": null, "
          "\"frames\": [], \"algorithm\": ",
          strcmp(state, "completed") ? "false" : "true", netTimeoutMs(net), p2p ? "true" : "false");
  jsonStr(f, algo ? algo : "");
  if (!p2p && (r->coll == TD_COLL_BROADCAST || r->coll == TD_COLL_REDUCE))
    fprintf(f, ", \"root\": %d", r->root);
  if (p2p) fprintf(f, ", \"peer\": %d", r->peer);
  if (error) {
    fprintf(f, ", \"error\": ");
    jsonStr(f, error);
  }
  fputc('}', f);
}

static void jsonWrite(FILE *f, tdExec *ex, const char *why, const char *fail) {
  struct tdFlight *fl = ex->flight;
  const tdNet *net = ex->net;
  struct timespec wall;
  clock_gettime(CLOCK_REALTIME, &wall);
  int64_t wall_off = (int64_t)wall.tv_sec * 1000000000ll + wall.tv_nsec - (int64_t)clockCoarseNs();
  fprintf(f,
          "{\n  \"version\": \"2.8\",\n  \"backend\": \"tpu_dist\",\n  \"rank\": %d,\n"
          "  \"world_size\": %d,\n  \"comm_hash\": \"%016llx\",\n  \"reason\": ",
          net->rank, net->nranks, (unsigned long long)net->comm_hash);
  jsonStr(f, why);
  /* keyed by the name entries give as process_group[0], as torch's analyzer looks groups up */
  fprintf(f, ",\n  \"pg_config\": {");
  jsonStr(f, net->name);
  fprintf(f, ": {\"name\": ");
  jsonStr(f, net->name);
  fprintf(f, ", \"desc\": \"tpu_dist\", \"ranks\": \"[");
  for (int r = 0; r < net->nranks; r++) fprintf(f, "%s%d", r ? ", " : "", r);
  fprintf(f, "]\"}},\n  \"entries\": [");
  uint64_t first = fl && fl->total > (uint64_t)fl->cap ? fl->total - (uint64_t)fl->cap : 0;
  for (uint64_t i = first; fl && i < fl->total; i++)
    jsonRec(f, net, &fl->rec[i % (uint64_t)fl->cap], i, i > first, fail, wall_off);
  fprintf(f, "\n  ]\n}\n");
}

/* dir/tpu_dist_fr_<comm name, unsafe characters as _>_rank<R>.json */
static void jsonPath(const tdNet *net, const char *dir, char *path, size_t len) {
  char name[sizeof(net->name)];
  size_t i = 0;
  for (; net->name[i] && i + 1 < sizeof(name); i++) {
    char ch = net->name[i];
    int ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
             ch == '-' || ch == '.';
    name[i] = ok ? ch : '_';
  }
  name[i] = 0;
  snprintf(path, len, "%s/tpu_dist_fr_%s_rank%d.json", dir, name, net->rank);
}

/* fail: the failure being dumped (flightDump), NULL on demand. */
static tpudistResult_t dumpJsonLocked(tdExec *ex, const char *dir, const char *why,
                                      const char *fail, char *path, size_t plen, char *err) {
  char final[512], tmp[540];
  jsonPath(ex->net, dir, final, sizeof(final));
  snprintf(tmp, sizeof(tmp), "%s.%d.tmp", final, (int)getpid());
  FILE *f = fopen(tmp, "w");
  if (!f) return tdErr(err, tpudistSystemError, "flight record: %s: %s", tmp, strerror(errno));
  jsonWrite(f, ex, why, fail);
  int bad = ferror(f);
  if (fclose(f) != 0 || bad || rename(tmp, final) != 0) {
    int e = errno;
    unlink(tmp);
    return tdErr(err, tpudistSystemError, "flight record: writing %s: %s", final, strerror(e));
  }
  if (path) snprintf(path, plen, "%s", final);
  return tpudistSuccess;
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
  const char *dir = comm->cfg->fr_dump_dir;
  char path[512], err[TD_ERRLEN];
  if (dir && *dir) {
    if (dumpJsonLocked(ex, dir, why, why, path, sizeof(path), err) == tpudistSuccess)
      TD_ERROR(TD_SUBSYS_COLL, "flight recorder: written to %s", path);
    else
      TD_ERROR(TD_SUBSYS_COLL, "flight recorder: %s", err);
  }
}

tpudistResult_t flightDumpJson(tdExec *ex, const char *dir, const char *why, char *path,
                               size_t plen, char *err) {
  pthread_mutex_lock(&ex->lock);
  tpudistResult_t r = dumpJsonLocked(ex, dir, why, NULL, path, plen, err);
  pthread_mutex_unlock(&ex->lock);
  return r;
}

/* ---- health query ------------------------------------------------------------------------ */

static void statusOf(const tdNet *net, const tdFlightRec *r, tdFlightStatus *st) {
  const tdOp *op = r->op;
  int p2p = r->kind == TD_OP_SEND || r->kind == TD_OP_RECV;
  snprintf(st->op, sizeof(st->op), "%s",
           p2p ? (r->kind == TD_OP_SEND ? "send" : "recv") : schedCollName((tdColl)r->coll));
  st->seq = r->seq;
  st->age_ms = (clockCoarseNs() - r->t_ns) / 1000000ull;
  if (st->state == TD_FS_FAILED)
    snprintf(st->detail, sizeof(st->detail), "failed: %s", tpudistGetErrorString(op->result));
  else if (st->state == TD_FS_QUEUED)
    snprintf(st->detail, sizeof(st->detail), "queued behind an earlier operation");
  if (st->state != TD_FS_RUNNING) return;
  st->peer = execOpKinds[r->kind]->waitPeer(op);
  execOpKinds[r->kind]->describe(op, st->detail, sizeof(st->detail));
  (void)net;
}

void flightStatus(tdExec *ex, tdFlightStatus *st) {
  memset(st, 0, sizeof(*st));
  st->peer = -1;
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_nsec += 200000000L;
  if (until.tv_nsec >= 1000000000L) until.tv_sec++, until.tv_nsec -= 1000000000L;
  if (pthread_mutex_timedlock(&ex->lock, &until) != 0) {
    st->state = TD_FS_BUSY;
    snprintf(st->detail, sizeof(st->detail), "no answer: the executor stayed busy for 200 ms");
    return;
  }
  struct tdFlight *f = ex->flight;
  if (f && f->total > 0) {
    uint64_t first = f->total > (uint64_t)f->cap ? f->total - (uint64_t)f->cap : 0,
             pick = f->total - 1;
    st->state = TD_FS_IDLE;
    for (uint64_t i = first; i < f->total && st->state == TD_FS_IDLE; i++) {
      char sbuf[64];
      int running;
      const tdFlightRec *r = &f->rec[i % (uint64_t)f->cap];
      const char *s = recState(r, sbuf, sizeof(sbuf), &running);
      if (!strcmp(s, "done")) continue;
      pick = i;
      st->state = running ? TD_FS_RUNNING : !strcmp(s, "queued") ? TD_FS_QUEUED : TD_FS_FAILED;
    }
    st->issued = f->total;
    statusOf(ex->net, &f->rec[pick % (uint64_t)f->cap], st);
  }
  pthread_mutex_unlock(&ex->lock);
}
