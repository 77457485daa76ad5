/*
 * defer_job.c - TPU_DIST_MODE=defer against strict (tests/fault/defer.sh). Ranks are started
 * without mpirun (TPU_DIST_COMM_ID, RANK, WORLD_SIZE: tests/mpi/launch.sh), so that a rank can
 * die without hanging a launcher.
 *
 *   defer_job exact     two splits of the world, one strict and one config.mode = defer. For
 *                       every datatype, a queue of every collective and op at counts 0 to 5000
 *                       (compatible and incompatible mixed, in place, a dependent pair) runs
 *                       blocking on strict and non-blocking on defer, waited for out of order:
 *                       every output is bit-identical, integer sums exact; the same on the
 *                       halves split of each; deferred operations before a group; in-place
 *                       reduce-scatters fused; a request that nobody waits for completes through
 *                       the timer alone; fusion happened, without copies for every collective
 *                       that runs a plan.
 *   defer_job diverge   TPU_DIST_CHECK=1: rank 0 waits after 2 deferred all-reduces, the others
 *                       after 3: every rank fails with tpudistInvalidUsage naming the divergence.
 *   defer_job abort     2 ranks: rank 0 defers 8 operations and waits on one; another thread
 *                       aborts: the wait returns tpudistAborted within 100 ms.
 *   defer_job dead      rank n-1 dies (SIGKILL) while the others hold deferred operations:
 *                       every one of them fails within TPU_DIST_TIMEOUT_MS + 2 s.
 * Exit status 0 on success; each failure is printed with the rank.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "comm.h"
#include "job_util.h"
#include "tpu_dist.h"

static long gChecks;

static uint64_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  return x ^ (x >> 33);
}

static size_t dtSize(int dt) {
  static const size_t s[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2};
  return s[dt];
}

/* One call of a queue. in/out per mode; inplace: NCCL's in-place form (OUTPUT holds the input;
 * ReduceScatter: OUTPUT is block rank of INPUT); dep: AllReduce in place on call dep's output
 * (runs after it). */
typedef struct {
  tdColl coll;
  int dt, op, root, inplace, dep;
  size_t count;
  char *buf[2]; /* per mode: the one allocation, input then output */
  size_t inb, outb;
  tpudistRequest_t req;
} Call;

/* Elements of INPUT (in) or OUTPUT for n ranks. */
static size_t elems(const Call *k, int n, int in) {
  size_t c = k->count;
  if (k->coll == TD_COLL_ALLGATHER) return in ? c : c * n;
  if (k->coll == TD_COLL_REDUCESCATTER) return in ? c * n : c;
  if (k->coll == TD_COLL_ALLTOALL) return c * n;
  return c;
}

/* Rank r's input byte i of call k in round q: every rank can compute every rank's. */
static unsigned char inByte(int q, int k, int r, size_t i) {
  return (unsigned char)mix(((uint64_t)q << 48) ^ ((uint64_t)k << 36) ^ ((uint64_t)r << 30) ^ i);
}

static char *inPtr(Call *k, int m, int rank) {
  if (!k->inplace || k->coll == TD_COLL_REDUCESCATTER) return k->buf[m];
  char *out = k->buf[m] + k->inb;
  return k->coll == TD_COLL_ALLGATHER ? out + (size_t)rank * k->count * dtSize(k->dt) : out;
}

static char *outPtr(Call *k, int m, int rank) {
  if (k->inplace && k->coll == TD_COLL_REDUCESCATTER)
    return k->buf[m] + (size_t)rank * k->count * dtSize(k->dt);
  return k->buf[m] + k->inb;
}

static void fillInputs(Call *ks, int nk, int q, int m, int rank, int n) {
  for (int j = 0; j < nk; j++) {
    Call *k = &ks[j];
    memset(k->buf[m], 0x5a, k->inb + k->outb);
    if (k->dep >= 0) continue;
    char *in = inPtr(k, m, rank);
    size_t bytes = elems(k, n, 1) * dtSize(k->dt);
    for (size_t i = 0; i < bytes; i++) in[i] = (char)inByte(q, j, rank, i);
  }
}

