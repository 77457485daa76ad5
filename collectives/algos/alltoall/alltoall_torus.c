/*
 * alltoall_torus.c - dimension-ordered torus all-to-all and all-to-all-v: every block travels
 * from its source to its destination through torus neighbours only, along the dimension-ordered
 * route of the torus model (all its x hops, then y, ...; shortest direction per ring; twisted
 * wrap links where the torus has them). Intermediate ranks store blocks in SCRATCH and forward
 * them. Where the route model splits a message into shares (topoPaths: half way round an even
 * ring both ways, the tied routes of a twisted torus) a block is cut into as many equal parts
 * (chunks of the block: every block has K chunks, K the least common multiple of the share
 * counts), each following its own route; in all-to-all-v parts of no element are left out (the
 * uniform plan serves every count, so there a part may be an empty message). Hop k of every route
 * happens in round k; in each round a rank first sends (its own blocks and what it received in
 * round k-1), then receives; messages between a pair are ordered by (round, source,
 * destination, share) on both sides.
 *
 * all-to-all-v: every rank's generator reads the whole count matrix (the runtime's counts
 * exchange precedes the data movement), so an intermediate rank knows the size of every block it
 * forwards; blocks of zero elements are left out everywhere. The local form (tdCollArgs.v_local:
 * only this rank's row and column) is refused (tpudistNotSupported).
 *
 * Cost (P ranks, V bytes sent per rank, dims A x B x C, W1 per link direction): bisection bound,
 * about V * max(A,B,C) / (8 W1) on a plain torus with wrap (the reference's (V/N) max / (4W),
 * W = 2 W1), less on a twisted torus whose routes are shorter; store and forward adds one block
 * time per hop, and the latency is the longest route in hops. One step per block per hop
 * (about P * mean hops messages per rank), so the schedule is long for large P. Generating one
 * rank's plan costs one route per coordinate difference and two translations per hop of it:
 * O(P * mean hops), in proportion to that rank's own steps (then a sort of its events).
 * Preconditions: torus topology with nranks chips whose routes go through neighbours; no
 * in-place form. Scratch: one block per block this rank forwards.
 */
#include <stdlib.h>

#include "alltoall.h"

#define A2A_MAX_HOPS 1024

typedef struct {
  uint32_t round;
  int send; /* 1: this rank sends the block, 0: receives it */
  int s, d, peer;
  uint32_t c0, nc; /* the part: chunks [c0, c0 + nc) of the block's K */
} a2aEv;

typedef struct {
  a2aEv *ev;
  size_t n, cap;
} a2aList;

static int evCmp(const void *x, const void *y) {
  const a2aEv *a = x, *b = y;
  if (a->round != b->round) return a->round < b->round ? -1 : 1;
  if (a->send != b->send) return a->send ? -1 : 1;
  if (a->s != b->s) return a->s < b->s ? -1 : 1;
  if (a->d != b->d) return a->d < b->d ? -1 : 1;
  return a->c0 < b->c0 ? -1 : (a->c0 > b->c0);
}

static tpudistResult_t evPush(a2aList *l, a2aEv e) {
  if (tdGrow(&l->ev, &l->cap, l->n + 1, sizeof(a2aEv), 256)) return tpudistNoMemory;
  l->ev[l->n++] = e;
  return tpudistSuccess;
}

static uint64_t vcount(const tdCollArgs *a, int s, int d) {
  return a->v_counts ? a->v_counts[(size_t)s * (size_t)a->nranks + (size_t)d] : 1;
}

/* Transit blocks (received here, destined elsewhere) sorted by (s, d): their SCRATCH slots. */
static int transitFind(const a2aEv *tr, size_t n, int s, int d) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (tr[mid].s < s || (tr[mid].s == s && tr[mid].d < d))
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < n && tr[lo].s == s && tr[lo].d == d ? (int)lo : -1;
}

static int pairCmp(const void *x, const void *y) {
  const a2aEv *a = x, *b = y;
  if (a->s != b->s) return a->s < b->s ? -1 : 1;
  return a->d < b->d ? -1 : (a->d > b->d);
}

static tpudistResult_t a2aLayouts(const tdCollArgs *a, tdSched *s, const a2aList *tr, uint32_t K) {
  uint32_t P = (uint32_t)a->nranks;
  if (!a->v_counts) {
    schedSetLayout(s, TD_BUF_INPUT, P, K);
    schedSetLayout(s, TD_BUF_OUTPUT, P, K);
    schedSetLayout(s, TD_BUF_SCRATCH, (uint32_t)tr->n, K);
    return tpudistSuccess;
  }
  uint64_t *off = malloc(sizeof(uint64_t) * (P + tr->n + 1));
  uint64_t *cnt = malloc(sizeof(uint64_t) * (P + tr->n + 1));
  tpudistResult_t r = tpudistNoMemory;
  if (!off || !cnt) goto out;
  for (uint32_t p = 0; p < P; p++) cnt[p] = vcount(a, a->rank, (int)p);
  TD_CHECK_GOTO(schedSetLayoutExplicit(s, TD_BUF_INPUT, P, K, a->v_sdispls, cnt), r, out);
  for (uint32_t p = 0; p < P; p++) cnt[p] = vcount(a, (int)p, a->rank);
  TD_CHECK_GOTO(schedSetLayoutExplicit(s, TD_BUF_OUTPUT, P, K, a->v_rdispls, cnt), r, out);
  uint64_t o = 0;
  for (size_t i = 0; i < tr->n; i++) {
    off[i] = o;
    cnt[i] = vcount(a, tr->ev[i].s, tr->ev[i].d);
    o += cnt[i];
  }
  r = schedSetLayoutExplicit(s, TD_BUF_SCRATCH, (uint32_t)tr->n, K, off, cnt);
out:
  free(off);
  free(cnt);
  return r;
}

