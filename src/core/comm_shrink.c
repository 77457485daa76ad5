/*
 * comm_shrink.c - fault tolerance: tpudistCommShrink (the survivors form a new communicator over
 * the old one's bootstrap channel, no new rendezvous), tpudistCommRevoke (fail everything, keep
 * the resources) and tpudistCommGetFailedRanks. Design in docs/reliability.md.
 *
 * Shrink: (1) pending work completes (DEFAULT) or is revoked (ABORT); (2) the members: all but
 * the given list, or all but the failed set agreed by bootstrapAgree (boot_agree.c), each rank
 * starting from the ranks it knows are gone (transportPeerGone); (3) the new communicator is a
 * split of the old channel with the members at the agreement listeners (bootstrapShrinkSplit),
 * under a tag derived from the shrink sequence and the member list, so that ranks holding
 * different lists never join one rendezvous.
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

static int shrinkPeerGone(void *ctx, int rank) {
  return transportPeerGone(&((tdComm *)ctx)->net, rank);
}

/* Checks the arguments; on success failed[] holds the explicit list (if any). */
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
  uint64_t tag;
  int members[]; /* the new communicator's nranks */
} tdShrinkArgs;

/* The creation job of a shrink (commCreate): the survivors' channel and setup. */
static tpudistResult_t shrinkJob(tdComm *nc, const tpudistConfig_t *uc, void *arg, char *err) {
  tdShrinkArgs *a = arg;
  return commSplitCreate(nc->parent, nc, a->members, a->tag, 1, uc, err);
}

/* The new communicator of the ranks not in failed (created as every communicator is, through
 * commCreate; blocking: a failed attempt is agreed again at once by the caller). */
static tpudistResult_t shrinkCreate(tdComm *c, const uint8_t *failed, uint32_t seq,
                                    const tpudistConfig_t *config, tdComm **out, char *err) {
  tdShrinkArgs *a = malloc(sizeof(*a) + sizeof(int) * (size_t)c->net.nranks);
  int n = 0, me = -1;
  if (!a) return tdErr(err, tpudistNoMemory, "CommShrink: out of memory");
  for (int r = 0; r < c->net.nranks; r++) {
    if (failed[r]) continue;
    if (r == c->net.rank) me = n;
    a->members[n++] = r;
  }
  /* bit 63 keeps shrink tags apart from CommSplit's (split sequence << 32 ^ color) */
  a->tag = (1ull << 63) | ((uint64_t)(seq & 0x7fffff) << 40) |
           (membersHash(a->members, n) & 0xffffffffffull);
  tdComm *nc = commAlloc(n, me);
  if (!nc) {
    free(a);
    return tdErr(err, tpudistNoMemory, "CommShrink: out of memory");
  }
  nc->net.timeout_ms = commConfigTimeout(config) ? commConfigTimeout(config) : c->net.timeout_ms;
  nc->parent = c;
  tpudistComm_t made = NULL;
  tpudistResult_t r = commCreate(nc, 1, config, shrinkJob, a, "CommShrink", &made);
  if (r != tpudistSuccess) return tdErr(err, r, "%s", errThreadLast());
  *out = &made->c;
  return tpudistSuccess;
}

/* Steps (1) and (2) of the file comment; failed[] gets the members' complement. */
static tpudistResult_t shrinkMembers(tdComm *c, int explicit_list, int flags, uint32_t seq,
                                     uint8_t *failed, char *err) {
  if (flags == TPUDIST_SHRINK_ABORT)
    commRevokeNow(c);
  else
    (void)execDrain(&c->exec); /* an error here is what the caller shrinks away from */
  if (explicit_list) return tpudistSuccess;
  for (int r = 0; r < c->net.nranks; r++) /* after a failed attempt: its decision stands */
    failed[r] |= (uint8_t)transportPeerGone(&c->net, r);
  TD_CHECK(bootstrapAgree(c->net.bootstrap, c->net.peers, failed, seq, c->net.cfg->agree_timeout_ms,
                          shrinkPeerGone, c, err));
  if (!c->agreed_failed) c->agreed_failed = malloc((size_t)c->net.nranks);
  if (c->agreed_failed) memcpy(c->agreed_failed, failed, (size_t)c->net.nranks);
  return tpudistSuccess;
}

TPUDIST_API tpudistResult_t tpudistCommShrink(tpudistComm_t comm, const int *excludeRanks,
                                              int excludeCount, tpudistComm_t *newcomm,
                                              const tpudistConfig_t *config, int shrinkFlags) {
  char err[TD_ERRLEN] = "";
  TD_CHECK(commEnter(comm ? &comm->c : NULL, "CommShrink"));
  tdComm *c = &comm->c, *nc = NULL;
  uint8_t *failed = calloc((size_t)c->net.nranks, 1);
  tpudistResult_t r = failed
                          ? shrinkArgs(c, excludeRanks, excludeCount, newcomm, shrinkFlags, failed)
                          : commError(c, tpudistNoMemory, "CommShrink: out of memory");
  if (r != tpudistSuccess) goto out;
  uint64_t t0 = clockNowNs();
  /* A member that dies between the agreement and the new communicator's rendezvous fails the
   * rendezvous for everyone (bounded by TPU_DIST_AGREE_TIMEOUT_MS): agree again, once more. */
  uint32_t seq = c->shrink_seq++; /* one per call: a retry meets ranks still in the first round */
  for (int attempt = 0; attempt < TD_SHRINK_ATTEMPTS; attempt++) {
    r = shrinkMembers(c, excludeCount > 0, attempt ? TPUDIST_SHRINK_ABORT : shrinkFlags, seq,
                      failed, err);
    if (r != tpudistSuccess) break;
    r = shrinkCreate(c, failed, seq, config, &nc, err);
    if (r == tpudistSuccess || excludeCount > 0) break;
    TD_INFO(TD_SUBSYS_INIT, "%s: rank %d: shrink attempt %d failed (%s); agreeing again",
            c->net.name, c->net.rank, attempt + 1, err);
  }
  if (r != tpudistSuccess) {
    r = commErrorMsg(c, r, err);
    goto out;
  }
  *newcomm = (tpudistComm_t)nc;
  TD_INFO(TD_SUBSYS_INIT, "%s: rank %d shrank to %s (rank %d of %d) in %.1f ms", c->net.name,
          c->net.rank, nc->net.name, nc->net.rank, nc->net.nranks, (clockNowNs() - t0) / 1e6);
out:
  free(failed);
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
