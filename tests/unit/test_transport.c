/*
 * test_transport.c - the transports between real processes: forked ranks (2 or 4) rendezvous
 * through a unique id created before the fork, build a minimal communicator (transportTestComm) and
 * exchange tagged messages of 0, 1, 4 KiB, 1 MiB+3 and 16 MiB bytes over self + shm (with and
 * without single-copy reads) and self + socket, with receives posted before and after arrival in
 * reverse key order, reducing receives (float sum), and any-source receives; every byte is
 * checked. Also: a wrong secret is rejected while the real ranks complete, no /dev/shm segment is
 * left, a full /dev/shm is a clear error, a peer that exits fails the survivor's transfer with
 * tpudistRemoteError instead of a hang, two "hosts" (TPU_DIST_HOSTID) mix shm and socket,
 * simultaneous socket connects, and sends that complete before the receive is posted; a
 * small-message slot payload written just before its writer released the communicator is still
 * read.
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
#include "kernels.h"
#include "net.h"
#include "registry.h"
#include "rt_config.h"
#include "shm_slots.h"
#include "xfer_rig.h"

static const char *gTransports; /* TPU_DIST_TRANSPORTS of the ranks */
static int gCma = 1;
static long gShmBytes;      /* TPU_DIST_SHM_BUF_BYTES and TPU_DIST_SHM_RANK_BYTES (0: default) */
static long gRankBytes;     /* TPU_DIST_SHM_RANK_BYTES alone (0: default) */
static const char *gIfname; /* TPU_DIST_SOCKET_IFNAME */
static const char *gHostId; /* TPU_DIST_HOSTID */
static int gPullMs = 2;     /* TPU_DIST_SHM_CMA_PULL_MS */
static tdConfig gCfg;

/* Bootstrap + communicator for a child, with the test's transport choice. */
static tdNet *childComm(int rank, int n, const tpudistUniqueId *id) {
  gCfg = *configGet();
  gCfg.transports = gTransports;
  gCfg.shm_cma = gCma;
  if (gShmBytes) gCfg.shm_buf_bytes = gCfg.shm_rank_bytes = gShmBytes;
  if (gRankBytes) gCfg.shm_rank_bytes = gRankBytes;
  if (gIfname) gCfg.socket_ifname = gIfname;
  if (gHostId) gCfg.hostid = gHostId;
  gCfg.shm_cma_pull_ms = gPullMs;
  return forkNet(rank, n, id, &gCfg);
}

static const size_t kSizes[] = {0, 1, 4096, (1u << 20) + 3, 16u << 20};
static const size_t kCounts[] = {1, 1024, 262147, 4u << 20};

/* Every size to every rank (16 MiB only to rank+1); late: receives posted after arrival. */
static int exchange(tdNet *comm, int late) {
  return rigExchange(comm, kSizes, TD_ARRAY_SIZE(kSizes), 0, late);
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
  tdNet *comm = childComm(rank, n, id);
  CHILD_CHECK(comm);
  int rc = exchange(comm, 0);
  if (!rc) rc = exchange(comm, 1);
  if (!rc) rc = rigReduceRing(comm, kCounts, TD_ARRAY_SIZE(kCounts), TD_ARRAY_SIZE(kCounts));
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
  gPullMs = 100000; /* late receives then read the sender's memory directly */
  CU_ASSERT_EQUAL(runRanks(2, bodyExchange, NULL, 120), 0);
  gPullMs = 2;
}
static void testShm4(void) {
  gTransports = "shm";
  gCma = 1;
  CU_ASSERT_EQUAL(runRanks(4, bodyExchange, NULL, 150), 0);
}
/* Sizes of this process's mappings of comm's segments (deleted /dev/shm files) into sizes[];
 * returns their count. */
static int shmMapped(uint64_t hash, size_t *sizes, int max) {
  char line[512], name[64];
  int n = 0;
  snprintf(name, sizeof(name), "/dev/shm/tdshm-%016llx-", (unsigned long long)hash);
  FILE *f = fopen("/proc/self/maps", "r");
  if (!f) return -1;
  while (fgets(line, sizeof(line), f) && n < max) {
    unsigned long lo, hi;
    if (strstr(line, name) && sscanf(line, "%lx-%lx", &lo, &hi) == 2) sizes[n++] = hi - lo;
  }
  fclose(f);
  return n;
}

/* Rings sized by the ranks of the host: TPU_DIST_SHM_RANK_BYTES 3 x 128 KiB among 4 ranks (3
 * others) gives 128 KiB rings, below TPU_DIST_SHM_BUF_BYTES (1 MiB); every byte still arrives,
 * 16 MiB messages through the ring included (no single-copy). */
