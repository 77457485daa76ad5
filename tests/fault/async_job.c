/*
 * async_job.c - non-blocking creation (config.blocking = 0), the JSON flight record and the
 * health query, one mode per run, launched without mpirun (TPU_DIST_COMM_ID, RANK, WORLD_SIZE;
 * tests/fault/async.sh):
 *   async_job init         N ranks: CommInitEnv returns tpudistInProgress, calls on the handle
 *                          are refused while it is created, GetAsyncError reaches success, exact
 *                          all-reduces follow; then a non-blocking split (exact all-reduces on
 *                          the child, ranks renumbered by key) and a split where rank 0 passes
 *                          NOCOLOR; no thread or socket is left after destroy
 *   async_job abort        started as N-1 of N ranks (one never arrives): CommAbort in the
 *                          middle of the creation returns within 100 ms, no thread or socket left
 *   async_job timeout      the same without abort: the creation ends in tpudistTimeout within the
 *                          timeout, calls on the handle report it, destroy frees everything
 *   async_job splitabort   2 ranks, rank 1 never splits: rank 0 aborts a non-blocking split
 *                          within 100 ms, then aborts the parent while a second split is pending
 *                          (the split fails with tpudistAborted); nothing left behind
 *   async_job store        CommInitStore, non-blocking, through a store kept in files
 * (TD_STORE_DIR): exact all-reduces; started as rank 1 of 2 alone (rank 0 never publishes its
 * address), CommAbort within 100 ms while the store is asked async_job frdump       1 rank: a
 * forced timeout writes TPU_DIST_FR_DUMP_DIR's JSON record (async.sh parses and checks it)
 *   async_job shrink       N ranks, rank N-1 dies: the others' CommShrink without blocking (config
 *                          blocking = 0, or inherited from a non-blocking world) returns
 *                          tpudistInProgress, polls to success, exact all-reduces follow
 *   async_job shrinkabort  3 ranks, rank 2 dies, only rank TD_SHRINKER shrinks (non-blocking):
 *                          CommAbort of the pending shrink within 100 ms, nothing left
 *   async_job stall MS     N ranks, TPU_DIST_ALGO=allreduce=ring: rank N-1 sleeps MS before the
 *                          third all-reduce (async.sh queries the job meanwhile)
 */
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../file_store.h"
#include "job_util.h"
#include "tpu_dist.h"

/* Threads of this process, and its sockets (entries of /proc/self/task and /proc/self/fd). */
static int countThreads(void) {
  DIR *d = opendir("/proc/self/task");
  int n = 0;
  for (struct dirent *e; d && (e = readdir(d));) n += e->d_name[0] != '.';
  if (d) closedir(d);
  return n;
}

static int countSockets(void) {
  DIR *d = opendir("/proc/self/fd");
  int n = 0;
  char path[300], link[64];
  for (struct dirent *e; d && (e = readdir(d));) {
    snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
    ssize_t l = readlink(path, link, sizeof(link) - 1);
    if (l > 0 && (link[l] = 0, !strncmp(link, "socket:", 7))) n++;
  }
  if (d) closedir(d);
  return n;
}

static int gThreads, gSockets;

static void baseline(void) {
  gThreads = countThreads();
  gSockets = countSockets();
}

/* Nothing of a communicator is left: threads and sockets back at the baseline. A joined thread
 * may linger in /proc/self/task for a moment after pthread_join, so the count gets 500 ms. */
static void checkNothingLeft(const char *when) {
  int t = countThreads(), s = countSockets();
  for (double t0 = nowMs(); t != gThreads && nowMs() - t0 < 500; t = countThreads()) sleepMs(5);
  if (t != gThreads) FAIL("%s: %d threads, %d before", when, t, gThreads);
  if (s != gSockets) FAIL("%s: %d sockets, %d before", when, s, gSockets);
}

static tpudistConfig_t nonBlocking(void) {
  tpudistConfig_t cfg = TPUDIST_CONFIG_INITIALIZER;
  cfg.blocking = 0;
  return cfg;
}

