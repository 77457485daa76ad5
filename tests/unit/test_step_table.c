/*
 * test_step_table.c - the step-semantics table (collectives/ir/step_sem.h).
 *
 *  - every row against the semantics written out here (docs/schedule-ir.md), and the row's flags
 *    against its columns; peers, wire ref and spans of one concrete step per op;
 *  - the conflict rule (kinds, empty spans, spaces), in-place aliasing for every collective, the
 *    chunk -> element binding on hand layouts (numbers worked out by hand), match-key ordinals;
 *  - every engine agrees with the table: for every algorithm of the algorithm table on flat 2, 3,
 *    4, 8 and torus 2x2, 4x4, 2x2x2 (two counts, in place where the collective has the form,
 *    fused and unfused), the table's ordinals pair every send with one receive of equal size
 *    (spans); the validator, the cost model and the simulator count the same messages and bytes;
 *    the generator test model (gen_sim.c, unfused) runs the set to the right result.
 */
#include <stdlib.h>
#include <string.h>

#include "../cu_main.h"
#include "algos.h"
#include "cost.h"
#include "gen_sim.h"
#include "sim.h"
#include "step_sem.h"
#include "validate.h"

enum { S = TD_OPND_SRC, D = TD_OPND_DST, W = TD_OPND_WIRE };
enum { P1 = TD_PEER_PEER, P2 = TD_PEER_PEER2 };
enum { CP = TD_EFFECT_COPY, RD = TD_EFFECT_REDUCE };
#define RS TD_SEM_READ_SRC
#define RDS TD_SEM_READ_DST
#define WD TD_SEM_WRITE_DST
#define WI TD_SEM_WIRE_IN
#define WO TD_SEM_WIRE_OUT
#define RED TD_SEM_REDUCES

/* The semantics, written out: for a step with peer 3, peer2 5, its send and receive peers; the
 * spans it has (src index, dst index, whether dst is written). */
typedef struct {
  int op;
  const char *name;
  unsigned flags;
  int wire, send_to, recv_from, effect, a, b;
  int send_peer, recv_peer;
  int n, src, dst, dst_write;
} rowCase;

static const rowCase kRows[TD_NUM_STEP_OPS] = {
    {TD_STEP_SEND, "send", RS | WO, S, P1, 0, 0, 0, 0, 3, -1, 1, 0, -1, 0},
    {TD_STEP_RECV, "recv", WD | WI, 0, 0, P1, CP, W, 0, -1, 3, 1, -1, 0, 1},
    {TD_STEP_RECV_REDUCE, "recv_reduce", RS | WD | WI | RED, 0, 0, P1, RD, S, W, -1, 3, 2, 0, 1, 1},
    {TD_STEP_COPY, "copy", RS | WD, 0, 0, 0, CP, S, 0, -1, -1, 2, 0, 1, 1},
    {TD_STEP_REDUCE, "reduce", RS | RDS | WD | RED, 0, 0, 0, RD, D, S, -1, -1, 2, 0, 1, 1},
    {TD_STEP_RECV_REDUCE_SEND, "recv_reduce_send", RS | WD | WI | WO | RED, D, P2, P1, RD, S, W, 5,
     3, 2, 0, 1, 1},
    {TD_STEP_RECV_COPY_SEND, "recv_copy_send", WD | WI | WO, D, P2, P1, CP, W, 0, 5, 3, 1, -1, 0,
     1},
};

static int among(int o, const tdStepSem *m) {
  return m->a == o || (m->effect == TD_EFFECT_REDUCE && m->b == o);
}

