/*
 * comm_live.c - the registry of live communicators that every API call checks on entry (use
 * after destroy is an error, not a crash), the count of calls in progress on each, and the abort
 * of a parent's children. A leaf of src/core: it calls nothing else of it.
 */
#include <pthread.h>

#include "comm.h"

static pthread_mutex_t gLiveLock = PTHREAD_MUTEX_INITIALIZER;
static tdComm **gLive;
static int gNLive;
static size_t gLiveCap;

static int liveIndex(const tdComm *c) {
  for (int i = 0; i < gNLive; i++)
    if (gLive[i] == c) return i;
  return -1;
}

tpudistResult_t commLiveAdd(tdComm *c) {
  pthread_mutex_lock(&gLiveLock);
  if (tdGrow(&gLive, &gLiveCap, (size_t)gNLive + 1, sizeof(*gLive), 16)) {
    pthread_mutex_unlock(&gLiveLock);
    return tpudistNoMemory;
  }
  gLive[gNLive++] = c;
  pthread_mutex_unlock(&gLiveLock);
  return tpudistSuccess;
}

int commLiveRemove(tdComm *c) {
  pthread_mutex_lock(&gLiveLock);
  int i = liveIndex(c);
  if (i >= 0) gLive[i] = gLive[--gNLive];
  pthread_mutex_unlock(&gLiveLock);
  return i >= 0;
}

static tpudistResult_t enter(tdComm *comm, const char *fn, int any_state) {
  if (!comm)
    return fn ? commError(NULL, tpudistInvalidArgument, "%s: comm is NULL", fn)
              : tpudistInvalidArgument;
  pthread_mutex_lock(&gLiveLock);
  int found = liveIndex(comm) >= 0;
  if (found) __atomic_add_fetch(&comm->in_calls, 1, __ATOMIC_SEQ_CST);
  pthread_mutex_unlock(&gLiveLock);
  if (!found)
    return fn ? commError(NULL, tpudistInvalidUsage,
                          "%s: communicator %p was destroyed or is not valid", fn, (void *)comm)
              : tpudistInvalidUsage;
  if (!fn) return tpudistSuccess;
  int state = __atomic_load_n(&comm->create_state, __ATOMIC_ACQUIRE);
  tpudistResult_t r = tpudistSuccess;
  if (comm->net.aborted && !any_state) /* a split aborted with its parent can be destroyed */
    r = commError(NULL, tpudistAborted, "%s: communicator %p was aborted", fn, (void *)comm);
  else if (!any_state && state == tpudistInProgress)
    r = commError(NULL, tpudistInvalidUsage,
                  "%s: communicator %p is still being created (non-blocking): poll "
                  "tpudistCommGetAsyncError until it gives tpudistSuccess",
                  fn, (void *)comm);
  else if (!any_state && state != tpudistSuccess)
    r = commError(NULL, (tpudistResult_t)state, "%s: the creation of communicator %p failed: %s",
                  fn, (void *)comm, comm->net.err.msg);
  if (r != tpudistSuccess) commLeave(comm);
  return r;
}

tpudistResult_t commEnter(tdComm *comm, const char *fn) {
  return enter(comm, fn, 0);
}

tpudistResult_t commEnterAnyState(tdComm *comm, const char *fn) {
  return enter(comm, fn, 1);
}

void commAbortChildren(tdComm *parent) {
  pthread_mutex_lock(&gLiveLock);
  for (int i = 0; i < gNLive; i++)
    if (gLive[i]->parent == parent) gLive[i]->net.aborted = 1;
  pthread_mutex_unlock(&gLiveLock);
}

void commLeave(tdComm *comm) {
  __atomic_sub_fetch(&comm->in_calls, 1, __ATOMIC_SEQ_CST);
}
