/*
 * fault_badargs.h - the invalid-argument table of fault_job (docs/reliability.md lists the same
 * rows): each row is one bad call, the code it must return and a piece of the message
 * tpudistGetLastError must give (from the communicator, or from NULL when the call has no valid
 * communicator). After each row the communicator must still complete an exactly checked
 * all-reduce. Included by fault_job.c only.
 */
#include <stdint.h>

typedef struct {
  tpudistComm_t c;
  int rank, n;
  int32_t *a, *b; /* 1024 elements each */
  const char *null_msg_src;
} tdBad;

static tpudistResult_t bNullSend(tdBad *t) {
  return tpudistAllReduce(NULL, t->b, 4, tpudistInt32, tpudistSum, t->c, NULL);
}
static tpudistResult_t bNullRecv(tdBad *t) {
  return tpudistAllReduce(t->a, NULL, 4, tpudistInt32, tpudistSum, t->c, NULL);
}
static tpudistResult_t bNullComm(tdBad *t) {
  return tpudistAllReduce(t->a, t->b, 4, tpudistInt32, tpudistSum, NULL, NULL);
}
static tpudistResult_t bOverflow(tdBad *t) {
  return tpudistAllReduce(t->a, t->b, SIZE_MAX / 2, tpudistInt32, tpudistSum, t->c, NULL);
}
static tpudistResult_t bOverflowGather(tdBad *t) {
  return tpudistAllGather(t->a, t->b, SIZE_MAX / 4 / 2, tpudistInt32, t->c, NULL);
}
static tpudistResult_t bOverflowSend(tdBad *t) {
  return tpudistSend(t->a, SIZE_MAX / 2, tpudistFloat64, 0, t->c, NULL);
}
static tpudistResult_t bDtype(tdBad *t) {
  return tpudistAllReduce(t->a, t->b, 4, (tpudistDataType_t)42, tpudistSum, t->c, NULL);
}
static tpudistResult_t bDtypeNeg(tdBad *t) {
  return tpudistBroadcast(t->a, t->b, 4, (tpudistDataType_t)-1, 0, t->c, NULL);
}
static tpudistResult_t bOp(tdBad *t) {
  return tpudistAllReduce(t->a, t->b, 4, tpudistInt32, (tpudistRedOp_t)9, t->c, NULL);
}
static tpudistResult_t bOpReduce(tdBad *t) {
  return tpudistReduce(t->a, t->b, 4, tpudistFloat32, (tpudistRedOp_t)-1, 0, t->c, NULL);
}
static tpudistResult_t bRootHigh(tdBad *t) {
  return tpudistBroadcast(t->a, t->b, 4, tpudistInt32, t->n, t->c, NULL);
}
static tpudistResult_t bRootNeg(tdBad *t) {
  return tpudistReduce(t->a, t->b, 4, tpudistInt32, tpudistSum, -1, t->c, NULL);
}
static tpudistResult_t bPeerHigh(tdBad *t) {
  return tpudistSend(t->a, 4, tpudistInt32, t->n, t->c, NULL);
}
static tpudistResult_t bPeerNeg(tdBad *t) {
  return tpudistRecv(t->b, 4, tpudistInt32, -2, t->c, NULL);
}
static tpudistResult_t bP2pNull(tdBad *t) {
  return tpudistSend(NULL, 4, tpudistInt32, 0, t->c, NULL);
}
static tpudistResult_t bOverlap(tdBad *t) {
  return tpudistAllReduce(t->a, t->a + 1, 4, tpudistInt32, tpudistSum, t->c, NULL);
}
static tpudistResult_t bOverlapGather(tdBad *t) {
  /* sendbuff inside recvbuff but not at this rank's block */
  return tpudistAllGather(t->a + 1, t->a, 4, tpudistInt32, t->c, NULL);
}
static tpudistResult_t bOverlapScatter(tdBad *t) {
  return tpudistReduceScatter(t->a, t->a + 1, 4, tpudistInt32, tpudistSum, t->c, NULL);
}
static tpudistResult_t bAlltoallInplace(tdBad *t) {
  return tpudistAllToAll(t->a, t->a, 4, tpudistInt32, t->c, NULL);
}
static tpudistResult_t bAlltoallvNull(tdBad *t) {
  size_t z[64] = {0};
  return tpudistAllToAllv(t->a, NULL, z, t->b, z, z, tpudistInt32, t->c, NULL);
}
static tpudistResult_t bAlltoallvBuf(tdBad *t) {
  size_t one[64], z[64] = {0};
  for (int i = 0; i < 64; i++) one[i] = 1;
  return tpudistAllToAllv(NULL, one, z, t->b, one, z, tpudistInt32, t->c, NULL);
}
static tpudistResult_t bCountsNull(tdBad *t) {
  size_t s[64] = {0};
  return tpudistAllToAllCounts(s, NULL, t->c, NULL);
}
static tpudistResult_t bBcastRecvNull(tdBad *t) {
  /* every rank but the root needs recvbuff; the root passes NULL too (same call everywhere) */
  return tpudistBroadcast(t->a, NULL, 4, tpudistInt32, 0, t->c, NULL);
}
static tpudistResult_t bWaitNull(tdBad *t) {
  (void)t;
  return tpudistWait(NULL);
}
static tpudistResult_t bTestNull(tdBad *t) {
  int done;
  (void)t;
  return tpudistTest(NULL, &done);
}
static tpudistResult_t bCountNull(tdBad *t) {
  return tpudistCommCount(t->c, NULL);
}
static tpudistResult_t bRankNull(tdBad *t) {
  return tpudistCommUserRank(t->c, NULL);
}
static tpudistResult_t bAsyncNull(tdBad *t) {
  return tpudistCommGetAsyncError(t->c, NULL);
}
static tpudistResult_t bTopoNull(tdBad *t) {
  return tpudistCommTopology(t->c, NULL);
}
static tpudistResult_t bIdNull(tdBad *t) {
  (void)t;
  return tpudistGetUniqueId(NULL);
}
static tpudistResult_t bInitRank(tdBad *t) {
  tpudistComm_t x;
  tpudistUniqueId id;
  (void)t;
  memset(&id, 0, sizeof(id));
  return tpudistCommInitRank(&x, 2, id, 5);
}
static tpudistResult_t bInitNull(tdBad *t) {
  tpudistUniqueId id;
  (void)t;
  memset(&id, 0, sizeof(id));
  return tpudistCommInitRank(NULL, 2, id, 0);
}
static tpudistResult_t bInitConfig(tdBad *t) {
  tpudistComm_t x;
  tpudistUniqueId id;
  tpudistConfig_t cfg = TPUDIST_CONFIG_INITIALIZER;
  (void)t;
  cfg.magic = 0;
  memset(&id, 0, sizeof(id));
  return tpudistCommInitRankConfig(&x, 2, id, 0, &cfg);
}
static tpudistResult_t bSplitColor(tdBad *t) {
  tpudistComm_t x;
  return tpudistCommSplit(t->c, -5, 0, &x, NULL);
}
static tpudistResult_t bSplitNull(tdBad *t) {
  return tpudistCommSplit(t->c, 0, 0, NULL, NULL);
}
static tpudistResult_t bShrinkNull(tdBad *t) {
  return tpudistCommShrink(t->c, NULL, 0, NULL, NULL, TPUDIST_SHRINK_DEFAULT);
}
static tpudistResult_t bShrinkFlags(tdBad *t) {
  tpudistComm_t x;
  return tpudistCommShrink(t->c, NULL, 0, &x, NULL, 7);
}
static tpudistResult_t bShrinkSelf(tdBad *t) {
  tpudistComm_t x;
  return tpudistCommShrink(t->c, &t->rank, 1, &x, NULL, TPUDIST_SHRINK_DEFAULT);
}
static tpudistResult_t bShrinkRange(tdBad *t) {
  tpudistComm_t x;
  int bad = t->n;
  return tpudistCommShrink(t->c, &bad, 1, &x, NULL, TPUDIST_SHRINK_ABORT);
}
static tpudistResult_t bShrinkCount(tdBad *t) {
  tpudistComm_t x;
  return tpudistCommShrink(t->c, NULL, 2, &x, NULL, TPUDIST_SHRINK_DEFAULT);
}
static tpudistResult_t bRevokeNull(tdBad *t) {
  (void)t;
  return tpudistCommRevoke(NULL);
}
static tpudistResult_t bFailedNull(tdBad *t) {
  return tpudistCommGetFailedRanks(t->c, NULL, NULL);
}
static tpudistResult_t bFailedRoom(tdBad *t) {
  int n = 4;
  return tpudistCommGetFailedRanks(t->c, NULL, &n);
}
static tpudistResult_t bSplitInGroup(tdBad *t) {
  tpudistComm_t x;
  tpudistGroupStart();
  tpudistResult_t r = tpudistCommSplit(t->c, 0, 0, &x, NULL);
  tpudistGroupEnd();
  return r;
}
static tpudistResult_t bDestroyInGroup(tdBad *t) {
  tpudistGroupStart();
  tpudistResult_t r = tpudistCommDestroy(t->c);
  tpudistGroupEnd();
  return r;
}
static tpudistResult_t bGroupEnd(tdBad *t) {
  (void)t;
  return tpudistGroupEnd();
}
/* Wait inside the group on a request the group has not issued; GroupEnd then issues it. */
static tpudistResult_t bWaitInGroup(tdBad *t) {
  tpudistRequest_t req = NULL;
  tpudistGroupStart();
  tpudistAllReduce(t->a, t->b, 4, tpudistInt32, tpudistSum, t->c, &req);
  tpudistResult_t r = tpudistWait(req);
  tpudistResult_t e = tpudistGroupEnd();
  if (e == tpudistSuccess && req) e = tpudistWait(req);
  if (e != tpudistSuccess) return tpudistInternalError;
  return r;
}
static tpudistResult_t bWaitTwice(tdBad *t) {
  tpudistRequest_t req = NULL;
  if (tpudistAllReduce(t->a, t->b, 4, tpudistInt32, tpudistSum, t->c, &req) != tpudistSuccess ||
      tpudistWait(req) != tpudistSuccess)
    return tpudistInternalError;
  return tpudistWait(req);
}
static tpudistResult_t bSourceOfSend(tdBad *t) {
  tpudistRequest_t s = NULL;
  int src;
  if (tpudistSend(t->a, 4, tpudistInt32, t->rank, t->c, &s) != tpudistSuccess)
    return tpudistInternalError;
  tpudistResult_t r = tpudistRequestSource(s, &src);
  if (tpudistRecv(t->b, 4, tpudistInt32, t->rank, t->c, NULL) != tpudistSuccess ||
      tpudistWait(s) != tpudistSuccess)
    return tpudistInternalError;
  return r;
}
static tpudistResult_t bAfterDestroy(tdBad *t) {
  tpudistComm_t x = NULL;
  if (tpudistCommSplit(t->c, 0, t->rank, &x, NULL) != tpudistSuccess ||
      tpudistCommDestroy(x) != tpudistSuccess)
    return tpudistInternalError;
  return tpudistAllReduce(t->a, t->b, 4, tpudistInt32, tpudistSum, x, NULL);
}
static tpudistResult_t bDestroyTwice(tdBad *t) {
  tpudistComm_t x = NULL;
  if (tpudistCommSplit(t->c, 0, t->rank, &x, NULL) != tpudistSuccess ||
      tpudistCommDestroy(x) != tpudistSuccess)
    return tpudistInternalError;
  return tpudistCommDestroy(x);
}
static tpudistResult_t bAfterAbort(tdBad *t) {
  tpudistComm_t x = NULL;
  if (tpudistCommSplit(t->c, t->rank, 0, &x, NULL) != tpudistSuccess ||
      tpudistCommAbort(x) != tpudistSuccess)
    return tpudistInternalError;
  return tpudistBroadcast(t->a, t->b, 4, tpudistInt32, 0, x, NULL);
}
static tpudistResult_t bZeroCount(tdBad *t) {
  return tpudistAllReduce(NULL, NULL, 0, tpudistInt32, tpudistSum, t->c, NULL);
}

