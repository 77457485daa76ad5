/*
 * ofi_priv.h - the ofi transport's state, shared by ofi.c (set-up, posts, progress, liveness),
 * ofi_req.c (requests, failed peers, each transfer's libfabric operations and their completions;
 * it calls nothing of ofi.c) and ofi_mr.c (registration cache, staging buffers).
 *
 * Every transfer gets a request (tdOfiReq). Small and medium messages are one tagged message
 * (fi_tsenddata / fi_trecv) into the receive's buffer. A message of at least
 * TPU_DIST_OFI_RMA_MIN_BYTES, where the provider has RMA, is announced instead: the sender
 * registers its buffer and sends a tagged control message (tdOfiRts: address, remote key, length)
 * under the message's tag, which lands in the receive's buffer; the receiver reads the bytes with
 * fi_read and answers with an empty tagged FIN, which completes the send. The 32-bit remote CQ
 * data of every message carries the sender's rank and whether it is an announcement, so a
 * receive tells the two apart and an any-source receive learns its sender.
 *
 * Tags: the match key (sequence, stream, ordinal, piece) packed into the provider's tag bits
 * (ofiTag): from the top, 1 bit FIN, then the sequence's low bits (for point-to-point messages,
 * whose sequence is 0, the ordinal's high bits), 10 bits stream (1023: point to point), 18 bits
 * ordinal, 14 bits piece. A key whose stream, ordinal or piece does not fit is refused with an
 * error at its post; sequences wrap (only far-apart collectives share low bits, never both in
 * flight with one peer).
 */
#ifndef TD_OFI_PRIV_H_
#define TD_OFI_PRIV_H_

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include "ofi_lib.h"
#include "registry.h"

#define TD_OFI_PIECE_BITS 14
#define TD_OFI_ORD_BITS 18
#define TD_OFI_STREAM_BITS 10
#define TD_OFI_KEY_LOW_BITS (TD_OFI_PIECE_BITS + TD_OFI_ORD_BITS + TD_OFI_STREAM_BITS)
#define TD_OFI_STREAM_P2P ((1u << TD_OFI_STREAM_BITS) - 1)
#define TD_OFI_RTS_FLAG 0x80000000u            /* remote CQ data: the message is an announcement */
#define TD_OFI_RTS_MAGIC 0x7374726964747074ull /* "ptdtrirts" */

/* The announcement of an RMA message (sender to receiver, in the message's tag). */
typedef struct {
  uint64_t magic;
  uint64_t addr; /* what fi_read takes as the remote address */
  uint64_t key;  /* remote key of the sender's registration */
  uint64_t len;  /* bytes */
} tdOfiRts;

/* A registration of a send buffer (ofi_mr.c). */
typedef struct tdOfiMr {
  char *base;
  size_t len;
  struct fid_mr *mr;
  uint64_t key;
  int refs;          /* requests using it */
  int cached;        /* in the cache (else freed when the last user is done) */
  uint64_t last_use; /* cache age */
} tdOfiMr;

/* A staging buffer (ofi_mr.c) of a reducing receive, or of a receive shorter than an
 * announcement (so that an announcement always fits and a mismatch is told exactly). */
typedef struct tdOfiStage {
  char *buf;
  size_t cap;
  int busy;
  struct tdOfiStage *next;
} tdOfiStage;

struct tdOfiReq;
/* A libfabric operation's context: the provider hands it back in the completion. */
typedef struct {
  struct fi_context2 fc; /* first: FI_CONTEXT / FI_CONTEXT2 providers use it */
  struct tdOfiReq *req;
  int busy; /* posted and not yet completed */
} tdOfiCtx;

/* What a request does next (its state). */
enum {
  OR_SEND,     /* tagged send of the payload */
  OR_RTS,      /* post the FIN receive, then send the announcement */
  OR_RTS_SEND, /* send the announcement (FIN receive posted) */
  OR_RECV,     /* tagged receive */
  OR_READ,     /* RMA read of an announced message */
  OR_FIN,      /* send the FIN (receiver, after its read) */
  OR_WAIT      /* operations posted; waiting for completions */
};

typedef struct tdOfiReq {
  tdOfiCtx main, fin; /* main: the send, receive or read; fin: the sender's FIN receive */
  tdXfer *x;          /* NULL once the transfer completed (the request may still wait) */
  int peer;           /* peer rank; -1 for an any-source receive not yet matched */
  int state;
  int send, rma; /* a send; an RMA message (announced) */
  uint64_t tag;
  char *land;            /* receive: where the message lands (x->buf or a staging buffer) */
  size_t cap;            /* receive: bytes posted at land */
  tdOfiStage *stage;     /* reducing receive's staging buffer */
  tdOfiMr *mr;           /* RMA send: the registration of x->buf */
  tdOfiRts rts;          /* RMA send: the announcement; receive: a copy of the one received */
  int queued;            /* in the retry queue */
  int counted;           /* counted in its peer's busy count */
  int live;              /* in the live list (else free) */
  struct tdOfiReq *next; /* retry queue or free list */
  struct tdOfiReq *lprev, *lnext; /* live requests */
} tdOfiReq;