static tdBufRef evRef(const tdCollArgs *a, const a2aEv *e, const a2aList *tr, uint32_t K) {
  if (e->send && e->s == a->rank) return schedRef(TD_BUF_INPUT, (uint32_t)e->d * K + e->c0, e->nc);
  if (!e->send && e->d == a->rank)
    return schedRef(TD_BUF_OUTPUT, (uint32_t)e->s * K + e->c0, e->nc);
  uint32_t slot = (uint32_t)transitFind(tr->ev, tr->n, e->s, e->d);
  return schedRef(TD_BUF_SCRATCH, slot * K + e->c0, e->nc);
}

static tpudistResult_t a2aEmit(const tdCollArgs *a, tdSched *s, const a2aList *l, const a2aList *tr,
                               uint32_t K) {
  if (vcount(a, a->rank, a->rank) > 0) {
    tdStep st = schedCopy(schedRef(TD_BUF_INPUT, (uint32_t)a->rank * K, K),
                          schedRef(TD_BUF_OUTPUT, (uint32_t)a->rank * K, K));
    TD_CHECK(schedAppend(s, 0, &st, NULL));
  }
  for (size_t i = 0; i < l->n; i++) {
    const a2aEv *e = &l->ev[i];
    tdBufRef ref = evRef(a, e, tr, K);
    tdStep st = e->send ? schedSend(e->peer, ref) : schedRecv(e->peer, ref);
    TD_CHECK(schedAppend(s, 0, &st, NULL));
  }
  return tpudistSuccess;
}

/* The routes as group translates: on every torus of the model the route s -> d depends only on
 * the difference of their coordinates (per axis modulo a ring's length, the twist's long-axis
 * shift included), so the route of every pair is a translate of the route from one source with
 * the same difference (topoTranslate). This rank's events for share j of the pairs of one
 * difference, cs -> cd (coordinates): at hop k of that share's route it sends for the pair whose
 * source is me - o_k (o_k the route's offset after k hops) and receives for the one whose source
 * is me - o_(k+1). */
static tpudistResult_t shareEvents(const tdCollArgs *a, const int *me, const int *cs, int dst,
                                   int j, uint32_t c0, uint32_t nc, uint32_t K, tdHop *hops,
                                   a2aList *l, char *err) {
  const tdTopo *t = a->topo;
  int src = topoCoordsToRank(t, cs);
  int nh = topoRoute(t, src, dst, j, hops, A2A_MAX_HOPS);
  if (nh > A2A_MAX_HOPS || nh < 1)
    return tdErr(err, tpudistNotSupported, "route %d -> %d has %d hops", src, dst, nh);
  int tot[TD_MAX_DIMS] = {0}, o[TD_MAX_DIMS] = {0}, c[TD_MAX_DIMS], sc[TD_MAX_DIMS];
  for (int k = 0; k < nh; k++) tot[hops[k].axis] += hops[k].dir;
  for (int k = 0; k < nh; k++) {
    int ax = hops[k].axis, dir = hops[k].dir;
    for (int side = 0; side < 2; side++) { /* 0: me sends hop k, 1: me receives it */
      if (side) o[ax] += dir;
      for (int b = 0; b < TD_MAX_DIMS; b++) c[b] = -o[b];
      int s = topoTranslate(t, me, c, sc); /* the pair's source: me - o */
      if (s < 0) continue;
      int d = topoTranslate(t, sc, tot, NULL);
      if (d < 0) continue;
      uint64_t n = vcount(a, s, d); /* all-to-all-v: a part of no element is left out */
      if (a->v_counts && schedSubStart(n, K, c0 + nc) == schedSubStart(n, K, c0)) continue;
      int peer = topoNeighbor(t, a->rank, ax, side ? -dir : dir);
      TD_CHECK(evPush(l, (a2aEv){(uint32_t)k, !side, s, d, peer, c0, nc}));
    }
  }
  return tpudistSuccess;
}

