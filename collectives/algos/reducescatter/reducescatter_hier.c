/*
 * reducescatter_hier.c - hierarchical reduce-scatter (genReducescatterHier) for a topology with
 * an outer level (hier.h: G groups, slices or hosts, of L consecutive ranks; rank = g*L + l): the
 * mirror of allgather_hier.c.
 *
 * Algorithm, two streams:
 *   1. inside the group: for each group g' (in the order stream 0 needs them), a ring
 *      reduce-scatter over the L local ranks of blocks g'*L .. g'*L + L-1 (as reducescatter_ring.c)
 *      leaves local rank l its group's partial sum of block g'*L + l, in SCRATCH P[g'].
 *   0. across groups: a ring reduce-scatter over the G ranks with local index l, on the partials
 *      P[g'] (one flow per local index); each step waits (explicit dependency) for the local ring
 *      whose partial it reads. Rank g*L + l ends with block g*L + l summed over all ranks.
 * Why this order: reducing inside the group first means only partial sums cross DCN, one per
 * block and remote group, (G-1)/G of the input per group link (the lower bound); reducing across
 * groups first would send each block L times (once per local rank), unreduced.
 *
 * Determinism: every element of block b is reduced along the local ring of its group (fixed
 * order, one per group) and then along the groups' ring (fixed order): the same order in every
 * run, whatever arrives first.
 *
 * Cost (S = input bytes, n = G L): per group link (G-1)/G S each way; inside a group (L-1)/L S
 * per rank; latency G (L-1) local + (G-1) DCN messages per rank.
 * Preconditions: an outer level (else tpudistNotSupported: the ring is the same plan), any count,
 * in place (OUTPUT = INPUT block rank: written only by the last step, after everything that reads
 * that block) or out of place. SCRATCH: G partials (when L > 1), min(2, L-2) ring slots per
 * group and min(2, G-2) for the groups' ring.
 */
#include "hier.h"
#include "reducescatter.h"

typedef struct {
  tdSched *s;
  tdHier h;
  uint32_t nlocal; /* ring slots per group */
  uint32_t *done;  /* done[g']: stream 1's step that completes P[g'] */
} rsCtx;

/* Partial of group gg's column block: SCRATCH P[gg], or the INPUT block itself when L == 1. */
static tdBufRef partial(const rsCtx *c, int gg) {
  if (c->h.L == 1) return schedRef(TD_BUF_INPUT, (uint32_t)hierRank(&c->h, gg, 0), 1);
  return schedRef(TD_BUF_SCRATCH, (uint32_t)hierMod(gg, c->h.G), 1);
}

/* 1: the local ring reduce-scatter of group gg's blocks into P[gg]. */
static tpudistResult_t localRing(rsCtx *c, int gg) {
  const tdHier *h = &c->h;
  int L = h->L, right = hierRank(h, h->g, h->l + 1), left = hierRank(h, h->g, h->l - 1);
  uint32_t slot0 = (uint32_t)h->G + (uint32_t)hierMod(gg, h->G) * c->nlocal;
  tdBufRef part = schedRef(TD_BUF_INPUT, (uint32_t)hierRank(h, gg, h->l - 1), 1);
  for (int i = 0; i < L - 1; i++) {
    tdBufRef in = schedRef(TD_BUF_INPUT, (uint32_t)hierRank(h, gg, h->l - i - 2), 1);
    tdBufRef dst =
        i == L - 2 ? partial(c, gg) : schedRef(TD_BUF_SCRATCH, slot0 + (uint32_t)i % c->nlocal, 1);
    tdStep snd = schedSend(right, part), rr = schedRecvReduce(left, in, dst);
    TD_CHECK(schedAppend(c->s, 1, &snd, NULL));
    TD_CHECK(schedAppend(c->s, 1, &rr, &c->done[hierMod(gg, h->G)]));
    part = dst;
  }
  return tpudistSuccess;
}

/* A step of stream 0 that reads P[gg]: after the local ring that writes it. */
static tdStep afterPartial(const rsCtx *c, tdStep st, int gg) {
  return c->h.L > 1 ? hierAfter(st, 1, c->done[hierMod(gg, c->h.G)]) : st;
}

/* 0: the ring reduce-scatter across groups on the partials. */
static tpudistResult_t crossRing(rsCtx *c, uint32_t slot0) {
  const tdHier *h = &c->h;
  int G = h->G, g = h->g, next = hierRank(h, g + 1, h->l), prev = hierRank(h, g - 1, h->l);
  uint32_t nslots = G > 2 ? (uint32_t)TD_MIN(2, G - 2) : 0;
  tdBufRef part = partial(c, g - 1);
  for (int i = 0; i < G - 1; i++) {
    tdBufRef dst = i == G - 2 ? schedRef(TD_BUF_OUTPUT, 0, 1)
                              : schedRef(TD_BUF_SCRATCH, slot0 + (uint32_t)i % nslots, 1);
    tdStep snd = schedSend(next, part);
    if (i == 0) snd = afterPartial(c, snd, g - 1);
    tdStep rr = afterPartial(c, schedRecvReduce(prev, partial(c, g - i - 2), dst), g - i - 2);
    TD_CHECK(schedAppend(c->s, 0, &snd, NULL));
    TD_CHECK(schedAppend(c->s, 0, &rr, NULL));
    part = dst;
  }
  return tpudistSuccess;
}

tpudistResult_t genReducescatterHier(const tdCollArgs *a, tdSched *s, char *err) {
  rsCtx c = {s, {0, 0, 0, 0}, 0, NULL};
  TD_CHECK(hierPlace(a, &c.h, err));
  int G = c.h.G, L = c.h.L;
  c.nlocal = L > 2 ? (uint32_t)TD_MIN(2, L - 2) : 0;
  uint32_t cross0 = L > 1 ? (uint32_t)G * (1 + c.nlocal) : 0;
  uint32_t ncross = G > 2 ? (uint32_t)TD_MIN(2, G - 2) : 0;
  schedSetLayout(s, TD_BUF_INPUT, (uint32_t)a->nranks, 1);
  schedSetLayout(s, TD_BUF_OUTPUT, 1, 1);
  schedSetLayout(s, TD_BUF_SCRATCH, cross0 + ncross, 1);
  c.done = calloc((size_t)G, sizeof(uint32_t));
  if (!c.done) return tdErr(err, tpudistNoMemory, "reducescatter hier: out of memory");
  tpudistResult_t res = tpudistSuccess;
  /* the local rings (stream 1) in the order the groups' ring reads their partials, g-1, g-2, ...,
   * g, generated first so that stream 0's steps can name the steps they wait for */
  for (int i = 1; i <= G && L > 1 && res == tpudistSuccess; i++) res = localRing(&c, c.h.g - i);
  if (res == tpudistSuccess) res = crossRing(&c, cross0);
  free(c.done);
  return res == tpudistSuccess ? res : tdErr(err, res, "reducescatter hier: out of memory");
}
