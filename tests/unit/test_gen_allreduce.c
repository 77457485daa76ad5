/*
 * test_gen_allreduce.c - the all-reduce generators (ring, ring2, tree, recdbl, rabenseifner,
 * direct) over nranks 1..17, 24, 32, 64 x counts {0, 1, n-1, 3n+1, 1000} x in place / out of place.
 *
 * Two independent checks per shape:
 *  - the validator (validateAlgo): matching, progress (no deadlock, no cross-stream race), and
 *    that every output element holds every rank's contribution exactly once; unfused and fused.
 *  - the reduction-order check below: a small symbolic executor in which every element is an
 *    expression tree (leaves = (rank, element), inner nodes = ordered (+) with the operands in
 *    the order the step semantics give them), hash-consed so that equal trees have equal ids.
 *    It proves that every rank ends with the *same* tree for each element -- same association and
 *    same operand order, hence bit-identical results for any reduction op -- which contribution
 *    sets alone cannot show. It runs the issue rules (in-order issue, conflicts within a stream,
 *    deps, rendezvous sends, fused steps as store and forward) and reports deadlocks and
 *    cross-stream races it meets. Unfused and fused (schedFuse) schedules.
 * Plus: schedules do not depend on the count, rings fuse fully, the two trees are complementary,
 * bad arguments are refused; tests/run --full adds 127..257 ranks.
 */
#include <stdlib.h>
#include <string.h>

#include "../cu_main.h"
#include "algos.h"
#include "allreduce.h"
#include "drive.h"
#include "step_sem.h"

typedef struct {
  const char *name;
  tdGenFn gen;
} genCase;

/* The all-reduce generators, by function (algoOfGen finds their table entries). */
static const genCase kGens[] = {{"ring", genAllreduceRing},
                                {"ring2", genAllreduceRing2},
                                {"tree", genAllreduceTree},
                                {"recdbl", genAllreduceRecdbl},
                                {"rabenseifner", genAllreduceRabenseifner},
                                {"direct", genAllreduceDirect}};

static const int kRanks[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 24, 32, 64};
#define NUM_RANKS ((int)(sizeof(kRanks) / sizeof(kRanks[0])))

static void countsFor(int p, uint64_t c[5]) {
  c[0] = 0;
  c[1] = 1;
  c[2] = (uint64_t)p - 1;
  c[3] = 3 * (uint64_t)p + 1;
  c[4] = 1000;
}

/* ---------------------------------------------------------------------------------------------
 * Expressions: id -> (a, b); a leaf has a == OC_LEAF and b = rank * n + element.
 */
#define OC_LEAF 0xffffffffu
#define OC_UNSET 0xfffffffeu /* an element never written */

/* Step states. A fused step receives first (OC_FLIGHT), then forwards what it received
 * (OC_FORWARD): store and forward, which is stricter than the executor's cut-through. */
#define OC_IDLE 0
#define OC_FLIGHT 1
#define OC_DONE 2
#define OC_FORWARD 3

typedef struct {
  uint64_t *keys; /* (a << 32 | b) + 1, 0 = empty */
  uint32_t *ids;
  uint64_t cap, used;
  uint32_t *a, *b;
  uint32_t n, ncap;
} ocExprs;

static uint32_t ocNew(ocExprs *e, uint32_t a, uint32_t b) {
  if (e->n == e->ncap) {
    e->ncap = e->ncap ? e->ncap * 2 : 4096;
    e->a = realloc(e->a, e->ncap * sizeof(uint32_t));
    e->b = realloc(e->b, e->ncap * sizeof(uint32_t));
  }
  e->a[e->n] = a;
  e->b[e->n] = b;
  return e->n++;
}

static uint64_t ocSlot(const ocExprs *e, uint64_t key) {
  uint64_t h = (key * 0x9E3779B97F4A7C15ull) & (e->cap - 1);
  while (e->keys[h] && e->keys[h] != key) h = (h + 1) & (e->cap - 1);
  return h;
}

