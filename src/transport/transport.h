/*
 * transport.h - the one ops table every transport implements (self, shm, ofi, socket, and wrapping
 * transports such as fault injection), with a non-blocking contract.
 *
 * Model: tagged messages between ranks of one communicator. A message is identified by a key
 * (comm id, collective sequence, stream, ordinal, piece); the receiver posts a receive for an exact
 * key (or any source, for p2p) and the transport matches, keeping unexpected arrivals queued.
 * Messages between one ordered pair arrive in the order sent. A receive either copies into dst
 * or reduces: dst[i] = reduce_src[i] (+) incoming[i] (lets shm reduce straight out of the peer's
 * memory, single copy). Every call returns at once; progress() moves data; completion is seen
 * through tdXfer.done. Nothing in a transport blocks or sleeps.
 */
#ifndef TD_TRANSPORT_H_
#define TD_TRANSPORT_H_

#include "rt_net.h"

/* Match key. */
typedef struct {
  uint64_t seq;     /* collective sequence number on the communicator (p2p: own sequence) */
  uint32_t stream;  /* schedule stream, or TD_P2P_STREAM */
  uint32_t ordinal; /* message index among (seq, stream, ordered pair) */
  uint32_t piece;   /* pipeline piece within the step */
} tdMsgKey;
#define TD_P2P_STREAM 0xfffffff0u

/* One posted send or receive. Owned by the caller (executor) until done. */
typedef struct tdXfer {
  int peer; /* receive: may be -1 (any source) for p2p */
  tdMsgKey key;
  void *buf;              /* send: source bytes; receive: dst */
  const void *reduce_src; /* receive: NULL = copy; else dst = reduce_src (+) incoming */
  size_t len;             /* bytes; a receive must get exactly len */
  int dtype, op;          /* for reducing receives */
  int peer_reduces;       /* send: part of a reducing collective (its receiver likely reduces) */
  /* set by the transport */
  volatile int done;
  tpudistResult_t result;
  int source;          /* receive: who sent */
  void *tp_priv[4];    /* transport scratch */
  struct tdXfer *next; /* transport's queues */
} tdXfer;

typedef struct tdTransport {
  const char *name; /* "self", "shm", "ofi", "socket", ... */
  /* 1 if this transport can reach peer from this rank. */
  int (*canReach)(tdNet *comm, int peer);
  /* Per-communicator setup (listeners, segments); fills the local parts of info. */
  tpudistResult_t (*commInit)(tdNet *comm, tdPeerInfo *info);
  /* Releases everything of comm (after all transfers are done or aborted). */
  void (*commFini)(tdNet *comm);
  /* Post a send / receive; returns at once. */
  tpudistResult_t (*postSend)(tdNet *comm, tdXfer *x);
  tpudistResult_t (*postRecv)(tdNet *comm, tdXfer *x);
  /* Advances all transfers of comm; returns an error only for a broken connection, after marking
   * affected transfers done with that error. *progressed set non-zero if anything moved. */
  tpudistResult_t (*progress)(tdNet *comm, int *progressed);
  /* Optional (NULL: nothing): the communicator is freed. Runs for every enabled transport after
   * the commFini calls, also when commFini ran earlier (a release) or commInit never did, for
   * what no one else is left to clean (shm: the segments of this host's pairs both gone). */
  void (*commCleanup)(tdNet *comm);
} tdTransport;

/* Defines the table var of the transport called label from its functions pfx##CanReach,
 * pfx##CommInit, pfx##CommFini, pfx##PostSend, pfx##PostRecv and pfx##Progress (every transport
 * names them so), then the optional ops given after pfx (.commCleanup = fn). */
#define TD_TRANSPORT_DEFINE(var, label, pfx, ...)     \
  const tdTransport var = {.name = label,             \
                           .canReach = pfx##CanReach, \
                           .commInit = pfx##CommInit, \
                           .commFini = pfx##CommFini, \
                           .postSend = pfx##PostSend, \
                           .postRecv = pfx##PostRecv, \
                           .progress = pfx##Progress, \
                           __VA_ARGS__}

/* The static ordered registry (registry.c): first that can reach a peer wins;
 * TPU_DIST_TRANSPORTS (comma list) overrides the order and set. */
extern const tdTransport tdTransportSelf;
extern const tdTransport tdTransportShm;
extern const tdTransport tdTransportSocket;
extern const tdTransport tdTransportOfi;

#endif /* TD_TRANSPORT_H_ */