/* Polls the creation until it ends (bounded); returns its state. */
static tpudistResult_t pollReady(tpudistComm_t c, int limit_ms) {
  tpudistResult_t st = tpudistInProgress;
  double t0 = nowMs();
  while (st == tpudistInProgress && nowMs() - t0 < limit_ms) {
    tpudistResult_t r = tpudistCommGetAsyncError(c, &st);
    if (r != tpudistSuccess) {
      FAIL("GetAsyncError: %s", tpudistGetErrorString(r));
      return r;
    }
    if (st == tpudistInProgress) sleepMs(2);
  }
  return st;
}

/* An exactly checked int32 sum all-reduce: rank r of c contributes (vals[r]*1000 + i%977). */
static void checkedAllReduce(tpudistComm_t c, const int *vals, int n, int me, size_t count) {
  int32_t *in = calloc(count, 4), *out = calloc(count, 4);
  if (!in || !out) {
    FAIL("out of memory");
    free(in);
    free(out);
    return;
  }
  for (size_t i = 0; i < count; i++) in[i] = vals[me] * 1000 + (int32_t)(i % 977);
  tpudistResult_t r = tpudistAllReduce(in, out, count, tpudistInt32, tpudistSum, c, NULL);
  if (r != tpudistSuccess) FAIL("all-reduce of %zu: %s", count, tpudistGetLastError(c));
  for (size_t i = 0; r == tpudistSuccess && i < count; i++) {
    int32_t e = 0;
    for (int q = 0; q < n; q++) e += vals[q] * 1000 + (int32_t)(i % 977);
    if (out[i] != e) {
      FAIL("all-reduce of %zu: element %zu is %d, expected %d", count, i, out[i], e);
      break;
    }
  }
  free(in);
  free(out);
}

static void exactAllReduces(tpudistComm_t c, const int *vals, int n, int me) {
  const size_t counts[] = {1, 7, 600, 65536};
  for (size_t k = 0; k < sizeof(counts) / sizeof(counts[0]); k++)
    checkedAllReduce(c, vals, n, me, counts[k]);
}

/* ---- init -------------------------------------------------------------------------------- */

static void splitNonBlocking(tpudistComm_t world, int rank, int n) {
  tpudistConfig_t cfg = nonBlocking();
  tpudistComm_t child = NULL;
  if (rank == n - 1) sleepMs(200); /* the others' splits are pending meanwhile */
  tpudistResult_t r = tpudistCommSplit(world, rank % 2, -rank, &child, &cfg);
  if (r != tpudistInProgress || !child)
    FAIL("split: %s, expected tpudistInProgress", tpudistGetErrorString(r));
  if (rank != n - 1 && n > 2) { /* pending: the parent may not be destroyed or split again */
    tpudistComm_t other = NULL;
    if (tpudistCommDestroy(world) != tpudistInvalidUsage ||
        tpudistCommSplit(world, 0, 0, &other, NULL) != tpudistInvalidUsage)
      FAIL("destroy or split of a parent with a pending split was not refused");
  }
  if (!child || pollReady(child, 30000) != tpudistSuccess) {
    FAIL("split creation: %s", child ? tpudistGetLastError(child) : "no handle");
    return;
  }
  int m = 0, me = -1, cnt = -1, ur = -1, vals[64];
  for (int q = n - 1; q >= 0; q--) /* key -rank: the new order is descending */
    if (q % 2 == rank % 2) {
      if (q == rank) me = m;
      vals[m++] = q + 1;
    }
  if (tpudistCommCount(child, &cnt) != tpudistSuccess || cnt != m ||
      tpudistCommUserRank(child, &ur) != tpudistSuccess || ur != me)
    FAIL("split child: %d ranks, rank %d; expected %d, %d", cnt, ur, m, me);
  exactAllReduces(child, vals, m, me);
  if (tpudistCommDestroy(child) != tpudistSuccess)
    FAIL("destroy child: %s", tpudistGetLastError(NULL));
}