static void ocGrow(ocExprs *e) {
  uint64_t oc = e->cap;
  uint64_t *ok = e->keys;
  uint32_t *oi = e->ids;
  e->cap = oc ? oc * 2 : 4096;
  e->keys = calloc(e->cap, sizeof(uint64_t));
  e->ids = calloc(e->cap, sizeof(uint32_t));
  for (uint64_t i = 0; i < oc; i++) {
    if (!ok[i]) continue;
    uint64_t h = ocSlot(e, ok[i]);
    e->keys[h] = ok[i];
    e->ids[h] = oi[i];
  }
  free(ok);
  free(oi);
}

/* The hash-consed node for a (+) b (operands in this order). */
static uint32_t ocOp(ocExprs *e, uint32_t a, uint32_t b) {
  if (2 * (e->used + 1) > e->cap) ocGrow(e);
  uint64_t key = ((uint64_t)a << 32 | b) + 1, h = ocSlot(e, key);
  if (!e->keys[h]) {
    e->keys[h] = key;
    e->ids[h] = ocNew(e, a, b);
    e->used++;
  }
  return e->ids[h];
}

static void ocExprsFree(ocExprs *e) {
  free(e->keys);
  free(e->ids);
  free(e->a);
  free(e->b);
}

/* ---------------------------------------------------------------------------------------------
 * Symbolic execution of all ranks' schedules.
 */
typedef struct {
  tdSched s;
  uint32_t *mem[TD_NUM_BUFS];
  uint32_t next[TD_MAX_STREAMS];
  uint8_t *state[TD_MAX_STREAMS];  /* OC_* below */
  uint32_t *match[TD_MAX_STREAMS]; /* for a sending step: its receive's index at the peer */
} ocRank;

typedef struct {
  int p, inplace;
  uint64_t n;
  ocRank *r;
  ocExprs ex;
  char why[TD_ERRLEN];
} ocRun;

/* Read/write conflict between two steps of one rank (the step table's spans and rule). */
static int ocConflict(const ocRun *o, const ocRank *x, const tdStep *a, const tdStep *b) {
  tdSpans sa, sb;
  if (schedStepSpans(&x->s, a, o->n, &sa) != tpudistSuccess ||
      schedStepSpans(&x->s, b, o->n, &sb) != tpudistSuccess)
    return 0;
  return schedSpansConflict(&sa, &sb);
}

/* Where ref of rank x lies (in-place aliasing applied) and its length; NULL, 0 if unbound. */
static uint32_t *ocAt(const ocRun *o, const ocRank *x, tdBufRef ref, uint64_t *len) {
  tdSpan sp;
  *len = 0;
  if (schedRefSpan(&x->s, ref, o->n, &sp) != tpudistSuccess) return NULL;
  *len = sp.e - sp.b;
  return x->mem[sp.space] + sp.b;
}

static int ocFail(ocRun *o, const char *msg, int r, uint32_t s, uint32_t i) {
  snprintf(o->why, sizeof(o->why), "%.180s (rank %d stream %u step %u)", msg, r, s, i);
  return 1;
}

/* Step st's effect (tdStepSemTable): dst <- a, or dst <- a (+) b; W is the WIRE operand (what the
 * sender puts on the wire, wlen elements). Local steps run when issued. */
static void ocApply(ocRun *o, ocRank *x, const tdStep *st, const uint32_t *W, uint64_t wlen) {
  const tdStepSem *m = &tdStepSemTable[st->op];
  const uint8_t opnd[2] = {m->a, m->b};
  int k = m->effect == TD_EFFECT_REDUCE ? 2 : 1;
  const uint32_t *X[2] = {NULL, NULL};
  uint64_t n[2] = {0, 0}, dn;
  uint32_t *D = ocAt(o, x, st->dst, &dn);
  for (int i = 0; i < k; i++)
    if (opnd[i] == TD_OPND_WIRE)
      X[i] = W, n[i] = wlen;
    else
      X[i] = ocAt(o, x, schedOpndRef(st, opnd[i]), &n[i]);
  for (uint64_t e = 0; e < dn && e < n[0] && (k == 1 || e < n[1]); e++)
    D[e] = k == 2 ? ocOp(&o->ex, X[0][e], X[1][e]) : X[0][e];
}

