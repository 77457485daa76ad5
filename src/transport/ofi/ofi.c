/*
 * ofi.c - the libfabric transport: one reliable-datagram endpoint (FI_EP_RDM) per communicator and
 * rank, tagged messages, and RMA reads for large messages (protocol: ofi_priv.h).
 *
 * commInit opens the provider TPU_DIST_OFI_PROVIDER names (default: the first RDMA provider
 * (verbs, efa, psm2, psm3, cxi) where an RDMA device is present; else ofi stays off and the next
 * transport carries the traffic) and publishes the endpoint's name and the provider's hash in
 * tdPeerInfo; a peer is reachable when it runs the same provider. Software providers that run
 * over IP (tcp, udp, sockets) open their endpoint on the address the socket transport would
 * listen on (TPU_DIST_SOCKET_IFNAME), so ofi never picks another interface. Progress: the
 * completion queue is read in progress() (the executor's progress model; no thread of ours).
 * Failures: an error completion with a peer, or a busy peer whose process is gone or whose
 * bootstrap listener refuses (it released the communicator), fails every transfer pending with
 * it with tpudistRemoteError naming the rank; its operations are cancelled.
 */
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

#include "bootstrap.h"
#include "net.h"
#include "ofi_priv.h"
#include "rt_log.h"

tdOfiComm *ofiComm(tdNet *comm) {
  int i = netTransportIndex(comm, &tdTransportOfi);
  return i < 0 ? NULL : comm->tp_ctx[i];
}

static int ofiCanReach(tdNet *comm, int peer) {
  tdOfiComm *c = ofiComm(comm);
  if (!c || !c->ep || !comm->peers || peer == comm->rank) return 0;
  const tdPeerInfo *p = &comm->peers[peer];
  return p->ofi_addrlen > 0 && p->ofi_prov == c->prov_hash;
}

static uint32_t strHash(const char *s) {
  uint32_t h = 2166136261u;
  for (; *s; s++) h = (h ^ (uint8_t)*s) * 16777619u;
  return h ? h : 1;
}

/* For providers over IP: the numeric address of the socket transport's interface into node. */
static int ipNode(const tdConfig *cfg, const char *prov, char *node, size_t size) {
  static const char *const ip[] = {"tcp", "udp", "sockets", "net"};
  size_t n = strcspn(prov, ";"), i;
  for (i = 0; i < TD_ARRAY_SIZE(ip); i++)
    if (strlen(ip[i]) == n && !strncmp(prov, ip[i], n)) break;
  tdNetAddr a;
  char err[TD_ERRLEN];
  if (i == TD_ARRAY_SIZE(ip) || netLocalAddr(cfg->socket_ifname, &a, err) != tpudistSuccess)
    return 0;
  return inet_ntop(a.family, a.addr, node, (socklen_t)size) != NULL;
}

static struct fi_info *hintsNew(const tdOfiLib *lib, const char *prov, int rma) {
  struct fi_info *h = lib->dupinfo(NULL);
  if (!h) return NULL;
  h->caps = FI_TAGGED | FI_DIRECTED_RECV;
  if (rma) h->caps |= FI_RMA | FI_READ | FI_REMOTE_READ;
  h->mode = FI_CONTEXT | FI_CONTEXT2;
  h->ep_attr->type = FI_EP_RDM;
  h->domain_attr->threading = FI_THREAD_DOMAIN;
  h->domain_attr->av_type = FI_AV_TABLE;
  h->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_ENDPOINT;
  h->domain_attr->cq_data_size = 4;
  if (*prov) h->fabric_attr->prov_name = strdup(prov);
  return h;
}

/* The provider's first matching interface into c->info (with RMA if it has it); 1 if none. */
static int chooseInfo(const tdConfig *cfg, tdOfiComm *c, char *why) {
  const char *prov = cfg->ofi_provider ? cfg->ofi_provider : "";
  char node[64] = "";
  int ip = *prov && ipNode(cfg, prov, node, sizeof(node));
  int rc = -FI_ENODATA;
  for (int rma = 1; rma >= 0 && rc != 0; rma--) {
    struct fi_info *h = hintsNew(c->lib, prov, rma), *list = NULL;
    if (!h) return snprintf(why, TD_ERRLEN, "out of memory"), 1;
    rc = c->lib->getinfo(TD_OFI_API, ip ? node : NULL, NULL, ip ? FI_SOURCE : 0, h, &list);
    c->lib->freeinfo(h);
    struct fi_info *pick = NULL;
    for (struct fi_info *i = rc == 0 ? list : NULL; i && !pick; i = i->next)
      if (*prov || ofiProvIsRdma(i->fabric_attr->prov_name)) pick = i;
    if (pick) c->info = c->lib->dupinfo(pick);
    if (list) c->lib->freeinfo(list);
    if (rc == 0 && !c->info) rc = -FI_ENODATA;
  }
  if (rc == 0) return 0;
  snprintf(why, TD_ERRLEN, "%s%s%s offers no reliable-datagram endpoint with tagged messages (%s)",
           *prov ? "provider " : "no RDMA provider", prov, ip ? " on that address" : "",
           c->lib->strerror(-rc));
  return 1;
}

