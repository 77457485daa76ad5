/*
 * validate_exec.c - the validator's lock-step execution of all ranks (docs/schedule-ir.md,
 * "Ordering, dependencies and the match key"). Each round first issues every step that may
 * issue (in order per stream; not while an earlier incomplete step of its stream conflicts with
 * it; not before its cross-stream deps complete), then completes every issued local step and
 * every message whose two ends are issued (rendezvous; a fused step forwards only what it has
 * received, its receive does not wait for its forward), applying their effect on the symbolic
 * values. Issuing is monotone, so if a round makes no progress no execution can: the wait-for
 * cycle is reported. Two steps of one rank in flight together on different streams that
 * write/write or read/write overlapping elements are a race. With c->rng set, each round
 * completes only a random non-empty subset of what is ready (other timings, same rules).
 * Cost: O(rounds x streams + steps x in-flight steps) plus the value updates.
 */
#include <stdlib.h>
#include <string.h>

#include "validate_int.h"

void validateStepName(const vCtx *c, const vStep *v, char *buf, size_t len) {
  (void)c;
  const tdStep *st = v->st;
  int sp = schedSendPeer(st), rp = schedRecvPeer(st);
  char peers[48] = "";
  if (rp >= 0 && sp >= 0)
    snprintf(peers, sizeof(peers), " from %d to %d", rp, sp);
  else if (rp >= 0)
    snprintf(peers, sizeof(peers), " from %d", rp);
  else if (sp >= 0)
    snprintf(peers, sizeof(peers), " to %d", sp);
  snprintf(buf, len, "rank %d stream %u step %u (%s%s)", v->rank, v->stream, v->idx,
           tdStepSemTable[st->op].name, peers);
}

static vStreamState *streamOf(vCtx *c, int r, unsigned st) {
  return &c->ss[(size_t)r * TD_MAX_STREAMS + st];
}

static uint64_t gidOf(const vCtx *c, int r, unsigned st, uint32_t i) {
  return c->first[(size_t)r * TD_MAX_STREAMS + st] + i;
}

static void copyTrunc(char *dst, size_t len, const char *src) {
  size_t n = strlen(src);
  if (n >= len) n = len - 1;
  memcpy(dst, src, n);
  dst[n] = 0;
}

void validateEmit(vCtx *c, const char *msg) {
  if (c->err) copyTrunc(c->err, TD_ERRLEN, msg);
  if (c->report && c->report_len) copyTrunc(c->report, c->report_len, msg);
}

/* Whether stream st of rank r can issue its next step; else *blocker = what it waits for. */
static int canIssue(vCtx *c, int r, unsigned st, uint64_t *blocker) {
  vStreamState *ss = streamOf(c, r, st);
  const vStep *v = &c->steps[gidOf(c, r, st, ss->next)];
  for (uint32_t i = 0; i < ss->nfl; i++)
    if (schedSpansConflict(&v->sp, &c->steps[ss->fl[i]].sp)) {
      *blocker = ss->fl[i];
      return 0;
    }
  for (int d = 0; d < 2; d++) {
    const tdDep *dep = &v->st->deps[d];
    if (dep->stream == TD_NO_DEP) continue;
    uint64_t g = gidOf(c, r, dep->stream, dep->step);
    if (!c->steps[g].done) {
      *blocker = g;
      return 0;
    }
  }
  return 1;
}

