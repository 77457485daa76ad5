/*
 * allreduce_ring.c - ring all-reduce (genAllreduceRing) and bidirectional ring all-reduce
 * (genAllreduceRing2).
 *
 * Algorithm (ring): the p ranks form the ring r -> r+1 (mod p); the buffer is split into p chunks.
 * Reduce-scatter, p-1 steps: in step s rank r sends chunk (r-s) mod p to its successor and receives
 * chunk (r-s-1) mod p from its predecessor, reducing it with its own contribution (RECV_REDUCE:
 * OUTPUT = own (+) incoming), then forwards that partial sum in the next step. After p-1 steps rank
 * r holds the complete chunk (r+1) mod p. All-gather, p-1 steps: the complete chunks travel once
 * around the ring, each rank receiving into OUTPUT and forwarding all but the last. Base ops only:
 * every receive that is forwarded is immediately followed by the SEND of the same chunk, so the
 * fusion pass (schedFuse) turns them into RECV_REDUCE_SEND / RECV_COPY_SEND.
 *
 * ring2: the buffer is split into 2p chunks; chunks [0, p) run the ring above forward (r -> r+1) on
 * stream 0 and chunks [p, 2p) run it backward (r -> r-1) on stream 1, so both directions of every
 * link carry half of the data at the same time.
 *
 * Determinism: every element is reduced exactly once, along one fixed chain of ranks (chunk c of a
 * ring is reduced in ring order starting at ring position c, each step computing
 * local (+) partial), and the complete value is then copied to every other rank. All ranks
 * therefore hold the same bits, and the order does not depend on timing.
 *
 * Cost (p ranks, n bytes, alpha latency, beta time per byte, gamma reduction per byte):
 *   ring : 2(p-1) alpha + 2 (p-1)/p n beta + (p-1)/p n gamma.
 *   ring2: 2(p-1) alpha + (p-1)/p n beta per link direction (half of the data each way, full
 *          duplex links) + (p-1)/p n gamma.
 * Preconditions: any p >= 1, any count (a count below the number of chunks leaves some chunks
 * empty; their zero-byte steps remain), in place or out of place. Out of place, the first send of
 * a chunk reads INPUT and every reduction reads INPUT and writes OUTPUT, so INPUT is never written;
 * in place everything works in OUTPUT. p = 1: one COPY INPUT -> OUTPUT, or nothing in place.
 */
#include "allreduce.h"

typedef struct {
  tdSched *s;
  uint32_t stream;
  uint32_t base; /* first chunk of this ring's part of the buffer */
  int p;
  int pos;        /* this rank's position in the ring */
  int next, prev; /* ranks of the successor and predecessor */
} ringCtx;

static uint32_t ringChunk(const ringCtx *c, int idx) {
  return c->base + (uint32_t)(((idx % c->p) + c->p) % c->p);
}

static tpudistResult_t ringAdd(const ringCtx *c, tdStep st) {
  return schedAppend(c->s, c->stream, &st, NULL);
}

/* One ring all-reduce over chunks [base, base+p) on one stream. */
static tpudistResult_t ringBuild(const ringCtx *c) {
  tdBufKind own = c->s->inplace ? TD_BUF_OUTPUT : TD_BUF_INPUT;
  int q = c->pos;
  TD_CHECK(ringAdd(c, schedSend(c->next, schedRef(own, ringChunk(c, q), 1))));
  /* Reduce-scatter: receive chunk q-s-1, add own contribution, forward the partial sum. The last
   * forward (s = p-2, chunk q+1, now complete) is the first step of the all-gather. */
  for (int s = 0; s < c->p - 1; s++) {
    uint32_t ch = ringChunk(c, q - s - 1);
    TD_CHECK(
        ringAdd(c, schedRecvReduce(c->prev, schedRef(own, ch, 1), schedRef(TD_BUF_OUTPUT, ch, 1))));
    TD_CHECK(ringAdd(c, schedSend(c->next, schedRef(TD_BUF_OUTPUT, ch, 1))));
  }
  /* All-gather: receive complete chunk q-s; forward all but the last (q+2). */
  for (int s = 0; s < c->p - 1; s++) {
    uint32_t ch = ringChunk(c, q - s);
    TD_CHECK(ringAdd(c, schedRecv(c->prev, schedRef(TD_BUF_OUTPUT, ch, 1))));
    if (s < c->p - 2) TD_CHECK(ringAdd(c, schedSend(c->next, schedRef(TD_BUF_OUTPUT, ch, 1))));
  }
  return tpudistSuccess;
}

tpudistResult_t genAllreduceRing(const tdCollArgs *a, tdSched *s, char *err) {
  (void)err;
  int p = a->nranks, r = a->rank;
  schedSetLayout(s, TD_BUF_INPUT, 1, (uint32_t)p);
  schedSetLayout(s, TD_BUF_OUTPUT, 1, (uint32_t)p);
  schedSetLayout(s, TD_BUF_SCRATCH, 0, 0);
  ringCtx c = {s, 0, 0, p, r, (r + 1) % p, (r + p - 1) % p};
  return ringBuild(&c);
}

tpudistResult_t genAllreduceRing2(const tdCollArgs *a, tdSched *s, char *err) {
  (void)err;
  int p = a->nranks, r = a->rank;
  schedSetLayout(s, TD_BUF_INPUT, 1, 2 * (uint32_t)p);
  schedSetLayout(s, TD_BUF_OUTPUT, 1, 2 * (uint32_t)p);
  schedSetLayout(s, TD_BUF_SCRATCH, 0, 0);
  ringCtx fwd = {s, 0, 0, p, r, (r + 1) % p, (r + p - 1) % p};
  /* Backward ring: position (p - r) mod p, so that the successor of a position is rank r-1. */
  ringCtx bwd = {s, 1, (uint32_t)p, p, (p - r) % p, (r + p - 1) % p, (r + 1) % p};
  TD_CHECK(ringBuild(&fwd));
  return ringBuild(&bwd);
}
