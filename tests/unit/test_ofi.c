/*
 * test_ofi.c - the ofi transport between forked ranks over libfabric's software providers
 * (tcp;ofi_rxm on loopback, and shm): every size from 0 to 16 MiB, both the tagged path
 * (TPU_DIST_OFI_RMA_MIN_BYTES=0) and the RMA path (announced messages read from the sender's
 * registered memory, 4 KiB and up), receives posted before and after arrival, reducing receives,
 * the same send buffer reused with new contents (registration cache), any-source receives, a
 * length mismatch on either path, a key that does not fit the tag, a peer that exits or releases
 * its communicator, and ofi left off with the reason (no RDMA device and no provider named, an
 * unknown provider, libfabric hidden) while sockets carry the traffic. Every byte is checked.
 */
#include <errno.h>
#include <glob.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>

#include "../cu_main.h"
#include "bootstrap.h"
#include "kernels.h"
#include "ofi_lib.h"
#include "registry.h"
#include "rt_config.h"
#include "xfer_rig.h"

static const char *gProvider = "tcp;ofi_rxm";
static const char *gTransports = "ofi";
static long gRmaMin;
static int gMrCache = 16;
static tdConfig gCfg;

static tdNet *childComm(int rank, int n, const tpudistUniqueId *id) {
  gCfg = *configGet();
  gCfg.transports = gTransports;
  gCfg.ofi_provider = gProvider;
  gCfg.ofi_rma_min_bytes = gRmaMin;
  gCfg.ofi_mr_cache = gMrCache;
  gCfg.socket_ifname = "lo";
  return forkNet(rank, n, id, &gCfg);
}

static const size_t kSizes[] = {0, 1, 31, 4095, 4096, 65539, (1u << 20) + 3, 16u << 20};
static const size_t kCounts[] = {1, 1024, 262147, 1u << 20};

static int bodyExchange(int rank, int n, const tpudistUniqueId *id, void *arg) {
  (void)arg;
  char err[TD_ERRLEN];
  tdNet *comm = childComm(rank, n, id);
  CHILD_CHECK(comm);
  for (int p = 0; p < n; p++)
    CHILD_CHECK(transportForPeer(comm, p) == (p == rank ? &tdTransportSelf : &tdTransportOfi));
  for (int round = 0; round < 2; round++) {
    CHILD_CHECK(rigExchange(comm, kSizes, TD_ARRAY_SIZE(kSizes), round, 0) == 0);
    CHILD_CHECK(rigExchange(comm, kSizes, TD_ARRAY_SIZE(kSizes), round, 1) == 0);
  }
  CHILD_CHECK(rigReduceRing(comm, kCounts, TD_ARRAY_SIZE(kCounts), 8) == 0);
  CHILD_CHECK(bootstrapBarrier(comm->bootstrap, err) == tpudistSuccess);
  transportTestCommFree(comm);
  return 0;
}

static void runExchange(const char *prov, int n) {
  gProvider = prov;
  gRmaMin = 0; /* tagged messages only */
  CU_ASSERT_EQUAL(runRanks(n, bodyExchange, NULL, 120), 0);
  gRmaMin = 4096; /* RMA reads from 4 KiB */
  CU_ASSERT_EQUAL(runRanks(n, bodyExchange, NULL, 120), 0);
  gMrCache = 0; /* and without the registration cache */
  CU_ASSERT_EQUAL(runRanks(n, bodyExchange, NULL, 120), 0);
  gMrCache = 16;
}

static void testTcp2(void) {
  runExchange("tcp;ofi_rxm", 2);
}

static void testTcp4(void) {
  runExchange("tcp;ofi_rxm", 4);
}

static void testShm3(void) {
  runExchange("shm", 3);
}

