/*
 * test_transport.c - bootstrap and transports between real processes: the test forks 2 or 4 ranks
 * that rendezvous through a unique id created before the fork, build a minimal communicator
 * (transportTestComm) and exchange tagged messages of 0, 1, 4 KiB, 1 MiB+3 and 16 MiB bytes over
 * self + shm and self + socket (receives posted before and after arrival, in reverse key order),
 * reducing receives (float sum), and check every byte. Also: a wrong secret is rejected while the
 * real ranks complete, no /dev/shm segment is left, and a peer that exits turns the survivor's
 * transfer into tpudistRemoteError instead of a hang. A child reports failure through its exit
 * status (the failing line number).
 */
#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../cu_main.h"
#include "bootstrap.h"
#include "core/config.h"
#include "kernels.h"
#include "net.h"
#include "registry.h"

#define CHILD_CHECK(c)                                                     \
  do {                                                                     \
    if (!(c)) {                                                            \
      fprintf(stderr, "rank check failed at line %d: %s\n", __LINE__, #c); \
      return __LINE__ % 250 + 1;                                           \
    }                                                                      \
  } while (0)

typedef int (*tdRankBody)(int rank, int n, const tpudistUniqueId *id, void *arg);

static const char *gTransports; /* TPU_DIST_TRANSPORTS of the ranks */
static int gCma = 1;
static long gShmBytes;      /* TPU_DIST_SHM_BUF_BYTES (0: default) */
static const char *gIfname; /* TPU_DIST_SOCKET_IFNAME */
static tdConfig gCfg;

/* Forks n ranks running body; returns the number of ranks that failed (or timed out). */
static int runRanks(int n, tdRankBody body, void *arg, int timeout_s) {
  tpudistUniqueId id;
  char err[TD_ERRLEN];
  pid_t pids[8];
  int failed = 0;
  if (bootstrapGetUniqueId(&id, NULL, err) != tpudistSuccess) {
    fprintf(stderr, "unique id: %s\n", err);
    return n;
  }
  fflush(NULL);
  for (int r = 0; r < n; r++) {
    pids[r] = fork();
    if (pids[r] == 0) _exit(body(r, n, &id, arg));
  }
  time_t end = time(NULL) + timeout_s;
  for (int left = n; left > 0;) {
    int st;
    pid_t p = waitpid(-1, &st, WNOHANG);
    if (p > 0) {
      left--;
      if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fprintf(stderr, "rank pid %d failed: status %d\n", (int)p, st);
        failed++;
      }
      continue;
    }
    if (time(NULL) > end) {
      fprintf(stderr, "ranks timed out\n");
      for (int r = 0; r < n; r++) kill(pids[r], SIGKILL);
      while (waitpid(-1, NULL, 0) > 0) {
      }
      return failed + left;
    }
    usleep(2000);
  }
  return failed;
}

/* Bootstrap + communicator for a child, with the test's transport choice. */
static tdComm *childComm(int rank, int n, const tpudistUniqueId *id) {
  char err[TD_ERRLEN];
  tdBootstrap *bs;
  tdComm *comm;
  gCfg = *configGet();
  gCfg.transports = gTransports;
  gCfg.shm_cma = gCma;
  if (gShmBytes) gCfg.shm_buf_bytes = gShmBytes;
  if (gIfname) gCfg.socket_ifname = gIfname;
  if (bootstrapInit(id, rank, n, 30000, &bs, err) != tpudistSuccess) {
    fprintf(stderr, "rank %d bootstrap: %s\n", rank, err);
    return NULL;
  }
  if (transportTestComm(bs, &gCfg, &comm, err) != tpudistSuccess) {
    fprintf(stderr, "rank %d comm: %s\n", rank, err);
    bootstrapFree(bs);
    return NULL;
  }
  return comm;
}

static unsigned char pattern(int src, int dst, int tag, size_t i) {
  return (unsigned char)(i * 131u + (i >> 9) * 7u + (unsigned)src * 17u + (unsigned)dst * 29u +
                         (unsigned)tag * 71u);
}

static void fillPattern(unsigned char *b, size_t len, int src, int dst, int tag) {
  for (size_t i = 0; i < len; i++) b[i] = pattern(src, dst, tag, i);
}