static void testRows(void) {
  tdBufRef in = schedRef(TD_BUF_INPUT, 1, 2), out = schedRef(TD_BUF_OUTPUT, 4, 1);
  for (int i = 0; i < TD_NUM_STEP_OPS; i++) {
    const rowCase *k = &kRows[i];
    const tdStepSem *m = &tdStepSemTable[k->op];
    CU_ASSERT_STRING_EQUAL(m->name, k->name);
    CU_ASSERT_EQUAL(m->flags, k->flags);
    CU_ASSERT_EQUAL(m->wire, k->wire);
    CU_ASSERT_EQUAL(m->send_to, k->send_to);
    CU_ASSERT_EQUAL(m->recv_from, k->recv_from);
    CU_ASSERT_EQUAL(m->effect, k->effect);
    CU_ASSERT_EQUAL(m->a, k->a);
    if (m->effect == TD_EFFECT_REDUCE) CU_ASSERT_EQUAL(m->b, k->b);
    /* the flags say what the columns say */
    CU_ASSERT_EQUAL(!!(m->flags & WI), m->recv_from != 0);
    CU_ASSERT_EQUAL(!!(m->flags & WO), m->send_to != 0);
    CU_ASSERT_EQUAL(!!(m->flags & WO), m->wire != 0);
    CU_ASSERT_EQUAL(!!(m->flags & RED), m->effect == TD_EFFECT_REDUCE);
    CU_ASSERT_EQUAL(!!(m->flags & WD), m->effect != TD_EFFECT_NONE);
    CU_ASSERT_EQUAL(!!(m->flags & WI), among(W, m));
    CU_ASSERT_EQUAL(!!(m->flags & RDS), among(D, m));
    CU_ASSERT_EQUAL(!!(m->flags & RS), among(S, m) || m->wire == S);
    /* one concrete step */
    tdStep st = {(uint8_t)k->op, 3, 5, in, out, {{TD_NO_DEP, 0}, {TD_NO_DEP, 0}}};
    CU_ASSERT_EQUAL(schedSendPeer(&st), k->send_peer);
    CU_ASSERT_EQUAL(schedRecvPeer(&st), k->recv_peer);
    if (k->send_peer >= 0) CU_ASSERT(schedSameRef(schedWireRef(&st), k->wire == S ? in : out));
    CU_ASSERT_EQUAL(schedUsesSrc(k->op), k->src >= 0);
    CU_ASSERT_EQUAL(schedUsesDst(k->op), k->dst >= 0);
    tdSpan a = {10, 20, TD_BUF_INPUT, 1}, d = {30, 40, TD_BUF_OUTPUT, 0};
    tdSpans sp;
    schedSpansOf(&st, a, d, &sp);
    CU_ASSERT_EQUAL(sp.n, k->n);
    CU_ASSERT_EQUAL(sp.src, k->src);
    CU_ASSERT_EQUAL(sp.dst, k->dst);
    if (k->src >= 0) CU_ASSERT(sp.s[k->src].b == 10 && sp.s[k->src].e == 20 && !sp.s[k->src].write);
    if (k->dst >= 0) CU_ASSERT(sp.s[k->dst].b == 30 && sp.s[k->dst].write == k->dst_write);
    schedSpansAfterRecv(&sp);
    if (k->dst >= 0) CU_ASSERT(sp.n == 1 && sp.dst == 0 && sp.s[0].b == 30 && !sp.s[0].write);
    if (k->dst < 0) CU_ASSERT(sp.n == 1 && sp.s[0].b == 10);
  }
}

static tdSpans spans(tdSpan x, tdSpan y, int n) {
  tdSpans s = {{x, y}, (int8_t)n, 0, (int8_t)(n > 1 ? 1 : -1)};
  return s;
}

