/*
 * alltoall_hier.c - hierarchical all-to-all and all-to-all-v (genAlltoallHier,
 * genAlltoallvHier) for a topology with an outer level (hier.h: G groups, slices or hosts, of L
 * consecutive ranks; rank = g*L + l). Every block crosses DCN once, inside one aggregated message
 * per (group pair, local index).
 *
 * Algorithm (one stream; the issue rule orders what depends on what):
 *   1. inside the group: rank (g, l) sends local peer (g, l') its block for (g, l') (delivered)
 *      and, one message each, its blocks for (g', l') of every other group g'; (g, l') keeps them
 *      in SCRATCH, packed per destination group: F[k][l] = the block from (g, l) to (g+1+k, l'),
 *      k = 0 .. G-2. Its own blocks for (g', l') are copied there too.
 *   2. across groups: for d = 1 .. G-1, (g, l) sends F[d-1][0 .. L-1] (L blocks, contiguous) to
 *      (g+d, l) as one message, and receives from (g-d, l) the L blocks that group's ranks send
 *      it, which are OUTPUT blocks (g-d)*L .. (g-d)*L + L-1: received there directly when they
 *      are contiguous (always for all-to-all; for all-to-all-v when the receive displacements
 *      pack them), else into SCRATCH and copied out block by block.
 *   The receives of step 2 are posted first; each send of step 2 waits for the receives and the
 *   copy that fill its SCRATCH blocks.
 * All-to-all-v: every rank needs the whole count matrix (it forwards other ranks' blocks), so the
 * local form is refused and the runtime exchanges counts first, as for the torus all-to-all.
 * Messages and copies of zero elements are left out on both ends (both read the same entries).
 *
 * Cost (m bytes per block, n = G L): per rank (G-1) DCN messages of L m each way and
 * (L-1) G local messages of m each way; per group link (G-1) L^2 m = (G-1)/G of the group's
 * send volume each way (each block crosses once, the minimum), against the same volume in
 * (G-1) L^2 messages for a flat all-to-all; local copies of (G-1) m (+ (G-1) L m when
 * all-to-all-v's displacements are not packed). Latency: two message rounds.
 * Preconditions: an outer level (else tpudistNotSupported), any count; no in-place form.
 */
#include "alltoall.h"
#include "alltoallv_layout.h"
#include "hier.h"

typedef struct {
  tdSched *s;
  const tdCollArgs *v; /* all-to-all-v arguments; NULL for all-to-all */
  tdHier h;
  int *staged; /* staged[d-1]: group g-d's blocks are received into SCRATCH (v only) */
} a2aCtx;

/* Elements from rank src to rank dst: 1 for all-to-all (any non-zero: every message kept). */
static uint64_t cnt(const a2aCtx *c, int src, int dst) {
  return c->v ? c->v->v_counts[(size_t)src * c->v->nranks + dst] : 1;
}

/* SCRATCH: F[k][l] at k*L + l, then the staging area R[d-1][l] at (G-1)*L + (d-1)*L + l. */
static tdBufRef fwd(const a2aCtx *c, int k, int l, uint32_t nblocks) {
  return schedRef(TD_BUF_SCRATCH, (uint32_t)(k * c->h.L + l), nblocks);
}
static tdBufRef stage(const a2aCtx *c, int d, int l, uint32_t nblocks) {
  const tdHier *h = &c->h;
  return schedRef(TD_BUF_SCRATCH, (uint32_t)((h->G - 1 + d - 1) * h->L + l), nblocks);
}
static tdBufRef io(tdBufKind b, int rank, uint32_t nblocks) {
  return schedRef(b, (uint32_t)rank, nblocks);
}

/* Elements of the aggregated message from group g's local index l to group g + d. */
static uint64_t aggregate(const a2aCtx *c, int g, int d, int l) {
  uint64_t sum = 0;
  for (int j = 0; j < c->h.L; j++) sum += cnt(c, hierRank(&c->h, g, j), hierRank(&c->h, g + d, l));
  return sum;
}

static tpudistResult_t push(a2aCtx *c, tdStep st, uint64_t elems) {
  return elems ? schedPush(c->s, st) : tpudistSuccess;
}

/* SCRATCH: F, uniform for all-to-all; all-to-all-v: explicit, F, then R for the groups whose
 * OUTPUT blocks are not packed. */
