/*
 * shm.c - the shared-memory transport between ranks of one host (equal host_hash): posting,
 * matching and progress over the per-pair rings described in shm.h (segments in shm_seg.c).
 *
 * Sending: the head of a peer's send queue is written into the outgoing ring as FRAG records of at
 * most a quarter of the ring (a send completes when its last piece is in the ring), or, for
 * messages of at least TPU_DIST_SHM_CMA_MIN_BYTES (64 KiB in reducing collectives, whose
 * receivers reduce small pieces faster from the ring) when the receiver has found single-copy
 * reads allowed, as one CMA descriptor (the send completes when the receiver acknowledges it).
 *
 * Receiving: records are taken in ring order. A message whose receive is posted (peer-specific,
 * else any-source) is copied or reduced straight from the ring (kernelReduce(dst, reduce_src,
 * ring)), or read with process_vm_readv straight into dst (reducing receives: through a staging
 * buffer touched at commInit). An unmatched message is left in the ring while it is the ring's
 * only complete message, so a receive posted later still reads it in place; once more data
 * follows, it is copied out (CMA descriptors only: the bytes stay in the sender). Messages of one
 * pair are delivered in order per key; different keys may be received in any order.
 *
 * Length mismatch: a message whose posted receive expects another length is consumed and dropped
 * (a single-copy one is refused with an acknowledgement that says so, and the sender's transfer
 * ends with tpudistInvalidUsage too), so the pair's later messages still match.
 *
 * Failure: a peer whose process exited (pidfd, checked every 100 ms while transfers with it are
 * pending) fails those transfers with tpudistRemoteError naming it.
 */
#include "shm.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include "bootstrap.h"
#include "kernels.h"
#include "rt_config.h"
#include "rt_log.h"

#define TD_R64(n) (((n) + 63) & ~(uint64_t)63)
#define TD_CMA_NACK (1ull << 63)
#define TD_CMA_NACK_LEN (1ull << 62) /* with TD_CMA_NACK: the receive expects another length */

static tdShmCtx *shmCtx(tdNet *comm) {
  int i = netTransportIndex(comm, &tdTransportShm);
  return i < 0 ? NULL : comm->tp_ctx[i];
}

static int shmCanReach(tdNet *comm, int peer) {
  if (peer == comm->rank || !comm->peers) return 0;
  return comm->peers[peer].host_hash == comm->peers[comm->rank].host_hash;
}

static tpudistResult_t shmCommInit(tdNet *comm, tdPeerInfo *info) {
  const tdConfig *cfg = comm->cfg ? comm->cfg : configGet();
  int i = netTransportIndex(comm, &tdTransportShm);
  tdShmCtx *c = calloc(1, sizeof(*c));
  if (!c) return transportError(comm, tpudistNoMemory, "shm transport: out of memory");
  comm->tp_ctx[i] = c;
  c->peers = calloc((size_t)comm->nranks, sizeof(tdShmPeer));
  c->active = calloc((size_t)comm->nranks, sizeof(int));
  c->stage = malloc(TD_SHM_STAGE);
  if (!c->peers || !c->active || !c->stage)
    return transportError(comm, tpudistNoMemory, "shm transport: out of memory");
  memset(c->stage, 0, TD_SHM_STAGE); /* touched now, never faulted on the hot path */
  for (int p = 0; p < comm->nranks; p++) c->peers[p].pidfd = -1;
  /* the table's ranges hold (rt_config.c): no defaults repeated here */
  c->ring_max = (uint64_t)cfg->shm_buf_bytes;
  c->rank_bytes = (uint64_t)cfg->shm_rank_bytes; /* rings sized at the first connect */
  c->use_cma = cfg->shm_cma != 0;
  c->pull_ms = cfg->shm_cma_pull_ms;
  c->cma_min = (size_t)cfg->shm_cma_min_bytes;
  c->my_pid = (int)getpid();
  /* "tdshm-<hash>:<pid namespace>": liveness by pid only works within one pid namespace */
  char ns[40] = "";
  ssize_t nl = readlink("/proc/self/ns/pid", ns, sizeof(ns) - 1);
  ns[nl > 0 ? nl : 0] = 0;
  snprintf(info->shm_name, sizeof(info->shm_name), "tdshm-%016llx:%s",
           (unsigned long long)comm->comm_hash, ns);
  return tpudistSuccess;
}