static void splitNoColor(tpudistComm_t world, int rank, int n) {
  tpudistConfig_t cfg = nonBlocking();
  tpudistComm_t child = (tpudistComm_t)&cfg; /* must become NULL on rank 0 */
  tpudistResult_t r =
      tpudistCommSplit(world, rank == 0 ? TPUDIST_SPLIT_NOCOLOR : 0, rank, &child, &cfg);
  if (rank == 0) {
    if (r != tpudistSuccess || child)
      FAIL("NOCOLOR split: %s, handle %p", tpudistGetErrorString(r), (void *)child);
    return;
  }
  if (r != tpudistInProgress || pollReady(child, 30000) != tpudistSuccess) {
    FAIL("split without rank 0: %s", tpudistGetLastError(child));
    return;
  }
  int vals[64];
  for (int q = 1; q < n; q++) vals[q - 1] = q + 1;
  exactAllReduces(child, vals, n - 1, rank - 1);
  if (tpudistCommDestroy(child) != tpudistSuccess) FAIL("destroy: %s", tpudistGetLastError(NULL));
}

static int modeInit(int rank, int n) {
  baseline();
  tpudistConfig_t cfg = nonBlocking();
  tpudistComm_t c = NULL;
  if (rank == n - 1) sleepMs(300); /* the others' creations are in progress meanwhile */
  tpudistResult_t r = tpudistCommInitEnv(&c, n, rank, &cfg);
  if (r != tpudistInProgress || !c) {
    FAIL("init: %s, expected tpudistInProgress", tpudistGetErrorString(r));
    return 1;
  }
  if (rank != n - 1) {
    int x = 1, cnt;
    r = tpudistAllReduce(&x, &x, 1, tpudistInt32, tpudistSum, c, NULL);
    if (r != tpudistInvalidUsage || !strstr(tpudistGetLastError(NULL), "still being created"))
      FAIL("an all-reduce during creation: %s (%s)", tpudistGetErrorString(r),
           tpudistGetLastError(NULL));
    if (tpudistCommCount(c, &cnt) != tpudistInvalidUsage)
      FAIL("CommCount during creation was not refused");
  }
  double t0 = nowMs();
  tpudistResult_t st = pollReady(c, 30000);
  if (st != tpudistSuccess)
    FAIL("creation ended in %s: %s", tpudistGetErrorString(st), tpudistGetLastError(c));
  if (gFail) return 1;
  int vals[64];
  for (int q = 0; q < n; q++) vals[q] = q + 1;
  exactAllReduces(c, vals, n, rank);
  splitNonBlocking(c, rank, n);
  splitNoColor(c, rank, n);
  exactAllReduces(c, vals, n, rank);
  if (tpudistCommDestroy(c) != tpudistSuccess) FAIL("destroy: %s", tpudistGetLastError(NULL));
  checkNothingLeft("after destroy");
  printf(
      "rank %d: non-blocking init (%.0f ms after the call), split and NOCOLOR split: results "
      "exact\n",
      rank, nowMs() - t0);
  return gFail ? 1 : 0;
}

/* ---- abort, timeout ---------------------------------------------------------------------- */

static int modeAbort(int rank, int n) {
  baseline();
  tpudistConfig_t cfg = nonBlocking();
  tpudistComm_t c = NULL;
  tpudistResult_t r = tpudistCommInitEnv(&c, n, rank, &cfg), st = tpudistSuccess;
  if (r != tpudistInProgress) FAIL("init: %s", tpudistGetErrorString(r));
  sleepMs(200); /* every rank checks its state before any rank aborts */
  if (tpudistCommGetAsyncError(c, &st) != tpudistSuccess || st != tpudistInProgress)
    FAIL("a creation waiting for a missing rank is in state %s", tpudistGetErrorString(st));
  sleepMs(400 + 30 * (n - 1 - rank)); /* rank 0 last: the others abort while they wait for it */
  double t0 = nowMs();
  r = tpudistCommAbort(c);
  double dt = nowMs() - t0;
  if (r != tpudistSuccess) FAIL("abort: %s", tpudistGetErrorString(r));
  PROMPT("abort during the creation", dt, TD_ABORT_MS, TD_ABORT_MARGIN_MS);
  checkNothingLeft("after abort");
  if (tpudistCommGetAsyncError(c, &st) != tpudistInvalidUsage)
    FAIL("the aborted handle is still valid");
  printf("rank %d: abort during creation returned in %.1f ms, nothing left\n", rank, dt);
  return gFail ? 1 : 0;
}