static tpudistResult_t scratchLayout(a2aCtx *c, char *err) {
  const tdHier *h = &c->h;
  int G = h->G, L = h->L;
  uint32_t nb = (uint32_t)(2 * (G - 1) * L);
  if (!c->v) {
    schedSetLayout(c->s, TD_BUF_SCRATCH, nb / 2, 1);
    return tpudistSuccess;
  }
  int me = c->v->rank;
  uint64_t *off = calloc(nb, sizeof(uint64_t)), *len = calloc(nb, sizeof(uint64_t)), at = 0;
  tpudistResult_t res = off && len ? tpudistSuccess : tpudistNoMemory;
  for (int d = 1; d < G && res == tpudistSuccess; d++) {
    uint64_t b, e;
    c->staged[d - 1] = schedRefRange(c->s, io(TD_BUF_OUTPUT, hierRank(h, h->g - d, 0), (uint32_t)L),
                                     0, &b, &e) != tpudistSuccess;
  }
  for (uint32_t i = 0; i < nb && res == tpudistSuccess; i++) {
    int half = i >= nb / 2, kd = (int)(i % (nb / 2)) / L, j = (int)(i % (nb / 2)) % L;
    if (!half)
      len[i] = cnt(c, hierRank(h, h->g, j), hierRank(h, h->g + 1 + kd, h->l));
    else if (c->staged[kd])
      len[i] = cnt(c, hierRank(h, h->g - 1 - kd, j), me);
    off[i] = at, at += len[i];
  }
  if (res == tpudistSuccess) res = schedSetLayoutExplicit(c->s, TD_BUF_SCRATCH, nb, 1, off, len);
  free(off), free(len);
  return res == tpudistSuccess ? res : tdErr(err, res, "alltoallv hier: out of memory");
}

static tpudistResult_t hierA2a(a2aCtx *c) {
  const tdHier *h = &c->h;
  int G = h->G, L = h->L, g = h->g, l = h->l, me = hierRank(h, g, l);
  /* 2, receives first: group g-d's L blocks, directly into OUTPUT or staged */
  for (int d = 1; d < G; d++) {
    int from = hierRank(h, g - d, l), first = hierRank(h, g - d, 0);
    tdBufRef dst = c->v && c->staged[d - 1] ? stage(c, d, 0, (uint32_t)L)
                                            : io(TD_BUF_OUTPUT, first, (uint32_t)L);
    TD_CHECK(push(c, schedRecv(from, dst), aggregate(c, g - d, d, l)));
  }
  /* own blocks: to self, and into F for this local index of every other group */
  TD_CHECK(push(c, schedCopy(io(TD_BUF_INPUT, me, 1), io(TD_BUF_OUTPUT, me, 1)), cnt(c, me, me)));
  for (int k = 0; k < G - 1; k++) {
    int to = hierRank(h, g + 1 + k, l);
    TD_CHECK(push(c, schedCopy(io(TD_BUF_INPUT, to, 1), fwd(c, k, l, 1)), cnt(c, me, to)));
  }
  /* 1: the exchange inside the group */
  for (int i = 1; i < L; i++) {
    int to = hierRank(h, g, l + i), from = hierRank(h, g, l - i);
    TD_CHECK(push(c, schedSend(to, io(TD_BUF_INPUT, to, 1)), cnt(c, me, to)));
    TD_CHECK(push(c, schedRecv(from, io(TD_BUF_OUTPUT, from, 1)), cnt(c, from, me)));
    for (int k = 0; k < G - 1; k++) {
      int far = hierRank(h, g + 1 + k, l + i), mine = hierRank(h, g + 1 + k, l);
      TD_CHECK(push(c, schedSend(to, io(TD_BUF_INPUT, far, 1)), cnt(c, me, far)));
      TD_CHECK(push(c, schedRecv(from, fwd(c, k, hierMod(l - i, L), 1)), cnt(c, from, mine)));
    }
  }
  /* 2, sends: F[d-1] as one message to (g+d, l) */
  for (int d = 1; d < G; d++)
    TD_CHECK(push(c, schedSend(hierRank(h, g + d, l), fwd(c, d - 1, 0, (uint32_t)L)),
                  aggregate(c, g, d, l)));
  /* staged groups' blocks to their places */
  for (int d = 1; d < G && c->v; d++)
    for (int j = 0; c->staged[d - 1] && j < L; j++) {
      int src = hierRank(h, g - d, j);
      TD_CHECK(push(c, schedCopy(stage(c, d, j, 1), io(TD_BUF_OUTPUT, src, 1)), cnt(c, src, me)));
    }
  return tpudistSuccess;
}

tpudistResult_t genAlltoallHier(const tdCollArgs *a, tdSched *s, char *err) {
  a2aCtx c = {s, NULL, {0, 0, 0, 0}, NULL};
  TD_CHECK(hierPlace(a, &c.h, err));
  alltoallLayouts(s, a->nranks);
  TD_CHECK(scratchLayout(&c, err));
  return hierA2a(&c);
}

tpudistResult_t genAlltoallvHier(const tdCollArgs *a, tdSched *s, char *err) {
  a2aCtx c = {s, a, {0, 0, 0, 0}, NULL};
  TD_CHECK(hierPlace(a, &c.h, err));
  if (a->v_local)
    return tdErr(err, tpudistNotSupported,
                 "alltoallv hier forwards other ranks' blocks: it needs the whole count matrix");
  TD_CHECK(alltoallvLayouts(a, s, err));
  c.staged = calloc((size_t)c.h.G, sizeof(int));
  if (!c.staged) return tdErr(err, tpudistNoMemory, "alltoallv hier: out of memory");
  tpudistResult_t res = scratchLayout(&c, err);
  if (res == tpudistSuccess) res = hierA2a(&c);
  free(c.staged);
  return res;
}