/* Rank 0 takes one message from each other rank with any-source receives. */
static int bodyAnySource(int rank, int n, const tpudistUniqueId *id, void *arg) {
  (void)arg;
  tdNet *comm = childComm(rank, n, id);
  CHILD_CHECK(comm);
  int seen = 0;
  static char big[3][65536];
  for (int i = 1; rank == 0 && i < n; i++) {
    tdXfer x = {.peer = -1, .key = {0, TD_P2P_STREAM, 5, 0}, .buf = big[0], .len = sizeof(big[0])};
    CHILD_CHECK(transportPostRecv(comm, &x) == tpudistSuccess);
    CHILD_CHECK(transportWait(comm, &x, 30000) == tpudistSuccess);
    CHILD_CHECK(x.source >= 1 && x.source < n && !(seen & (1 << x.source)));
    for (size_t b = 0; b < sizeof(big[0]); b++) CHILD_CHECK(big[0][b] == (char)(x.source + b));
    seen |= 1 << x.source;
  }
  if (rank) {
    for (size_t b = 0; b < sizeof(big[0]); b++) big[1][b] = (char)(rank + b);
    tdXfer x = {.peer = 0, .key = {0, TD_P2P_STREAM, 5, 0}, .buf = big[1], .len = sizeof(big[1])};
    CHILD_CHECK(transportPostSend(comm, &x) == tpudistSuccess);
    CHILD_CHECK(transportWait(comm, &x, 30000) == tpudistSuccess);
  }
  char err[TD_ERRLEN];
  CHILD_CHECK(bootstrapBarrier(comm->bootstrap, err) == tpudistSuccess);
  transportTestCommFree(comm);
  return 0;
}

static void testAnySource(void) {
  gProvider = "tcp;ofi_rxm";
  for (int rma = 0; rma < 2; rma++) {
    gRmaMin = rma ? 4096 : 0;
    CU_ASSERT_EQUAL(runRanks(3, bodyAnySource, NULL, 60), 0);
  }
}

/* Lengths that differ (tagged: 64 sent, 100 expected; RMA: 8192 vs 16384 both ways; tagged: 100
 * sent, 64 expected) fail the receive naming the sender; the sends complete, except that a
 * provider may drop the connection of a message too long for its receive (tcp;ofi_rxm does), so
 * that one is last and its send may fail with tpudistRemoteError. A key beyond the tag is
 * refused at its post. */
static int bodyMismatch(int rank, int n, const tpudistUniqueId *id, void *arg) {
  (void)arg;
  (void)n;
  tdNet *comm = childComm(rank, n, id);
  CHILD_CHECK(comm);
  static const size_t lens[4][2] = {{64, 100}, {8192, 16384}, {16384, 8192}, {100, 64}};
  static char buf[16384];
  tdXfer big = {.peer = 1 - rank, .key = {1, 0, 0, 1u << 14}, .buf = buf, .len = 4};
  CHILD_CHECK(transportPostSend(comm, &big) == tpudistInvalidUsage);
  CHILD_CHECK(big.done && strstr(comm->err.msg, "does not fit the tag"));
  for (int i = 0; i < 4; i++) {
    tdXfer x = {.peer = 1 - rank, .key = {11, 0, (uint32_t)i, 0}, .buf = buf};
    x.len = lens[i][rank];
    if (rank == 0) {
      CHILD_CHECK(transportPostSend(comm, &x) == tpudistSuccess);
      tpudistResult_t res = transportWait(comm, &x, 20000);
      CHILD_CHECK(res == tpudistSuccess || (i == 3 && res == tpudistRemoteError));
    } else {
      CHILD_CHECK(transportPostRecv(comm, &x) == tpudistSuccess);
      CHILD_CHECK(transportWait(comm, &x, 20000) == tpudistInvalidUsage);
      CHILD_CHECK(x.source == 0 && strstr(comm->err.msg, "from rank 0"));
    }
  }
  char err[TD_ERRLEN];
  CHILD_CHECK(bootstrapBarrier(comm->bootstrap, err) == tpudistSuccess);
  transportTestCommFree(comm);
  return 0;
}

static void testMismatch(void) {
  gProvider = "tcp;ofi_rxm";
  gRmaMin = 4096;
  CU_ASSERT_EQUAL(runRanks(2, bodyMismatch, NULL, 60), 0);
}

/* Rank 1 exits (mode 0) or releases its communicator and stays alive (mode 1) after one message;
 * rank 0's pending receive fails with tpudistRemoteError naming rank 1 well before its timeout. */
static int bodyDeadPeer(int rank, int n, const tpudistUniqueId *id, void *arg) {
  int mode = (int)(intptr_t)arg;
  char err[TD_ERRLEN];
  tdNet *comm = childComm(rank, n, id);
  CHILD_CHECK(comm);
  int v = 5;
  tdXfer x = {.peer = 1 - rank, .key = {1, 0, 0, 0}, .buf = &v, .len = sizeof(v)};
  CHILD_CHECK((rank ? transportPostSend(comm, &x) : transportPostRecv(comm, &x)) == tpudistSuccess);
  CHILD_CHECK(transportWait(comm, &x, 20000) == tpudistSuccess);
  CHILD_CHECK(bootstrapBarrier(comm->bootstrap, err) == tpudistSuccess);
  if (rank == 1 && mode == 1) {
    transportReleaseAll(comm);
    sleep(2);
    transportTestCommFree(comm);
    return 0;
  }
  if (rank == 1) _exit(0);
  x.key.seq = 2;
  CHILD_CHECK(transportPostRecv(comm, &x) == tpudistSuccess);
  CHILD_CHECK(transportWait(comm, &x, 20000) == tpudistRemoteError);
  CHILD_CHECK(strstr(comm->err.msg, "rank 1"));
  transportTestCommFree(comm);
  return 0;
}

