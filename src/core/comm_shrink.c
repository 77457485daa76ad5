/*
 * comm_shrink.c - fault tolerance: tpudistCommShrink (the survivors form a new communicator over
 * the old one's bootstrap channel, no new rendezvous), tpudistCommRevoke (fail everything, keep
 * the resources) and tpudistCommGetFailedRanks. Design in docs/reliability.md.
 *
 * Shrink: (1) pending work completes (DEFAULT) or is revoked (ABORT); (2) the members: all but
 * the given list, or all but the failed set agreed by bootstrapAgree (boot_agree.c), each rank
 * starting from the ranks it knows are gone (transportPeerGone); (3) the new communicator is a
 * split with the members at the agreement listeners (bootstrapShrinkSplit), under a tag derived
 * from the shrink sequence and the member list, so that ranks holding different lists never join
 * one rendezvous.
 *
 * Lineage: every shrink agrees and meets on the channel of the first communicator of its line
 * (the one not made by a shrink), in that channel's rank numbers, under that first shrink's
 * sequence number; a shrunk communicator keeps a copy of that channel (tdLineage). The creation
 * in (3) is not atomic: when the new rank 0 dies while sending the peer exchange, the ranks it
 * reached have the new communicator (with a dead member: a later failure) and the others fail
 * and agree again. Because the former's next shrink agrees on the same channel under the same
 * sequence number as the latter's second attempt, they meet there and end with one membership.
 */
#include <stdlib.h>
#include <string.h>

#include "bootstrap.h"
#include "comm.h"
#include "registry.h"
#include "rt_clock.h"
#include "rt_log.h"

/* Fails every pending and later operation with tpudistAborted, then releases the transports (as
 * a failure does) so that peers waiting on this rank fail now instead of at their timeout. */
static void commRevokeNow(tdComm *c) {
  pthread_mutex_lock(&c->exec.lock);
  if (c->exec.async_error == tpudistSuccess) c->exec.async_error = tpudistAborted;
  pthread_mutex_unlock(&c->exec.lock);
  execAbort(&c->exec, tpudistAborted);
  pthread_mutex_lock(&c->exec.lock);
  transportReleaseAll(&c->net);
  pthread_mutex_unlock(&c->exec.lock);
}

#define TD_SHRINK_ATTEMPTS 2

/* The probe of the agreement: a rank of the line is certainly gone if it is not in c (an earlier
 * shrink excluded it) or its process is gone. */
typedef struct {
  tdComm *c;
  int *inv; /* rank of the line -> rank of c, or -1 */
} tdShrinkProbe;

static int shrinkPeerGone(void *ctx, int rank) {
  tdShrinkProbe *p = ctx;
  return p->inv[rank] < 0 || transportPeerGone(&p->c->net, p->inv[rank]);
}

/* Checks the arguments; on success failed[] (ranks of c) holds the explicit list (if any). */
static tpudistResult_t shrinkArgs(tdComm *c, const int *exclude, int count, tpudistComm_t *newcomm,
                                  int flags, uint8_t *failed) {
  if (groupActive())
    return commError(c, tpudistInvalidUsage, "CommShrink: not allowed inside a group");
  if (!newcomm) return commError(c, tpudistInvalidArgument, "CommShrink: newcomm is NULL");
  if (flags != TPUDIST_SHRINK_DEFAULT && flags != TPUDIST_SHRINK_ABORT)
    return commError(c, tpudistInvalidArgument,
                     "CommShrink: shrinkFlags %d is not TPUDIST_SHRINK_DEFAULT or "
                     "TPUDIST_SHRINK_ABORT",
                     flags);
  if (count < 0 || (count > 0 && !exclude) || count >= c->net.nranks)
    return commError(c, tpudistInvalidArgument,
                     "CommShrink: excludeCount %d with excludeRanks %s (communicator of %d ranks)",
                     count, exclude ? "set" : "NULL", c->net.nranks);
  for (int i = 0; i < count; i++) {
    int r = exclude[i];
    if (r < 0 || r >= c->net.nranks || failed[r])
      return commError(c, tpudistInvalidArgument,
                       "CommShrink: excludeRanks[%d] = %d is %s (communicator of %d ranks)", i, r,
                       r < 0 || r >= c->net.nranks ? "out of range" : "listed twice",
                       c->net.nranks);
    if (r == c->net.rank)
      return commError(c, tpudistInvalidArgument,
                       "CommShrink: excludeRanks lists this rank (%d): an excluded rank does not "
                       "call CommShrink",
                       r);
    failed[r] = 1;
  }
  return tpudistSuccess;
}

