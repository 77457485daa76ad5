/*
 * cluster_job.c - the multi-host fault job (tests/cluster/run.sh). Ranks start without mpirun
 * (TPU_DIST_COMM_ID, RANK, WORLD_SIZE), spread over the hosts of scripts/cluster.
 *
 *   cluster_job loop [timeout]
 *                         exactly checked int32 sum all-reduces of TD_CLUSTER_COUNT elements
 *                         (default 1 Mi) in a loop. After the first one completes the rank prints
 *                         "ready". The harness then kills a whole host or sets its link down:
 *                         every survivor must see the call fail with tpudistRemoteError (with
 * "timeout": that or tpudistTimeout, for a link that goes silent) within TPU_DIST_TIMEOUT_MS + 2 s,
 * with a message that names a peer rank, and destroy the communicator within 2 s. No failure after
 * TD_CLUSTER_MAX_S (default 60) seconds is a failure too. Prints "rank R: failed after T ms:
 * MESSAGE" and exits 0 when the survivor behaved; 1 otherwise.
 *
 *   cluster_job steady    the same exactly checked all-reduces (TD_CLUSTER_COUNT elements, then 1
 *                         and 1000) until the file TD_CLUSTER_STOP exists (rank 0 looks, and every
 *                         rank learns it in the next all-reduce; at most TD_CLUSTER_MAX_S): every
 *                         call must succeed. Prints "ready" after the first round and
 *                         "rank R: N rounds, results exact" at the end (exit 0), or FAIL lines.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../fault/job_util.h"
#include "tpu_dist.h"

/* One exactly checked all-reduce; returns its result, or tpudistInternalError on a wrong value. */
static tpudistResult_t checkedAllReduce(tpudistComm_t c, int rank, int n, size_t count, int32_t *in,
                                        int32_t *out) {
  for (size_t i = 0; i < count; i++) in[i] = (rank + 1) * 1000 + (int32_t)(i % 977);
  tpudistResult_t r = tpudistAllReduce(in, out, count, tpudistInt32, tpudistSum, c, NULL);
  if (r != tpudistSuccess) return r;
  int32_t base = 1000 * n * (n + 1) / 2;
  for (size_t i = 0; i < count; i++) {
    int32_t e = base + n * (int32_t)(i % 977);
    if (out[i] != e) {
      fprintf(stderr, "rank %d: FAIL: element %zu is %d, expected %d\n", rank, i, out[i], e);
      return tpudistInternalError;
    }
  }
  return tpudistSuccess;
}

/* Does msg name a peer: "rank N" with N another rank of the job? */
static int namesPeer(const char *msg, int self, int n) {
  for (const char *p = strstr(msg, "rank "); p; p = strstr(p + 1, "rank ")) {
    int q = atoi(p + 5);
    if (q != self && q >= 0 && q < n && p[5] >= '0' && p[5] <= '9') return 1;
  }
  return 0;
}

