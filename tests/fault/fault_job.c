/*
 * fault_job.c - the reliability acceptance jobs (tests/fault/kill.sh, jobs.sh). Ranks are started
 * without mpirun: TPU_DIST_COMM_ID=host:port, RANK, WORLD_SIZE (tests/mpi/launch.sh), so that
 * survivors of a killed rank can bootstrap a new communicator among themselves.
 *
 *   fault_job kill VICTIM       all-reduces in a loop; VICTIM kills itself (SIGKILL) from a
 *                               thread at a random moment, mid-collective. Every survivor must
 *                               get tpudistRemoteError within TPU_DIST_TIMEOUT_MS + 2 s, destroy
 *                               the communicator, bootstrap a new one among the survivors (same
 *                               TPU_DIST_COMM_ID) and complete an exactly checked all-reduce.
 *   fault_job inject            as kill, but nobody dies: TPU_DIST_FAULT (drop=N or corrupt=N)
 *                               breaks the job; every rank must fail within the timeout + 2 s,
 *                               then all of them form a new communicator and complete all-reduces.
 *   fault_job initfail          TPU_DIST_FAULT is malformed: init fails, naming it.
 *   fault_job abort             rank 0 blocks in an all-reduce rank 1 never joins (blocking and
 *                               non-blocking forms); another thread calls tpudistCommAbort: the
 *                               call must return tpudistAborted within 100 ms of the abort.
 *   fault_job badargs           every row of the invalid-argument table (fault_badargs.h) returns
 *                               its documented code and message; a correct call follows each.
 *   fault_job debug             a split with config.mode = TPUDIST_MODE_DEBUG: non-blocking
 *                               collectives complete at the call; a mismatch fails at the call
 *   fault_job mismatch          TPU_DIST_CHECK=1: one rank passes a different count (then a
 *                               different root); every rank gets tpudistInvalidUsage and a message
 *                               naming the differing ranks, never a hang.
 *   fault_job hostile           exactly checked all-reduces for TD_HOSTILE_MS while
 *                               tests/fault/hostile_peer attacks (tests/fault/hostile.sh); prints
 *                               init time and time per iteration.
 *   fault_job flight            1 rank: after a timeout the log holds the flight record (each
 *                               operation's sequence, count, datatype, algorithm and state).
 * Exit status 0 on success; each failure is printed with the rank.
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "comm.h"
#include "job_util.h"
#include "net.h"
#include "tpu_dist.h"

static tpudistComm_t initEnv(int nranks, int rank) {
  tpudistComm_t c = NULL;
  tpudistResult_t r = tpudistCommInitEnv(&c, nranks, rank, NULL);
  if (r != tpudistSuccess) {
    FAIL("init (%d ranks, rank %d): %s: %s", nranks, rank, tpudistGetErrorString(r),
         tpudistGetLastError(NULL));
    return NULL;
  }
  return c;
}

/* An exactly checked int32 sum all-reduce of count elements; returns the call's result. */
static tpudistResult_t checkedAllReduce(tpudistComm_t c, int myval, int n, const int *vals,
                                        size_t count, int32_t *in, int32_t *out) {
  for (size_t i = 0; i < count; i++) in[i] = myval * 1000 + (int32_t)(i % 977);
  tpudistResult_t r = tpudistAllReduce(in, out, count, tpudistInt32, tpudistSum, c, NULL);
  if (r != tpudistSuccess) return r;
  for (size_t i = 0; i < count; i++) {
    int32_t e = 0;
    for (int q = 0; q < n; q++) e += vals[q] * 1000 + (int32_t)(i % 977);
    if (out[i] != e) {
      FAIL("all-reduce element %zu is %d, expected %d", i, out[i], e);
      return tpudistInternalError;
    }
  }
  return tpudistSuccess;
}

/* ---- kill -9 ----------------------------------------------------------------------------- */

/* The survivors continue: a new communicator among them (ranks above the victim move down one),
 * through the same TPU_DIST_COMM_ID, completes exactly checked all-reduces. */