static void freeUnexpList(tdShmCtx *c) {
  while (c->unexp_head) {
    tdShmUnexp *u = c->unexp_head;
    c->unexp_head = u->next;
    free(u);
  }
  c->unexp_tail = NULL;
}

static void shmCommFini(tdNet *comm) {
  int i = netTransportIndex(comm, &tdTransportShm);
  tdShmCtx *c = comm->tp_ctx[i];
  if (!c) return;
  /* segments a peer created (or began) that this rank never mapped are left to us */
  if (c->peers) shmUnlinkUnmapped(comm, c);
  for (int k = 0; c->peers && k < c->nactive; k++) shmDisconnect(c, c->active[k]);
  freeUnexpList(c);
  while (c->reads) {
    tdShmCmaRead *r = c->reads;
    c->reads = r->next;
    free(r);
  }
  free(c->peers);
  free(c->active);
  free(c->stage);
  free(c);
  comm->tp_ctx[i] = NULL;
}

static void unexpUnlink(tdShmCtx *c, tdShmUnexp *u) {
  tdShmUnexp *prev = NULL;
  for (tdShmUnexp *q = c->unexp_head; q && q != u; q = q->next) prev = q;
  if (prev)
    prev->next = u->next;
  else
    c->unexp_head = u->next;
  if (c->unexp_tail == u) c->unexp_tail = prev;
}

/* Fails every transfer pending with p. */
static tpudistResult_t failPeer(tdNet *comm, tdShmCtx *c, int p, const char *why) {
  tdShmPeer *pe = &c->peers[p];
  pe->state = SHM_FAILED;
  snprintf(pe->why, sizeof(pe->why), "%s", why);
  for (tdXfer *x; (x = xqPop(&pe->sendq));) transportComplete(x, tpudistRemoteError, p);
  for (tdXfer *x; (x = xqPop(&pe->cma_wait));) transportComplete(x, tpudistRemoteError, p);
  if (pe->rcur) transportComplete(pe->rcur, tpudistRemoteError, p);
  pe->rcur = NULL;
  pe->ucur = NULL;
  for (tdShmUnexp *u = c->unexp_head; u; u = u->next)
    if (u->peer == p && u->waiter) {
      transportComplete(u->waiter, tpudistRemoteError, p);
      u->waiter = NULL;
    }
  xqFailPeer(&c->posted, p, tpudistRemoteError);
  for (tdShmCmaRead **pp = &c->reads; *pp;) {
    tdShmCmaRead *r = *pp;
    if (r->peer == p) {
      *pp = r->next;
      transportComplete(r->r, tpudistRemoteError, p);
      free(r);
    } else {
      pp = &r->next;
    }
  }
  return transportError(comm, tpudistRemoteError, "shm: rank %d: %s", p, why);
}

static tpudistResult_t shmPostSend(tdNet *comm, tdXfer *x) {
  tdShmCtx *c = shmCtx(comm);
  tpudistResult_t res = shmConnect(comm, c, x->peer);
  if (res != tpudistSuccess) {
    transportComplete(x, res, x->peer);
    return res;
  }
  x->tp_priv[0] = (void *)0;
  xqPush(&c->peers[x->peer].sendq, x);
  return tpudistSuccess;
}

static tpudistResult_t startRead(tdNet *comm, tdShmCtx *c, tdXfer *r, int p, uint64_t addr,
                                 uint64_t id, size_t total) {
  tdShmCmaRead *op = malloc(sizeof(*op));
  if (!op) return transportError(comm, tpudistNoMemory, "shm: out of memory");
  *op = (tdShmCmaRead){r, p, addr, id, total, 0, c->reads};
  TD_TRACE(TD_SUBSYS_SHM, "shm: single-copy read of %zu bytes from rank %d", total, p);
  c->reads = op;
  return tpudistSuccess;
}

/* nack: 0 (read), TD_CMA_NACK (could not read) or TD_CMA_NACK | TD_CMA_NACK_LEN (length). */
static void ackCma(tdShmPeer *pe, uint64_t id, uint64_t nack) {
  __atomic_store_n(&pe->ctl_in->cma_ack[id % TD_SHM_CMA_SLOTS], (id + 1) | nack, __ATOMIC_RELEASE);
}