/* Index of the step of stream T that receives message ord from rank `from` (its ordinal by
 * schedOrdNext), or T->nsteps; cnt: 2 p zeroed counters, zeroed again on return. */
static uint32_t ocRecvIndex(const ocRun *o, const tdStream *T, int from, uint32_t ord,
                            uint32_t *cnt) {
  tdOrdCount c = {cnt, cnt + o->p, o->p};
  uint32_t j = 0, so, ro;
  for (; j < T->nsteps; j++) {
    schedOrdNext(&c, &T->steps[j], &so, &ro);
    if (ro == ord && schedRecvPeer(&T->steps[j]) == from) break;
  }
  memset(cnt, 0, sizeof(uint32_t) * 2 * (size_t)o->p);
  return j;
}

/* Pairs every send with the receive of the same key; 1 on a missing or unequal match. */
static int ocMatch(ocRun *o) {
  uint32_t *cnt = calloc((size_t)o->p * 4, sizeof(uint32_t)), *rcnt = cnt + 2 * o->p;
  for (int r = 0; r < o->p; r++) {
    ocRank *x = &o->r[r];
    for (uint32_t s = 0; s < x->s.nstreams; s++) {
      tdStream *S = &x->s.streams[s];
      tdOrdCount c = {cnt, cnt + o->p, o->p};
      memset(cnt, 0, sizeof(uint32_t) * 2 * (size_t)o->p);
      for (uint32_t i = 0; i < S->nsteps; i++) {
        const tdStep *st = &S->steps[i];
        int to = schedSendPeer(st);
        if (to < 0) continue;
        if (to >= o->p || to == r) {
          free(cnt);
          return ocFail(o, "send to a bad peer", r, s, i);
        }
        uint32_t want, ro;
        schedOrdNext(&c, st, &want, &ro);
        ocRank *y = &o->r[to];
        tdStream *T = s < y->s.nstreams ? &y->s.streams[s] : NULL;
        uint32_t j = T ? ocRecvIndex(o, T, r, want, rcnt) : 0;
        uint64_t sn = 0, dn = 0;
        if (T && j < T->nsteps) {
          ocAt(o, x, schedWireRef(st), &sn);
          ocAt(o, y, T->steps[j].dst, &dn);
        }
        if (!T || j == T->nsteps || sn != dn) {
          free(cnt);
          return ocFail(o, "send without an equal receive", r, s, i);
        }
        x->match[s][i] = j;
      }
    }
  }
  free(cnt);
  return 0;
}

/* Transfers one matched message (both ends ready). */
static void ocDeliver(ocRun *o, ocRank *x, const tdStep *st, ocRank *y, const tdStep *rs) {
  uint64_t n;
  const uint32_t *W = ocAt(o, x, schedWireRef(st), &n);
  ocApply(o, y, rs, W, n);
}

static int ocBusy(uint8_t state) {
  return state == OC_FLIGHT || state == OC_FORWARD;
}

/* Issues what each stream of rank r can issue; returns steps issued, or -1 on a race. */
static int ocIssue(ocRun *o, int r) {
  ocRank *x = &o->r[r];
  int issued = 0;
  for (uint32_t s = 0; s < x->s.nstreams; s++) {
    tdStream *S = &x->s.streams[s];
    for (; x->next[s] < S->nsteps; x->next[s]++, issued++) {
      uint32_t i = x->next[s];
      const tdStep *st = &S->steps[i];
      int ok = 1;
      for (int d = 0; d < 2 && ok; d++)
        if (st->deps[d].stream != TD_NO_DEP &&
            x->state[st->deps[d].stream][st->deps[d].step] != OC_DONE)
          ok = 0;
      for (uint32_t j = 0; j < i && ok; j++)
        if (ocBusy(x->state[s][j]) && ocConflict(o, x, &S->steps[j], st)) ok = 0;
      if (!ok) break;
      for (uint32_t s2 = 0; s2 < x->s.nstreams; s2++)
        for (uint32_t j = 0; s2 != s && j < x->s.streams[s2].nsteps; j++)
          if (ocBusy(x->state[s2][j]) && ocConflict(o, x, &x->s.streams[s2].steps[j], st))
            return -1 - ocFail(o, "cross-stream race", r, s, i);
      x->state[s][i] = OC_FLIGHT;
      if (!(tdStepSemTable[st->op].flags & (TD_SEM_WIRE_IN | TD_SEM_WIRE_OUT))) {
        ocApply(o, x, st, NULL, 0);
        x->state[s][i] = OC_DONE;
      }
    }
  }
  return issued;
}