static tpudistResult_t issue(Call *k, Call *ks, int m, int rank, tpudistComm_t c,
                             tpudistRequest_t *req) {
  char *in = inPtr(k, m, rank), *out = outPtr(k, m, rank);
  if (k->dep >= 0) in = out = ks[k->dep].buf[m] + ks[k->dep].inb;
  switch (k->coll) {
    case TD_COLL_ALLREDUCE:
      return tpudistAllReduce(in, out, k->count, k->dt, k->op, c, req);
    case TD_COLL_BROADCAST:
      return tpudistBroadcast(in, out, k->count, k->dt, k->root, c, req);
    case TD_COLL_REDUCE:
      return tpudistReduce(in, out, k->count, k->dt, k->op, k->root, c, req);
    case TD_COLL_ALLGATHER:
      return tpudistAllGather(in, out, k->count, k->dt, c, req);
    case TD_COLL_REDUCESCATTER:
      return tpudistReduceScatter(in, out, k->count, k->dt, k->op, c, req);
    default:
      return tpudistAllToAll(in, out, k->count, k->dt, c, req);
  }
}

static Call mk(tdColl coll, int dt, int op, int root, int inplace, size_t count) {
  Call k;
  memset(&k, 0, sizeof(k));
  k.coll = coll;
  k.dt = dt;
  k.op = op;
  k.root = root;
  k.inplace = inplace;
  k.dep = -1;
  k.count = count;
  return k;
}

/* The queue of round q for datatype dt: every op at several counts, in place and a dependent
 * pair, slot-sized all-reduces that fuse beyond a slot, reductions that fuse, then every other
 * collective. */
static int buildQueue(Call *ks, int dt, int n, int q) {
  static const size_t counts[] = {0, 3, 100, 700, 3000, 4000, 5000};
  int nk = 0;
  for (int op = 0; op < 5; op++)
    for (int s = 0; s < 7; s++)
      ks[nk++] = mk(TD_COLL_ALLREDUCE, dt, op, 0, (s + op + q) % 4 == 1, counts[s]);
  ks[nk] = ks[3];
  ks[nk].dep = 3; /* in place on call 3's output (so not checked against sums): runs after it */
  nk++;
  for (int op = 0; op < 5; op++) {
    ks[nk++] = mk(TD_COLL_REDUCE, dt, op, (op + q) % n, 0, 257);
    ks[nk++] = mk(TD_COLL_REDUCESCATTER, dt, op, 0, 0, 33 + op);
  }
  for (int i = 0; i < 6; i++) /* slot-sized all-reduces of one op, more than a slot together */
    ks[nk++] = mk(TD_COLL_ALLREDUCE, dt, q % 5, 0, i == 2, 2000 / dtSize(dt) - (size_t)i);
  for (int i = 0; i < 4; i++) {   /* reductions of one op and root: fused with each other */
    size_t zero = i == 3 ? 0 : 1; /* a member with no elements between others */
    ks[nk++] = mk(TD_COLL_REDUCE, dt, q % 5, q % n, i == 1, zero * (10 + 150 * (size_t)i));
    ks[nk++] = mk(TD_COLL_REDUCESCATTER, dt, q % 5, 0, 0, zero * (5 + 20 * (size_t)i));
    ks[nk++] = mk(TD_COLL_REDUCESCATTER, dt, q % 5, 0, 1, zero * (7 + 31 * (size_t)i));
  }
  for (int s = 0; s < 5; s++) { /* counts 0 to 4000: slot-sized and larger members fuse apart */
    ks[nk++] = mk(TD_COLL_BROADCAST, dt, 0, s % n, s == 2, counts[s + 1] - (s == 4));
    ks[nk++] = mk(TD_COLL_ALLGATHER, dt, 0, 0, s == 3, s ? counts[s + 1] / 2 + 1 : 0);
    ks[nk++] = mk(TD_COLL_ALLTOALL, dt, 0, 0, 0, s ? counts[s + 1] / 3 + 1 : 0);
  }
  for (int j = 0; j < nk; j++) {
    Call *k = &ks[j];
    k->inb = (elems(k, n, 1) * dtSize(dt) + 63) & ~(size_t)63;
    k->outb = elems(k, n, 0) * dtSize(dt) + 64;
    for (int m = 0; m < 2; m++) k->buf[m] = malloc(k->inb + k->outb);
  }
  return nk;
}