/* Takes a matching message that was left at the head of p's incoming ring. 1 if taken. */
static int takeParked(tdNet *comm, tdShmCtx *c, int p, tdXfer *x) {
  tdShmPeer *pe = &c->peers[p];
  if (pe->state != SHM_READY || !pe->parked_head) return 0;
  uint64_t tail = pe->ctl_in->tail;
  tdShmRec *rec = (tdShmRec *)(pe->data_in + tail % pe->ring_bytes);
  tdMsgKey k = {rec->seq, rec->stream, rec->ordinal, rec->piece};
  if (!keyEq(&k, &x->key)) return 0;
  if (rec->total != x->len) {
    transportLenMismatch(comm, x, p, rec->total);
  } else {
    transportDeliver(x, 0, (char *)rec + TD_SHM_REC, rec->flen);
    transportComplete(x, tpudistSuccess, p);
  }
  pe->parked_head = 0;
  __atomic_store_n(&pe->ctl_in->tail, tail + TD_SHM_REC + TD_R64(rec->flen), __ATOMIC_RELEASE);
  return 1;
}

/* Matches a new receive against unexpected messages of this transport. 1 if matched. */
static int matchUnexp(tdNet *comm, tdShmCtx *c, tdXfer *x, int probe) {
  for (tdShmUnexp *u = c->unexp_head; u; u = u->next) {
    if ((!probe && u->peer != x->peer) || u->waiter || !keyEq(&u->key, &x->key)) continue;
    if (u->total != x->len) {
      unexpUnlink(c, u);
      transportLenMismatch(comm, x, u->peer, u->total);
      if (u->cma) {
        ackCma(&c->peers[u->peer], u->cma_id, TD_CMA_NACK | TD_CMA_NACK_LEN);
        c->unexp_cma--;
      }
      if (c->peers[u->peer].ucur == u) c->peers[u->peer].ucur = NULL, c->peers[u->peer].discard = 1;
      free(u);
    } else if (u->cma) {
      unexpUnlink(c, u);
      c->unexp_cma--;
      if (startRead(comm, c, x, u->peer, u->addr, u->cma_id, u->total) != tpudistSuccess)
        transportComplete(x, tpudistNoMemory, u->peer);
      free(u);
    } else if (u->got < u->total) {
      u->waiter = x; /* still arriving */
    } else {
      unexpUnlink(c, u);
      transportDeliver(x, 0, u->data, u->total);
      transportComplete(x, tpudistSuccess, u->peer);
      free(u);
    }
    return 1;
  }
  return 0;
}

static tpudistResult_t shmPostRecv(tdNet *comm, tdXfer *x) {
  tdShmCtx *c = shmCtx(comm);
  int probe = x->tp_priv[3] == TD_ANY_PROBE;
  TD_CHECK(transportCheckRecv(comm, x));
  if (matchUnexp(comm, c, x, probe)) {
    if (probe) x->tp_priv[3] = (void *)&tdTransportShm;
    return tpudistSuccess;
  }
  if (probe) {
    for (int p = 0; p < comm->nranks; p++) {
      if (transportForPeer(comm, p) != &tdTransportShm) continue;
      TD_CHECK(shmConnect(comm, c, p));
      if (takeParked(comm, c, p, x)) {
        x->tp_priv[3] = (void *)&tdTransportShm;
        return tpudistSuccess;
      }
    }
    return tpudistSuccess;
  }
  tpudistResult_t res = shmConnect(comm, c, x->peer);
  if (res != tpudistSuccess) {
    transportComplete(x, res, x->peer);
    return res;
  }
  if (takeParked(comm, c, x->peer, x)) return tpudistSuccess;
  xqPush(&c->posted, x);
  return tpudistSuccess;
}

/* The message in progress on p's incoming ring got its last byte. */
static void finishCur(tdNet *comm, tdShmCtx *c, tdShmPeer *pe, int p) {
  if (pe->rcur) transportComplete(pe->rcur, tpudistSuccess, p);
  if (pe->ucur && pe->ucur->waiter) {
    tdShmUnexp *u = pe->ucur;
    unexpUnlink(c, u);
    transportDeliver(u->waiter, 0, u->data, u->total);
    transportComplete(u->waiter, tpudistSuccess, p);
    free(u);
  }
  (void)comm;
  pe->rcur = NULL;
  pe->ucur = NULL;
  pe->discard = 0;
}