/* Completes every message whose both ends are in flight; returns how many. */
static int ocComplete(ocRun *o) {
  int done = 0;
  for (int r = 0; r < o->p; r++) {
    ocRank *x = &o->r[r];
    for (uint32_t s = 0; s < x->s.nstreams; s++)
      for (uint32_t i = 0; i < x->s.streams[s].nsteps; i++) {
        const tdStep *st = &x->s.streams[s].steps[i];
        int to = schedSendPeer(st);
        int fused = schedFused(st->op);
        if (to < 0 || x->state[s][i] != (fused ? OC_FORWARD : OC_FLIGHT)) continue;
        ocRank *y = &o->r[to];
        uint32_t j = x->match[s][i];
        const tdStep *rs = &y->s.streams[s].steps[j];
        if (y->state[s][j] != OC_FLIGHT) continue;
        ocDeliver(o, x, st, y, rs);
        x->state[s][i] = OC_DONE;
        y->state[s][j] = schedSendPeer(rs) >= 0 ? OC_FORWARD : OC_DONE;
        done++;
      }
  }
  return done;
}

static int ocSetup(ocRun *o, tdGenFn gen, int fuse) {
  char err[TD_ERRLEN];
  for (int r = 0; r < o->p; r++) {
    ocRank *x = &o->r[r];
    tdCollArgs a = {.coll = TD_COLL_ALLREDUCE, .nranks = o->p, .rank = r, .inplace = o->inplace};
    a.count = o->n;
    schedInit(&x->s, &a, "test");
    if (algoRun(algoOfGen(gen), &a, &x->s, err) != tpudistSuccess) return ocFail(o, err, r, 0, 0);
    if (fuse) schedFuse(&x->s);
    for (int b = 0; b < TD_NUM_BUFS; b++) {
      uint64_t len = schedBufElems(&x->s, (tdBufKind)b, o->n);
      x->mem[b] = malloc((len + 1) * sizeof(uint32_t));
      for (uint64_t e = 0; e < len; e++) x->mem[b][e] = OC_UNSET;
    }
    tdBufKind in;
    uint32_t blk;
    schedAlias(&x->s, TD_BUF_INPUT, &in, &blk);
    for (uint64_t e = 0; e < o->n; e++)
      x->mem[in][blk * o->n + e] = ocNew(&o->ex, OC_LEAF, (uint32_t)(r * o->n + e));
    for (uint32_t s = 0; s < x->s.nstreams; s++) {
      x->state[s] = calloc(x->s.streams[s].nsteps + 1, 1);
      x->match[s] = calloc(x->s.streams[s].nsteps + 1, sizeof(uint32_t));
    }
  }
  return 0;
}

/* Every leaf of element e's tree, each rank once. */
static int ocLeaves(ocRun *o, uint32_t v, uint64_t e, uint8_t *seen) {
  if (v == OC_UNSET) return 0;
  if (o->ex.a[v] != OC_LEAF)
    return ocLeaves(o, o->ex.a[v], e, seen) && ocLeaves(o, o->ex.b[v], e, seen);
  uint32_t rank = (uint32_t)(o->ex.b[v] / o->n);
  if (o->ex.b[v] % o->n != e || seen[rank]) return 0;
  seen[rank] = 1;
  return 1;
}