static tpudistResult_t raceCheck(vCtx *c, const vStep *v) {
  for (unsigned o = 0; o < c->s[v->rank]->nstreams; o++) {
    if (o == v->stream) continue;
    vStreamState *ss = streamOf(c, v->rank, o);
    for (uint32_t i = 0; i < ss->nfl; i++) {
      const vStep *w = &c->steps[ss->fl[i]];
      int iv, iw, k = schedSpansConflictKind(&v->sp, &w->sp, &iv, &iw);
      if (!k) continue;
      char a[96], b[96], msg[512];
      validateStepName(c, v, a, sizeof(a));
      validateStepName(c, w, b, sizeof(b));
      const tdSpan *x = &v->sp.s[iv], *y = &w->sp.s[iw]; /* the spans that meet */
      char rg[64];
      snprintf(rg, sizeof(rg), "%s elements [%llu,%llu)", schedBufName((tdBufKind)x->space),
               (unsigned long long)TD_MAX(x->b, y->b), (unsigned long long)TD_MIN(x->e, y->e));
      if (k == TD_CONFLICT_WW)
        snprintf(msg, sizeof(msg), "data race: %s and %s both write %s concurrently", a, b, rg);
      else
        snprintf(msg, sizeof(msg), "data race: %s %s %s that %s %s concurrently", a,
                 k == TD_CONFLICT_RW ? "reads" : "writes", rg, b,
                 k == TD_CONFLICT_RW ? "writes" : "reads");
      validateEmit(c, msg);
      return tpudistInternalError;
    }
  }
  return tpudistSuccess;
}

static tpudistResult_t issue(vCtx *c, int r, unsigned st) {
  vStreamState *ss = streamOf(c, r, st);
  uint64_t g = gidOf(c, r, st, ss->next);
  vStep *v = &c->steps[g];
  TD_CHECK(raceCheck(c, v));
  if (tdGrow(&ss->fl, &ss->cap, (size_t)ss->nfl + 1, sizeof(uint64_t), 8)) return tpudistNoMemory;
  ss->fl[ss->nfl++] = g;
  ss->next++;
  v->issued = 1;
  return tpudistSuccess;
}

static vRegion *regionOf(vCtx *c, int r, uint8_t reg) {
  return &c->reg[(size_t)r * VNREG + reg];
}

static tpudistResult_t dataError(vCtx *c, const vStep *v, const char *why, uint64_t at) {
  char a[96], msg[512];
  validateStepName(c, v, a, sizeof(a));
  const vView *vw = &c->view[(size_t)v->rank * TD_NUM_BUFS + v->st->dst.buf];
  snprintf(msg, sizeof(msg), "%s: at %s element %llu: %s", a, schedBufName(v->st->dst.buf),
           (unsigned long long)(vSpan(v, TD_OPND_DST)->b - vw->base + at), why);
  validateEmit(c, msg);
  return tpudistInternalError;
}

/* dst <- a (+) b, or dst <- b when a is NULL; leaves the stored value in *res. */
static tpudistResult_t applyDst(vCtx *c, const vStep *v, const vRuns *a, const vRuns *b,
                                vRuns *res) {
  if (a) {
    char why[160];
    uint64_t at = 0;
    tpudistResult_t r = validateCombine(&c->sets, a, b, res, why, sizeof(why), &at);
    if (r == tpudistInternalError) return dataError(c, v, why, at);
    TD_CHECK(r);
  } else {
    res->n = 0;
    for (uint32_t i = 0; i < b->n; i++)
      TD_CHECK(validateRunsPush(res, b->r[i].b, b->r[i].e, b->r[i].idx, b->r[i].set));
  }
  const tdSpan *d = vSpan(v, TD_OPND_DST);
  return validateWrite(regionOf(c, v->rank, d->space), d->b, res);
}

typedef struct {
  vRuns a, b, res;
  uint64_t *list; /* steps (local) and messages (| 1 << 63) completing this round */
  uint64_t n;
  size_t cap;
} vBufs;

#define VMSG_BIT (1ull << 63)

/* Reads operand o (tdOpnd) of step v into out; the WIRE operand is what sender s puts on the
 * wire. */
static tpudistResult_t readOpnd(vCtx *c, const vStep *v, const vStep *s, unsigned o, vRuns *out) {
  const vStep *x = o == TD_OPND_WIRE ? s : v;
  const tdSpan *sp = vSpan(x, o == TD_OPND_WIRE ? tdStepSemTable[s->st->op].wire : o);
  return validateRead(regionOf(c, x->rank, sp->space), sp->b, sp->e, out);
}