/* An unmatched new message: copy it out of the ring (FRAG) or keep its descriptor (CMA). */
static tpudistResult_t newUnexp(tdNet *comm, tdShmCtx *c, tdShmPeer *pe, int p,
                                const tdShmRec *rec) {
  int cma = rec->type == TD_REC_CMA;
  tdShmUnexp *u = malloc(sizeof(*u) + (cma ? 0 : rec->total));
  if (!u) return failPeer(comm, c, p, "out of memory for an unexpected message");
  *u = (tdShmUnexp){p,           {rec->seq, rec->stream, rec->ordinal, rec->piece},
                    cma,         rec->total,
                    0,           rec->addr,
                    rec->cma_id, NULL,
                    NULL,        cma ? shmNowMs() : 0};
  c->unexp_cma += cma;
  if (!cma) {
    memcpy(u->data, (const char *)rec + TD_SHM_REC, rec->flen);
    u->got = rec->flen;
    if (u->got < u->total) pe->ucur = u;
  }
  if (c->unexp_tail)
    c->unexp_tail->next = u;
  else
    c->unexp_head = u;
  c->unexp_tail = u;
  return tpudistSuccess;
}

/* First record of a message. Returns 1 when the message is left parked in the ring. */
static int newMessage(tdNet *comm, tdShmCtx *c, int p, const tdShmRec *rec, uint64_t head,
                      uint64_t tail, tpudistResult_t *res) {
  tdShmPeer *pe = &c->peers[p];
  tdMsgKey k = {rec->seq, rec->stream, rec->ordinal, rec->piece};
  int cma = rec->type == TD_REC_CMA;
  tdXfer *x = transportMatchRecv(comm, &c->posted, p, &k, &tdTransportShm);
  if (!x) {
    if (!cma && rec->flen == rec->total && head == tail + TD_SHM_REC + TD_R64(rec->flen)) {
      pe->parked_head = head;
      return 1;
    }
    *res = newUnexp(comm, c, pe, p, rec);
    return 0;
  }
  if (x->len != rec->total) {
    transportLenMismatch(comm, x, p, rec->total);
    if (cma) ackCma(pe, rec->cma_id, TD_CMA_NACK | TD_CMA_NACK_LEN);
    pe->discard = !cma && rec->flen < rec->total;
  } else if (cma) {
    *res = startRead(comm, c, x, p, rec->addr, rec->cma_id, rec->total);
  } else {
    transportDeliver(x, 0, (const char *)rec + TD_SHM_REC, rec->flen);
    if (rec->flen == rec->total)
      transportComplete(x, tpudistSuccess, p);
    else
      pe->rcur = x;
  }
  return 0;
}

static tpudistResult_t ringConsume(tdNet *comm, tdShmCtx *c, int p, int *moved) {
  tdShmPeer *pe = &c->peers[p];
  uint64_t R = pe->ring_bytes, tail = pe->ctl_in->tail;
  tpudistResult_t res = tpudistSuccess;
  shmProbeCma(c, pe);
  for (;;) {
    uint64_t head = __atomic_load_n(&pe->ctl_in->head, __ATOMIC_ACQUIRE);
    if (head == tail || (pe->parked_head && head == pe->parked_head)) break;
    uint64_t pos = tail % R;
    const tdShmRec *rec = (const tdShmRec *)(pe->data_in + pos);
    uint64_t size = rec->type == TD_REC_PAD
                        ? R - pos
                        : TD_SHM_REC + (rec->type == TD_REC_FRAG ? TD_R64(rec->flen) : 0);
    if (rec->type == TD_REC_FRAG && rec->off > 0) { /* continuation */
      if (pe->rcur)
        transportDeliver(pe->rcur, rec->off, (const char *)rec + TD_SHM_REC, rec->flen);
      else if (pe->ucur) {
        memcpy(pe->ucur->data + rec->off, (const char *)rec + TD_SHM_REC, rec->flen);
        pe->ucur->got = rec->off + rec->flen;
      }
      if (rec->off + rec->flen == rec->total) finishCur(comm, c, pe, p);
    } else if (rec->type != TD_REC_PAD) {
      pe->parked_head = 0;
      if (newMessage(comm, c, p, rec, head, tail, &res)) break;
      if (res != tpudistSuccess) return res;
    }
    tail += size;
    __atomic_store_n(&pe->ctl_in->tail, tail, __ATOMIC_RELEASE);
    *moved = 1;
  }
  return tpudistSuccess;
}

