/*
 * many_ranks.c - many ranks on one host (tests/mpi/many_ranks.sh): every collective once, with
 * small sizes that stay small at 512 ranks, each result checked exactly on every rank (int32
 * inputs whose results are known in closed form); then what the job cost: init time (slowest
 * rank; since the launch when TD_LAUNCH_T0_NS gives the launcher's CLOCK_REALTIME), peak RSS per
 * rank (TD_START_FILE: every rank waits for that file to exist before it starts, so that the init
 * time leaves out how long the launcher took to start them all), /dev/shm in use before destroy
 * (segments stay mapped until then, so this is the peak; the suite runs in a private /dev/shm) and
 * the time of each collective. Bootstraps through TPU_DIST_COMM_ID with RANK/WORLD_SIZE
 * (tpudistCommInitEnv).
 *
 *   many_ranks [--init-only] [--a2a-bytes B] [--expect LABEL=ALGO]...
 *     --init-only          create and destroy the communicator, report its cost (no collectives)
 *     --a2a-bytes B        send buffer of the call alltoall-large (default 256 KiB)
 *     --expect LABEL=ALGO  fail unless the call LABEL ran algorithm ALGO
 *
 * Rank 0 prints one line per call (label, algorithm, slowest time, check) and a summary:
 *   many_ranks: N ranks topology T init_ms max M mean A launch_ms L
 *   many_ranks: rss_kib max X mean Y anon_max Z shm_used_kib S
 *   many_ranks: all results correct
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "tpu_dist.h"

static int gRank, gN;

static double nowMs(clockid_t clk) {
  struct timespec ts;
  clock_gettime(clk, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* Value rank r contributes at element i: sums over 512 ranks stay exact in int32. */
static int32_t val(int r, size_t i) {
  return (int32_t)((i * 7 + (size_t)r * 13) % 1000);
}

/* All-to-all-v: int32 elements rank s sends rank d (some pairs send nothing). */
static size_t a2avCount(int s, int d) {
  return (size_t)((s + 2 * d) % 3);
}

/* The value of element j of what rank s sends rank d. */
static int32_t pairVal(int s, int d, size_t j) {
  return (int32_t)(s * 1000 + d + (int32_t)j * 7);
}

typedef struct {
  const char *label;
  const char *algo;
  double ms;
  int ok;
} Call;

enum { MAX_CALLS = 16 };
static Call gCalls[MAX_CALLS];
static int gNcalls;

static void record(const char *label, tpudistComm_t comm, double t0, tpudistResult_t res, int ok,
                   const char *algo) {
  Call *c = &gCalls[gNcalls++];
  c->label = label;
  c->algo = algo ? algo : tpudistLastAlgorithm(comm);
  c->ms = nowMs(CLOCK_MONOTONIC) - t0;
  c->ok = res == tpudistSuccess && ok;
  if (res != tpudistSuccess)
    fprintf(stderr, "many_ranks: rank %d: %s: %s (%s)\n", gRank, label, tpudistGetErrorString(res),
            tpudistGetLastError(comm));
}

static int sumCheck(const int32_t *r, size_t cnt, size_t base) {
  for (size_t i = 0; i < cnt; i++) {
    int32_t e = 0;
    for (int q = 0; q < gN; q++) e += val(q, base + i);
    if (r[i] != e) return 0;
  }
  return 1;
}

static void rooted(tpudistComm_t comm, int32_t *s, int32_t *r) {
  const size_t cnt = 256;
  int root = gN - 1, rroot = gN / 2;
  for (size_t i = 0; i < cnt; i++) s[i] = val(gRank, i), r[i] = -1;
  double t0 = nowMs(CLOCK_MONOTONIC);
  tpudistResult_t res = tpudistBroadcast(s, r, cnt, tpudistInt32, root, comm, NULL);
  int ok = 1;
  for (size_t i = 0; i < cnt; i++) ok &= r[i] == val(root, i);
  record("broadcast", comm, t0, res, ok, NULL);
  memset(r, 0xff, cnt * 4);
  t0 = nowMs(CLOCK_MONOTONIC);
  res = tpudistReduce(s, r, cnt, tpudistInt32, tpudistSum, rroot, comm, NULL);
  record("reduce", comm, t0, res, gRank != rroot || sumCheck(r, cnt, 0), NULL);
}

