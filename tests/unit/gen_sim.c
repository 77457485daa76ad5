/*
 * gen_sim.c - concrete-execution model of a schedule set (see gen_sim.h).
 *
 * Element values are tags {mask of contributing ranks, number of contributions, element index
 * in the sender's INPUT}; a reduction of two tags with overlapping masks, different indices or an
 * unwritten operand is an error value, so a missing, doubled or misplaced contribution shows.
 */
#include "gen_sim.h"

#include <stdlib.h>
#include <string.h>

#include "step_sem.h"

typedef struct {
  uint64_t mask;
  uint32_t cnt; /* 0 = never written, UINT32_MAX = error */
  uint32_t elem;
} Val;

typedef struct {
  tdSched s;
  Val *mem;
  uint64_t base[TD_NUM_BUFS], size[TD_NUM_BUFS], region;
  uint8_t *state[TD_MAX_STREAMS]; /* per step: 0 waiting, 1 in flight, 2 done */
  uint32_t next[TD_MAX_STREAMS];
  uint32_t *ordcnt[TD_MAX_STREAMS]; /* 2 n match-ordinal counters per stream (tdOrdCount) */
  uint64_t *sdispls, *rdispls;
} Rank;

typedef struct {
  uint32_t *end[2]; /* step index of the send (0) and receive (1) end of each ordinal, or NONE */
  uint32_t cap[2];
} Chan;

#define NONE UINT32_MAX

typedef struct {
  const tdCollArgs *a;
  int n;
  uint64_t c;
  Rank *rk;
  Chan *ch; /* [from][to][stream] */
  char *msg;
} Sim;

#define FAIL(...) (snprintf(S->msg, TD_ERRLEN, __VA_ARGS__), -1)

static Val combine(Val x, Val y) {
  Val e = {0, UINT32_MAX, 0};
  if (x.cnt == 0 || y.cnt == 0 || x.cnt == UINT32_MAX || y.cnt == UINT32_MAX) return e;
  if (x.elem != y.elem || (x.mask & y.mask)) return e;
  Val v = {x.mask | y.mask, x.cnt + y.cnt, x.elem};
  return v;
}

/* Absolute element range of ref on rank R. */
static int refAbs(Sim *S, int R, tdBufRef ref, uint64_t *b, uint64_t *e) {
  Rank *k = &S->rk[R];
  if (schedRefRange(&k->s, ref, S->c, b, e) != tpudistSuccess)
    return FAIL("rank %d: bad ref %s %u+%u", R, schedBufName(ref.buf), ref.chunk, ref.nchunks);
  if (*e > k->size[ref.buf])
    return FAIL("rank %d: ref %s %u+%u ends at %llu beyond %llu", R, schedBufName(ref.buf),
                ref.chunk, ref.nchunks, (unsigned long long)*e,
                (unsigned long long)k->size[ref.buf]);
  *b += k->base[ref.buf];
  *e += k->base[ref.buf];
  return 0;
}

/* The spans of a step in the rank's one memory (schedSpansOf over absolute ranges). */
static int stepSpans(Sim *S, int R, const tdStep *st, tdSpans *sp) {
  tdSpan a = {0, 0, 0, 0}, d = {0, 0, 0, 0};
  if (schedUsesSrc(st->op) && refAbs(S, R, st->src, &a.b, &a.e)) return -1;
  if (schedUsesDst(st->op) && refAbs(S, R, st->dst, &d.b, &d.e)) return -1;
  schedSpansOf(st, a, d, sp);
  return 0;
}

/* Applies the effect of step st of rank R (tdStepSemTable): dst <- a, or dst <- a (+) b, where the
 * WIRE operand is wire[0, len) (a copy of what the sender put on the wire). */
static int apply(Sim *S, int R, const tdStep *st, const Val *wire, uint64_t len) {
  const tdStepSem *m = &tdStepSemTable[st->op];
  const uint8_t opnd[2] = {m->a, m->b};
  uint64_t db, de, xb[2] = {0, 0}, xe;
  if (refAbs(S, R, st->dst, &db, &de)) return -1;
  Val *mem = S->rk[R].mem, *tmp = malloc(sizeof(Val) * (de - db + 1));
  const Val *x[2] = {NULL, NULL};
  if (!tmp) return FAIL("no memory");
  for (int i = 0; i < (m->effect == TD_EFFECT_REDUCE ? 2 : 1); i++) {
    if (opnd[i] == TD_OPND_WIRE) {
      x[i] = wire, xe = len;
    } else if (refAbs(S, R, schedOpndRef(st, opnd[i]), &xb[i], &xe)) {
      free(tmp);
      return -1;
    } else {
      x[i] = mem + xb[i], xe -= xb[i];
    }
    if (xe != de - db) {
      free(tmp);
      return FAIL("rank %d: %s operand sizes differ", R, m->name);
    }
  }
  for (uint64_t i = 0; i < de - db; i++)
    tmp[i] = m->effect == TD_EFFECT_REDUCE ? combine(x[0][i], x[1][i]) : x[0][i];
  memcpy(mem + db, tmp, sizeof(Val) * (de - db));
  free(tmp);
  return 0;
}

