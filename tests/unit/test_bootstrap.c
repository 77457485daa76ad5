/*
 * test_bootstrap.c - the bootstrap between forked processes: allgather, barrier, two splits whose
 * children outlive their parent, a version mismatch and a duplicate rank reported clearly to
 * everyone, rendezvous through an external store and through TPU_DIST_COMM_ID (the same id twice
 * gives two distinct communicator hashes), bootstrapAbort from another thread, host identity.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../cu_main.h"
#include "bootstrap.h"
#include "fork_ranks.h"
#include "net.h"

/* Bootstrap alone: allgather, barrier, split into odd/even halves and allgather there. */
static int bodyBootstrap(int rank, int n, const tpudistUniqueId *id, void *arg) {
  (void)arg;
  char err[TD_ERRLEN];
  tdBootstrap *bs, *child, *child2;
  CHILD_CHECK(bootstrapInit(id, rank, n, 20000, &bs, err) == tpudistSuccess);
  int vals[8] = {0};
  vals[rank] = rank * 100 + 7;
  CHILD_CHECK(bootstrapAllGather(bs, vals, sizeof(int), err) == tpudistSuccess);
  for (int r = 0; r < n; r++) CHILD_CHECK(vals[r] == r * 100 + 7);
  CHILD_CHECK(bootstrapBarrier(bs, err) == tpudistSuccess);
  /* two splits in a row: members in reverse rank order within the parity class */
  int members[8], m = 0, newrank = -1;
  for (int r = n - 1; r >= 0; r--)
    if (r % 2 == rank % 2) {
      if (r == rank) newrank = m;
      members[m++] = r;
    }
  CHILD_CHECK(bootstrapSplit(bs, members, m, newrank, 1000 + rank % 2, &child, err) ==
              tpudistSuccess);
  CHILD_CHECK(bootstrapSplit(bs, members, m, newrank, 2000 + rank % 2, &child2, err) ==
              tpudistSuccess);
  CHILD_CHECK(bootstrapCommHash(child) != bootstrapCommHash(bs));
  bootstrapFree(bs); /* the children outlive their parent */
  int cv[8] = {0};
  cv[newrank] = rank;
  CHILD_CHECK(bootstrapAllGather(child, cv, sizeof(int), err) == tpudistSuccess);
  for (int i = 0; i < m; i++) CHILD_CHECK(cv[i] == members[i]);
  CHILD_CHECK(bootstrapBarrier(child2, err) == tpudistSuccess);
  bootstrapFree(child);
  bootstrapFree(child2);
  return 0;
}

static void testBootstrap(void) {
  CU_ASSERT_EQUAL(runRanks(4, bodyBootstrap, NULL, 60), 0);
  CU_ASSERT_EQUAL(runRanks(1, bodyBootstrap, NULL, 60), 0);
}

/* Version mismatch: rank 1 presents another version; both ranks fail with a message naming both. */
static int bodyVersion(int rank, int n, const tpudistUniqueId *id, void *arg) {
  (void)arg;
  char err[TD_ERRLEN] = "";
  tdBootstrap *bs;
  if (rank == 1) bootstrapTestSetVersion(TPUDIST_VERSION_CODE + 1);
  tpudistResult_t r = bootstrapInit(id, rank, n, 10000, &bs, err);
  char want[96];
  snprintf(want, sizeof(want), "peer 1 runs tpu_dist version %u, this rank %u",
           (unsigned)TPUDIST_VERSION_CODE + 1, (unsigned)TPUDIST_VERSION_CODE);
  if (!strstr(err, want)) fprintf(stderr, "rank %d: '%s'\n", rank, err);
  CHILD_CHECK(r == tpudistInvalidUsage && strstr(err, want));
  return 0;
}

/* Two processes claim rank 1: the rendezvous fails for everyone with a clear message. */
static int bodyDuplicate(int rank, int n, const tpudistUniqueId *id, void *arg) {
  (void)arg;
  (void)n;
  char err[TD_ERRLEN] = "";
  tdBootstrap *bs;
  tpudistResult_t r = bootstrapInit(id, rank == 0 ? 0 : 1, 3, 10000, &bs, err);
  if (rank == 0)
    CHILD_CHECK(r == tpudistInvalidUsage && strstr(err, "two processes presented rank 1"));
  if (rank != 0) CHILD_CHECK(r != tpudistSuccess); /* rejected, or told the rendezvous failed */
  return 0;
}

static void testVersionAndDuplicate(void) {
  CU_ASSERT_EQUAL(runRanks(2, bodyVersion, NULL, 30), 0);
  CU_ASSERT_EQUAL(runRanks(3, bodyDuplicate, NULL, 30), 0);
}

/* A store kept in files under a directory (what torch's FileStore does). */
static int fileSet(void *ctx, const char *key, const void *value, size_t len) {
  char path[512], tmp[520];
  snprintf(path, sizeof(path), "%s/%lx", (const char *)ctx,
           (unsigned long)strlen(key) * 31 + (unsigned char)key[strlen(key) - 1]);
  snprintf(tmp, sizeof(tmp), "%s.tmp", path);
  FILE *f = fopen(tmp, "w");
  if (!f) return 1;
  fwrite(value, 1, len, f);
  fclose(f);
  return rename(tmp, path);
}

static int fileGet(void *ctx, const char *key, void **value, size_t *len, int timeoutMs) {
  char path[512];
  snprintf(path, sizeof(path), "%s/%lx", (const char *)ctx,
           (unsigned long)strlen(key) * 31 + (unsigned char)key[strlen(key) - 1]);
  for (int waited = 0; waited < timeoutMs; waited += 5) {
    FILE *f = fopen(path, "r");
    if (f) {
      *value = malloc(4096);
      *len = fread(*value, 1, 4096, f);
      fclose(f);
      return 0;
    }
    usleep(5000);
  }
  return 1;
}