typedef struct {
  const tdOfiLib *lib;
  struct fi_info *info;
  struct fid_fabric *fabric;
  struct fid_domain *domain;
  struct fid_av *av;
  struct fid_cq *cq;
  struct fid_ep *ep;
  int rma;              /* the provider has RMA reads */
  int tag_bits;         /* usable tag bits */
  uint64_t mr_mode;     /* the domain's FI_MR_* mode bits */
  size_t rma_min;       /* TPU_DIST_OFI_RMA_MIN_BYTES (0: never) */
  uint32_t prov_hash;   /* published in tdPeerInfo.ofi_prov */
  fi_addr_t *addr;      /* per peer: its address in the AV (FI_ADDR_NOTAVAIL until inserted) */
  int *busy;            /* per peer: transfers pending */
  char **why;           /* per peer: why it failed (NULL while healthy) */
  int64_t next_live_ms; /* next liveness check (100 ms after the last completion) */
  tdOfiReq *live;       /* requests with operations in the provider or queued */
  tdOfiReq *retry_head, *retry_tail; /* requests whose next operation met FI_EAGAIN */
  tdOfiReq *spare;                   /* free requests */
  tdOfiMr **mrc;                     /* the registration cache (TPU_DIST_OFI_MR_CACHE slots) */
  int mrc_n;
  uint64_t mr_clock;
  uint64_t next_key; /* requested keys, for providers without FI_MR_PROV_KEY */
  tdOfiStage *stages;
} tdOfiComm;

/* ofi.c */
tdOfiComm *ofiComm(tdNet *comm);

/* ofi_req.c */
/* A new live request for x (peer, no operation yet); NULL when out of memory. */
tdOfiReq *ofiReqNew(tdOfiComm *c, tdXfer *x);
/* Fails every transfer pending with peer p (tpudistRemoteError naming it and why) and every later
 * post to it; cancels its operations in the provider. Returns the recorded error. */
tpudistResult_t ofiPeerFail(tdNet *comm, tdOfiComm *c, int p, const char *why);
/* Inserts peer p's address into the address vector (once); 0 or a negative libfabric error. */
int ofiPeerAddr(tdNet *comm, tdOfiComm *c, int p);
/* Takes r's transfer (NULL if it has none any more) away from it: the caller completes it. */
tdXfer *ofiReqDetach(tdOfiComm *c, tdOfiReq *r);
/* Completes r's transfer (if it still has one) with res. */
void ofiReqFinish(tdOfiComm *c, tdOfiReq *r, tpudistResult_t res);
/* Frees r once it has no transfer, no operation in the provider and nothing left to issue. */
void ofiReqRelease(tdOfiComm *c, tdOfiReq *r);
/* The tag of key (fin: the FIN's); -1 with a reason in err if a field does not fit. */
int ofiTag(const tdOfiComm *c, const tdMsgKey *k, int fin, uint64_t *tag, char *err);
/* Issues req's next operation; 0, 1 if the provider said FI_EAGAIN (queued for a retry), or a
 * negative libfabric error. */
int ofiReqIssue(tdNet *comm, tdOfiComm *c, tdOfiReq *r);
/* Issues r's next operation, queueing it for a retry on FI_EAGAIN; a post that fails fails the
 * peer. */
tpudistResult_t ofiReqNext(tdNet *comm, tdOfiComm *c, tdOfiReq *r);
/* Retries the queued requests in order; stops at the first that still meets FI_EAGAIN. */
tpudistResult_t ofiRetry(tdNet *comm, tdOfiComm *c, int *moved);
/* Reads the completion queue dry (bounded); *moved set if anything completed. */
tpudistResult_t ofiPollCq(tdNet *comm, tdOfiComm *c, int *moved);

/* ofi_mr.c */
/* A registration covering [buf, buf + len) for remote reads (cached); NULL with err set. */
tdOfiMr *ofiMrGet(tdOfiComm *c, void *buf, size_t len, char *err);
void ofiMrPut(tdOfiComm *c, tdOfiMr *m);
/* A staging buffer of at least len bytes; NULL when out of memory. */
tdOfiStage *ofiStageGet(tdOfiComm *c, size_t len);
void ofiStagePut(tdOfiStage *s);
/* Releases the cache and the staging buffers (at fini, after the endpoint is closed). */
void ofiMrFini(tdOfiComm *c);

#endif /* TD_OFI_PRIV_H_ */