/* Integer sums checked exactly against every rank's input (recomputed here). */
static void checkSum(const Call *k, int j, int q, int n, int m) {
  if (k->coll != TD_COLL_ALLREDUCE || k->op != tpudistSum || k->dep >= 0 || k->inplace || j == 3 ||
      (k->dt != tpudistInt32 && k->dt != tpudistUint64))
    return;
  gChecks++;
  size_t es = dtSize(k->dt);
  for (size_t i = 0; i < k->count; i++) {
    uint64_t want = 0, got = 0;
    for (int r = 0; r < n; r++) {
      uint64_t v = 0;
      for (size_t b = 0; b < es; b++) v |= (uint64_t)inByte(q, j, r, i * es + b) << (8 * b);
      want += v;
    }
    memcpy(&got, k->buf[m] + k->inb + i * es, es);
    if (es == 4) want &= 0xffffffffu;
    if (got != want) {
      FAIL("round %d call %d: sum element %zu is 0x%llx, expected 0x%llx", q, j, i,
           (unsigned long long)got, (unsigned long long)want);
      return;
    }
  }
}

/* One round: strict blocking, then defer non-blocking waited in reverse; bit-identical. */
static void round1(tpudistComm_t strict, tpudistComm_t defer, int dt, int q) {
  int n, rank;
  tpudistCommCount(strict, &n);
  tpudistCommUserRank(strict, &rank);
  Call ks[96];
  int nk = buildQueue(ks, dt, n, q);
  for (int m = 0; m < 2; m++) {
    fillInputs(ks, nk, q, m, rank, n);
    tpudistComm_t c = m ? defer : strict;
    for (int j = 0; j < nk; j++) {
      tpudistResult_t r = issue(&ks[j], ks, m, rank, c, m ? &ks[j].req : NULL);
      if (r != tpudistSuccess)
        FAIL("round %d call %d mode %d: %s", q, j, m, tpudistGetLastError(c));
    }
    for (int j = nk - 1; m && j >= 0; j--)
      if (tpudistWait(ks[j].req) != tpudistSuccess)
        FAIL("round %d call %d: wait: %s", q, j, tpudistGetLastError(c));
  }
  for (int j = 0; j < nk; j++) {
    Call *k = &ks[j];
    int rooted_out = k->coll == TD_COLL_REDUCE && k->root != rank;
    gChecks++;
    if (!rooted_out && memcmp(outPtr(k, 0, rank), outPtr(k, 1, rank), k->outb - 64))
      FAIL(
          "round %d dtype %d call %d (coll %d op %d count %zu inplace %d): defer differs from "
          "strict",
          q, dt, j, k->coll, k->op, k->count, k->inplace);
    checkSum(k, j, q, n, 1);
    free(k->buf[0]);
    free(k->buf[1]);
  }
}

/* Deferred all-reduces, then a group, then waits: exact. */
static void groupCase(tpudistComm_t defer, int n) {
  int32_t a[3][64], g[2][64];
  tpudistRequest_t req[3];
  for (int j = 0; j < 3; j++) {
    for (int i = 0; i < 64; i++) a[j][i] = j * 100 + i;
    if (tpudistAllReduce(a[j], a[j], 64, tpudistInt32, tpudistSum, defer, &req[j]))
      FAIL("group case: deferred all-reduce %d", j);
  }
  tpudistGroupStart();
  for (int j = 0; j < 2; j++) {
    for (int i = 0; i < 64; i++) g[j][i] = j + i;
    tpudistAllReduce(g[j], g[j], 64, tpudistInt32, tpudistSum, defer, NULL);
  }
  if (tpudistGroupEnd() != tpudistSuccess) FAIL("group end: %s", tpudistGetLastError(defer));
  for (int j = 0; j < 3; j++)
    if (tpudistWait(req[j]) != tpudistSuccess) FAIL("group case: wait %d", j);
  gChecks++;
  for (int i = 0; i < 64; i++)
    if (a[2][i] != n * (200 + i) || g[1][i] != n * (1 + i)) {
      FAIL("group case: element %d is %d / %d", i, a[2][i], g[1][i]);
      break;
    }
}