static size_t firstMismatch(const unsigned char *b, size_t len, int src, int dst, int tag) {
  for (size_t i = 0; i < len; i++)
    if (b[i] != pattern(src, dst, tag, i)) return i;
  return len;
}

/* Progresses until every transfer is done; 0 on success. */
static int waitAll(tdComm *comm, tdXfer *xs, int nx, int timeout_ms) {
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (;;) {
    int all = 1, prog;
    transportProgressAll(comm, &prog);
    for (int i = 0; i < nx; i++)
      if (!xs[i].done) all = 0;
    if (all) break;
    clock_gettime(CLOCK_MONOTONIC, &t);
    if ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 > timeout_ms) {
      for (int i = 0; i < nx; i++)
        if (!xs[i].done)
          fprintf(stderr, "rank %d: transfer %d with %d (%zu bytes) not done\n", comm->rank, i,
                  xs[i].peer, xs[i].len);
      return -1;
    }
    if (!prog) sched_yield();
  }
  for (int i = 0; i < nx; i++)
    if (xs[i].result != tpudistSuccess) {
      fprintf(stderr, "rank %d: transfer %d with %d failed: %d (%s)\n", comm->rank, i, xs[i].peer,
              xs[i].result, comm->last_error);
      return -1;
    }
  return 0;
}

/* Progress for ms milliseconds without waiting for anything (lets messages arrive unexpected). */
static void progressFor(tdComm *comm, int ms) {
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  do {
    int prog;
    transportProgressAll(comm, &prog);
    clock_gettime(CLOCK_MONOTONIC, &t);
  } while ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 < ms);
}

static const size_t kSizes[] = {0, 1, 4096, (1u << 20) + 3, 16u << 20};
#define NSIZES 5
#define BIG 4 /* index of 16 MiB: only between ring neighbours (memory) */

/* Exchange: every rank sends every size to every rank (itself too); 16 MiB only to rank+1.
 * late: receives are posted after the sends had time to arrive, in reverse order. */
static int exchange(tdComm *comm, int late) {
  int n = comm->nranks, me = comm->rank, nx = 0;
  tdXfer *xs = calloc((size_t)(2 * n * NSIZES), sizeof(tdXfer));
  unsigned char **bufs = calloc((size_t)(2 * n * NSIZES), sizeof(char *));
  CHILD_CHECK(xs && bufs);
  for (int pass = 0; pass < 2; pass++) {
    int sends = (pass == 0) == (late != 0);
    for (int k = 0; k < n * NSIZES; k++) {
      int kk = (!sends && late) ? n * NSIZES - 1 - k : k; /* late receives in reverse order */
      int peer = kk / NSIZES, s = kk % NSIZES;
      int other = sends ? peer : peer; /* destination for sends, source for receives */
      if (s == BIG && (sends ? other != (me + 1) % n : other != (me + n - 1) % n)) continue;
      tdXfer *x = &xs[nx];
      size_t len = kSizes[s];
      bufs[nx] = malloc(len + 1);
      CHILD_CHECK(bufs[nx]);
      if (sends) fillPattern(bufs[nx], len, me, other, s);
      x->peer = other;
      x->key = (tdMsgKey){7, 1, (uint32_t)s, (uint32_t)(late ? 1 : 0)};
      x->buf = bufs[nx];
      x->len = len;
      CHILD_CHECK((sends ? transportPostSend(comm, x) : transportPostRecv(comm, x)) ==
                  tpudistSuccess);
      x->tp_priv[2] = (void *)(intptr_t)(sends ? 1 : 0);
      nx++;
    }
    if (pass == 0 && late) progressFor(comm, 150);
    if (pass == 0 && !late) {
      char err[TD_ERRLEN];
      CHILD_CHECK(bootstrapBarrier(comm->bootstrap, err) == tpudistSuccess);
    }
  }
  CHILD_CHECK(waitAll(comm, xs, nx, 60000) == 0);
  for (int i = 0; i < nx; i++) {
    if (xs[i].tp_priv[2]) continue; /* a send */
    int s = (int)xs[i].key.ordinal;
    size_t bad = firstMismatch(bufs[i], xs[i].len, xs[i].peer, me, s);
    if (bad != xs[i].len)
      fprintf(stderr, "rank %d: from %d size %zu: byte %zu wrong\n", me, xs[i].peer, xs[i].len,
              bad);
    CHILD_CHECK(bad == xs[i].len);
    CHILD_CHECK(xs[i].source == xs[i].peer);
  }
  for (int i = 0; i < nx; i++) free(bufs[i]);
  free(bufs);
  free(xs);
  return 0;
}