static void testConflict(void) {
  static const struct {
    tdSpan a0, a1, b0, b1;
    int kind, ia, ib;
  } k[] = {
      /* a: src [0,10) read, dst [20,30) written; b likewise at other places */
      {{0, 10, 0, 0}, {20, 30, 0, 1}, {40, 50, 0, 0}, {60, 70, 0, 1}, 0, 0, 0},
      {{0, 10, 0, 0}, {20, 30, 0, 1}, {5, 8, 0, 0}, {60, 70, 0, 1}, 0, 0, 0},   /* read/read */
      {{0, 10, 0, 0}, {20, 30, 0, 1}, {40, 50, 0, 0}, {29, 31, 0, 1}, 1, 1, 1}, /* write/write */
      {{0, 10, 0, 0}, {20, 30, 0, 1}, {40, 50, 0, 0}, {9, 11, 0, 1}, 2, 0, 1},  /* a reads b's */
      {{0, 10, 0, 0}, {20, 30, 0, 1}, {25, 26, 0, 0}, {60, 70, 0, 1}, 3, 1, 0}, /* b reads a's */
      {{0, 10, 0, 0}, {20, 30, 0, 1}, {25, 26, 0, 0}, {0, 30, 0, 1}, 1, 1, 1},  /* WW first */
      {{0, 10, 0, 0}, {20, 30, 0, 1}, {25, 26, 0, 0}, {0, 1, 0, 1}, 2, 0, 1},   /* RW before WR */
      {{0, 10, 0, 0}, {20, 30, 0, 1}, {40, 50, 0, 0}, {30, 40, 0, 1}, 0, 0, 0}, /* touching */
      {{0, 10, 0, 0}, {20, 30, 0, 1}, {40, 50, 0, 0}, {20, 30, 1, 1}, 0, 0, 0}, /* other space */
      {{0, 10, 0, 0}, {25, 25, 0, 1}, {40, 50, 0, 0}, {20, 30, 0, 1}, 0, 0, 0}, /* empty */
  };
  for (size_t i = 0; i < sizeof(k) / sizeof(k[0]); i++) {
    tdSpans a = spans(k[i].a0, k[i].a1, 2), b = spans(k[i].b0, k[i].b1, 2);
    int ia = -1, ib = -1;
    CU_ASSERT_EQUAL(schedSpansConflict(&a, &b), k[i].kind != 0);
    CU_ASSERT_EQUAL(schedSpansConflict(&b, &a), k[i].kind != 0);
    CU_ASSERT_EQUAL(schedSpansConflictKind(&a, &b, &ia, &ib), k[i].kind);
    if (k[i].kind) CU_ASSERT(ia == k[i].ia && ib == k[i].ib);
  }
}

/* A schedule of rank 2 of 4 for coll with the given INPUT / OUTPUT blocks (one chunk each). */
static void handSched(tdSched *s, tdColl coll, int inplace, uint32_t in_blocks,
                      uint32_t out_blocks) {
  tdCollArgs a = {.coll = coll, .nranks = 4, .rank = 2, .inplace = inplace, .count = 10};
  schedInit(s, &a, "hand");
  schedSetLayout(s, TD_BUF_INPUT, in_blocks, 1);
  schedSetLayout(s, TD_BUF_OUTPUT, out_blocks, 1);
  schedSetLayout(s, TD_BUF_SCRATCH, 1, 1);
}

static void testAlias(void) {
  static const struct {
    tdColl coll;
    int inplace;
    uint32_t in_blocks, out_blocks;
    int in_space, out_space; /* where INPUT / OUTPUT block 0 lives */
    uint64_t in_at, out_at;
  } k[] = {
      {TD_COLL_ALLREDUCE, 0, 1, 1, TD_BUF_INPUT, TD_BUF_OUTPUT, 0, 0},
      {TD_COLL_ALLREDUCE, 1, 1, 1, TD_BUF_OUTPUT, TD_BUF_OUTPUT, 0, 0},
      {TD_COLL_BROADCAST, 1, 1, 1, TD_BUF_OUTPUT, TD_BUF_OUTPUT, 0, 0},
      {TD_COLL_REDUCE, 1, 1, 1, TD_BUF_OUTPUT, TD_BUF_OUTPUT, 0, 0},
      {TD_COLL_SENDRECV, 1, 1, 1, TD_BUF_OUTPUT, TD_BUF_OUTPUT, 0, 0},
      {TD_COLL_ALLGATHER, 0, 1, 4, TD_BUF_INPUT, TD_BUF_OUTPUT, 0, 0},
      {TD_COLL_ALLGATHER, 1, 1, 4, TD_BUF_OUTPUT, TD_BUF_OUTPUT, 20, 0}, /* block rank 2 */
      {TD_COLL_REDUCESCATTER, 0, 4, 1, TD_BUF_INPUT, TD_BUF_OUTPUT, 0, 0},
      {TD_COLL_REDUCESCATTER, 1, 4, 1, TD_BUF_INPUT, TD_BUF_INPUT, 0, 20},
      {TD_COLL_ALLTOALL, 0, 4, 4, TD_BUF_INPUT, TD_BUF_OUTPUT, 0, 0},
  };
  for (size_t i = 0; i < sizeof(k) / sizeof(k[0]); i++) {
    tdSched s;
    handSched(&s, k[i].coll, k[i].inplace, k[i].in_blocks, k[i].out_blocks);
    tdSpan a, b, c;
    CU_ASSERT_FATAL(schedRefSpan(&s, schedRef(TD_BUF_INPUT, 0, 1), 10, &a) == tpudistSuccess);
    CU_ASSERT_FATAL(schedRefSpan(&s, schedRef(TD_BUF_OUTPUT, 0, 1), 10, &b) == tpudistSuccess);
    CU_ASSERT_FATAL(schedRefSpan(&s, schedRef(TD_BUF_SCRATCH, 0, 1), 10, &c) == tpudistSuccess);
    CU_ASSERT(a.space == k[i].in_space && a.b == k[i].in_at && a.e == k[i].in_at + 10);
    CU_ASSERT(b.space == k[i].out_space && b.b == k[i].out_at && b.e == k[i].out_at + 10);
    CU_ASSERT(c.space == TD_BUF_SCRATCH && c.b == 0 && c.e == 10);
    schedFree(&s);
  }
}

