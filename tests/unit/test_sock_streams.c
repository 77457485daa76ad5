/*
 * test_sock_streams.c - the socket transport's streams (TPU_DIST_SOCKET_NSTREAMS): messages split
 * across a pair's connections arrive exact and in order.
 *   - point-to-point messages share one key per pair and must be matched in the order sent: 16 of
 *     mixed sizes (empty, small, just under and over the split threshold, several MiB) from rank 0
 *     to rank 1 with receives posted before the sends, after every message has arrived
 *     (unexpected, split parts buffered), and half before / half after; at 1, 2, 4 and 16 streams
 *   - reducing receives (float32 sum) of split messages, posted early and late, exact bits
 *   - the two ranks ask for different stream counts (1 and 8, 3 and 16): the pair uses the smaller
 *   - collective keys (distinct per message) interleaved with point-to-point ones, both directions
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../cu_main.h"
#include "fork_ranks.h"
#include "registry.h"
#include "rt_config.h"

static tdConfig gCfg;
static int gStreams[2]; /* TPU_DIST_SOCKET_NSTREAMS of rank 0 and rank 1 */

static tdNet *childComm(int rank, int n, const tpudistUniqueId *id) {
  gCfg = *configGet();
  gCfg.transports = "socket";
  gCfg.socket_ifname = "lo";
  gCfg.socket_nstreams = gStreams[rank];
  return forkNet(rank, n, id, &gCfg);
}

static const size_t kSizes[] = {
    (1u << 20) + 5, 10,     300000, 0,     (4u << 20) + 1, 64,     2u << 20, 131072,
    131071,         777777, 1,      65536, (3u << 20) + 7, 200000, 4096,     (1u << 20)};
#define NMSG 16

static unsigned char pattern(int tag, size_t i) {
  return (unsigned char)(i * 131u + (i >> 11) * 7u + (unsigned)tag * 71u + 1u);
}

/* One pass: rank 0 sends NMSG point-to-point messages (one key) to rank 1, which posts `early` of
 * its receives before the sends and the rest after they have all arrived. */
static int p2pPass(tdNet *comm, int early) {
  static tdXfer xs[NMSG];
  unsigned char *bufs[NMSG];
  char err[TD_ERRLEN];
  int me = comm->rank;
  memset(xs, 0, sizeof(xs));
  for (int i = 0; i < NMSG; i++) {
    CHILD_CHECK((bufs[i] = malloc(kSizes[i] + 1)));
    for (size_t j = 0; j < kSizes[i]; j++) bufs[i][j] = me == 0 ? pattern(i, j) : 0;
    xs[i].peer = 1 - me;
    xs[i].key = (tdMsgKey){0, TD_P2P_STREAM, 0, 0};
    xs[i].buf = bufs[i];
    xs[i].len = kSizes[i];
  }
  if (me == 1)
    for (int i = 0; i < early; i++) CHILD_CHECK(transportPostRecv(comm, &xs[i]) == tpudistSuccess);
  CHILD_CHECK(bootstrapBarrier(comm->bootstrap, err) == tpudistSuccess);
  if (me == 0)
    for (int i = 0; i < NMSG; i++) CHILD_CHECK(transportPostSend(comm, &xs[i]) == tpudistSuccess);
  if (me == 1) {
    progressFor(comm, early < NMSG ? 300 : 0);
    for (int i = early; i < NMSG; i++)
      CHILD_CHECK(transportPostRecv(comm, &xs[i]) == tpudistSuccess);
  }
  CHILD_CHECK(waitAll(comm, xs, NMSG, 60000) == 0);
  for (int i = 0; i < NMSG && me == 1; i++)
    for (size_t j = 0; j < kSizes[i]; j++)
      if (bufs[i][j] != pattern(i, j)) {
        fprintf(stderr, "message %d (%zu bytes), early %d: byte %zu wrong\n", i, kSizes[i], early,
                j);
        return __LINE__;
      }
  for (int i = 0; i < NMSG; i++) free(bufs[i]);
  CHILD_CHECK(bootstrapBarrier(comm->bootstrap, err) == tpudistSuccess);
  return 0;
}

/* Both ranks send a split float32 message to each other with collective keys, interleaved with a
 * point-to-point message each way; each receives by reducing (sum) into its own values. */