static const size_t kCounts[] = {1, 1024, 262147, 4u << 20};

/* Reducing receives: rank r sends floats to r+1 which reduces them with its own floats. */
static int reduceRing(tdComm *comm) {
  int n = comm->nranks, me = comm->rank, to = (me + 1) % n, from = (me + n - 1) % n;
  for (int c = 0; c < 4; c++) {
    size_t cnt = kCounts[c];
    float *mine = malloc(cnt * 4), *out = malloc(cnt * 4), *snd = malloc(cnt * 4);
    CHILD_CHECK(mine && out && snd);
    for (size_t i = 0; i < cnt; i++) {
      snd[i] = (float)me + (float)(i % 1000) * 0.5f;
      mine[i] = (float)(me * 3) + (float)(i % 777) * 0.25f;
    }
    tdXfer x[2];
    memset(x, 0, sizeof(x));
    x[0] = (tdXfer){.peer = to, .key = {9, 2, (uint32_t)c, 0}, .buf = snd, .len = cnt * 4};
    x[1] = (tdXfer){.peer = from,
                    .key = {9, 2, (uint32_t)c, 0},
                    .buf = out,
                    .len = cnt * 4,
                    .reduce_src = mine,
                    .dtype = tpudistFloat32,
                    .op = tpudistSum};
    if (c % 2) { /* receive posted after arrival */
      CHILD_CHECK(transportPostSend(comm, &x[0]) == tpudistSuccess);
      progressFor(comm, 50);
      CHILD_CHECK(transportPostRecv(comm, &x[1]) == tpudistSuccess);
    } else {
      CHILD_CHECK(transportPostRecv(comm, &x[1]) == tpudistSuccess);
      CHILD_CHECK(transportPostSend(comm, &x[0]) == tpudistSuccess);
    }
    CHILD_CHECK(waitAll(comm, x, 2, 60000) == 0);
    for (size_t i = 0; i < cnt; i++) {
      float want = mine[i] + ((float)from + (float)(i % 1000) * 0.5f);
      if (out[i] != want)
        fprintf(stderr, "rank %d: reduce elem %zu: %g != %g\n", me, i, out[i], want);
      CHILD_CHECK(out[i] == want);
    }
    free(mine);
    free(out);
    free(snd);
  }
  return 0;
}

/* Number of /dev/shm entries of this communicator. */
static int shmLeft(uint64_t hash) {
  char prefix[64];
  int count = 0;
  snprintf(prefix, sizeof(prefix), "tdshm-%016llx", (unsigned long long)hash);
  DIR *d = opendir("/dev/shm");
  if (!d) return 0;
  for (struct dirent *e; (e = readdir(d));)
    if (!strncmp(e->d_name, prefix, strlen(prefix))) count++;
  closedir(d);
  return count;
}

static int bodyExchange(int rank, int n, const tpudistUniqueId *id, void *arg) {
  (void)arg;
  char err[TD_ERRLEN];
  tdComm *comm = childComm(rank, n, id);
  CHILD_CHECK(comm);
  int rc = exchange(comm, 0);
  if (!rc) rc = exchange(comm, 1);
  if (!rc) rc = reduceRing(comm);
  if (rc) return rc;
  CHILD_CHECK(bootstrapBarrier(comm->bootstrap, err) == tpudistSuccess);
  CHILD_CHECK(shmLeft(comm->comm_hash) == 0); /* unlinked once every peer mapped */
  transportFiniAll(comm);
  CHILD_CHECK(bootstrapBarrier(comm->bootstrap, err) == tpudistSuccess);
  CHILD_CHECK(shmLeft(comm->comm_hash) == 0);
  transportTestCommFree(comm);
  return 0;
}

