/*
 * reconf_job.c - communicators over any set of processes (tests/fault/reconf.sh): 3 ranks started
 * without mpirun (TPU_DIST_COMM_ID, RANK, WORLD_SIZE); public API only. Each rank opens a
 * reconfiguration endpoint and the handles are exchanged over a world communicator (an
 * all-gather); every new communicator then meets through the handles alone and must all-reduce
 * exactly (rank q contributes its world rank + 1), with rank = position in the handle list:
 *   identity                   all three, in world order
 *   reversed                   all three, in reverse order (ranks renumbered)
 *   exclude middle             world ranks 0 and 2 (1 takes no part)
 *   singletons, then grow      each rank alone with its own uuid, then all three again (the
 *                              grown communicator admits processes outside each singleton)
 *   disjoint, then merge       {0, 1} and {2} with their own uuids at once, then all three
 *   reused uuid                every rank repeats the identity's uuid: tpudistInvalidUsage and
 *                              "already used" in the last error, at once
 *   bad lists                  a list without this rank's handle, one with it twice, a malformed
 *                              handle: tpudistInvalidArgument
 *   absent member              rank 0 with [h0, h1] while rank 1 stays away: tpudistTimeout
 *                              within the 500 ms bound (never a hang)
 *   wrong uuid                 ranks 0 and 1 on [h0, h1] with different uuids: both fail with
 *                              tpudistTimeout, rank 1 saying it was not admitted (rank 0 drops
 *                              hellos of another uuid unanswered)
 *   set timeout                tpudistCommSetTimeout: 0 refused; rank 0 all-reduces alone under
 *                              300 ms: tpudistTimeout
 * Exit status 0 on success; each failure is printed with the rank.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "job_util.h"
#include "tpu_dist.h"

#define N 3
#define H TPUDIST_RECONF_HANDLE_BYTES

static char gHandles[N][H];
static tpudistReconf_t gEp;
static tpudistComm_t gWorld;

static void worldBarrier(void) {
  int32_t x = 0;
  if (tpudistAllReduce(&x, &x, 1, tpudistInt32, tpudistSum, gWorld, NULL) != tpudistSuccess)
    FAIL("world barrier: %s", tpudistGetLastError(gWorld));
}

/* Reconfigures into the members (world ranks, in new-rank order) and checks the communicator:
 * its size, this rank's position and an exact all-reduce; then destroys it. */
static void grow(const char *what, int64_t uuid, const int *members, int n) {
  const char *list[N];
  int pos = -1;
  for (int i = 0; i < n; i++) {
    list[i] = gHandles[members[i]];
    if (members[i] == gRank) pos = i;
  }
  tpudistComm_t c = NULL;
  tpudistResult_t r = tpudistCommReconfigure(gEp, uuid, list, n, 10000, NULL, &c);
  if (r != tpudistSuccess) {
    FAIL("%s: CommReconfigure: %s: %s", what, tpudistGetErrorString(r), tpudistGetLastError(NULL));
    return;
  }
  int rank = -1, count = -1;
  tpudistCommUserRank(c, &rank);
  tpudistCommCount(c, &count);
  if (rank != pos || count != n)
    FAIL("%s: rank %d of %d, want %d of %d", what, rank, count, pos, n);
  int32_t v[64], want = 0;
  for (int i = 0; i < n; i++) want += members[i] + 1;
  for (int i = 0; i < 64; i++) v[i] = (gRank + 1) * (i + 1);
  r = tpudistAllReduce(v, v, 64, tpudistInt32, tpudistSum, c, NULL);
  if (r != tpudistSuccess) FAIL("%s: all-reduce: %s", what, tpudistGetLastError(c));
  for (int i = 0; r == tpudistSuccess && i < 64; i++)
    if (v[i] != want * (i + 1)) {
      FAIL("%s: element %d is %d, want %d", what, i, v[i], want * (i + 1));
      break;
    }
  tpudistCommDestroy(c);
}

static void expectFail(const char *what, int64_t uuid, const char *const *list, int n,
                       tpudistResult_t want, const char *msg) {
  tpudistComm_t c = NULL;
  tpudistResult_t r = tpudistCommReconfigure(gEp, uuid, list, n, 500, NULL, &c);
  const char *e = tpudistGetLastError(NULL);
  if (r != want || c != NULL)
    FAIL("%s: got %s, want %s", what, tpudistGetErrorString(r), tpudistGetErrorString(want));
  else if (msg && !strstr(e, msg))
    FAIL("%s: error \"%s\" does not say \"%s\"", what, e, msg);
  if (c) tpudistCommDestroy(c);
}

