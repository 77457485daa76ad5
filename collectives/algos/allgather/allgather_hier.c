/*
 * allgather_hier.c - hierarchical all-gather (genAllgatherHier) for a topology with an outer level
 * (hier.h: G groups, slices or hosts, of L consecutive ranks; rank = g*L + l).
 *
 * Algorithm, two streams:
 *   0. across groups: a ring over the G ranks with local index l (one flow per local index, so all
 *      of a host's ranks keep its DCN link busy) gathers column l, the blocks g'*L + l of every
 *      group g', into OUTPUT. Each block crosses DCN once into every other group.
 *   1. inside the group: for each group g' in the order its column block arrives (own group
 *      first), a ring over the L local ranks gathers blocks g'*L .. g'*L + L-1. The ring of g'
 *      starts (explicit dependency) once stream 0 has received block g'*L + l, so the ICI rings
 *      overlap the DCN ring.
 * Why this order: gathering across groups first moves only this rank's own block over DCN, and
 * every byte enters each remote group exactly once (the lower bound, (G-1)/G of the output per
 * group link). Gathering inside the group first would leave each local rank either sending its
 * whole group's L blocks over DCN (L times the volume) or, to keep the volume, only its own block,
 * which then needs a third, local phase.
 *
 * Cost (S = output bytes, n = G L): per group (host or slice) link (G-1)/G S leave and enter the
 * group; inside a group (L-1)/L S per rank; latency (G-1) DCN + G (L-1) local messages per rank
 * (the local rings of different groups' blocks overlap). The flat ring carries (n-1)/n S over
 * every host link.
 * Preconditions: an outer level (else tpudistNotSupported: the ring is the same plan), any count,
 * in place (INPUT = OUTPUT block rank) or out of place. No reduction, no scratch.
 */
#include "allgather.h"
#include "hier.h"

tpudistResult_t genAllgatherHier(const tdCollArgs *a, tdSched *s, char *err) {
  tdHier h;
  TD_CHECK(hierPlace(a, &h, err));
  int G = h.G, L = h.L, g = h.g, l = h.l, r = a->rank;
  schedSetLayout(s, TD_BUF_INPUT, 1, 1);
  schedSetLayout(s, TD_BUF_OUTPUT, (uint32_t)a->nranks, 1);
  schedSetLayout(s, TD_BUF_SCRATCH, 0, 1);
  tdBufRef own =
      a->inplace ? schedRef(TD_BUF_OUTPUT, (uint32_t)r, 1) : schedRef(TD_BUF_INPUT, 0, 1);
#define BLOCK(gg, ll) schedRef(TD_BUF_OUTPUT, (uint32_t)hierRank(&h, gg, ll), 1)
  if (!a->inplace) TD_CHECK(schedPush(s, schedCopy(own, BLOCK(g, l))));
  /* 0: the column ring across groups; got[i] = the receive of the block of group g-i */
  uint32_t *gotv = calloc((size_t)G, sizeof(uint32_t));
  if (!gotv) return tdErr(err, tpudistNoMemory, "allgather hier: out of memory");
  tpudistResult_t res = tpudistSuccess;
  int next = hierRank(&h, g + 1, l), prev = hierRank(&h, g - 1, l);
  for (int i = 0; i < G - 1 && res == tpudistSuccess; i++) {
    tdStep snd = schedSend(next, i == 0 ? own : BLOCK(g - i, l));
    tdStep rcv = schedRecv(prev, BLOCK(g - i - 1, l));
    res = schedAppend(s, 0, &snd, NULL);
    if (res == tpudistSuccess) res = schedAppend(s, 0, &rcv, &gotv[i + 1]);
  }
  /* 1: the local ring of each group's blocks, own group first */
  int right = hierRank(&h, g, l + 1), left = hierRank(&h, g, l - 1);
  for (int i = 0; i < G && L > 1 && res == tpudistSuccess; i++) {
    int gg = g - i;
    for (int j = 0; j < L - 1 && res == tpudistSuccess; j++) {
      tdStep snd = schedSend(right, j > 0 ? BLOCK(gg, l - j) : i == 0 ? own : BLOCK(gg, l));
      if (j == 0 && i > 0) snd = hierAfter(snd, 0, gotv[i]);
      tdStep rcv = schedRecv(left, BLOCK(gg, l - j - 1));
      res = schedAppend(s, 1, &snd, NULL);
      if (res == tpudistSuccess) res = schedAppend(s, 1, &rcv, NULL);
    }
  }
#undef BLOCK
  free(gotv);
  return res == tpudistSuccess ? res : tdErr(err, res, "allgather hier: out of memory");
}
