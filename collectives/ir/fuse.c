/*
 * fuse.c - the fusion pass: within one stream, a RECV (RECV_REDUCE) whose dst a later SEND of
 * the same stream puts on the wire unchanged becomes one RECV_COPY_SEND (RECV_REDUCE_SEND) with
 * peer2 = the send's peer, and the SEND is removed. The executor then forwards each piece as it
 * lands (pipelined recv-reduce-send) instead of waiting for the whole receive.
 *
 * Fusing must keep every execution the original allowed (docs/schedule-ir.md, "Ordering"): the
 * fused step writes dst until its forward completes, where the original receive stopped writing
 * when the data landed. So a receive at i (dst D) fuses with the first SEND j > i whose src is D
 * exactly (buffer, chunk, count) only if:
 *  - no step between them writes memory that may overlap D (the data sent is the data received);
 *  - no step between them sends to the SEND's peer (messages to a peer keep their order: the
 *    match key's ordinal is the position among messages on the stream to that peer);
 *  - no step between them reads D, nor does any step after j until one that overwrites all of D
 *    (such a reader waited only for the receive before; now it would wait for the forward too,
 *    which can close a wait-for cycle, as in recursive doubling);
 *  - no step of another stream depends on the receive (same reason);
 *  - the SEND's deps are among the receive's (else the receive would start later than before).
 * The fused step keeps the receive's position and deps; it completes when its forward has.
 * Deps that named the removed SEND now name the fused step; deps on later steps of the stream
 * are renumbered for the shift. Schedules with nothing to fuse are left untouched.
 *
 * Memory that may overlap: refs of one buffer compare by chunk index (explicit layouts by element
 * range). In place, INPUT and OUTPUT share memory as docs/schedule-ir.md says (all-gather: INPUT
 * is block `rank` of OUTPUT; reduce-scatter: OUTPUT is block `rank` of INPUT; otherwise the same
 * buffer); refs there compare by chunk index when both layouts split blocks alike, and are taken
 * to overlap otherwise.
 *
 * Cost: a stream of at least 256 steps with at least 64 receives that may fuse (the torus plans,
 * the all-to-alls) is fused through an index: the memory units its refs cut each buffer into, with
 * the steps that touch each unit in order, and the steps that send, by peer; O(steps log steps).
 * Other streams, and those with a ref of unknown extent, an empty ref or two chunkings of one
 * buffer, scan from each receive to its partner: O(steps x scan length). Both give the same
 * fusions. Plus one pass over all deps.
 */
#include <stdlib.h>

#include "sched_ir.h"
#include "step_sem.h"

/* Where a ref lies: a memory space (the buffer it aliases to), and an interval in chunk indices
 * of that space (uniform layouts, k chunks per block) or in elements (explicit layouts, k = 0). */
typedef struct {
  int known;
  int space;
  uint32_t k;
  uint64_t begin, end;
} fuseSpan;

static fuseSpan refSpan(const tdSched *s, tdBufRef r) {
  tdBufKind space;
  uint32_t block;
  schedAlias(s, (tdBufKind)r.buf, &space, &block);
  fuseSpan sp = {0, (int)space, 0, 0, 0};
  uint64_t block_off = block;
  if (r.buf >= TD_NUM_BUFS) return sp;
  const tdLayout *l = &s->layout[r.buf];
  if (l->offsets) {
    if (schedRefRange(s, r, 0, &sp.begin, &sp.end) != tpudistSuccess) return sp;
  } else {
    sp.k = l->chunks_per_block;
    sp.begin = r.chunk + block_off * sp.k;
    sp.end = sp.begin + r.nchunks;
  }
  sp.known = 1;
  return sp;
}

static int spansOverlap(fuseSpan a, fuseSpan b) {
  if (!a.known || !b.known) return 1;
  if (a.space != b.space) return 0;
  if (a.k != b.k) return 1;
  return a.begin < b.end && b.begin < a.end;
}

static int spanCovers(fuseSpan a, fuseSpan d) {
  return a.known && d.known && a.space == d.space && a.k == d.k && a.begin <= d.begin &&
         a.end >= d.end;
}

static int stepWrites(const tdSched *s, const tdStep *st, fuseSpan d) {
  return (tdStepSemTable[st->op].flags & TD_SEM_WRITE_DST) && spansOverlap(refSpan(s, st->dst), d);
}