static void badLists(void) {
  const int other = (gRank + 1) % N;
  const char *without[1] = {gHandles[other]};
  expectFail("list without this rank", 900, without, 1, tpudistInvalidArgument, "not among");
  const char *twice[2] = {gHandles[gRank], gHandles[gRank]};
  expectFail("this rank twice", 901, twice, 2, tpudistInvalidArgument, "positions");
  const char *bad[2] = {gHandles[gRank], "tpu_dist:xyz@127.0.0.1:1"};
  expectFail("malformed handle", 902, bad, 2, tpudistInvalidArgument, "handles[1]");
}

static void faults(void) {
  const char *pair[2] = {gHandles[0], gHandles[1]};
  double t0 = nowMs();
  if (gRank == 0) expectFail("absent member", 950, pair, 2, tpudistTimeout, NULL);
  if (gRank == 0 && nowMs() - t0 > 5000)
    FAIL("absent member: failed after %.0f ms, bound 500", nowMs() - t0);
  worldBarrier();
  if (gRank == 0) expectFail("wrong uuid (root)", 960, pair, 2, tpudistTimeout, NULL);
  if (gRank == 1) expectFail("wrong uuid (member)", 961, pair, 2, tpudistTimeout, "same uuid");
  worldBarrier();
}

/* tpudistCommSetTimeout: a bound that is not positive is refused; rank 0's all-reduce that nobody
 * joins ends with tpudistTimeout under the 300 ms it set (the job's timeout is 10 s). */
static void setTimeout(void) {
  const char *ident[N] = {gHandles[0], gHandles[1], gHandles[2]};
  tpudistComm_t c = NULL;
  if (tpudistCommReconfigure(gEp, 970, ident, N, 10000, NULL, &c) != tpudistSuccess) {
    FAIL("set timeout: CommReconfigure: %s", tpudistGetLastError(NULL));
    return;
  }
  if (tpudistCommSetTimeout(c, 0) != tpudistInvalidArgument) FAIL("timeout 0 accepted");
  if (gRank == 0) {
    int32_t x = 1;
    double t0 = nowMs();
    if (tpudistCommSetTimeout(c, 300) != tpudistSuccess) FAIL("timeout 300 refused");
    tpudistResult_t r = tpudistAllReduce(&x, &x, 1, tpudistInt32, tpudistSum, c, NULL);
    if (r != tpudistTimeout) FAIL("lone all-reduce: %s, want a timeout", tpudistGetErrorString(r));
    printf("rank 0: lone all-reduce failed after %.0f ms (timeout set to 300 ms)\n", nowMs() - t0);
  }
  worldBarrier();
  tpudistCommAbort(c);
}

int main(void) {
  gRank = envInt("RANK", -1);
  if (envInt("WORLD_SIZE", -1) != N || gRank < 0 || gRank >= N) {
    fprintf(stderr, "reconf_job: run with WORLD_SIZE=%d and RANK\n", N);
    return 2;
  }
  char mine[H];
  if (tpudistCommInitEnv(&gWorld, -1, -1, NULL) != tpudistSuccess ||
      tpudistReconfCreate(&gEp, mine, sizeof(mine)) != tpudistSuccess) {
    FAIL("setup: %s", tpudistGetLastError(NULL));
    return 1;
  }
  if (tpudistAllGather(mine, gHandles, H, tpudistChar, gWorld, NULL) != tpudistSuccess)
    FAIL("handle exchange: %s", tpudistGetLastError(gWorld));
  const int all[N] = {0, 1, 2}, rev[N] = {2, 1, 0}, ends[2] = {0, 2}, low[2] = {0, 1}, hi[1] = {2};
  grow("identity", 100, all, N);
  grow("reversed", 101, rev, N);
  if (gRank != 1) grow("exclude middle", 102, ends, 2);
  grow("singleton", 110 + gRank, &all[gRank], 1);
  grow("grow from singletons", 120, all, N);
  if (gRank < 2)
    grow("disjoint {0,1}", 130, low, 2);
  else
    grow("disjoint {2}", 131, hi, 1);
  grow("merge", 132, all, N);
  const char *ident[N] = {gHandles[0], gHandles[1], gHandles[2]};
  expectFail("reused uuid", 100, ident, N, tpudistInvalidUsage, "already used");
  badLists();
  worldBarrier();
  faults();
  setTimeout();
  tpudistReconfDestroy(gEp);
  tpudistCommDestroy(gWorld);
  if (gFail == 0) printf("rank %d: reconfigurations OK\n", gRank);
  return gFail ? 1 : 0;
}