/* 64-bit FNV-1a of the member list: part of the split tag. */
static uint64_t membersHash(const int *members, int n) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (int i = 0; i < n; i++) h = (h ^ (uint32_t)members[i]) * 0x100000001b3ull;
  return h;
}

typedef struct {
  int explicit_list, flags;
  uint8_t excl[]; /* per rank of the shrunk communicator: in the explicit list */
} tdShrinkArgs;

/* Steps (1) and (2) of the file comment; failed[] (ranks of the line) gets the members'
 * complement. */
static tpudistResult_t shrinkMembers(tdComm *c, const tdLineage *v, tdShrinkProbe *probe,
                                     int explicit_list, int flags, uint8_t *failed,
                                     volatile int *abort, char *err) {
  if (flags == TPUDIST_SHRINK_ABORT)
    commRevokeNow(c);
  else
    (void)execDrain(&c->exec); /* an error here is what the caller shrinks away from */
  if (explicit_list) return tpudistSuccess;
  for (int r = 0; r < c->net.nranks; r++) /* after a failed attempt: its decision stands */
    failed[v->map[r]] |= (uint8_t)transportPeerGone(&c->net, r);
  TD_CHECK(bootstrapAgree(v->bs, v->peers, failed, v->seq, c->net.cfg->agree_timeout_ms,
                          shrinkPeerGone, probe, abort, err));
  if (!c->agreed_failed) c->agreed_failed = malloc((size_t)c->net.nranks);
  if (c->agreed_failed)
    for (int r = 0; r < c->net.nranks; r++) c->agreed_failed[r] = failed[v->map[r]];
  return tpudistSuccess;
}

/* Step (3): nc becomes the communicator of the line's ranks not in failed, and gets its lineage. */
static tpudistResult_t shrinkBuild(tdComm *nc, const tdLineage *v, const uint8_t *failed,
                                   int *members, volatile int *abort, const tpudistConfig_t *uc,
                                   char *err) {
  int nl = bootstrapNranks(v->bs), self = bootstrapRank(v->bs), n = 0, me = -1;
  for (int r = 0; r < nl; r++) {
    if (failed[r]) continue;
    if (r == self) me = n;
    members[n++] = r;
  }
  nc->net.nranks = n;
  nc->net.rank = me;
  netNameErrors(&nc->net);
  /* bit 63 keeps shrink tags apart from CommSplit's (split sequence << 32 ^ color) */
  uint64_t tag = (1ull << 63) | ((uint64_t)(v->seq & 0x7fffff) << 40) |
                 (membersHash(members, n) & 0xffffffffffull);
  TD_CHECK(commShrinkCreate(v, nc, members, tag, abort, uc, err));
  return lineageMake(v, members, n, &nc->lineage, err);
}

/* The creation job of a shrink (commCreate; nc->parent is the communicator shrunk): agreement and
 * creation, and once more when the creation fails (a member died between the agreement and the
 * new communicator's rendezvous or peer exchange, bounded by TPU_DIST_AGREE_TIMEOUT_MS): under the
 * same sequence number, where the ranks still electing a coordinator, and those whose creation
 * succeeded (when the new rank 0 died while sending the peer exchange; see Lineage above), meet
 * this rank. Every wait watches the abort flag of the shrunk communicator (blocking) or of nc. */
