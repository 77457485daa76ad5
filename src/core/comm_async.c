/*
 * comm_async.c - creating communicators, blocking or in the background (config.blocking = 0, as
 * NCCL's non-blocking communicators). commCreate is the one way a communicator comes to exist:
 * init and split hand it a creation job (a function that builds the communicator's bootstrap,
 * transports and executor) and it runs the job on the caller's thread, or on a helper thread
 * that publishes the result in create_state, which tpudistCommGetAsyncError reports.
 *
 * While the job runs, the handle is live (GetAsyncError, GetLastError, Destroy and Abort accept
 * it) and every other call is refused (commEnter). Every wait of a job polls c->net.aborted
 * (the bootstrap channel watches it; its waits poll in slices of at most 20 ms), so
 * tpudistCommAbort sets the flag, joins the helper thread and frees what the job built. A job
 * that fails releases what it built before its failure is published: a failed creation holds no
 * socket, segment or thread. A split's job runs over its parent's bootstrap channel: the parent
 * is held (a call in progress, async_children) until the job ends, and aborting the parent aborts
 * the job (commAbortChildren). commDestroyNow, the end of every communicator, joins its job first.
 */
#include <stdlib.h>
#include <string.h>

#include "comm.h"
#include "rt_log.h"

struct tdCreate {
  tdCreateJob job;
  void *arg;
  int has_config;
  tpudistConfig_t config; /* the caller's, with commName and topology copied */
  char *name, *topology;
  pthread_t thread;
  int joinable; /* 1 until the helper thread is joined */
};

static void createFree(struct tdCreate *cr) {
  if (!cr) return;
  free(cr->arg);
  free(cr->name);
  free(cr->topology);
  free(cr);
}

/* A copy of the caller's config that outlives the call (its strings included). */
static tpudistResult_t copyConfig(struct tdCreate *cr, const tpudistConfig_t *uc) {
  if (!uc) return tpudistSuccess;
  cr->has_config = 1;
  cr->config = (tpudistConfig_t)TPUDIST_CONFIG_INITIALIZER;
  memcpy(&cr->config, uc, TD_MIN(uc->size, sizeof(cr->config)));
  cr->config.size = TD_MIN(uc->size, sizeof(cr->config));
  if (TD_CONFIG_HAS(uc, commName) && uc->commName &&
      !(cr->config.commName = cr->name = strdup(uc->commName)))
    return tpudistNoMemory;
  if (TD_CONFIG_HAS(uc, topology) && uc->topology &&
      !(cr->config.topology = cr->topology = strdup(uc->topology)))
    return tpudistNoMemory;
  return tpudistSuccess;
}

/* Releases the hold on the parent taken by commCreate. */
static void releaseParent(tdComm *c) {
  tdComm *p = c->parent;
  if (!p) return;
  __atomic_store_n(&c->parent, NULL, __ATOMIC_SEQ_CST);
  __atomic_sub_fetch(&p->async_children, 1, __ATOMIC_SEQ_CST);
  commLeave(p);
}

static void *createMain(void *arg) {
  tdComm *c = arg;
  struct tdCreate *cr = c->create;
  char err[TD_ERRLEN] = "";
  tpudistResult_t r = cr->job(c, cr->has_config ? &cr->config : NULL, cr->arg, err);
  if (r != tpudistSuccess) {
    commRelease(c);
    errRecord(&c->net.err, TD_SUBSYS_INIT, r, err[0] ? err : tpudistGetErrorString(r));
  }
  releaseParent(c);
  TD_INFO(TD_SUBSYS_INIT, "non-blocking creation of %p: %s", (void *)c, tpudistGetErrorString(r));
  __atomic_store_n(&c->create_state, (int)r, __ATOMIC_RELEASE);
  return NULL;
}

static tpudistResult_t createBlocking(tdComm *c, const tpudistConfig_t *uc, tdCreateJob job,
                                      void *arg, tpudistComm_t *out) {
  char err[TD_ERRLEN] = "";
  tpudistResult_t r = job(c, uc, arg, err);
  free(arg);
  if (r == tpudistSuccess && commLiveAdd(c) != tpudistSuccess)
    r = tdErr(err, tpudistNoMemory, "out of memory for the communicator registry");
  tdComm *p = c->parent;
  c->parent = NULL;
  if (r != tpudistSuccess) {
    commDestroyNow(c);
    return commErrorMsg(p, r, err);
  }
  *out = (tpudistComm_t)c;
  return tpudistSuccess;
}

tpudistResult_t commCreate(tdComm *c, int blocking, const tpudistConfig_t *uc, tdCreateJob job,
                           void *arg, const char *fn, tpudistComm_t *out) {
  c->blocking = blocking;
  if (blocking) return createBlocking(c, uc, job, arg, out);
  tdComm *p = c->parent;
  struct tdCreate *cr = calloc(1, sizeof(*cr));
  tpudistResult_t r = cr ? copyConfig(cr, uc) : tpudistNoMemory;
  if (cr) cr->job = job, cr->arg = arg;
  if (r == tpudistSuccess) {
    c->create = cr;
    c->create_state = tpudistInProgress;
    r = commLiveAdd(c);
  }
  if (r != tpudistSuccess) {
    c->create = NULL;
    if (cr)
      createFree(cr);
    else
      free(arg);
    c->parent = NULL;
    commDestroyNow(c);
    return commError(p, r, "%s: out of memory", fn);
  }
  if (p) { /* held until the job ends; released by releaseParent */
    __atomic_add_fetch(&p->in_calls, 1, __ATOMIC_SEQ_CST);
    __atomic_add_fetch(&p->async_children, 1, __ATOMIC_SEQ_CST);
  }
  int rc = pthread_create(&cr->thread, NULL, createMain, c);
  if (rc != 0) {
    releaseParent(c);
    commLiveRemove(c);
    commDestroyNow(c); /* frees cr too (commCreateJoin) */
    return commError(p, tpudistSystemError, "%s: pthread_create: %s", fn, strerror(rc));
  }
  cr->joinable = 1;
  *out = (tpudistComm_t)c;
  return tpudistInProgress;
}

void commCreateJoin(tdComm *c) {
  struct tdCreate *cr = c->create;
  if (!cr) return;
  if (__atomic_exchange_n(&cr->joinable, 0, __ATOMIC_SEQ_CST)) pthread_join(cr->thread, NULL);
  c->create = NULL;
  createFree(cr);
}

void commDestroyNow(tdComm *c) {
  commCreateJoin(c);
  commRelease(c);
  free(c);
}
