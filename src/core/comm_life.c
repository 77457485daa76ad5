/*
 * comm_life.c - the rest of a communicator's life: split (MPI_Comm_split semantics over the
 * parent's bootstrap channel), destroy (completes outstanding work first), abort (from any
 * thread: wakes every wait, then frees), and the queries.
 */
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bootstrap.h"
#include "comm.h"
#include "rt_log.h"

/* Members with color, ordered by (key, old rank); returns their count and this rank's index. */
static int splitMembers(const int *ck, int nranks, int color, int rank, int *members, int *me) {
  int n = 0;
  for (int r = 0; r < nranks; r++) {
    if (ck[2 * r] != color) continue;
    int key = ck[2 * r + 1], i = n++;
    while (i > 0 && ck[2 * members[i - 1] + 1] > key) {
      members[i] = members[i - 1];
      i--;
    }
    members[i] = r;
  }
  for (int i = 0; i < n; i++)
    if (members[i] == rank) *me = i;
  return n;
}

/* The color/key exchange of a split over parent's bootstrap: the members of color (parent
 * ranks, in new rank order) into members, their count into *n and this rank's index into *me. */
static tpudistResult_t splitExchange(tdComm *parent, int color, int key, volatile int *abort,
                                     int *members, int *n, int *me, char *err) {
  int *ck = malloc(sizeof(int) * 2 * parent->net.nranks);
  if (!ck) return tdErr(err, tpudistNoMemory, "CommSplit: out of memory");
  ck[2 * parent->net.rank] = color;
  ck[2 * parent->net.rank + 1] = key;
  tpudistResult_t r =
      bootstrapAllGatherWatch(parent->net.bootstrap, ck, 2 * sizeof(int), abort, err);
  if (r == tpudistSuccess)
    *n = splitMembers(ck, parent->net.nranks, color, parent->net.rank, members, me);
  free(ck);
  return r;
}

typedef struct {
  int color, key;
  uint64_t tag;
} tdSplitArgs;

/* The creation job of a split (commCreate): exchange, then the child's channel and setup. */
static tpudistResult_t splitJob(tdComm *nc, const tpudistConfig_t *uc, void *arg, char *err) {
  tdSplitArgs *a = arg;
  tdComm *p = nc->parent;
  int *members = malloc(sizeof(int) * p->net.nranks), n = 0, me = 0;
  if (!members) return tdErr(err, tpudistNoMemory, "CommSplit: out of memory");
  /* blocking: the parent's flag (CommAbort of the parent stops it); else the child's, which
   * aborting the parent sets too (commAbortChildren) */
  volatile int *abort = nc->blocking ? NULL : &nc->net.aborted;
  tpudistResult_t r = splitExchange(p, a->color, a->key, abort, members, &n, &me, err);
  if (r == tpudistSuccess) {
    nc->net.nranks = n;
    nc->net.rank = me;
    netNameErrors(&nc->net);
    r = commSplitCreate(p, nc, members, a->tag, uc, err);
  }
  free(members);
  return r;
}

/* Why c cannot be split now (NULL: it can). */
static const char *splitRefusal(tdComm *c) {
  pthread_mutex_lock(&c->exec.lock);
  int broken = c->exec.broken;
  pthread_mutex_unlock(&c->exec.lock);
  if (broken) /* its transports and listener are released: destroy it and create a new one */
    return "the communicator has failed; destroy it and create a new one";
  if (__atomic_load_n(&c->async_children, __ATOMIC_SEQ_CST))
    return "a non-blocking CommSplit of this communicator is still in progress (poll it with "
           "tpudistCommGetAsyncError first)";
  return NULL;
}

static tpudistResult_t splitChecked(tdComm *c, int color, int key, tpudistComm_t *newcomm,
                                    const tpudistConfig_t *config) {
  char err[TD_ERRLEN] = "";
  uint64_t sseq = c->split_seq++;
  if (color == TPUDIST_SPLIT_NOCOLOR) { /* no child: takes part in the exchange at the call */
    int *members = malloc(sizeof(int) * c->net.nranks), n, me;
    tpudistResult_t r = members ? splitExchange(c, color, key, NULL, members, &n, &me, err)
                                : tdErr(err, tpudistNoMemory, "CommSplit: out of memory");
    free(members);
    if (r != tpudistSuccess) return commErrorMsg(c, r, err);
    *newcomm = NULL;
    return tpudistSuccess;
  }
  tdSplitArgs *a = malloc(sizeof(*a));
  tdComm *nc = commAlloc(0, 0);
  if (!a || !nc) {
    free(a);
    free(nc);
    return commError(c, tpudistNoMemory, "CommSplit: out of memory");
  }
  *a = (tdSplitArgs){color, key, (sseq << 32) ^ (uint32_t)color};
  nc->net.timeout_ms =
      commConfigTimeout(config) ? commConfigTimeout(config) : netTimeoutMs(&c->net);
  nc->parent = c;
  return commCreate(nc, !commConfigNonBlocking(config, c), config, splitJob, a, "CommSplit",
                    newcomm);
}