#define OFI_TRY(call, what)                                                                 \
  do {                                                                                      \
    int rc_ = (int)(call);                                                                  \
    if (rc_ != 0)                                                                           \
      return transportError(comm, tpudistSystemError, "ofi (%s): %s: %s",                   \
                            c->info->fabric_attr->prov_name, what, c->lib->strerror(-rc_)); \
  } while (0)

/* Fabric, domain, completion queue, address vector and enabled endpoint of c->info. */
static tpudistResult_t openEndpoint(tdNet *comm, tdOfiComm *c, tdPeerInfo *info) {
  struct fi_cq_attr cqa = {.format = FI_CQ_FORMAT_TAGGED, .wait_obj = FI_WAIT_NONE};
  struct fi_av_attr ava = {.type = FI_AV_TABLE};
  OFI_TRY(c->lib->fabric(c->info->fabric_attr, &c->fabric, NULL), "opening the fabric");
  OFI_TRY(fi_domain(c->fabric, c->info, &c->domain, NULL), "opening the domain");
  OFI_TRY(fi_cq_open(c->domain, &cqa, &c->cq, NULL), "opening the completion queue");
  OFI_TRY(fi_av_open(c->domain, &ava, &c->av, NULL), "opening the address vector");
  OFI_TRY(fi_endpoint(c->domain, c->info, &c->ep, NULL), "opening the endpoint");
  OFI_TRY(fi_ep_bind(c->ep, &c->cq->fid, FI_TRANSMIT | FI_RECV), "binding the queue");
  OFI_TRY(fi_ep_bind(c->ep, &c->av->fid, 0), "binding the address vector");
  OFI_TRY(fi_enable(c->ep), "enabling the endpoint");
  size_t len = sizeof(info->ofi_addr);
  OFI_TRY(fi_getname(&c->ep->fid, info->ofi_addr, &len), "naming the endpoint");
  info->ofi_addrlen = (uint32_t)len;
  info->ofi_prov = c->prov_hash;
  return tpudistSuccess;
}

/* Publishes nothing: ofi is off on this rank (logged with the reason). */
static tpudistResult_t ofiOff(tdNet *comm, const tdConfig *cfg, const char *why) {
  int asked = (cfg->ofi_provider && *cfg->ofi_provider) ||
              (cfg->transports && strstr(cfg->transports, "ofi"));
  if (asked)
    TD_WARN(TD_SUBSYS_IB, "%s rank %d: the ofi transport is unavailable: %s", comm->name,
            comm->rank, why);
  else
    TD_INFO(TD_SUBSYS_IB, "%s rank %d: ofi off: %s", comm->name, comm->rank, why);
  return tpudistSuccess;
}

