/*
 * self.c - the loopback transport: a rank's messages to itself. A send whose receive is posted is
 * delivered at once (copy or reduce straight from the send buffer); otherwise the bytes are copied
 * into a kept buffer so the send completes (no deadlock when a rank waits for its send before
 * posting the receive), and the receive takes them by key later.
 */
#include <stdlib.h>
#include <string.h>

#include "registry.h"

typedef struct tdSelfMsg {
  tdMsgKey key;
  size_t len;
  struct tdSelfMsg *next;
  char data[];
} tdSelfMsg;

typedef struct {
  tdXferQueue posted;
  tdSelfMsg *unexp_head, *unexp_tail;
} tdSelfCtx;

static tdSelfCtx *selfCtx(tdNet *comm) {
  int i = netTransportIndex(comm, &tdTransportSelf);
  return i < 0 ? NULL : comm->tp_ctx[i];
}

static int selfCanReach(tdNet *comm, int peer) {
  return peer == comm->rank;
}

static tpudistResult_t selfCommInit(tdNet *comm, tdPeerInfo *info) {
  (void)info;
  int i = netTransportIndex(comm, &tdTransportSelf);
  tdSelfCtx *c = calloc(1, sizeof(*c));
  if (!c) return transportError(comm, tpudistNoMemory, "self transport: out of memory");
  comm->tp_ctx[i] = c;
  return tpudistSuccess;
}

static void selfCommFini(tdNet *comm) {
  int i = netTransportIndex(comm, &tdTransportSelf);
  tdSelfCtx *c = comm->tp_ctx[i];
  if (!c) return;
  while (c->unexp_head) {
    tdSelfMsg *m = c->unexp_head;
    c->unexp_head = m->next;
    free(m);
  }
  free(c);
  comm->tp_ctx[i] = NULL;
}

static void selfDeliver(tdNet *comm, tdXfer *r, const void *src, size_t len) {
  if (len != r->len) {
    transportLenMismatch(comm, r, comm->rank, len);
    return;
  }
  transportDeliver(r, 0, src, len);
  transportComplete(r, tpudistSuccess, comm->rank);
}

static tpudistResult_t selfPostSend(tdNet *comm, tdXfer *x) {
  tdSelfCtx *c = selfCtx(comm);
  tdXfer *r = transportMatchRecv(comm, &c->posted, comm->rank, &x->key, &tdTransportSelf);
  if (r) {
    selfDeliver(comm, r, x->buf, x->len);
  } else {
    tdSelfMsg *m = malloc(sizeof(*m) + x->len);
    if (!m) return transportError(comm, tpudistNoMemory, "self transport: out of memory");
    m->key = x->key;
    m->len = x->len;
    m->next = NULL;
    if (x->len) memcpy(m->data, x->buf, x->len);
    if (c->unexp_tail)
      c->unexp_tail->next = m;
    else
      c->unexp_head = m;
    c->unexp_tail = m;
  }
  transportComplete(x, tpudistSuccess, comm->rank);
  return tpudistSuccess;
}

static tpudistResult_t selfPostRecv(tdNet *comm, tdXfer *x) {
  tdSelfCtx *c = selfCtx(comm);
  TD_CHECK(transportCheckRecv(comm, x));
  tdSelfMsg *prev = NULL;
  for (tdSelfMsg *m = c->unexp_head; m; prev = m, m = m->next) {
    if (!keyEq(&m->key, &x->key)) continue;
    if (prev)
      prev->next = m->next;
    else
      c->unexp_head = m->next;
    if (c->unexp_tail == m) c->unexp_tail = prev;
    if (x->tp_priv[3] == TD_ANY_PROBE) x->tp_priv[3] = (void *)&tdTransportSelf;
    selfDeliver(comm, x, m->data, m->len);
    free(m);
    return tpudistSuccess;
  }
  if (x->tp_priv[3] == TD_ANY_PROBE) return tpudistSuccess; /* any-source probe: not queued */
  xqPush(&c->posted, x);
  return tpudistSuccess;
}

static tpudistResult_t selfProgress(tdNet *comm, int *progressed) {
  (void)comm;
  *progressed = 0;
  return tpudistSuccess;
}

TD_TRANSPORT_DEFINE(tdTransportSelf, "self", self);