/* Applies step v's effect (tdStepSemTable): dst <- a, or dst <- a (+) b; s: the sender of the
 * message v receives (NULL for a local step). */
static tpudistResult_t applyEffect(vCtx *c, const vStep *v, const vStep *s, vBufs *t) {
  const tdStepSem *m = &tdStepSemTable[v->st->op];
  if (m->effect == TD_EFFECT_COPY) {
    TD_CHECK(readOpnd(c, v, s, m->a, &t->b));
    return applyDst(c, v, NULL, &t->b, &t->res);
  }
  if (m->effect != TD_EFFECT_REDUCE) return tpudistSuccess;
  TD_CHECK(readOpnd(c, v, s, m->a, &t->a));
  TD_CHECK(readOpnd(c, v, s, m->b, &t->b));
  return applyDst(c, v, &t->a, &t->b, &t->res);
}

static tpudistResult_t completeLocal(vCtx *c, vStep *v, vBufs *t) {
  TD_CHECK(applyEffect(c, v, NULL, t));
  v->done = 1;
  return tpudistSuccess;
}

static void markDone(vCtx *c, vStep *v) {
  if ((v->in < 0 || c->msg_done[v->in]) && (v->out < 0 || c->msg_done[v->out])) v->done = 1;
}

/* Message m: the sender's wire ref (src of a send, dst of a fused step) into the receiver. */
static tpudistResult_t completeMsg(vCtx *c, uint64_t m, vBufs *t) {
  vStep *s = &c->steps[c->msg_snd[m]], *v = &c->steps[c->msg_rcv[m]];
  TD_CHECK(applyEffect(c, v, s, t));
  c->msg_done[m] = 1;
  markDone(c, s);
  markDone(c, v);
  return tpudistSuccess;
}

static tpudistResult_t listPush(vBufs *t, uint64_t x) {
  if (tdGrow(&t->list, &t->cap, (size_t)t->n + 1, sizeof(uint64_t), 64)) return tpudistNoMemory;
  t->list[t->n++] = x;
  return tpudistSuccess;
}

/* A message completes when both ends are issued and, for a fused sender, what it forwards has
 * arrived (a fused step's receive completes independently of its forward). */
static int msgReady(const vCtx *c, const vStep *s) {
  if (s->out < 0 || c->msg_done[s->out] || !c->steps[c->msg_rcv[s->out]].issued) return 0;
  return s->in < 0 || c->msg_done[s->in];
}

static tpudistResult_t completePhase(vCtx *c, vBufs *t, int *progressed, uint64_t *ndone) {
  t->n = 0;
  for (int r = 0; r < c->nranks; r++)
    for (unsigned st = 0; st < c->s[r]->nstreams; st++) {
      vStreamState *ss = streamOf(c, r, st);
      for (uint32_t i = 0; i < ss->nfl; i++) {
        const vStep *v = &c->steps[ss->fl[i]];
        if (v->in < 0 && v->out < 0) TD_CHECK(listPush(t, ss->fl[i]));
        if (msgReady(c, v)) TD_CHECK(listPush(t, (uint64_t)v->out | VMSG_BIT));
      }
    }
  if (c->rng && t->n > 1) { /* complete a random non-empty subset */
    uint64_t k = 0;
    for (uint64_t i = 0; i < t->n; i++) {
      c->rng ^= c->rng << 13, c->rng ^= c->rng >> 7, c->rng ^= c->rng << 17;
      if (c->rng & 1) t->list[k++] = t->list[i];
    }
    t->n = k ? k : 1;
  }
  for (uint64_t i = 0; i < t->n; i++) {
    uint64_t x = t->list[i];
    if (x & VMSG_BIT)
      TD_CHECK(completeMsg(c, x & ~VMSG_BIT, t));
    else
      TD_CHECK(completeLocal(c, &c->steps[x], t));
  }
  if (t->n) *progressed = 1;
  for (int r = 0; r < c->nranks; r++)
    for (unsigned st = 0; st < c->s[r]->nstreams; st++) {
      vStreamState *ss = streamOf(c, r, st);
      uint32_t k = 0;
      for (uint32_t i = 0; i < ss->nfl; i++) {
        if (!c->steps[ss->fl[i]].done)
          ss->fl[k++] = ss->fl[i];
        else
          (*ndone)++;
      }
      ss->nfl = k;
    }
  return tpudistSuccess;
}