static void testChunks(void) {
  tdSched s;
  tdCollArgs a = {.coll = TD_COLL_ALLGATHER, .nranks = 2, .rank = 0, .count = 7};
  schedInit(&s, &a, "hand");
  schedSetLayout(&s, TD_BUF_OUTPUT, 2, 3); /* n = 7 split in 3: 3, 2, 2 */
  static const struct {
    uint32_t chunk, nchunks;
    uint64_t n, b, e;
  } k[] = {
      {0, 1, 7, 0, 3},   {1, 1, 7, 3, 5},  {2, 1, 7, 5, 7},  {3, 1, 7, 7, 10},
      {5, 1, 7, 12, 14}, {1, 4, 7, 3, 12}, {0, 6, 7, 0, 14}, {2, 1, 2, 2, 2},
      {2, 2, 2, 2, 3},   {0, 3, 0, 0, 0},  {4, 2, 1, 2, 2},  {3, 3, 1, 1, 2},
  };
  for (size_t i = 0; i < sizeof(k) / sizeof(k[0]); i++) {
    tdSpan sp;
    CU_ASSERT_FATAL(schedRefSpan(&s, schedRef(TD_BUF_OUTPUT, k[i].chunk, k[i].nchunks), k[i].n,
                                 &sp) == tpudistSuccess);
    if (sp.b != k[i].b || sp.e != k[i].e)
      fprintf(stderr, "chunk %u+%u n %llu: [%llu,%llu)\n", k[i].chunk, k[i].nchunks,
              (unsigned long long)k[i].n, (unsigned long long)sp.b, (unsigned long long)sp.e);
    CU_ASSERT(sp.b == k[i].b && sp.e == k[i].e);
  }
  tdSpan sp;
  CU_ASSERT(schedRefSpan(&s, schedRef(TD_BUF_OUTPUT, 5, 2), 7, &sp) != tpudistSuccess);
  CU_ASSERT(schedRefSpan(&s, schedRef(TD_BUF_OUTPUT, 0, 0), 7, &sp) != tpudistSuccess);
  CU_ASSERT(schedRefSpan(&s, schedRef(TD_BUF_INPUT, 0, 1), 7, &sp) != tpudistSuccess);
  /* explicit: block 0 at [10,14), block 1 at [0,6), two chunks each */
  static const uint64_t off[2] = {10, 0}, cnt[2] = {4, 6};
  CU_ASSERT_FATAL(schedSetLayoutExplicit(&s, TD_BUF_INPUT, 2, 2, off, cnt) == tpudistSuccess);
  CU_ASSERT(schedRefSpan(&s, schedRef(TD_BUF_INPUT, 1, 1), 99, &sp) == tpudistSuccess);
  CU_ASSERT(sp.b == 12 && sp.e == 14);
  CU_ASSERT(schedRefSpan(&s, schedRef(TD_BUF_INPUT, 2, 2), 99, &sp) == tpudistSuccess);
  CU_ASSERT(sp.b == 0 && sp.e == 6);
  CU_ASSERT(schedRefSpan(&s, schedRef(TD_BUF_INPUT, 1, 2), 99, &sp) != tpudistSuccess); /* gap */
  schedFree(&s);
}