static int modeTimeout(int rank, int n) {
  baseline();
  tpudistConfig_t cfg = nonBlocking();
  cfg.timeoutMs = 1500;
  tpudistComm_t c = NULL;
  double t0 = nowMs();
  tpudistResult_t r = tpudistCommInitEnv(&c, n, rank, &cfg);
  if (r != tpudistInProgress) FAIL("init: %s", tpudistGetErrorString(r));
  tpudistResult_t st = pollReady(c, 10000);
  double dt = nowMs() - t0;
  if (st != tpudistTimeout)
    FAIL("creation without a peer ended in %s, expected a timeout", tpudistGetErrorString(st));
  /* rank 0 times out itself, not before its timeout; the others may hear of it from rank 0 */
  if (rank == 0 && dt < 1400) FAIL("the creation failed after %.0f ms, before its timeout", dt);
  PROMPT("a creation without a peer times out", dt, cfg.timeoutMs, TD_TIMEOUT_MARGIN_MS);
  int x = 1;
  r = tpudistAllReduce(&x, &x, 1, tpudistInt32, tpudistSum, c, NULL);
  if (r != tpudistTimeout || !strstr(tpudistGetLastError(NULL), "creation"))
    FAIL("an all-reduce on the failed handle: %s (%s)", tpudistGetErrorString(r),
         tpudistGetLastError(NULL));
  if (tpudistCommDestroy(c) != tpudistSuccess) FAIL("destroy of the failed handle");
  checkNothingLeft("after destroy");
  printf("rank %d: creation timed out after %.0f ms: %s\n", rank, dt, tpudistGetLastError(NULL));
  return gFail ? 1 : 0;
}

static int modeSplitAbort(int rank, int n) {
  tpudistComm_t world = NULL, child = NULL, child2 = NULL;
  baseline();
  if (n != 2 || tpudistCommInitEnv(&world, n, rank, NULL) != tpudistSuccess) {
    FAIL("splitabort needs 2 ranks: %s", tpudistGetLastError(NULL));
    return 1;
  }
  if (rank == 1) { /* never splits */
    sleepMs(600);
    tpudistCommAbort(world);
    checkNothingLeft("after abort");
    return gFail ? 1 : 0;
  }
  tpudistConfig_t cfg = nonBlocking();
  tpudistResult_t st;
  if (tpudistCommSplit(world, 0, 0, &child, &cfg) != tpudistInProgress)
    FAIL("split 1 did not start");
  sleepMs(100);
  double t0 = nowMs();
  if (tpudistCommAbort(child) != tpudistSuccess) FAIL("abort of split 1");
  double dt = nowMs() - t0;
  PROMPT("abort of a pending split", dt, TD_ABORT_MS, TD_ABORT_MARGIN_MS);
  if (tpudistCommSplit(world, 0, 0, &child2, &cfg) != tpudistInProgress)
    FAIL("split 2 did not start");
  sleepMs(100);
  t0 = nowMs();
  if (tpudistCommAbort(world) != tpudistSuccess) FAIL("abort of the parent");
  double dt2 = nowMs() - t0;
  PROMPT("abort of the parent with a pending split", dt2, TD_ABORT_MS, TD_ABORT_MARGIN_MS);
  if (tpudistCommGetAsyncError(child2, &st) != tpudistSuccess || st != tpudistAborted)
    FAIL("the split of an aborted parent is in state %s", tpudistGetErrorString(st));
  if (tpudistCommDestroy(child2) != tpudistSuccess) FAIL("destroy of the aborted split");
  checkNothingLeft("after the aborts");
  printf("rank 0: pending split aborted in %.1f ms, parent with a pending split in %.1f ms\n", dt,
         dt2);
  return gFail ? 1 : 0;
}