static int ocCheckResult(ocRun *o) {
  uint8_t *seen = malloc((size_t)o->p);
  int bad = 0;
  for (uint64_t e = 0; e < o->n && !bad; e++) {
    uint32_t v = o->r[0].mem[TD_BUF_OUTPUT][e];
    for (int r = 1; r < o->p && !bad; r++)
      if (o->r[r].mem[TD_BUF_OUTPUT][e] != v) bad = ocFail(o, "ranks differ", r, 0, (uint32_t)e);
    memset(seen, 0, (size_t)o->p);
    if (!bad && !ocLeaves(o, v, e, seen)) bad = ocFail(o, "wrong contributions", 0, 0, (uint32_t)e);
    for (int r = 0; r < o->p && !bad; r++)
      if (!seen[r]) bad = ocFail(o, "missing contribution", r, 0, (uint32_t)e);
    for (int r = 0; r < o->p && !bad && !o->inplace; r++) {
      uint32_t in = o->r[r].mem[TD_BUF_INPUT][e];
      if (o->ex.a[in] != OC_LEAF || o->ex.b[in] != r * o->n + e)
        bad = ocFail(o, "input changed", r, 0, (uint32_t)e);
    }
  }
  free(seen);
  return bad;
}

static void ocFree(ocRun *o) {
  for (int r = 0; r < o->p; r++) {
    for (int b = 0; b < TD_NUM_BUFS; b++) free(o->r[r].mem[b]);
    for (int s = 0; s < TD_MAX_STREAMS; s++) {
      free(o->r[r].state[s]);
      free(o->r[r].match[s]);
    }
    schedFree(&o->r[r].s);
  }
  free(o->r);
  ocExprsFree(&o->ex);
}

/* 0 when every rank ends with the same, complete expression for every element. */
static int ocCheck(tdGenFn gen, int p, uint64_t n, int inplace, int fuse, char *why) {
  ocRun o;
  memset(&o, 0, sizeof(o));
  o.p = p, o.n = n, o.inplace = inplace;
  o.r = calloc((size_t)p, sizeof(ocRank));
  int bad = ocSetup(&o, gen, fuse) || ocMatch(&o);
  for (int progress = 1; !bad && progress;) {
    progress = 0;
    for (int r = 0; r < p && !bad; r++) {
      int k = ocIssue(&o, r);
      if (k < 0) bad = 1;
      progress += k > 0;
    }
    progress += !bad && ocComplete(&o) > 0;
  }
  for (int r = 0; r < p && !bad; r++)
    for (uint32_t s = 0; s < o.r[r].s.nstreams && !bad; s++)
      for (uint32_t i = 0; i < o.r[r].s.streams[s].nsteps && !bad; i++)
        if (o.r[r].state[s][i] != OC_DONE) bad = ocFail(&o, "deadlock", r, s, i);
  if (!bad) bad = ocCheckResult(&o);
  snprintf(why, TD_ERRLEN, "%s", o.why);
  ocFree(&o);
  return bad;
}

/* ---------------------------------------------------------------------------------------------
 * Tests.
 */
static void checkShapes(int g) {
  char err[TD_ERRLEN], why[TD_ERRLEN];
  int checked = 0;
  for (int pi = 0; pi < NUM_RANKS; pi++) {
    int p = kRanks[pi];
    uint64_t counts[5];
    countsFor(p, counts);
    for (int ci = 0; ci < 5; ci++)
      for (int inplace = 0; inplace < 2; inplace++) {
        tdCollArgs a = {.coll = TD_COLL_ALLREDUCE, .nranks = p, .inplace = inplace};
        a.count = counts[ci];
        for (int fuse = 0; fuse < 2; fuse++) {
          tpudistResult_t res = validateAlgo(&a, kGens[g].name, fuse, err);
          if (res != tpudistSuccess)
            fprintf(stderr, "%s p %d count %lu inplace %d fuse %d: %s\n", kGens[g].name, p,
                    (unsigned long)a.count, inplace, fuse, err);
          CU_ASSERT_EQUAL(res, tpudistSuccess);
          int bad = ocCheck(kGens[g].gen, p, a.count, inplace, fuse, why);
          if (bad)
            fprintf(stderr, "%s p %d count %lu inplace %d fuse %d: order check: %s\n",
                    kGens[g].name, p, (unsigned long)a.count, inplace, fuse, why);
          CU_ASSERT_FALSE(bad);
        }
        checked++;
      }
  }
  CU_ASSERT_EQUAL(checked, NUM_RANKS * 10);
}