static void reductions(tpudistComm_t comm, int32_t *s, int32_t *r) {
  const size_t cnt = 256, per = 4;
  for (size_t i = 0; i < cnt; i++) s[i] = val(gRank, i);
  double t0 = nowMs(CLOCK_MONOTONIC);
  tpudistResult_t res = tpudistAllReduce(s, r, cnt, tpudistInt32, tpudistSum, comm, NULL);
  record("allreduce", comm, t0, res, sumCheck(r, cnt, 0), NULL);
  for (size_t i = 0; i < per * (size_t)gN; i++) s[i] = val(gRank, i);
  t0 = nowMs(CLOCK_MONOTONIC);
  res = tpudistReduceScatter(s, r, per, tpudistInt32, tpudistSum, comm, NULL);
  record("reducescatter", comm, t0, res, sumCheck(r, per, (size_t)gRank * per), NULL);
  for (size_t i = 0; i < per; i++) s[i] = val(gRank, i);
  t0 = nowMs(CLOCK_MONOTONIC);
  res = tpudistAllGather(s, r, per, tpudistInt32, comm, NULL);
  int ok = 1;
  for (size_t i = 0; i < per * (size_t)gN; i++) ok &= r[i] == val((int)(i / per), i % per);
  record("allgather", comm, t0, res, ok, NULL);
}

/* All-to-all with per elements per peer. */
static void alltoall(const char *label, tpudistComm_t comm, size_t per, int32_t *s, int32_t *r) {
  for (int d = 0; d < gN; d++)
    for (size_t j = 0; j < per; j++) s[(size_t)d * per + j] = pairVal(gRank, d, j);
  memset(r, 0xff, per * (size_t)gN * 4);
  double t0 = nowMs(CLOCK_MONOTONIC);
  tpudistResult_t res = tpudistAllToAll(s, r, per, tpudistInt32, comm, NULL);
  int ok = 1;
  for (int p = 0; p < gN; p++)
    for (size_t j = 0; j < per; j++) ok &= r[(size_t)p * per + j] == pairVal(p, gRank, j);
  record(label, comm, t0, res, ok, NULL);
}

static void alltoallv(tpudistComm_t comm, int32_t *s, int32_t *r) {
  size_t *sc = malloc(sizeof(size_t) * 4 * (size_t)gN), *sd = sc + gN, *rc = sd + gN, *rd = rc + gN;
  size_t so = 0, ro = 0;
  for (int p = 0; p < gN; p++) {
    sc[p] = a2avCount(gRank, p), sd[p] = so, so += sc[p];
    rc[p] = a2avCount(p, gRank), rd[p] = ro, ro += rc[p];
    for (size_t j = 0; j < sc[p]; j++) s[sd[p] + j] = pairVal(gRank, p, j);
  }
  memset(r, 0xff, ro * 4);
  double t0 = nowMs(CLOCK_MONOTONIC);
  tpudistResult_t res = tpudistAllToAllv(s, sc, sd, r, rc, rd, tpudistInt32, comm, NULL);
  int ok = 1;
  for (int p = 0; p < gN; p++)
    for (size_t j = 0; j < rc[p]; j++) ok &= r[rd[p] + j] == pairVal(p, gRank, j);
  record("alltoallv", comm, t0, res, ok, NULL);
  free(sc);
}

