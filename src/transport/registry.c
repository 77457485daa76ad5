/*
 * registry.c - the static ordered transport registry (self, shm, ofi, socket), per-peer transport
 * choice, any-source receives, and the small helpers transports share (see registry.h).
 *
 * The registry's per-communicator state (the any-source queue) lives in the same allocation as
 * comm->peer_tp, just before the array, so tdNet needs no extra field.
 */
#include "registry.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bootstrap.h"
#include "host.h"
#include "kernels.h"
#include "rt_clock.h"
#include "rt_config.h"
#include "rt_log.h"

static const tdTransport *const gRegistry[] = {&tdTransportSelf, &tdTransportShm, &tdTransportOfi,
                                               &tdTransportSocket};
#define TD_NREGISTRY ((int)TD_ARRAY_SIZE(gRegistry))

typedef struct {
  tdXferQueue any; /* any-source receives not matched yet */
  int inited;      /* commInit ran for transports[0..inited) */
  int own_peers;   /* comm->peers allocated by transportConnect */
  const tdTransport *peer_tp[];
} tdRegState;

static tdRegState *regState(tdNet *comm) {
  if (!comm->peer_tp) return NULL;
  return (tdRegState *)((char *)comm->peer_tp - offsetof(tdRegState, peer_tp));
}

static const tdTransport *regFind(const char *name, size_t len) {
  for (int i = 0; i < TD_NREGISTRY; i++)
    if (strlen(gRegistry[i]->name) == len && !strncmp(gRegistry[i]->name, name, len))
      return gRegistry[i];
  return NULL;
}

static void regAdd(tdNet *comm, const tdTransport *t) {
  for (int i = 0; i < comm->ntransports; i++)
    if (comm->transports[i] == t) return;
  if (comm->ntransports < TD_MAX_TRANSPORTS) comm->transports[comm->ntransports++] = t;
}

tpudistResult_t transportSetup(tdNet *comm, char *err) {
  const tdConfig *cfg = comm->cfg ? comm->cfg : configGet();
  const char *list = cfg->transports;
  comm->ntransports = 0;
  regAdd(comm, &tdTransportSelf);
  if (cfg->fault && *cfg->fault) regAdd(comm, &tdTransportFault);
  if (!list || !*list) list = "shm,ofi,socket";
  for (const char *p = list; *p;) {
    while (*p == ',' || *p == ' ') p++;
    size_t n = strcspn(p, ", ");
    if (n == 0) break;
    const tdTransport *t = regFind(p, n);
    if (!t)
      return tdErr(err, tpudistInvalidArgument,
                   "TPU_DIST_TRANSPORTS: unknown transport '%.*s' (known: self, shm, ofi, socket)",
                   (int)n, p);
    regAdd(comm, t);
    p += n;
  }
  tdRegState *st = calloc(1, sizeof(tdRegState) + sizeof(tdTransport *) * (size_t)comm->nranks);
  if (!st) return tdErr(err, tpudistNoMemory, "transport registry: out of memory");
  comm->peer_tp = st->peer_tp;
  return tpudistSuccess;
}

const tdTransport *transportForPeer(tdNet *comm, int peer) {
  if (peer < 0 || peer >= comm->nranks || !comm->peer_tp) return NULL;
  if (comm->peer_tp[peer]) return comm->peer_tp[peer];
  for (int i = 0; i < comm->ntransports; i++) {
    if (comm->transports[i]->canReach(comm, peer)) {
      comm->peer_tp[peer] = comm->transports[i];
      TD_INFO(TD_SUBSYS_INIT, "%s: rank %d reaches rank %d with %s", comm->name, comm->rank, peer,
              comm->transports[i]->name);
      return comm->peer_tp[peer];
    }
  }
  return NULL;
}

tpudistResult_t transportInitAll(tdNet *comm, tdPeerInfo *info) {
  const tdConfig *cfg = comm->cfg ? comm->cfg : configGet();
  tdRegState *st = regState(comm);
  memset(info, 0, sizeof(*info));
  info->rank = comm->rank;
  info->pid = (int)getpid();
  info->host_hash = bootstrapHostHash(cfg->hostid);
  struct stat ns;
  info->pid_ns = stat("/proc/self/ns/pid", &ns) == 0 ? (uint64_t)ns.st_ino : 0;
  if (!st) return transportError(comm, tpudistInternalError, "transportInitAll before Setup");
  if (comm->bootstrap) {
    char err[TD_ERRLEN];
    tpudistResult_t res =
        bootstrapAgreeListen(comm->bootstrap, info->agree_addr, sizeof(info->agree_addr), err);
    if (res != tpudistSuccess) return transportError(comm, res, "%s", err);
  }
  info->version = TPUDIST_VERSION_CODE;
  for (int i = 0; i < comm->ntransports; i++) {
    st->inited = i + 1; /* commFini also releases a partial commInit */
    tpudistResult_t res = comm->transports[i]->commInit(comm, info);
    if (res != tpudistSuccess) return res;
  }
  return tpudistSuccess;
}