/* tests/run --full (TD_FULL=1): larger rank counts, validator only. */
static void checkLarge(int g) {
  static const int big[] = {127, 128, 129, 257};
  const char *full = getenv("TD_FULL");
  char err[TD_ERRLEN];
  if (!full || strcmp(full, "1") != 0) return;
  for (int pi = 0; pi < 4; pi++)
    for (int inplace = 0; inplace < 2; inplace++) {
      tdCollArgs a = {.coll = TD_COLL_ALLREDUCE, .nranks = big[pi], .inplace = inplace};
      a.count = (uint64_t)big[pi] + 3;
      tpudistResult_t res = validateAlgo(&a, kGens[g].name, 1, err);
      if (res != tpudistSuccess)
        fprintf(stderr, "%s p %d inplace %d fused: %s\n", kGens[g].name, big[pi], inplace, err);
      CU_ASSERT_EQUAL(res, tpudistSuccess);
    }
}

static void testRing(void) {
  checkShapes(0);
  checkLarge(0);
}
static void testRing2(void) {
  checkShapes(1);
  checkLarge(1);
}
static void testTree(void) {
  checkShapes(2);
  checkLarge(2);
}
static void testRecdbl(void) {
  checkShapes(3);
  checkLarge(3);
}
static void testRabenseifner(void) {
  checkShapes(4);
  checkLarge(4);
}
static void testDirect(void) {
  checkShapes(5);
  checkLarge(5);
}

/* The schedule is the same whatever the count: chunks bind at execution time. */
static void testCountIndependent(void) {
  char err[TD_ERRLEN];
  for (int g = 0; g < 6; g++)
    for (int p = 1; p <= 12; p++)
      for (int r = 0; r < p; r++) {
        tdCollArgs a = {.coll = TD_COLL_ALLREDUCE, .nranks = p, .rank = r, .inplace = r % 2};
        tdSched s0, s1;
        a.count = 0;
        schedInit(&s0, &a, kGens[g].name);
        CU_ASSERT_EQUAL_FATAL(algoRun(algoOfGen(kGens[g].gen), &a, &s0, err), tpudistSuccess);
        a.count = 123457;
        schedInit(&s1, &a, kGens[g].name);
        CU_ASSERT_EQUAL_FATAL(algoRun(algoOfGen(kGens[g].gen), &a, &s1, err), tpudistSuccess);
        CU_ASSERT_TRUE(schedSameSteps(&s0, &s1, 1));
        schedFree(&s0);
        schedFree(&s1);
      }
}

/* Ring and ring2: 2(p-1) sends and receives per ring, and every send after the first forwards the
 * chunk received by the step just before it, so that schedFuse fuses all 2p-3 of them. */