/* ---- shrink ------------------------------------------------------------------------------ */

/* All-reduces on c until one fails (the last rank kills itself after the first). */
static void untilError(tpudistComm_t c, int rank, int n) {
  int vals[64];
  for (int q = 0; q < n; q++) vals[q] = q + 1;
  exactAllReduces(c, vals, n, rank);
  if (rank == n - 1) {
    static int delay = 50;
    pthread_t th;
    pthread_create(&th, NULL, killer, &delay);
  }
  int32_t x[1024] = {0};
  for (double t0 = nowMs(); nowMs() - t0 < 10000;)
    if (tpudistAllReduce(x, x, 1024, tpudistInt32, tpudistSum, c, NULL) != tpudistSuccess) return;
  FAIL("no all-reduce failed in 10 s after rank %d died", n - 1);
}

/* N ranks; rank N-1 dies. The others shrink without blocking: ranks 0 and 2 made the world
 * non-blocking and pass no config (inherited), rank 1 made it blocking and passes blocking = 0.
 * CommShrink returns tpudistInProgress with a handle that refuses calls until GetAsyncError
 * reports success; then exact all-reduces on the N-1 survivors and the failed set {N-1}. */
static int modeShrink(int rank, int n) {
  tpudistConfig_t cfg = nonBlocking();
  tpudistComm_t world = NULL, next = NULL;
  int inherit = rank != 1;
  baseline();
  tpudistResult_t r = tpudistCommInitEnv(&world, n, rank, inherit ? &cfg : NULL);
  if (inherit ? r != tpudistInProgress || pollReady(world, 30000) != tpudistSuccess
              : r != tpudistSuccess) {
    FAIL("init: %s: %s", tpudistGetErrorString(r), tpudistGetLastError(world));
    return 1;
  }
  untilError(world, rank, n);
  double t0 = nowMs();
  r = tpudistCommShrink(world, NULL, 0, &next, inherit ? NULL : &cfg, TPUDIST_SHRINK_ABORT);
  double t_call = nowMs() - t0;
  if (r != tpudistInProgress || !next) {
    FAIL("CommShrink (%s): %s, expected tpudistInProgress", inherit ? "inherited" : "blocking = 0",
         tpudistGetErrorString(r));
    return 1;
  }
  int cnt = 0;
  if (tpudistCommCount(next, &cnt) != tpudistInvalidUsage)
    FAIL("CommCount during a non-blocking shrink was not refused");
  tpudistResult_t st = pollReady(next, 30000);
  if (st != tpudistSuccess) {
    FAIL("the shrink ended in %s: %s", tpudistGetErrorString(st), tpudistGetLastError(next));
    return 1;
  }
  double t_done = nowMs() - t0;
  int me = -1, failed[4], nf = 4;
  tpudistCommCount(next, &cnt);
  tpudistCommUserRank(next, &me);
  if (cnt != n - 1 || me != rank)
    FAIL("shrunk: rank %d of %d, expected %d of %d", me, cnt, rank, n - 1);
  int vals[64];
  for (int q = 0; q < n - 1; q++) vals[q] = 10 + q;
  if (!gFail) exactAllReduces(next, vals, n - 1, me);
  if (tpudistCommGetFailedRanks(world, failed, &nf) != tpudistSuccess || nf != 1 ||
      failed[0] != n - 1)
    FAIL("failed ranks: %d (first %d), expected rank %d", nf, failed[0], n - 1);
  tpudistCommDestroy(world);
  if (tpudistCommDestroy(next) != tpudistSuccess) FAIL("destroy: %s", tpudistGetLastError(NULL));
  checkNothingLeft("after destroy");
  printf("rank %d: non-blocking shrink (%s): returned in %.1f ms, ready after %.0f ms, exact\n",
         rank, inherit ? "inherited" : "blocking = 0", t_call, t_done);
  return gFail ? 1 : 0;
}