static void testSocket2(void) {
  gTransports = "socket";
  CU_ASSERT_EQUAL(runRanks(2, bodyExchange, NULL, 120), 0);
}
static void testSocket4(void) {
  gTransports = "socket";
  CU_ASSERT_EQUAL(runRanks(4, bodyExchange, NULL, 150), 0);
}
static void testShm2(void) {
  gTransports = "shm";
  gCma = 1;
  CU_ASSERT_EQUAL(runRanks(2, bodyExchange, NULL, 120), 0);
}
static void testShm4(void) {
  gTransports = "shm";
  gCma = 1;
  CU_ASSERT_EQUAL(runRanks(4, bodyExchange, NULL, 150), 0);
}
static void testShmNoCma(void) {
  gTransports = "shm";
  gCma = 0;
  CU_ASSERT_EQUAL(runRanks(2, bodyExchange, NULL, 120), 0);
  gCma = 1;
}

/* Any-source receive (p2p): rank 0 receives one message from each other rank. */
static int bodyAnySource(int rank, int n, const tpudistUniqueId *id, void *arg) {
  (void)arg;
  tdComm *comm = childComm(rank, n, id);
  CHILD_CHECK(comm);
  int seen = 0;
  if (rank == 0) {
    for (int i = 1; i < n; i++) {
      int v = -1;
      tdXfer x = {.peer = -1, .key = {0, TD_P2P_STREAM, 0, 0}, .buf = &v, .len = sizeof(v)};
      CHILD_CHECK(transportPostRecv(comm, &x) == tpudistSuccess);
      CHILD_CHECK(transportWait(comm, &x, 30000) == tpudistSuccess);
      CHILD_CHECK(x.source >= 1 && x.source < n && v == x.source * 10);
      CHILD_CHECK(!(seen & (1 << x.source)));
      seen |= 1 << x.source;
    }
  } else {
    int v = rank * 10;
    tdXfer x = {.peer = 0, .key = {0, TD_P2P_STREAM, 0, 0}, .buf = &v, .len = sizeof(v)};
    CHILD_CHECK(transportPostSend(comm, &x) == tpudistSuccess);
    CHILD_CHECK(transportWait(comm, &x, 30000) == tpudistSuccess);
  }
  char err[TD_ERRLEN];
  CHILD_CHECK(bootstrapBarrier(comm->bootstrap, err) == tpudistSuccess);
  transportTestCommFree(comm);
  return 0;
}

static void testAnySource(void) {
  gTransports = "socket";
  CU_ASSERT_EQUAL(runRanks(4, bodyAnySource, NULL, 60), 0);
  gTransports = "shm";
  CU_ASSERT_EQUAL(runRanks(4, bodyAnySource, NULL, 60), 0);
}

/* Rank 1 leaves after setup (optionally after one message); rank 0's receive must fail with
 * tpudistRemoteError well before its timeout. */
static int bodyDeadPeer(int rank, int n, const tpudistUniqueId *id, void *arg) {
  int warm = arg != NULL;
  char err[TD_ERRLEN];
  tdComm *comm = childComm(rank, n, id);
  CHILD_CHECK(comm);
  int v = 5;
  tdXfer x = {.peer = 1 - rank, .key = {1, 0, 0, 0}, .buf = &v, .len = sizeof(v)};
  if (warm) { /* one message first, so the connection / segment exists */
    if (rank == 0)
      CHILD_CHECK(transportPostRecv(comm, &x) == tpudistSuccess);
    else
      CHILD_CHECK(transportPostSend(comm, &x) == tpudistSuccess);
    CHILD_CHECK(transportWait(comm, &x, 20000) == tpudistSuccess);
  }
  CHILD_CHECK(bootstrapBarrier(comm->bootstrap, err) == tpudistSuccess);
  if (rank == 1) _exit(0); /* dies without cleaning up */
  x.key.seq = 2;
  tpudistResult_t pr = transportPostRecv(comm, &x);
  tpudistResult_t res = pr == tpudistSuccess ? transportWait(comm, &x, 20000) : x.result;
  if (res != tpudistRemoteError) fprintf(stderr, "dead peer: result %d\n", res);
  CHILD_CHECK(x.done && res == tpudistRemoteError);
  transportTestCommFree(comm);
  return 0;
}

