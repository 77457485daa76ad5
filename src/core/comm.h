/*
 * comm.h - the communicator (struct tpudistComm, internally tdComm). Owned by src/core; transports
 * and bootstrap read the fields marked "shared" and keep their own state in tp_ctx[].
 */
#ifndef TD_COMM_H_
#define TD_COMM_H_

#include <pthread.h>

#include "config.h"
#include "torus.h"
#include "transport.h"

#define TD_MAX_TRANSPORTS 8

struct tdBootstrap;

typedef struct tdComm {
  /* shared: identity */
  int rank, nranks;
  uint64_t comm_hash;            /* unique per communicator (from the unique id / parent + split) */
  char name[64];                 /* config commName or "comm-<hash>" */
  tdPeerInfo *peers;             /* nranks entries, exchanged at bootstrap */
  struct tdBootstrap *bootstrap; /* out-of-band channel (allgather, barrier) */
  const tdConfig *cfg;
  int timeout_ms;
  volatile int aborted; /* set by tpudistCommAbort from any thread */
  /* shared: transports */
  const tdTransport *transports[TD_MAX_TRANSPORTS]; /* enabled, in order */
  int ntransports;
  const tdTransport **peer_tp;     /* per peer, chosen lazily (NULL until first use) */
  void *tp_ctx[TD_MAX_TRANSPORTS]; /* per-transport private state, same index as transports[] */
  /* topology */
  tdTopo topo;
  /* src/core private fields follow (requests, executor state, selection, last error, ...) */
  char last_error[TD_ERRLEN];
  const char *last_algo;
  struct tdCommPriv *priv;
} tdComm;

struct tpudistComm {
  tdComm c;
};

/* Index of transport t in comm->transports, or -1. */
static inline int commTransportIndex(const tdComm *comm, const tdTransport *t) {
  for (int i = 0; i < comm->ntransports; i++)
    if (comm->transports[i] == t) return i;
  return -1;
}

#endif /* TD_COMM_H_ */