/* 3 ranks; rank 2 dies; only rank S (TD_SHRINKER) shrinks, without blocking: as coordinator
 * (S = 0) it waits for rank 1's proposal, as participant (S = 1) for rank 0's decision. CommAbort
 * of the pending shrink returns within 100 ms and leaves no thread or socket; the other rank waits,
 * then destroys. */
static int modeShrinkAbort(int rank, int n) {
  tpudistComm_t world = NULL, next = NULL;
  int shrinker = envInt("TD_SHRINKER", 0);
  if (n != 3 || tpudistCommInitEnv(&world, n, rank, NULL) != tpudistSuccess) {
    FAIL("shrinkabort needs 3 ranks: %s", tpudistGetLastError(NULL));
    return 1;
  }
  untilError(world, rank, n);
  tpudistCommRevoke(world); /* its connections close now, not in the shrink: the baseline holds */
  sleepMs(100);
  baseline();
  if (rank != shrinker) {
    sleepMs(1500);
    tpudistCommDestroy(world);
    return gFail ? 1 : 0;
  }
  tpudistConfig_t cfg = nonBlocking();
  tpudistResult_t r = tpudistCommShrink(world, NULL, 0, &next, &cfg, TPUDIST_SHRINK_ABORT), st;
  if (r != tpudistInProgress) FAIL("CommShrink: %s", tpudistGetErrorString(r));
  sleepMs(300);
  if (tpudistCommGetAsyncError(next, &st) != tpudistSuccess || st != tpudistInProgress)
    FAIL("a shrink waiting for rank %d is in state %s", 1 - rank, tpudistGetErrorString(st));
  double t0 = nowMs();
  r = tpudistCommAbort(next);
  double dt = nowMs() - t0;
  if (r != tpudistSuccess) FAIL("abort: %s", tpudistGetErrorString(r));
  PROMPT("abort during the shrink", dt, TD_ABORT_MS, TD_ABORT_MARGIN_MS);
  checkNothingLeft("after abort");
  if (tpudistCommDestroy(world) != tpudistSuccess) FAIL("destroy of the shrunk communicator");
  printf("rank %d: abort of a pending shrink (as %s) returned in %.1f ms, nothing left\n", rank,
         rank == 0 ? "coordinator" : "participant", dt);
  return gFail ? 1 : 0;
}

/* ---- external store ---------------------------------------------------------------------- */

/* A store kept in files under TD_STORE_DIR (what torch's FileStore does); get honours timeoutMs. */
static int modeStore(int rank, int n) {
  const char *dir = getenv("TD_STORE_DIR");
  tpudistStore_t store = {(void *)dir, fileSet, fileGet};
  tpudistConfig_t cfg = nonBlocking();
  tpudistComm_t c = NULL;
  baseline();
  if (!dir) {
    FAIL("set TD_STORE_DIR");
    return 1;
  }
  tpudistResult_t r = tpudistCommInitStore(&c, n, rank, &store, "pg-async", &cfg);
  if (r != tpudistInProgress)
    FAIL("InitStore: %s, expected tpudistInProgress", tpudistGetErrorString(r));
  if (getenv("TD_STORE_ALONE")) { /* rank 0 never comes: abort while the store is asked */
    tpudistResult_t st = tpudistSuccess;
    sleepMs(300);
    if (tpudistCommGetAsyncError(c, &st) != tpudistSuccess || st != tpudistInProgress)
      FAIL("the creation is in state %s, expected in progress", tpudistGetErrorString(st));
    double t0 = nowMs();
    tpudistCommAbort(c);
    double dt = nowMs() - t0;
    PROMPT("abort while waiting for the store", dt, TD_ABORT_MS, TD_ABORT_MARGIN_MS);
    checkNothingLeft("after abort");
    printf("rank %d: abort while waiting for the store returned in %.1f ms\n", rank, dt);
    return gFail ? 1 : 0;
  }
  if (pollReady(c, 30000) != tpudistSuccess) {
    FAIL("store creation: %s", tpudistGetLastError(c));
    return 1;
  }
  int vals[64];
  for (int q = 0; q < n; q++) vals[q] = q + 1;
  exactAllReduces(c, vals, n, rank);
  if (tpudistCommDestroy(c) != tpudistSuccess) FAIL("destroy: %s", tpudistGetLastError(NULL));
  checkNothingLeft("after destroy");
  printf("rank %d: non-blocking store init: results exact\n", rank);
  return gFail ? 1 : 0;
}