/* 1 if the next CMA id's ack slot is free: the id that used it before has completed here. */
static int cmaSlotFree(tdShmPeer *pe) {
  return !pe->cma_busy[pe->next_cma_id % TD_SHM_CMA_SLOTS];
}

/* Writes one record for the head of the send queue. 0 when the ring has no room. */
static int produceOne(tdShmCtx *c, tdShmPeer *pe, uint64_t *head) {
  tdXfer *x = pe->sendq.head;
  uint64_t R = pe->ring_bytes, pos = *head % R, contig = R - pos;
  uint64_t tail = __atomic_load_n(&pe->ctl_out->tail, __ATOMIC_ACQUIRE);
  uint64_t freeb = R - (*head - tail);
  size_t done = (size_t)(uintptr_t)x->tp_priv[0], left = x->len - done;
  size_t cma_min = x->peer_reduces ? TD_MAX(c->cma_min, (size_t)TD_SHM_CMA_REDUCE_MIN) : c->cma_min;
  int cma = done == 0 && c->use_cma && x->len >= cma_min && x->len > 0 &&
            __atomic_load_n(&pe->hdr->cma_ok[pe->side], __ATOMIC_ACQUIRE) == CMA_OK;
  /* Every acknowledgement slot in use: wait for one (the receiver reads or pulls every
   * descriptor) rather than copying a large message through the ring twice. */
  if (cma && !cmaSlotFree(pe)) return 0;
  uint64_t minimal = TD_SHM_REC + (cma || left == 0 ? 0 : 64);
  if (contig < minimal) {
    if (freeb < contig) return 0;
    ((tdShmRec *)(pe->data_out + pos))->type = TD_REC_PAD;
    *head += contig;
    return 1;
  }
  uint64_t avail = TD_MIN(freeb, contig);
  if (avail < minimal) return 0;
  tdShmRec *rec = (tdShmRec *)(pe->data_out + pos);
  *rec = (tdShmRec){
      x->key.seq, x->key.stream, x->key.ordinal, x->key.piece, TD_REC_FRAG, x->len, done, 0, 0, 0};
  if (cma) {
    rec->type = TD_REC_CMA;
    rec->addr = (uint64_t)(uintptr_t)x->buf;
    rec->cma_id = pe->next_cma_id++;
    pe->cma_busy[rec->cma_id % TD_SHM_CMA_SLOTS] = 1;
    x->tp_priv[1] = (void *)(uintptr_t)rec->cma_id;
    *head += TD_SHM_REC;
    xqPop(&pe->sendq);
    xqPush(&pe->cma_wait, x);
    return 1;
  }
  uint64_t room = TD_MIN(avail - TD_SHM_REC, pe->frag_max);
  size_t flen = left <= room ? left : (size_t)(room & ~(uint64_t)63);
  rec->flen = flen;
  if (flen)
    memcpy((char *)rec + TD_SHM_REC, (const char *)x->buf + done, flen); /* buf may be NULL */
  *head += TD_SHM_REC + TD_R64(flen);
  x->tp_priv[0] = (void *)(uintptr_t)(done + flen);
  if (done + flen == x->len) {
    xqPop(&pe->sendq);
    transportComplete(x, tpudistSuccess, -1);
  }
  return 1;
}

static void ringProduce(tdShmCtx *c, int p, int *moved) {
  tdShmPeer *pe = &c->peers[p];
  uint64_t head = pe->ctl_out->head;
  while (pe->sendq.head && produceOne(c, pe, &head)) {
    __atomic_store_n(&pe->ctl_out->head, head, __ATOMIC_RELEASE);
    *moved = 1;
  }
}

