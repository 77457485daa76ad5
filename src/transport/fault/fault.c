/*
 * fault.c - the fault-injection transport: a wrapping transport that stacks on whatever transport
 * reaches each peer (shm, socket, ...) and injects the faults TPU_DIST_FAULT asks for, so that
 * tests can drive the failure paths on demand. When TPU_DIST_FAULT is set, the registry places it
 * right after "self"; for each other peer it picks the first later transport that can reach the
 * peer (the "inner" one) and passes every post on to it. Receives and progress are the inner
 * transports' own; only sends are touched.
 *
 * TPU_DIST_FAULT is a comma list of:
 *   delay=MS     every send is held MS milliseconds before the inner transport gets it (order kept)
 *   drop=N       the process's Nth send (counted over all communicators, from 1) finds the
 *                connection to its peer dropped: that send and every later post to the peer fail
 *                with tpudistRemoteError; the communicator fails and releases its transports, so
 *                the peers see a real disconnect
 *   corrupt=N    the process's Nth non-empty send goes out one byte short: the receiver sees a
 *                length that does not match its receive (tpudistInvalidUsage naming the sender)
 *   rank=R       inject drop/corrupt on rank R only (delays apply everywhere)
 * drop and corrupt fire once per process, so a communicator created after the fault runs clean.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "registry.h"
#include "rt_config.h"
#include "rt_log.h"

typedef struct tdFaultHeld {
  tdXfer *x;
  uint64_t due_ns;
  struct tdFaultHeld *next;
} tdFaultHeld;

typedef struct {
  int delay_ms;
  long drop_at, corrupt_at;
  int rank;                  /* -1: every rank */
  const tdTransport **inner; /* per peer */
  unsigned char *dropped;    /* per peer */
  tdFaultHeld *held_head, *held_tail;
} tdFaultCtx;

static long gSends, gNonEmptySends; /* per process: drop/corrupt fire once */