static void testDeadPeer(void) {
  const char *tps[] = {"socket", "shm"};
  for (int t = 0; t < 2; t++) {
    gTransports = tps[t];
    CU_ASSERT_EQUAL(runRanks(2, bodyDeadPeer, NULL, 40), 0);
    CU_ASSERT_EQUAL(runRanks(2, bodyDeadPeer, (void *)1, 40), 0);
  }
}

/* Rank "2" is an intruder with a wrong secret claiming rank 1: rejected, real ranks complete. */
static int bodyIntruder(int rank, int n, const tpudistUniqueId *id, void *arg) {
  (void)arg;
  (void)n;
  char err[TD_ERRLEN];
  if (rank == 2) {
    tpudistUniqueId bad = *id;
    bad.internal[16] ^= 0x5a; /* the secret */
    tdBootstrap *bs;
    tpudistResult_t r = bootstrapInit(&bad, 1, 2, 10000, &bs, err);
    CHILD_CHECK(r != tpudistSuccess && strstr(err, "wrong secret"));
    return 0;
  }
  if (rank == 1) usleep(300000); /* let the intruder come first */
  tdComm *comm = childComm(rank, 2, id);
  CHILD_CHECK(comm);
  int v = rank + 40, w = -1;
  tdXfer x[2] = {{.peer = 1 - rank, .key = {3, 0, 0, 0}, .buf = &v, .len = 4},
                 {.peer = 1 - rank, .key = {3, 0, 0, 0}, .buf = &w, .len = 4}};
  CHILD_CHECK(transportPostSend(comm, &x[0]) == tpudistSuccess);
  CHILD_CHECK(transportPostRecv(comm, &x[1]) == tpudistSuccess);
  CHILD_CHECK(waitAll(comm, x, 2, 20000) == 0 && w == 41 - rank);
  transportTestCommFree(comm);
  return 0;
}

static void testWrongSecret(void) {
  gTransports = "socket";
  CU_ASSERT_EQUAL(runRanks(3, bodyIntruder, NULL, 60), 0);
}

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
  CHILD_CHECK(bootstrapGetUniqueId(&mine, (const char *)arg, err) == tpudistSuccess);
  CHILD_CHECK(bootstrapInit(&mine, rank, n, 20000, &bs, err) == tpudistSuccess);
  CHILD_CHECK(bootstrapBarrier(bs, err) == tpudistSuccess);
  bootstrapFree(bs);
  return 0;
}

