/*
 * rt_net.h - the communicator as the executor and the transports see it (runtime base): its
 * identity, its peers, its bootstrap channel, the configuration, the timeout and abort flag, the
 * transports chosen for it with their per-communicator state, and its error recorder. src/core's
 * communicator embeds one (tdComm.net); nothing here knows of requests, schedules, selection or
 * the executor's queue.
 */
#ifndef TD_RT_NET_H_
#define TD_RT_NET_H_

#include "rt_config.h"
#include "rt_error.h"

#define TD_MAX_TRANSPORTS 8

/* What a rank tells its peers at bootstrap (exchanged as bytes). */
#define TD_ADDR_BYTES 64
typedef struct {
  int rank;
  int pid;
  uint64_t host_hash;             /* hostname + boot id + net namespace (or TPU_DIST_HOSTID) */
  uint64_t pid_ns;                /* inode of the pid namespace (pids compare within one) */
  uint32_t version;               /* TPUDIST_VERSION_CODE */
  char sock_addr[TD_ADDR_BYTES];  /* socket transport listen address (sockaddr storage) */
  int32_t sock_streams;           /* socket transport: TPU_DIST_SOCKET_NSTREAMS of this rank */
  int32_t sock_tls;               /* socket transport: 0 clear, 1 TLS (certificates), 2 TLS (PSK) */
  char shm_name[TD_ADDR_BYTES];   /* shm transport segment prefix */
  char agree_addr[TD_ADDR_BYTES]; /* bootstrap agreement listener (survivors meet there) */
  char ofi_addr[TD_ADDR_BYTES];   /* ofi transport endpoint name (fi_getname) */
  uint32_t ofi_addrlen;           /* its bytes; 0: ofi is off on this rank */
  uint32_t ofi_prov;              /* hash of the ofi provider's name (peers must agree) */
} tdPeerInfo;

struct tdBootstrap;
struct tdTransport;

typedef struct tdNet {
  /* identity */
  int rank, nranks;
  uint64_t comm_hash;            /* unique per communicator (from the unique id / parent + split) */
  char name[64];                 /* config commName or "comm-<hash>" */
  tdPeerInfo *peers;             /* nranks entries, exchanged at bootstrap */
  struct tdBootstrap *bootstrap; /* out-of-band channel (allgather, barrier) */
  const tdConfig *cfg;
  long chunk_bytes; /* pipeline piece size: TPU_DIST_CHUNK_BYTES, else from the host's caches */
  int timeout_ms;   /* read with netTimeoutMs: tpudistCommSetTimeout changes it from any thread */
  volatile int aborted; /* set by tpudistCommAbort from any thread */
  /* transports */
  const struct tdTransport *transports[TD_MAX_TRANSPORTS]; /* enabled, in order */
  int ntransports;
  const struct tdTransport **peer_tp; /* per peer, chosen lazily (NULL until first use) */
  void *tp_ctx[TD_MAX_TRANSPORTS];    /* per-transport private state, same index as transports[] */
  tdErrRec err;                       /* last error (err.who = name, err.rank = rank) */
} tdNet;

/* Index of transport t in net->transports, or -1. */
/* The communicator's current bound on every wait, in ms. */
static inline int netTimeoutMs(const tdNet *net) {
  return __atomic_load_n(&net->timeout_ms, __ATOMIC_RELAXED);
}

static inline int netTransportIndex(const tdNet *net, const struct tdTransport *t) {
  for (int i = 0; i < net->ntransports; i++)
    if (net->transports[i] == t) return i;
  return -1;
}

/* This rank's place among the ranks of its host (same host_hash): *local_rank of *local_size. */
static inline void netLocalRank(const tdNet *net, int *local_rank, int *local_size) {
  uint64_t me = net->peers[net->rank].host_hash;
  *local_rank = *local_size = 0;
  for (int r = 0; r < net->nranks; r++) {
    *local_rank += r < net->rank && net->peers[r].host_hash == me;
    *local_size += net->peers[r].host_hash == me;
  }
}

/* Sets the error recorder's log identity from the name and rank (after either changes). */
static inline void netNameErrors(tdNet *net) {
  net->err.who = net->name;
  net->err.rank = net->rank;
}

#endif /* TD_RT_NET_H_ */
