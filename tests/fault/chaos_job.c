/*
 * chaos_job.c - one rank of a chaos launch (tests/fault/chaos.sh); public API only. Ranks start
 * without mpirun (TPU_DIST_COMM_ID, RANK, WORLD_SIZE).
 *
 *   chaos_job SEED FIRST_TRIAL MAX_TRIALS MIN_RANKS
 *
 * Trials run back to back in one launch, each on the communicator the previous one shrank to,
 * while at least MIN_RANKS ranks remain and MAX_TRIALS are not done. Every rank draws the same plan
 * from (SEED, trial): a mix of 6 to 12 collectives (all-reduce blocking and non-blocking, two
 * all-reduces in a group, all-gather, broadcast, reduce-scatter, an all-reduce on a split
 * communicator of half the ranks; 8 B to 4 MiB each, results checked exactly), one victim (or two)
 * and for each the operation at whose start, plus 0-20 ms, it kills itself (SIGKILL). A victim that
 * sees an error first dies at once. A survivor, at its first error: revokes the split, completes
 * its requests, calls tpudistCommShrink(NULL list, TPUDIST_SHRINK_ABORT), then checks the
 * new communicator (its members are the survivors in old-rank order; all-reduce, all-gather,
 * broadcast, reduce-scatter exactly) and destroys the old ones. It prints one line per trial:
 *   TRIAL id n=N victims=a[,b] rank=R result=ok|wrong|fail ms=M ops=K/OPS
 * (M: error to usable shrunk comm; K of the mix's OPS operations completed before the error)
 * and at the end THREADS t (threads left after every communicator is destroyed: 0 expected). A
 * watchdog prints HANG and exits 3 when a trial's phase outlives TPU_DIST_TIMEOUT_MS + 5 s. Exit
 * status: 0, 3 (a hang), 4 (a failed or wrong trial), 1 (init failed).
 */
#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "job_util.h"
#include "tpu_dist.h"

#define MAXR 64
#define MAXB (4u << 20)
#define NBUF 4