static void testOrdinals(void) {
  tdBufRef r = schedRef(TD_BUF_INPUT, 0, 1);
  tdStep st[7] = {schedSend(1, r), schedSend(2, r), schedRecv(1, r), schedRecvReduce(2, r, r),
                  schedSend(1, r), schedCopy(r, r), schedRecv(1, r)};
  st[3].op = TD_STEP_RECV_REDUCE_SEND, st[3].peer2 = 1; /* receives from 2, forwards to 1 */
  static const uint32_t want_s[7] = {0, 0, TD_NO_ORD, 1, 2, TD_NO_ORD, TD_NO_ORD};
  static const uint32_t want_r[7] = {TD_NO_ORD, TD_NO_ORD, 0, 0, TD_NO_ORD, TD_NO_ORD, 1};
  uint32_t cnt[6] = {0};
  tdOrdCount c = {cnt, cnt + 3, 3};
  for (int i = 0; i < 7; i++) {
    uint32_t so, ro;
    schedOrdNext(&c, &st[i], &so, &ro);
    CU_ASSERT(so == want_s[i] && ro == want_r[i]);
  }
  CU_ASSERT(cnt[1] == 3 && cnt[2] == 1 && cnt[3 + 1] == 2 && cnt[3 + 2] == 1);
  schedOrdReset(&c, st, 7);
  for (int i = 0; i < 6; i++) CU_ASSERT_EQUAL(cnt[i], 0);
  tdStep bad = schedSend(7, r); /* outside [0, nranks): no ordinal, nothing counted */
  uint32_t so, ro;
  schedOrdNext(&c, &bad, &so, &ro);
  CU_ASSERT(so == TD_NO_ORD && ro == TD_NO_ORD);
}

/* ---- every engine agrees with the table ---- */

/* A message end: its match key (from, to, stream, ordinal) packed, and its size. */
typedef struct {
  uint64_t key, elems;
} msgEnd;

static msgEnd endOf(int from, int to, uint32_t stream, uint32_t ord, uint64_t elems) {
  msgEnd m = {(uint64_t)from << 48 | (uint64_t)to << 32 | (uint64_t)stream << 24 | ord, elems};
  return m;
}

static int endCmp(const void *x, const void *y) {
  uint64_t a = ((const msgEnd *)x)->key, b = ((const msgEnd *)y)->key;
  return a < b ? -1 : a > b;
}

/* The table's view of a schedule set: message ends by ordinal and size by span; every send must
 * meet exactly one receive of equal size. Returns the messages (or -1) and their elements. */
static int64_t tableMessages(tdSched *s, int n, uint64_t count, uint64_t *elems) {
  size_t cap = 0, ns = 0, nr = 0;
  for (int r = 0; r < n; r++)
    for (uint32_t q = 0; q < s[r].nstreams; q++) cap += s[r].streams[q].nsteps;
  msgEnd *snd = calloc(cap + 1, sizeof(msgEnd)), *rcv = calloc(cap + 1, sizeof(msgEnd));
  uint32_t *cnt = calloc((size_t)n * 2, sizeof(uint32_t));
  int64_t res = 0;
  *elems = 0;
  for (int r = 0; r < n && res >= 0; r++)
    for (uint32_t q = 0; q < s[r].nstreams && res >= 0; q++) {
      tdOrdCount c = {cnt, cnt + n, n};
      const tdStream *t = &s[r].streams[q];
      for (uint32_t i = 0; i < t->nsteps && res >= 0; i++) {
        const tdStep *st = &t->steps[i];
        uint32_t so, ro;
        tdSpans sp;
        tdSpan w;
        schedOrdNext(&c, st, &so, &ro);
        if (schedStepSpans(&s[r], st, count, &sp) != tpudistSuccess) res = -1;
        for (int k = 0; res >= 0 && k < sp.n; k++) { /* within the buffer it lives in */
          uint64_t size = schedBufElems(&s[r], (tdBufKind)sp.s[k].space, count);
          if (sp.s[k].e > size && sp.s[k].e > sp.s[k].b) res = -1;
        }
        if (res >= 0 && so != TD_NO_ORD) {
          if (schedRefSpan(&s[r], schedWireRef(st), count, &w) != tpudistSuccess) res = -1;
          snd[ns++] = endOf(r, schedSendPeer(st), q, so, w.e - w.b);
          *elems += w.e - w.b;
        }
        if (res >= 0 && ro != TD_NO_ORD)
          rcv[nr++] = endOf(schedRecvPeer(st), r, q, ro, sp.s[sp.dst].e - sp.s[sp.dst].b);
      }
      schedOrdReset(&c, t->steps, t->nsteps);
    }
  qsort(snd, ns, sizeof(msgEnd), endCmp);
  qsort(rcv, nr, sizeof(msgEnd), endCmp);
  if (ns != nr) res = -1;
  for (size_t i = 0; res >= 0 && i < ns; i++)
    if (endCmp(&snd[i], &rcv[i]) || snd[i].elems != rcv[i].elems) res = -1;
  if (res >= 0) res = (int64_t)ns;
  free(snd);
  free(rcv);
  free(cnt);
  return res;
}