static void testRingShape(void) {
  char err[TD_ERRLEN];
  for (int g = 0; g < 2; g++)
    for (int p = 2; p <= 17; p++)
      for (int r = 0; r < p; r++) {
        tdCollArgs a = {.coll = TD_COLL_ALLREDUCE, .nranks = p, .rank = r};
        tdSched s;
        schedInit(&s, &a, kGens[g].name);
        CU_ASSERT_EQUAL_FATAL(algoRun(algoOfGen(kGens[g].gen), &a, &s, err), tpudistSuccess);
        CU_ASSERT_EQUAL(s.nstreams, (uint32_t)g + 1);
        for (uint32_t k = 0; k < s.nstreams; k++) {
          const tdStream *st = &s.streams[k];
          int sends = 0, recvs = 0, fusable = 0;
          for (uint32_t i = 0; i < st->nsteps; i++) {
            const tdStep *x = &st->steps[i];
            sends += x->op == TD_STEP_SEND;
            recvs += schedRecvPeer(x) >= 0;
            if (i > 0 && x->op == TD_STEP_SEND && schedRecvPeer(&x[-1]) >= 0 &&
                schedSameRef(x[-1].dst, x->src))
              fusable++;
          }
          CU_ASSERT_EQUAL(sends, 2 * (p - 1));
          CU_ASSERT_EQUAL(recvs, 2 * (p - 1));
          CU_ASSERT_EQUAL(fusable, 2 * (p - 1) - 1);
        }
        schedFuse(&s); /* the pass fuses every forwarded receive */
        for (uint32_t k = 0; k < s.nstreams; k++) {
          int fused = 0;
          for (uint32_t i = 0; i < s.streams[k].nsteps; i++)
            fused += s.streams[k].steps[i].op == TD_STEP_RECV_REDUCE_SEND ||
                     s.streams[k].steps[i].op == TD_STEP_RECV_COPY_SEND;
          CU_ASSERT_EQUAL(fused, 2 * (p - 1) - 1);
          CU_ASSERT_EQUAL(s.streams[k].nsteps, 2 * (uint32_t)p - 1);
        }
        schedFree(&s);
      }
}

/* Double binary tree: receiving from children in tree t happens on streams 3t and 3t+1. No rank
 * is an inner node of both trees when p is even, at most one when p is odd (as NCCL's). */
static void testTreeComplementary(void) {
  char err[TD_ERRLEN];
  for (int p = 2; p <= 64; p++) {
    int both = 0;
    for (int r = 0; r < p; r++) {
      tdCollArgs a = {.coll = TD_COLL_ALLREDUCE, .nranks = p, .rank = r};
      tdSched s;
      schedInit(&s, &a, "tree");
      CU_ASSERT_EQUAL_FATAL(genAllreduceTree(&a, &s, err), tpudistSuccess);
      int inner[2] = {0, 0};
      for (uint32_t k = 0; k < s.nstreams; k++)
        for (uint32_t i = 0; k % 3 != 2 && i < s.streams[k].nsteps; i++)
          if (schedRecvPeer(&s.streams[k].steps[i]) >= 0) inner[k / 3] = 1;
      both += inner[0] && inner[1];
      schedFree(&s);
    }
    CU_ASSERT_EQUAL(both, p % 2);
  }
}

static void testBadArgs(void) {
  char err[TD_ERRLEN];
  for (int g = 0; g < 6; g++) {
    tdCollArgs bad[3] = {{.coll = TD_COLL_ALLREDUCE, .nranks = 4, .rank = 4},
                         {.coll = TD_COLL_ALLREDUCE, .nranks = 0, .rank = 0},
                         {.coll = TD_COLL_BROADCAST, .nranks = 4, .rank = 1}};
    for (int k = 0; k < 3; k++) {
      tdSched s;
      schedInit(&s, &bad[k], kGens[g].name);
      err[0] = 0;
      CU_ASSERT_EQUAL(algoRun(algoOfGen(kGens[g].gen), &bad[k], &s, err), tpudistInvalidArgument);
      CU_ASSERT_NOT_EQUAL(err[0], 0);
      schedFree(&s);
    }
  }
}

int main(void) {
  CU_TestInfo tests[] = {{"ring", testRing},
                         {"ring2", testRing2},
                         {"tree", testTree},
                         {"recdbl", testRecdbl},
                         {"rabenseifner", testRabenseifner},
                         {"direct", testDirect},
                         {"count independent", testCountIndependent},
                         {"ring shape", testRingShape},
                         {"tree complementary", testTreeComplementary},
                         {"bad arguments", testBadArgs},
                         CU_TEST_INFO_NULL};
  return tdCUnitMain("unit-gen-allreduce", tests);
}
