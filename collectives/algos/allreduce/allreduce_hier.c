/*
 * allreduce_hier.c - hierarchical all-reduce (genAllreduceHier) for a topology with an outer level:
 * slices joined by DCN (topoNumSlices), else hosts (topoNumHosts). G groups of L consecutive ranks
 * (rank = g*L + l; slices and hosts are both blocks of consecutive ranks).
 *
 * Algorithm: the buffer is L super chunks of G chunks each (super chunk j = chunks [jG, jG+G)).
 *   1. reduce-scatter inside each group: a ring over the L local ranks on super chunks; local rank
 *      l ends with its group's sum of super chunk (l+1) mod L.
 *   2. all-reduce of that shard across groups: a ring over the G ranks with the same local index
 *      (one flow per local index, so every host's L ranks keep all its DCN traffic busy at once),
 *      on the shard's G chunks.
 *   3. all-gather inside each group: the complete super chunks travel once around the local ring.
 * Without an outer level (G = 1) it is the ring all-reduce; with one rank per group (L = 1) it is
 * the ring across groups. Every receive that is forwarded is followed by the send of the same
 * chunk, so schedFuse makes RECV_REDUCE_SEND / RECV_COPY_SEND of them.
 *
 * Determinism: each element is reduced along the local ring of its super chunk, then along the
 * groups' ring, both fixed orders; the complete value is copied everywhere, so all ranks hold the
 * same bits.
 *
 * Cost (S bytes): per group (host or slice) link 2 (G-1)/G S bytes leave and enter the group, and
 * inside a group 2 (L-1)/L S per rank; the flat ring over all n = G L ranks carries
 * 2 (n-1)/n S across every host link. Latency 2 (L-1) + 2 (G-1) steps.
 * Preconditions: none beyond algoRun's; any count, in place or out of place.
 */
#include "allreduce.h"
#include "hier.h"

typedef struct {
  tdSched *s;
  int G, L, g, l;
  tdBufKind own; /* where this rank's contribution is read: INPUT, or OUTPUT in place */
} hierCtx;

static tdBufRef superChunk(const hierCtx *c, tdBufKind b, int j) {
  return schedRef(b, (uint32_t)(hierMod(j, c->L) * c->G), (uint32_t)c->G);
}

/* 1: ring reduce-scatter over the group's L ranks, on super chunks. */
static tpudistResult_t localReduceScatter(const hierCtx *c) {
  int base = c->g * c->L, next = base + hierMod(c->l + 1, c->L),
      prev = base + hierMod(c->l - 1, c->L);
  TD_CHECK(schedPush(c->s, schedSend(next, superChunk(c, c->own, c->l))));
  for (int s = 0; s < c->L - 1; s++) {
    int ch = c->l - s - 1;
    TD_CHECK(schedPush(
        c->s, schedRecvReduce(prev, superChunk(c, c->own, ch), superChunk(c, TD_BUF_OUTPUT, ch))));
    if (s < c->L - 2) TD_CHECK(schedPush(c->s, schedSend(next, superChunk(c, TD_BUF_OUTPUT, ch))));
  }
  return tpudistSuccess;
}

/* 2: ring all-reduce across the groups of the shard (super chunk j), reading own (INPUT only when
 * there was no local phase). */
static tpudistResult_t crossAllReduce(const hierCtx *c, int j, tdBufKind own) {
  int G = c->G, q = c->g, next = hierMod(q + 1, G) * c->L + c->l,
      prev = hierMod(q - 1, G) * c->L + c->l;
  uint32_t b = (uint32_t)(hierMod(j, c->L) * G);
#define CH(i) ((uint32_t)hierMod(i, G) + b)
  TD_CHECK(schedPush(c->s, schedSend(next, schedRef(own, CH(q), 1))));
  for (int s = 0; s < G - 1; s++) {
    uint32_t ch = CH(q - s - 1);
    TD_CHECK(schedPush(
        c->s, schedRecvReduce(prev, schedRef(own, ch, 1), schedRef(TD_BUF_OUTPUT, ch, 1))));
    TD_CHECK(schedPush(c->s, schedSend(next, schedRef(TD_BUF_OUTPUT, ch, 1))));
  }
  for (int s = 0; s < G - 1; s++) {
    uint32_t ch = CH(q - s);
    TD_CHECK(schedPush(c->s, schedRecv(prev, schedRef(TD_BUF_OUTPUT, ch, 1))));
    if (s < G - 2) TD_CHECK(schedPush(c->s, schedSend(next, schedRef(TD_BUF_OUTPUT, ch, 1))));
  }
#undef CH
  return tpudistSuccess;
}

/* 3: ring all-gather of the complete super chunks over the group's ranks. */
static tpudistResult_t localAllGather(const hierCtx *c) {
  int base = c->g * c->L, next = base + hierMod(c->l + 1, c->L),
      prev = base + hierMod(c->l - 1, c->L);
  TD_CHECK(schedPush(c->s, schedSend(next, superChunk(c, TD_BUF_OUTPUT, c->l + 1))));
  for (int s = 0; s < c->L - 1; s++) {
    TD_CHECK(schedPush(c->s, schedRecv(prev, superChunk(c, TD_BUF_OUTPUT, c->l - s))));
    if (s < c->L - 2)
      TD_CHECK(schedPush(c->s, schedSend(next, superChunk(c, TD_BUF_OUTPUT, c->l - s))));
  }
  return tpudistSuccess;
}

tpudistResult_t genAllreduceHier(const tdCollArgs *a, tdSched *s, char *err) {
  (void)err;
  int n = a->nranks, G = hierGroups(a->topo, n), L = n / G;
  hierCtx c = {s, G, L, a->rank / L, a->rank % L, a->inplace ? TD_BUF_OUTPUT : TD_BUF_INPUT};
  schedSetLayout(s, TD_BUF_INPUT, 1, (uint32_t)n);
  schedSetLayout(s, TD_BUF_OUTPUT, 1, (uint32_t)n);
  schedSetLayout(s, TD_BUF_SCRATCH, 0, 0);
  if (L > 1) TD_CHECK(localReduceScatter(&c));
  if (G > 1) TD_CHECK(crossAllReduce(&c, L > 1 ? c.l + 1 : 0, L > 1 ? TD_BUF_OUTPUT : c.own));
  if (L > 1) TD_CHECK(localAllGather(&c));
  return tpudistSuccess;
}