static uint64_t faultNowNs(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static tdFaultCtx *faultCtx(tdNet *comm) {
  int i = netTransportIndex(comm, &tdTransportFault);
  return i < 0 ? NULL : comm->tp_ctx[i];
}

/* Parses TPU_DIST_FAULT; err names the bad item. */
static tpudistResult_t faultParse(const char *spec, int *delay_ms, long *drop_at, long *corrupt_at,
                                  int *rank, char *err) {
  *delay_ms = 0;
  *drop_at = *corrupt_at = 0;
  *rank = -1;
  for (const char *p = spec ? spec : ""; *p;) {
    while (*p == ',' || *p == ' ') p++;
    size_t n = strcspn(p, ", ");
    if (!n) break;
    const char *eq = memchr(p, '=', n);
    char *end = NULL;
    long v = eq ? strtol(eq + 1, &end, 10) : -1;
    size_t klen = eq ? (size_t)(eq - p) : n;
    if (!eq || end != p + n || v < 0 || v > 1000000000L)
      return tdErr(
          err, tpudistInvalidArgument,
          "TPU_DIST_FAULT: '%.*s' is not NAME=NUMBER (delay=MS, drop=N, corrupt=N, rank=R)", (int)n,
          p);
    if (klen == 5 && !strncmp(p, "delay", 5))
      *delay_ms = (int)v;
    else if (klen == 4 && !strncmp(p, "drop", 4))
      *drop_at = v;
    else if (klen == 7 && !strncmp(p, "corrupt", 7))
      *corrupt_at = v;
    else if (klen == 4 && !strncmp(p, "rank", 4))
      *rank = (int)v;
    else
      return tdErr(err, tpudistInvalidArgument,
                   "TPU_DIST_FAULT: unknown fault '%.*s' (known: delay, drop, corrupt, rank)",
                   (int)klen, p);
    p += n;
  }
  return tpudistSuccess;
}

static int faultCanReach(tdNet *comm, int peer) {
  tdFaultCtx *c = faultCtx(comm);
  int me = netTransportIndex(comm, &tdTransportFault);
  if (!c || peer == comm->rank) return 0;
  for (int i = me + 1; i < comm->ntransports; i++) {
    if (comm->transports[i]->canReach(comm, peer)) {
      c->inner[peer] = comm->transports[i];
      return 1;
    }
  }
  return 0;
}

static tpudistResult_t faultCommInit(tdNet *comm, tdPeerInfo *info) {
  (void)info;
  char err[TD_ERRLEN];
  int i = netTransportIndex(comm, &tdTransportFault);
  tdFaultCtx *c = calloc(1, sizeof(*c));
  if (!c) return transportError(comm, tpudistNoMemory, "fault transport: out of memory");
  comm->tp_ctx[i] = c;
  c->inner = calloc((size_t)comm->nranks, sizeof(*c->inner));
  c->dropped = calloc((size_t)comm->nranks, 1);
  if (!c->inner || !c->dropped)
    return transportError(comm, tpudistNoMemory, "fault transport: out of memory");
  if (faultParse(comm->cfg->fault, &c->delay_ms, &c->drop_at, &c->corrupt_at, &c->rank, err) !=
      tpudistSuccess)
    return transportError(comm, tpudistInvalidArgument, "%s", err);
  TD_WARN(TD_SUBSYS_INIT, "%s rank %d: fault injection on: %s", comm->name, comm->rank,
          comm->cfg->fault);
  return tpudistSuccess;
}

static void faultCommFini(tdNet *comm) {
  int i = netTransportIndex(comm, &tdTransportFault);
  tdFaultCtx *c = comm->tp_ctx[i];
  if (!c) return;
  while (c->held_head) { /* held sends never reached a transport: nothing else refers to them */
    tdFaultHeld *h = c->held_head;
    c->held_head = h->next;
    free(h);
  }
  free(c->inner);
  free(c->dropped);
  free(c);
  comm->tp_ctx[i] = NULL;
}

/* Hands x to the inner transport, applying drop and corrupt. */
static tpudistResult_t faultForward(tdNet *comm, tdFaultCtx *c, tdXfer *x) {
  int inject = c->rank < 0 || c->rank == comm->rank;
  long nth = ++gSends;
  if (x->len) gNonEmptySends++;
  if (inject && c->drop_at && nth == c->drop_at) {
    c->dropped[x->peer] = 1;
    TD_WARN(TD_SUBSYS_INIT, "%s rank %d: fault injection: dropping the connection to rank %d",
            comm->name, comm->rank, x->peer);
  }
  if (c->dropped[x->peer]) {
    transportComplete(x, tpudistRemoteError, comm->rank);
    return transportError(comm, tpudistRemoteError,
                          "fault injection: the connection to rank %d was dropped", x->peer);
  }
  if (inject && c->corrupt_at && x->len && gNonEmptySends == c->corrupt_at) {
    TD_WARN(TD_SUBSYS_INIT,
            "%s rank %d: fault injection: a send of %zu bytes to rank %d goes out "
            "one byte short",
            comm->name, comm->rank, x->len, x->peer);
    x->len--;
  }
  return c->inner[x->peer]->postSend(comm, x);
}

static tpudistResult_t faultPostSend(tdNet *comm, tdXfer *x) {
  tdFaultCtx *c = faultCtx(comm);
  if (!c->inner[x->peer] && !faultCanReach(comm, x->peer))
    return transportError(comm, tpudistInvalidUsage, "fault transport: nothing reaches rank %d",
                          x->peer);
  if (c->delay_ms <= 0 && !c->held_head) return faultForward(comm, c, x);
  tdFaultHeld *h = malloc(sizeof(*h));
  if (!h) return transportError(comm, tpudistNoMemory, "fault transport: out of memory");
  h->x = x;
  h->due_ns = faultNowNs() + (uint64_t)c->delay_ms * 1000000ull;
  h->next = NULL;
  if (c->held_tail)
    c->held_tail->next = h;
  else
    c->held_head = h;
  c->held_tail = h;
  return tpudistSuccess;
}

static tpudistResult_t faultPostRecv(tdNet *comm, tdXfer *x) {
  tdFaultCtx *c = faultCtx(comm);
  if (x->tp_priv[3] == TD_ANY_PROBE) return tpudistSuccess; /* the inner transports are probed */
  if (!c->inner[x->peer] && !faultCanReach(comm, x->peer))
    return transportError(comm, tpudistInvalidUsage, "fault transport: nothing reaches rank %d",
                          x->peer);
  if (c->dropped[x->peer]) {
    transportComplete(x, tpudistRemoteError, x->peer);
    return transportError(comm, tpudistRemoteError,
                          "fault injection: the connection to rank %d was dropped", x->peer);
  }
  return c->inner[x->peer]->postRecv(comm, x);
}

/* Releases the held sends that are due, in order. */
static tpudistResult_t faultProgress(tdNet *comm, int *progressed) {
  tdFaultCtx *c = faultCtx(comm);
  *progressed = 0;
  if (!c || !c->held_head) return tpudistSuccess;
  uint64_t now = faultNowNs();
  while (c->held_head && c->held_head->due_ns <= now) {
    tdFaultHeld *h = c->held_head;
    c->held_head = h->next;
    if (!c->held_head) c->held_tail = NULL;
    tdXfer *x = h->x;
    free(h);
    *progressed = 1;
    tpudistResult_t r = faultForward(comm, c, x);
    if (r != tpudistSuccess) {
      if (!x->done) transportComplete(x, r, comm->rank);
      return r;
    }
  }
  return tpudistSuccess;
}

TD_TRANSPORT_DEFINE(tdTransportFault, "fault", fault);