/* A shift by half the job (a far peer) and by one (the ring), in one group. */
static void sendrecv(tpudistComm_t comm, int32_t *s, int32_t *r) {
  const size_t cnt = 64;
  int far = (gRank + gN / 2) % gN, from_far = (gRank + gN - gN / 2) % gN;
  int next = (gRank + 1) % gN, prev = (gRank + gN - 1) % gN;
  for (size_t i = 0; i < cnt; i++) s[i] = val(gRank, i);
  memset(r, 0xff, 2 * cnt * 4);
  double t0 = nowMs(CLOCK_MONOTONIC);
  tpudistGroupStart();
  tpudistSend(s, cnt, tpudistInt32, far, comm, NULL);
  tpudistSend(s, cnt, tpudistInt32, next, comm, NULL);
  tpudistRecv(r, cnt, tpudistInt32, from_far, comm, NULL);
  tpudistRecv(r + cnt, cnt, tpudistInt32, prev, comm, NULL);
  tpudistResult_t res = tpudistGroupEnd();
  int ok = 1;
  for (size_t i = 0; i < cnt; i++) ok &= r[i] == val(from_far, i) && r[cnt + i] == val(prev, i);
  record("sendrecv", comm, t0, res, ok, "direct");
}

/* kB of field ("VmHWM:", "RssAnon:" ...) in /proc/self/status, or 0. */
static double statusKib(const char *field) {
  char line[256];
  double v = 0;
  FILE *f = fopen("/proc/self/status", "r");
  if (!f) return 0;
  while (fgets(line, sizeof(line), f))
    if (!strncmp(line, field, strlen(field))) v = atof(line + strlen(field));
  fclose(f);
  return v;
}

static double shmUsedKib(void) {
  struct statvfs sv;
  if (statvfs("/dev/shm", &sv) != 0) return -1;
  return (double)(sv.f_blocks - sv.f_bfree) * (double)sv.f_frsize / 1024;
}

/* Fails (returns 1) unless every --expect LABEL=ALGO matches what ran. */
static int expectations(int argc, char **argv) {
  int bad = 0;
  for (int a = 1; a < argc; a++) {
    if (!strcmp(argv[a], "--a2a-bytes")) {
      a++;
      continue;
    }
    if (strcmp(argv[a], "--expect") || a + 1 >= argc) continue;
    const char *spec = argv[++a], *eq = strchr(spec, '=');
    int found = 0;
    for (int i = 0; eq && i < gNcalls; i++) {
      if (strlen(gCalls[i].label) != (size_t)(eq - spec) ||
          strncmp(gCalls[i].label, spec, (size_t)(eq - spec)))
        continue;
      found = 1;
      if (strcmp(gCalls[i].algo, eq + 1)) {
        if (gRank == 0)
          printf("many_ranks: %s ran %s, expected %s\n", gCalls[i].label, gCalls[i].algo, eq + 1);
        bad = 1;
      }
    }
    if (!found) {
      if (gRank == 0) printf("many_ranks: --expect %s names no call\n", spec);
      bad = 1;
    }
  }
  return bad;
}