static tpudistResult_t shrinkJob(tdComm *nc, const tpudistConfig_t *uc, void *arg, char *err) {
  tdShrinkArgs *a = arg;
  tdComm *c = nc->parent;
  volatile int *abort = nc->blocking ? &c->net.aborted : &nc->net.aborted;
  uint64_t t0 = clockNowNs();
  tdLineage v;
  int *owned = NULL;
  if (lineageView(c, &v, &owned) != tpudistSuccess)
    return tdErr(err, tpudistNoMemory, "CommShrink: out of memory");
  int nl = bootstrapNranks(v.bs);
  uint8_t *failed = malloc((size_t)nl);
  int *inv = malloc(sizeof(int) * (size_t)nl), *members = malloc(sizeof(int) * (size_t)nl);
  tpudistResult_t r = tpudistSuccess;
  if (!failed || !inv || !members) {
    r = tdErr(err, tpudistNoMemory, "CommShrink: out of memory");
    goto out;
  }
  memset(failed, 1, (size_t)nl); /* ranks of the line not in c: excluded by an earlier shrink */
  for (int q = 0; q < nl; q++) inv[q] = -1;
  for (int q = 0; q < c->net.nranks; q++) {
    failed[v.map[q]] = a->excl[q];
    inv[v.map[q]] = q;
  }
  tdShrinkProbe probe = {c, inv};
  for (int attempt = 0; attempt < TD_SHRINK_ATTEMPTS; attempt++) {
    r = shrinkMembers(c, &v, &probe, a->explicit_list, attempt ? TPUDIST_SHRINK_ABORT : a->flags,
                      failed, abort, err);
    if (r != tpudistSuccess) break; /* the agreement's own bounds are spent */
    /* the new channel keeps the flag it watches: nc's own, never the parent's (freed first) */
    r = shrinkBuild(nc, &v, failed, members, &nc->net.aborted, uc, err);
    if (r == tpudistSuccess || a->explicit_list || *abort) break;
    TD_INFO(TD_SUBSYS_INIT, "%s: rank %d: shrink attempt %d failed (%s); agreeing again",
            c->net.name, c->net.rank, attempt + 1, err);
    commRelease(nc); /* what the attempt built */
  }
  if (r == tpudistSuccess)
    TD_INFO(TD_SUBSYS_INIT, "%s: rank %d shrank to %s (rank %d of %d) in %.1f ms", c->net.name,
            c->net.rank, nc->net.name, nc->net.rank, nc->net.nranks, (clockNowNs() - t0) / 1e6);
out:
  free(failed);
  free(inv);
  free(members);
  free(owned);
  return r;
}

TPUDIST_API tpudistResult_t tpudistCommShrink(tpudistComm_t comm, const int *excludeRanks,
                                              int excludeCount, tpudistComm_t *newcomm,
                                              const tpudistConfig_t *config, int shrinkFlags) {
  char err[TD_ERRLEN] = "";
  TD_CHECK(commEnter(comm ? &comm->c : NULL, "CommShrink"));
  tdComm *c = &comm->c;
  tdShrinkArgs *a = calloc(1, sizeof(*a) + (size_t)c->net.nranks);
  tdComm *nc = NULL;
  tpudistResult_t r = tpudistSuccess;
  if (!a) {
    r = commError(c, tpudistNoMemory, "CommShrink: out of memory");
  } else if ((r = shrinkArgs(c, excludeRanks, excludeCount, newcomm, shrinkFlags, a->excl)) ==
             tpudistSuccess) {
    if ((r = commCheckConfig(config, err)) != tpudistSuccess) r = commErrorMsg(c, r, err);
  }
  if (r == tpudistSuccess && !(nc = commAlloc(c->net.nranks, c->net.rank)))
    r = commError(c, tpudistNoMemory, "CommShrink: out of memory");
  if (r != tpudistSuccess) {
    free(a);
    commLeave(c);
    return r;
  }
  a->explicit_list = excludeCount > 0;
  a->flags = shrinkFlags;
  nc->net.timeout_ms =
      commConfigTimeout(config) ? commConfigTimeout(config) : netTimeoutMs(&c->net);
  nc->parent = c;
  /* blocking: the job runs here (its failure is recorded on c); else on a helper thread, c held
   * until it ends */
  r = commCreate(nc, !commConfigNonBlocking(config, c), config, shrinkJob, a, "CommShrink",
                 newcomm);
  commLeave(c);
  return r;
}

TPUDIST_API tpudistResult_t tpudistCommRevoke(tpudistComm_t comm) {
  TD_CHECK(commEnter(comm ? &comm->c : NULL, "CommRevoke"));
  tdComm *c = &comm->c;
  commRevokeNow(c);
  pthread_mutex_lock(&c->exec.lock);
  c->exec.async_error = tpudistAborted; /* what every later operation fails with */
  pthread_mutex_unlock(&c->exec.lock);
  commLeave(c);
  return tpudistSuccess;
}

TPUDIST_API tpudistResult_t tpudistCommGetFailedRanks(tpudistComm_t comm, int *ranks, int *count) {
  TD_CHECK(commEnter(comm ? &comm->c : NULL, "CommGetFailedRanks"));
  tdComm *c = &comm->c;
  tpudistResult_t r = tpudistSuccess;
  if (!count || *count < 0 || (*count > 0 && !ranks)) {
    r = commError(c, tpudistInvalidArgument,
                  "CommGetFailedRanks: count is NULL or negative, or ranks is NULL with room");
  } else {
    int n = 0;
    for (int q = 0; q < c->net.nranks; q++) {
      if (!(c->agreed_failed && c->agreed_failed[q]) && !transportPeerGone(&c->net, q)) continue;
      if (n < *count) ranks[n] = q;
      n++;
    }
    *count = n;
  }
  commLeave(c);
  return r;
}