TPUDIST_API tpudistResult_t tpudistCommSplit(tpudistComm_t comm, int color, int key,
                                             tpudistComm_t *newcomm,
                                             const tpudistConfig_t *config) {
  char err[TD_ERRLEN] = "";
  tpudistResult_t r;
  TD_CHECK(commEnter(comm ? &comm->c : NULL, "CommSplit"));
  tdComm *c = &comm->c;
  const char *why = NULL;
  if (groupActive())
    r = commError(c, tpudistInvalidUsage, "CommSplit: not allowed inside a group");
  else if ((why = splitRefusal(c)) != NULL)
    r = commError(c, tpudistInvalidUsage, "CommSplit: %s", why);
  else if (!newcomm || (color < 0 && color != TPUDIST_SPLIT_NOCOLOR))
    r = commError(c, tpudistInvalidArgument, "CommSplit: %s",
                  newcomm ? "color must be >= 0 or TPUDIST_SPLIT_NOCOLOR" : "newcomm is NULL");
  else if ((r = commCheckConfig(config, err)) != tpudistSuccess)
    r = commErrorMsg(c, r, err);
  else
    r = splitChecked(c, color, key, newcomm, config);
  commLeave(c);
  return r;
}

/* Destroy of a communicator whose creation is running (waited for: it is bounded by the timeout)
 * or failed: nothing to complete, only to free. */
static tpudistResult_t destroyUncreated(tdComm *c) {
  commCreateJoin(c);
  if (__atomic_load_n(&c->create_state, __ATOMIC_ACQUIRE) == tpudistSuccess)
    return tpudistInProgress;
  commLeave(c);
  if (commLiveRemove(c)) commDestroyNow(c);
  return tpudistSuccess;
}

TPUDIST_API tpudistResult_t tpudistCommDestroy(tpudistComm_t comm) {
  char err[TD_ERRLEN] = "";
  TD_CHECK(commEnterAnyState(comm ? &comm->c : NULL, "CommDestroy"));
  tdComm *c = &comm->c;
  tpudistResult_t r = tpudistSuccess;
  if (groupActive())
    r = commError(c, tpudistInvalidUsage, "CommDestroy: not allowed inside a group");
  else if (__atomic_load_n(&c->async_children, __ATOMIC_SEQ_CST))
    r = commError(c, tpudistInvalidUsage,
                  "CommDestroy: a non-blocking CommSplit of this communicator is still in progress "
                  "(poll it with tpudistCommGetAsyncError, or abort it, first)");
  if (r != tpudistSuccess) {
    commLeave(c);
    return r;
  }
  if ((c->create || __atomic_load_n(&c->create_state, __ATOMIC_ACQUIRE) != tpudistSuccess) &&
      (r = destroyUncreated(c)) != tpudistInProgress)
    return r;
  /* An error seen before (a failed call, a timeout) was reported then; destroy still frees. */
  int was_broken = c->exec.broken;
  if (c->mode == TPUDIST_MODE_DEFER) deferFlush(c, TD_FLUSH_DESTROY);
  r = execDrain(&c->exec);
  if (was_broken) r = tpudistSuccess;
  /* Every rank is done with its traffic before transports go away. */
  if (r == tpudistSuccess && !c->exec.broken && c->net.nranks > 1) {
    tpudistResult_t b = bootstrapBarrier(c->net.bootstrap, err);
    if (b != tpudistSuccess) r = commErrorMsg(c, b, err);
  }
  commLeave(c);
  if (!commLiveRemove(c)) return tpudistSuccess; /* aborted meanwhile by another thread */
  commDestroyNow(c);
  return r;
}

TPUDIST_API tpudistResult_t tpudistCommAbort(tpudistComm_t comm) {
  if (!comm) return commError(NULL, tpudistInvalidArgument, "CommAbort: comm is NULL");
  tdComm *c = &comm->c;
  if (!commLiveRemove(c))
    return commError(NULL, tpudistInvalidUsage,
                     "CommAbort: communicator %p was destroyed or is not valid", (void *)c);
  c->net.aborted = 1; /* a creation job's waits poll it */
  commAbortChildren(c);
  if (__atomic_load_n(&c->create_state, __ATOMIC_ACQUIRE) == tpudistSuccess) {
    if (c->net.bootstrap) bootstrapAbort(c->net.bootstrap);
    execAbort(&c->exec, tpudistAborted);
  }
  /* Every call inside the communicator sees aborted and leaves; then it can be freed. */
  struct timespec ts = {0, 100000};
  while (__atomic_load_n(&c->in_calls, __ATOMIC_SEQ_CST) > 0) nanosleep(&ts, NULL);
  commDestroyNow(c); /* joins a creation job first */
  return tpudistSuccess;
}