static void cmaAcks(tdNet *comm, tdShmPeer *pe, int p, int *moved) {
  tdXfer *prev = NULL, *x = pe->cma_wait.head;
  while (x) {
    tdXfer *next = x->next;
    uint64_t id = (uint64_t)(uintptr_t)x->tp_priv[1];
    uint64_t v = __atomic_load_n(&pe->ctl_out->cma_ack[id % TD_SHM_CMA_SLOTS], __ATOMIC_ACQUIRE);
    if ((v & ~(TD_CMA_NACK | TD_CMA_NACK_LEN)) == id + 1) {
      xqUnlink(&pe->cma_wait, prev, x);
      pe->cma_busy[id % TD_SHM_CMA_SLOTS] = 0;
      tpudistResult_t res = tpudistSuccess;
      if (v & TD_CMA_NACK_LEN)
        res = transportError(
            comm, tpudistInvalidUsage,
            "shm: rank %d expects another length than the %zu bytes sent (seq %llu "
            "stream %u ordinal %u piece %u; mismatched calls?)",
            p, x->len, (unsigned long long)x->key.seq, x->key.stream, x->key.ordinal, x->key.piece);
      else if (v & TD_CMA_NACK)
        res = transportError(comm, tpudistRemoteError, "shm: rank %d could not read a message", p);
      transportComplete(x, res, -1);
      *moved = 1;
    } else {
      prev = x;
    }
    x = next;
  }
}

/* Advances one single-copy read by at most one chunk. 1 when finished (ok or not). */
static int readStep(tdNet *comm, tdShmCtx *c, tdShmCmaRead *op) {
  tdXfer *r = op->r;
  tdShmPeer *pe = &c->peers[op->peer];
  size_t left = op->total - op->done, es = 1;
  char *dst;
  if (r->reduce_src) {
    es = kernelDtypeSize((tpudistDataType_t)r->dtype);
    left = TD_MIN(left, (size_t)TD_SHM_STAGE);
    dst = c->stage;
  } else {
    left = TD_MIN(left, (size_t)TD_SHM_CMA_CHUNK);
    dst = (char *)r->buf + op->done;
  }
  struct iovec l = {dst, left}, rm = {(void *)(uintptr_t)(op->addr + op->done), left};
  ssize_t n = left ? process_vm_readv(pe->hdr->pid[1 - pe->side], &l, 1, &rm, 1, 0) : 0;
  if (n < 0) {
    transportError(comm, tpudistRemoteError, "shm: single-copy read from rank %d failed: %s",
                   op->peer, strerror(errno));
    ackCma(pe, op->cma_id, TD_CMA_NACK);
    transportComplete(r, tpudistRemoteError, op->peer);
    return 1;
  }
  size_t whole = (size_t)n - (size_t)n % es;
  if (r->reduce_src) transportDeliver(r, op->done, c->stage, whole);
  op->done += whole;
  if (op->done < op->total) return 0;
  ackCma(pe, op->cma_id, 0);
  transportComplete(r, tpudistSuccess, op->peer);
  return 1;
}

/* Copies u's bytes out of the sender (one CMA read) into a new entry that replaces u. */
static void pullOne(tdNet *comm, tdShmCtx *c, tdShmUnexp *prev, tdShmUnexp *u) {
  tdShmPeer *pe = &c->peers[u->peer];
  tdShmUnexp *n = malloc(sizeof(*n) + u->total);
  size_t done = 0;
  while (n && done < u->total) {
    struct iovec l = {n->data + done, u->total - done};
    struct iovec r = {(void *)(uintptr_t)(u->addr + done), u->total - done};
    ssize_t got = process_vm_readv(pe->hdr->pid[1 - pe->side], &l, 1, &r, 1, 0);
    if (got <= 0) break;
    done += (size_t)got;
  }
  if (!n || done < u->total) {
    free(n);
    return; /* left as a descriptor: a matching receive reads it (and reports any error) */
  }
  *n = *u;
  n->cma = 0;
  n->got = u->total;
  if (prev)
    prev->next = n;
  else
    c->unexp_head = n;
  if (c->unexp_tail == u) c->unexp_tail = n;
  c->unexp_cma--;
  ackCma(pe, u->cma_id, 0);
  TD_TRACE(TD_SUBSYS_SHM, "%s: pulled an unmatched %zu-byte message from rank %d", comm->name,
           u->total, u->peer);
  free(u);
}

/* Unexpected CMA descriptors unmatched for pull_ms are copied out and acknowledged. */
static void pullStaleCma(tdNet *comm, tdShmCtx *c, int *moved) {
  if (!c->unexp_cma) return;
  int64_t now = shmNowMs();
  tdShmUnexp *prev = NULL, *u = c->unexp_head;
  while (u) {
    tdShmUnexp *next = u->next;
    if (u->cma && now - u->since_ms >= c->pull_ms) {
      pullOne(comm, c, prev, u);
      *moved = 1;
      tdShmUnexp *q = prev ? prev->next : c->unexp_head; /* u or its replacement */
      prev = q;
    } else {
      prev = u;
    }
    u = next;
  }
}