typedef struct {
  const char *what;
  tpudistResult_t (*fn)(tdBad *);
  tpudistResult_t code;
  const char *msg;   /* must appear in tpudistGetLastError */
  int msg_from_null; /* message read with tpudistGetLastError(NULL) */
} tdBadRow;

static const tdBadRow kBadRows[] = {
    {"null sendbuff", bNullSend, tpudistInvalidArgument, "AllReduce: sendbuff is NULL", 0},
    {"null recvbuff", bNullRecv, tpudistInvalidArgument, "AllReduce: recvbuff is NULL", 0},
    {"null comm", bNullComm, tpudistInvalidArgument, "AllReduce: comm is NULL", 1},
    {"count x size overflow", bOverflow, tpudistInvalidArgument, "overflows", 0},
    {"count x size x nranks overflow", bOverflowGather, tpudistInvalidArgument, "overflows", 0},
    {"p2p count overflow", bOverflowSend, tpudistInvalidArgument, "Send: count", 0},
    {"unknown datatype", bDtype, tpudistInvalidArgument, "unknown datatype 42", 0},
    {"negative datatype", bDtypeNeg, tpudistInvalidArgument, "unknown datatype -1", 0},
    {"unknown op", bOp, tpudistInvalidArgument, "unknown reduction op 9", 0},
    {"negative op", bOpReduce, tpudistInvalidArgument, "unknown reduction op -1", 0},
    {"root too high", bRootHigh, tpudistInvalidArgument, "out of range", 0},
    {"root negative", bRootNeg, tpudistInvalidArgument, "root -1 out of range", 0},
    {"peer too high", bPeerHigh, tpudistInvalidArgument, "Send: peer", 0},
    {"peer negative", bPeerNeg, tpudistInvalidArgument, "Recv: peer -2 out of range", 0},
    {"p2p null buffer", bP2pNull, tpudistInvalidArgument, "Send: buffer is NULL", 0},
    {"overlapping buffers", bOverlap, tpudistInvalidArgument, "overlap", 0},
    {"all-gather bad in-place", bOverlapGather, tpudistInvalidArgument, "in-place form", 0},
    {"reduce-scatter bad in-place", bOverlapScatter, tpudistInvalidArgument, "in-place form", 0},
    {"all-to-all in place", bAlltoallInplace, tpudistInvalidArgument, "overlap", 0},
    {"all-to-all-v null counts", bAlltoallvNull, tpudistInvalidArgument, "is NULL", 0},
    {"all-to-all-v null sendbuff", bAlltoallvBuf, tpudistInvalidArgument, "sendbuff is NULL", 0},
    {"counts exchange null", bCountsNull, tpudistInvalidArgument, "recvcounts is NULL", 1},
    {"broadcast null recvbuff", bBcastRecvNull, tpudistInvalidArgument, "recvbuff is NULL", 0},
    {"wait on NULL", bWaitNull, tpudistInvalidArgument, "Wait: request is NULL", 1},
    {"test on NULL", bTestNull, tpudistInvalidArgument, "Test: request is NULL", 1},
    {"count query NULL", bCountNull, tpudistInvalidArgument, "count is NULL", 0},
    {"rank query NULL", bRankNull, tpudistInvalidArgument, "rank is NULL", 0},
    {"async error NULL", bAsyncNull, tpudistInvalidArgument, "asyncError is NULL", 0},
    {"topology NULL", bTopoNull, tpudistInvalidArgument, "topology is NULL", 0},
    {"unique id NULL", bIdNull, tpudistInvalidArgument, "id is NULL", 1},
    {"init rank out of range", bInitRank, tpudistInvalidArgument, "rank 5 out of range", 1},
    {"init comm pointer NULL", bInitNull, tpudistInvalidArgument, "comm pointer is NULL", 1},
    {"init config not initialised", bInitConfig, tpudistInvalidArgument,
     "TPUDIST_CONFIG_INITIALIZER", 1},
    {"split bad color", bSplitColor, tpudistInvalidArgument, "color must be", 0},
    {"split newcomm NULL", bSplitNull, tpudistInvalidArgument, "newcomm is NULL", 0},
    {"split inside a group", bSplitInGroup, tpudistInvalidUsage, "not allowed inside a group", 0},
    {"shrink newcomm NULL", bShrinkNull, tpudistInvalidArgument, "newcomm is NULL", 0},
    {"shrink unknown flags", bShrinkFlags, tpudistInvalidArgument, "shrinkFlags 7", 0},
    {"shrink excluding the caller", bShrinkSelf, tpudistInvalidArgument, "lists this rank", 0},
    {"shrink exclude out of range", bShrinkRange, tpudistInvalidArgument, "out of range", 0},
    {"shrink count without a list", bShrinkCount, tpudistInvalidArgument, "excludeRanks NULL", 0},
    {"revoke NULL", bRevokeNull, tpudistInvalidArgument, "CommRevoke: comm is NULL", 1},
    {"failed ranks count NULL", bFailedNull, tpudistInvalidArgument, "count is NULL", 0},
    {"failed ranks room without ranks", bFailedRoom, tpudistInvalidArgument, "ranks is NULL", 0},
    {"destroy inside a group", bDestroyInGroup, tpudistInvalidUsage, "not allowed inside a group",
     0},
    {"GroupEnd without GroupStart", bGroupEnd, tpudistInvalidUsage, "without GroupStart", 1},
    {"wait inside the group", bWaitInGroup, tpudistInvalidUsage, "not issued yet", 0},
    {"wait twice", bWaitTwice, tpudistInvalidUsage, "not valid", 1},
    {"source of a send", bSourceOfSend, tpudistInvalidArgument, "not a receive request", 0},
    {"use after destroy", bAfterDestroy, tpudistInvalidUsage, "destroyed or is not valid", 1},
    {"destroy twice", bDestroyTwice, tpudistInvalidUsage, "destroyed or is not valid", 1},
    {"use after abort", bAfterAbort, tpudistInvalidUsage, "destroyed or is not valid", 1},
    {"count 0 with NULL buffers is valid", bZeroCount, tpudistSuccess, NULL, 0},
};