static int transfer(Sim *S, int from, int to, uint32_t stream, uint32_t ss, uint32_t rs) {
  const tdStep *snd = &S->rk[from].s.streams[stream].steps[ss];
  const tdStep *rcv = &S->rk[to].s.streams[stream].steps[rs];
  uint64_t sb, se, db, de;
  if (refAbs(S, from, schedWireRef(snd), &sb, &se) || refAbs(S, to, rcv->dst, &db, &de)) return -1;
  if (se - sb != de - db)
    return FAIL("size mismatch %d->%d stream %u: send step %u has %llu, recv step %u %llu", from,
                to, stream, ss, (unsigned long long)(se - sb), rs, (unsigned long long)(de - db));
  uint64_t len = se - sb;
  Val *tmp = malloc(sizeof(Val) * (len ? len : 1));
  if (!tmp) return FAIL("no memory");
  memcpy(tmp, S->rk[from].mem + sb, sizeof(Val) * len);
  int rc = apply(S, to, rcv, tmp, len);
  free(tmp);
  S->rk[from].state[stream][ss] = 2;
  S->rk[to].state[stream][rs] = 2;
  return rc;
}

/* Records step j as end `side` of message ord; 1 once both ends are there. */
static int chanPut(Sim *S, Chan *c, int side, uint32_t ord, uint32_t j) {
  if (ord >= c->cap[side]) {
    uint32_t n = ord * 2 + 4, *p = realloc(c->end[side], sizeof(uint32_t) * n);
    if (!p) return FAIL("no memory");
    for (uint32_t i = c->cap[side]; i < n; i++) p[i] = NONE;
    c->end[side] = p, c->cap[side] = n;
  }
  c->end[side][ord] = j;
  return ord < c->cap[!side] && c->end[!side][ord] != NONE;
}

/* Posts one message end; the message moves once both ends are posted (match by schedOrdNext). */
static int post(Sim *S, int R, uint32_t stream, uint32_t j, const tdStep *st) {
  int send = schedSendPeer(st) >= 0, peer = send ? schedSendPeer(st) : schedRecvPeer(st);
  if (peer < 0 || peer >= S->n) return FAIL("rank %d: bad peer %d", R, peer);
  uint32_t so, ro, *cnt = S->rk[R].ordcnt[stream];
  tdOrdCount oc = {cnt, cnt + S->n, S->n};
  schedOrdNext(&oc, st, &so, &ro);
  int from = send ? R : peer, to = send ? peer : R;
  uint32_t ord = send ? so : ro;
  Chan *c = &S->ch[((size_t)from * S->n + to) * TD_MAX_STREAMS + stream];
  int both = chanPut(S, c, !send, ord, j);
  if (both < 0) return -1;
  return both ? transfer(S, from, to, stream, c->end[0][ord], c->end[1][ord]) : 0;
}

/* Issues what stream `stream` of rank R can issue; *progress set if anything was. */
static int issueStream(Sim *S, int R, uint32_t stream, int *progress) {
  Rank *k = &S->rk[R];
  tdStream *q = &k->s.streams[stream];
  while (k->next[stream] < q->nsteps) {
    uint32_t j = k->next[stream];
    const tdStep *st = &q->steps[j];
    for (int d = 0; d < 2; d++) {
      if (st->deps[d].stream == TD_NO_DEP) continue;
      if (st->deps[d].stream >= k->s.nstreams ||
          st->deps[d].step >= k->s.streams[st->deps[d].stream].nsteps)
        return FAIL("rank %d stream %u step %u: bad dep", R, stream, j);
      if (k->state[st->deps[d].stream][st->deps[d].step] != 2) return 0;
    }
    tdSpans me, other;
    if (stepSpans(S, R, st, &me)) return -1;
    for (uint32_t i = 0; i < j; i++) {
      if (k->state[stream][i] != 1) continue;
      if (stepSpans(S, R, &q->steps[i], &other)) return -1;
      if (schedSpansConflict(&me, &other)) return 0;
    }
    k->state[stream][j] = 1;
    k->next[stream]++;
    *progress = 1;
    if (!(tdStepSemTable[st->op].flags & (TD_SEM_WIRE_IN | TD_SEM_WIRE_OUT))) {
      if (apply(S, R, st, NULL, 0)) return -1;
      k->state[stream][j] = 2;
    } else if (!schedFused(st->op)) {
      if (post(S, R, stream, j, st)) return -1;
    } else {
      return FAIL("rank %d: op %s not modelled", R, tdStepSemTable[st->op].name);
    }
  }
  return 0;
}