/* Every share of the pairs of one difference: share j of k takes chunks [j K/k, (j+1) K/k). */
static tpudistResult_t classEvents(const tdCollArgs *a, const int *me, const int *cs, const int *cd,
                                   uint32_t K, tdHop *hops, a2aList *l, char *err) {
  const tdTopo *t = a->topo;
  int src = topoCoordsToRank(t, cs), dst = topoCoordsToRank(t, cd);
  int k = topoPaths(t, src, dst);
  for (int j = 0; j < k; j++)
    TD_CHECK(shareEvents(a, me, cs, dst, j, (uint32_t)j * (K / (uint32_t)k), K / (uint32_t)k, K,
                         hops, l, err));
  return tpudistSuccess;
}

static uint32_t gcd32(uint32_t x, uint32_t y) {
  while (y) {
    uint32_t r = x % y;
    x = y;
    y = r;
  }
  return x;
}

/* Every difference class once (per axis 0 .. len-1 on a ring, -(len-1) .. len-1 on a line):
 * with l NULL, K becomes the least common multiple of their share counts; else their events. */
static tpudistResult_t allEvents(const tdCollArgs *a, uint32_t *K, tdHop *hops, a2aList *l,
                                 char *err) {
  const tdTopo *t = a->topo;
  int me[TD_MAX_DIMS], lo[TD_MAX_DIMS] = {0}, v[TD_MAX_DIMS] = {0}, cs[TD_MAX_DIMS],
                       cd[TD_MAX_DIMS];
  topoRankToCoords(t, a->rank, me);
  for (int b = 0; b < t->ndims; b++) v[b] = lo[b] = t->wrap[b] ? 0 : 1 - t->dims[b];
  for (;;) {
    int zero = 1;
    for (int b = 0; b < TD_MAX_DIMS; b++) {
      cs[b] = v[b] < 0 ? -v[b] : 0;
      cd[b] = v[b] < 0 ? 0 : v[b];
      zero &= v[b] == 0;
    }
    if (!zero && l) TD_CHECK(classEvents(a, me, cs, cd, *K, hops, l, err));
    if (!zero && !l) {
      uint32_t k = (uint32_t)topoPaths(t, topoCoordsToRank(t, cs), topoCoordsToRank(t, cd));
      *K = *K / gcd32(*K, k) * k;
    }
    int b = 0;
    for (; b < t->ndims && ++v[b] >= t->dims[b]; b++) v[b] = lo[b];
    if (b == t->ndims) return tpudistSuccess;
  }
}

static tpudistResult_t genA2A(const tdCollArgs *a, tdSched *s, char *err) {
  if (!a->topo || a->topo->ndims <= 0)
    return tdErr(err, tpudistNotSupported,
                 "torus algorithms need a torus topology (this one is flat)");
  if (a->topo->nranks != a->nranks)
    return tdErr(err, tpudistNotSupported, "torus of %d chips does not match %d ranks",
                 a->topo->nranks, a->nranks);
  if (a->inplace) return tdErr(err, tpudistNotSupported, "all-to-all has no in-place form");
  if (a->coll == TD_COLL_ALLTOALLV && (!a->v_counts || !a->v_sdispls || !a->v_rdispls))
    return tdErr(err, tpudistInvalidArgument, "alltoallv needs the count matrix and displacements");
  a2aList l = {0}, tr = {0};
  uint32_t K = 1;
  tdHop *hops = malloc(sizeof(tdHop) * A2A_MAX_HOPS);
  tpudistResult_t r = hops ? allEvents(a, &K, hops, NULL, err) : tpudistNoMemory;
  if (r == tpudistSuccess) r = allEvents(a, &K, hops, &l, err);
  for (size_t i = 0; i < l.n && r == tpudistSuccess; i++)
    if (!l.ev[i].send && l.ev[i].d != a->rank) r = evPush(&tr, l.ev[i]);
  if (r == tpudistSuccess) {
    if (l.n) qsort(l.ev, l.n, sizeof(a2aEv), evCmp); /* empty lists have no array */
    if (tr.n) qsort(tr.ev, tr.n, sizeof(a2aEv), pairCmp);
    size_t u = 0; /* one SCRATCH block per transit pair, whichever of its parts pass here */
    for (size_t i = 0; i < tr.n; i++)
      if (!u || tr.ev[u - 1].s != tr.ev[i].s || tr.ev[u - 1].d != tr.ev[i].d) tr.ev[u++] = tr.ev[i];
    tr.n = u;
    r = a2aLayouts(a, s, &tr, K);
  }
  if (r == tpudistSuccess) r = a2aEmit(a, s, &l, &tr, K);
  free(hops);
  free(l.ev);
  free(tr.ev);
  return r;
}

tpudistResult_t genAlltoallTorus(const tdCollArgs *a, tdSched *s, char *err) {
  return genA2A(a, s, err);
}

tpudistResult_t genAlltoallvTorus(const tdCollArgs *a, tdSched *s, char *err) {
  if (a->v_local)
    return tdErr(err, tpudistNotSupported,
                 "alltoallv torus forwards through other ranks: it needs the whole count matrix");
  return genA2A(a, s, err);
}