/* ---- flight record, health query --------------------------------------------------------- */

/* One rank, timeout 300 ms: a receive from itself that never comes times out after two
 * all-reduces; TPU_DIST_FR_DUMP_DIR then holds the JSON record (checked by async.sh). */
static int modeFrDump(int rank, int n) {
  tpudistConfig_t cfg = TPUDIST_CONFIG_INITIALIZER;
  cfg.timeoutMs = 300;
  cfg.commName = "fr\"test";
  tpudistComm_t c = NULL;
  if (n != 1 || tpudistCommInitEnv(&c, 1, rank, &cfg) != tpudistSuccess) {
    FAIL("frdump runs on 1 rank: %s", tpudistGetLastError(NULL));
    return 1;
  }
  float f[256];
  for (int i = 0; i < 256; i++) f[i] = (float)i;
  if (tpudistAllReduce(f, f, 256, tpudistFloat32, tpudistSum, c, NULL) != tpudistSuccess ||
      tpudistBroadcast(f, f, 100, tpudistFloat32, 0, c, NULL) != tpudistSuccess)
    FAIL("collectives: %s", tpudistGetLastError(c));
  int x = 0;
  tpudistResult_t r = tpudistRecv(&x, 1, tpudistInt32, 0, c, NULL);
  if (r != tpudistTimeout)
    FAIL("the receive ended in %s, expected a timeout", tpudistGetErrorString(r));
  tpudistCommDestroy(c);
  return gFail ? 1 : 0;
}

static int modeStall(int rank, int n, int stall_ms) {
  tpudistComm_t c = NULL;
  if (tpudistCommInitEnv(&c, n, rank, NULL) != tpudistSuccess) {
    FAIL("init: %s", tpudistGetLastError(NULL));
    return 1;
  }
  int vals[64];
  for (int q = 0; q < n; q++) vals[q] = q + 1;
  for (int it = 0; it < 4; it++) {
    if (it == 2 && rank == n - 1) {
      printf("rank %d: stalling %d ms before all-reduce %d\n", rank, stall_ms, it);
      sleepMs(stall_ms);
    }
    checkedAllReduce(c, vals, n, rank, 65536);
  }
  if (tpudistCommDestroy(c) != tpudistSuccess) FAIL("destroy: %s", tpudistGetLastError(NULL));
  return gFail ? 1 : 0;
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  const char *v;
  int rank = (v = getenv("RANK")) ? atoi(v) : -1, n = (v = getenv("WORLD_SIZE")) ? atoi(v) : -1;
  if (argc < 2 || rank < 0 || n < 1 || n > 64) {
    fprintf(stderr,
            "usage: RANK=R WORLD_SIZE=N async_job init|abort|timeout|splitabort|store|frdump|stall "
            "MS\n");
    return 2;
  }
  gRank = rank;
  if (!strcmp(argv[1], "init")) return modeInit(rank, n);
  if (!strcmp(argv[1], "abort")) return modeAbort(rank, n);
  if (!strcmp(argv[1], "timeout")) return modeTimeout(rank, n);
  if (!strcmp(argv[1], "splitabort")) return modeSplitAbort(rank, n);
  if (!strcmp(argv[1], "frdump")) return modeFrDump(rank, n);
  if (!strcmp(argv[1], "store")) return modeStore(rank, n);
  if (!strcmp(argv[1], "shrink")) return modeShrink(rank, n);
  if (!strcmp(argv[1], "shrinkabort")) return modeShrinkAbort(rank, n);
  if (!strcmp(argv[1], "stall")) return modeStall(rank, n, argc > 2 ? atoi(argv[2]) : 3000);
  fprintf(stderr, "async_job: unknown mode %s\n", argv[1]);
  return 2;
}