static void rejoin(int rank, int n, int victim, size_t count, int32_t *in, int32_t *out) {
  int nr = victim >= 0 && rank > victim ? rank - 1 : rank, m = 0;
  int svals[64];
  for (int q = 0; q < n; q++)
    if (q != victim) svals[m++] = q + 1;
  tpudistComm_t c2 = initEnv(m, nr);
  if (!c2) return;
  for (int k = 0; k < 3; k++)
    if (checkedAllReduce(c2, rank + 1, m, svals, count, in, out) != tpudistSuccess)
      FAIL("all-reduce among the survivors: %s", tpudistGetLastError(c2));
  if (tpudistCommDestroy(c2) != tpudistSuccess) FAIL("destroy: %s", tpudistGetLastError(NULL));
  printf("rank %d: survivor communicator of %d ranks: all-reduce ok\n", rank, m);
}

static int modeKill(int rank, int n, int victim) {
  tpudistComm_t c = initEnv(n, rank);
  if (!c) return 1;
  int timeout = envInt("TPU_DIST_TIMEOUT_MS", 300000);
  size_t count = 16384;
  int32_t *in = malloc(count * 4), *out = malloc(count * 4);
  int vals[64];
  for (int q = 0; q < n; q++) vals[q] = q + 1;
  if (rank == victim) {
    static int delay;
    srand((unsigned)getpid());
    delay = envInt("TD_FAULT_KILL_MS", 300 + rand() % 400);
    pthread_t th;
    pthread_create(&th, NULL, killer, &delay);
  }
  tpudistResult_t r = tpudistSuccess;
  double t0 = 0, t1 = 0;
  int it;
  for (it = 0; it < 1000000 && r == tpudistSuccess; it++) {
    t0 = nowMs();
    r = checkedAllReduce(c, rank + 1, n, vals, count, in, out);
    t1 = nowMs();
  }
  if (rank == victim) {
    FAIL("the victim is still alive after %d iterations", it);
    return 1;
  }
  const char *msg = tpudistGetLastError(c);
  printf("rank %d: iteration %d failed after %.0f ms: %s: %s\n", rank, it - 1, t1 - t0,
         tpudistGetErrorString(r), msg);
  /* A dead peer is a remote error everywhere; an injected short message is a length mismatch
   * (tpudistInvalidUsage) on its receiver, a remote error on the others. */
  if (r != tpudistRemoteError && (victim >= 0 || r != tpudistInvalidUsage))
    FAIL("expected tpudistRemoteError, got %d (%s)", r, msg);
  PROMPT("a dead peer is an error within the timeout", t1 - t0, timeout, TD_TIMEOUT_MARGIN_MS);
  tpudistResult_t a = tpudistSuccess;
  if (tpudistCommGetAsyncError(c, &a) != tpudistSuccess || a != r)
    FAIL("async error %d, the call returned %d", a, r);
  tpudistComm_t sub = NULL;
  if (tpudistCommSplit(c, 0, rank, &sub, NULL) != tpudistInvalidUsage ||
      !strstr(tpudistGetLastError(c), "has failed"))
    FAIL("splitting the failed communicator: '%s'", tpudistGetLastError(c));
  /* TD_FAULT_HOLD_MS: keep the broken communicator a while before destroying it, so that the
   * other survivors cannot rely on this rank's destroy to learn of the failure. */
  int hold = envInt("TD_FAULT_HOLD_MS", 0);
  if (hold > 0) {
    sleepMs(hold);
  }
  double d0 = nowMs();
  tpudistResult_t dr = tpudistCommDestroy(c);
  PROMPT("destroy after a failure (no barrier)", nowMs() - d0, 0.0, 2000.0);
  (void)dr;
  rejoin(rank, n, victim, count, in, out);
  free(in);
  free(out);
  return gFail ? 1 : 0;
}

/* TPU_DIST_FAULT with a bad spec: init fails on every rank with tpudistInvalidArgument. */
static int modeInitFail(int rank, int n) {
  tpudistComm_t c = NULL;
  tpudistResult_t r = tpudistCommInitEnv(&c, n, rank, NULL);
  const char *msg = tpudistGetLastError(NULL);
  printf("rank %d: init: %s: %s\n", rank, tpudistGetErrorString(r), msg);
  if (r == tpudistSuccess) FAIL("init succeeded");
  if (rank == 0 && (r != tpudistInvalidArgument || !strstr(msg, "TPU_DIST_FAULT")))
    FAIL("rank 0: expected tpudistInvalidArgument naming TPU_DIST_FAULT");
  return gFail ? 1 : 0;
}

