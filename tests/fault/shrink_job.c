/*
 * shrink_job.c - survivors carry on (tests/fault/shrink.sh): ranks started without mpirun
 * (TPU_DIST_COMM_ID, RANK, WORLD_SIZE); public API only.
 *
 *   shrink_job kill V[,V..] [list]  all-reduces in a loop; each V kills itself (SIGKILL) at a
 *                                   random moment. Every survivor gets an error, then calls
 *                                   tpudistCommShrink(comm, NULL, 0, &next, NULL,
 *                                   TPUDIST_SHRINK_ABORT) (with "list": the victims as
 *                                   excludeRanks): next has the survivors in old-rank order and
 *                                   completes exactly checked all-reduces; the old communicator
 *                                   reports the victims as failed and is destroyed at once.
 *                                   TD_EXPECT_TOPO (e.g. 2x2, flat): next's topology;
 *                                   TD_MAX_SHRINK_MS: the most the shrink may take.
 *   shrink_job split V              the same on a split communicator (world reversed by key).
 *   shrink_job late V L             V is killed; survivor L calls CommShrink only after 2 x
 *                                   TPU_DIST_AGREE_TIMEOUT_MS + 1 s: it gets tpudistRemoteError
 *                                   saying it was excluded, the others shrink without it (their
 *                                   agreed failed set: V and L).
 *   shrink_job dieinshrink V D      V is killed; survivor D dies 0-10 ms into its CommShrink
 *                                   (agreement or rendezvous): the others end with the same
 *                                   communicator without V and D (their shrink agrees again
 *                                   when D dies in the rendezvous).
 *   shrink_job revoke               rank 0 blocks in an all-reduce nobody joins; another thread
 *                                   revokes: the call and every later one fail with
 *                                   tpudistAborted; the others revoke a second later; all shrink
 *                                   with no list (nobody failed: the same ranks, no failed ranks
 *                                   reported) and all-reduce exactly.
 * Exit status 0 on success; each failure is printed with the rank.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "job_util.h"
#include "tpu_dist.h"

/* An int32 sum all-reduce of count elements where rank q contributes vals[q]*1000 + i%977, checked
 * exactly. */
static tpudistResult_t checkedAllReduce(tpudistComm_t c, int me, int n, const int *vals,
                                        size_t count) {
  int32_t *in = calloc(count, 4), *out = calloc(count, 4);
  if (!in || !out) {
    free(in);
    free(out);
    return tpudistNoMemory;
  }
  for (size_t i = 0; i < count; i++) in[i] = vals[me] * 1000 + (int32_t)(i % 977);
  tpudistResult_t r = tpudistAllReduce(in, out, count, tpudistInt32, tpudistSum, c, NULL);
  for (size_t i = 0; r == tpudistSuccess && i < count; i++) {
    int32_t e = 0;
    for (int q = 0; q < n; q++) e += vals[q] * 1000 + (int32_t)(i % 977);
    if (out[i] != e) {
      FAIL("all-reduce element %zu of %zu is %d, expected %d", i, count, out[i], e);
      r = tpudistInternalError;
    }
  }
  free(in);
  free(out);
  return r;
}

/* Checks next: size, rank, old ranks in order (members[]), exact all-reduces, topology. */
static void checkNext(tpudistComm_t next, const int *members, int m, int myold) {
  int n = -1, r = -1;
  tpudistCommCount(next, &n);
  tpudistCommUserRank(next, &r);
  if (n != m || r < 0 || r >= m || members[r] != myold) {
    FAIL("shrunk communicator: rank %d of %d, expected old rank %d among %d", r, n, myold, m);
    return;
  }
  int vals[64];
  for (int q = 0; q < m; q++) vals[q] = members[q] + 1;
  size_t sizes[] = {1, 1000, 300000};
  for (int k = 0; k < 3; k++)
    if (checkedAllReduce(next, r, m, vals, sizes[k]) != tpudistSuccess)
      FAIL("all-reduce of %zu on the shrunk communicator: %s", sizes[k], tpudistGetLastError(next));
  const char *want = getenv("TD_EXPECT_TOPO");
  if (want && *want) {
    tpudistTopology_t t;
    char got[32] = "flat";
    tpudistCommTopology(next, &t);
    if (t.ndims == 2) snprintf(got, sizeof(got), "%dx%d", t.dims[0], t.dims[1]);
    if (t.ndims > 2) snprintf(got, sizeof(got), "%dd", t.ndims);
    if (strcmp(got, want)) FAIL("shrunk topology %s, expected %s", got, want);
    printf("rank %d: shrunk topology %s, all-reduce by %s\n", myold, got,
           tpudistLastAlgorithm(next));
  }
}