/* Runs every row; returns how many were checked (failures through FAIL). */
static int badargsRun(tpudistComm_t c, int rank, int n) {
  static int32_t a[1024], b[1024];
  tdBad t = {c, rank, n, a, b, NULL};
  int vals[64], nrows = (int)(sizeof(kBadRows) / sizeof(kBadRows[0]));
  for (int q = 0; q < n; q++) vals[q] = q + 1;
  for (int i = 0; i < nrows; i++) {
    const tdBadRow *row = &kBadRows[i];
    tpudistResult_t r = row->fn(&t);
    const char *msg = tpudistGetLastError(row->msg_from_null ? NULL : c);
    if (r != row->code)
      FAIL("%s: returned %d (%s), documented %d", row->what, r, tpudistGetErrorString(r),
           row->code);
    else if (row->msg && !strstr(msg, row->msg))
      FAIL("%s: message '%s' lacks '%s'", row->what, msg, row->msg);
    else if (rank == 0)
      printf("ok  %-32s %-24s %s\n", row->what, tpudistGetErrorString(r), row->msg ? msg : "");
    if (checkedAllReduce(c, rank + 1, n, vals, 1000, a, b) != tpudistSuccess)
      FAIL("%s: the next correct all-reduce failed: %s", row->what, tpudistGetLastError(c));
  }
  return nrows;
}