static void testDeadPeer(void) {
  gProvider = "tcp;ofi_rxm";
  CU_ASSERT_EQUAL(runRanks(2, bodyDeadPeer, NULL, 40), 0);
  CU_ASSERT_EQUAL(runRanks(2, bodyDeadPeer, (void *)1, 40), 0);
}

/* ofi off (no provider named and no RDMA device here, or a provider that does not exist): the
 * next transport, socket, reaches the peer and carries the message. */
static int bodyOff(int rank, int n, const tpudistUniqueId *id, void *arg) {
  (void)arg;
  tdNet *comm = childComm(rank, n, id);
  CHILD_CHECK(comm);
  CHILD_CHECK(comm->peers[rank].ofi_addrlen == 0);
  CHILD_CHECK(transportForPeer(comm, 1 - rank) == &tdTransportSocket);
  int v = rank ? 42 : 0;
  tdXfer x = {.peer = 1 - rank, .key = {1, 0, 0, 0}, .buf = &v, .len = sizeof(v)};
  CHILD_CHECK((rank ? transportPostSend(comm, &x) : transportPostRecv(comm, &x)) == tpudistSuccess);
  CHILD_CHECK(transportWait(comm, &x, 20000) == tpudistSuccess && v == 42);
  transportTestCommFree(comm);
  return 0;
}

static void testOff(void) {
  gTransports = "ofi,socket";
  gProvider = "no_such_provider";
  CU_ASSERT_EQUAL(runRanks(2, bodyOff, NULL, 40), 0);
  if (!ofiRdmaDevicePresent()) {
    gProvider = "";
    CU_ASSERT_EQUAL(runRanks(2, bodyOff, NULL, 40), 0);
  }
  gTransports = "ofi";
}

/* Without libfabric (each libfabric.so.1 of the system hidden under /dev/null in a private mount
 * namespace): ofi says why it is off and sockets carry the job. Needs CAP_SYS_ADMIN (root). */
static int bodyAbsent(void) {
  if (unshare(CLONE_NEWNS) != 0 || mount("none", "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) {
    fprintf(stderr, "libfabric absent: skipped (no private mount namespace: %s)\n",
            strerror(errno));
    return 0;
  }
  glob_t g;
  CHILD_CHECK(glob("/usr/{lib,lib64,local/lib}{,/*}/libfabric.so.1", GLOB_BRACE, NULL, &g) == 0);
  for (size_t i = 0; i < g.gl_pathc; i++)
    CHILD_CHECK(mount("/dev/null", g.gl_pathv[i], NULL, MS_BIND, NULL) == 0);
  globfree(&g);
  char why[TD_ERRLEN];
  CHILD_CHECK(ofiLib(why) == NULL && strstr(why, "libfabric cannot be loaded"));
  gTransports = "ofi,socket";
  gProvider = "tcp;ofi_rxm";
  CHILD_CHECK(runRanks(2, bodyOff, NULL, 40) == 0);
  return 0;
}

static void testAbsent(void) {
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) _exit(bodyAbsent());
  int st = -1;
  waitpid(pid, &st, 0);
  CU_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

int main(void) {
  setenv("FI_TCP_IFACE", "lo", 1); /* loopback only */
  CU_TestInfo tests[] = {
      {"off: the next transport carries", testOff},
      {"libfabric absent: the next transport carries", testAbsent},
      {"tcp;ofi_rxm 2 ranks: tagged, RMA, no cache", testTcp2},
      {"tcp;ofi_rxm 4 ranks: tagged, RMA, no cache", testTcp4},
      {"shm provider 3 ranks: tagged, RMA, no cache", testShm3},
      {"any-source receives", testAnySource},
      {"length mismatch and key range", testMismatch},
      {"dead and departed peers", testDeadPeer},
      CU_TEST_INFO_NULL,
  };
  return tdCUnitMain("unit-ofi", tests);
}
