/*
 * sym.c - the simulator's quotient by the torus' translations (docs/simulator.md, "Performance of
 * the simulator"). On a torus that wraps on every axis every chip is a translate of chip 0
 * (topoTranslate, twisted wiring included), and dimension-ordered routes are translates of each
 * other. When every rank's plan is the image of a representative's under the translation that
 * maps one to the other, the simulation is translation invariant: every rank issues the image of
 * its representative's steps at the same instants, and every link carries the translates of the
 * same flows. The engine then simulates the representatives alone: a message is matched in the
 * frame of its receiver's representative (symCanon), every link and injection/ejection resource is
 * its representative's (net.c), where a flow that crosses k links of one class counts k times in
 * the fair share, which is what each physical link of that class sees.
 *
 * The group: all translations (one representative, rank 0) when one step along each axis, the
 * diagonal and the far corner map rank 0's plan to theirs; else (untwisted, no DMA limit) per
 * axis the shortest period k (a divisor of the axis) such that k steps do (plans that order peers
 * by rank number: the slowest axis, where a step shifts rank numbers by a plane; groups of k
 * planes: k), the representatives being the ranks below the periods. The image is checked, not
 * assumed, on those samples: stream for stream and step for step the same op and dependencies,
 * peers moved by the translation, and buffer references that are the representative's up to a
 * permutation of chunks of equal size (so sizes and conflicts between steps are the same; sigSame;
 * explicit all-to-all-v layouts with their blocks apart). Plans whose steps never wait (planFree:
 * direct) need only be images as sets. Shapes without wrap on some axis, failed links, in-place
 * plans and the functional mode are simulated rank by rank.
 */
#include <stdlib.h>
#include <string.h>

#include "sim_int.h"

/* The rank at rank q's coordinates moved by rank g's (g's image of q). */
static int symTranslate(const tdTopo *t, int g, int q) {
  int cg[TD_MAX_DIMS], cq[TD_MAX_DIMS];
  topoRankToCoords(t, g, cg);
  topoRankToCoords(t, q, cq);
  return topoTranslate(t, cg, cq, NULL);
}

static int symEligible(const simEngine *e) {
  const tdTopo *t = e->cfg->topo;
  if (!e->cfg->symmetric || e->cfg->functional || e->cfg->nfailed || t->ndims == 0 ||
      topoHasDcn(t) || e->args.inplace || e->nranks < 2)
    return 0;
  for (int a = 0; a < t->ndims; a++)
    if (t->dims[a] > 1 && !t->wrap[a]) return 0;
  return 1;
}

/* Conflicts within a stream depend only on which chunks two references share (in-place plans are
 * not taken), so rank g's references must be rank 0's up to a permutation of chunks of equal
 * size. Each chunk gets a signature, the sum of a tag per reference that covers it (the tag of
 * the step and operand, the same in both plans); the permutation exists when both plans have the
 * same multiset of (signature, chunk size) per buffer. With k chunks per block of count elements,
 * sub-chunk s of a block is one element longer when s < count % k. */
typedef struct {
  uint64_t *sig[2][TD_NUM_BUFS]; /* [plan: rank 0, rank g][buffer]: n + 1 entries, differences */
  const tdLayout *lay[2][TD_NUM_BUFS];
  uint64_t n[TD_NUM_BUFS], count;
} symSig;