/* Reduces the per-call results and the costs over the ranks; rank 0 prints. Returns failures. */
static int report(tpudistComm_t comm, double init_ms, double launch_ms) {
  enum { K = 4 };
  double mx[MAX_CALLS + K], sum[MAX_CALLS + K], mine[MAX_CALLS + K];
  int32_t bad[MAX_CALLS], nbad[MAX_CALLS], failed = 0;
  for (int i = 0; i < gNcalls; i++) mine[i] = gCalls[i].ms, bad[i] = !gCalls[i].ok;
  mine[gNcalls] = init_ms;
  mine[gNcalls + 1] = launch_ms;
  mine[gNcalls + 2] = statusKib("VmHWM:");
  mine[gNcalls + 3] = statusKib("RssAnon:");
  tpudistResult_t r1 = tpudistAllReduce(bad, nbad, gNcalls, tpudistInt32, tpudistSum, comm, NULL);
  double shm = shmUsedKib(); /* every rank is past its last collective: all segments mapped */
  tpudistResult_t r2 =
      tpudistAllReduce(mine, mx, gNcalls + K, tpudistFloat64, tpudistMax, comm, NULL);
  tpudistResult_t r3 =
      tpudistAllReduce(mine, sum, gNcalls + K, tpudistFloat64, tpudistSum, comm, NULL);
  if (r1 != tpudistSuccess || r2 != tpudistSuccess || r3 != tpudistSuccess) {
    fprintf(stderr, "many_ranks: rank %d: the report's reductions failed: %s\n", gRank,
            tpudistGetLastError(comm));
    return 1;
  }
  if (gRank == 0) {
    for (int i = 0; i < gNcalls; i++) {
      printf("%-16s %-13s %10.2f ms ", gCalls[i].label, gCalls[i].algo, mx[i]);
      printf(nbad[i] ? "WRONG or failed on %d ranks\n" : "ok\n", nbad[i]);
    }
    int b = gNcalls;
    printf("many_ranks: init_ms max %.0f mean %.0f launch_ms %.0f\n", mx[b], sum[b] / gN,
           mx[b + 1]);
    printf(
        "many_ranks: rss_kib max %.0f mean %.0f anon_max %.0f anon_mean %.0f shm_used_kib %.0f\n",
        mx[b + 2], sum[b + 2] / gN, mx[b + 3], sum[b + 3] / gN, shm);
  }
  for (int i = 0; i < gNcalls; i++) failed += nbad[i];
  return failed != 0;
}

int main(int argc, char **argv) {
  const char *t0s = getenv("TD_LAUNCH_T0_NS"), *go = getenv("TD_START_FILE");
  for (int waited = 0; go && access(go, F_OK) != 0; waited += 10) {
    struct timespec ts = {0, 10000000};
    if (waited > 600000) return 1;
    nanosleep(&ts, NULL);
  }
  double t0 = nowMs(CLOCK_MONOTONIC);
  tpudistComm_t comm;
  if (tpudistCommInitEnv(&comm, -1, -1, NULL) != tpudistSuccess) {
    fprintf(stderr, "many_ranks: init: %s\n", tpudistGetLastError(NULL));
    return 1;
  }
  double init_ms = nowMs(CLOCK_MONOTONIC) - t0;
  double launch_ms = t0s ? nowMs(CLOCK_REALTIME) - atof(t0s) * 1e-6 : 0;
  tpudistCommCount(comm, &gN);
  tpudistCommUserRank(comm, &gRank);
  size_t a2a_bytes = 262144; /* alltoall-large: the send buffer */
  for (int a = 1; a + 1 < argc; a++)
    if (!strcmp(argv[a], "--a2a-bytes")) a2a_bytes = strtoul(argv[a + 1], NULL, 0);
  size_t big = a2a_bytes / 4 / (size_t)gN ? a2a_bytes / 4 / (size_t)gN : 1; /* per peer */
  size_t elems = big * (size_t)gN + 256 + 4 * (size_t)gN;
  int32_t *s = calloc(elems, 4), *r = calloc(elems, 4);
  if (!s || !r) return 1;
  tpudistTopology_t topo;
  tpudistCommTopology(comm, &topo);
  if (gRank == 0) {
    printf("many_ranks: %d ranks, topology ", gN);
    for (int d = 0; d < topo.ndims; d++) printf("%s%d", d ? "x" : "", topo.dims[d]);
    printf("%s\n", topo.ndims ? "" : "flat");
  }
  int init_only = argc > 1 && !strcmp(argv[1], "--init-only");
  if (!init_only) {
    reductions(comm, s, r);
    rooted(comm, s, r);
    alltoall("alltoall", comm, 2, s, r);
    alltoall("alltoall-large", comm, big, s, r);
    alltoallv(comm, s, r);
    sendrecv(comm, s, r);
  }
  int failures = report(comm, init_ms, launch_ms);
  failures += expectations(argc, argv);
  tpudistCommDestroy(comm);
  free(s);
  free(r);
  if (gRank == 0) printf("many_ranks: %s\n", failures ? "FAILED" : "all results correct");
  return failures ? 1 : 0;
}