tpudistResult_t transportProgressAll(tdNet *comm, int *progressed) {
  tpudistResult_t first = tpudistSuccess;
  *progressed = 0;
  for (int i = 0; i < comm->ntransports; i++) {
    int p = 0;
    tpudistResult_t res = comm->transports[i]->progress(comm, &p);
    if (p) *progressed = 1;
    if (res != tpudistSuccess && first == tpudistSuccess) first = res;
  }
  return first;
}

void transportFiniAll(tdNet *comm) {
  tdRegState *st = regState(comm);
  if (!st) return;
  for (int i = st->inited - 1; i >= 0; i--) comm->transports[i]->commFini(comm);
  for (int i = 0; i < comm->ntransports; i++)
    if (comm->transports[i]->commCleanup) comm->transports[i]->commCleanup(comm);
  if (st->own_peers) {
    free(comm->peers);
    comm->peers = NULL;
  }
  free(st);
  comm->peer_tp = NULL;
}

void transportReleaseAll(tdNet *comm) {
  tdRegState *st = regState(comm);
  if (!st) return;
  for (int i = st->inited - 1; i >= 0; i--) comm->transports[i]->commFini(comm);
  st->inited = 0;
  bootstrapRelease(comm->bootstrap); /* peers never connected to us learn it from the listener */
}

int transportProcGone(int pid) {
  char path[64], buf[256];
  snprintf(path, sizeof(path), "/proc/%d/stat", pid);
  FILE *f = fopen(path, "r");
  if (!f) return kill(pid, 0) != 0 && errno == ESRCH;
  size_t n = fread(buf, 1, sizeof(buf) - 1, f);
  fclose(f);
  buf[n] = 0;
  char *rp = strrchr(buf, ')');
  return rp && rp[1] == ' ' && (rp[2] == 'Z' || rp[2] == 'X');
}

int transportPeerGone(const tdNet *comm, int peer) {
  if (!comm->peers || peer < 0 || peer >= comm->nranks || peer == comm->rank) return 0;
  const tdPeerInfo *me = &comm->peers[comm->rank], *p = &comm->peers[peer];
  if (p->host_hash != me->host_hash || !me->pid_ns || p->pid_ns != me->pid_ns) return 0;
  return transportProcGone(p->pid);
}

tpudistResult_t transportConnect(tdNet *comm, char *err) {
  tdPeerInfo info;
  TD_CHECK(transportSetup(comm, err));
  tdRegState *st = regState(comm);
  tpudistResult_t res = transportInitAll(comm, &info);
  if (res != tpudistSuccess) {
    tdErr(err, res, "%s", comm->err.msg);
    return res;
  }
  comm->peers = calloc((size_t)comm->nranks, sizeof(tdPeerInfo));
  if (!comm->peers) return tdErr(err, tpudistNoMemory, "transport: out of memory");
  st->own_peers = 1;
  comm->peers[comm->rank] = info;
  TD_CHECK(bootstrapAllGather(comm->bootstrap, comm->peers, sizeof(tdPeerInfo), err));
  for (int r = 0; r < comm->nranks; r++) {
    if (comm->peers[r].version != TPUDIST_VERSION_CODE)
      return tdErr(err, tpudistInvalidUsage, "peer %d runs tpu_dist version %u, this rank %u", r,
                   comm->peers[r].version, (unsigned)TPUDIST_VERSION_CODE);
    if (comm->peers[r].rank != r)
      return tdErr(err, tpudistInternalError, "peer info %d names rank %d", r, comm->peers[r].rank);
  }
  return tpudistSuccess;
}

tpudistResult_t transportPostSend(tdNet *comm, tdXfer *x) {
  x->done = 0;
  x->result = tpudistSuccess;
  x->tp_priv[3] = NULL;
  const tdTransport *t = transportForPeer(comm, x->peer);
  if (!t) return transportError(comm, tpudistInvalidUsage, "no transport reaches rank %d", x->peer);
  return t->postSend(comm, x);
}

tpudistResult_t transportPostRecv(tdNet *comm, tdXfer *x) {
  x->done = 0;
  x->result = tpudistSuccess;
  x->source = -1;
  x->tp_priv[3] = NULL;
  if (x->peer >= 0) {
    const tdTransport *t = transportForPeer(comm, x->peer);
    if (!t)
      return transportError(comm, tpudistInvalidUsage, "no transport reaches rank %d", x->peer);
    return t->postRecv(comm, x);
  }
  tdRegState *st = regState(comm);
  for (int i = 0; i < comm->ntransports; i++) {
    x->tp_priv[3] = TD_ANY_PROBE;
    tpudistResult_t res = comm->transports[i]->postRecv(comm, x);
    if (res != tpudistSuccess) return res;
    if (x->tp_priv[3] != TD_ANY_PROBE) return tpudistSuccess; /* matched */
  }
  x->tp_priv[3] = NULL;
  xqPush(&st->any, x);
  return tpudistSuccess;
}

