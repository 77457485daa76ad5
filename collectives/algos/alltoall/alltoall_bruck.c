/*
 * alltoall_bruck.c - Bruck all-to-all (Bruck et al. 1997): ceil(log2 P) rounds instead of P-1.
 * Logically rank r first rotates its blocks (T[i] = block for r+i); in round k it sends every T[i]
 * with bit k of i set to r + 2^k and receives the same positions from r - 2^k; at the end
 * T[i] came from r - i. The rotation is not a copy: the generator tracks where each T[i] lives.
 * Each round packs its blocks into SCRATCH (local copies) so it is one message.
 *
 * Cost (P ranks, m bytes per block, alpha per message): ceil(log2 P) * (alpha + (P/2) m / B)
 * plus about (P/2) log2 P block copies: latency-optimal, bandwidth log2(P)/2 times the pairwise
 * exchange, so it wins for small blocks only. Peers are not torus neighbours (multi-hop).
 * Preconditions: none (any topology, any P >= 1). Scratch: 2 * sum_k |{i : bit k of i}| blocks.
 */
#include <stdlib.h>

#include "alltoall.h"

static tpudistResult_t bruckRound(tdSched *s, int P, int rank, int k, tdBufRef *loc,
                                  uint32_t *scratch) {
  int bit = 1 << k;
  uint32_t m = 0;
  for (int i = 1; i < P; i++)
    if (i & bit) m++;
  uint32_t sp = *scratch, rp = sp + m, j = 0;
  for (int i = 1; i < P; i++) {
    if (!(i & bit)) continue;
    tdStep st = schedCopy(loc[i], schedRef(TD_BUF_SCRATCH, sp + j, 1));
    TD_CHECK(schedAppend(s, 0, &st, NULL));
    loc[i] = schedRef(TD_BUF_SCRATCH, rp + j, 1);
    j++;
  }
  tdStep snd = schedSend((rank + bit) % P, schedRef(TD_BUF_SCRATCH, sp, m));
  tdStep rcv = schedRecv(((rank - bit) % P + P) % P, schedRef(TD_BUF_SCRATCH, rp, m));
  TD_CHECK(schedAppend(s, 0, &snd, NULL));
  TD_CHECK(schedAppend(s, 0, &rcv, NULL));
  *scratch = rp + m;
  return tpudistSuccess;
}

tpudistResult_t genAlltoallBruck(const tdCollArgs *a, tdSched *s, char *err) {
  int P = a->nranks, rank = a->rank;
  if (P < 1) return tdErr(err, tpudistInvalidArgument, "bruck: %d ranks", P);
  if (a->inplace) return tdErr(err, tpudistNotSupported, "all-to-all has no in-place form");
  uint32_t total = 0;
  for (int k = 0; (1 << k) < P; k++)
    for (int i = 1; i < P; i++)
      if (i & (1 << k)) total += 2;
  schedSetLayout(s, TD_BUF_INPUT, (uint32_t)P, 1);
  schedSetLayout(s, TD_BUF_OUTPUT, (uint32_t)P, 1);
  schedSetLayout(s, TD_BUF_SCRATCH, total, 1);
  tdBufRef *loc = malloc(sizeof(tdBufRef) * (size_t)P);
  if (!loc) return tpudistNoMemory;
  for (int i = 0; i < P; i++) loc[i] = schedRef(TD_BUF_INPUT, (uint32_t)((rank + i) % P), 1);
  tpudistResult_t r = tpudistSuccess;
  uint32_t scratch = 0;
  for (int k = 0; (1 << k) < P && r == tpudistSuccess; k++)
    r = bruckRound(s, P, rank, k, loc, &scratch);
  for (int i = 0; i < P && r == tpudistSuccess; i++) {
    tdStep st = schedCopy(loc[i], schedRef(TD_BUF_OUTPUT, (uint32_t)(((rank - i) % P + P) % P), 1));
    r = schedAppend(s, 0, &st, NULL);
  }
  free(loc);
  return r;
}