static tpudistResult_t ofiCommInit(tdNet *comm, tdPeerInfo *info) {
  const tdConfig *cfg = comm->cfg ? comm->cfg : configGet();
  char why[TD_ERRLEN];
  tdOfiComm *c = calloc(1, sizeof(*c));
  if (!c) return transportError(comm, tpudistNoMemory, "ofi transport: out of memory");
  comm->tp_ctx[netTransportIndex(comm, &tdTransportOfi)] = c;
  if ((!cfg->ofi_provider || !*cfg->ofi_provider) && !ofiRdmaDevicePresent())
    return ofiOff(comm, cfg,
                  "no RDMA device on this machine (TPU_DIST_OFI_PROVIDER names a provider to "
                  "use one anyway, e.g. tcp;ofi_rxm)");
  if (!(c->lib = ofiLib(why))) return ofiOff(comm, cfg, why);
  if (chooseInfo(cfg, c, why)) return ofiOff(comm, cfg, why);
  c->addr = malloc(sizeof(fi_addr_t) * (size_t)comm->nranks);
  c->busy = calloc((size_t)comm->nranks, sizeof(int));
  c->why = calloc((size_t)comm->nranks, sizeof(char *));
  c->mrc_n = cfg->ofi_mr_cache;
  c->mrc = calloc((size_t)c->mrc_n + 1, sizeof(tdOfiMr *));
  if (!c->addr || !c->busy || !c->why || !c->mrc)
    return transportError(comm, tpudistNoMemory, "ofi transport: out of memory");
  for (int p = 0; p < comm->nranks; p++) c->addr[p] = FI_ADDR_NOTAVAIL;
  c->prov_hash = strHash(c->info->fabric_attr->prov_name);
  c->mr_mode = (uint64_t)c->info->domain_attr->mr_mode;
  c->rma = (c->info->caps & FI_RMA) != 0;
  c->rma_min = (size_t)cfg->ofi_rma_min_bytes;
  uint64_t fmt = c->info->ep_attr->mem_tag_format;
  c->tag_bits = fmt ? 64 - __builtin_clzll(fmt) : 64;
  if (c->tag_bits < TD_OFI_KEY_LOW_BITS + 8)
    return transportError(comm, tpudistSystemError, "ofi (%s): only %d tag bits (%d needed)",
                          c->info->fabric_attr->prov_name, c->tag_bits, TD_OFI_KEY_LOW_BITS + 8);
  TD_CHECK(openEndpoint(comm, c, info));
  TD_INFO(TD_SUBSYS_IB, "%s rank %d: ofi over %s (domain %s), %s, %d tag bits", comm->name,
          comm->rank, c->info->fabric_attr->prov_name, c->info->domain_attr->name,
          c->rma ? "RMA reads for large messages" : "tagged messages only", c->tag_bits);
  return tpudistSuccess;
}

static void reqFree(tdOfiReq *r) {
  free(r);
}

static void ofiCommFini(tdNet *comm) {
  int i = netTransportIndex(comm, &tdTransportOfi);
  tdOfiComm *c = comm->tp_ctx[i];
  if (!c) return;
  if (c->ep) fi_close(&c->ep->fid); /* first: no operation of the provider survives it */
  while (c->live) {
    tdOfiReq *r = c->live;
    c->live = r->lnext;
    if (r->mr) ofiMrPut(c, r->mr);
    reqFree(r);
  }
  while (c->spare) {
    tdOfiReq *r = c->spare;
    c->spare = r->next;
    reqFree(r);
  }
  ofiMrFini(c);
  if (c->av) fi_close(&c->av->fid);
  if (c->cq) fi_close(&c->cq->fid);
  if (c->domain) fi_close(&c->domain->fid);
  if (c->fabric) fi_close(&c->fabric->fid);
  if (c->info) c->lib->freeinfo(c->info);
  for (int p = 0; c->why && p < comm->nranks; p++) free(c->why[p]);
  free(c->why);
  free(c->busy);
  free(c->addr);
  free(c);
  comm->tp_ctx[i] = NULL;
}

/* A new request for x, or an error (x completed) if its peer failed or its key does not fit. */
static tpudistResult_t reqStart(tdNet *comm, tdOfiComm *c, tdXfer *x, tdOfiReq **out) {
  char err[TD_ERRLEN];
  uint64_t tag = 0;
  int p = x->peer;
  *out = NULL;
  if (p >= 0 && c->why[p]) {
    transportComplete(x, tpudistRemoteError, p);
    return transportError(comm, tpudistRemoteError, "ofi: rank %d: %s", p, c->why[p]);
  }
  if (ofiTag(c, &x->key, 0, &tag, err) != 0) {
    transportComplete(x, tpudistInvalidUsage, p);
    return transportError(comm, tpudistInvalidUsage, "%s", err);
  }
  int rc = p >= 0 ? ofiPeerAddr(comm, c, p) : 0;
  if (rc != 0) {
    transportComplete(x, tpudistRemoteError, p);
    return transportError(comm, tpudistRemoteError, "ofi: the address of rank %d: %s", p,
                          c->lib->strerror(-rc));
  }
  tdOfiReq *r = ofiReqNew(c, x);
  if (!r) {
    transportComplete(x, tpudistNoMemory, p);
    return transportError(comm, tpudistNoMemory, "ofi transport: out of memory");
  }
  r->tag = tag;
  if (p >= 0) {
    c->busy[p]++;
    r->counted = 1;
  }
  *out = r;
  return tpudistSuccess;
}