/* ---- abort from another thread ----------------------------------------------------------- */

typedef struct {
  tpudistComm_t comm;
  int delay_ms;
  double t_abort;
  tpudistResult_t res;
} tdAbortArg;

static void *aborter(void *p) {
  tdAbortArg *a = p;
  struct timespec ts = {0, a->delay_ms * 1000000L};
  nanosleep(&ts, NULL);
  a->t_abort = nowMs();
  a->res = tpudistCommAbort(a->comm);
  return NULL;
}

/* One blocked call released by an abort; form 0 blocking, 1 request + Wait, 2 group. */
static void abortOnce(tpudistComm_t world, int rank, int form) {
  tpudistComm_t sub = NULL;
  int32_t in[256] = {0}, out[256];
  if (tpudistCommSplit(world, 0, rank, &sub, NULL) != tpudistSuccess) {
    FAIL("split: %s", tpudistGetLastError(world));
    return;
  }
  if (rank == 0) {
    tdAbortArg a = {sub, 150 + 50 * form, 0, tpudistSuccess};
    pthread_t th;
    pthread_create(&th, NULL, aborter, &a);
    tpudistResult_t r;
    if (form == 0) {
      r = tpudistAllReduce(in, out, 256, tpudistInt32, tpudistSum, sub, NULL);
    } else if (form == 1) {
      tpudistRequest_t req;
      r = tpudistAllReduce(in, out, 256, tpudistInt32, tpudistSum, sub, &req);
      if (r == tpudistSuccess) r = tpudistWait(req);
    } else {
      tpudistGroupStart();
      tpudistAllReduce(in, out, 256, tpudistInt32, tpudistSum, sub, NULL);
      tpudistAllGather(in, out, 64, tpudistInt32, sub, NULL);
      r = tpudistGroupEnd();
    }
    double t = nowMs();
    pthread_join(th, NULL);
    printf("form %d: released %.2f ms after the abort (%s)\n", form, t - a.t_abort,
           tpudistGetErrorString(r));
    if (r != tpudistAborted) FAIL("form %d: the blocked call returned %d, not aborted", form, r);
    PROMPT("abort releases a blocked call", t - a.t_abort, TD_ABORT_MS, TD_ABORT_MARGIN_MS);
    if (a.res != tpudistSuccess) FAIL("CommAbort returned %d", a.res);
  } else {
    /* Rank 1 never joins; it aborts its side once rank 0 is done. */
    sleepMs(600);
    if (tpudistCommAbort(sub) != tpudistSuccess) FAIL("CommAbort on rank 1");
  }
  /* Line up before the next round; the parent communicator is unaffected. */
  int vals[2] = {1, 2};
  if (checkedAllReduce(world, rank + 1, 2, vals, 8, in, out) != tpudistSuccess)
    FAIL("world all-reduce after the abort: %s", tpudistGetLastError(world));
}

static int modeAbort(int rank, int n) {
  if (n != 2) {
    FAIL("abort runs on 2 ranks");
    return 1;
  }
  tpudistComm_t c = initEnv(n, rank);
  if (!c) return 1;
  for (int round = 0; round < 2; round++)
    for (int form = 0; form < 3; form++) abortOnce(c, rank, form);
  if (tpudistCommDestroy(c) != tpudistSuccess) FAIL("destroy: %s", tpudistGetLastError(NULL));
  return gFail ? 1 : 0;
}

/* ---- invalid arguments ------------------------------------------------------------------- */

#include "fault_badargs.h"

static int modeBadargs(int rank, int n) {
  tpudistComm_t c = initEnv(n, rank);
  if (!c) return 1;
  int checked = badargsRun(c, rank, n);
  if (tpudistCommDestroy(c) != tpudistSuccess) FAIL("destroy: %s", tpudistGetLastError(NULL));
  printf("rank %d: %d invalid-argument cases checked\n", rank, checked);
  return gFail ? 1 : 0;
}

/* ---- TPU_DIST_CHECK mismatch ------------------------------------------------------------- */

