/*
 * test_exec_parts.c - parted operations (the executor's binding of a fused host: INPUT and OUTPUT
 * are a list of member buffers, concatenated block by block; src/exec/exec_parts.c) against the
 * same plan over one contiguous buffer, bit for bit. Every generator of every collective that
 * defer mode fuses (all-reduce, broadcast, reduce, all-gather, reduce-scatter, all-to-all), out of
 * place and in place, float32 sum and max and int32 sum, members of uneven counts with empty ones
 * among them, 64-byte pieces (pieces cut inside members) and the default; 1 rank over self,
 * 2 over loopback TCP, 2, 3 and 4 over shm. Also: a host whose members are all empty runs; a
 * member's NULL buffer that the plan uses is an error naming the buffer, not a crash.
 */
#include <stdlib.h>
#include <string.h>

#include "../cu_main.h"
#include "algos.h"
#include "exec.h"
#include "exec_rig.h"
#include "fork_ranks.h"
#include "host.h"
#include "registry.h"
#include "rt_config.h"

#define NMEM 6
static const uint64_t gCounts[NMEM] = {5, 0, 130, 1, 0, 67}; /* total 203: no divisor of it */
static tdConfig gCfg;

typedef struct {
  tdColl coll;
  int inplace, dtype, redop;
} Case;

static uint64_t blocks(tdColl coll, int n, int in) {
  if (coll == TD_COLL_ALLGATHER) return in ? 1 : (uint64_t)n;
  if (coll == TD_COLL_REDUCESCATTER) return in ? (uint64_t)n : 1;
  return coll == TD_COLL_ALLTOALL ? (uint64_t)n : 1;
}

/* One operation's buffers in NCCL's in-place form or not: one allocation, *in and *out in it. */
static char *alloc2(const Case *k, int rank, int n, uint64_t cnt, char **in, char **out) {
  size_t bi = blocks(k->coll, n, 1) * cnt * 4, bo = blocks(k->coll, n, 0) * cnt * 4;
  char *a = calloc(1, bi + bo + 8);
  *in = a;
  *out = a + bi;
  if (k->inplace && k->coll == TD_COLL_ALLGATHER) *in = (*out = a) + (size_t)rank * cnt * 4;
  if (k->inplace && k->coll == TD_COLL_REDUCESCATTER) *out = a + (size_t)rank * cnt * 4;
  if (k->inplace && k->coll != TD_COLL_ALLGATHER && k->coll != TD_COLL_REDUCESCATTER) *in = *out;
  return a;
}

/* Input element (block b, position w of the host's block) of rank r: exact in float32 sums. */
static uint32_t value(const Case *k, int r, uint64_t b, uint64_t w) {
  uint32_t v = (uint32_t)((w * 7 + b * 31 + (uint64_t)r * 13) % 1024);
  if (k->dtype == tpudistInt32) return v * 2654435761u; /* wraps: integer sums in unsigned */
  float f = (float)v * 0.25f - 64.0f;
  memcpy(&v, &f, 4);
  return v;
}

static tdOp *opOf(tdExec *ex, const tdSched *s, const Case *k, uint64_t seq, uint64_t n) {
  return rigOp(ex, s, seq, n, 4, k->dtype, k->redop);
}

static tpudistResult_t runOp(tdExec *ex, tdOp *op) {
  execEnqueue(ex, &op, 1, 1);
  tpudistResult_t r = execWait(op);
  execOpRelease(op);
  return r;
}

/* 1 if this rank's OUTPUT is defined after the collective (a reduce's: the root's only). */
static int hasOutput(const tdSched *s, int rank) {
  return s->coll != TD_COLL_REDUCE || s->root == rank;
}

/* Runs plan s over one contiguous buffer and as a parted operation over NMEM members: 0 if every
 * member's output equals its place in the contiguous output, bit for bit; else a line number. */
static int oneCase(tdExec *ex, const tdSched *s, const Case *k, int rank, int n, uint64_t *seq) {
  uint64_t T = 0, bi = blocks(k->coll, n, 1), bo = blocks(k->coll, n, 0), off = 0;
  for (int m = 0; m < NMEM; m++) T += gCounts[m];
  char *ci, *co, *ca = alloc2(k, rank, n, T, &ci, &co), *mi[NMEM], *mo[NMEM], *ma[NMEM];
  for (int m = 0; m < NMEM; m++) {
    ma[m] = alloc2(k, rank, n, gCounts[m], &mi[m], &mo[m]);
    for (uint64_t b = 0; b < bi; b++)
      for (uint64_t i = 0; i < gCounts[m]; i++) {
        uint32_t v = value(k, rank, b, off + i);
        memcpy(mi[m] + (b * gCounts[m] + i) * 4, &v, 4);
        memcpy(ci + (b * T + off + i) * 4, &v, 4);
      }
    off += gCounts[m];
  }
  tdOp *op = opOf(ex, s, k, (*seq)++, T);
  CHILD_CHECK(op != NULL);
  op->bufs[TD_BUF_INPUT] = ci;
  op->bufs[TD_BUF_OUTPUT] = co;
  CHILD_CHECK(runOp(ex, op) == tpudistSuccess);
  op = opOf(ex, s, k, (*seq)++, T);
  CHILD_CHECK(op != NULL);
  CHILD_CHECK(tdGrow(&op->parts, &op->parts_cap, NMEM, sizeof(tdPart), 4) == 0);
  op->parted = 1;
  off = 0;
  for (int m = 0; m < NMEM; off += gCounts[m], m++)
    if (gCounts[m]) op->parts[op->nparts++] = (tdPart){{mi[m], mo[m]}, off, gCounts[m]};
  CHILD_CHECK(runOp(ex, op) == tpudistSuccess);
  off = 0;
  for (int m = 0; m < NMEM; off += gCounts[m], m++)
    for (uint64_t b = 0; hasOutput(s, rank) && b < bo; b++)
      CHILD_CHECK(!memcmp(mo[m] + b * gCounts[m] * 4, co + (b * T + off) * 4, gCounts[m] * 4));
  for (int m = 0; m < NMEM; m++) free(ma[m]);
  free(ca);
  return 0;
}