static void testStoreAndCommId(void) {
  char dir[] = "/tmp/td_store_XXXXXX";
  CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
  CU_ASSERT_EQUAL(runRanks(3, bodyStore, dir, 60), 0);
  char cmd[64];
  snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
  CU_ASSERT_EQUAL(system(cmd), 0);
  /* a free port: bind port 0 on loopback, note it, close */
  tdNetAddr a, bound;
  int fd;
  char err[TD_ERRLEN], hp[64];
  CU_ASSERT_EQUAL_FATAL(netParseHostPort("127.0.0.1:1", &a, err), tpudistSuccess);
  a.port = 0;
  CU_ASSERT_EQUAL_FATAL(netListen(&a, &fd, &bound, err), tpudistSuccess);
  close(fd);
  snprintf(hp, sizeof(hp), "127.0.0.1:%u", bound.port);
  CU_ASSERT_EQUAL(runRanks(3, bodyCommId, hp, 60), 0);
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

/* A ring larger than /dev/shm's free space: a clear error, nothing left behind. */
static int bodyShmFull(int rank, int n, const tpudistUniqueId *id, void *arg) {
  (void)arg;
  tdComm *comm = childComm(rank, n, id);
  CHILD_CHECK(comm);
  char err[TD_ERRLEN];
  if (rank == 0) {
    int v = 1;
    tdXfer x = {.peer = 1, .key = {1, 0, 0, 0}, .buf = &v, .len = 4};
    CHILD_CHECK(transportPostSend(comm, &x) == tpudistNoMemory);
    CHILD_CHECK(x.done && x.result == tpudistNoMemory);
    if (!strstr(comm->last_error, "bytes free")) fprintf(stderr, "%s\n", comm->last_error);
    CHILD_CHECK(strstr(comm->last_error, "/dev/shm has") && strstr(comm->last_error, "bytes free"));
  }
  CHILD_CHECK(bootstrapBarrier(comm->bootstrap, err) == tpudistSuccess);
  CHILD_CHECK(shmLeft(comm->comm_hash) == 0);
  transportTestCommFree(comm);
  return 0;
}

static void testShmFull(void) {
  gTransports = "shm";
  gShmBytes = 1l << 46; /* 64 TiB */
  CU_ASSERT_EQUAL(runRanks(2, bodyShmFull, NULL, 30), 0);
  gShmBytes = 0;
}

/* Loopback interface chosen by name; a name that matches nothing is an error at setup. */
static int bodyIfname(int rank, int n, const tpudistUniqueId *id, void *arg) {
  gIfname = arg;
  tdComm *comm = childComm(rank, n, id);
  if (!strcmp(gIfname, "^nosuchif0")) {
    CHILD_CHECK(comm == NULL);
    return 0;
  }
  CHILD_CHECK(comm);
  tdNetAddr a;
  memcpy(&a, comm->peers[rank].sock_addr, sizeof(a));
  CHILD_CHECK(a.family == AF_INET ? a.addr[0] == 127 : a.addr[15] == 1);
  int rc = exchange(comm, 1);
  if (rc) return rc;
  char err[TD_ERRLEN];
  CHILD_CHECK(bootstrapBarrier(comm->bootstrap, err) == tpudistSuccess);
  transportTestCommFree(comm);
  return 0;
}

static void testIfname(void) {
  gTransports = "socket";
  CU_ASSERT_EQUAL(runRanks(2, bodyIfname, "lo", 60), 0);
  CU_ASSERT_EQUAL(runRanks(1, bodyIfname, "^nosuchif0", 60), 0);
}

static void testHostHashAndSetup(void) {
  CU_ASSERT_EQUAL(bootstrapHostHash(NULL), bootstrapHostHash(NULL));
  CU_ASSERT_NOT_EQUAL(bootstrapHostHash("a"), bootstrapHostHash("b"));
  CU_ASSERT_NOT_EQUAL(bootstrapHostHash(NULL), bootstrapHostHash("a"));
  tdComm comm;
  memset(&comm, 0, sizeof(comm));
  comm.nranks = 2;
  tdConfig cfg = *configGet();
  char err[TD_ERRLEN] = "";
  comm.cfg = &cfg;
  cfg.transports = "socket,bogus";
  CU_ASSERT_EQUAL(transportSetup(&comm, err), tpudistInvalidArgument);
  CU_ASSERT_PTR_NOT_NULL(strstr(err, "bogus"));
  cfg.transports = "socket,shm";
  CU_ASSERT_EQUAL_FATAL(transportSetup(&comm, err), tpudistSuccess);
  CU_ASSERT_EQUAL(comm.ntransports, 3);
  CU_ASSERT_PTR_EQUAL(comm.transports[0], &tdTransportSelf);
  CU_ASSERT_PTR_EQUAL(comm.transports[1], &tdTransportSocket);
  CU_ASSERT_PTR_EQUAL(comm.transports[2], &tdTransportShm);
  transportFiniAll(&comm);
}

int main(void) {
  CU_TestInfo tests[] = {
      {"host hash and transport list", testHostHashAndSetup},
      {"bootstrap allgather/barrier/split", testBootstrap},
      {"wrong secret rejected", testWrongSecret},
      {"socket 2 ranks", testSocket2},
      {"socket 4 ranks", testSocket4},
      {"shm 2 ranks", testShm2},
      {"shm 4 ranks", testShm4},
      {"shm 2 ranks without CMA", testShmNoCma},
      {"any-source receives", testAnySource},
      {"dead peer is an error", testDeadPeer},
      {"version mismatch and duplicate rank", testVersionAndDuplicate},
      {"store and TPU_DIST_COMM_ID rendezvous", testStoreAndCommId},
      {"bootstrapAbort unblocks", testAbort},
      {"shm: /dev/shm too small", testShmFull},
      {"socket interface choice", testIfname},
      CU_TEST_INFO_NULL,
  };
  return tdCUnitMain("unit-transport", tests);
}
