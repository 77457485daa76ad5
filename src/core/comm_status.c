/*
 * comm_status.c - health queries of a running job (tpudist-info --status HOST:PORT) and the
 * flight record on demand (tpudistCommDumpFlightRecord).
 *
 * A communicator created from a TPU_DIST_COMM_ID id (with TPU_DIST_STATUS=1, the default) runs a
 * small server thread on every rank: each rank listens on a new port of its bootstrap address
 * (the addresses are exchanged once, at creation, over the bootstrap), and rank 0 also keeps the
 * job's address itself (HOST:PORT, the rendezvous listener). A query proves the job's key and is
 * answered with the key's proof (boot_status.c). Rank 0 answers a job query by asking every other
 * rank for its state, one at a time, at most TD_STATUS_RANK_MS each and TD_STATUS_JOB_MS in all
 * (a rank that does not answer in time is reported as such), and formats one line per rank: the
 * oldest operation not finished, its sequence number, how long it has run and the rank it waits
 * for (flightStatus), then which ranks are behind the others. The thread polls its listeners in
 * 20 ms slices and reads a communicator's state under its executor's lock for a moment (never
 * longer than 200 ms), so a query never disturbs the job beyond that. Connections are served one at
 * a time, each handshake within TD_STATUS_SERVE_MS (a silent client costs that much). The thread
 * stops with the communicator (commStatusStop, within about 20 ms).
 */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "boot_status.h"
#include "comm.h"
#include "rt_log.h"

#define TD_STATUS_RANK_MS 1000 /* per rank asked by rank 0 */
#define TD_STATUS_JOB_MS 8000  /* every rank asked by rank 0 */
#define TD_STATUS_SERVE_MS 2000
#define TD_STATUS_CONNS 32 /* accepted connections waiting for their first bytes */

struct tdStatusServer {
  tdComm *c;
  int fds[2]; /* own listener; rank 0: the job's address */
  int conns[TD_STATUS_CONNS];
  int64_t since[TD_STATUS_CONNS];
  tdNetAddr *addrs;
  tdKey key;
  pthread_t thread;
  volatile int stop;
};

/* One rank's answer (TD_STATUS_RANK). */
typedef struct {
  int32_t rank, pid;
  tdFlightStatus fs;
  char dumped[192]; /* where the flight record went (dump queries), or why not */
} tdRankStatus;

static void rankStatus(struct tdStatusServer *s, int dump, tdRankStatus *rs) {
  tdComm *c = s->c;
  memset(rs, 0, sizeof(*rs));
  rs->rank = c->net.rank;
  rs->pid = (int32_t)getpid();
  flightStatus(&c->exec, &rs->fs);
  const char *dir = c->net.cfg->fr_dump_dir;
  char err[TD_ERRLEN];
  if (!dump) return;
  if (!dir || !*dir)
    snprintf(rs->dumped, sizeof(rs->dumped), "not written: TPU_DIST_FR_DUMP_DIR is not set");
  else if (flightDumpJson(&c->exec, dir, "health query", rs->dumped, sizeof(rs->dumped), err) !=
           tpudistSuccess)
    snprintf(rs->dumped, sizeof(rs->dumped), "%.180s", err);
}

static size_t fmtRank(char *b, size_t len, const tdRankStatus *rs) {
  const tdFlightStatus *f = &rs->fs;
  int n = snprintf(b, len, "rank %d (pid %d): ", rs->rank, rs->pid);
  size_t o = n > 0 ? (size_t)n : 0;
  const char *what = f->state == TD_FS_RUNNING  ? "running"
                     : f->state == TD_FS_QUEUED ? "queued"
                                                : "failed";
  if (f->state == TD_FS_NONE)
    n = snprintf(b + o, len - o, "idle, no operation issued yet");
  else if (f->state == TD_FS_IDLE)
    n = snprintf(b + o, len - o, "idle, last operation %s seq %llu (issued %llu ms ago)", f->op,
                 (unsigned long long)f->seq, (unsigned long long)f->age_ms);
  else if (f->state == TD_FS_BUSY)
    n = snprintf(b + o, len - o, "%s", f->detail);
  else if (f->peer >= 0)
    n = snprintf(b + o, len - o, "%s seq %llu %s for %llu ms, waits for rank %d [%s]", f->op,
                 (unsigned long long)f->seq, what, (unsigned long long)f->age_ms, f->peer,
                 f->detail);
  else
    n = snprintf(b + o, len - o, "%s seq %llu %s for %llu ms [%s]", f->op,
                 (unsigned long long)f->seq, what, (unsigned long long)f->age_ms, f->detail);
  o += n > 0 ? (size_t)n : 0;
  if (rs->dumped[0] && o < len)
    o += (size_t)snprintf(b + o, len - o, "; flight record: %s", rs->dumped);
  if (o < len) o += (size_t)snprintf(b + o, len - o, "\n");
  return TD_MIN(o, len);
}

/* Ranks whose latest collective is older than the newest one another rank is in (a rank that
 * has not reached an operation everyone else waits in). */