/* In-place reduce-scatters of one op (a member with no elements among them), deferred and waited
 * for: integer sums exact; returns how many of them ran fused. */
static uint64_t inplaceRsRound(tpudistComm_t defer, int rank, int n, int q) {
  enum { K = 3 };
  static const size_t cnt[K] = {5, 0, 77};
  int32_t *x[K];
  tpudistRequest_t req[K];
  uint64_t fused0 = defer->c.defer.stat_fused;
  for (int k = 0; k < K; k++) {
    x[k] = malloc(cnt[k] * (size_t)n * sizeof(int32_t) + sizeof(int32_t));
    for (size_t i = 0; i < cnt[k] * (size_t)n; i++)
      x[k][i] = rank * 1000 + k * 100 + q + (int32_t)i;
    if (tpudistReduceScatter(x[k], x[k] + (size_t)rank * cnt[k], cnt[k], tpudistInt32, tpudistSum,
                             defer, &req[k]) != tpudistSuccess)
      FAIL("in-place reduce-scatter %d: %s", k, tpudistGetLastError(defer));
  }
  for (int k = 0; k < K; k++)
    if (tpudistWait(req[k]) != tpudistSuccess) FAIL("in-place reduce-scatter %d: wait", k);
  gChecks++;
  for (int k = 0; k < K; k++) {
    for (size_t i = 0; i < cnt[k]; i++) {
      int32_t at = (int32_t)((size_t)rank * cnt[k] + i);
      int32_t want = 1000 * n * (n - 1) / 2 + n * (k * 100 + q + at);
      if (x[k][at] != want) {
        FAIL("in-place reduce-scatter %d: element %zu is %d, expected %d", k, i, x[k][at], want);
        break;
      }
    }
    free(x[k]);
  }
  return defer->c.defer.stat_fused - fused0;
}

/* In-place reduce-scatters fuse: each member's OUTPUT is inside its own INPUT. A timer of less
 * than a millisecond may split the three calls over flushes (the last configuration of
 * defer.sh exact): then only the results count; otherwise one of 20 rounds must fuse all three
 * (the same on every rank: a flush is agreed). */
static void inplaceRsCase(tpudistComm_t defer, int rank, int n) {
  int timer = defer->c.net.cfg->defer_us, fused = 0;
  for (int q = 0; q < 20 && !fused; q++) fused = inplaceRsRound(defer, rank, n, q) == 3;
  if (n > 1 && !fused && (timer == 0 || timer >= 1000)) FAIL("in-place reduce-scatters not fused");
}

/* A request nobody waits for completes through the timer (TPU_DIST_DEFER_US) alone. */
static void timerCase(tpudistComm_t defer, int n) {
  int32_t x[1000];
  for (int i = 0; i < 1000; i++) x[i] = i;
  tpudistRequest_t req;
  if (tpudistAllReduce(x, x, 1000, tpudistInt32, tpudistSum, defer, &req) != tpudistSuccess)
    FAIL("timer case: issue");
  double t0 = nowMs();
  while (nowMs() - t0 < 5000 && __atomic_load_n(&x[999], __ATOMIC_ACQUIRE) != 999 * n) usleep(1000);
  gChecks++;
  if (x[999] != 999 * n) FAIL("timer case: not complete 5 s after the call without a wait");
  if (tpudistWait(req) != tpudistSuccess) FAIL("timer case: wait");
}

static tpudistComm_t split(tpudistComm_t c, int color, int rank, int mode) {
  tpudistConfig_t cfg = TPUDIST_CONFIG_INITIALIZER;
  cfg.mode = mode;
  tpudistComm_t s = NULL;
  if (tpudistCommSplit(c, color, rank, &s, &cfg) != tpudistSuccess)
    FAIL("split: %s", tpudistGetLastError(c));
  return s;
}