static int bodyRingSize(int rank, int n, const tpudistUniqueId *id, void *arg) {
  (void)arg;
  char err[TD_ERRLEN];
  size_t sizes[8];
  tdNet *comm = childComm(rank, n, id);
  CHILD_CHECK(comm);
  int rc = exchange(comm, 0);
  if (rc) return rc;
  CHILD_CHECK(shmMapped(comm->comm_hash, sizes, 8) == n - 1); /* a segment per peer talked to */
  for (int i = 0; i < n - 1; i++) CHILD_CHECK(sizes[i] == 12288 + 2 * 4096 + 2 * (128u << 10));
  CHILD_CHECK(bootstrapBarrier(comm->bootstrap, err) == tpudistSuccess);
  transportTestCommFree(comm);
  return 0;
}

static void testShmRingSize(void) {
  gTransports = "shm";
  gCma = 0;
  gRankBytes = 3 * (128l << 10);
  CU_ASSERT_EQUAL(runRanks(4, bodyRingSize, NULL, 150), 0);
  gRankBytes = 0;
  gCma = 1;
}

static void testShmNoCma(void) {
  gTransports = "shm";
  gCma = 0;
  CU_ASSERT_EQUAL(runRanks(2, bodyExchange, NULL, 120), 0);
  gCma = 1;
}

/* Any-source receive (p2p): rank 0 receives one message from each other rank. */
static int bodyAnyInner(tdNet *comm) {
  int rank = comm->rank, n = comm->nranks, seen = 0;
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
  return 0;
}

static int bodyAnySource(int rank, int n, const tpudistUniqueId *id, void *arg) {
  (void)arg;
  tdNet *comm = childComm(rank, n, id);
  CHILD_CHECK(comm);
  int rc = bodyAnyInner(comm);
  if (rc) return rc;
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
  int mode = (int)(intptr_t)arg; /* 0: exits cold, 1: exits after a message, 2: releases (alive) */
  int warm = mode != 0;
  char err[TD_ERRLEN];
  tdNet *comm = childComm(rank, n, id);
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
  if (rank == 1 && mode == 2) { /* destroys its side and stays alive */
    transportTestCommFree(comm);
    sleep(2); /* long enough for the peer to see the release rather than an exit */
    return 0;
  }
  if (rank == 1) _exit(0); /* dies without cleaning up */
  x.key.seq = 2;
  tpudistResult_t pr = transportPostRecv(comm, &x);
  tpudistResult_t res = pr == tpudistSuccess ? transportWait(comm, &x, 20000) : x.result;
  if (res != tpudistRemoteError) fprintf(stderr, "dead peer: result %d\n", res);
  CHILD_CHECK(x.done && res == tpudistRemoteError);
  transportTestCommFree(comm);
  return 0;
}

/* Until rank p's payload of seq is there (progress between looks), or 20 s. */
static const void *slotWait(tdNet *comm, int p, uint64_t seq, size_t len) {
  const void *d = NULL;
  int moved;
  for (int i = 0; i < 2000000 && !d; i++) {
    if (shmSlotPeek(comm, p, seq, len, &d) != tpudistSuccess) return NULL;
    if (!d && transportProgressAll(comm, &moved) != tpudistSuccess) return NULL;
    if (!d) usleep(10);
  }
  return d;
}

/* Writes rank p's payload v of seq (progress while the segment opens or the slot is busy); 1 once
 * written, 0 on an error or after 20 s. */
static int slotPut(tdNet *comm, int p, uint64_t seq, uint32_t v) {
  int written = 0, moved;
  for (int i = 0; i < 2000000 && !written; i++) {
    if (shmSlotWrite(comm, p, seq, &v, sizeof(v), &written) != tpudistSuccess) return 0;
    if (!written && transportProgressAll(comm, &moved) != tpudistSuccess) return 0;
  }
  return written;
}

/* Rank 1 writes a slot payload, then releases its communicator (alive). Rank 0 had looked for
 * that payload before it came and was then held off the CPU until after the release: its next
 * progress pass must still read the payload, not fail rank 1 as released. */