static int runAll(Sim *S) {
  for (int progress = 1; progress;) {
    progress = 0;
    for (int R = 0; R < S->n; R++)
      for (uint32_t q = 0; q < S->rk[R].s.nstreams; q++)
        if (issueStream(S, R, q, &progress)) return -1;
  }
  for (int R = 0; R < S->n; R++)
    for (uint32_t q = 0; q < S->rk[R].s.nstreams; q++)
      for (uint32_t j = 0; j < S->rk[R].s.streams[q].nsteps; j++)
        if (S->rk[R].state[q][j] != 2)
          return FAIL("deadlock: rank %d stream %u step %u (%s peer %d) never completes", R, q, j,
                      tdStepSemTable[S->rk[R].s.streams[q].steps[j].op].name,
                      S->rk[R].s.streams[q].steps[j].peer);
  return 0;
}

/* Per-rank all-to-all-v displacements: INPUT blocks in order with a one-element gap after each,
 * OUTPUT blocks in reverse order, packed. */
static int vDispls(Sim *S, int R) {
  int n = S->n;
  const uint64_t *m = S->a->v_counts;
  Rank *k = &S->rk[R];
  k->sdispls = calloc((size_t)n, sizeof(uint64_t));
  k->rdispls = calloc((size_t)n, sizeof(uint64_t));
  if (!k->sdispls || !k->rdispls) return FAIL("no memory");
  uint64_t o = 0;
  for (int j = 0; j < n; j++) k->sdispls[j] = o, o += m[(size_t)R * n + j] + 1;
  k->size[TD_BUF_INPUT] = o;
  o = 0;
  for (int j = n - 1; j >= 0; j--) k->rdispls[j] = o, o += m[(size_t)j * n + R];
  k->size[TD_BUF_OUTPUT] = o;
  return 0;
}

/* User buffer sizes and the in-place aliasing of rank R. */
static void bufPlace(Sim *S, int R) {
  Rank *k = &S->rk[R];
  uint64_t c = S->c, n = (uint64_t)S->n, *sz = k->size, *b = k->base;
  switch (S->a->coll) {
    case TD_COLL_ALLGATHER:
      sz[0] = c, sz[1] = n * c;
      break;
    case TD_COLL_REDUCESCATTER:
      sz[0] = n * c, sz[1] = c;
      break;
    case TD_COLL_ALLTOALL:
      sz[0] = sz[1] = n * c;
      break;
    case TD_COLL_ALLTOALLV:
      break; /* vDispls */
    default:
      sz[0] = sz[1] = c;
      break;
  }
  tdBufKind space[2];
  uint32_t block[2];
  k->region = 0;
  for (int i = 0; i < 2; i++) { /* buffers of their own first, then the aliased ones (schedAlias) */
    schedAlias(&k->s, (tdBufKind)i, &space[i], &block[i]);
    if ((int)space[i] == i) b[i] = k->region, k->region += sz[i];
  }
  for (int i = 0; i < 2; i++)
    if ((int)space[i] != i) b[i] = b[space[i]] + (uint64_t)block[i] * c;
  sz[TD_BUF_SCRATCH] = schedBufElems(&k->s, TD_BUF_SCRATCH, c);
  b[TD_BUF_SCRATCH] = k->region;
}

static Val inputVal(int R, uint64_t i) {
  Val v = {1ull << R, 1, (uint32_t)i};
  return v;
}

/* What OUTPUT element i of rank R must hold; returns 0 when it is not specified. */
static int expected(Sim *S, int R, uint64_t i, Val *v) {
  uint64_t c = S->c, full = S->n == 64 ? ~0ull : (1ull << S->n) - 1;
  int root = S->a->root, n = S->n;
  switch (S->a->coll) {
    case TD_COLL_ALLGATHER:
      *v = inputVal((int)(i / c), i % c);
      return 1;
    case TD_COLL_REDUCESCATTER:
      v->mask = full, v->cnt = (uint32_t)n, v->elem = (uint32_t)(R * c + i);
      return 1;
    case TD_COLL_BROADCAST:
      *v = inputVal(root, i);
      return 1;
    case TD_COLL_REDUCE:
      if (R != root) return 0;
      v->mask = full, v->cnt = (uint32_t)n, v->elem = (uint32_t)i;
      return 1;
    case TD_COLL_ALLTOALL:
      *v = inputVal((int)(i / c), (uint64_t)R * c + i % c);
      return 1;
    case TD_COLL_SENDRECV:
      *v = inputVal((((R - root) % n) + n) % n, i);
      return 1;
    case TD_COLL_ALLTOALLV:
      for (int j = 0; j < n; j++) {
        uint64_t o = S->rk[R].rdispls[j], len = S->a->v_counts[(size_t)j * n + R];
        if (i >= o && i < o + len) {
          *v = inputVal(j, S->rk[j].sdispls[R] + (i - o));
          return 1;
        }
      }
      return 0;
    default:
      return 0;
  }
}

