/*
 * exec_rig.h - the ranks of the executor's tests (unit-exec, unit-exec-parts): each test program
 * defines runRank(rank, n, id, transports), one rank's whole test over those transports; this file
 * runs it as forked ranks over self, loopback TCP and shm (2, 3 and 4 ranks), and closes what a
 * rank opened (rigClose).
 */
#ifndef TD_TESTS_EXEC_RIG_H
#define TD_TESTS_EXEC_RIG_H

#include "../cu_main.h"
#include "exec.h"
#include "fork_ranks.h"
#include "registry.h"

static int runRank(int rank, int n, const tpudistUniqueId *id, const char *transports);

/* An operation running s over n elements of dtype (esize bytes each) with redop; no buffers. */
static tdOp *rigOp(tdExec *ex, const tdSched *s, uint64_t seq, uint64_t n, size_t esize, int dtype,
                   int redop) {
  tdOp *op = execOpAlloc(ex);
  if (!op) return NULL;
  op->kind = TD_OP_COLL;
  op->coll = s->coll;
  op->sched = s;
  op->algo = s->algo;
  op->seq = seq;
  op->n = n;
  op->esize = esize;
  op->dtype = dtype;
  op->redop = redop;
  return op;
}

/* Stops and frees the executor, then the rank's transports and communicator. */
static void rigClose(tdExec *ex, tdNet *net) {
  execStop(ex);
  transportFiniAll(net);
  execFree(ex);
  transportTestCommFree(net);
}

static int bodySocket(int rank, int n, const tpudistUniqueId *id, void *arg) {
  (void)arg;
  return runRank(rank, n, id, "socket");
}
static int bodyShm(int rank, int n, const tpudistUniqueId *id, void *arg) {
  (void)arg;
  return runRank(rank, n, id, "shm");
}

static void testSelf(void) {
  CU_ASSERT_EQUAL(runRanks(1, bodySocket, NULL, 60), 0);
}
static void testLoopbackPair(void) {
  CU_ASSERT_EQUAL(runRanks(2, bodySocket, NULL, 120), 0);
}
static void testShmPair(void) {
  CU_ASSERT_EQUAL(runRanks(2, bodyShm, NULL, 120), 0);
}
static void testShmThree(void) {
  CU_ASSERT_EQUAL(runRanks(3, bodyShm, NULL, 120), 0);
}
static void testShmFour(void) {
  CU_ASSERT_EQUAL(runRanks(4, bodyShm, NULL, 120), 0);
}

#define TD_EXEC_RIG_TESTS                                                              \
  {"one rank over self", testSelf}, {"two ranks over loopback TCP", testLoopbackPair}, \
      {"two ranks over shm", testShmPair}, {"three ranks over shm", testShmThree}, {   \
    "four ranks over shm", testShmFour                                                 \
  }

#endif