static int bodySlotBeforeRelease(int rank, int n, const tpudistUniqueId *id, void *arg) {
  (void)arg;
  char err[TD_ERRLEN];
  tdNet *comm = childComm(rank, n, id);
  CHILD_CHECK(comm);
  int peer = 1 - rank, moved;
  uint32_t v = 100u + (uint32_t)rank;
  CHILD_CHECK(slotPut(comm, peer, 1, v)); /* seq 1 both ways: the segment is ready */
  const void *d = slotWait(comm, peer, 1, sizeof(v));
  CHILD_CHECK(d && *(const uint32_t *)d == 100u + (uint32_t)peer);
  shmSlotAck(comm, peer, 1);
  if (rank == 0) { /* looks for seq 2 before rank 1 writes it */
    CHILD_CHECK(shmSlotPeek(comm, peer, 2, sizeof(v), &d) == tpudistSuccess && !d);
  }
  CHILD_CHECK(bootstrapBarrier(comm->bootstrap, err) == tpudistSuccess);
  char mark[96]; /* rank 1 says through a file that it has released (the id names it) */
  uint64_t tag;
  memcpy(&tag, id->internal, sizeof(tag));
  snprintf(mark, sizeof(mark), "/tmp/td-test-slot-%016llx", (unsigned long long)tag);
  if (rank == 1) {
    CHILD_CHECK(slotPut(comm, 0, 2, 777));
    transportTestCommFree(comm); /* closes its side of the pair */
    FILE *f = fopen(mark, "w");
    CHILD_CHECK(f && fclose(f) == 0);
    sleep(2); /* alive: rank 0 sees the release, not an exit */
    return 0;
  }
  for (int i = 0; i < 2000 && access(mark, F_OK) != 0; i++) usleep(10000);
  CHILD_CHECK(access(mark, F_OK) == 0);
  unlink(mark);
  usleep(150000); /* past the liveness check's 100 ms period */
  CHILD_CHECK(transportProgressAll(comm, &moved) == tpudistSuccess);
  CHILD_CHECK(shmSlotPeek(comm, 1, 2, sizeof(v), &d) == tpudistSuccess);
  CHILD_CHECK(d && *(const uint32_t *)d == 777u);
  transportTestCommFree(comm);
  return 0;
}

static void testSlotBeforeRelease(void) {
  gTransports = "shm";
  CU_ASSERT_EQUAL(runRanks(2, bodySlotBeforeRelease, NULL, 40), 0);
}