tdXfer *transportTakeAnySource(tdNet *comm, const tdMsgKey *k) {
  tdRegState *st = regState(comm);
  tdXfer *prev = NULL;
  for (tdXfer *x = st->any.head; x; prev = x, x = x->next) {
    if (keyEq(&x->key, k)) {
      xqUnlink(&st->any, prev, x);
      return x;
    }
  }
  return NULL;
}

tpudistResult_t transportWait(tdNet *comm, tdXfer *x, int timeout_ms) {
  const tdConfig *cfg = comm->cfg ? comm->cfg : configGet();
  uint64_t deadline = clockCoarseNs() + (uint64_t)timeout_ms * 1000000ull;
  tdBackoff bo;
  backoffInit(&bo, cfg->spin_us);
  while (!__atomic_load_n(&x->done, __ATOMIC_ACQUIRE)) {
    int progressed = 0;
    transportProgressAll(comm, &progressed);
    if (__atomic_load_n(&x->done, __ATOMIC_ACQUIRE)) break;
    if (comm->aborted) return tpudistAborted;
    if (clockCoarseNs() > deadline)
      return transportError(comm, tpudistTimeout,
                            "timeout after %d ms waiting for a transfer of %zu bytes with rank %d "
                            "(seq %llu stream %u)",
                            timeout_ms, x->len, x->peer, (unsigned long long)x->key.seq,
                            x->key.stream);
    backoffStep(&bo, progressed);
  }
  return x->result;
}

tpudistResult_t transportTestComm(struct tdBootstrap *bs, const tdConfig *cfg, tdNet **out,
                                  char *err) {
  tdNet *comm = calloc(1, sizeof(*comm));
  if (!comm) return tdErr(err, tpudistNoMemory, "out of memory");
  comm->rank = bootstrapRank(bs);
  comm->nranks = bootstrapNranks(bs);
  comm->comm_hash = bootstrapCommHash(bs);
  comm->bootstrap = bs;
  comm->cfg = cfg ? cfg : configGet();
  comm->chunk_bytes = hostChunkBytes(NULL, comm->cfg->chunk_bytes); /* no host read in tests */
  comm->timeout_ms = comm->cfg->timeout_ms;
  snprintf(comm->name, sizeof(comm->name), "comm-%016llx", (unsigned long long)comm->comm_hash);
  netNameErrors(comm);
  tpudistResult_t res = transportConnect(comm, err);
  if (res != tpudistSuccess) {
    comm->bootstrap = NULL;
    transportTestCommFree(comm);
    return res;
  }
  *out = comm;
  return tpudistSuccess;
}

void transportTestCommFree(tdNet *comm) {
  if (!comm) return;
  transportFiniAll(comm);
  bootstrapFree(comm->bootstrap);
  free(comm);
}

void transportComplete(tdXfer *x, tpudistResult_t result, int source) {
  x->result = result;
  x->source = source;
  __atomic_store_n(&x->done, 1, __ATOMIC_RELEASE);
}

tpudistResult_t transportCheckRecv(tdNet *comm, const tdXfer *x) {
  if (!x->reduce_src) return tpudistSuccess;
  size_t es = kernelDtypeValid(x->dtype) ? kernelDtypeSize((tpudistDataType_t)x->dtype) : 0;
  if (!es || !kernelOpValid(x->op) || x->len % es)
    return transportError(comm, tpudistInvalidArgument,
                          "reducing receive with dtype %d op %d and %zu bytes is not valid",
                          x->dtype, x->op, x->len);
  return tpudistSuccess;
}

void transportDeliver(tdXfer *r, size_t off, const void *src, size_t n) {
  if (n == 0) return;
  if (!r->reduce_src) {
    memcpy((char *)r->buf + off, src, n);
    return;
  }
  size_t es = kernelDtypeSize((tpudistDataType_t)r->dtype);
  kernelReduce((char *)r->buf + off, (const char *)r->reduce_src + off, src, n / es,
               (tpudistDataType_t)r->dtype, (tpudistRedOp_t)r->op);
}

void transportLenMismatch(tdNet *comm, tdXfer *r, int peer, size_t got) {
  transportError(comm, tpudistInvalidUsage,
                 "message from rank %d (seq %llu stream %u ordinal %u piece %u) has %zu bytes, "
                 "the receive expects %zu (mismatched calls?)",
                 peer, (unsigned long long)r->key.seq, r->key.stream, r->key.ordinal, r->key.piece,
                 got, r->len);
  transportComplete(r, tpudistInvalidUsage, peer);
}