/* Every rank gets the same message: the others' call with "ranks 0-(n-2)", the odd one's with
 * "rank n-1" (the odd rank is the last). */
static void expectMismatch(tpudistComm_t c, tpudistResult_t r, int n, int rank, const char *what) {
  const char *msg = tpudistGetLastError(c);
  char odd[32], rest[32];
  snprintf(odd, sizeof(odd), "; rank %d called", n - 1);
  if (n > 2)
    snprintf(rest, sizeof(rest), ": ranks 0-%d called", n - 2);
  else
    snprintf(rest, sizeof(rest), ": rank 0 called");
  printf("rank %d: %s: %s\n", rank, what, msg);
  if (r != tpudistInvalidUsage) FAIL("%s: got %d, expected tpudistInvalidUsage", what, r);
  if (!strstr(msg, "collective mismatch") || !strstr(msg, odd) || !strstr(msg, rest))
    FAIL("%s: the message does not name '%s' and '%s': '%s'", what, rest + 2, odd + 2, msg);
}

static int modeMismatch(int rank, int n) {
  tpudistComm_t world = initEnv(n, rank);
  if (!world) return 1;
  int odd = n - 1;
  static int32_t in[4096], out[4096 * 8];
  for (int round = 0; round < 2; round++) {
    tpudistComm_t sub = NULL;
    if (tpudistCommSplit(world, 0, rank, &sub, NULL) != tpudistSuccess) {
      FAIL("split: %s", tpudistGetLastError(world));
      return 1;
    }
    /* A correct call first: the check passes and the data is right. */
    int vals[8];
    for (int q = 0; q < n; q++) vals[q] = q + 1;
    if (checkedAllReduce(sub, rank + 1, n, vals, 100, in, out) != tpudistSuccess)
      FAIL("checked all-reduce before the mismatch: %s", tpudistGetLastError(sub));
    double t0 = nowMs();
    tpudistResult_t r;
    if (round == 0) {
      size_t count = rank == odd ? 1001 : 1000;
      r = tpudistAllReduce(in, out, count, tpudistInt32, tpudistSum, sub, NULL);
      expectMismatch(sub, r, n, rank, "count 1001 on one rank");
    } else {
      int root = rank == odd ? 1 : 0;
      r = tpudistBroadcast(in, out, 100, tpudistInt32, root, sub, NULL);
      expectMismatch(sub, r, n, rank, "root 1 on one rank");
    }
    PROMPT("a mismatch is reported, not timed out", nowMs() - t0, 0.0, 5000.0);
    tpudistCommDestroy(sub);
  }
  tpudistCommDestroy(world);
  return gFail ? 1 : 0;
}

/* ---- debug mode ---------------------------------------------------------------------------- */

/* A communicator split with config.mode = TPUDIST_MODE_DEBUG: a non-blocking all-reduce has its
 * result in place when the call returns (before any wait), its request is already done, and a
 * mismatched count fails at the call itself, on every rank, naming the call's arguments. */
static int modeDebug(int rank, int n) {
  tpudistComm_t world = initEnv(n, rank), sub = NULL;
  if (!world) return 1;
  tpudistConfig_t cfg = TPUDIST_CONFIG_INITIALIZER;
  cfg.mode = TPUDIST_MODE_DEBUG;
  if (tpudistCommSplit(world, 0, rank, &sub, &cfg) != tpudistSuccess) {
    FAIL("split: %s", tpudistGetLastError(world));
    return 1;
  }
  static int32_t in[1000], out[1000];
  for (int i = 0; i < 1000; i++) in[i] = rank * 1000 + i, out[i] = -1;
  tpudistRequest_t req;
  if (tpudistAllReduce(in, out, 1000, tpudistInt32, tpudistSum, sub, &req) != tpudistSuccess)
    FAIL("debug all-reduce: %s", tpudistGetLastError(sub));
  for (int i = 0; i < 1000; i++) /* read before any wait or test */
    if (out[i] != 1000 * n * (n - 1) / 2 + n * i) {
      FAIL("debug mode: element %d is %d before the wait", i, out[i]);
      break;
    }
  int done = 0;
  if (tpudistTest(req, &done) != tpudistSuccess || !done) FAIL("debug request not done");
  tpudistResult_t r =
      tpudistAllReduce(in, out, rank == n - 1 ? 999 : 1000, tpudistInt32, tpudistSum, sub, &req);
  const char *msg = tpudistGetLastError(sub);
  char call[64];
  snprintf(call, sizeof(call), "AllReduce(count %d, int32", rank == n - 1 ? 999 : 1000);
  printf("rank %d: debug mismatch: %s\n", rank, msg);
  if (r != tpudistInvalidUsage || !strstr(msg, "collective mismatch") || !strstr(msg, call))
    FAIL("debug mismatch: result %d, message '%s' lacks '%s'", r, msg, call);
  tpudistCommDestroy(sub);
  tpudistCommDestroy(world);
  return gFail ? 1 : 0;
}