TPUDIST_API tpudistResult_t tpudistCommGetAsyncError(tpudistComm_t comm,
                                                     tpudistResult_t *asyncError) {
  TD_CHECK(commEnter(comm ? &comm->c : NULL, NULL));
  tdComm *c = &comm->c;
  tpudistResult_t r = tpudistSuccess;
  int state = __atomic_load_n(&c->create_state, __ATOMIC_ACQUIRE);
  if (!asyncError) {
    r = commError(c, tpudistInvalidArgument, "CommGetAsyncError: asyncError is NULL");
  } else if (c->net.aborted) {
    *asyncError = tpudistAborted;
  } else if (state != tpudistSuccess) {
    if (state != tpudistInProgress) commCreateJoin(c);
    *asyncError = (tpudistResult_t)state;
  } else {
    commCreateJoin(c); /* the thread of a finished creation */
    pthread_mutex_lock(&c->exec.lock);
    *asyncError = c->exec.async_error;
    pthread_mutex_unlock(&c->exec.lock);
  }
  commLeave(c);
  return r;
}

/* *out = the communicator's rank count (count != 0) or this rank, for the call named call. */
static tpudistResult_t commIntQuery(const tpudistComm_t comm, int *out, int count, const char *call,
                                    const char *what) {
  TD_CHECK(commEnter(comm ? &comm->c : NULL, call));
  tpudistResult_t r = tpudistSuccess;
  if (!out)
    r = commError(&comm->c, tpudistInvalidArgument, "%s: %s is NULL", call, what);
  else
    *out = count ? comm->c.net.nranks : comm->c.net.rank;
  commLeave(&comm->c);
  return r;
}

TPUDIST_API tpudistResult_t tpudistCommSetTimeout(tpudistComm_t comm, int timeoutMs) {
  TD_CHECK(commEnter(comm ? &comm->c : NULL, "CommSetTimeout"));
  tpudistResult_t r = tpudistSuccess;
  if (timeoutMs <= 0)
    r = commError(&comm->c, tpudistInvalidArgument, "CommSetTimeout: timeout %d ms is not positive",
                  timeoutMs);
  else
    __atomic_store_n(&comm->c.net.timeout_ms, timeoutMs, __ATOMIC_RELAXED);
  commLeave(&comm->c);
  return r;
}

TPUDIST_API tpudistResult_t tpudistCommCount(const tpudistComm_t comm, int *count) {
  return commIntQuery(comm, count, 1, "CommCount", "count");
}

TPUDIST_API tpudistResult_t tpudistCommUserRank(const tpudistComm_t comm, int *rank) {
  return commIntQuery(comm, rank, 0, "CommUserRank", "rank");
}

TPUDIST_API tpudistResult_t tpudistCommTopology(const tpudistComm_t comm,
                                                tpudistTopology_t *topology) {
  TD_CHECK(commEnter(comm ? &comm->c : NULL, "CommTopology"));
  tdComm *c = &comm->c;
  tpudistResult_t r = tpudistSuccess;
  if (!topology) {
    r = commError(c, tpudistInvalidArgument, "CommTopology: topology is NULL");
  } else {
    tpudistTopology_t t;
    memset(&t, 0, sizeof(t));
    t.ndims = c->topo.ndims;
    int coords[TD_MAX_DIMS] = {0};
    if (t.ndims > 0) topoRankToCoords(&c->topo, c->net.rank, coords);
    for (int i = 0; i < TPUDIST_MAX_DIMS && i < TD_MAX_DIMS; i++) {
      t.dims[i] = i < t.ndims ? c->topo.dims[i] : 1;
      t.wrap[i] = i < t.ndims ? c->topo.wrap[i] : 0;
      t.coords[i] = coords[i];
    }
    t.twisted = c->topo.twisted;
    uint64_t *seen = malloc(sizeof(uint64_t) * c->net.nranks);
    int nh = 0;
    for (int p = 0; seen && p < c->net.nranks; p++) {
      int dup = 0;
      for (int i = 0; i < nh && !dup; i++) dup = seen[i] == c->net.peers[p].host_hash;
      if (!dup) seen[nh++] = c->net.peers[p].host_hash;
    }
    free(seen);
    t.nhosts = nh ? nh : 1;
    *topology = t;
  }
  commLeave(c);
  return r;
}
