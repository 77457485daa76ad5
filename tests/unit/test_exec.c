/*
 * test_exec.c - the executor on its own: schedules run over real transports with no communicator
 * from src/core (this program is compiled with the executor's include path and links no core
 * object). One rank over the self transport, then two forked ranks over loopback TCP and over shm:
 * exact all-reduce results, non-blocking progress, a two-phase operation chained through
 * op->phase, and abort failing what is queued.
 */
#include <stdlib.h>
#include <string.h>

#include "../cu_main.h"
#include "algos.h"
#include "exec.h"
#include "exec_rig.h"
#include "fork_ranks.h"
#include "registry.h"
#include "rt_config.h"

static tdConfig gCfg;

/* A tdNet over a fresh bootstrap with the given transports. */
static tdNet *netOpen(int rank, int n, const tpudistUniqueId *id, const char *transports) {
  gCfg = *configGet();
  gCfg.transports = transports;
  return forkNet(rank, n, id, &gCfg);
}

/* rank's all-reduce plan with algo into s (fused as the runtime runs it). */
static int plan(tdColl coll, const char *algo, int rank, int n, tdSched *s) {
  char err[TD_ERRLEN];
  tdCollArgs a = {.coll = coll, .nranks = n, .rank = rank};
  if (algoGenerate(&a, algo, s, err) != tpudistSuccess) {
    fprintf(stderr, "%s %s: %s\n", schedCollName(coll), algo, err);
    return -1;
  }
  schedFuse(s);
  return 0;
}

/* An operation running s over in/out with count elements of float32 sum. */
static tdOp *collOp(tdExec *ex, const tdSched *s, uint64_t seq, void *in, void *out, uint64_t n) {
  tdOp *op = rigOp(ex, s, seq, n, sizeof(float), tpudistFloat32, tpudistSum);
  if (!op) return NULL;
  op->bufs[TD_BUF_INPUT] = in;
  op->bufs[TD_BUF_OUTPUT] = out;
  return op;
}

static float value(int rank, uint64_t i) {
  return (float)((i * 7 + (uint64_t)rank * 13) % 1024) * 0.25f; /* exact in float32 sums */
}

/* Phase 2 of the chained operation: an all-reduce of what phase 1 (an all-gather) produced. */
typedef struct {
  tdSched reduce;
  int calls;
} chainState;
static chainState gChain;
static float *gChainBuf;

static tpudistResult_t chainNext(tdOp *op, char *err) {
  (void)err;
  gChain.calls++;
  op->sched = &gChain.reduce;
  op->coll = TD_COLL_ALLREDUCE;
  op->seq++;
  op->n = (uint64_t)op->net->nranks;                                    /* the gathered vector */
  op->bufs[TD_BUF_INPUT] = op->bufs[TD_BUF_OUTPUT] = (char *)gChainBuf; /* in place */
  return tpudistSuccess;
}

static int runRank(int rank, int n, const tpudistUniqueId *id, const char *transports) {
  const uint64_t count = 300000; /* several pieces per step */
  tdNet *net = netOpen(rank, n, id, transports);
  CHILD_CHECK(net != NULL);
  tdExec ex;
  char err[TD_ERRLEN];
  CHILD_CHECK(execInit(&ex, net, err) == tpudistSuccess);
  float *in = malloc(count * sizeof(float)), *out = malloc(count * sizeof(float));
  CHILD_CHECK(in && out);
  for (uint64_t i = 0; i < count; i++) in[i] = value(rank, i);
  const char *algos[] = {"ring", "ring2", "recdbl", "tree", "rabenseifner"};
  uint64_t seq = 0;
  /* the executor reuses a binding for the same schedule object (the runtime's are cached): each
   * plan gets its own, alive until the end */
  tdSched scheds[TD_ARRAY_SIZE(algos)];
  for (size_t k = 0; k < TD_ARRAY_SIZE(algos); k++) {
    tdSched *s = &scheds[k];
    CHILD_CHECK(plan(TD_COLL_ALLREDUCE, algos[k], rank, n, s) == 0);
    memset(out, 0xff, count * sizeof(float));
    tdOp *op = collOp(&ex, s, seq++, in, out, count);
    CHILD_CHECK(op != NULL);
    execEnqueue(&ex, &op, 1, k % 2 == 0); /* odd: the progress thread drives it */
    int done = 0;
    while (k % 2 && !done) CHILD_CHECK(execTest(op, &done) == tpudistSuccess);
    CHILD_CHECK(execWait(op) == tpudistSuccess);
    execOpRelease(op);
    for (uint64_t i = 0; i < count; i++) {
      float want = 0;
      for (int r = 0; r < n; r++) want += value(r, i);
      CHILD_CHECK(out[i] == want);
    }
  }
  /* two phases: an all-gather of one element per rank, then (op->phase) an all-reduce of it */
  tdSched gather;
  CHILD_CHECK(plan(TD_COLL_ALLGATHER, "ring", rank, n, &gather) == 0);
  CHILD_CHECK(plan(TD_COLL_ALLREDUCE, "ring", rank, n, &gChain.reduce) == 0);
  float mine = (float)(rank + 1), all[8];
  gChainBuf = all;
  tdOp *op = collOp(&ex, &gather, seq, &mine, all, 1);
  CHILD_CHECK(op != NULL);
  op->phase = chainNext;
  execEnqueue(&ex, &op, 1, 1);
  CHILD_CHECK(execWait(op) == tpudistSuccess);
  execOpRelease(op);
  CHILD_CHECK(gChain.calls == 1);
  for (int r = 0; r < n; r++) CHILD_CHECK(all[r] == (float)(r + 1) * (float)n);
  schedFree(&gather);
  schedFree(&gChain.reduce);
  /* abort: what is queued fails with the abort's result, and nothing waits */
  tdSched s;
  CHILD_CHECK(plan(TD_COLL_ALLREDUCE, "ring", rank, n, &s) == 0);
  execAbort(&ex, tpudistAborted);
  op = collOp(&ex, &s, seq + 2, in, out, count);
  execEnqueue(&ex, &op, 1, 1);
  CHILD_CHECK(execWait(op) == tpudistAborted);
  execOpRelease(op);
  schedFree(&s);
  for (size_t k = 0; k < TD_ARRAY_SIZE(algos); k++) schedFree(&scheds[k]);
  rigClose(&ex, net);
  free(in);
  free(out);
  return 0;
}

int main(void) {
  CU_TestInfo tests[] = {TD_EXEC_RIG_TESTS, CU_TEST_INFO_NULL};
  return tdCUnitMain("unit-exec", tests);
}