static int stepReads(const tdSched *s, const tdStep *st, fuseSpan d) {
  unsigned f = tdStepSemTable[st->op].flags;
  return ((f & TD_SEM_READ_SRC) && spansOverlap(refSpan(s, st->src), d)) ||
         ((f & TD_SEM_READ_DST) && spansOverlap(refSpan(s, st->dst), d));
}

static int depsContain(const tdDep deps[2], tdDep d) {
  if (d.stream == TD_NO_DEP) return 1;
  for (int k = 0; k < 2; k++)
    if (deps[k].stream == d.stream && deps[k].step == d.step) return 1;
  return 0;
}

/* Steps after the SEND j: nothing may read D before a step overwrites all of it. */
static int laterReadersOk(const tdSched *s, const tdStream *st, const uint8_t *removed, uint32_t j,
                          fuseSpan d) {
  for (uint32_t k = j + 1; k < st->nsteps; k++) {
    const tdStep *y = &st->steps[k];
    if (removed[k]) continue;
    if (stepWrites(s, y, d)) {
      /* it waited for the SEND before, and waits as long for the fused step now */
      if (spanCovers(refSpan(s, y->dst), d)) return 1;
    } else if (stepReads(s, y, d)) {
      return 0;
    }
  }
  return 1;
}

/* The index (see the top comment). The spans of a stream cut each buffer space into units (the
 * intervals between consecutive span ends); each unit lists the steps that touch it, in order, so
 * "the next step after i that reads or writes memory overlapping D" is the first entry after i
 * over D's units. A stream with a span of unknown extent, an empty span (the overlap rule treats
 * those specially), two chunkings of one space or more than TD_FUSE_INDEX_FANOUT units per step
 * on average is scanned instead. */
#define TD_FUSE_INDEX_FANOUT 16
#define TD_FUSE_INDEX_MIN_STEPS 256 /* shorter streams are scanned, */
#define TD_FUSE_INDEX_MIN_RECVS 64  /* and those with fewer receives that may fuse */
#define TD_FUSE_NONE UINT32_MAX

typedef struct {
  const tdSched *s;
  fuseSpan *dst;  /* per step: its dst span */
  uint64_t *ends; /* span ends (space << 62 | offset), sorted, unique: unit u is ends[u .. u+1) */
  uint32_t nends;
  uint32_t *unit_first; /* per unit: its entries in unit_steps (nends + 1) */
  uint32_t *unit_steps;
  uint64_t *sends;    /* steps that send, as peer << 32 | step, sorted */
  uint32_t *send_pos; /* per step: its entry in sends[] */
  uint32_t *alive;    /* per entry of sends[]: the next entry at or after it not removed (a
                         disjoint-set forest with path halving); nsends = none */
  uint32_t nsends;
} fuseIndex;

#define TD_FUSE_END(space, v) ((uint64_t)(space) << 62 | (v))

static int endCmp(const void *x, const void *y) {
  uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
  return a < b ? -1 : (a > b);
}

/* A send as (peer << 32 | step): sorted, the sends by (peer, step). */
static int sendCmp(const void *x, const void *y) {
  uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
  return a < b ? -1 : (a > b);
}

static void indexFree(fuseIndex *x) {
  free(x->dst);
  free(x->ends);
  free(x->unit_first);
  free(x->unit_steps);
  free(x->sends);
  free(x->send_pos);
  free(x->alive);
}

static uint32_t aliveFind(uint32_t *alive, uint32_t e) {
  while (alive[e] != e) {
    alive[e] = alive[alive[e]];
    e = alive[e];
  }
  return e;
}

/* The spans step i touches: 0, 1 or 2. */
static int touched(const fuseIndex *x, const tdStream *st, uint32_t i, fuseSpan *out) {
  unsigned f = tdStepSemTable[st->steps[i].op].flags;
  int n = 0;
  if (f & TD_SEM_READ_SRC) out[n++] = refSpan(x->s, st->steps[i].src);
  if (f & (TD_SEM_READ_DST | TD_SEM_WRITE_DST)) out[n++] = x->dst[i];
  return n;
}

