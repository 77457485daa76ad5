/*
 * main_job.c - the main job (scripts/main-job): every collective at a few sizes on the world
 * communicator; per collective and size it prints the algorithm (tpudistLastAlgorithm), the time
 * per call, the bus bandwidth, and whether the result checked out (exact: integer inputs whose
 * every result is known in closed form). Bootstraps through TPU_DIST_COMM_ID with the rank and
 * size tpudistCommInitEnv finds (RANK/WORLD_SIZE, else OMPI_COMM_WORLD_*, else SLURM_*).
 *
 *   main_job [--small]     --small: only the smallest size, one timed call (valgrind, smoke tests)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tpu_dist.h"

static int gRank, gN;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Value rank r contributes at element i (small: sums stay exact in int32). */
static int32_t val(int r, size_t i) {
  return (int32_t)((i * 7 + (size_t)r * 13) % 1000);
}

typedef enum {
  C_ALLREDUCE,
  C_BROADCAST,
  C_REDUCE,
  C_ALLGATHER,
  C_REDUCESCATTER,
  C_ALLTOALL,
  C_ALLTOALLV,
  C_SENDRECV,
  C_N
} Coll;
static const char *names[C_N] = {"allreduce",     "broadcast", "reduce",    "allgather",
                                 "reducescatter", "alltoall",  "alltoallv", "sendrecv"};
/* Bus bandwidth factor as nccl-tests. */
static double busFactor(Coll c) {
  double n = gN;
  if (c == C_ALLREDUCE) return 2 * (n - 1) / n;
  if (c == C_ALLGATHER || c == C_REDUCESCATTER || c == C_ALLTOALL || c == C_ALLTOALLV)
    return (n - 1) / n;
  return 1;
}

static tpudistResult_t run(Coll c, int32_t *s, int32_t *r, size_t cnt, tpudistComm_t comm,
                           size_t *sc, size_t *sd) {
  int next = (gRank + 1) % gN, prev = (gRank + gN - 1) % gN;
  switch (c) {
    case C_ALLREDUCE:
      return tpudistAllReduce(s, r, cnt, tpudistInt32, tpudistSum, comm, NULL);
    case C_BROADCAST:
      return tpudistBroadcast(s, r, cnt, tpudistInt32, 0, comm, NULL);
    case C_REDUCE:
      return tpudistReduce(s, r, cnt, tpudistInt32, tpudistSum, 0, comm, NULL);
    case C_ALLGATHER:
      return tpudistAllGather(s, r, cnt / gN, tpudistInt32, comm, NULL);
    case C_REDUCESCATTER:
      return tpudistReduceScatter(s, r, cnt / gN, tpudistInt32, tpudistSum, comm, NULL);
    case C_ALLTOALL:
      return tpudistAllToAll(s, r, cnt / gN, tpudistInt32, comm, NULL);
    case C_ALLTOALLV:
      return tpudistAllToAllv(s, sc, sd, r, sc, sd, tpudistInt32, comm, NULL);
    default:
      tpudistGroupStart();
      tpudistSend(s, cnt, tpudistInt32, next, comm, NULL);
      tpudistRecv(r, cnt, tpudistInt32, prev, comm, NULL);
      return tpudistGroupEnd();
  }
}

/* Inputs of this rank for c. */
static void fill(Coll c, int32_t *s, size_t cnt) {
  size_t per = cnt / gN;
  for (size_t i = 0; i < cnt; i++) s[i] = val(gRank, i);
  if (c == C_ALLTOALL || c == C_ALLTOALLV)
    for (size_t i = 0; i < cnt; i++) s[i] = val(gRank, i) + (int32_t)(i / (per ? per : 1)) * 1000;
}

/* 1 if r holds the right result of c. */
static int check(Coll c, const int32_t *r, size_t cnt) {
  size_t per = cnt / gN;
  int prev = (gRank + gN - 1) % gN;
  for (size_t i = 0; i < cnt; i++) {
    int32_t e;
    switch (c) {
      case C_ALLREDUCE:
      case C_REDUCE:
        if (c == C_REDUCE && gRank != 0) return 1;
        e = 0;
        for (int q = 0; q < gN; q++) e += val(q, i);
        break;
      case C_BROADCAST:
        e = val(0, i);
        break;
      case C_ALLGATHER:
        if (i >= per * gN) return 1;
        e = val((int)(i / per), i % per);
        break;
      case C_REDUCESCATTER:
        if (i >= per) return 1;
        e = 0;
        for (int q = 0; q < gN; q++) e += val(q, (size_t)gRank * per + i);
        break;
      case C_ALLTOALL:
      case C_ALLTOALLV: {
        if (i >= per * gN) return 1;
        size_t p = i / per, j = (size_t)gRank * per + i % per;
        e = val((int)p, j) + gRank * 1000;
        break;
      }
      default:
        e = val(prev, i);
        break;
    }
    if (r[i] != e) return 0;
  }
  return 1;
}