static size_t fmtBehind(char *b, size_t len, const tdRankStatus *all, const int *ok, int n) {
  uint64_t top = 0;
  const char *op = NULL;
  for (int r = 0; r < n; r++) {
    const tdFlightStatus *f = &all[r].fs;
    if (ok[r] && (f->state == TD_FS_RUNNING || f->state == TD_FS_QUEUED) && f->seq >= top)
      top = f->seq, op = f->op;
  }
  if (!op) return (size_t)snprintf(b, len, "summary: no rank is inside an operation\n");
  size_t o = (size_t)snprintf(b, len, "summary: waiting in %s seq %llu; behind:", op,
                              (unsigned long long)top);
  int nb = 0;
  for (int r = 0; r < n && o < len; r++) {
    const tdFlightStatus *f = &all[r].fs;
    int in = f->state == TD_FS_RUNNING || f->state == TD_FS_QUEUED;
    if (!ok[r])
      o += (size_t)snprintf(b + o, len - o, " rank %d (no answer)", r), nb++;
    else if (!in || f->seq < top)
      o += (size_t)snprintf(b + o, len - o, " rank %d (at %s seq %llu, %s)", r, f->op,
                            (unsigned long long)f->seq, in ? "in flight" : "idle"),
          nb++;
  }
  if (o < len) o += (size_t)snprintf(b + o, len - o, "%s\n", nb ? "" : " none");
  return TD_MIN(o, len);
}

/* Rank 0's answer to a job query: every rank's line, then the summary. */
static tpudistResult_t jobAnswer(struct tdStatusServer *s, int dump, char **body, size_t *len) {
  tdComm *c = s->c;
  int n = c->net.nranks;
  size_t cap = 512 + (size_t)n * 1024;
  char *b = malloc(cap);
  tdRankStatus *all = calloc((size_t)n, sizeof(*all));
  int *ok = calloc((size_t)n, sizeof(int));
  if (!b || !all || !ok) {
    free(b), free(all), free(ok);
    return tpudistNoMemory;
  }
  size_t o = (size_t)snprintf(b, cap, "job %s: %d ranks, answered by rank 0\n", c->net.name, n);
  rankStatus(s, dump, &all[0]);
  ok[0] = 1;
  int64_t end = netNowMs() + TD_STATUS_JOB_MS;
  for (int r = 1; r < n && !s->stop; r++) {
    char *rb = NULL, err[TD_ERRLEN] = "";
    size_t rl = 0;
    int64_t dl = TD_MIN(end, netNowMs() + TD_STATUS_RANK_MS);
    tpudistResult_t q =
        bootstrapStatusQuery(&s->addrs[r], &s->key, dump ? TD_STATUS_RANK_DUMP : TD_STATUS_RANK, dl,
                             &s->stop, &rb, &rl, err);
    if (q == tpudistSuccess && rl == sizeof(tdRankStatus)) {
      memcpy(&all[r], rb, sizeof(tdRankStatus));
      all[r].fs.op[sizeof(all[r].fs.op) - 1] = all[r].fs.detail[sizeof(all[r].fs.detail) - 1] = 0;
      all[r].dumped[sizeof(all[r].dumped) - 1] = 0;
      ok[r] = all[r].rank == r;
    } else {
      snprintf(all[r].fs.detail, sizeof(all[r].fs.detail), "no answer: %s",
               q == tpudistSuccess ? "a malformed answer" : err);
    }
    free(rb);
  }
  for (int r = 0; r < n && o < cap; r++) {
    if (ok[r])
      o += fmtRank(b + o, cap - o, &all[r]);
    else
      o += (size_t)snprintf(b + o, cap - o, "rank %d: %s\n", r, all[r].fs.detail);
  }
  if (o < cap) o += fmtBehind(b + o, cap - o, all, ok, n);
  free(all);
  free(ok);
  *body = b;
  *len = TD_MIN(o, cap);
  return tpudistSuccess;
}

static tpudistResult_t answer(void *ctx, uint32_t kind, char **body, size_t *len) {
  struct tdStatusServer *s = ctx;
  int dump = kind == TD_STATUS_JOB_DUMP || kind == TD_STATUS_RANK_DUMP;
  if (kind == TD_STATUS_JOB || kind == TD_STATUS_JOB_DUMP) {
    if (s->c->net.rank != 0) return tpudistInvalidUsage;
    return jobAnswer(s, dump, body, len);
  }
  if (kind != TD_STATUS_RANK && kind != TD_STATUS_RANK_DUMP) return tpudistInvalidArgument;
  tdRankStatus *rs = malloc(sizeof(*rs));
  if (!rs) return tpudistNoMemory;
  rankStatus(s, dump, rs);
  *body = (char *)rs;
  *len = sizeof(*rs);
  return tpudistSuccess;
}

/* Takes every pending connection of lfd into the table; when it is full the connection waiting
 * longest is dropped, so a flood of idle connections costs a table and is drained at once. */
