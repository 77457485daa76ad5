/*
 * registry.h - the transport registry (registry.c) and the helpers every transport shares.
 *
 * Transports and the registry see the communicator as a tdNet (rt_net.h), never src/core's
 * communicator. Order of use on a tdNet whose rank, nranks, comm_hash, bootstrap, cfg and
 * timeout_ms are set: transportSetup (choose transports), transportInitAll (each commInit fills the
 * local tdPeerInfo), bootstrapAllGather of the infos into comm->peers (transportConnect does these
 * three), then transportPostSend / transportPostRecv / transportProgressAll, and transportFiniAll.
 *
 * "self" is always enabled and first (a rank's messages to itself); TPU_DIST_TRANSPORTS lists the
 * others in order (default "shm,ofi,socket"); an unknown name is an error.
 *
 * Any-source receives (peer -1) go through transportPostRecv: each transport is asked to match
 * the receive against what already arrived (the transport's postRecv is called with
 * tp_priv[3] == TD_ANY_PROBE and must not queue it); otherwise the registry keeps it and a
 * transport takes it with transportTakeAnySource when a message without a peer-specific receive
 * arrives. A peer-specific receive is preferred over an any-source one. tdXfer.tp_priv[3] is the
 * registry's: transports use tp_priv[0..2] only.
 *
 * Calls on one communicator (posts, progress, fini) must not run concurrently: the caller
 * serialises them (e.g. one lock shared by the user thread and the progress thread). A transport
 * never touches a tdXfer after setting done. Completion of a send means its buffer may be reused;
 * for shm single-copy (CMA) messages that happens once the receiver has read them, so such a send
 * completes only after the matching receive is posted. commFini must also release a commInit that
 * failed half-way.
 */
#ifndef TD_REGISTRY_H_
#define TD_REGISTRY_H_

#include "transport.h"

struct tdBootstrap;

#define TD_ANY_PROBE ((void *)1)

/* The fault-injection transport (fault/fault.c): placed right after "self" when TPU_DIST_FAULT is
 * set; it wraps whichever later transport reaches each peer. */
extern const tdTransport tdTransportFault;

/* Fills comm->transports / ntransports from comm->cfg->transports (or the default order) and
 * allocates comm->peer_tp. err gets the reason (unknown name). */
tpudistResult_t transportSetup(tdNet *comm, char *err);
/* The transport used for peer (chosen at first use: the first enabled one that canReach). NULL if
 * none can reach it. Needs comm->peers. */
const tdTransport *transportForPeer(tdNet *comm, int peer);
/* Fills the common fields of info (rank, pid, host hash, version) and calls every commInit.
 * Errors are logged and written into comm->err.msg. */
tpudistResult_t transportInitAll(tdNet *comm, tdPeerInfo *info);
/* Progresses every enabled transport; returns the first error (affected transfers are done). */
tpudistResult_t transportProgressAll(tdNet *comm, int *progressed);
/* commFini of every transport (reverse order), frees peer_tp. Idempotent. */
void transportFiniAll(tdNet *comm);
/* For a communicator that failed: commFini of every transport now (listeners and connections
 * closed, shm sides marked released, the bootstrap listener closed: see bootstrapPeerReleased), so
 * that peers still waiting on this rank fail with tpudistRemoteError at once instead of timing out;
 * keeps peers and peer_tp. Nothing may be posted
 * or progressed on comm afterwards; transportFiniAll still frees the rest. Idempotent. */
void transportReleaseAll(tdNet *comm);

/* 1 if process pid is gone (no such process, or a zombie). */
int transportProcGone(int pid);
/* 1 if peer is certainly gone: on this host, in this pid namespace, and its process exited. 0 when
 * unknown (another host) or alive. Needs comm->peers. */
int transportPeerGone(const tdNet *comm, int peer);

/* Setup + InitAll + allgather of the peer infos into comm->peers (malloc'd here, freed by
 * transportFiniAll) + version check of every peer. */
tpudistResult_t transportConnect(tdNet *comm, char *err);
/* Posting through the registry: picks the peer's transport (errors if none can reach it) and
 * handles any-source receives. */
tpudistResult_t transportPostSend(tdNet *comm, tdXfer *x);
tpudistResult_t transportPostRecv(tdNet *comm, tdXfer *x);
/* Progresses until x is done, comm is aborted or timeout_ms passes (spins, then yields, then
 * sleeps). Returns x->result, tpudistTimeout or tpudistAborted. For tests and simple callers. */
