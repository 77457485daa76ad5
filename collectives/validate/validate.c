/*
 * validate.c - the schedule validator's driver (see validate.h): checks the metadata of a set of
 * per-rank schedules, binds every step's refs to element ranges of the caller's buffers (with
 * the in-place aliasing of docs/schedule-ir.md), matches messages by key, runs the lock-step
 * execution (validate_exec.c) and compares every element of the caller's buffers with the
 * collective's definition. Cost: O(steps log steps) for matching plus the execution.
 */
#include <stdlib.h>
#include <string.h>

#include "validate_int.h"

static tpudistResult_t fail(vCtx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static tpudistResult_t fail(vCtx *c, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  validateEmit(c, msg);
  return tpudistInternalError;
}

static int rooted(tdColl coll) {
  return coll == TD_COLL_BROADCAST || coll == TD_COLL_REDUCE || coll == TD_COLL_SENDRECV;
}

static tpudistResult_t checkMeta(vCtx *c) {
  const tdSched *s0 = c->s[0];
  c->coll = s0->coll;
  c->root = s0->root;
  c->inplace = s0->inplace;
  if ((unsigned)c->coll >= TD_NUM_COLLS) return fail(c, "rank 0: unknown collective %d", c->coll);
  if (rooted(c->coll) && (c->root < 0 || c->root >= c->nranks))
    return fail(c, "root %d out of range [0,%d)", c->root, c->nranks);
  if (c->inplace && (c->coll == TD_COLL_ALLTOALL || c->coll == TD_COLL_ALLTOALLV))
    return fail(c, "%s has no in-place form", schedCollName(c->coll));
  for (int r = 0; r < c->nranks; r++) {
    const tdSched *s = c->s[r];
    if (s->version != TD_SCHED_VERSION)
      return fail(c, "rank %d: schedule version %u, expected %u", r, s->version, TD_SCHED_VERSION);
    if (s->coll != c->coll || s->nranks != c->nranks || s->rank != r ||
        (rooted(c->coll) && s->root != c->root) || s->inplace != c->inplace)
      return fail(c,
                  "rank %d: schedule is for %s nranks %d rank %d root %d inplace %d, the set for "
                  "%s nranks %d rank %d root %d inplace %d",
                  r, schedCollName(s->coll), s->nranks, s->rank, s->root, s->inplace,
                  schedCollName(c->coll), c->nranks, r, c->root, c->inplace);
    if (s->nstreams > TD_MAX_STREAMS)
      return fail(c, "rank %d: %u streams, at most %d", r, s->nstreams, TD_MAX_STREAMS);
  }
  return tpudistSuccess;
}

static tpudistResult_t setupV(vCtx *c, const tdValidateOpts *o) {
  size_t nn = (size_t)c->nranks * c->nranks;
  if (!o || !o->v_counts) return tdErr(c->err, tpudistInvalidArgument, "alltoallv needs v_counts");
  c->vc = malloc(nn * sizeof(uint64_t));
  c->vsd = malloc(nn * sizeof(uint64_t));
  c->vrd = malloc(nn * sizeof(uint64_t));
  if (!c->vc || !c->vsd || !c->vrd) return tpudistNoMemory;
  memcpy(c->vc, o->v_counts, nn * sizeof(uint64_t));
  int N = c->nranks;
  for (int a = 0; a < N; a++) {
    uint64_t ps = 0, pr = 0;
    for (int b = 0; b < N; b++) {
      c->vsd[(size_t)a * N + b] = o->v_sdispls ? o->v_sdispls[(size_t)a * N + b] : ps;
      c->vrd[(size_t)a * N + b] = o->v_rdispls ? o->v_rdispls[(size_t)a * N + b] : pr;
      ps += c->vc[(size_t)a * N + b];
      pr += c->vc[(size_t)b * N + a];
    }
  }
  return tpudistSuccess;
}

/* Caller buffer sizes of rank r: in = send buffer, out = receive buffer. */
static void userSizes(const vCtx *c, int r, uint64_t *in, uint64_t *out) {
  uint64_t n = c->count, N = (uint64_t)c->nranks;
  switch (c->coll) {
    case TD_COLL_BROADCAST:
      *in = r == c->root ? n : 0, *out = n;
      break;
    case TD_COLL_REDUCE:
      *in = n, *out = r == c->root ? n : 0;
      break;
    case TD_COLL_ALLGATHER:
      *in = n, *out = N * n;
      break;
    case TD_COLL_REDUCESCATTER:
      *in = N * n, *out = n;
      break;
    case TD_COLL_ALLTOALL:
      *in = *out = N * n;
      break;
    case TD_COLL_ALLTOALLV:
      *in = *out = 0;
      for (int j = 0; j < c->nranks; j++) {
        size_t sj = (size_t)r * N + j, js = (size_t)j * N + r;
        *in = TD_MAX(*in, c->vsd[sj] + c->vc[sj]);
        *out = TD_MAX(*out, c->vrd[sj] + c->vc[js]);
      }
      break;
    default:
      *in = *out = n;
      break;
  }
}

/* Regions, views and initial contents of rank r. */
static tpudistResult_t setupRank(vCtx *c, int r) {
  vRegion *g = &c->reg[(size_t)r * VNREG];
  vView *v = &c->view[(size_t)r * TD_NUM_BUFS];
  uint64_t in, out, n = c->count;
  userSizes(c, r, &in, &out);
  g[VREG_IN] = (vRegion){in, 0, 0, {0}};
  g[VREG_OUT] = (vRegion){out, 0, out, {0}};
  v[TD_BUF_INPUT] = (vView){VREG_IN, 0, in};
  v[TD_BUF_OUTPUT] = (vView){VREG_OUT, 0, out};
  for (int b = TD_BUF_INPUT; b <= TD_BUF_OUTPUT; b++) { /* in place: one buffer in the other */
    tdBufKind sp;
    uint32_t blk;
    schedAlias(c->s[r], (tdBufKind)b, &sp, &blk);
    if ((int)sp == b) continue;
    v[b] = (vView){(uint8_t)sp, (uint64_t)blk * n, n};
    g[b].size = g[b].whi = 0;
    if (b == TD_BUF_OUTPUT) g[sp].wlo = (uint64_t)blk * n, g[sp].whi = (uint64_t)(blk + 1) * n;
  }
  if (c->inplace && c->coll == TD_COLL_REDUCE) {
    g[VREG_OUT].size = n;
    g[VREG_OUT].whi = r == c->root ? n : 0;
  }
  uint64_t scr = schedBufElems(c->s[r], TD_BUF_SCRATCH, n);
  g[VREG_SCR] = (vRegion){scr, 0, scr, {0}};
  v[TD_BUF_SCRATCH] = (vView){VREG_SCR, 0, scr};
  return tpudistSuccess;
}

/* Initial contents of rank r: its input in the INPUT view, the caller's prior contents elsewhere
 * in its buffers, uninitialised scratch. */
static tpudistResult_t initContents(vCtx *c, int r) {
  vRegion *g = &c->reg[(size_t)r * VNREG];
  const vView *v = &c->view[(size_t)r * TD_NUM_BUFS];
  uint64_t scr = g[VREG_SCR].size;
  for (int k = 0; k < VNREG; k++) g[k].runs.n = 0;
  TD_CHECK(validateRunsPush(&g[VREG_IN].runs, 0, g[VREG_IN].size, 0, VSET_ORIG | (uint32_t)r));
  TD_CHECK(validateRunsPush(&g[VREG_OUT].runs, 0, g[VREG_OUT].size, 0, VSET_ORIG | (uint32_t)r));
  TD_CHECK(validateRunsPush(&g[VREG_SCR].runs, 0, scr, 0, VSET_UNDEF));
  uint32_t self = validateSetSingle(&c->sets, r);
  if (!self) return tpudistNoMemory;
  vRuns init = {0};
  tpudistResult_t res = validateRunsPush(&init, 0, v[TD_BUF_INPUT].limit, 0, self);
  if (res == tpudistSuccess) res = validateWrite(&g[v[TD_BUF_INPUT].reg], v[0].base, &init);
  validateRunsFree(&init);
  return res;
}

/* The step name, formatted only when a check fails. */
#define NM (validateStepName(c, v, nm, sizeof(nm)), nm)

/* Binds ref (used as "src"/"dst") of step v to a region range (schedRefSpan: the views are
 * schedAlias's, so the span's space is the region and its shift the view's base). */
static tpudistResult_t bindRef(vCtx *c, vStep *v, tdBufRef ref, const char *what, tdSpan *out) {
  char nm[96];
  const tdSched *s = c->s[v->rank];
  if (ref.buf >= TD_NUM_BUFS) return fail(c, "%s: %s buffer %u is not a buffer", NM, what, ref.buf);
  const tdLayout *l = &s->layout[ref.buf];
  uint64_t total = (uint64_t)l->nblocks * l->chunks_per_block;
  const char *bn = schedBufName((tdBufKind)ref.buf);
  if (ref.nchunks == 0 || ref.chunk + (uint64_t)ref.nchunks > total)
    return fail(c, "%s: %s %s chunks [%u,+%u) out of range (the layout has %llu chunks)", NM, what,
                bn, ref.chunk, ref.nchunks, (unsigned long long)total);
  if (schedRefSpan(s, ref, c->count, out) != tpudistSuccess)
    return fail(c, "%s: %s %s chunks [%u,+%u) are not contiguous in memory", NM, what, bn,
                ref.chunk, ref.nchunks);
  const vView *vw = &c->view[(size_t)v->rank * TD_NUM_BUFS + ref.buf];
  uint64_t x = out->b - vw->base, y = out->e - vw->base;
  if (y > x && y > vw->limit)
    return fail(c, "%s: %s %s elements [%llu,%llu) lie outside the caller's %s of %llu elements",
                NM, what, bn, (unsigned long long)x, (unsigned long long)y, bn,
                (unsigned long long)vw->limit);
  return tpudistSuccess;
}

static tpudistResult_t checkPeer(vCtx *c, vStep *v, int p, const char *what) {
  char nm[96];
  if (p < 0 || p >= c->nranks)
    return fail(c, "%s: %s %d out of range [0,%d)", NM, what, p, c->nranks);
  if (p == v->rank && c->coll != TD_COLL_SENDRECV)
    return fail(c, "%s: %s is the rank itself (only sendrecv may message itself)", NM, what);
  return tpudistSuccess;
}

static tpudistResult_t checkStepRefs(vCtx *c, vStep *v) {
  const tdStep *st = v->st;
  unsigned f = tdStepSemTable[st->op].flags;
  char nm[96];
  tdSpan a = {0, 0, 0, 0}, d = {0, 0, 0, 0};
  if (schedUsesSrc(st->op)) TD_CHECK(bindRef(c, v, st->src, "src", &a));
  if (schedUsesDst(st->op)) TD_CHECK(bindRef(c, v, st->dst, "dst", &d));
  schedSpansOf(st, a, d, &v->sp);
  if ((f & TD_SEM_READ_SRC) && (f & TD_SEM_WRITE_DST)) {
    if (a.e - a.b != d.e - d.b)
      return fail(c, "%s: src has %llu elements but dst has %llu", NM,
                  (unsigned long long)(a.e - a.b), (unsigned long long)(d.e - d.b));
    if (a.space == d.space && a.b != d.b && a.b < d.e && d.b < a.e)
      return fail(c, "%s: src and dst partly overlap", NM);
  }
  if (f & TD_SEM_WRITE_DST) {
    const vRegion *g = &c->reg[(size_t)v->rank * VNREG + d.space];
    if (d.e > d.b && (d.b < g->wlo || d.e > g->whi))
      return fail(c, "%s: writes %s elements [%llu,%llu) that the collective must leave intact", NM,
                  schedBufName((tdBufKind)d.space), (unsigned long long)d.b,
                  (unsigned long long)d.e);
  }
  return tpudistSuccess;
}

static tpudistResult_t checkStep(vCtx *c, vStep *v) {
  const tdStep *st = v->st;
  const tdSched *s = c->s[v->rank];
  if (st->op >= TD_NUM_STEP_OPS)
    return fail(c, "rank %d stream %u step %u: op %u is not a step op", v->rank, v->stream, v->idx,
                st->op);
  const tdStepSem *m = &tdStepSemTable[st->op];
  if (m->recv_from) TD_CHECK(checkPeer(c, v, schedRecvPeer(st), "source peer"));
  if (m->send_to == TD_PEER_PEER) TD_CHECK(checkPeer(c, v, schedSendPeer(st), "destination peer"));
  if (m->send_to == TD_PEER_PEER2) TD_CHECK(checkPeer(c, v, schedSendPeer(st), "forwarding peer2"));
  for (int d = 0; d < 2; d++) {
    const tdDep *dep = &st->deps[d];
    if (dep->stream == TD_NO_DEP) continue;
    char nm[96];
    if (dep->stream == v->stream)
      return fail(c, "%s: dep %d names its own stream (order within a stream is implicit)", NM, d);
    if (dep->stream >= s->nstreams || dep->step >= s->streams[dep->stream].nsteps)
      return fail(c, "%s: dep %d on stream %u step %u: no such step", NM, d, dep->stream,
                  dep->step);
  }
  return checkStepRefs(c, v);
}

#undef NM

static tpudistResult_t buildSteps(vCtx *c) {
  c->nsteps = 0;
  for (int r = 0; r < c->nranks; r++)
    for (unsigned st = 0; st < c->s[r]->nstreams; st++) {
      c->first[(size_t)r * TD_MAX_STREAMS + st] = c->nsteps;
      c->nsteps += c->s[r]->streams[st].nsteps;
    }
  c->steps = calloc(c->nsteps ? c->nsteps : 1, sizeof(vStep));
  if (!c->steps) return tpudistNoMemory;
  uint64_t g = 0;
  for (int r = 0; r < c->nranks; r++)
    for (unsigned st = 0; st < c->s[r]->nstreams; st++)
      for (uint32_t i = 0; i < c->s[r]->streams[st].nsteps; i++, g++) {
        vStep *v = &c->steps[g];
        v->st = &c->s[r]->streams[st].steps[i];
        v->rank = r, v->stream = (uint16_t)st, v->idx = i;
        v->in = v->out = -1;
        TD_CHECK(checkStep(c, v));
      }
  return tpudistSuccess;
}

/* ---- matching ---- */

typedef struct {
  uint32_t stream, ord;
  int from, to;
  uint64_t gid;
} vMsg;

static int msgCmp(const void *pa, const void *pb) {
  const vMsg *a = pa, *b = pb;
  if (a->stream != b->stream) return a->stream < b->stream ? -1 : 1;
  if (a->from != b->from) return a->from < b->from ? -1 : 1;
  if (a->to != b->to) return a->to < b->to ? -1 : 1;
  if (a->ord != b->ord) return a->ord < b->ord ? -1 : 1;
  return 0;
}

/* Elements a sender puts on the wire (out), or a receiver takes off it. */
static uint64_t wireElems(const vStep *v, int out) {
  const tdSpan *w = vSpan(v, out ? tdStepSemTable[v->st->op].wire : TD_OPND_DST);
  return w->e - w->b;
}

static tpudistResult_t collectMsgs(vCtx *c, vMsg *snd, vMsg *rcv, uint64_t *ns, uint64_t *nr) {
  uint32_t *cnt = calloc((size_t)2 * TD_MAX_STREAMS * c->nranks, sizeof(uint32_t));
  if (!cnt) return tpudistNoMemory;
  *ns = *nr = 0;
  for (uint64_t g = 0; g < c->nsteps; g++) {
    const vStep *v = &c->steps[g];
    if (g == 0 || v->rank != c->steps[g - 1].rank)
      memset(cnt, 0, sizeof(uint32_t) * 2 * TD_MAX_STREAMS * c->nranks);
    tdOrdCount oc = {cnt + (size_t)v->stream * c->nranks,
                     cnt + ((size_t)TD_MAX_STREAMS + v->stream) * c->nranks, c->nranks};
    uint32_t so, ro;
    schedOrdNext(&oc, v->st, &so, &ro);
    if (ro != TD_NO_ORD) rcv[(*nr)++] = (vMsg){v->stream, ro, schedRecvPeer(v->st), v->rank, g};
    if (so != TD_NO_ORD) snd[(*ns)++] = (vMsg){v->stream, so, v->rank, schedSendPeer(v->st), g};
  }
  free(cnt);
  return tpudistSuccess;
}

static uint64_t countKey(const vMsg *m, uint64_t n, const vMsg *k) {
  uint64_t x = 0;
  for (uint64_t i = 0; i < n; i++)
    x += m[i].stream == k->stream && m[i].from == k->from && m[i].to == k->to;
  return x;
}

static tpudistResult_t unmatched(vCtx *c, const vMsg *k, int is_send, const vMsg *other,
                                 uint64_t nother) {
  char nm[96];
  validateStepName(c, &c->steps[k->gid], nm, sizeof(nm));
  return fail(c,
              "%s: no matching %s: it is message %u from %d to %d on stream %u, rank %d posts %llu "
              "%s on that stream",
              nm, is_send ? "receive" : "send", k->ord, k->from, k->to, k->stream,
              is_send ? k->to : k->from, (unsigned long long)countKey(other, nother, k),
              is_send ? "receives from it" : "sends to it");
}

static tpudistResult_t joinMsgs(vCtx *c, vMsg *snd, uint64_t ns, vMsg *rcv, uint64_t nr) {
  qsort(snd, ns, sizeof(vMsg), msgCmp);
  qsort(rcv, nr, sizeof(vMsg), msgCmp);
  uint64_t i = 0, j = 0;
  while (i < ns || j < nr) {
    int d = i == ns ? 1 : j == nr ? -1 : msgCmp(&snd[i], &rcv[j]);
    if (d < 0) return unmatched(c, &snd[i], 1, rcv, nr);
    if (d > 0) return unmatched(c, &rcv[j], 0, snd, ns);
    vStep *a = &c->steps[snd[i].gid], *b = &c->steps[rcv[j].gid];
    if (wireElems(a, 1) != wireElems(b, 0)) {
      char na[96], nb[96];
      validateStepName(c, a, na, sizeof(na));
      validateStepName(c, b, nb, sizeof(nb));
      return fail(c, "size mismatch: %s sends %llu elements but %s receives %llu", na,
                  (unsigned long long)wireElems(a, 1), nb, (unsigned long long)wireElems(b, 0));
    }
    c->msg_snd[c->nmsgs] = snd[i].gid;
    c->msg_rcv[c->nmsgs] = rcv[j].gid;
    a->out = b->in = (int64_t)c->nmsgs++;
    i++, j++;
  }
  return tpudistSuccess;
}

static tpudistResult_t matchMessages(vCtx *c, uint64_t *nmsg) {
  vMsg *snd = malloc(sizeof(vMsg) * (c->nsteps + 1));
  vMsg *rcv = malloc(sizeof(vMsg) * (c->nsteps + 1));
  uint64_t ns = 0, nr = 0;
  c->msg_snd = malloc(sizeof(uint64_t) * (c->nsteps + 1));
  c->msg_rcv = malloc(sizeof(uint64_t) * (c->nsteps + 1));
  c->msg_done = calloc(c->nsteps + 1, 1);
  tpudistResult_t res = tpudistNoMemory;
  if (snd && rcv && c->msg_snd && c->msg_rcv && c->msg_done) {
    res = collectMsgs(c, snd, rcv, &ns, &nr);
    if (res == tpudistSuccess) res = joinMsgs(c, snd, ns, rcv, nr);
  }
  *nmsg = c->nmsgs;
  free(snd);
  free(rcv);
  return res;
}

/* ---- the collective's definition and the final comparison ---- */

/* Writes the expected value of OUTPUT elements [b, b + len) into rank r's expected regions. */
static tpudistResult_t expect(vCtx *c, vRegion *eg, int r, uint64_t b, uint64_t len, int from,
                              uint64_t idx) {
  const vView *vw = &c->view[(size_t)r * TD_NUM_BUFS + TD_BUF_OUTPUT];
  if (!len) return tpudistSuccess;
  uint32_t set = validateSetSingle(&c->sets, from);
  if (!set) return tpudistNoMemory;
  vRuns x = {0};
  tpudistResult_t res = validateRunsPush(&x, 0, len, idx, set);
  if (res == tpudistSuccess) res = validateWrite(&eg[vw->reg], vw->base + b, &x);
  validateRunsFree(&x);
  return res;
}

static tpudistResult_t expectRank(vCtx *c, vRegion *eg, int r) {
  uint64_t n = c->count;
  int N = c->nranks;
  switch (c->coll) {
    case TD_COLL_ALLREDUCE:
      return expect(c, eg, r, 0, n, -1, 0);
    case TD_COLL_BROADCAST:
      return expect(c, eg, r, 0, n, c->root, 0);
    case TD_COLL_REDUCE:
      return r == c->root ? expect(c, eg, r, 0, n, -1, 0) : tpudistSuccess;
    case TD_COLL_REDUCESCATTER:
      return expect(c, eg, r, 0, n, -1, (uint64_t)r * n);
    case TD_COLL_SENDRECV:
      return expect(c, eg, r, 0, n, (r - c->root + N) % N, 0);
    default:
      break;
  }
  for (int s = 0; s < N; s++) {
    size_t sr = (size_t)s * N + r, rs = (size_t)r * N + s;
    if (c->coll == TD_COLL_ALLGATHER) TD_CHECK(expect(c, eg, r, (uint64_t)s * n, n, s, 0));
    if (c->coll == TD_COLL_ALLTOALL)
      TD_CHECK(expect(c, eg, r, (uint64_t)s * n, n, s, (uint64_t)r * n));
    if (c->coll == TD_COLL_ALLTOALLV)
      TD_CHECK(expect(c, eg, r, c->vrd[rs], c->vc[sr], s, c->vsd[sr]));
  }
  return tpudistSuccess;
}

static tpudistResult_t mismatch(vCtx *c, int r, int reg, uint64_t x, const vRun *a, const vRun *e) {
  char da[80], de[80], extra[64] = "";
  validateSetDescribe(&c->sets, a->set, da, sizeof(da));
  validateSetDescribe(&c->sets, e->set, de, sizeof(de));
  uint64_t ia = a->set == VSET_UNDEF ? 0 : a->idx + (x - a->b), ie = e->idx + (x - e->b);
  int miss = validateSetMissing(&c->sets, e->set, a->set);
  int more = validateSetMissing(&c->sets, a->set, e->set);
  if (validateSetBits(&c->sets, a->set) == validateSetBits(&c->sets, e->set))
    snprintf(extra, sizeof(extra), ": wrong element");
  else if (miss >= 0)
    snprintf(extra, sizeof(extra), ": missing rank %d's contribution", miss);
  else if (more >= 0)
    snprintf(extra, sizeof(extra), ": extra contribution of rank %d", more);
  return fail(
      c, "wrong result: rank %d %s element %llu holds %s element %llu, expected %s element %llu%s",
      r, reg == VREG_IN ? "input" : "output", (unsigned long long)x, da, (unsigned long long)ia, de,
      (unsigned long long)ie, extra);
}

static tpudistResult_t compareRegion(vCtx *c, int r, int reg, const vRegion *eg) {
  const vRuns *A = &c->reg[(size_t)r * VNREG + reg].runs, *E = &eg->runs;
  uint32_t i = 0, j = 0;
  while (i < A->n && j < E->n) {
    const vRun *a = &A->r[i], *e = &E->r[j];
    uint64_t p = TD_MAX(a->b, e->b);
    if (p < TD_MIN(a->e, e->e)) {
      uint64_t ia = a->idx + (p - a->b), ie = e->idx + (p - e->b);
      if (validateSetBits(&c->sets, a->set) != validateSetBits(&c->sets, e->set) ||
          (a->set != VSET_UNDEF && ia != ie))
        return mismatch(c, r, reg, p, a, e);
    }
    if (a->e <= e->e) i++;
    if (e->e <= a->e) j++;
  }
  return tpudistSuccess;
}

/* All-reduce: every rank must reduce each element in the same order (floating-point sums are
 * commutative but not associative), so that all ranks hold the same bits. */
static tpudistResult_t sameOrder(vCtx *c) {
  const vRuns *A = &c->reg[VREG_OUT].runs;
  for (int r = 1; r < c->nranks; r++) {
    const vRuns *B = &c->reg[(size_t)r * VNREG + VREG_OUT].runs;
    uint32_t i = 0, j = 0;
    while (i < A->n && j < B->n) {
      const vRun *a = &A->r[i], *b = &B->r[j];
      uint64_t p = TD_MAX(a->b, b->b);
      if (p < TD_MIN(a->e, b->e) && a->set != b->set) {
        char ta[96], tb[96];
        validateTreeDescribe(&c->sets, a->set, ta, sizeof(ta));
        validateTreeDescribe(&c->sets, b->set, tb, sizeof(tb));
        return fail(c,
                    "reduction order differs: rank 0 output element %llu is %s but rank %d's is "
                    "%s (floating-point results would differ between ranks)",
                    (unsigned long long)p, ta, r, tb);
      }
      if (a->e <= b->e) i++;
      if (b->e <= a->e) j++;
    }
  }
  return tpudistSuccess;
}

static tpudistResult_t finalCheck(vCtx *c) {
  tpudistResult_t res = tpudistSuccess;
  for (int r = 0; r < c->nranks && res == tpudistSuccess; r++) {
    vRegion eg[VNREG];
    memset(eg, 0, sizeof(eg));
    vRegion *g = &c->reg[(size_t)r * VNREG];
    uint32_t self = validateSetSingle(&c->sets, r);
    vRuns init = {0};
    const vView *vi = &c->view[(size_t)r * TD_NUM_BUFS + TD_BUF_INPUT];
    for (int k = VREG_IN; k <= VREG_OUT; k++) {
      eg[k].size = g[k].size;
      TD_CHECK_GOTO(validateRunsPush(&eg[k].runs, 0, g[k].size, 0, VSET_ORIG | (uint32_t)r), res,
                    done);
    }
    res = self ? validateRunsPush(&init, 0, vi->limit, 0, self) : tpudistNoMemory;
    if (res == tpudistSuccess) res = validateWrite(&eg[vi->reg], vi->base, &init);
    if (res == tpudistSuccess) res = expectRank(c, eg, r);
    if (res == tpudistSuccess) res = compareRegion(c, r, VREG_OUT, &eg[VREG_OUT]);
    if (res == tpudistSuccess) res = compareRegion(c, r, VREG_IN, &eg[VREG_IN]);
  done:
    validateRunsFree(&init);
    validateRunsFree(&eg[VREG_IN].runs);
    validateRunsFree(&eg[VREG_OUT].runs);
  }
  if (res == tpudistSuccess && c->coll == TD_COLL_ALLREDUCE) res = sameOrder(c);
  return res;
}

/* ---- API ---- */

static void ctxFree(vCtx *c) {
  for (size_t i = 0; c->reg && i < (size_t)c->nranks * VNREG; i++)
    validateRunsFree(&c->reg[i].runs);
  for (size_t i = 0; c->ss && i < (size_t)c->nranks * TD_MAX_STREAMS; i++) free(c->ss[i].fl);
  free(c->reg);
  free(c->ss);
  free(c->view);
  free(c->first);
  free(c->steps);
  free(c->msg_snd);
  free(c->msg_rcv);
  free(c->msg_done);
  free(c->vc);
  free(c->vsd);
  free(c->vrd);
  validateSetsFree(&c->sets);
}

static void resetExecution(vCtx *c) {
  for (uint64_t g = 0; g < c->nsteps; g++) c->steps[g].issued = c->steps[g].done = 0;
  memset(c->msg_done, 0, c->nmsgs);
  for (size_t i = 0; i < (size_t)c->nranks * TD_MAX_STREAMS; i++) c->ss[i].next = c->ss[i].nfl = 0;
}

static void appendErr(vCtx *c, const char *tail) {
  if (c->err) {
    size_t n = strlen(c->err), t = strlen(tail);
    if (n + t >= TD_ERRLEN) n = TD_ERRLEN - 1 - t;
    memcpy(c->err + n, tail, t + 1);
  }
  if (c->report && c->report_len > strlen(c->report) + strlen(tail)) strcat(c->report, tail);
}

static tpudistResult_t run(vCtx *c, const tdValidateOpts *opts) {
  TD_CHECK(checkMeta(c));
  if (c->coll == TD_COLL_ALLTOALLV) TD_CHECK(setupV(c, opts));
  size_t N = (size_t)c->nranks;
  c->reg = calloc(N * VNREG, sizeof(vRegion));
  c->view = calloc(N * TD_NUM_BUFS, sizeof(vView));
  c->first = calloc(N * TD_MAX_STREAMS, sizeof(uint64_t));
  c->ss = calloc(N * TD_MAX_STREAMS, sizeof(vStreamState));
  if (!c->reg || !c->view || !c->first || !c->ss) return tpudistNoMemory;
  TD_CHECK(validateSetsInit(&c->sets, c->nranks));
  for (int r = 0; r < c->nranks; r++) TD_CHECK(setupRank(c, r));
  TD_CHECK(buildSteps(c));
  uint64_t nmsg = 0, rounds = 0;
  TD_CHECK(matchMessages(c, &nmsg));
  uint32_t runs = 1 + (opts ? opts->random_runs : 0);
  for (uint32_t k = 0; k < runs; k++) {
    if (k) resetExecution(c);
    c->rng = k ? (opts->seed ^ 0x9e3779b97f4a7c15ull) * (k + 1) | 1 : 0;
    for (int r = 0; r < c->nranks; r++) TD_CHECK(initContents(c, r));
    tpudistResult_t res = validateExecute(c);
    if (res == tpudistSuccess) res = finalCheck(c);
    if (res == tpudistInternalError && k) {
      char tail[64];
      snprintf(tail, sizeof(tail), " [in randomised completion order %u]", k);
      appendErr(c, tail);
    }
    TD_CHECK(res);
    if (k == 0) rounds = c->rounds;
  }
  if (opts && opts->out_rounds) *opts->out_rounds = rounds;
  if (opts && opts->out_messages) *opts->out_messages = nmsg;
  return tpudistSuccess;
}

tpudistResult_t validateSchedulesOpts(tdSched *const *scheds, int nranks, uint64_t count,
                                      const tdValidateOpts *opts, char *err) {
  if (!scheds || nranks < 1)
    return tdErr(err, tpudistInvalidArgument, "validate: no schedules (nranks %d)", nranks);
  for (int r = 0; r < nranks; r++)
    if (!scheds[r])
      return tdErr(err, tpudistInvalidArgument, "validate: rank %d's schedule is NULL", r);
  vCtx c;
  memset(&c, 0, sizeof(c));
  c.nranks = nranks;
  c.count = scheds[0]->coll == TD_COLL_ALLTOALLV ? 0 : count;
  c.s = scheds;
  c.err = err;
  if (opts) c.report = opts->report, c.report_len = opts->report_len;
  tpudistResult_t res = run(&c, opts);
  if (res == tpudistNoMemory) tdErr(err, res, "validate: out of memory");
  ctxFree(&c);
  return res;
}

tpudistResult_t validateSchedules(tdSched *const *scheds, int nranks, uint64_t count, char *err) {
  return validateSchedulesOpts(scheds, nranks, count, NULL, err);
}