/* ---- flight recorder --------------------------------------------------------------------- */

/* One rank: a few operations, then a receive nobody sends times out; the log (stderr, captured
 * in a file) must hold the flight record: every operation with its sequence, count and state. */
static int modeFlight(int rank, int n) {
  tpudistConfig_t cfg = TPUDIST_CONFIG_INITIALIZER;
  cfg.timeoutMs = 300;
  tpudistComm_t c = NULL;
  if (n != 1 || tpudistCommInitEnv(&c, 1, rank, &cfg) != tpudistSuccess) {
    FAIL("flight runs on 1 rank: %s", tpudistGetLastError(NULL));
    return 1;
  }
  static int32_t a[1000], b[1000];
  char path[] = "/tmp/td_flight_XXXXXX";
  int fd = mkstemp(path), saved = dup(2);
  tpudistAllReduce(a, b, 100, tpudistInt32, tpudistSum, c, NULL);
  tpudistBroadcast(a, b, 7, tpudistFloat32, 0, c, NULL);
  tpudistAllGather(a, b, 3, tpudistInt64, c, NULL);
  fflush(stderr);
  dup2(fd, 2);
  tpudistResult_t r = tpudistRecv(b, 4, tpudistInt32, 0, c, NULL);
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  if (r != tpudistTimeout) FAIL("the receive returned %d, not tpudistTimeout", r);
  char log[16384] = "";
  ssize_t len = pread(fd, log, sizeof(log) - 1, 0);
  log[len > 0 ? len : 0] = 0;
  close(fd);
  unlink(path);
  fputs(log, stdout);
  const char *want[] = {"flight recorder: ",
                        "the last 4 of 4 operations",
                        "#0 allreduce seq 0, count 100 int32",
                        "#1 broadcast seq 1, count 7 float32, root 0",
                        "#2 allgather seq 2, count 3 int64",
                        "#3 recv from rank 0, count 4 int32: running",
                        "(timeout)"};
  for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
    if (!strstr(log, want[i])) FAIL("the flight record lacks '%s'", want[i]);
  tpudistCommDestroy(c);
  return gFail ? 1 : 0;
}

/* ---- the job beside a hostile peer (tests/fault/hostile.sh) ----------------------------- */

/* Descriptors this process holds. */
static int openFds(void) {
  DIR *d = opendir("/proc/self/fd");
  int n = 0;
  for (struct dirent *e; d && (e = readdir(d));) n += e->d_name[0] != '.';
  if (d) closedir(d);
  return n - 1; /* the directory itself */
}

/* Exactly checked all-reduces (1, 1000 and 65536 elements) until rank 0 has run TD_HOSTILE_MS
 * and, where TD_HOSTILE_STOP names a file, until that file exists (the attacker is done: the job
 * must outlive the attacks however late they start; at most 20 times TD_HOSTILE_MS); prints init
 * time and time per iteration. Rank 0 writes every rank's socket-transport listener
 * port to TD_HOSTILE_PORTS (what an attacker would find with a port scan). Each rank prints the
 * descriptors it holds after its first iteration and at the end (the attacks closed: equal; the
 * end waits up to 5 s for connections still closing). */
