/*
 * shm_slots.c - small messages through the per-pair segment's slots (tdShmSlots in shm.h), for
 * latency-bound collectives among ranks that all share this host (src/exec/exec_small.c).
 *
 * A writer copies its payload into slot seq & 1 of its side and then stores the flag word
 * seq << 12 | length (release); a reader that loads it (acquire) with its own length reads the
 * payload in place (another length is reported as a mismatched call), and stores seq into its ack
 * for that slot once it no longer needs it. The writer reuses a slot for seq only when the reader
 * has acknowledged seq - 2, so a payload is never overwritten before it has been read, whatever the
 * order in which the two ranks run their operations. No ring record, no descriptor, no executor
 * step: one cache line carries an 8-byte payload and its flag.
 *
 * Failure: a reader or writer that waits marks the peer (slot_rwait, slot_wwait), so the
 * transport's liveness check (shm.c) fails the communicator when that peer exits or releases its
 * communicator. A payload the peer wrote before it released is still read: the check looks at
 * the awaited slot again (shmSlotLanded) before it fails a released peer.
 */
#include "shm_slots.h"

#include <string.h>

#include "registry.h"
#include "shm.h"

static tdShmCtx *slotCtx(tdNet *comm) {
  int i = netTransportIndex(comm, &tdTransportShm);
  return i < 0 ? NULL : comm->tp_ctx[i];
}

int shmSlotsReachAll(tdNet *comm) {
  if (!slotCtx(comm) || comm->nranks < 2) return 0;
  for (int p = 0; p < comm->nranks; p++)
    if (p != comm->rank && transportForPeer(comm, p) != &tdTransportShm) return 0;
  return 1;
}

size_t shmSlotMax(void) {
  return TD_SHM_SLOT_MAX;
}

/* The peer's state once its segment is usable: NULL while it is opening; failure reported. */
static tdShmPeer *slotPeer(tdNet *comm, int p, tpudistResult_t *res) {
  tdShmCtx *c = slotCtx(comm);
  tdShmPeer *pe = &c->peers[p];
  *res = tpudistSuccess;
  if (pe->state == SHM_NONE || pe->state == SHM_OPENING) *res = shmConnect(comm, c, p);
  if (*res == tpudistSuccess && pe->state == SHM_FAILED)
    *res = transportError(comm, tpudistRemoteError, "shm: rank %d failed: %s", p, pe->why);
  return *res == tpudistSuccess && pe->state == SHM_READY ? pe : NULL;
}

tpudistResult_t shmSlotWrite(tdNet *comm, int p, uint64_t seq, const void *buf, size_t len,
                             int *written) {
  tpudistResult_t res;
  tdShmPeer *pe = slotPeer(comm, p, &res);
  *written = 0;
  if (!pe) return res;
  int k = (int)(seq & 1);
  pe->slot_wwait =
      seq > 2 && __atomic_load_n(&pe->hdr->slots[1 - pe->side].ack[k], __ATOMIC_ACQUIRE) < seq - 2;
  if (pe->slot_wwait) return tpudistSuccess; /* the peer has not consumed the previous payload */
  tdShmSlot *s = &pe->hdr->slots[pe->side].slot[k];
  memcpy(s->data, buf, len);
  __atomic_store_n(&s->seq, seq << TD_SLOT_LEN_BITS | len, __ATOMIC_RELEASE);
  *written = 1;
  return tpudistSuccess;
}

/* The peer's slot for sequence seq, its flag word in *flag (acquire). */
static const tdShmSlot *peerSlot(const tdShmPeer *pe, uint64_t seq, uint64_t *flag) {
  const tdShmSlot *s = &pe->hdr->slots[1 - pe->side].slot[seq & 1];
  *flag = __atomic_load_n(&s->seq, __ATOMIC_ACQUIRE);
  return s;
}

int shmSlotLanded(tdShmPeer *pe) {
  uint64_t flag;
  if (!pe->slot_rwait || !pe->map) return 0;
  peerSlot(pe, pe->slot_rseq, &flag);
  if (flag >> TD_SLOT_LEN_BITS != pe->slot_rseq) return 0;
  pe->slot_rwait = 0;
  return 1;
}

tpudistResult_t shmSlotPeek(tdNet *comm, int p, uint64_t seq, size_t len, const void **data) {
  tpudistResult_t res;
  tdShmPeer *pe = slotPeer(comm, p, &res);
  *data = NULL;
  if (!pe) return res;
  uint64_t flag;
  const tdShmSlot *s = peerSlot(pe, seq, &flag);
  pe->slot_rwait = flag >> TD_SLOT_LEN_BITS != seq;
  pe->slot_rseq = seq;
  if (pe->slot_rwait) return tpudistSuccess;
  size_t got = (size_t)(flag & ((1u << TD_SLOT_LEN_BITS) - 1));
  if (got != len)
    return transportError(comm, tpudistInvalidUsage,
                          "small collective: rank %d passed %zu bytes, this rank %zu (the ranks "
                          "called different collectives)",
                          p, got, len);
  *data = s->data;
  return tpudistSuccess;
}

void shmSlotAck(tdNet *comm, int p, uint64_t seq) {
  tdShmPeer *pe = &slotCtx(comm)->peers[p];
  __atomic_store_n(&pe->hdr->slots[pe->side].ack[seq & 1], seq, __ATOMIC_RELEASE);
}