static void acceptAll(struct tdStatusServer *s, int lfd) {
  char err[TD_ERRLEN];
  for (int fd; netAccept(lfd, &fd, err) == tpudistSuccess && fd >= 0;) {
    int slot = 0;
    for (int i = 0; i < TD_STATUS_CONNS; i++) {
      if (s->conns[i] < 0) {
        slot = i;
        break;
      }
      if (s->since[i] < s->since[slot]) slot = i;
    }
    if (s->conns[slot] >= 0) close(s->conns[slot]);
    s->conns[slot] = fd;
    s->since[slot] = netNowMs();
  }
}

/* Serves a connection that has sent something (its handshake bounded by TD_STATUS_SERVE_MS). */
static void serveOne(struct tdStatusServer *s, int i) {
  char err[TD_ERRLEN] = "";
  if (bootstrapStatusServe(s->conns[i], &s->key, TD_STATUS_SERVE_MS, &s->stop, answer, s, err) !=
      tpudistSuccess)
    TD_INFO(TD_SUBSYS_BOOT, "%s: health query not answered: %s", s->c->net.name, err);
  close(s->conns[i]);
  s->conns[i] = -1;
}

static void *statusMain(void *arg) {
  struct tdStatusServer *s = arg;
  struct pollfd p[2 + TD_STATUS_CONNS];
  int who[2 + TD_STATUS_CONNS];
  while (!s->stop) {
    int n = 0;
    for (int i = 0; i < 2; i++)
      if (s->fds[i] >= 0) who[n] = -1 - i, p[n++] = (struct pollfd){s->fds[i], POLLIN, 0};
    for (int i = 0; i < TD_STATUS_CONNS; i++)
      if (s->conns[i] >= 0) who[n] = i, p[n++] = (struct pollfd){s->conns[i], POLLIN, 0};
    int ready = poll(p, (nfds_t)n, 20);
    for (int k = 0; k < n && ready > 0 && !s->stop; k++) {
      if (!p[k].revents) continue;
      if (who[k] < 0)
        acceptAll(s, p[k].fd);
      else if (s->conns[who[k]] == p[k].fd)
        serveOne(s, who[k]);
    }
    int64_t now = netNowMs();
    for (int i = 0; i < TD_STATUS_CONNS; i++)
      if (s->conns[i] >= 0 && now - s->since[i] > TD_STATUS_SERVE_MS) {
        close(s->conns[i]);
        s->conns[i] = -1;
      }
  }
  return NULL;
}

static void serverFree(struct tdStatusServer *s) {
  for (int i = 0; i < 2; i++)
    if (s->fds[i] >= 0) close(s->fds[i]);
  for (int i = 0; i < TD_STATUS_CONNS; i++)
    if (s->conns[i] >= 0) close(s->conns[i]);
  free(s->addrs);
  free(s);
}

tpudistResult_t commStatusStart(tdComm *c, char *err) {
  tdBootstrap *bs = c->net.bootstrap;
  if (!c->net.cfg->status || !bs || !bootstrapJobId(bs)) return tpudistSuccess;
  struct tdStatusServer *s = calloc(1, sizeof(*s));
  if (!s || !(s->addrs = calloc((size_t)c->net.nranks, sizeof(tdNetAddr)))) {
    free(s);
    return tdErr(err, tpudistNoMemory, "status: out of memory");
  }
  s->c = c;
  s->key = *bootstrapKey(bs);
  s->fds[0] = -1;
  for (int i = 0; i < TD_STATUS_CONNS; i++) s->conns[i] = -1;
  s->fds[1] = bootstrapTakeIdListener(bs);
  tpudistResult_t r = bootstrapStatusListen(bs, &s->fds[0], &s->addrs[c->net.rank], err);
  if (r == tpudistSuccess) r = bootstrapAllGather(bs, s->addrs, sizeof(tdNetAddr), err);
  int rc = r == tpudistSuccess ? pthread_create(&s->thread, NULL, statusMain, s) : 0;
  if (rc != 0) r = tdErr(err, tpudistSystemError, "status: pthread_create: %s", strerror(rc));
  if (r != tpudistSuccess) {
    serverFree(s);
    return r;
  }
  c->status = s;
  return tpudistSuccess;
}

void commStatusStop(tdComm *c) {
  struct tdStatusServer *s = c->status;
  if (!s) return;
  s->stop = 1;
  pthread_join(s->thread, NULL);
  serverFree(s);
  c->status = NULL;
}

TPUDIST_API tpudistResult_t tpudistCommDumpFlightRecord(tpudistComm_t comm, const char *dir) {
  char err[TD_ERRLEN] = "", path[512];
  TD_CHECK(commEnter(comm ? &comm->c : NULL, "CommDumpFlightRecord"));
  tdComm *c = &comm->c;
  const char *d = dir ? dir : c->net.cfg->fr_dump_dir;
  tpudistResult_t r = tpudistSuccess;
  if (!d || !*d)
    r = commError(c, tpudistInvalidArgument,
                  "CommDumpFlightRecord: no directory (pass one or set TPU_DIST_FR_DUMP_DIR)");
  else if ((r = flightDumpJson(&c->exec, d, "on demand", path, sizeof(path), err)) !=
           tpudistSuccess)
    r = commErrorMsg(c, r, err);
  else
    TD_INFO(TD_SUBSYS_COLL, "%s: flight record written to %s", c->net.name, path);
  commLeave(c);
  return r;
}
