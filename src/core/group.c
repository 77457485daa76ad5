/*
 * group.c - tpudistGroupStart/End. Calls inside a group are collected per thread; GroupEnd issues
 * each communicator's calls together as one batch (they run concurrently, so dependent sends and
 * receives cannot deadlock), then blocks until those issued with a NULL request are done (in debug
 * mode, every collective of the group).
 * Groups nest; only the outermost GroupEnd issues.
 */
#include <stdlib.h>

#include "comm.h"

typedef struct {
  tdOp *op;
  int release; /* a NULL request: GroupEnd waits for op and releases it */
  int at_call; /* op completes before GroupEnd returns (debug mode's collectives) */
  int issued;
} tdGroupItem;

static __thread int tlsDepth;
static __thread tdGroupItem *tlsItems;
static __thread int tlsN, tlsCap;
static __thread tdOp **tlsBatch;
static __thread int tlsBatchCap;

int groupActive(void) {
  return tlsDepth > 0;
}

tpudistResult_t groupAdd(tdOp *op, int release, int at_call) {
  if (tlsN == tlsCap) {
    int cap = tlsCap ? 2 * tlsCap : 32;
    tdGroupItem *n = realloc(tlsItems, sizeof(*n) * cap);
    tdOp **b = realloc(tlsBatch, sizeof(*b) * cap);
    if (b) {
      tlsBatch = b;
      tlsBatchCap = cap;
    }
    if (!n || !b) return commError(commOfOp(op), tpudistNoMemory, "group: out of memory");
    tlsItems = n;
    tlsCap = cap;
  }
  tlsItems[tlsN].op = op;
  tlsItems[tlsN].release = release;
  tlsItems[tlsN].at_call = at_call;
  tlsItems[tlsN].issued = 0;
  tlsN++;
  return tpudistSuccess;
}

TPUDIST_API tpudistResult_t tpudistGroupStart(void) {
  tlsDepth++;
  return tpudistSuccess;
}

/* Queues the collected operations, one batch per communicator, in call order. */
static void groupIssue(void) {
  /* With several communicators the waits below go one communicator at a time: let the progress
   * threads drive the others meanwhile (their operations may depend on each other's). */
  int multi = 0;
  for (int i = 1; i < tlsN && !multi; i++)
    multi = commOfOp(tlsItems[i].op) != commOfOp(tlsItems[0].op);
  for (int i = 0; i < tlsN; i++) {
    if (tlsItems[i].issued) continue;
    tdComm *comm = commOfOp(tlsItems[i].op);
    int n = 0, wait = 0;
    for (int j = i; j < tlsN; j++) {
      if (!tlsItems[j].issued && commOfOp(tlsItems[j].op) == comm) {
        tlsBatch[n++] = tlsItems[j].op;
        tlsItems[j].issued = 1;
        wait |= tlsItems[j].release;
      }
    }
    if (commEnter(comm, NULL) != tpudistSuccess) continue;
    if (comm->mode == TPUDIST_MODE_DEFER)
      deferFlush(comm, TD_FLUSH_GROUP); /* deferred ones first */
    execEnqueue(&comm->exec, tlsBatch, n, wait && !multi);
    commLeave(comm);
  }
}

TPUDIST_API tpudistResult_t tpudistGroupEnd(void) {
  if (tlsDepth == 0) return commError(NULL, tpudistInvalidUsage, "GroupEnd without GroupStart");
  if (--tlsDepth > 0) return tpudistSuccess;
  groupIssue();
  int n = tlsN;
  tlsN = 0;
  tpudistResult_t res = tpudistSuccess;
  for (int i = 0; i < n; i++) {
    tdOp *op = tlsItems[i].op;
    int release = tlsItems[i].release;
    if (!release && !tlsItems[i].at_call) continue;
    if (commEnter(commOfOp(op), "GroupEnd") != tpudistSuccess) {
      if (res == tpudistSuccess) res = tpudistAborted;
      continue;
    }
    tdComm *comm = commOfOp(op);
    tpudistResult_t r = execWait(op);
    if (r != tpudistSuccess && res == tpudistSuccess) res = r;
    if (release) execOpRelease(op);
    commLeave(comm);
  }
  return res;
}
