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

/* Defined in comm.c. */
int commLiveRemove(tdComm *c);
void commDestroyNow(tdComm *c);

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

TPUDIST_API tpudistResult_t tpudistCommSplit(tpudistComm_t comm, int color, int key,
                                             tpudistComm_t *newcomm,
                                             const tpudistConfig_t *config) {
  char err[TD_ERRLEN] = "";
  tpudistResult_t r;
  TD_CHECK(commEnter(comm ? &comm->c : NULL, "CommSplit"));
  tdComm *c = &comm->c;
  if (groupActive()) {
    r = commError(c, tpudistInvalidUsage, "CommSplit: not allowed inside a group");
    goto out;
  }
  pthread_mutex_lock(&c->exec.lock);
  int broken = c->exec.broken;
  pthread_mutex_unlock(&c->exec.lock);
  if (broken) { /* its transports and listener are released: destroy it and create a new one */
    r = commError(c, tpudistInvalidUsage,
                  "CommSplit: the communicator has failed; destroy it and create a new one");
    goto out;
  }
  if (!newcomm || (color < 0 && color != TPUDIST_SPLIT_NOCOLOR)) {
    r = commError(c, tpudistInvalidArgument, "CommSplit: %s",
                  newcomm ? "color must be >= 0 or TPUDIST_SPLIT_NOCOLOR" : "newcomm is NULL");
    goto out;
  }
  int *ck = malloc(sizeof(int) * 3 * c->net.nranks);
  if (!ck) {
    r = commError(c, tpudistNoMemory, "CommSplit: out of memory");
    goto out;
  }
  ck[2 * c->net.rank] = color;
  ck[2 * c->net.rank + 1] = key;
  r = bootstrapAllGather(c->net.bootstrap, ck, 2 * sizeof(int), err);
  uint64_t sseq = c->split_seq++;
  if (r == tpudistSuccess && color == TPUDIST_SPLIT_NOCOLOR) {
    *newcomm = NULL;
  } else if (r == tpudistSuccess) {
    int *members = ck + 2 * c->net.nranks, me = 0;
    int n = splitMembers(ck, c->net.nranks, color, c->net.rank, members, &me);
    uint64_t tag = (sseq << 32) ^ (uint32_t)color;
    tdComm *nc = NULL;
    r = commSplitCreate(c, n, me, members, tag, 0, config, &nc, err);
    if (r == tpudistSuccess) *newcomm = (tpudistComm_t)nc;
  }
  free(ck);
  if (r != tpudistSuccess) r = commErrorMsg(c, r, err);
out:
  commLeave(c);
  return r;
}

TPUDIST_API tpudistResult_t tpudistCommDestroy(tpudistComm_t comm) {
  char err[TD_ERRLEN] = "";
  TD_CHECK(commEnter(comm ? &comm->c : NULL, "CommDestroy"));
  tdComm *c = &comm->c;
  if (groupActive()) {
    tpudistResult_t r =
        commError(c, tpudistInvalidUsage, "CommDestroy: not allowed inside a group");
    commLeave(c);
    return r;
  }
  /* An error seen before (a failed call, a timeout) was reported then; destroy still frees. */
  int was_broken = c->exec.broken;
  tpudistResult_t r = execDrain(&c->exec);
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
  c->net.aborted = 1;
  if (c->net.bootstrap) bootstrapAbort(c->net.bootstrap);
  execAbort(&c->exec, tpudistAborted);
  /* Every call inside the communicator sees aborted and leaves; then it can be freed. */
  struct timespec ts = {0, 100000};
  while (__atomic_load_n(&c->in_calls, __ATOMIC_SEQ_CST) > 0) nanosleep(&ts, NULL);
  commDestroyNow(c);
  return tpudistSuccess;
}

TPUDIST_API tpudistResult_t tpudistCommGetAsyncError(tpudistComm_t comm,
                                                     tpudistResult_t *asyncError) {
  TD_CHECK(commEnter(comm ? &comm->c : NULL, NULL));
  tdComm *c = &comm->c;
  tpudistResult_t r = tpudistSuccess;
  if (!asyncError) {
    r = commError(c, tpudistInvalidArgument, "CommGetAsyncError: asyncError is NULL");
  } else {
    pthread_mutex_lock(&c->exec.lock);
    *asyncError = c->net.aborted ? tpudistAborted : c->exec.async_error;
    pthread_mutex_unlock(&c->exec.lock);
  }
  commLeave(c);
  return r;
}

TPUDIST_API tpudistResult_t tpudistCommCount(const tpudistComm_t comm, int *count) {
  TD_CHECK(commEnter(comm ? &comm->c : NULL, "CommCount"));
  tpudistResult_t r = tpudistSuccess;
  if (!count)
    r = commError(&comm->c, tpudistInvalidArgument, "CommCount: count is NULL");
  else
    *count = comm->c.net.nranks;
  commLeave(&comm->c);
  return r;
}

TPUDIST_API tpudistResult_t tpudistCommUserRank(const tpudistComm_t comm, int *rank) {
  TD_CHECK(commEnter(comm ? &comm->c : NULL, "CommUserRank"));
  tpudistResult_t r = tpudistSuccess;
  if (!rank)
    r = commError(&comm->c, tpudistInvalidArgument, "CommUserRank: rank is NULL");
  else
    *rank = comm->c.net.rank;
  commLeave(&comm->c);
  return r;
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