static int modeExact(tpudistComm_t world, int rank, int n) {
  tpudistComm_t s = split(world, 0, rank, TPUDIST_MODE_STRICT);
  tpudistComm_t d = split(world, 0, rank, TPUDIST_MODE_DEFER);
  if (!s || !d) return 1;
  for (int dt = 0; dt < 10; dt++) round1(s, d, dt, dt);
  tpudistComm_t sh = split(s, rank % 2, rank, TPUDIST_MODE_STRICT);
  tpudistComm_t dh = split(d, rank % 2, rank, TPUDIST_CONFIG_UNDEF_INT); /* inherits defer */
  if (dh && dh->c.mode != TPUDIST_MODE_DEFER) FAIL("a split of a defer communicator is not defer");
  for (int dt = 0; sh && dh && dt < 10; dt += 3) round1(sh, dh, dt, 100 + dt);
  groupCase(d, n);
  inplaceRsCase(d, rank, n);
  timerCase(d, n);
  tdComm *c = &d->c;
  printf(
      "rank %d: %ld checks; %llu flushes, %llu fused operations (%llu gathered, %llu without "
      "copies) carrying %llu\n",
      rank, gChecks, (unsigned long long)c->defer.stat_agreements,
      (unsigned long long)c->defer.stat_hosts, (unsigned long long)c->defer.stat_gathered,
      (unsigned long long)c->defer.stat_direct, (unsigned long long)c->defer.stat_fused);
  static const tdColl direct[] = {TD_COLL_ALLREDUCE, TD_COLL_REDUCESCATTER, TD_COLL_BROADCAST,
                                  TD_COLL_ALLGATHER, TD_COLL_ALLTOALL};
  for (size_t i = 0; n > 1 && i < sizeof(direct) / sizeof(direct[0]); i++)
    if (!(c->defer.stat_direct_colls & (1u << direct[i])))
      FAIL("no %s fused without copies", schedCollName(direct[i]));
  if (n > 1 && (c->defer.stat_hosts == 0 || c->defer.stat_fused < 2 * c->defer.stat_hosts))
    FAIL("nothing fused");
  if (n > 1 && n <= 8 && !getenv("TPU_DIST_TRANSPORTS") && !c->defer.stat_gathered)
    FAIL("no slot all-reduces fused beyond a slot"); /* the slots need shm among <= 8 ranks */
  if (n > 1 && !(c->defer.stat_host_colls & (1u << TD_COLL_REDUCESCATTER)))
    FAIL("no reduce-scatters fused"); /* ring and recursive halving: whole blocks at any size */
  if (n == 2 && !(c->defer.stat_direct_colls & (1u << TD_COLL_REDUCE)))
    FAIL("no reduces fused"); /* 2 ranks: both plans move whole blocks */
  tpudistCommDestroy(sh);
  tpudistCommDestroy(dh);
  tpudistCommDestroy(s);
  tpudistCommDestroy(d);
  return 0;
}

static int modeDiverge(tpudistComm_t world, int rank, int n) {
  tpudistComm_t d = split(world, 0, rank, TPUDIST_MODE_DEFER);
  if (!d) return 1;
  int32_t x[3][16] = {{0}};
  tpudistRequest_t req[3];
  int k = rank == 0 ? 2 : 3;
  for (int j = 0; j < k; j++)
    tpudistAllReduce(x[j], x[j], 16, tpudistInt32, tpudistSum, d, &req[j]);
  double t0 = nowMs();
  tpudistResult_t r = tpudistWait(req[0]);
  const char *msg = tpudistGetLastError(d);
  printf("rank %d: %s after %.0f ms: %s\n", rank, tpudistGetErrorString(r), nowMs() - t0, msg);
  if (r != tpudistInvalidUsage) FAIL("the divergence was not reported (%d)", r);
  if (!strstr(msg, "flush points diverge") || !strstr(msg, "rank 0 flushes up to 1 (wait)"))
    FAIL("message does not name the divergence: %s", msg);
  for (int j = 1; j < k; j++)
    if (tpudistWait(req[j]) == tpudistSuccess) FAIL("deferred request %d succeeded", j);
  (void)n;
  tpudistCommAbort(d);
  return 0;
}

typedef struct {
  tpudistComm_t comm;
  double t;
} AbortArg;

static void *aborter(void *p) {
  AbortArg *a = p;
  usleep(200000);
  a->t = nowMs();
  tpudistCommAbort(a->comm);
  return NULL;
}

