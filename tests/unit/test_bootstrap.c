/*
 * test_bootstrap.c - the bootstrap between forked processes: allgather, barrier, two splits whose
 * children outlive their parent, a version mismatch and a duplicate rank reported clearly to
 * everyone, rendezvous through an external store and through TPU_DIST_COMM_ID (the same id twice
 * gives two distinct communicator hashes), bootstrapAbort from another thread, host identity.
 * Authentication: a hello and proof recorded from a real rank and replayed, a reflected challenge,
 * a wrong secret and a fake root are each refused while the real ranks complete; the
 * TPU_DIST_COMM_ID secret (file permissions, both variables set, the warning without a secret).
 */
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../cu_main.h"
#include "../file_store.h"
#include "boot_priv.h"
#include "fork_ranks.h"
#include "net.h"
#include "rt_config.h"

/* Bootstrap alone: allgather, barrier, split into odd/even halves and allgather there. */
static int bodyBootstrap(int rank, int n, const tpudistUniqueId *id, void *arg) {
  (void)arg;
  char err[TD_ERRLEN];
  tdBootstrap *bs, *child, *child2;
  CHILD_CHECK(bootstrapInit(id, rank, n, 20000, NULL, &bs, err) == tpudistSuccess);
  int vals[8] = {0};
  vals[rank] = rank * 100 + 7;
  CHILD_CHECK(bootstrapAllGather(bs, vals, sizeof(int), err) == tpudistSuccess);
  for (int r = 0; r < n; r++) CHILD_CHECK(vals[r] == r * 100 + 7);
  CHILD_CHECK(bootstrapBarrier(bs, err) == tpudistSuccess);
  /* a broadcast larger than the sockets hold: rank 0 feeds every rank at once; rank 1 reads late */
  size_t big = 4u << 20;
  unsigned char *b = malloc(big);
  CHILD_CHECK(b);
  for (size_t i = 0; i < big; i++) b[i] = rank == 0 ? (unsigned char)(i * 31 + 7) : 0;
  if (rank == 1) usleep(200000);
  CHILD_CHECK(bootstrapBroadcast(bs, b, big, err) == tpudistSuccess);
  for (size_t i = 0; i < big; i++) CHILD_CHECK(b[i] == (unsigned char)(i * 31 + 7));
  free(b);
  /* two splits in a row: members in reverse rank order within the parity class */
  int members[8], m = 0, newrank = -1;
  for (int r = n - 1; r >= 0; r--)
    if (r % 2 == rank % 2) {
      if (r == rank) newrank = m;
      members[m++] = r;
    }
  CHILD_CHECK(bootstrapSplit(bs, members, m, newrank, 1000 + rank % 2, NULL, &child, err) ==
              tpudistSuccess);
  CHILD_CHECK(bootstrapSplit(bs, members, m, newrank, 2000 + rank % 2, NULL, &child2, err) ==
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

/* A broadcast whose length differs between rank 0 and the others is an error naming both. */
static int bodyBroadcastMismatch(int rank, int n, const tpudistUniqueId *id, void *arg) {
  (void)arg;
  char err[TD_ERRLEN] = "";
  tdBootstrap *bs;
  uint64_t v[2] = {1, 2};
  CHILD_CHECK(bootstrapInit(id, rank, n, 20000, NULL, &bs, err) == tpudistSuccess);
  tpudistResult_t r = bootstrapBroadcast(bs, v, rank == 0 ? 8 : 16, err);
  if (rank == 0) CHILD_CHECK(r == tpudistSuccess);
  if (rank != 0) CHILD_CHECK(r == tpudistInvalidUsage && strstr(err, "sent 8 bytes, expected 16"));
  bootstrapFree(bs);
  return 0;
}

static void testBootstrap(void) {
  CU_ASSERT_EQUAL(runRanks(4, bodyBootstrap, NULL, 60), 0);
  CU_ASSERT_EQUAL(runRanks(1, bodyBootstrap, NULL, 60), 0);
  CU_ASSERT_EQUAL(runRanks(3, bodyBroadcastMismatch, NULL, 60), 0);
}

/* Version mismatch: rank 1 presents another version; both ranks fail with a message naming both. */
static int bodyVersion(int rank, int n, const tpudistUniqueId *id, void *arg) {
  (void)arg;
  char err[TD_ERRLEN] = "";
  tdBootstrap *bs;
  if (rank == 1) bootstrapTestSetVersion(TPUDIST_VERSION_CODE + 1);
  tpudistResult_t r = bootstrapInit(id, rank, n, 10000, NULL, &bs, err);
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
  tpudistResult_t r = bootstrapInit(id, rank == 0 ? 0 : 1, 3, 10000, NULL, &bs, err);
  if (rank == 0)
    CHILD_CHECK(r == tpudistInvalidUsage && strstr(err, "two processes presented rank 1"));
  if (rank != 0) CHILD_CHECK(r != tpudistSuccess); /* rejected, or told the rendezvous failed */
  return 0;
}

static void testVersionAndDuplicate(void) {
  CU_ASSERT_EQUAL(runRanks(2, bodyVersion, NULL, 30), 0);
  CU_ASSERT_EQUAL(runRanks(3, bodyDuplicate, NULL, 30), 0);
}

static int bodyStore(int rank, int n, const tpudistUniqueId *id, void *arg) {
  (void)id;
  char err[TD_ERRLEN];
  tpudistStore_t store = {arg, fileSet, fileGet};
  tdBootstrap *bs;
  CHILD_CHECK(bootstrapInitStore(&store, "pg0", rank, n, 20000, NULL, &bs, err) == tpudistSuccess);
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
    CHILD_CHECK(bootstrapInit(&mine, rank, n, 20000, NULL, &bs, err) == tpudistSuccess);
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
  CHILD_CHECK(bootstrapInit(id, rank, n, 20000, NULL, &bs, err) == tpudistSuccess);
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
  /* promptness contract: the abort releases the rendezvous at once; checked with a margin of
   * seconds that a loaded 2-core machine keeps, far below the bootstrap's timeout */
  CHILD_CHECK(t1.tv_sec - t0.tv_sec < 2);
  bootstrapFree(bs);
  return 0;
}

static void testAbort(void) {
  CU_ASSERT_EQUAL(runRanks(2, bodyAbort, NULL, 30), 0);
}

/* ---- authentication ---------------------------------------------------------------------- */

typedef struct {
  tpudistUniqueId id; /* the job's id with the root address of the attacker's listener */
  tpudistResult_t res;
  char err[TD_ERRLEN];
} tdDecoy;

/* A real rank (it knows the secret) that joins the attacker's fake root. */
static void *decoyJoin(void *arg) {
  tdDecoy *d = arg;
  tdBootstrap *bs = NULL;
  d->res = bootstrapInit(&d->id, 1, 2, 3000, NULL, &bs, d->err);
  if (d->res == tpudistSuccess) bootstrapFree(bs);
  return NULL;
}

static int rawConnect(const tdNetAddr *a) {
  char err[TD_ERRLEN];
  int fd = -1;
  if (netConnectRetry(a, netNowMs() + 5000, NULL, &fd, err) != tpudistSuccess) return -1;
  return fd;
}

/* Sends hello, reads the challenge, sends proof; returns the reply's status (-1: no reply). */
static int tryHandshake(const tdNetAddr *root, const tdHello *h, const uint8_t *proof_or_null,
                        char *msg) {
  char err[TD_ERRLEN];
  tdChallenge ch;
  tdReply rep;
  int fd = rawConnect(root), st = -1;
  int64_t dl = netNowMs() + 5000;
  if (fd < 0) return -1;
  if (netSendAll(fd, h, sizeof(*h), dl, NULL, "root", err) == tpudistSuccess &&
      netRecvAll(fd, &ch, sizeof(ch), dl, NULL, "root", err) == tpudistSuccess) {
    /* no proof given: reflect the root's own challenge back as the proof */
    const uint8_t *p = proof_or_null ? proof_or_null : ch.nonce;
    if (netSendAll(fd, p, TD_MAC_BYTES, dl, NULL, "root", err) == tpudistSuccess &&
        netRecvAll(fd, &rep, sizeof(rep), dl, NULL, "root", err) == tpudistSuccess) {
      st = rep.status;
      snprintf(msg, TD_ERRLEN, "%.200s", rep.msg);
    }
  }
  close(fd);
  return st;
}

/* The attacker: records a real rank's hello and proof at a fake root (answering with a forged
 * success, which the rank must refuse), then replays them to the real root, reflects the real
 * root's challenge, and joins with a wrong secret; all refused. */
static int bodyAttacker(const tpudistUniqueId *id) {
  char err[TD_ERRLEN], msg[TD_ERRLEN];
  tdIdBody b;
  tdDecoy d;
  tdNetAddr lo, bound;
  int lfd, fd;
  memcpy(&b, id->internal, sizeof(b));
  CHILD_CHECK(netParseHostPort("127.0.0.1:1", &lo, err) == tpudistSuccess);
  lo.port = 0;
  CHILD_CHECK(netListen(&lo, &lfd, &bound, err) == tpudistSuccess);
  tdIdBody fake = b;
  fake.root = bound;
  fake.flags = TD_ID_FIXED; /* the decoy is not root: it only connects */
  memset(&d, 0, sizeof(d));
  memcpy(d.id.internal, &fake, sizeof(fake));
  pthread_t t;
  pthread_create(&t, NULL, decoyJoin, &d);
  struct pollfd p = {lfd, POLLIN, 0};
  CHILD_CHECK(poll(&p, 1, 5000) == 1 && netAccept(lfd, &fd, err) == tpudistSuccess && fd >= 0);
  tdHello h;
  uint8_t proof[TD_MAC_BYTES];
  tdChallenge ch = {TD_BOOT_MAGIC, {7, 7, 7}};
  int64_t dl = netNowMs() + 5000;
  CHILD_CHECK(netRecvAll(fd, &h, sizeof(h), dl, NULL, "decoy", err) == tpudistSuccess);
  CHILD_CHECK(netSendAll(fd, &ch, sizeof(ch), dl, NULL, "decoy", err) == tpudistSuccess);
  CHILD_CHECK(netRecvAll(fd, proof, sizeof(proof), dl, NULL, "decoy", err) == tpudistSuccess);
  tdReply forged;
  memset(&forged, 0, sizeof(forged));
  forged.magic = TD_BOOT_MAGIC;
  forged.nranks = 2; /* success, without the root's proof */
  CHILD_CHECK(netSendAll(fd, &forged, sizeof(forged), dl, NULL, "decoy", err) == tpudistSuccess);
  pthread_join(t, NULL);
  close(fd);
  close(lfd);
  if (!strstr(d.err, "did not prove")) fprintf(stderr, "decoy: %s\n", d.err);
  CHILD_CHECK(d.res != tpudistSuccess && strstr(d.err, "did not prove it knows the job secret"));
  /* replay the recorded hello and proof to the real root: a fresh challenge refuses them */
  CHILD_CHECK(tryHandshake(&b.root, &h, proof, msg) == tpudistInvalidUsage);
  CHILD_CHECK(strstr(msg, "wrong secret") != NULL);
  /* reflection: the root's own challenge sent back as the proof */
  CHILD_CHECK(tryHandshake(&b.root, &h, NULL, msg) == tpudistInvalidUsage);
  /* a wrong secret */
  tpudistUniqueId bad = *id;
  tdBootstrap *bs;
  bad.internal[20] ^= 0x5a;
  CHILD_CHECK(bootstrapInit(&bad, 1, 2, 5000, NULL, &bs, err) == tpudistInvalidUsage);
  CHILD_CHECK(strstr(err, "wrong secret") != NULL);
  return 0;
}

static int bodyAuth(int rank, int n, const tpudistUniqueId *id, void *arg) {
  (void)arg;
  (void)n;
  char err[TD_ERRLEN];
  tdBootstrap *bs;
  if (rank == 2) return bodyAttacker(id);
  if (rank == 1) usleep(1500000); /* the attacks come first */
  CHILD_CHECK(bootstrapInit(id, rank, 2, 20000, NULL, &bs, err) == tpudistSuccess);
  int v[2] = {0};
  v[rank] = 70 + rank;
  CHILD_CHECK(bootstrapAllGather(bs, v, sizeof(int), err) == tpudistSuccess);
  CHILD_CHECK(v[0] == 70 && v[1] == 71);
  bootstrapFree(bs);
  return 0;
}

static void testAuth(void) {
  CU_ASSERT_EQUAL(runRanks(3, bodyAuth, NULL, 60), 0);
}

/* TPU_DIST_COMM_ID keys (each case in its own process: the secret file is read once). */
static int bodySecret(int rank, int n, const tpudistUniqueId *id, void *arg) {
  (void)rank;
  (void)n;
  (void)id;
  char err[TD_ERRLEN] = "", path[] = "/tmp/td_secret_XXXXXX";
  tdConfig *cfg = (tdConfig *)configGet(); /* tests only: set the variables after the fact */
  tpudistUniqueId a, b;
  int which = (int)(intptr_t)arg, fd = mkstemp(path);
  CHILD_CHECK(fd >= 0 && write(fd, "s3cret value\n", 13) == 13);
  close(fd);
  cfg->comm_secret = NULL;
  cfg->comm_secret_file = path;
  if (which == 0) { /* 0600: accepted, and another key than without a secret */
    CHILD_CHECK(bootstrapGetUniqueId(&a, "127.0.0.1:29999", err) == tpudistSuccess);
    cfg->comm_secret_file = NULL;
    CHILD_CHECK(bootstrapGetUniqueId(&b, "127.0.0.1:29999", err) == tpudistSuccess);
    CHILD_CHECK(memcmp(a.internal + 16, b.internal + 16, TD_KEY_BYTES) != 0);
    cfg->comm_secret = "s3cret value"; /* the same secret from the variable: the same key */
    CHILD_CHECK(bootstrapGetUniqueId(&b, "127.0.0.1:29999", err) == tpudistSuccess);
    CHILD_CHECK(memcmp(a.internal + 16, b.internal + 16, TD_KEY_BYTES) == 0);
    CHILD_CHECK(bootstrapGetUniqueId(&b, "127.0.0.1:29998", err) == tpudistSuccess);
    CHILD_CHECK(memcmp(a.internal + 16, b.internal + 16, TD_KEY_BYTES) != 0);
  } else if (which == 1) { /* readable by others: refused with the reason */
    chmod(path, 0644);
    CHILD_CHECK(bootstrapGetUniqueId(&a, "127.0.0.1:29999", err) == tpudistInvalidArgument);
    CHILD_CHECK(strstr(err, "group or others") && strstr(err, "chmod 600"));
  } else if (which == 2) { /* both set */
    cfg->comm_secret = "x";
    CHILD_CHECK(bootstrapGetUniqueId(&a, "127.0.0.1:29999", err) == tpudistInvalidArgument);
    CHILD_CHECK(strstr(err, "not both") != NULL);
  } else { /* no secret on a non-loopback address: one warning, however many ids */
    char log[] = "/tmp/td_warn_XXXXXX", buf[4096] = "";
    int lf = mkstemp(log), saved = dup(2);
    cfg->comm_secret_file = NULL;
    dup2(lf, 2);
    for (int i = 0; i < 3; i++)
      CHILD_CHECK(bootstrapGetUniqueId(&a, "10.254.253.252:29500", err) == tpudistSuccess);
    CHILD_CHECK(bootstrapGetUniqueId(&a, "127.0.0.1:29500", err) == tpudistSuccess);
    fflush(stderr);
    dup2(saved, 2);
    CHILD_CHECK(pread(lf, buf, sizeof(buf) - 1, 0) > 0);
    close(lf);
    unlink(log);
    char *w = strstr(buf, "anyone who can reach 10.254.253.252:29500 can join");
    CHILD_CHECK(w && !strstr(w + 1, "anyone who can reach"));
  }
  unlink(path);
  return 0;
}

static void testCommIdSecret(void) {
  for (intptr_t c = 0; c < 4; c++) CU_ASSERT_EQUAL(runRanks(1, bodySecret, (void *)c, 30), 0);
}

/* A connect that is refused until its deadline ends at the deadline, with the real last error,
 * also when the process is starved: the parent stops the child for 30 ms of every 40 (each of
 * its naps then lasts 3-4 times what it asked for). The naps between attempts used to be counted
 * instead of timed, so such a wait ran 2.5-4 times past a 1 s deadline. */
/* Milliseconds this thread has waited for a CPU while runnable (0 where the kernel does not say):
 * a stop by a signal is not counted, the machine's own load is. */
static int64_t runQueueMs(void) {
  unsigned long long run = 0, wait = 0;
  FILE *f = fopen("/proc/thread-self/schedstat", "r");
  if (f) {
    if (fscanf(f, "%llu %llu", &run, &wait) != 2) wait = 0;
    fclose(f);
  }
  return (int64_t)(wait / 1000000ull);
}

static int starvedConnect(const tdNetAddr *refusing) {
  char err[TD_ERRLEN] = "";
  int fd = -1;
  int64_t t0 = netNowMs(), q0 = runQueueMs();
  tpudistResult_t r = netConnectRetry(refusing, t0 + 1000, NULL, &fd, err);
  int64_t took = netNowMs() - t0, queued = runQueueMs() - q0;
  fprintf(stderr, "starved connect: %lld ms (%lld waiting for a CPU): %s\n", (long long)took,
          (long long)queued, err);
  CHILD_CHECK(r == tpudistTimeout && fd < 0);
  CHILD_CHECK(strstr(err, "Connection refused"));
  /* promptness contract: not before the deadline, and past it by at most one stop and one poll
   * slice, plus (the margin) what the machine's own load kept it from running */
  CHILD_CHECK(took >= 1000 && took < 1250 + queued);
  return 0;
}

static void testConnectDeadline(void) {
  tdNetAddr any = {0}, a;
  int lfd = -1;
  char err[TD_ERRLEN];
  any.family = AF_INET;
  any.addr[0] = 127, any.addr[3] = 1;
  /* a port that refuses: bound and listened on, then closed */
  CU_ASSERT_FATAL(netListen(&any, &lfd, &a, err) == tpudistSuccess);
  close(lfd);
  pid_t pid = fork();
  if (pid == 0) _exit(starvedConnect(&a));
  CU_ASSERT_FATAL(pid > 0);
  int st = 0;
  struct timespec stop = {0, 30 * 1000000L}, run = {0, 10 * 1000000L};
  while (waitpid(pid, &st, WNOHANG) == 0) {
    kill(pid, SIGSTOP);
    nanosleep(&stop, NULL);
    kill(pid, SIGCONT);
    nanosleep(&run, NULL);
  }
  CU_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

static void testHostHash(void) {
  CU_ASSERT_EQUAL(bootstrapHostHash(NULL), bootstrapHostHash(NULL));
  CU_ASSERT_NOT_EQUAL(bootstrapHostHash("a"), bootstrapHostHash("b"));
  CU_ASSERT_NOT_EQUAL(bootstrapHostHash(NULL), bootstrapHostHash("a"));
}

int main(void) {
  CU_TestInfo tests[] = {
      {"host hash", testHostHash},
      {"allgather/barrier/broadcast/split", testBootstrap},
      {"version mismatch and duplicate rank", testVersionAndDuplicate},
      {"store and TPU_DIST_COMM_ID rendezvous", testStoreAndCommId},
      {"bootstrapAbort unblocks", testAbort},
      {"a refused connect ends at its deadline, also when starved", testConnectDeadline},
      {"replayed, reflected, wrong-secret and fake-root handshakes refused", testAuth},
      {"TPU_DIST_COMM_ID secret: file, permissions, warning", testCommIdSecret},
      CU_TEST_INFO_NULL,
  };
  return tdCUnitMain("unit-bootstrap", tests);
}