static void progressReads(tdNet *comm, tdShmCtx *c, int *moved) {
  for (tdShmCmaRead **pp = &c->reads; *pp;) {
    tdShmCmaRead *op = *pp;
    *moved = 1;
    if (readStep(comm, c, op)) {
      *pp = op->next;
      free(op);
    } else {
      pp = &op->next;
    }
  }
}

static int peerBusy(tdShmCtx *c, int p) {
  tdShmPeer *pe = &c->peers[p];
  if (pe->sendq.head || pe->cma_wait.head || pe->rcur || pe->ucur || pe->state == SHM_OPENING ||
      pe->slot_rwait || pe->slot_wwait)
    return 1;
  for (tdXfer *x = c->posted.head; x; x = x->next)
    if (x->peer == p) return 1;
  for (tdShmCmaRead *r = c->reads; r; r = r->next)
    if (r->peer == p) return 1;
  for (tdShmUnexp *u = c->unexp_head; u; u = u->next)
    if (u->peer == p && u->waiter) return 1;
  return 0;
}

static tpudistResult_t checkLiveness(tdNet *comm, tdShmCtx *c) {
  tpudistResult_t first = tpudistSuccess;
  int64_t now = shmNowMs();
  if (now < c->next_live_ms) return tpudistSuccess;
  c->next_live_ms = now + 100;
  for (int i = 0; i < c->nactive; i++) {
    int p = c->active[i];
    tdShmPeer *pe = &c->peers[p];
    if (pe->state == SHM_FAILED || !peerBusy(c, p)) continue;
    char why[96];
    int unmapped = pe->state != SHM_READY ||
                   !__atomic_load_n(&pe->hdr->mapped[1 - pe->side], __ATOMIC_ACQUIRE);
    if (pe->state == SHM_READY &&
        __atomic_load_n(&pe->hdr->closed[1 - pe->side], __ATOMIC_ACQUIRE)) {
      /* What it wrote before it closed is visible now: a slot payload that landed after this
       * rank's last look is read first (a rank descheduled between its peek and this check). */
      if (shmSlotLanded(pe) && !peerBusy(c, p)) continue;
      snprintf(why, sizeof(why), "the rank released the communicator (destroyed or aborted)");
    } else if (unmapped && bootstrapPeerReleased(comm->bootstrap, p)) /* it never joined the pair */
      snprintf(why, sizeof(why), "the rank released the communicator before joining the segment");
    else if (shmPeerDead(comm, pe, p))
      snprintf(why, sizeof(why), "process %d exited", comm->peers[p].pid);
    else
      continue;
    tpudistResult_t res = failPeer(comm, c, p, why);
    if (first == tpudistSuccess) first = res;
  }
  return first;
}

static tpudistResult_t shmProgress(tdNet *comm, int *progressed) {
  tdShmCtx *c = shmCtx(comm);
  tpudistResult_t first = tpudistSuccess;
  int moved = 0;
  for (int i = 0; i < c->nactive; i++) {
    int p = c->active[i];
    tdShmPeer *pe = &c->peers[p];
    if (pe->state == SHM_OPENING) {
      tpudistResult_t res = shmConnect(comm, c, p);
      if (res != tpudistSuccess) {
        res = failPeer(comm, c, p, comm->err.msg);
        if (first == tpudistSuccess) first = res;
      }
    }
    if (pe->state != SHM_READY) continue;
    tpudistResult_t res = ringConsume(comm, c, p, &moved);
    if (res != tpudistSuccess && first == tpudistSuccess) first = res;
    if (pe->state != SHM_READY) continue;
    ringProduce(c, p, &moved);
    cmaAcks(comm, pe, p, &moved);
  }
  progressReads(comm, c, &moved);
  pullStaleCma(comm, c, &moved);
  tpudistResult_t res = checkLiveness(comm, c);
  if (first == tpudistSuccess) first = res;
  *progressed = moved;
  return first;
}

TD_TRANSPORT_DEFINE(tdTransportShm, "shm", shm, .commCleanup = shmUnlinkDeadPairs);