/* What step g waits for (it is not done and nothing can progress). */
static uint64_t waitsFor(vCtx *c, uint64_t g, const char **why) {
  vStep *v = &c->steps[g];
  if (v->issued) {
    if (v->in >= 0 && !c->msg_done[v->in]) {
      *why = "issued, waits for its sender";
      return c->msg_snd[v->in];
    }
    *why = "issued, waits for its receiver";
    return c->msg_rcv[v->out];
  }
  vStreamState *ss = streamOf(c, v->rank, v->stream);
  if (ss->next != v->idx) {
    *why = "not issued: behind earlier steps";
    return gidOf(c, v->rank, v->stream, ss->next);
  }
  uint64_t b = g;
  canIssue(c, v->rank, v->stream, &b);
  *why = c->steps[b].stream == v->stream && c->steps[b].rank == v->rank
             ? "not issued: conflicts with an earlier step"
             : "not issued: waits for a dep";
  return b;
}

static tpudistResult_t reportDeadlock(vCtx *c) {
  uint64_t start = 0;
  while (start < c->nsteps && c->steps[start].done) start++;
  uint64_t *seen = calloc(c->nsteps, sizeof(uint64_t));
  if (!seen) return tpudistNoMemory;
  uint64_t g = start, k = 1;
  const char *why;
  while (!seen[g]) {
    seen[g] = k++;
    g = waitsFor(c, g, &why);
  }
  size_t len = 4096, o = 0;
  char *msg = malloc(len);
  if (!msg) {
    free(seen);
    return tpudistNoMemory;
  }
  o += (size_t)snprintf(msg, len, "deadlock: wait-for cycle: ");
  uint64_t h = g;
  int n = 0;
  do {
    char a[96];
    validateStepName(c, &c->steps[h], a, sizeof(a));
    uint64_t nx = waitsFor(c, h, &why);
    if (o < len) o += (size_t)snprintf(msg + o, len - o, "%s%s [%s]", n++ ? " -> " : "", a, why);
    h = nx;
  } while (h != g);
  validateEmit(c, msg);
  free(msg);
  free(seen);
  return tpudistInternalError;
}

tpudistResult_t validateExecute(vCtx *c) {
  vBufs t;
  memset(&t, 0, sizeof(t));
  tpudistResult_t res = tpudistSuccess;
  uint64_t ndone = 0;
  c->rounds = 0;
  while (ndone < c->nsteps) {
    int progressed = 0;
    c->rounds++;
    for (int r = 0; r < c->nranks; r++)
      for (unsigned st = 0; st < c->s[r]->nstreams; st++) {
        vStreamState *ss = streamOf(c, r, st);
        uint64_t blocker;
        while (ss->next < c->s[r]->streams[st].nsteps && canIssue(c, r, st, &blocker)) {
          TD_CHECK_GOTO(issue(c, r, st), res, out);
          progressed = 1;
        }
      }
    TD_CHECK_GOTO(completePhase(c, &t, &progressed, &ndone), res, out);
    if (!progressed) {
      res = reportDeadlock(c);
      break;
    }
  }
out:
  validateRunsFree(&t.a);
  validateRunsFree(&t.b);
  validateRunsFree(&t.res);
  free(t.list);
  return res;
}