tpudistResult_t transportWait(tdNet *comm, tdXfer *x, int timeout_ms);

/* For tests and tools: a minimal communicator over a bootstrap channel (rank, size, hash from bs,
 * cfg or configGet() when NULL (cfg must outlive the comm), transports connected). Free with
 * transportTestCommFree, which also frees bs; on failure bs is left to the caller. */
tpudistResult_t transportTestComm(struct tdBootstrap *bs, const tdConfig *cfg, tdNet **out,
                                  char *err);
void transportTestCommFree(tdNet *comm);

/* ---- for transports ---- */
/* Takes the oldest any-source receive with key k, or NULL. */
tdXfer *transportTakeAnySource(tdNet *comm, const tdMsgKey *k);
/* Completes x (result, source) and publishes done with release order. */
void transportComplete(tdXfer *x, tpudistResult_t result, int source);
/* Records an error in comm->err (logged once, rt_error.h); evaluates to res. */
#define transportError(comm, res, ...) errRecordf(&(comm)->err, TD_SUBSYS_INIT, (res), __VA_ARGS__)

/* Checks a receive before it is queued (reducing receives: valid dtype/op, len a multiple of the
 * element size). */
tpudistResult_t transportCheckRecv(tdNet *comm, const tdXfer *x);
/* Delivers n incoming bytes at offset off of receive r: copy into r->buf, or
 * r->buf = r->reduce_src (+) src for reducing receives (off and n multiples of the element size).
 */
void transportDeliver(tdXfer *r, size_t off, const void *src, size_t n);
/* Completes receive r with a length-mismatch error naming the peer and key. */
void transportLenMismatch(tdNet *comm, tdXfer *r, int peer, size_t got);

/* A FIFO of transfers linked through tdXfer.next. */
typedef struct {
  tdXfer *head, *tail;
} tdXferQueue;

static inline void xqPush(tdXferQueue *q, tdXfer *x) {
  x->next = NULL;
  if (q->tail)
    q->tail->next = x;
  else
    q->head = x;
  q->tail = x;
}

/* Unlinks x, whose predecessor is prev (NULL for the head). */
static inline void xqUnlink(tdXferQueue *q, tdXfer *prev, tdXfer *x) {
  if (prev)
    prev->next = x->next;
  else
    q->head = x->next;
  if (q->tail == x) q->tail = prev;
  x->next = NULL;
}

static inline tdXfer *xqPop(tdXferQueue *q) {
  tdXfer *x = q->head;
  if (x) xqUnlink(q, NULL, x);
  return x;
}

static inline int keyEq(const tdMsgKey *a, const tdMsgKey *b) {
  return a->seq == b->seq && a->stream == b->stream && a->ordinal == b->ordinal &&
         a->piece == b->piece;
}

/* Takes the first receive in q posted for peer with key k (peer-specific receives only). */
static inline tdXfer *xqTakeMatch(tdXferQueue *q, int peer, const tdMsgKey *k) {
  tdXfer *prev = NULL;
  for (tdXfer *x = q->head; x; prev = x, x = x->next) {
    if (x->peer == peer && keyEq(&x->key, k)) {
      xqUnlink(q, prev, x);
      return x;
    }
  }
  return NULL;
}

/* Completes every transfer in q for peer with res (a peer that failed); returns how many. */
static inline int xqFailPeer(tdXferQueue *q, int peer, tpudistResult_t res) {
  int n = 0;
  tdXfer *prev = NULL, *x = q->head;
  while (x) {
    tdXfer *next = x->next;
    if (x->peer == peer) {
      xqUnlink(q, prev, x);
      transportComplete(x, res, peer);
      n++;
    } else {
      prev = x;
    }
    x = next;
  }
  return n;
}

/* A posted receive for (peer, k): peer-specific from q first, else any-source from the registry. */
static inline tdXfer *transportMatchRecv(tdNet *comm, tdXferQueue *q, int peer, const tdMsgKey *k,
                                         const tdTransport *self) {
  tdXfer *x = xqTakeMatch(q, peer, k);
  if (!x) {
    x = transportTakeAnySource(comm, k);
    if (x) x->tp_priv[3] = (void *)self;
  }
  return x;
}

#endif /* TD_REGISTRY_H_ */