/* splitmix64: the plan every rank draws alike */
static uint64_t gRng;
static uint64_t rnd(void) {
  uint64_t z = (gRng += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
static int rndIn(int n) {
  return (int)(rnd() % (uint64_t)n);
}

/* ---- watchdog ---- */
static volatile double gDeadline; /* 0: none */
static volatile int gTrial;
static int gTimeoutMs;

static void *watchdog(void *arg) {
  (void)arg;
  for (;;) {
    sleepMs(100);
    double d = gDeadline;
    if (d > 0 && nowMs() > d) {
      printf("HANG trial %d\n", gTrial);
      fflush(stdout);
      _exit(3);
    }
  }
  return NULL;
}
static void armWatchdog(void) {
  gDeadline = nowMs() + gTimeoutMs + 5000.0;
}

static int gKillMs = -1;
static void armKill(int ms) {
  pthread_t th;
  gKillMs = ms;
  pthread_create(&th, NULL, killer, &gKillMs);
  pthread_detach(th);
}

/* ---- the plan ---- */
typedef struct {
  int kind, count, root;
} tdChaosOp;
enum { OP_AR, OP_AR_NB, OP_GROUP, OP_AG, OP_BCAST, OP_RS, OP_SPLIT_AR, OP_KINDS };

typedef struct {
  int nops, nvict, victim[2], at[2], delay[2];
  tdChaosOp ops[12];
} tdPlan;

static void drawPlan(uint64_t seed, int trial, int n, tdPlan *p) {
  gRng = seed * 1000003ull + (uint64_t)trial * 7919ull;
  p->nops = 6 + rndIn(7);
  for (int i = 0; i < p->nops; i++) {
    int bytes = 8 << rndIn(20); /* 8 B .. 4 MiB */
    int kind = rndIn(OP_KINDS), count = bytes / 4;
    if (kind == OP_AG && count > (int)(MAXB / 4) / n) count = (int)(MAXB / 4) / n;
    if (kind == OP_RS) count = count < n ? n : count - count % n;
    p->ops[i].kind = kind;
    p->ops[i].count = count;
    p->ops[i].root = rndIn(n);
  }
  p->nvict = n >= 5 && rndIn(4) == 0 ? 2 : 1;
  p->victim[0] = rndIn(n);
  p->victim[1] = (p->victim[0] + 1 + rndIn(n - 1)) % n;
  for (int v = 0; v < 2; v++) {
    p->at[v] = rndIn(p->nops);
    p->delay[v] = rndIn(21);
  }
}

/* ---- buffers and checks ---- */
static int32_t *gIn[NBUF], *gOut[NBUF];

static int32_t val(int who, int op, size_t i) {
  return (who + 1) * (op + 3) + (int32_t)(i % 1013);
}

static int fillAndCount(int slot, int me, int op, size_t count) {
  for (size_t i = 0; i < count; i++) gIn[slot][i] = val(me, op, i);
  return slot;
}

/* Exact check of slot's output for kind over ranks 0..n-1 (ids: rank -> value identity). */
static int checkOut1(int slot, const tdChaosOp *o, int op, const int *ids, int n, int me);
static int checkOut(int slot, const tdChaosOp *o, int op, const int *ids, int n, int me) {
  int ok = checkOut1(slot, o, op, ids, n, me);
  if (!ok)
    fprintf(stderr, "wrong result: trial %d op %d kind %d count %d root %d on %d ranks\n", gTrial,
            op, o->kind, o->count, o->root, n);
  return ok;
}

static int checkOut1(int slot, const tdChaosOp *o, int op, const int *ids, int n, int me) {
  const int32_t *out = gOut[slot];
  size_t c = (size_t)o->count;
  switch (o->kind) {
    case OP_AG:
      for (int q = 0; q < n; q++)
        for (size_t i = 0; i < c; i++)
          if (out[(size_t)q * c + i] != val(ids[q], op, i)) return 0;
      return 1;
    case OP_BCAST:
      for (size_t i = 0; i < c; i++)
        if (out[i] != val(ids[o->root % n], op, i)) return 0;
      return 1;
    case OP_RS: { /* each rank gets its block of count/n of the sum */
      size_t per = c / (size_t)n;
      for (size_t i = 0; i < per; i++) {
        int32_t e = 0;
        for (int q = 0; q < n; q++) e += val(ids[q], op, (size_t)me * per + i);
        if (out[i] != e) return 0;
      }
      return 1;
    }
    default:
      for (size_t i = 0; i < c; i++) {
        int32_t e = 0;
        for (int q = 0; q < n; q++) e += val(ids[q], op, i);
        if (out[i] != e) return 0;
      }
      return 1;
  }
}

/* Issues op o on c (ranks ids[0..n)); slot's buffers; req NULL: blocking. */
static tpudistResult_t issue(const tdChaosOp *o, int op, tpudistComm_t c, const int *ids, int n,
                             int me, int slot, tpudistRequest_t *req) {
  size_t cnt = (size_t)o->count;
  fillAndCount(slot, ids[me], op, cnt);
  switch (o->kind) {
    case OP_AG:
      return tpudistAllGather(gIn[slot], gOut[slot], cnt, tpudistInt32, c, req);
    case OP_BCAST:
      return tpudistBroadcast(gIn[slot], gOut[slot], cnt, tpudistInt32, o->root % n, c, req);
    case OP_RS:
      return tpudistReduceScatter(gIn[slot], gOut[slot], cnt / (size_t)n, tpudistInt32, tpudistSum,
                                  c, req);
    default:
      return tpudistAllReduce(gIn[slot], gOut[slot], cnt, tpudistInt32, tpudistSum, c, req);
  }
}

/* ---- one trial ---- */
typedef struct {
  tpudistComm_t comm;
  int n, me, ids[MAXR]; /* ids: original (launch) rank of each member */
} tdWorld;

/* Runs the mix; returns 0 if every op succeeded and checked, 1 on the first error, 2 on a wrong
 * result. */
static int gOpsDone; /* operations of the mix completed and checked in this trial */
static int runMix(tdWorld *w, tpudistComm_t half, const int *hids, int hn, int hme, const tdPlan *p,
                  int *victim_at) {
  gOpsDone = 0;
  tpudistRequest_t reqs[NBUF];
  int pend_slot[NBUF], pend_op[NBUF], np = 0, res = 0;
  for (int i = 0; i < p->nops && res == 0; i++) {
    const tdChaosOp *o = &p->ops[i];
    for (int v = 0; v < p->nvict; v++)
      if (victim_at[v] == i) armKill(p->delay[v]);
    tpudistResult_t r;
    if (o->kind == OP_AR_NB && np < 2) {
      int slot = 2 + np;
      r = issue(o, i, w->comm, w->ids, w->n, w->me, slot, &reqs[np]);
      if (r == tpudistSuccess) pend_slot[np] = slot, pend_op[np++] = i;
    } else if (o->kind == OP_GROUP) {
      tpudistGroupStart();
      issue(o, i, w->comm, w->ids, w->n, w->me, 0, NULL);
      issue(o, i, w->comm, w->ids, w->n, w->me, 1, NULL);
      r = tpudistGroupEnd();
      if (r == tpudistSuccess &&
          (!checkOut(0, o, i, w->ids, w->n, w->me) || !checkOut(1, o, i, w->ids, w->n, w->me)))
        res = 2;
    } else if (o->kind == OP_SPLIT_AR && half) {
      r = issue(o, i, half, hids, hn, hme, 0, NULL);
      if (r == tpudistSuccess && !checkOut(0, o, i, hids, hn, hme)) res = 2;
    } else {
      tdChaosOp b = *o;
      if (b.kind == OP_AR_NB || b.kind == OP_SPLIT_AR) b.kind = OP_AR;
      r = issue(&b, i, w->comm, w->ids, w->n, w->me, 0, NULL);
      if (r == tpudistSuccess && !checkOut(0, &b, i, w->ids, w->n, w->me)) res = 2;
    }
    if (r != tpudistSuccess) res = 1;
    if (res == 0) gOpsDone++;
  }
  for (int k = 0; k < np; k++) { /* complete the non-blocking ones */
    tdChaosOp b = p->ops[pend_op[k]];
    b.kind = OP_AR;
    tpudistResult_t r = tpudistWait(reqs[k]);
    if (r != tpudistSuccess && res == 0) res = 1;
    if (r == tpudistSuccess && res == 0 &&
        !checkOut(pend_slot[k], &b, pend_op[k], w->ids, w->n, w->me))
      res = 2;
  }
  return res;
}

/* The fixed checks on the shrunk communicator: membership in order, then exact collectives. */
static int verify(tdWorld *w, const int *expect, int ne) {
  int n = -1, me = -1;
  tpudistCommCount(w->comm, &n);
  tpudistCommUserRank(w->comm, &me);
  if (n != ne || me < 0 || me >= n || expect[me] != w->ids[w->me]) {
    fprintf(stderr, "wrong membership: rank %d of %d, expected %d ranks\n", me, n, ne);
    return 2;
  }
  int32_t mine = w->ids[w->me], all[MAXR];
  if (tpudistAllGather(&mine, all, 1, tpudistInt32, w->comm, NULL) != tpudistSuccess) return 1;
  for (int q = 0; q < n; q++)
    if (all[q] != expect[q]) return 2;
  w->n = n;
  w->me = me;
  memcpy(w->ids, expect, sizeof(int) * (size_t)n);
  tdChaosOp fixed[] = {{OP_AR, 1, 0},    {OP_AR, 1000, 0},    {OP_AR, 262144, 0},
                       {OP_AG, 1000, 0}, {OP_BCAST, 4096, 1}, {OP_RS, 840 * n, 0}};
  for (int i = 0; i < 6; i++) {
    if (issue(&fixed[i], 100 + i, w->comm, w->ids, n, me, 0, NULL) != tpudistSuccess) return 1;
    if (!checkOut(0, &fixed[i], 100 + i, w->ids, n, me)) return 2;
  }
  return 0;
}

/* Survivor side after the first error; returns 0 ok, 1 failed, 2 wrong; *ms: error to usable. */
static int recover(tdWorld *w, tpudistComm_t *half, const tdPlan *p, double t_err, double *ms) {
  int expect[MAXR], ne = 0;
  for (int q = 0; q < w->n; q++) {
    int dead = 0;
    for (int v = 0; v < p->nvict; v++) dead |= p->victim[v] == q;
    if (!dead) expect[ne++] = w->ids[q];
  }
  if (*half) tpudistCommRevoke(*half); /* its peers learn of it at once */
  tpudistComm_t next = NULL;
  tpudistResult_t r = tpudistCommShrink(w->comm, NULL, 0, &next, NULL, TPUDIST_SHRINK_ABORT);
  *ms = nowMs() - t_err;
  if (*half) tpudistCommDestroy(*half); /* never waits: revoked; the victims are gone by now */
  *half = NULL;
  if (r != tpudistSuccess) {
    fprintf(stderr, "shrink: %s\n", tpudistGetLastError(w->comm));
    return 1;
  }
  tpudistCommDestroy(w->comm);
  w->comm = next;
  return verify(w, expect, ne);
}

static int trial(tdWorld *w, uint64_t seed, int id) {
  tdPlan p;
  drawPlan(seed, id, w->n, &p);
  int victim_at[2] = {-1, -1}, is_victim = 0;
  for (int v = 0; v < p.nvict; v++)
    if (p.victim[v] == w->me) victim_at[v] = p.at[v], is_victim = 1;
  gTrial = id;
  armWatchdog();
  tpudistComm_t half = NULL;
  int hids[MAXR], hn = 0, hme = 0;
  if (w->n >= 4 && tpudistCommSplit(w->comm, w->me % 2, w->me, &half, NULL) == tpudistSuccess) {
    for (int q = w->me % 2; q < w->n; q += 2) {
      if (q == w->me) hme = hn;
      hids[hn++] = w->ids[q];
    }
  }
  int res = runMix(w, half, hids, hn, hme, &p, victim_at);
  while (res == 0) { /* the victim dies in the mix or here: all-reduce until the error */
    tdChaosOp o = {OP_AR, 1024, 0};
    if (issue(&o, 99, w->comm, w->ids, w->n, w->me, 0, NULL) != tpudistSuccess) res = 1;
  }
  double t_err = nowMs();
  if (is_victim) { /* an error before this victim's own kill: die now */
    kill(getpid(), SIGKILL);
  }
  char vs[32];
  snprintf(vs, sizeof(vs), p.nvict == 2 ? "%d,%d" : "%d", w->ids[p.victim[0]], w->ids[p.victim[1]]);
  int n0 = w->n, me0 = w->ids[w->me];
  double ms = 0;
  armWatchdog();
  if (res != 2) res = recover(w, &half, &p, t_err, &ms);
  gDeadline = 0;
  printf("TRIAL %d n=%d victims=%s rank=%d result=%s ms=%.1f ops=%d/%d\n", id, n0, vs, me0,
         res == 0   ? "ok"
         : res == 2 ? "wrong"
                    : "fail",
         ms, gOpsDone, p.nops);
  fflush(stdout);
  return res;
}

static int countThreads(void) {
  DIR *d = opendir("/proc/self/task");
  int n = 0;
  struct dirent *e;
  while (d && (e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    n++;
    if (getenv("TD_CHAOS_THREADS")) {
      char path[300], name[64] = "";
      snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
      FILE *f = fopen(path, "r");
      if (f && fgets(name, sizeof(name), f)) fprintf(stderr, "thread %s: %s", e->d_name, name);
      if (f) fclose(f);
    }
  }
  if (d) closedir(d);
  return n;
}

int main(int argc, char **argv) {
  const char *r = getenv("RANK"), *ws = getenv("WORLD_SIZE"), *t = getenv("TPU_DIST_TIMEOUT_MS");
  if (argc < 5 || !r || !ws) {
    fprintf(stderr, "usage: RANK=r WORLD_SIZE=n chaos_job SEED FIRST_TRIAL MAX_TRIALS MIN_RANKS\n");
    return 2;
  }
  uint64_t seed = strtoull(argv[1], NULL, 10);
  int first = atoi(argv[2]), max = atoi(argv[3]), min_ranks = atoi(argv[4]);
  tdWorld w;
  w.n = atoi(ws);
  w.me = atoi(r);
  gTimeoutMs = t ? atoi(t) : 300000;
  for (int q = 0; q < w.n && q < MAXR; q++) w.ids[q] = q;
  for (int b = 0; b < NBUF; b++) {
    gIn[b] = calloc(MAXB / 4, 4);
    gOut[b] = calloc(MAXB / 4 * 2, 4); /* all-gather room */
  }
  pthread_t wd;
  pthread_create(&wd, NULL, watchdog, NULL);
  gTrial = -1;
  armWatchdog();
  if (w.n > MAXR || tpudistCommInitEnv(&w.comm, w.n, w.me, NULL) != tpudistSuccess) {
    fprintf(stderr, "init: %s\n", tpudistGetLastError(NULL));
    return 1;
  }
  gDeadline = 0;
  int bad = 0;
  for (int k = 0; k < max && w.n >= min_ranks && !bad; k++) bad = trial(&w, seed, first + k) != 0;
  if (!bad) tpudistCommDestroy(w.comm);
  for (int b = 0; b < NBUF; b++) {
    free(gIn[b]);
    free(gOut[b]);
  }
  printf("THREADS %d\n", countThreads() - 2); /* less this one and the watchdog */
  return bad ? 4 : 0;                         /* not 1: sanitizers exit with 1 (or 23) */
}