static uint64_t symMix(uint64_t z) { /* splitmix64's finaliser */
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static void sigFree(symSig *m) {
  for (int b = 0; b < TD_NUM_BUFS; b++) free(m->sig[0][b]);
}

static tpudistResult_t sigInit(symSig *m, const tdSched *x, const tdSched *y, uint64_t count) {
  memset(m, 0, sizeof(*m));
  m->count = count;
  for (int b = 0; b < TD_NUM_BUFS; b++) {
    m->lay[0][b] = &x->layout[b];
    m->lay[1][b] = &y->layout[b];
    m->n[b] = (uint64_t)x->layout[b].nblocks * x->layout[b].chunks_per_block;
    m->sig[0][b] = calloc(2 * (m->n[b] + 1), sizeof(uint64_t));
    if (!m->sig[0][b]) return tpudistNoMemory;
    m->sig[1][b] = m->sig[0][b] + m->n[b] + 1;
  }
  return tpudistSuccess;
}

/* Elements of chunk c: its block's count split into k balanced sub-chunks (docs: tdLayout). */
static uint64_t chunkSize(const tdLayout *l, uint64_t count, uint64_t c) {
  uint64_t k = l->chunks_per_block, n = l->offsets ? l->counts[c / k] : count, s = c % k;
  return n / k + (s < n % k);
}

static int sigAdd(symSig *m, int side, tdBufRef r, uint64_t tag) {
  if (r.buf >= TD_NUM_BUFS || (uint64_t)r.chunk + r.nchunks > m->n[r.buf]) return 0;
  m->sig[side][r.buf][r.chunk] += tag;
  m->sig[side][r.buf][r.chunk + r.nchunks] -= tag;
  return 1;
}

static int u64Cmp(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* Compares the signature multisets of one stream, then clears them for the next. */
static int sigSame(symSig *m) {
  int same = 1;
  for (int b = 0; b < TD_NUM_BUFS; b++) {
    for (int side = 0; side < 2; side++) {
      uint64_t *v = m->sig[side][b], run = 0;
      for (uint64_t c = 0; c < m->n[b]; c++) {
        run += v[c];
        v[c] = run + symMix(chunkSize(m->lay[side][b], m->count, c) ^ 0x5bd1e995ull);
      }
      qsort(v, m->n[b], sizeof(uint64_t), u64Cmp);
    }
    same = same && !memcmp(m->sig[0][b], m->sig[1][b], sizeof(uint64_t) * m->n[b]);
    memset(m->sig[0][b], 0, sizeof(uint64_t) * 2 * (m->n[b] + 1));
  }
  return same;
}

static int peerImage(const tdTopo *t, int g, int p0, int pg) {
  return p0 >= 0 && p0 < t->nranks ? pg == symTranslate(t, g, p0) : pg == p0;
}

/* Step i of a stream: a (rank 0's) and b (rank g's). */
static int stepImage(const tdTopo *t, int g, symSig *m, uint64_t i, const tdStep *a,
                     const tdStep *b) {
  if (a->op != b->op) return 0;
  for (int d = 0; d < 2; d++)
    if (a->deps[d].stream != b->deps[d].stream ||
        (a->deps[d].stream != TD_NO_DEP && a->deps[d].step != b->deps[d].step))
      return 0;
  if (!peerImage(t, g, schedSendPeer(a), schedSendPeer(b)) ||
      !peerImage(t, g, schedRecvPeer(a), schedRecvPeer(b)))
    return 0;
  uint64_t ts = symMix(2 * i), td = symMix(2 * i + 1);
  if (schedUsesSrc(a->op) && !(sigAdd(m, 0, a->src, ts) && sigAdd(m, 1, b->src, ts))) return 0;
  if (schedUsesDst(a->op) && !(sigAdd(m, 0, a->dst, td) && sigAdd(m, 1, b->dst, td))) return 0;
  return 1;
}

/* Explicit layouts (all-to-all-v) whose blocks lie in order without overlapping, so that only
 * shared chunks make references conflict. */
static int blocksApart(const tdLayout *l) {
  for (uint32_t b = 0; l->offsets && b + 1 < l->nblocks; b++)
    if (l->offsets[b] + l->counts[b] > l->offsets[b + 1]) return 0;
  return 1;
}

/* Layouts of the same shape (uniform, or explicit with disjoint blocks in order). */
static int layoutsEqual(const tdSched *x, const tdSched *y) {
  for (int b = 0; b < TD_NUM_BUFS; b++) {
    const tdLayout *lx = &x->layout[b], *ly = &y->layout[b];
    if (!lx->offsets != !ly->offsets || lx->nblocks != ly->nblocks ||
        lx->chunks_per_block != ly->chunks_per_block || !blocksApart(lx) || !blocksApart(ly))
      return 0;
  }
  return x->nstreams == y->nstreams && !x->inplace && !y->inplace;
}

/* 1 if y (rank g's plan) is the translate of x (rank 0's). */
static tpudistResult_t planImage(const simEngine *e, int g, const tdSched *x, const tdSched *y,
                                 int *ok) {
  *ok = layoutsEqual(x, y);
  if (!*ok) return tpudistSuccess;
  symSig m;
  tpudistResult_t r = sigInit(&m, x, y, e->args.count);
  for (uint32_t s = 0; r == tpudistSuccess && s < x->nstreams && *ok; s++) {
    const tdStream *a = &x->streams[s], *b = &y->streams[s];
    *ok = a->nsteps == b->nsteps;
    for (uint32_t i = 0; i < a->nsteps && *ok; i++)
      *ok = stepImage(e->cfg->topo, g, &m, i, &a->steps[i], &b->steps[i]);
    *ok = *ok && sigSame(&m);
  }
  sigFree(&m);
  return r;
}

/* ---- set images: plans whose steps never wait ---- */
/* 1 if no step of s ever waits: no dependencies, no fused forwards, no two steps of a stream
 * touching a chunk that one of them writes, and at most one message each way per peer. Every
 * step is then issued at once and every message starts as soon as both ends are posted, so the
 * order and the streams of the steps do not change any time. */
static tpudistResult_t planFree(const simEngine *e, const tdSched *s, int *ok) {
  uint8_t *mark[TD_NUM_BUFS] = {NULL}, *pairs = calloc((size_t)e->nranks, 1);
  uint64_t n[TD_NUM_BUFS];
  tpudistResult_t r = pairs ? tpudistSuccess : tpudistNoMemory;
  for (int b = 0; b < TD_NUM_BUFS && r == tpudistSuccess; b++) {
    n[b] = (uint64_t)s->layout[b].nblocks * s->layout[b].chunks_per_block;
    if (!(mark[b] = calloc(n[b] + 1, 1))) r = tpudistNoMemory;
  }
  *ok = r == tpudistSuccess;
  for (uint32_t si = 0; si < s->nstreams && *ok; si++) {
    const tdStream *st = &s->streams[si];
    for (uint32_t i = 0; i < st->nsteps && *ok; i++) {
      const tdStep *p = &st->steps[i];
      int sp = schedSendPeer(p), rp = schedRecvPeer(p);
      *ok = p->deps[0].stream == TD_NO_DEP && p->deps[1].stream == TD_NO_DEP && !schedFused(p->op);
      if (sp >= 0 && sp < e->nranks) *ok = *ok && !(pairs[sp] & 1), pairs[sp] |= 1;
      if (rp >= 0 && rp < e->nranks) *ok = *ok && !(pairs[rp] & 2), pairs[rp] |= 2;
      for (int o = 0; o < 2 && *ok; o++) { /* 1: read, 2: written */
        if (o == 0 ? !schedUsesSrc(p->op) : !schedUsesDst(p->op)) continue;
        tdBufRef ref = o == 0 ? p->src : p->dst;
        int w = o == 1 && (tdStepSemTable[p->op].flags & TD_SEM_WRITE_DST);
        *ok = ref.buf < TD_NUM_BUFS && (uint64_t)ref.chunk + ref.nchunks <= n[ref.buf];
        for (uint32_t c = ref.chunk; *ok && c < ref.chunk + ref.nchunks; c++) {
          uint8_t *m = &mark[ref.buf][c];
          *ok = !(*m & 2) && !(w && *m);
          *m |= w ? 2 : 1;
        }
      }
    }
    for (int b = 0; b < TD_NUM_BUFS && mark[b]; b++) memset(mark[b], 0, n[b] + 1);
  }
  for (int b = 0; b < TD_NUM_BUFS; b++) free(mark[b]);
  free(pairs);
  return r;
}

/* A step as a set image sees it: what it does on the wire, its peer, its bytes. */
typedef struct {
  int64_t kind, peer;
  uint64_t bytes;
} symItem;

static int itemCmp(const void *a, const void *b) {
  const symItem *x = a, *y = b;
  if (x->kind != y->kind) return x->kind < y->kind ? -1 : 1;
  if (x->peer != y->peer) return x->peer < y->peer ? -1 : 1;
  return x->bytes < y->bytes ? -1 : x->bytes > y->bytes;
}

/* The steps of s as sorted items, peers moved by the translation to g (g < 0: as they are). */
static tpudistResult_t planItems(const simEngine *e, int g, const tdSched *s, symItem **out,
                                 size_t *n) {
  size_t cap = 0;
  for (uint32_t si = 0; si < s->nstreams; si++) cap += s->streams[si].nsteps;
  symItem *v = malloc(sizeof(symItem) * (cap + 1));
  if (!v) return tpudistNoMemory;
  *n = 0;
  for (uint32_t si = 0; si < s->nstreams; si++)
    for (uint32_t i = 0; i < s->streams[si].nsteps; i++) {
      const tdStep *p = &s->streams[si].steps[i];
      unsigned f = tdStepSemTable[p->op].flags;
      int peer = f & TD_SEM_WIRE_OUT ? schedSendPeer(p) : schedRecvPeer(p);
      tdSpan sp;
      tdBufRef ref = f & TD_SEM_WIRE_OUT ? schedWireRef(p) : p->dst;
      if (schedRefSpan(s, ref, e->args.count, &sp) != tpudistSuccess) sp.b = sp.e = 0;
      symItem *it = &v[(*n)++];
      it->kind = (int64_t)(f & (TD_SEM_WIRE_IN | TD_SEM_WIRE_OUT)) * 256 + p->op;
      it->peer =
          g >= 0 && peer >= 0 && peer < e->nranks ? symTranslate(e->cfg->topo, g, peer) : peer;
      it->bytes = sp.e - sp.b;
    }
  qsort(v, *n, sizeof(symItem), itemCmp);
  *out = v;
  return tpudistSuccess;
}

/* 1 if rank g's plan y does what rank 0's x does, moved to g, as a set of steps that never wait. */
static tpudistResult_t planSetImage(const simEngine *e, int g, const tdSched *x, const tdSched *y,
                                    int *ok) {
  *ok = layoutsEqual(x, y);
  if (!*ok) return tpudistSuccess;
  TD_CHECK(planFree(e, y, ok));
  if (!*ok) return tpudistSuccess;
  symItem *a = NULL, *b = NULL;
  size_t na = 0, nb = 0;
  tpudistResult_t r = planItems(e, g, x, &a, &na);
  if (r == tpudistSuccess) r = planItems(e, -1, y, &b, &nb);
  *ok = r == tpudistSuccess && na == nb && !memcmp(a, b, sizeof(symItem) * na);
  free(a);
  free(b);
  return r;
}

/* The rank at coordinates d (a translation, as the image of rank 0). */
static int vecRank(const tdTopo *t, const int *d) {
  return topoTranslate(t, NULL, d, NULL);
}

/* Compares the plans of the base ranks with those of their translates by the vectors g (ranks,
 * images of rank 0); clears *step or *set where the plans are not images in that sense. */
static tpudistResult_t symCheck(simEngine *e, const int *base, int nbase, const int *g, int ng,
                                int *step, int *set) {
  for (int i = 0; i < nbase && (*step || *set); i++) {
    tdSched x;
    TD_CHECK(winGenerate(e, base[i], &x));
    tpudistResult_t r = tpudistSuccess;
    for (int j = 0; j < ng && (*step || *set) && r == tpudistSuccess; j++) {
      if (g[j] <= 0) continue; /* a 1-long axis: no translate */
      tdSched y;
      r = winGenerate(e, symTranslate(e->cfg->topo, g[j], base[i]), &y);
      if (r != tpudistSuccess) break;
      if (*step) r = planImage(e, g[j], &x, &y, step);
      if (r == tpudistSuccess && *set) r = planSetImage(e, g[j], &x, &y, set);
      schedFree(&y);
      e->sym_samples++;
    }
    schedFree(&x);
    TD_CHECK(r);
  }
  return tpudistSuccess;
}

/* The whole group of translations: one step along each axis, the diagonal and the far corner
 * must map rank 0's plan to theirs. */
static tpudistResult_t symWhole(simEngine *e, int set0, int *kind) {
  const tdTopo *t = e->cfg->topo;
  int g[TD_MAX_DIMS + 2], n = 0, d[TD_MAX_DIMS], zero = 0, step = 1, set = set0;
  for (int a = 0; a < t->ndims; a++) {
    memset(d, 0, sizeof(d));
    d[a] = 1;
    if (t->dims[a] > 1) g[n++] = vecRank(t, d);
  }
  for (int a = 0; a < TD_MAX_DIMS; a++) d[a] = a < t->ndims && t->dims[a] > 1;
  g[n++] = vecRank(t, d);
  for (int a = 0; a < TD_MAX_DIMS; a++) d[a] = a < t->ndims ? t->dims[a] - 1 : 0;
  g[n++] = vecRank(t, d);
  TD_CHECK(symCheck(e, &zero, 1, g, n, &step, &set));
  *kind = step ? 1 : set ? 2 : 0;
  for (int a = 0; a < TD_MAX_DIMS; a++) e->period[a] = 1;
  return tpudistSuccess;
}

/* The shortest period along axis a: the least k dividing the axis (k < dims[a]) such that k steps
 * along it map rank 0's plan to its translate's; dims[a] (no translation) if none does. */
static tpudistResult_t symPeriod(simEngine *e, int a, int set0, int *period, int *kind) {
  const tdTopo *t = e->cfg->topo;
  *period = t->dims[a];
  *kind = 0;
  for (int k = 1; k < t->dims[a]; k++) {
    if (t->dims[a] % k) continue;
    int step = 1, set = set0, u[TD_MAX_DIMS] = {0}, zero = 0;
    u[a] = k;
    int g = vecRank(t, u);
    TD_CHECK(symCheck(e, &zero, 1, &g, 1, &step, &set));
    if (!step && !set) continue;
    *period = k;
    *kind = step ? 1 : 2;
    return tpudistSuccess;
  }
  return tpudistSuccess;
}

/* A subgroup: per axis the shortest period that maps rank 0's plan to its translate's (plans that
 * order peers by rank number have period 1 along the slowest axis, where a step is a shift of
 * rank numbers; plans of groups of k planes, period k); then a translation by every period at
 * once must too, from rank 0 and from the far corner of the representatives. period[a] =
 * dims[a] on the other axes. */
static tpudistResult_t symAxes(simEngine *e, int set0, int *kind) {
  const tdTopo *t = e->cfg->topo;
  int d[TD_MAX_DIMS] = {0}, far[TD_MAX_DIMS] = {0}, any = 0;
  *kind = 0;
  for (int a = 0; a < TD_MAX_DIMS; a++) {
    e->period[a] = a < t->ndims ? t->dims[a] : 1;
    if (a >= t->ndims || t->dims[a] < 2) continue;
    int k = 0;
    TD_CHECK(symPeriod(e, a, set0, &e->period[a], &k));
    if (!k) continue;
    d[a] = e->period[a];
    any = 1;
    *kind = TD_MAX(*kind, k);
  }
  if (!any) return tpudistSuccess;
  for (int a = 0; a < t->ndims; a++) far[a] = e->period[a] - 1;
  int base[2] = {0, vecRank(t, far)}, g = vecRank(t, d), step = *kind == 1, set = set0;
  TD_CHECK(symCheck(e, base, base[1] ? 2 : 1, &g, 1, &step, &set));
  if (!step && !set) *kind = 0;
  if (!step && set) *kind = 2;
  return tpudistSuccess;
}

/* Representatives: the ranks whose coordinates are below the periods; rep[q] is q's. */
static tpudistResult_t symReps(simEngine *e) {
  const tdTopo *t = e->cfg->topo;
  int m = 1;
  for (int a = 0; a < t->ndims; a++) m *= e->period[a];
  e->rep = malloc(sizeof(int) * (size_t)e->nranks);
  e->sim_ranks = malloc(sizeof(int) * (size_t)m);
  if (!e->rep || !e->sim_ranks) return tdErr(e->err, tpudistNoMemory, "sim: no memory for ranks");
  e->nsim = 0;
  for (int q = 0; q < e->nranks; q++) {
    int c[TD_MAX_DIMS], inside = 1;
    topoRankToCoords(t, q, c);
    for (int a = 0; a < t->ndims; a++) {
      inside &= c[a] < e->period[a];
      c[a] %= e->period[a];
    }
    e->rep[q] = topoCoordsToRank(t, c);
    if (inside) e->sim_ranks[e->nsim++] = q;
  }
  return e->nsim == m ? tpudistSuccess : tpudistInternalError;
}

void symCanon(const simEngine *e, int *from, int *to) {
  int r = e->rep[*to];
  if (r == *to) return;
  const tdTopo *t = e->cfg->topo;
  int cf[TD_MAX_DIMS], ct[TD_MAX_DIMS], cr[TD_MAX_DIMS];
  topoRankToCoords(t, *from, cf);
  topoRankToCoords(t, *to, ct);
  topoRankToCoords(t, r, cr);
  for (int a = 0; a < TD_MAX_DIMS; a++) ct[a] = cr[a] - ct[a];
  *from = topoTranslate(t, cf, ct, NULL);
  *to = r;
}

tpudistResult_t symSetup(simEngine *e) {
  e->sym = 0;
  e->sym_samples = 0;
  e->nsim = e->nranks;
  if (!symEligible(e)) return tpudistSuccess;
  int set0 = 0, kind = 0;
  if (!e->cfg->max_dma && !e->cfg->max_inflight) { /* queues and depth limits see the order */
    tdSched x;
    TD_CHECK(winGenerate(e, 0, &x));
    tpudistResult_t r = planFree(e, &x, &set0);
    schedFree(&x);
    TD_CHECK(r);
  }
  TD_CHECK(symWhole(e, set0, &kind));
  /* A DMA queue takes the messages matched at one instant in the order the engine meets them,
   * which for every rank follows rank numbers (not a translate's order): the quotient then only
   * for the whole group, whose plans agree with it (tests/sim/test_sim.c). */
  if (!kind && !e->cfg->topo->twisted && !e->cfg->max_dma) TD_CHECK(symAxes(e, set0, &kind));
  if (!kind) {
    e->nsim = e->nranks;
    return tpudistSuccess;
  }
  TD_CHECK(symReps(e));
  e->sym = kind;
  e->net.rep = e->rep;
  return tpudistSuccess;
}
