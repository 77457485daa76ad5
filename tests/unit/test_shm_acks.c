/*
 * test_shm_acks.c - shm single-copy (CMA) acknowledgement slots under load: two forked ranks
 * exchange many rounds of messages just above TPU_DIST_SHM_CMA_MIN_BYTES in both directions at
 * once, more per round than there are ack slots (64), so the slots are reused continually while the
 * peer reads and acknowledges as fast as it can. Every send and receive must complete (a send whose
 * acknowledgement was overwritten by the next user of its slot never did) and every byte must
 * arrive. A second case runs the same with receives posted late, so messages wait as unexpected
 * descriptors and are pulled after TPU_DIST_SHM_CMA_PULL_MS (acknowledged by the pull).
 */
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../cu_main.h"
#include "bootstrap.h"
#include "fork_ranks.h"
#include "registry.h"
#include "rt_config.h"

#define ROUNDS 300
#define PER_ROUND 400 /* > 64 ack slots, and more than the ring holds */
#define MSG 4096

static int gLate; /* post the receives after the sends had time to arrive */
static tdConfig gCfg;

static unsigned char pat(int src, int round, int i, size_t k) {
  return (unsigned char)(k * 131u + (unsigned)src * 17u + (unsigned)round * 71u + (unsigned)i * 5u);
}

static int64_t nowMs(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* Progresses until xs[0..n) are done (or timeout_ms); returns how many are not done. */
static int progressUntil(tdNet *comm, tdXfer *xs, int n, int timeout_ms) {
  int64_t end = nowMs() + timeout_ms;
  for (;;) {
    int left = 0, prog;
    transportProgressAll(comm, &prog);
    for (int i = 0; i < n; i++) left += !__atomic_load_n(&xs[i].done, __ATOMIC_ACQUIRE);
    if (!left || nowMs() > end) return left;
    if (!prog) sched_yield();
  }
}

/* Message i of round with peer: MSG bytes at buf + i * MSG. */
static tdXfer *xferInit(tdXfer *x, int peer, int round, int i, unsigned char *buf) {
  memset(x, 0, sizeof(*x));
  x->peer = peer;
  x->key = (tdMsgKey){(uint64_t)round, 0, (uint32_t)i, 0};
  x->buf = buf + (size_t)i * MSG;
  x->len = MSG;
  return x;
}

static void postRecvs(tdNet *comm, tdXfer *rx, unsigned char *rbuf, int round, int peer) {
  for (int i = 0; i < PER_ROUND; i++)
    transportPostRecv(comm, xferInit(&rx[i], peer, round, i, rbuf));
}

static int body(int rank, int n, const tpudistUniqueId *id, void *arg) {
  (void)arg;
  char err[TD_ERRLEN];
  tdBootstrap *bs;
  tdNet *comm;
  gCfg = *configGet();
  gCfg.transports = "shm";
  gCfg.shm_cma = 1;
  gCfg.shm_cma_min_bytes = MSG;
  gCfg.shm_cma_pull_ms = 1;
  CHILD_CHECK(bootstrapInit(id, rank, n, 30000, NULL, &bs, err) == tpudistSuccess);
  CHILD_CHECK(transportTestComm(bs, &gCfg, &comm, err) == tpudistSuccess);
  int peer = 1 - rank;
  tdXfer *sx = calloc(PER_ROUND, sizeof(tdXfer)), *rx = calloc(PER_ROUND, sizeof(tdXfer));
  unsigned char *sbuf = malloc((size_t)PER_ROUND * MSG), *rbuf = malloc((size_t)PER_ROUND * MSG);
  CHILD_CHECK(sx && rx && sbuf && rbuf);
  for (int round = 0; round < ROUNDS; round++) {
    for (int i = 0; i < PER_ROUND; i++)
      for (size_t k = 0; k < MSG; k++) sbuf[(size_t)i * MSG + k] = pat(rank, round, i, k);
    memset(rbuf, 0, (size_t)PER_ROUND * MSG);
    if (!gLate) postRecvs(comm, rx, rbuf, round, peer);
    for (int i = 0; i < PER_ROUND; i++)
      CHILD_CHECK(transportPostSend(comm, xferInit(&sx[i], peer, round, i, sbuf)) ==
                  tpudistSuccess);
    if (gLate) {
      int64_t until = nowMs() + 3; /* the peer's descriptors arrive and go stale unmatched */
      while (nowMs() < until) progressUntil(comm, sx, 0, 0);
      postRecvs(comm, rx, rbuf, round, peer);
    }
    int ls = progressUntil(comm, sx, PER_ROUND, 10000);
    int lr = progressUntil(comm, rx, PER_ROUND, 10000);
    if (ls || lr)
      fprintf(stderr, "rank %d round %d: %d sends and %d receives never completed\n", rank, round,
              ls, lr);
    CHILD_CHECK(ls == 0 && lr == 0);
    for (int i = 0; i < PER_ROUND; i++) {
      CHILD_CHECK(sx[i].result == tpudistSuccess && rx[i].result == tpudistSuccess);
      for (size_t k = 0; k < MSG; k++)
        CHILD_CHECK(rbuf[(size_t)i * MSG + k] == pat(peer, round, i, k));
    }
  }
  free(sx);
  free(rx);
  free(sbuf);
  free(rbuf);
  transportTestCommFree(comm);
  return 0;
}

static void testAcksEager(void) {
  gLate = 0;
  CU_ASSERT_EQUAL(runRanks(2, body, NULL, 120), 0);
}

static void testAcksLate(void) {
  gLate = 1;
  CU_ASSERT_EQUAL(runRanks(2, body, NULL, 120), 0);
}

int main(void) {
  CU_TestInfo tests[] = {
      {"CMA ack slots reused under load, receives posted first", testAcksEager},
      {"CMA ack slots reused under load, receives posted late (pulled)", testAcksLate},
      CU_TEST_INFO_NULL,
  };
  return tdCUnitMain("unit-shm-acks", tests);
}
