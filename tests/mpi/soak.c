/*
 * soak.c - back-to-back small all-reduces (blocking, non-blocking and grouped), each checked
 * exactly, while the private resident memory (RssAnon) must not grow (nothing kept per call).
 * Launched without mpirun: TPU_DIST_COMM_ID, RANK, WORLD_SIZE (tests/mpi/soak.sh).
 *
 *   soak [iterations]      default 10000
 */
#include <stdio.h>
#include <stdlib.h>

#include "tpu_dist.h"

/* Private resident memory (RssAnon): heap and stacks; shared-memory rings (RssShmem) are the
 * transport's fixed-size mappings and are not counted. */
static long rssKiB(void) {
  char line[256];
  long kib = -1;
  FILE *f = fopen("/proc/self/status", "r");
  if (!f) return -1;
  while (fgets(line, sizeof(line), f))
    if (sscanf(line, "RssAnon: %ld kB", &kib) == 1) break;
  fclose(f);
  return kib;
}

int main(int argc, char **argv) {
  int iters = argc > 1 ? atoi(argv[1]) : 10000, rank = 0, n = 0;
  tpudistComm_t comm;
  if (tpudistCommInitEnv(&comm, -1, -1, NULL) != tpudistSuccess) {
    fprintf(stderr, "soak: init: %s\n", tpudistGetLastError(NULL));
    return 1;
  }
  tpudistCommUserRank(comm, &rank);
  tpudistCommCount(comm, &n);
  enum { N = 64 };
  int32_t in[N], out[N], out2[N];
  long rss0 = 0, bad = 0;
  for (int it = 0; it < iters && !bad; it++) {
    for (int i = 0; i < N; i++) in[i] = it * 31 + i + rank;
    tpudistResult_t r;
    if (it % 10 == 3) {
      tpudistRequest_t req;
      r = tpudistAllReduce(in, out, N, tpudistInt32, tpudistSum, comm, &req);
      if (r == tpudistSuccess) r = tpudistWait(req);
    } else if (it % 100 == 7) {
      tpudistGroupStart();
      tpudistAllReduce(in, out, N, tpudistInt32, tpudistSum, comm, NULL);
      tpudistAllReduce(in, out2, N, tpudistInt32, tpudistMax, comm, NULL);
      r = tpudistGroupEnd();
    } else {
      r = tpudistAllReduce(in, out, N, tpudistInt32, tpudistSum, comm, NULL);
    }
    if (r != tpudistSuccess) {
      fprintf(stderr, "soak rank %d iteration %d: %s\n", rank, it, tpudistGetLastError(comm));
      return 1;
    }
    for (int i = 0; i < N; i++) {
      int32_t e = 0;
      for (int q = 0; q < n; q++) e += it * 31 + i + q;
      bad += out[i] != e;
    }
    if (it == iters / 10) rss0 = rssKiB();
  }
  long rss1 = rssKiB();
  tpudistCommDestroy(comm);
  printf("soak rank %d: %d all-reduces, %ld wrong elements, RSS %ld KiB -> %ld KiB\n", rank, iters,
         bad, rss0, rss1);
  if (bad) return 1;
  if (rss1 - rss0 > 256) {
    fprintf(stderr, "soak rank %d: RSS grew by %ld KiB\n", rank, rss1 - rss0);
    return 1;
  }
  return 0;
}