static int modeAbort(tpudistComm_t world, int rank, int n) {
  tpudistComm_t d = split(world, 0, rank, TPUDIST_MODE_DEFER);
  if (!d || n != 2) return 1;
  if (rank == 0) {
    static int32_t x[8][256];
    tpudistRequest_t req[8];
    for (int j = 0; j < 8; j++)
      if (tpudistAllReduce(x[j], x[j], 256, tpudistInt32, tpudistSum, d, &req[j]))
        FAIL("issue %d", j);
    AbortArg a = {d, 0};
    pthread_t th;
    pthread_create(&th, NULL, aborter, &a);
    tpudistResult_t r = tpudistWait(req[5]); /* the flush blocks: rank 1 never joins */
    double t = nowMs();
    pthread_join(th, NULL);
    /* the other requests went with the communicator (CommAbort frees it) */
    printf("rank 0: a wait on 8 deferred requests released %.2f ms after the abort (%s)\n", t - a.t,
           tpudistGetErrorString(r));
    if (r != tpudistAborted) FAIL("the waited request returned %d, not aborted", r);
    PROMPT("abort releases a deferred wait", t - a.t, TD_ABORT_MS, TD_ABORT_MARGIN_MS);
  } else {
    usleep(600000); /* never joins */
    tpudistCommAbort(d);
  }
  int one = 1, sum = 0;
  tpudistAllReduce(&one, &sum, 1, tpudistInt32, tpudistSum, world, NULL);
  if (sum != n) FAIL("world after the abort: %d", sum);
  return 0;
}

static int modeDead(tpudistComm_t world, int rank, int n) {
  tpudistComm_t d = split(world, 0, rank, TPUDIST_MODE_DEFER);
  if (!d) return 1;
  int one = 1, sum = 0;
  tpudistAllReduce(&one, &sum, 1, tpudistInt32, tpudistSum, d, NULL); /* everyone connected */
  if (rank == n - 1) raise(SIGKILL);
  static int32_t x[6][1024];
  tpudistRequest_t req[6];
  for (int j = 0; j < 6; j++)
    if (tpudistAllReduce(x[j], x[j], 1024, tpudistInt32, tpudistSum, d, &req[j]))
      FAIL("issue %d", j);
  double t0 = nowMs();
  int failed = 0;
  for (int j = 0; j < 6; j++) failed += tpudistWait(req[j]) != tpudistSuccess;
  double el = nowMs() - t0;
  const char *tmo = getenv("TPU_DIST_TIMEOUT_MS");
  double timeout = tmo ? atof(tmo) : 300000;
  printf("rank %d: %d of 6 deferred requests failed after %.0f ms (%s)\n", rank, failed, el,
         tpudistGetLastError(d));
  if (failed != 6) FAIL("%d of 6 deferred requests failed", failed);
  PROMPT("a dead peer fails deferred requests within the timeout", el, timeout,
         TD_TIMEOUT_MARGIN_MS);
  tpudistCommAbort(d);
  _exit(gFail ? 1 : 0); /* the world communicator lost a rank too */
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  const char *re = getenv("RANK"), *ws = getenv("WORLD_SIZE");
  if (argc < 2 || !re || !ws) {
    fprintf(stderr, "usage: RANK=r WORLD_SIZE=n defer_job exact | diverge | abort | dead\n");
    return 2;
  }
  int rank = atoi(re), n = atoi(ws);
  gRank = rank;
  tpudistComm_t world = NULL;
  if (tpudistCommInitEnv(&world, n, rank, NULL) != tpudistSuccess) {
    FAIL("init: %s", tpudistGetLastError(NULL));
    return 1;
  }
  int rc = 2;
  if (!strcmp(argv[1], "exact")) rc = modeExact(world, rank, n);
  if (!strcmp(argv[1], "diverge")) rc = modeDiverge(world, rank, n);
  if (!strcmp(argv[1], "abort")) rc = modeAbort(world, rank, n);
  if (!strcmp(argv[1], "dead")) rc = modeDead(world, rank, n);
  if (rc == 2) fprintf(stderr, "defer_job: unknown mode %s\n", argv[1]);
  if (rc == 0) tpudistCommDestroy(world);
  return rc ? rc : gFail ? 1 : 0;
}