static int modeHostile(int rank, int n) {
  double t0 = nowMs();
  tpudistComm_t c = initEnv(n, rank);
  if (!c) return 1;
  double tinit = nowMs() - t0;
  const char *ports = getenv("TD_HOSTILE_PORTS");
  if (rank == 0 && ports) {
    FILE *f = fopen(ports, "w");
    for (int p = 0; f && p < n; p++) {
      tdNetAddr a;
      memcpy(&a, c->c.net.peers[p].sock_addr, sizeof(a));
      fprintf(f, "%u\n", a.port);
    }
    if (f) fclose(f);
  }
  int ms = envInt("TD_HOSTILE_MS", 3000), iters = 0;
  const char *stopfile = getenv("TD_HOSTILE_STOP");
  int32_t *in = malloc(65536 * 4), *out = malloc(65536 * 4), stop = 0;
  int vals[64];
  for (int q = 0; q < n; q++) vals[q] = q + 1;
  size_t counts[] = {1, 1000, 65536};
  double t1 = nowMs();
  int fds0 = -1;
  while (!stop && !gFail) {
    for (int k = 0; k < 3; k++)
      if (checkedAllReduce(c, rank + 1, n, vals, counts[k], in, out) != tpudistSuccess)
        FAIL("all-reduce of %zu: %s", counts[k], tpudistGetLastError(c));
    double ran = nowMs() - t1;
    int32_t mine =
        rank == 0 && ran > ms && (!stopfile || access(stopfile, F_OK) == 0 || ran > 20.0 * ms);
    if (tpudistAllReduce(&mine, &stop, 1, tpudistInt32, tpudistSum, c, NULL) != tpudistSuccess)
      FAIL("stop flag: %s", tpudistGetLastError(c));
    if (iters++ == 0) fds0 = openFds();
  }
  /* An attack's last connection may still be closing (a loaded machine, a sanitizer): a leak
   * stays, a lag does not. The ranks agree, 50 ms apart and for 5 s at most, until none holds more
   * descriptors than after its first iteration; the all-reduces drive the listeners meanwhile. */
  int fds1 = openFds();
  for (int i = 0; i < 100 && !gFail; i++) {
    int32_t more = fds1 > fds0, any = 0;
    if (tpudistAllReduce(&more, &any, 1, tpudistInt32, tpudistMax, c, NULL) != tpudistSuccess)
      FAIL("descriptor check: %s", tpudistGetLastError(c));
    if (!any) break;
    usleep(50000);
    fds1 = openFds();
  }
  printf("rank %d: %d descriptors after the first iteration, %d at the end\n", rank, fds0, fds1);
  double el = nowMs() - t1;
  if (tpudistCommDestroy(c) != tpudistSuccess) FAIL("destroy: %s", tpudistGetLastError(NULL));
  free(in);
  free(out);
  if (rank == 0)
    printf("rank 0: init %.0f ms, %d iterations in %.0f ms: %.3f ms each, results exact\n", tinit,
           iters, el, el / iters);
  return gFail ? 1 : 0;
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (argc < 2) {
    fprintf(
        stderr,
        "usage: fault_job kill VICTIM | abort | badargs | mismatch | debug | hostile | flight\n");
    return 2;
  }
  int rank = envInt("RANK", -1), n = envInt("WORLD_SIZE", -1);
  if (rank < 0 || n < 1 || n > 64) {
    fprintf(stderr, "fault_job: set RANK and WORLD_SIZE (at most 64)\n");
    return 2;
  }
  gRank = rank;
  if (!strcmp(argv[1], "kill")) return modeKill(rank, n, argc > 2 ? atoi(argv[2]) : n - 1);
  if (!strcmp(argv[1], "inject")) return modeKill(rank, n, -1);
  if (!strcmp(argv[1], "initfail")) return modeInitFail(rank, n);
  if (!strcmp(argv[1], "abort")) return modeAbort(rank, n);
  if (!strcmp(argv[1], "badargs")) return modeBadargs(rank, n);
  if (!strcmp(argv[1], "mismatch")) return modeMismatch(rank, n);
  if (!strcmp(argv[1], "debug")) return modeDebug(rank, n);
  if (!strcmp(argv[1], "hostile")) return modeHostile(rank, n);
  if (!strcmp(argv[1], "flight")) return modeFlight(rank, n);
  fprintf(stderr, "fault_job: unknown mode %s\n", argv[1]);
  return 2;
}