static int fusedColl(tdColl c) {
  return c == TD_COLL_ALLREDUCE || c == TD_COLL_BROADCAST || c == TD_COLL_REDUCE ||
         c == TD_COLL_ALLGATHER || c == TD_COLL_REDUCESCATTER || c == TD_COLL_ALLTOALL;
}

/* Rank r's plan of a for n ranks (schedFuse'd, as the runtime runs it), or 0. */
static int genPlan(const tdAlgo *a, int inplace, int r, int n, tdSched *s) {
  char err[TD_ERRLEN];
  tdCollArgs args = {.coll = a->coll, .nranks = n, .rank = r, .inplace = inplace};
  args.root = a->coll == TD_COLL_REDUCE ? n - 1 : 1 % n;
  args.count = 203;
  args.elem_size = 4;
  if (algoRun(a, &args, s, err) != tpudistSuccess) return 0;
  schedFuse(s);
  return 1;
}

/* Every generator of a fused collective that plans every rank without a topology, in place or
 * not (every rank decides alike): this rank's plan into *s, or 0. */
static int planOf(const tdAlgo *a, int inplace, int rank, int n, tdSched *s) {
  for (int r = 0; r < n; r++) {
    tdSched t;
    if (!genPlan(a, inplace, r, n, &t)) return 0;
    schedFree(&t);
  }
  return genPlan(a, inplace, rank, n, s);
}

static int runRank(int rank, int n, const tpudistUniqueId *id, const char *transports) {
  gCfg = *configGet();
  gCfg.transports = transports;
  tdNet *net = forkNet(rank, n, id, &gCfg);
  CHILD_CHECK(net != NULL);
  tdExec ex;
  char err[TD_ERRLEN];
  CHILD_CHECK(execInit(&ex, net, err) == tpudistSuccess);
  static const int types[3][2] = {
      {tpudistFloat32, tpudistSum}, {tpudistFloat32, tpudistMax}, {tpudistInt32, tpudistSum}};
  uint64_t seq = 0;
  /* the executor reuses a binding for the same schedule object: each plan has its own, alive
   * until the end */
  static tdSched scheds[128];
  int plans = 0;
  for (const tdAlgo *a = tdAlgoTable; a->name; a++) {
    for (int inplace = 0; fusedColl(a->coll) && inplace < 2 && plans < 128; inplace++) {
      tdSched *s = &scheds[plans];
      if (!planOf(a, inplace, rank, n, s)) continue;
      plans++;
      int reduces = a->coll == TD_COLL_ALLREDUCE || a->coll == TD_COLL_REDUCE ||
                    a->coll == TD_COLL_REDUCESCATTER;
      for (int t = 0; t < (reduces ? 3 : 2); t++) {
        Case k = {a->coll, inplace, types[t][0], types[t][1]};
        net->chunk_bytes = t % 2 ? 64 : hostChunkBytes(NULL, gCfg.chunk_bytes); /* pieces inside
                                                                                  members */
        int line = oneCase(&ex, s, &k, rank, n, &seq);
        if (line)
          fprintf(stderr, "rank %d: %s/%s inplace %d dtype %d op %d differs (line %d)\n", rank,
                  schedCollName(a->coll), a->name, inplace, k.dtype, k.redop, line);
        CHILD_CHECK(line == 0);
      }
    }
  }
  CHILD_CHECK(plans >= 12);
  /* every member empty: no parts, every step one empty piece */
  float x[4] = {1, 2, 3, 4};
  Case k = {TD_COLL_ALLREDUCE, 0, tpudistFloat32, tpudistSum};
  tdOp *op = opOf(&ex, &scheds[0], &k, seq++, 0);
  CHILD_CHECK(op != NULL);
  op->parted = 1;
  CHILD_CHECK(runOp(&ex, op) == tpudistSuccess);
  /* a member's NULL OUTPUT that the plan writes: an error that names it, on every rank */
  op = opOf(&ex, &scheds[0], &k, seq, 4);
  CHILD_CHECK(op && scheds[0].coll == TD_COLL_ALLREDUCE && !scheds[0].inplace);
  CHILD_CHECK(tdGrow(&op->parts, &op->parts_cap, 1, sizeof(tdPart), 4) == 0);
  op->parted = 1;
  op->parts[op->nparts++] = (tdPart){{(char *)x, NULL}, 0, 4};
  CHILD_CHECK(runOp(&ex, op) == tpudistInternalError);
  CHILD_CHECK(strstr(net->err.msg, "uses output, which is NULL") != NULL);
  for (int i = 0; i < plans; i++) schedFree(&scheds[i]);
  rigClose(&ex, net);
  return 0;
}

int main(void) {
  CU_TestInfo tests[] = {TD_EXEC_RIG_TESTS, CU_TEST_INFO_NULL};
  return tdCUnitMain("unit-exec-parts", tests);
}