static int same(Val x, Val y) {
  return x.mask == y.mask && x.cnt == y.cnt && x.elem == y.elem;
}

static int checkRank(Sim *S, int R) {
  Rank *k = &S->rk[R];
  Val v;
  for (uint64_t i = 0; i < k->size[TD_BUF_OUTPUT]; i++) {
    Val got = k->mem[k->base[TD_BUF_OUTPUT] + i];
    int spec = expected(S, R, i, &v);
    if (!spec && S->a->coll == TD_COLL_REDUCE) { /* non-root: untouched */
      v = S->a->inplace ? inputVal(R, i) : (Val){0, 0, 0};
      spec = 1;
    }
    if (spec && !same(got, v))
      return FAIL("rank %d OUTPUT[%llu] = {%llx,%u,%u}, want {%llx,%u,%u}", R,
                  (unsigned long long)i, (unsigned long long)got.mask, got.cnt, got.elem,
                  (unsigned long long)v.mask, v.cnt, v.elem);
  }
  uint64_t ob = k->base[TD_BUF_OUTPUT], oe = ob + k->size[TD_BUF_OUTPUT];
  for (uint64_t i = 0; i < k->size[TD_BUF_INPUT]; i++) {
    uint64_t at = k->base[TD_BUF_INPUT] + i;
    if (at >= ob && at < oe) continue; /* aliased with OUTPUT: checked above */
    if (!same(k->mem[at], inputVal(R, i)))
      return FAIL("rank %d INPUT[%llu] was modified", R, (unsigned long long)i);
  }
  return 0;
}

static int setup(Sim *S, const char *algo) {
  for (int R = 0; R < S->n; R++) {
    Rank *k = &S->rk[R];
    tdCollArgs a = *S->a;
    a.rank = R;
    if (a.coll == TD_COLL_ALLTOALLV) {
      if (vDispls(S, R)) return -1;
      a.v_sdispls = k->sdispls, a.v_rdispls = k->rdispls;
    }
    char err[TD_ERRLEN] = "";
    tpudistResult_t r = algoGenerate(&a, algo, &k->s, err);
    if (r != tpudistSuccess) return FAIL("rank %d: generate: %d %s", R, (int)r, err);
    bufPlace(S, R);
    k->mem = calloc(k->region + k->size[TD_BUF_SCRATCH] + 1, sizeof(Val));
    if (!k->mem) return FAIL("no memory");
    for (uint64_t i = 0; i < k->size[TD_BUF_INPUT]; i++)
      k->mem[k->base[TD_BUF_INPUT] + i] = inputVal(R, i);
    for (uint32_t q = 0; q < k->s.nstreams; q++) {
      k->state[q] = calloc(k->s.streams[q].nsteps + 1, 1);
      k->ordcnt[q] = calloc((size_t)S->n * 2, sizeof(uint32_t));
      if (!k->state[q] || !k->ordcnt[q]) return FAIL("no memory");
    }
  }
  return 0;
}

int simCheck(const tdCollArgs *args, const char *algo, char *msg) {
  Sim sim = {args, args->nranks, args->count, NULL, NULL, msg}, *S = &sim;
  int n = args->nranks, rc = -1;
  msg[0] = 0;
  if (n < 1 || n > 64) return snprintf(msg, TD_ERRLEN, "model: %d ranks (1..64)", n), -1;
  S->rk = calloc((size_t)n, sizeof(Rank));
  S->ch = calloc((size_t)n * n * TD_MAX_STREAMS, sizeof(Chan));
  if (!S->rk || !S->ch) {
    snprintf(msg, TD_ERRLEN, "no memory");
    goto out;
  }
  if (setup(S, algo) || runAll(S)) goto out;
  for (int R = 0; R < n; R++)
    if (checkRank(S, R)) goto out;
  rc = 0;
out:
  for (size_t i = 0; S->ch && i < (size_t)n * n * TD_MAX_STREAMS; i++)
    free(S->ch[i].end[0]), free(S->ch[i].end[1]);
  for (int R = 0; S->rk && R < n; R++) {
    for (int q = 0; q < TD_MAX_STREAMS; q++) free(S->rk[R].state[q]), free(S->rk[R].ordcnt[q]);
    free(S->rk[R].mem), free(S->rk[R].sdispls), free(S->rk[R].rdispls);
    schedFree(&S->rk[R].s);
  }
  free(S->rk);
  free(S->ch);
  return rc;
}