static void testDeadPeer(void) {
  const char *tps[] = {"socket", "shm"};
  for (int t = 0; t < 2; t++) {
    gTransports = tps[t];
    CU_ASSERT_EQUAL(runRanks(2, bodyDeadPeer, NULL, 40), 0);
    CU_ASSERT_EQUAL(runRanks(2, bodyDeadPeer, (void *)1, 40), 0);
    CU_ASSERT_EQUAL(runRanks(2, bodyDeadPeer, (void *)2, 40), 0);
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
    tpudistResult_t r = bootstrapInit(&bad, 1, 2, 10000, NULL, &bs, err);
    CHILD_CHECK(r != tpudistSuccess && strstr(err, "wrong secret"));
    return 0;
  }
  if (rank == 1) usleep(300000); /* let the intruder come first */
  tdNet *comm = childComm(rank, 2, id);
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

/* A ring larger than /dev/shm's free space: a clear error, nothing left behind. */
static int bodyShmFull(int rank, int n, const tpudistUniqueId *id, void *arg) {
  (void)arg;
  tdNet *comm = childComm(rank, n, id);
  CHILD_CHECK(comm);
  char err[TD_ERRLEN];
  if (rank == 0) {
    int v = 1;
    tdXfer x = {.peer = 1, .key = {1, 0, 0, 0}, .buf = &v, .len = 4};
    CHILD_CHECK(transportPostSend(comm, &x) == tpudistNoMemory);
    CHILD_CHECK(x.done && x.result == tpudistNoMemory);
    if (!strstr(comm->err.msg, "bytes free")) fprintf(stderr, "%s\n", comm->err.msg);
    CHILD_CHECK(strstr(comm->err.msg, "/dev/shm has") && strstr(comm->err.msg, "bytes free"));
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
  tdNet *comm = childComm(rank, n, id);
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

/* Two "hosts" on this machine (TPU_DIST_HOSTID per rank pair): the default order picks shm within
 * a host and socket across; exchanges and any-source receives span both transports. */
static int bodyTwoHosts(int rank, int n, const tpudistUniqueId *id, void *arg) {
  (void)arg;
  gHostId = rank < n / 2 ? "hostA" : "hostB";
  tdNet *comm = childComm(rank, n, id);
  CHILD_CHECK(comm);
  for (int p = 0; p < n; p++) {
    const tdTransport *want = p == rank                       ? &tdTransportSelf
                              : (p < n / 2) == (rank < n / 2) ? &tdTransportShm
                                                              : &tdTransportSocket;
    CHILD_CHECK(transportForPeer(comm, p) == want);
  }
  int rc = exchange(comm, 1);
  if (rc) return rc;
  rc = bodyAnyInner(comm);
  if (rc) return rc;
  transportTestCommFree(comm);
  return 0;
}

static void testTwoHosts(void) {
  gTransports = NULL;
  CU_ASSERT_EQUAL(runRanks(4, bodyTwoHosts, NULL, 120), 0);
}

/* Both ranks open their connection at the same moment (posts before a barrier, progress after):
 * exactly one connection survives and traffic flows both ways, repeatedly. */
static int bodySimultaneous(int rank, int n, const tpudistUniqueId *id, void *arg) {
  (void)arg;
  char err[TD_ERRLEN];
  tdNet *comm = childComm(rank, n, id);
  CHILD_CHECK(comm);
  int v[8], w[8];
  tdXfer x[16];
  memset(x, 0, sizeof(x));
  for (int i = 0; i < 8; i++) {
    v[i] = rank * 100 + i;
    w[i] = -1;
    x[2 * i] = (tdXfer){.peer = 1 - rank, .key = {5, 0, (uint32_t)i, 0}, .buf = &v[i], .len = 4};
    x[2 * i + 1] =
        (tdXfer){.peer = 1 - rank, .key = {5, 0, (uint32_t)i, 0}, .buf = &w[i], .len = 4};
    CHILD_CHECK(transportPostSend(comm, &x[2 * i]) == tpudistSuccess);
    CHILD_CHECK(transportPostRecv(comm, &x[2 * i + 1]) == tpudistSuccess);
  }
  CHILD_CHECK(bootstrapBarrier(comm->bootstrap, err) == tpudistSuccess);
  CHILD_CHECK(waitAll(comm, x, 16, 20000) == 0);
  for (int i = 0; i < 8; i++) CHILD_CHECK(w[i] == (1 - rank) * 100 + i);
  CHILD_CHECK(bootstrapBarrier(comm->bootstrap, err) == tpudistSuccess);
  transportTestCommFree(comm);
  return 0;
}

static void testSimultaneous(void) {
  gTransports = "socket";
  for (int i = 0; i < 3; i++) CU_ASSERT_EQUAL(runRanks(2, bodySimultaneous, NULL, 60), 0);
}

/* Each rank waits for its large send to complete before posting its receive (a blocking-send
 * pattern): must not deadlock on any transport (shm pulls an unmatched single-copy message). */
static int bodySendFirst(int rank, int n, const tpudistUniqueId *id, void *arg) {
  (void)arg;
  char err[TD_ERRLEN];
  tdNet *comm = childComm(rank, n, id);
  CHILD_CHECK(comm);
  size_t len = (1u << 20) + 64;
  unsigned char *s = malloc(len), *r = malloc(len);
  CHILD_CHECK(s && r);
  for (int round = 0; round < 3; round++) {
    rigFill(s, len, rank, 1 - rank, round);
    memset(r, 0, len);
    tdXfer x = {.peer = 1 - rank, .key = {11, 0, (uint32_t)round, 0}, .buf = s, .len = len};
    tdXfer y = x;
    y.buf = r;
    CHILD_CHECK(transportPostSend(comm, &x) == tpudistSuccess);
    CHILD_CHECK(transportWait(comm, &x, 20000) == tpudistSuccess);
    memset(s, 0xee, len); /* the send is complete: its buffer is ours again */
    CHILD_CHECK(transportPostRecv(comm, &y) == tpudistSuccess);
    CHILD_CHECK(transportWait(comm, &y, 20000) == tpudistSuccess);
    CHILD_CHECK(rigMismatch(r, len, 1 - rank, rank, round) == len);
  }
  CHILD_CHECK(bootstrapBarrier(comm->bootstrap, err) == tpudistSuccess);
  free(s);
  free(r);
  transportTestCommFree(comm);
  return 0;
}

static void testSendFirst(void) {
  const char *tps[] = {"shm", "socket"};
  for (int t = 0; t < 2; t++) {
    gTransports = tps[t];
    CU_ASSERT_EQUAL(runRanks(2, bodySendFirst, NULL, 60), 0);
  }
}

static void testSetup(void) {
  tdNet comm;
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
      {"transport list", testSetup},
      {"wrong secret rejected", testWrongSecret},
      {"socket 2 ranks", testSocket2},
      {"socket 4 ranks", testSocket4},
      {"shm 2 ranks", testShm2},
      {"shm 4 ranks", testShm4},
      {"shm 2 ranks without CMA", testShmNoCma},
      {"shm rings sized by the ranks of a host", testShmRingSize},
      {"any-source receives", testAnySource},
      {"dead peer is an error", testDeadPeer},
      {"shm: a slot payload written before a release is read", testSlotBeforeRelease},
      {"shm: /dev/shm too small", testShmFull},
      {"socket interface choice", testIfname},
      {"two hosts: shm within, socket across", testTwoHosts},
      {"socket: simultaneous connects", testSimultaneous},
      {"send completes before the receive is posted", testSendFirst},
      CU_TEST_INFO_NULL,
  };
  return tdCUnitMain("unit-transport", tests);
}