static tpudistResult_t ofiPostSend(tdNet *comm, tdXfer *x) {
  tdOfiComm *c = ofiComm(comm);
  tdOfiReq *r;
  TD_CHECK(reqStart(comm, c, x, &r));
  r->send = 1;
  r->state = OR_SEND;
  if (c->rma && c->rma_min && x->len >= c->rma_min) {
    char err[TD_ERRLEN];
    if (!(r->mr = ofiMrGet(c, x->buf, x->len, err))) {
      r->state = OR_WAIT;
      ofiReqFinish(c, r, tpudistSystemError);
      ofiReqRelease(c, r);
      return transportError(comm, tpudistSystemError, "%s", err);
    }
    uint64_t addr = (c->mr_mode & FI_MR_VIRT_ADDR) ? (uint64_t)(uintptr_t)x->buf
                                                   : (uint64_t)((char *)x->buf - r->mr->base);
    r->rts = (tdOfiRts){TD_OFI_RTS_MAGIC, addr, r->mr->key, x->len};
    r->rma = 1;
    r->state = OR_RTS;
  }
  return ofiReqNext(comm, c, r);
}

/* An any-source receive is taken by ofi only when ofi reaches every other rank: the provider
 * matches it, so no other transport could hand it a message. */
static tpudistResult_t anySourceCheck(tdNet *comm) {
  for (int p = 0; p < comm->nranks; p++) {
    const tdTransport *t = p == comm->rank ? NULL : transportForPeer(comm, p);
    if (t && t != &tdTransportOfi)
      return transportError(comm, tpudistInvalidUsage,
                            "ofi: an any-source receive needs every other rank reached by ofi, "
                            "but rank %d uses %s",
                            p, t->name);
  }
  return tpudistSuccess;
}

static tpudistResult_t ofiPostRecv(tdNet *comm, tdXfer *x) {
  tdOfiComm *c = ofiComm(comm);
  TD_CHECK(transportCheckRecv(comm, x));
  if (x->tp_priv[3] == TD_ANY_PROBE) {
    if (!c->ep) return tpudistSuccess;
    TD_CHECK(anySourceCheck(comm));
    x->tp_priv[3] = (void *)&tdTransportOfi; /* taken: the provider matches it */
  }
  tdOfiReq *r;
  TD_CHECK(reqStart(comm, c, x, &r));
  r->land = x->buf;
  r->cap = x->len;
  if (x->reduce_src || (c->rma && x->len < sizeof(tdOfiRts))) {
    r->cap = TD_MAX(x->len, sizeof(tdOfiRts));
    if (!(r->stage = ofiStageGet(c, r->cap))) {
      r->state = OR_WAIT;
      ofiReqFinish(c, r, tpudistNoMemory);
      ofiReqRelease(c, r);
      return transportError(comm, tpudistNoMemory, "ofi: no memory to stage %zu bytes", x->len);
    }
    r->land = r->stage->buf;
  }
  r->state = OR_RECV;
  return ofiReqNext(comm, c, r);
}

/* After 100 ms without a completion, and every 100 ms while that lasts: a busy peer whose process
 * is gone or that released the communicator fails. (While completions flow, nobody waits on a
 * dead peer for long, and no probe connection is made.) */
static tpudistResult_t checkLiveness(tdNet *comm, tdOfiComm *c, int moved) {
  int64_t now = netNowMs();
  if (moved || !c->next_live_ms) c->next_live_ms = now + 100;
  if (now < c->next_live_ms) return tpudistSuccess;
  c->next_live_ms = now + 100;
  tpudistResult_t first = tpudistSuccess;
  for (int p = 0; p < comm->nranks; p++) {
    if (!c->busy[p] || c->why[p]) continue;
    char why[96];
    if (transportPeerGone(comm, p))
      snprintf(why, sizeof(why), "process %d exited", comm->peers[p].pid);
    else if (bootstrapPeerReleased(comm->bootstrap, p))
      snprintf(why, sizeof(why), "the rank released the communicator (destroyed, aborted or gone)");
    else
      continue;
    tpudistResult_t res = ofiPeerFail(comm, c, p, why);
    if (first == tpudistSuccess) first = res;
  }
  return first;
}

static tpudistResult_t ofiProgress(tdNet *comm, int *progressed) {
  tdOfiComm *c = ofiComm(comm);
  int moved = 0;
  *progressed = 0;
  if (!c || !c->ep) return tpudistSuccess;
  tpudistResult_t res = ofiPollCq(comm, c, &moved);
  tpudistResult_t r2 = ofiRetry(comm, c, &moved);
  tpudistResult_t r3 = c->live ? checkLiveness(comm, c, moved) : tpudistSuccess;
  *progressed = moved;
  return res != tpudistSuccess ? res : r2 != tpudistSuccess ? r2 : r3;
}

TD_TRANSPORT_DEFINE(tdTransportOfi, "ofi", ofi);