static int bodyStore(int rank, int n, const tpudistUniqueId *id, void *arg) {
  (void)id;
  char err[TD_ERRLEN];
  tpudistStore_t store = {arg, fileSet, fileGet};
  tdBootstrap *bs;
  CHILD_CHECK(bootstrapInitStore(&store, "pg0", rank, n, 20000, &bs, err) == tpudistSuccess);
  int vals[4] = {0};
  vals[rank] = 1000 + rank;
  CHILD_CHECK(bootstrapAllGather(bs, vals, sizeof(int), err) == tpudistSuccess);
  for (int r = 0; r < n; r++) CHILD_CHECK(vals[r] == 1000 + r);
  bootstrapFree(bs);
  return 0;
}

/* TPU_DIST_COMM_ID style: every rank builds the id from host:port itself. */
static int bodyCommId(int rank, int n, const tpudistUniqueId *id, void *arg) {
  (void)id;
  char err[TD_ERRLEN];
  tpudistUniqueId mine;
  tdBootstrap *bs;
  uint64_t hashes[2][4];
  CHILD_CHECK(bootstrapGetUniqueId(&mine, (const char *)arg, err) == tpudistSuccess);
  for (int round = 0; round < 2; round++) { /* the same id twice: two distinct communicators */
    CHILD_CHECK(bootstrapInit(&mine, rank, n, 20000, &bs, err) == tpudistSuccess);
    hashes[round][rank] = bootstrapCommHash(bs);
    CHILD_CHECK(bootstrapAllGather(bs, hashes[round], sizeof(uint64_t), err) == tpudistSuccess);
    for (int r = 0; r < n; r++) CHILD_CHECK(hashes[round][r] == hashes[round][0]);
    bootstrapFree(bs);
  }
  CHILD_CHECK(hashes[0][0] != hashes[1][0]);
  return 0;
}

static void testStoreAndCommId(void) {
  char dir[] = "/tmp/td_store_XXXXXX";
  CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
  CU_ASSERT_EQUAL(runRanks(3, bodyStore, dir, 60), 0);
  char cmd[64];
  snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
  CU_ASSERT_EQUAL(system(cmd), 0);
  /* a free port: bind port 0 on loopback (IPv4, then IPv6 if the host has it), note it, close */
  const char *hosts[] = {"127.0.0.1", "[::1]"};
  for (int i = 0; i < 2; i++) {
    tdNetAddr a, bound;
    int fd;
    char err[TD_ERRLEN], hp[64];
    snprintf(hp, sizeof(hp), "%s:1", hosts[i]);
    CU_ASSERT_EQUAL_FATAL(netParseHostPort(hp, &a, err), tpudistSuccess);
    a.port = 0;
    if (netListen(&a, &fd, &bound, err) != tpudistSuccess) {
      CU_ASSERT_EQUAL(i, 1); /* only IPv6 may be missing */
      continue;
    }
    close(fd);
    snprintf(hp, sizeof(hp), "%s:%u", hosts[i], bound.port);
    CU_ASSERT_EQUAL(runRanks(3, bodyCommId, hp, 60), 0);
  }
  tdNetAddr bad;
  char err[TD_ERRLEN];
  CU_ASSERT_EQUAL(netParseHostPort("nocolon", &bad, err), tpudistInvalidArgument);
  CU_ASSERT_EQUAL(netParseHostPort("127.0.0.1:99999", &bad, err), tpudistInvalidArgument);
  CU_ASSERT_EQUAL(netParseHostPort("[::1:5", &bad, err), tpudistInvalidArgument);
}

/* bootstrapAbort from another thread unblocks rank 0 waiting for a rank that never comes. */
static void *abortLater(void *bs) {
  usleep(200000);
  bootstrapAbort(bs);
  return NULL;
}

static int bodyAbort(int rank, int n, const tpudistUniqueId *id, void *arg) {
  (void)arg;
  char err[TD_ERRLEN];
  tdBootstrap *bs;
  CHILD_CHECK(bootstrapInit(id, rank, n, 20000, &bs, err) == tpudistSuccess);
  if (rank == 1) {
    usleep(3000000); /* never joins the allgather in time */
    bootstrapFree(bs);
    return 0;
  }
  pthread_t t;
  int v[2] = {1, 0};
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  pthread_create(&t, NULL, abortLater, bs);
  tpudistResult_t r = bootstrapAllGather(bs, v, sizeof(int), err);
  pthread_join(t, NULL);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  CHILD_CHECK(r == tpudistAborted);
  CHILD_CHECK(t1.tv_sec - t0.tv_sec < 2);
  bootstrapFree(bs);
  return 0;
}

static void testAbort(void) {
  CU_ASSERT_EQUAL(runRanks(2, bodyAbort, NULL, 30), 0);
}

static void testHostHash(void) {
  CU_ASSERT_EQUAL(bootstrapHostHash(NULL), bootstrapHostHash(NULL));
  CU_ASSERT_NOT_EQUAL(bootstrapHostHash("a"), bootstrapHostHash("b"));
  CU_ASSERT_NOT_EQUAL(bootstrapHostHash(NULL), bootstrapHostHash("a"));
}

int main(void) {
  CU_TestInfo tests[] = {
      {"host hash", testHostHash},
      {"allgather/barrier/split", testBootstrap},
      {"version mismatch and duplicate rank", testVersionAndDuplicate},
      {"store and TPU_DIST_COMM_ID rendezvous", testStoreAndCommId},
      {"bootstrapAbort unblocks", testAbort},
      CU_TEST_INFO_NULL,
  };
  return tdCUnitMain("unit-bootstrap", tests);
}
