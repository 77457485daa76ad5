/*
 * sym.c - the simulator's quotient by the torus' translations. On a torus that wraps on every
 * axis every chip is a translate of chip 0 (topoTranslate, twisted wiring included), and
 * dimension-ordered routes are translates of each other. When every rank's plan is the image of
 * rank 0's under the translation that maps 0 to it, the simulation is translation invariant: every
 * rank issues the image of rank 0's steps at the same instants, and every directed link of one
 * (axis, direction) carries the translates of the same flows. The engine then simulates rank 0
 * alone (engine.c): a message rank 0 sends to q stands for every rank g's message to g + q; the
 * receive rank 0 posts from p is matched with rank 0's send to -p (the image of p's send to 0);
 * links are classes (axis, direction), where a flow that crosses k links of one class counts k
 * times in the fair share (net.c), which is what each physical link of that class sees.
 *
 * The image is checked, not assumed, on sample ranks (one step along each axis, the diagonal and
 * the far corner): stream for stream and step for step the same op and dependencies, peers
 * mapped by the translation, and buffer references that are rank 0's up to a permutation of
 * chunks of equal size (so sizes and conflicts between steps are the same; sigSame). Plans that are
 * translates only as sets (messages in another order, peers ordered by rank number: pairwise,
 * direct, Bruck) fail it and are simulated rank by rank, as are shapes without wrap on some axis,
 * failed links, in-place and explicit (all-to-all-v) layouts, uneven chunks and the functional
 * mode.
 */
#include <stdlib.h>
#include <string.h>

#include "sim_int.h"

#define SYM_MAX_SAMPLES (TD_MAX_DIMS + 2)

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
      e->args.inplace || e->args.coll == TD_COLL_ALLTOALLV || e->nranks < 2)
    return 0;
  for (int a = 0; a < t->ndims; a++)
    if (t->dims[a] > 1 && !t->wrap[a]) return 0;
  return 1;
}

static int symSamples(const tdTopo *t, int *g) {
  int n = 0, d[TD_MAX_DIMS] = {0};
  for (int a = 0; a < t->ndims; a++) {
    if (t->dims[a] < 2) continue;
    memset(d, 0, sizeof(d));
    d[a] = 1;
    g[n++] = topoTranslate(t, NULL, d, NULL);
  }
  for (int a = 0; a < TD_MAX_DIMS; a++) d[a] = 1;
  g[n++] = topoTranslate(t, NULL, d, NULL);
  for (int a = 0; a < TD_MAX_DIMS; a++) d[a] = a < t->ndims ? t->dims[a] - 1 : 0;
  g[n++] = topoTranslate(t, NULL, d, NULL);
  return n;
}

/* Conflicts within a stream depend only on which chunks two references share (in-place plans are
 * not taken), so rank g's references must be rank 0's up to a permutation of chunks of equal
 * size. Each chunk gets a signature, the sum of a tag per reference that covers it (the tag of
 * the step and operand, the same in both plans); the permutation exists when both plans have the
 * same multiset of (signature, chunk size) per buffer. With k chunks per block of count elements,
 * sub-chunk s of a block is one element longer when s < count % k. */
typedef struct {
  uint64_t *sig[2][TD_NUM_BUFS]; /* [plan: rank 0, rank g][buffer]: n + 1 entries, differences */
  uint64_t n[TD_NUM_BUFS], k[TD_NUM_BUFS], rem[TD_NUM_BUFS];
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

static tpudistResult_t sigInit(symSig *m, const tdSched *x, uint64_t count) {
  memset(m, 0, sizeof(*m));
  for (int b = 0; b < TD_NUM_BUFS; b++) {
    m->k[b] = x->layout[b].chunks_per_block;
    m->rem[b] = m->k[b] ? count % m->k[b] : 0;
    m->n[b] = (uint64_t)x->layout[b].nblocks * m->k[b];
    m->sig[0][b] = calloc(2 * (m->n[b] + 1), sizeof(uint64_t));
    if (!m->sig[0][b]) return tpudistNoMemory;
    m->sig[1][b] = m->sig[0][b] + m->n[b] + 1;
  }
  return tpudistSuccess;
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
        v[c] = run ^ (c % m->k[b] < m->rem[b] ? 0x9e3779b97f4a7c15ull : 0); /* its size */
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

/* Equal uniform layouts. */
static int layoutsEqual(const tdSched *x, const tdSched *y) {
  for (int b = 0; b < TD_NUM_BUFS; b++) {
    const tdLayout *lx = &x->layout[b], *ly = &y->layout[b];
    if (lx->offsets || ly->offsets || lx->nblocks != ly->nblocks ||
        lx->chunks_per_block != ly->chunks_per_block)
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
  tpudistResult_t r = sigInit(&m, x, e->args.count);
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

/* The kind of image rank g's plans are of rank 0's (x): 1 step for step, 2 as sets (planFree),
 * 0 none; samples: how many ranks were compared. */
static tpudistResult_t symKind(simEngine *e, const tdSched *x, int *kind, int *samples) {
  const tdTopo *t = e->cfg->topo;
  int g[SYM_MAX_SAMPLES], n = symSamples(t, g), set = 0;
  if (!e->cfg->max_dma && !e->cfg->max_inflight) TD_CHECK(planFree(e, x, &set));
  int step = 1;
  *samples = 0;
  for (int i = 0; i < n && (step || set); i++) {
    if (g[i] <= 0) continue; /* a 1-long axis: no translate */
    tdSched y;
    TD_CHECK(winGenerate(e, g[i], &y));
    tpudistResult_t r = step ? planImage(e, g[i], x, &y, &step) : tpudistSuccess;
    if (r == tpudistSuccess && set) r = planSetImage(e, g[i], x, &y, &set);
    schedFree(&y);
    TD_CHECK(r);
    (*samples)++;
  }
  *kind = !*samples ? 0 : step ? 1 : set ? 2 : 0;
  return tpudistSuccess;
}

tpudistResult_t symSetup(simEngine *e) {
  e->sym = 0;
  e->sym_samples = 0;
  if (!symEligible(e)) return tpudistSuccess;
  const tdTopo *t = e->cfg->topo;
  tdSched x;
  TD_CHECK(winGenerate(e, 0, &x));
  int kind = 0;
  tpudistResult_t r = symKind(e, &x, &kind, &e->sym_samples);
  schedFree(&x);
  if (r != tpudistSuccess || !kind) return r;
  e->mirror = malloc(sizeof(int) * (size_t)e->nranks);
  if (!e->mirror) return tdErr(e->err, tpudistNoMemory, "sim: no memory for %d ranks", e->nranks);
  for (int q = 0; q < e->nranks; q++) {
    int c[TD_MAX_DIMS];
    topoRankToCoords(t, q, c);
    for (int a = 0; a < TD_MAX_DIMS; a++) c[a] = -c[a];
    e->mirror[q] = topoTranslate(t, NULL, c, NULL);
  }
  e->sym = kind;
  e->net.sym = 1;
  return tpudistSuccess;
}