/* Runs all-reduces on c until one fails (victims die meanwhile); returns the error. */
static tpudistResult_t untilError(tpudistComm_t c, int me, int n, int is_victim) {
  int vals[64];
  for (int q = 0; q < n; q++) vals[q] = q + 1;
  if (is_victim) {
    static int delay;
    srand((unsigned)getpid());
    delay = 200 + rand() % 400;
    pthread_t th;
    pthread_create(&th, NULL, killer, &delay);
  }
  tpudistResult_t r = tpudistSuccess;
  for (int it = 0; r == tpudistSuccess; it++) r = checkedAllReduce(c, me, n, vals, 65536);
  if (is_victim) { /* another victim died first: wait for this one's own kill */
    sleepMs(5000);
    FAIL("a victim outlived its kill");
  }
  return r;
}

static int parseList(const char *s, int *v) {
  int n = 0;
  for (const char *p = s; p && *p && n < 64; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
    v[n++] = atoi(p);
  return n;
}

/* After the failure: shrink c (whose ranks are old ranks of world in map[]) and check. */
static void shrinkAndCheck(tpudistComm_t c, int n, int me, const int *victims, int nv, int list) {
  int members[64], m = 0, dead[64] = {0};
  for (int i = 0; i < nv; i++) dead[victims[i]] = 1;
  for (int q = 0; q < n; q++)
    if (!dead[q]) members[m++] = q;
  tpudistComm_t next = NULL;
  double t0 = nowMs();
  tpudistResult_t r =
      tpudistCommShrink(c, list ? victims : NULL, list ? nv : 0, &next, NULL, TPUDIST_SHRINK_ABORT);
  double t1 = nowMs();
  if (r != tpudistSuccess) {
    FAIL("CommShrink: %s: %s", tpudistGetErrorString(r), tpudistGetLastError(c));
    return;
  }
  printf("rank %d: shrink to %d ranks took %.0f ms\n", me, m, t1 - t0);
  /* TD_MAX_SHRINK_MS: the caller's bound (a death is seen at once, so well below 2T) */
  if (envInt("TD_MAX_SHRINK_MS", 0))
    PROMPT("a shrink after a death", t1 - t0, 0.0, envInt("TD_MAX_SHRINK_MS", 0));
  checkNext(next, members, m, me);
  int failed[64], nf = 64;
  if (tpudistCommGetFailedRanks(c, failed, &nf) != tpudistSuccess)
    FAIL("CommGetFailedRanks: %s", tpudistGetLastError(c));
  else if (nf != nv)
    FAIL("CommGetFailedRanks: %d ranks, %d were killed", nf, nv);
  for (int i = 0; i < nf && i < 64; i++)
    if (!dead[failed[i]]) FAIL("CommGetFailedRanks names rank %d, which is alive", failed[i]);
  double d0 = nowMs();
  tpudistCommDestroy(c);
  PROMPT("destroy of the shrunk-from communicator", nowMs() - d0, 0.0, 2000.0);
  if (tpudistCommDestroy(next) != tpudistSuccess)
    FAIL("destroying the shrunk communicator: %s", tpudistGetLastError(NULL));
}

static int modeKill(tpudistComm_t world, int rank, int n, const char *vlist, int list) {
  int victims[64], nv = parseList(vlist, victims), is_victim = 0;
  for (int i = 0; i < nv; i++) is_victim |= victims[i] == rank;
  tpudistResult_t r = untilError(world, rank, n, is_victim);
  printf("rank %d: error %s: %s\n", rank, tpudistGetErrorString(r), tpudistGetLastError(world));
  shrinkAndCheck(world, n, rank, victims, nv, list);
  return gFail != 0;
}

/* The split communicator orders the world reversed; victim is a world rank. */
static int modeSplit(tpudistComm_t world, int rank, int n, int victim) {
  tpudistComm_t sub = NULL;
  if (tpudistCommSplit(world, 0, n - rank, &sub, NULL) != tpudistSuccess) {
    FAIL("split: %s", tpudistGetLastError(world));
    return 1;
  }
  int me = n - 1 - rank, svictim = n - 1 - victim;
  tpudistResult_t r = untilError(sub, me, n, rank == victim);
  printf("rank %d: error on the split communicator: %s\n", rank, tpudistGetErrorString(r));
  shrinkAndCheck(sub, n, me, &svictim, 1, 0);
  tpudistCommRevoke(world);
  tpudistCommDestroy(world);
  return gFail != 0;
}

/* A survivor that comes too late (after 2 x TPU_DIST_AGREE_TIMEOUT_MS) is excluded by the others
 * and told so; the others shrink without it. The others stay alive until it is done, so that it
 * cannot take them for gone. */
static int modeLate(tpudistComm_t world, int rank, int n, int victim, int late) {
  const char *t = getenv("TPU_DIST_AGREE_TIMEOUT_MS");
  int agree = t ? atoi(t) : 10000;
  untilError(world, rank, n, rank == victim);
  if (rank == late) {
    sleepMs(2 * agree + 1000);
    tpudistComm_t next = NULL;
    double t0 = nowMs();
    tpudistResult_t r = tpudistCommShrink(world, NULL, 0, &next, NULL, TPUDIST_SHRINK_ABORT);
    const char *msg = tpudistGetLastError(world);
    printf("rank %d: late shrink: %s after %.0f ms: %s\n", rank, tpudistGetErrorString(r),
           nowMs() - t0, msg);
    if (r != tpudistRemoteError || next || !strstr(msg, "excluded"))
      FAIL("the late survivor got %s (%s), not tpudistRemoteError saying it was excluded",
           tpudistGetErrorString(r), msg);
    tpudistCommDestroy(world);
    return gFail != 0;
  }
  int gone[2] = {victim < late ? victim : late, victim < late ? late : victim};
  int members[64], m = 0;
  for (int q = 0; q < n; q++)
    if (q != victim && q != late) members[m++] = q;
  tpudistComm_t next = NULL;
  tpudistResult_t r = tpudistCommShrink(world, NULL, 0, &next, NULL, TPUDIST_SHRINK_ABORT);
  if (r != tpudistSuccess) {
    FAIL("CommShrink: %s", tpudistGetLastError(world));
    return 1;
  }
  checkNext(next, members, m, rank);
  int failed[64], nf = 64;
  tpudistCommGetFailedRanks(world, failed, &nf);
  if (nf != 2 || failed[0] != gone[0] || failed[1] != gone[1])
    FAIL("the agreed failed set has %d ranks, expected the victim %d and the late rank %d", nf,
         victim, late);
  tpudistCommDestroy(next);
  tpudistCommDestroy(world);
  sleepMs(5 * agree + 2000);
  return gFail != 0;
}

/* V is killed mid all-reduce; D, a survivor, dies 0-10 ms into its own CommShrink: during the
 * agreement or the new communicator's rendezvous (when D is rank 0 it is the coordinator and the
 * new rank 0). The others end with the same communicator without both. */
static int modeDieInShrink(tpudistComm_t world, int rank, int n, int victim, int d) {
  untilError(world, rank, n, rank == victim);
  tpudistComm_t next = NULL;
  if (rank == d) {
    static int delay;
    srand((unsigned)getpid());
    delay = rand() % 11;
    pthread_t th;
    pthread_create(&th, NULL, killer, &delay);
    tpudistCommShrink(world, NULL, 0, &next, NULL, TPUDIST_SHRINK_ABORT);
    sleepMs(5000);
    FAIL("rank %d outlived its kill", rank);
    return 1;
  }
  int members[64], m = 0, gone[2] = {victim < d ? victim : d, victim < d ? d : victim};
  for (int q = 0; q < n; q++)
    if (q != victim && q != d) members[m++] = q;
  double t0 = nowMs();
  tpudistResult_t r = tpudistCommShrink(world, NULL, 0, &next, NULL, TPUDIST_SHRINK_ABORT);
  if (r != tpudistSuccess) {
    FAIL("CommShrink: %s", tpudistGetLastError(world));
    return 1;
  }
  printf("rank %d: shrink with a death inside it took %.0f ms\n", rank, nowMs() - t0);
  int nn = 0;
  tpudistCommCount(next, &nn);
  if (nn == m + 1) {
    /* D died after this rank's new communicator was formed (it may have been sending the peer
     * exchange, which others then missed): a later failure; shrinking next meets the others,
     * who are still in the first shrink, and ends with the same members as theirs */
    printf("rank %d: rank %d died after this rank's shrink completed; shrinking again\n", rank, d);
    tpudistComm_t again = NULL;
    r = tpudistCommShrink(next, NULL, 0, &again, NULL, TPUDIST_SHRINK_ABORT);
    if (r != tpudistSuccess) {
      FAIL("the second CommShrink: %s", tpudistGetLastError(next));
      return 1;
    }
    int nf = 1, f = -1, dnew = 0;
    while (dnew < m && members[dnew] < d) dnew++; /* D's rank in next */
    if (tpudistCommGetFailedRanks(next, &f, &nf) != tpudistSuccess || nf != 1 || f != dnew)
      FAIL("next's agreed failed set: %d ranks (first %d), expected its rank %d", nf, f, dnew);
    tpudistCommDestroy(next);
    next = again;
  } else {
    int failed[64], nf = 64;
    tpudistCommGetFailedRanks(world, failed, &nf);
    if (nf != 2 || failed[0] != gone[0] || failed[1] != gone[1])
      FAIL("the agreed failed set has %d ranks, expected %d and %d", nf, gone[0], gone[1]);
  }
  checkNext(next, members, m, rank);
  tpudistCommDestroy(next);
  tpudistCommDestroy(world);
  return gFail != 0;
}

static double gRevokedAt; /* when revoker called tpudistCommRevoke (nowMs; read after the join) */

static void *revoker(void *arg) {
  sleepMs(200);
  gRevokedAt = nowMs();
  if (tpudistCommRevoke((tpudistComm_t)arg) != tpudistSuccess) FAIL("revoke from a thread");
  return NULL;
}

static int modeRevoke(tpudistComm_t world, int rank, int n) {
  int vals[64], members[64];
  for (int q = 0; q < n; q++) vals[q] = members[q] = q;
  if (checkedAllReduce(world, rank, n, vals, 1000) != tpudistSuccess) FAIL("first all-reduce");
  if (rank == 0) {
    pthread_t th;
    pthread_create(&th, NULL, revoker, world);
    int32_t x[4] = {0}, y[4];
    tpudistResult_t r = tpudistAllReduce(x, y, 4, tpudistInt32, tpudistSum, world, NULL);
    double released = nowMs();
    pthread_join(th, NULL);
    if (r != tpudistAborted) FAIL("the revoked all-reduce returned %s", tpudistGetErrorString(r));
    PROMPT("revoke releases a blocked call", released - gRevokedAt, TD_ABORT_MS,
           TD_ABORT_MARGIN_MS);
  } else {
    sleepMs(1000); /* after rank 0's: a revoke releases this rank's connections, failing rank 0's
                    * pending all-reduce with tpudistRemoteError */
    if (tpudistCommRevoke(world) != tpudistSuccess) FAIL("revoke: %s", tpudistGetLastError(world));
  }
  int32_t x = 1, y;
  tpudistResult_t r = tpudistAllReduce(&x, &y, 1, tpudistInt32, tpudistSum, world, NULL);
  if (r != tpudistAborted) FAIL("an all-reduce after revoke returned %s", tpudistGetErrorString(r));
  int nf = 0;
  if (tpudistCommGetFailedRanks(world, NULL, &nf) != tpudistSuccess || nf != 0)
    FAIL("%d failed ranks reported, none failed", nf);
  tpudistComm_t next = NULL;
  r = tpudistCommShrink(world, NULL, 0, &next, NULL, TPUDIST_SHRINK_ABORT);
  if (r != tpudistSuccess) {
    FAIL("shrink after revoke: %s", tpudistGetLastError(world));
    return 1;
  }
  checkNext(next, members, n, rank);
  tpudistCommDestroy(world);
  tpudistCommDestroy(next);
  printf("rank %d: revoke ok\n", rank);
  return gFail != 0;
}

int main(int argc, char **argv) {
  const char *r = getenv("RANK"), *w = getenv("WORLD_SIZE");
  if (argc < 2 || !r || !w) {
    fprintf(stderr,
            "usage: RANK=r WORLD_SIZE=n shrink_job kill V[,V..] [list] | split V | "
            "revoke\n");
    return 2;
  }
  int rank = gRank = atoi(r), n = atoi(w);
  tpudistComm_t world = NULL;
  if (n > 64 || tpudistCommInitEnv(&world, n, rank, NULL) != tpudistSuccess) {
    FAIL("init: %s", tpudistGetLastError(NULL));
    return 1;
  }
  int rc;
  if (!strcmp(argv[1], "kill") && argc > 2)
    rc = modeKill(world, rank, n, argv[2], argc > 3 && !strcmp(argv[3], "list"));
  else if (!strcmp(argv[1], "split") && argc > 2)
    rc = modeSplit(world, rank, n, atoi(argv[2]));
  else if (!strcmp(argv[1], "late") && argc > 3)
    rc = modeLate(world, rank, n, atoi(argv[2]), atoi(argv[3]));
  else if (!strcmp(argv[1], "dieinshrink") && argc > 3)
    rc = modeDieInShrink(world, rank, n, atoi(argv[2]), atoi(argv[3]));
  else if (!strcmp(argv[1], "revoke"))
    rc = modeRevoke(world, rank, n);
  else
    rc = 2;
  if (rc == 0) printf("rank %d: ok\n", rank);
  return rc;
}