typedef struct {
  const char *spec;
  int nranks;
} shapeCase;

static const shapeCase kShapes[] = {{"flat(2)", 2}, {"flat(3)", 3}, {"flat(4)", 4}, {"flat(8)", 8},
                                    {"2x2", 4},     {"4x4", 16},    {"2x2x2", 8}};

/* Generates every rank's schedule (packed all-to-all-v displacements); 0 when the algorithm
 * refuses the shape, -1 on another failure. */
static int generate(const tdCollArgs *args, const char *algo, int fuse, tdSched *s, uint64_t *d) {
  int n = args->nranks;
  for (int r = 0; r < n; r++) {
    tdCollArgs a = *args;
    a.rank = r;
    if (args->v_counts) {
      uint64_t ps = 0, pr = 0;
      for (int j = 0; j < n; j++) {
        d[j] = ps, ps += args->v_counts[(size_t)r * n + j];
        d[n + j] = pr, pr += args->v_counts[(size_t)j * n + r];
      }
      a.v_sdispls = d, a.v_rdispls = d + n;
    }
    char err[TD_ERRLEN] = "";
    tpudistResult_t res = algoGenerate(&a, algo, &s[r], err);
    if (res != tpudistSuccess) {
      for (int i = 0; i <= r; i++) schedFree(&s[i]);
      if (r == 0 && res == tpudistNotSupported) return 0;
      fprintf(stderr, "%s/%s rank %d: %s\n", schedCollName(args->coll), algo, r, err);
      return -1;
    }
    if (fuse) schedFuse(&s[r]);
  }
  return 1;
}

