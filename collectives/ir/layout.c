/*
 * layout.c - binding chunks to element ranges (docs/schedule-ir.md, "How a count binds"): the
 * one chunk -> element formula (schedRefSpan in step_table.c adds the in-place aliasing).
 */
#include "sched_ir.h"

uint64_t schedSubStart(uint64_t n, uint32_t k, uint32_t s) {
  return (uint64_t)s * (n / k) + TD_MIN((uint64_t)s, n % k);
}

static void blockRange(const tdLayout *l, uint32_t block, uint64_t n, uint64_t *b, uint64_t *len) {
  if (l->offsets) {
    *b = l->offsets[block];
    *len = l->counts[block];
  } else {
    *b = (uint64_t)block * n;
    *len = n;
  }
}

static void chunkRange(const tdLayout *l, uint32_t c, uint64_t n, uint64_t *begin, uint64_t *end) {
  uint32_t k = l->chunks_per_block;
  uint64_t b, len;
  blockRange(l, c / k, n, &b, &len);
  *begin = b + schedSubStart(len, k, c % k);
  *end = b + schedSubStart(len, k, c % k + 1);
}

tpudistResult_t schedRefRange(const tdSched *s, tdBufRef ref, uint64_t n, uint64_t *begin,
                              uint64_t *end) {
  if (ref.buf >= TD_NUM_BUFS) return tpudistInternalError;
  const tdLayout *l = &s->layout[ref.buf];
  uint64_t total = (uint64_t)l->nblocks * l->chunks_per_block;
  if (ref.nchunks == 0 || l->chunks_per_block == 0 || ref.chunk + (uint64_t)ref.nchunks > total)
    return tpudistInternalError;
  uint64_t b, e, pb, pe;
  chunkRange(l, ref.chunk, n, &b, &e);
  if (!l->offsets) { /* uniform: chunks tile the buffer in order, any run is contiguous */
    chunkRange(l, ref.chunk + ref.nchunks - 1, n, &pb, end);
    *begin = b;
    return tpudistSuccess;
  }
  for (uint32_t i = 1; i < ref.nchunks; i++) {
    chunkRange(l, ref.chunk + i, n, &pb, &pe);
    if (pe == pb) continue; /* empty chunks impose nothing */
    if (b == e) {
      b = pb; /* everything so far was empty */
    } else if (pb != e) {
      return tpudistInternalError; /* a gap between non-empty chunks */
    }
    e = pe;
  }
  *begin = b;
  *end = e;
  return tpudistSuccess;
}

uint64_t schedBufElems(const tdSched *s, tdBufKind buf, uint64_t n) {
  const tdLayout *l = &s->layout[buf];
  if (!l->offsets) return (uint64_t)l->nblocks * n;
  uint64_t m = 0;
  for (uint32_t b = 0; b < l->nblocks; b++)
    if (l->offsets[b] + l->counts[b] > m) m = l->offsets[b] + l->counts[b];
  return m;
}