static int modeLoop(int rank, int n, int allowTimeout) {
  long timeout = envLong("TPU_DIST_TIMEOUT_MS", 300000);
  double maxMs = envLong("TD_CLUSTER_MAX_S", 60) * 1e3;
  size_t count = (size_t)envLong("TD_CLUSTER_COUNT", 1 << 20);
  int32_t *in = malloc(count * 4), *out = malloc(count * 4);
  tpudistComm_t c = NULL;
  tpudistResult_t r = tpudistCommInitEnv(&c, n, rank, NULL);
  if (r != tpudistSuccess || !in || !out) {
    fprintf(stderr, "rank %d: FAIL: init: %s\n", rank, tpudistGetLastError(NULL));
    return 1;
  }
  double start = nowMs(), t0 = start, t1 = start;
  long it;
  for (it = 0; r == tpudistSuccess && t1 - start < maxMs; it++) {
    t0 = nowMs();
    r = checkedAllReduce(c, rank, n, count, in, out);
    t1 = nowMs();
    if (it == 0 && r == tpudistSuccess) {
      printf("rank %d: ready\n", rank);
      fflush(stdout);
    }
  }
  int bad = 0;
  const char *msg = tpudistGetLastError(c);
  if (r == tpudistSuccess) {
    fprintf(stderr, "rank %d: FAIL: no error after %ld all-reduces (%.0f s)\n", rank, it,
            maxMs / 1e3);
    bad = 1;
  } else {
    printf("rank %d: failed after %.0f ms (iteration %ld): %s: %s\n", rank, t1 - t0, it - 1,
           tpudistGetErrorString(r), msg);
    if (r != tpudistRemoteError && !(allowTimeout && r == tpudistTimeout))
      bad = fprintf(stderr, "rank %d: FAIL: not a remote error%s\n", rank,
                    allowTimeout ? " or a timeout" : "");
    if (!namesPeer(msg, rank, n))
      bad = fprintf(stderr, "rank %d: FAIL: the message names no peer rank\n", rank);
    if (t1 - t0 > timeout + 2000.0)
      bad = fprintf(stderr, "rank %d: FAIL: the error took %.0f ms (timeout %ld ms)\n", rank,
                    t1 - t0, timeout);
  }
  double d0 = nowMs();
  tpudistCommDestroy(c);
  if (nowMs() - d0 > 2000.0)
    bad = fprintf(stderr, "rank %d: FAIL: destroy took %.0f ms\n", rank, nowMs() - d0);
  free(in);
  free(out);
  fflush(stdout);
  return bad ? 1 : 0;
}

static int modeSteady(int rank, int n) {
  double maxMs = envLong("TD_CLUSTER_MAX_S", 60) * 1e3;
  size_t count = (size_t)envLong("TD_CLUSTER_COUNT", 1 << 20), counts[3] = {count, 1, 1000};
  const char *stopfile = getenv("TD_CLUSTER_STOP");
  int32_t *in = malloc(count * 4 + 4000), *out = malloc(count * 4 + 4000), stop = 0;
  tpudistComm_t c = NULL;
  if (!stopfile || tpudistCommInitEnv(&c, n, rank, NULL) != tpudistSuccess || !in || !out) {
    fprintf(stderr, "rank %d: FAIL: init (TD_CLUSTER_STOP set?): %s\n", rank,
            tpudistGetLastError(NULL));
    return 1;
  }
  double start = nowMs();
  long it;
  for (it = 0; !stop; it++) {
    for (int k = 0; k < 3; k++) {
      tpudistResult_t r = checkedAllReduce(c, rank, n, counts[k], in, out);
      if (r != tpudistSuccess) {
        fprintf(stderr, "rank %d: FAIL: round %ld, all-reduce of %zu: %s: %s\n", rank, it,
                counts[k], tpudistGetErrorString(r), tpudistGetLastError(c));
        return 1;
      }
    }
    if (it == 0) {
      printf("rank %d: ready\n", rank);
      fflush(stdout);
    }
    int32_t mine = rank == 0 && (access(stopfile, F_OK) == 0 || nowMs() - start > maxMs);
    if (tpudistAllReduce(&mine, &stop, 1, tpudistInt32, tpudistSum, c, NULL) != tpudistSuccess) {
      fprintf(stderr, "rank %d: FAIL: stop flag: %s\n", rank, tpudistGetLastError(c));
      return 1;
    }
  }
  tpudistCommDestroy(c);
  free(in);
  free(out);
  printf("rank %d: %ld rounds, results exact\n", rank, it);
  return 0;
}

int main(int argc, char **argv) {
  const char *rs = getenv("RANK"), *ns = getenv("WORLD_SIZE");
  int allowTimeout = argc > 2 && !strcmp(argv[2], "timeout");
  if (argc == 2 && !strcmp(argv[1], "steady") && rs && ns) return modeSteady(atoi(rs), atoi(ns));
  if (argc < 2 || strcmp(argv[1], "loop") || (argc > 2 && !allowTimeout) || !rs || !ns) {
    fprintf(stderr,
            "usage: RANK=R WORLD_SIZE=N TPU_DIST_COMM_ID=HOST:PORT cluster_job loop [timeout] | "
            "steady\n");
    return 2;
  }
  return modeLoop(atoi(rs), atoi(ns), allowTimeout);
}