/* Runs c once checked, then iters timed calls; rank 0 prints one line (time: slowest rank).
 * Returns 1 on a failure or a wrong result on any rank. */
static int measure(Coll c, size_t cnt, int iters, tpudistComm_t comm, int32_t *s, int32_t *r,
                   size_t *sc, size_t *sd) {
  size_t per = cnt / (size_t)gN;
  for (int p = 0; p < gN; p++) {
    sc[p] = per;
    sd[p] = (size_t)p * per;
  }
  fill(c, s, cnt);
  memset(r, 0, cnt * 4);
  tpudistResult_t res = run(c, s, r, cnt, comm, sc, sd); /* warm-up, and the checked result */
  const char *algo = c == C_SENDRECV ? "direct" : tpudistLastAlgorithm(comm);
  int32_t good = res == tpudistSuccess && check(c, r, cnt), sum = 0;
  tpudistAllReduce(&good, &sum, 1, tpudistInt32, tpudistSum, comm, NULL); /* also lines up */
  int all = sum == gN;
  double t0 = now();
  for (int it = 0; it < iters && res == tpudistSuccess; it++) res = run(c, s, r, cnt, comm, sc, sd);
  float us = (float)((now() - t0) / iters * 1e6), slowest = us;
  tpudistAllReduce(&us, &slowest, 1, tpudistFloat32, tpudistMax, comm, NULL);
  if (gRank == 0)
    printf("%-14s %10zu %-13s %10.1f %10.3f %s\n", names[c], cnt * 4, algo, slowest,
           (double)cnt * 4 * busFactor(c) / (slowest * 1e3),
           res != tpudistSuccess ? tpudistGetErrorString(res)
           : all                 ? "ok"
                                 : "WRONG");
  return !all || res != tpudistSuccess;
}

int main(int argc, char **argv) {
  int small = argc > 1 && !strcmp(argv[1], "--small"); /* one small size, one timed call */
  tpudistComm_t comm; /* rank and size from RANK/WORLD_SIZE, mpirun's or srun's variables */
  if (tpudistCommInitEnv(&comm, -1, -1, NULL) != tpudistSuccess) {
    fprintf(stderr, "main_job: init: %s\n", tpudistGetLastError(NULL));
    return 1;
  }
  tpudistCommCount(comm, &gN);
  tpudistCommUserRank(comm, &gRank);
  static const size_t sizes[] = {1024, 256 * 1024, 4 * 1024 * 1024};
  size_t maxc = sizes[2] / 4;
  int32_t *s = malloc(maxc * 4), *r = malloc(maxc * 4);
  size_t *sc = malloc(sizeof(size_t) * gN), *sd = malloc(sizeof(size_t) * gN);
  memset(s, 0, maxc * 4);
  memset(r, 0, maxc * 4);
  tpudistTopology_t topo;
  tpudistCommTopology(comm, &topo);
  if (gRank == 0) {
    printf("main_job: %d ranks, topology ", gN);
    for (int d = 0; d < topo.ndims; d++) printf("%s%d", d ? "x" : "", topo.dims[d]);
    printf("%s\n%-14s %10s %-13s %10s %10s %s\n", topo.ndims ? "" : "flat", "collective", "bytes",
           "algorithm", "time_us", "busbw_GB/s", "check");
  }
  int failures = 0;
  for (int c = 0; c < C_N; c++)
    for (int k = 0; k < (small ? 1 : 3); k++)
      failures += measure((Coll)c, sizes[k] / 4 / (size_t)gN * (size_t)gN,
                          small    ? 1
                          : k == 2 ? 5
                                   : 20,
                          comm, s, r, sc, sd);
  tpudistCommDestroy(comm);
  free(s);
  free(r);
  free(sc);
  free(sd);
  if (gRank == 0) printf("main_job: %s\n", failures ? "FAILED" : "all results correct");
  return failures ? 1 : 0;
}