static uint32_t unitOf(const fuseIndex *x, int space, uint64_t v) {
  uint64_t key = TD_FUSE_END(space, v);
  uint32_t lo = 0, hi = x->nends;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (x->ends[mid] < key)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

/* Spans per step and the units; 0 if the stream must be scanned. */
static int indexSpans(const tdSched *s, const tdStream *st, fuseIndex *x) {
  uint32_t k_of[TD_NUM_BUFS] = {0};
  int k_set[TD_NUM_BUFS] = {0};
  for (uint32_t i = 0; i < st->nsteps; i++) {
    x->dst[i] = refSpan(s, st->steps[i].dst);
    fuseSpan t[2];
    for (int e = 0, m = touched(x, st, i, t); e < m; e++) {
      int sp = t[e].space;
      if (!t[e].known || t[e].begin >= t[e].end || t[e].end >> 62 || sp < 0 || sp >= TD_NUM_BUFS)
        return 0;
      if (k_set[sp] && k_of[sp] != t[e].k) return 0;
      k_set[sp] = 1, k_of[sp] = t[e].k;
      x->ends[x->nends++] = TD_FUSE_END(sp, t[e].begin);
      x->ends[x->nends++] = TD_FUSE_END(sp, t[e].end);
    }
  }
  if (x->nends) qsort(x->ends, x->nends, sizeof(uint64_t), endCmp);
  uint32_t u = 0;
  for (uint32_t e = 0; e < x->nends; e++)
    if (u == 0 || x->ends[u - 1] != x->ends[e]) x->ends[u++] = x->ends[e];
  x->nends = u;
  return 1;
}

/* The units step i touches, as up to two ranges [lo, hi) (merged when they overlap). */
static int stepUnits(const fuseIndex *x, const tdStream *st, uint32_t i, uint32_t *lo,
                     uint32_t *hi) {
  fuseSpan t[2];
  int m = touched(x, st, i, t);
  for (int e = 0; e < m; e++) {
    lo[e] = unitOf(x, t[e].space, t[e].begin);
    hi[e] = unitOf(x, t[e].space, t[e].end);
  }
  if (m == 2 && lo[0] < hi[1] && lo[1] < hi[0]) {
    lo[0] = TD_MIN(lo[0], lo[1]);
    hi[0] = TD_MAX(hi[0], hi[1]);
    m = 1;
  }
  return m;
}

/* Per unit, the steps touching it, in order; 0 past the fan-out bound or out of memory. */
static int indexUnits(const tdStream *st, fuseIndex *x) {
  uint32_t n = st->nsteps, lo[2], hi[2];
  if (!(x->unit_first = calloc((size_t)x->nends + 1, sizeof(uint32_t)))) return 0;
  uint64_t total = 0;
  for (uint32_t i = 0; i < n; i++)
    for (int e = 0, m = stepUnits(x, st, i, lo, hi); e < m; e++) {
      total += hi[e] - lo[e];
      for (uint32_t q = lo[e]; q < hi[e]; q++) x->unit_first[q + 1]++;
      if (total > (uint64_t)TD_FUSE_INDEX_FANOUT * n + 64) return 0;
    }
  for (uint32_t q = 0; q < x->nends; q++) x->unit_first[q + 1] += x->unit_first[q];
  if (!(x->unit_steps = malloc(sizeof(uint32_t) * (total + 1)))) return 0;
  for (uint32_t i = 0; i < n; i++) /* fill with unit_first[q] as the cursor, then shift back */
    for (int e = 0, m = stepUnits(x, st, i, lo, hi); e < m; e++)
      for (uint32_t q = lo[e]; q < hi[e]; q++) x->unit_steps[x->unit_first[q]++] = i;
  for (uint32_t q = x->nends; q > 0; q--) x->unit_first[q] = x->unit_first[q - 1];
  x->unit_first[0] = 0;
  return 1;
}

/* Builds the index; 0 if the stream must be scanned (or memory is short). */
static int indexBuild(const tdSched *s, const tdStream *st, fuseIndex *x) {
  uint32_t n = st->nsteps;
  *x = (fuseIndex){.s = s};
  x->dst = malloc(sizeof(fuseSpan) * n);
  x->ends = malloc(sizeof(uint64_t) * 4 * (size_t)n);
  x->sends = malloc(sizeof(uint64_t) * n);
  x->send_pos = malloc(sizeof(uint32_t) * n);
  x->alive = malloc(sizeof(uint32_t) * (n + 1));
  if (!x->dst || !x->ends || !x->sends || !x->send_pos || !x->alive || !indexSpans(s, st, x) ||
      !indexUnits(st, x))
    return indexFree(x), 0;
  for (uint32_t i = 0; i < n; i++) {
    int p = schedSendPeer(&st->steps[i]);
    if (p >= 0) x->sends[x->nsends++] = (uint64_t)(uint32_t)p << 32 | i;
  }
  qsort(x->sends, x->nsends, sizeof(uint64_t), sendCmp);
  for (uint32_t e = 0; e <= x->nsends; e++) x->alive[e] = e;
  for (uint32_t e = 0; e < x->nsends; e++) x->send_pos[(uint32_t)x->sends[e]] = e;
  return 1;
}

/* The first step after `after`, not removed, touching a unit of [lo, hi); TD_FUSE_NONE if none. */
static uint32_t nextToucher(const fuseIndex *x, const uint8_t *removed, uint32_t lo, uint32_t hi,
                            uint32_t after) {
  uint32_t best = TD_FUSE_NONE;
  for (uint32_t q = lo; q < hi; q++) {
    uint32_t a = x->unit_first[q], b = x->unit_first[q + 1];
    while (a < b) {
      uint32_t mid = a + (b - a) / 2;
      if (x->unit_steps[mid] <= after)
        a = mid + 1;
      else
        b = mid;
    }
    for (; a < x->unit_first[q + 1] && x->unit_steps[a] < best; a++)
      if (!removed[x->unit_steps[a]]) {
        best = x->unit_steps[a];
        break;
      }
  }
  return best;
}

/* The first entry of sends[] sending to peer from a step after i. */
static uint32_t firstSendAfter(const fuseIndex *x, int peer, uint32_t i) {
  uint64_t key = (uint64_t)(uint32_t)peer << 32 | i;
  uint32_t lo = 0, hi = x->nsends;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (x->sends[mid] <= key)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

/* findPartner through the index: the same rules, the same answer. */
static int findPartnerIndexed(const tdStream *st, fuseIndex *x, const uint8_t *removed, uint32_t i,
                              uint32_t *partner) {
  const tdStep *rcv = &st->steps[i];
  fuseSpan d = x->dst[i];
  uint32_t lo = unitOf(x, d.space, d.begin), hi = unitOf(x, d.space, d.end);
  uint32_t j = nextToucher(x, removed, lo, hi, i);
  if (j == TD_FUSE_NONE) return 0;
  const tdStep *snd = &st->steps[j];
  if (snd->op != TD_STEP_SEND || !schedSameRef(snd->src, rcv->dst)) return 0;
  /* no send to the same peer between i and j: the first live one of that peer after i is j */
  if (aliveFind(x->alive, firstSendAfter(x, snd->peer, i)) != x->send_pos[j]) return 0;
  if (!depsContain(rcv->deps, snd->deps[0]) || !depsContain(rcv->deps, snd->deps[1])) return 0;
  for (uint32_t k = nextToucher(x, removed, lo, hi, j); k != TD_FUSE_NONE;
       k = nextToucher(x, removed, lo, hi, k)) { /* later readers, as laterReadersOk */
    int writes =
        (tdStepSemTable[st->steps[k].op].flags & TD_SEM_WRITE_DST) && spansOverlap(x->dst[k], d);
    if (!writes) return 0;
    if (spanCovers(x->dst[k], d)) break;
  }
  *partner = j;
  return 1;
}

/* The SEND after receive i that fuses with it, by the rules above; 0 if none. */
static int findPartner(const tdSched *s, const tdStream *st, const uint8_t *removed, uint32_t i,
                       uint32_t *partner) {
  const tdStep *rcv = &st->steps[i];
  fuseSpan d = refSpan(s, rcv->dst);
  uint32_t j = i + 1;
  for (; j < st->nsteps; j++) {
    const tdStep *x = &st->steps[j];
    if (removed[j]) continue;
    if (x->op == TD_STEP_SEND && schedSameRef(x->src, rcv->dst)) break;
    if (stepWrites(s, x, d) || stepReads(s, x, d)) return 0;
  }
  if (j == st->nsteps) return 0;
  const tdStep *snd = &st->steps[j];
  for (uint32_t k = i + 1; k < j; k++)
    if (!removed[k] && schedSendPeer(&st->steps[k]) == snd->peer) return 0;
  if (!depsContain(rcv->deps, snd->deps[0]) || !depsContain(rcv->deps, snd->deps[1])) return 0;
  if (!laterReadersOk(s, st, removed, j, d)) return 0;
  *partner = j;
  return 1;
}

static void renumberDeps(tdSched *s, uint32_t stream, const uint32_t *map, uint32_t n) {
  for (uint32_t t = 0; t < s->nstreams; t++)
    for (uint32_t k = 0; k < s->streams[t].nsteps; k++)
      for (int d = 0; d < 2; d++) {
        tdDep *dep = &s->streams[t].steps[k].deps[d];
        if (dep->stream == stream && dep->step < n) dep->step = map[dep->step];
      }
}

/* Marks the steps of stream si that some step of another stream depends on. */
static void markDepTargets(const tdSched *s, uint32_t si, uint8_t *target, uint32_t n) {
  for (uint32_t t = 0; t < s->nstreams; t++)
    for (uint32_t k = 0; k < s->streams[t].nsteps; k++)
      for (int d = 0; d < 2; d++) {
        const tdDep *dep = &s->streams[t].steps[k].deps[d];
        if (dep->stream == si && dep->step < n) target[dep->step] = 1;
      }
}

/* Removes the marked steps and renumbers deps; map[j] holds the fused step's old index for each
 * removed j on entry. */
static void compact(tdSched *s, uint32_t si, const uint8_t *removed, uint32_t *map) {
  tdStream *st = &s->streams[si];
  uint32_t n = st->nsteps, out = 0;
  for (uint32_t i = 0; i < n; i++) {
    if (removed[i]) continue;
    st->steps[out] = st->steps[i];
    map[i] = out++;
  }
  for (uint32_t i = 0; i < n; i++)
    if (removed[i]) map[i] = map[map[i]]; /* the fused step's old index is < i, already mapped */
  st->nsteps = out;
  renumberDeps(s, si, map, n);
}

/* Fuses within stream si; returns 0 if out of memory (the stream is then unchanged). */
static int fuseStream(tdSched *s, uint32_t si) {
  tdStream *st = &s->streams[si];
  uint32_t n = st->nsteps;
  if (n < 2) return 1;
  uint8_t *removed = calloc(n, 2);
  uint32_t *map = malloc(sizeof(uint32_t) * n);
  if (!removed || !map) {
    free(removed);
    free(map);
    return 0;
  }
  uint8_t *target = removed + n;
  markDepTargets(s, si, target, n);
  int any = 0;
  fuseIndex x;
  uint32_t cand = 0; /* receives that may fuse: a few are scanned, many use the index */
  for (uint32_t i = 0; i < n; i++)
    cand +=
        !target[i] && (st->steps[i].op == TD_STEP_RECV || st->steps[i].op == TD_STEP_RECV_REDUCE);
  int indexed =
      n >= TD_FUSE_INDEX_MIN_STEPS && cand >= TD_FUSE_INDEX_MIN_RECVS && indexBuild(s, st, &x);
  for (uint32_t i = 0; i < n; i++) map[i] = i;
  for (uint32_t i = 0; i < n; i++) {
    tdStep *rcv = &st->steps[i];
    uint32_t j;
    if (rcv->op != TD_STEP_RECV && rcv->op != TD_STEP_RECV_REDUCE) continue;
    if (target[i]) continue;
    if (indexed ? !findPartnerIndexed(st, &x, removed, i, &j) : !findPartner(s, st, removed, i, &j))
      continue;
    rcv->op = rcv->op == TD_STEP_RECV ? TD_STEP_RECV_COPY_SEND : TD_STEP_RECV_REDUCE_SEND;
    rcv->peer2 = st->steps[j].peer;
    removed[j] = 1;
    if (indexed) x.alive[x.send_pos[j]] = x.send_pos[j] + 1;
    map[j] = i;
    any = 1;
  }
  if (indexed) indexFree(&x);
  if (any) compact(s, si, removed, map);
  free(removed);
  free(map);
  return 1;
}

void schedFuse(tdSched *s) {
  for (uint32_t si = 0; si < s->nstreams && si < TD_MAX_STREAMS; si++) fuseStream(s, si);
}