static int reducePass(tdNet *comm, int late) {
  enum { N = (3 << 18) + 1 }; /* 3 MiB + 4 bytes of float32 */
  float *mine = malloc(N * sizeof(float)), *out = malloc(N * sizeof(float));
  char p2p_out[100], p2p_in[100];
  char err[TD_ERRLEN];
  int me = comm->rank, peer = 1 - me;
  CHILD_CHECK(mine && out);
  for (int i = 0; i < N; i++) mine[i] = (float)((i * 7 + me * 3) % 1000) * 0.25f;
  memset(p2p_out, 'a' + me, sizeof(p2p_out));
  tdXfer xs[4];
  memset(xs, 0, sizeof(xs));
  xs[0] = (tdXfer){.peer = peer, .key = {9, 2, 0, (uint32_t)late}, .buf = mine, .len = N * 4};
  xs[1] = (tdXfer){.peer = peer, .key = {0, TD_P2P_STREAM, 0, 0}, .buf = p2p_out, .len = 100};
  xs[2] = (tdXfer){.peer = peer,
                   .key = {9, 2, 0, (uint32_t)late},
                   .buf = out,
                   .len = N * 4,
                   .reduce_src = mine,
                   .dtype = tpudistFloat32,
                   .op = tpudistSum};
  xs[3] = (tdXfer){.peer = peer, .key = {0, TD_P2P_STREAM, 0, 0}, .buf = p2p_in, .len = 100};
  if (!late)
    for (int i = 2; i < 4; i++) CHILD_CHECK(transportPostRecv(comm, &xs[i]) == tpudistSuccess);
  CHILD_CHECK(bootstrapBarrier(comm->bootstrap, err) == tpudistSuccess);
  for (int i = 0; i < 2; i++) CHILD_CHECK(transportPostSend(comm, &xs[i]) == tpudistSuccess);
  if (late) {
    progressFor(comm, 300);
    for (int i = 2; i < 4; i++) CHILD_CHECK(transportPostRecv(comm, &xs[i]) == tpudistSuccess);
  }
  CHILD_CHECK(waitAll(comm, xs, 4, 60000) == 0);
  for (int i = 0; i < N; i++) {
    float want = mine[i] + (float)((i * 7 + peer * 3) % 1000) * 0.25f;
    if (memcmp(&out[i], &want, sizeof(float)) != 0) {
      fprintf(stderr, "rank %d: element %d: %g, want %g\n", me, i, out[i], want);
      return __LINE__;
    }
  }
  for (int i = 0; i < 100; i++) CHILD_CHECK(p2p_in[i] == 'a' + peer);
  free(mine);
  free(out);
  CHILD_CHECK(bootstrapBarrier(comm->bootstrap, err) == tpudistSuccess);
  return 0;
}

static int bodyStreams(int rank, int n, const tpudistUniqueId *id, void *arg) {
  (void)arg;
  tdNet *comm = childComm(rank, n, id);
  CHILD_CHECK(comm);
  int rc = 0;
  for (int pass = 0; pass < 2 && !rc; pass++) {
    if (!rc) rc = p2pPass(comm, NMSG);
    if (!rc) rc = p2pPass(comm, 0);
    if (!rc) rc = p2pPass(comm, NMSG / 2);
    if (!rc) rc = reducePass(comm, 0);
    if (!rc) rc = reducePass(comm, 1);
  }
  transportTestCommFree(comm);
  return rc;
}

static void runWith(int s0, int s1) {
  gStreams[0] = s0;
  gStreams[1] = s1;
  int failed = runRanks(2, bodyStreams, NULL, 120);
  if (failed) fprintf(stderr, "streams %d and %d: %d ranks failed\n", s0, s1, failed);
  CU_ASSERT_EQUAL(failed, 0);
}

static void testOneStream(void) {
  runWith(1, 1);
}
static void testTwoStreams(void) {
  runWith(2, 2);
}
static void testFourStreams(void) {
  runWith(4, 4);
}
static void testSixteenStreams(void) {
  runWith(16, 16);
}
static void testMixedStreams(void) {
  runWith(1, 8);
  runWith(16, 3);
}

int main(void) {
  CU_TestInfo tests[] = {
      {"1 stream: order and exact bytes", testOneStream},
      {"2 streams: order and exact bytes", testTwoStreams},
      {"4 streams: order and exact bytes", testFourStreams},
      {"16 streams: order and exact bytes", testSixteenStreams},
      {"ranks asking for different stream counts", testMixedStreams},
      CU_TEST_INFO_NULL,
  };
  return tdCUnitMain("unit-sock-streams", tests);
}