/* All engines on one shape / algorithm / count / form; returns 1 if it ran, 0 if refused. */
static int agreeOne(const tdTopo *t, const tdCollArgs *args, const char *algo, int fuse) {
  int n = args->nranks;
  tdSched *s = calloc((size_t)n, sizeof(tdSched));
  uint64_t *d = malloc(sizeof(uint64_t) * 2 * (size_t)n), elems = 0;
  int g = generate(args, algo, fuse, s, d);
  free(d);
  CU_ASSERT(g >= 0);
  if (g <= 0) {
    free(s);
    return 0;
  }
  char err[TD_ERRLEN] = "", what[160];
  snprintf(what, sizeof(what), "%s/%s n %d count %llu inplace %d fuse %d",
           schedCollName(args->coll), algo, n, (unsigned long long)args->count, args->inplace,
           fuse);
  int64_t m = tableMessages(s, n, args->count, &elems);
  if (m < 0) fprintf(stderr, "%s: the table's ordinals or spans do not pair\n", what);
  CU_ASSERT(m >= 0);
  /* the validator */
  tdSched **ps = malloc(sizeof(tdSched *) * (size_t)n);
  for (int r = 0; r < n; r++) ps[r] = &s[r];
  uint64_t vm = 0;
  tdValidateOpts o;
  memset(&o, 0, sizeof(o));
  o.v_counts = args->v_counts, o.out_messages = &vm;
  tpudistResult_t vr = validateSchedulesOpts(ps, n, args->count, &o, err);
  if (vr != tpudistSuccess || (int64_t)vm != m) fprintf(stderr, "%s: validator: %s\n", what, err);
  CU_ASSERT(vr == tpudistSuccess && (int64_t)vm == m);
  free(ps);
  /* the simulator (one count matrix for all ranks: not all-to-all-v) */
  if (args->coll != TD_COLL_ALLTOALLV) {
    simConfig cfg;
    simResult res;
    simConfigDefault(&cfg, simPresetFind("v5p"), t);
    cfg.fuse = fuse;
    tpudistResult_t sr = simRun(&cfg, args, algo, &res, err);
    if (sr != tpudistSuccess || (int64_t)res.messages != m || res.wire_bytes != (double)elems * 4)
      fprintf(stderr, "%s: sim %d: %llu messages %g bytes (table %lld, %llu): %s\n", what, sr,
              (unsigned long long)res.messages, res.wire_bytes, (long long)m,
              (unsigned long long)elems * 4, err);
    CU_ASSERT(sr == tpudistSuccess && (int64_t)res.messages == m &&
              res.wire_bytes == (double)elems * 4);
  }
  /* the generator test model (it runs unfused schedules) */
  char msg[TD_ERRLEN];
  if (!fuse) {
    int bad = simCheck(args, algo, msg);
    if (bad) fprintf(stderr, "%s: model: %s\n", what, msg);
    CU_ASSERT_FALSE(bad);
  }
  /* the cost model (takes the schedules) */
  tdCostPlan *p = NULL;
  tdCostModel cm;
  costModelDefault(t, &cm);
  double sec = 0, lb = 0;
  uint64_t cmsg = 0;
  tpudistResult_t cr = costPlanCreate(t, s, n, &p, err);
  if (cr == tpudistSuccess) cr = costPlanEval(p, &cm, args->count, 4, &sec, err);
  if (cr == tpudistSuccess) costPlanStats(p, &cmsg, &lb);
  if (cr != tpudistSuccess || (int64_t)cmsg != m || (t->ndims == 0 && lb != (double)elems * 4))
    fprintf(stderr, "%s: cost: %llu messages %g bytes: %s\n", what, (unsigned long long)cmsg, lb,
            err);
  CU_ASSERT(cr == tpudistSuccess && (int64_t)cmsg == m);
  if (t->ndims == 0) CU_ASSERT(lb == (double)elems * 4);
  costPlanFree(p);
  return 1;
}

static void testEnginesAgree(void) {
  int ran = 0, refused = 0;
  for (size_t si = 0; si < sizeof(kShapes) / sizeof(kShapes[0]); si++) {
    tdTopo t;
    char err[TD_ERRLEN];
    CU_ASSERT_FATAL(topoParse(kShapes[si].spec, kShapes[si].nranks, &t, err) == tpudistSuccess);
    int n = kShapes[si].nranks;
    uint64_t *vc = malloc(sizeof(uint64_t) * (size_t)n * n);
    for (int i = 0; i < n * n; i++) vc[i] = (uint64_t)((i * 7 + i / n) % 5); /* zeros too */
    for (const tdAlgo *al = tdAlgoTable; al->name; al++)
      for (int ci = 0; ci < 2; ci++)
        for (int inplace = 0; inplace < 2; inplace++)
          for (int fuse = 0; fuse < 2; fuse++) {
            tdCollArgs a = {.coll = al->coll, .nranks = n, .topo = &t, .elem_size = 4};
            a.count = ci ? 13 : 1;
            a.inplace = inplace;
            a.root = 1 % n;
            if (al->coll == TD_COLL_ALLTOALLV) {
              if (inplace) continue;
              a.v_counts = vc, a.count = 0;
            }
            if (agreeOne(&t, &a, al->name, fuse))
              ran++;
            else
              refused++;
          }
    free(vc);
  }
  fprintf(stderr, "engines agree on %d combinations (%d refused by their algorithm)\n", ran,
          refused);
  CU_ASSERT(ran >= 400);
}

int main(void) {
  static CU_TestInfo tests[] = {
      {"every row", testRows},
      {"conflict rule", testConflict},
      {"in-place aliasing", testAlias},
      {"chunk -> element spans", testChunks},
      {"match-key ordinals", testOrdinals},
      {"engines agree with the table", testEnginesAgree},
      CU_TEST_INFO_NULL,
  };
  return tdCUnitMain("step-table", tests);
}
