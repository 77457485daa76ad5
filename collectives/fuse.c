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
 * to overlap otherwise. Cost: O(steps x scan length) per stream, plus one pass over all deps.
 */
#include <stdlib.h>

#include "sched_ir.h"

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
  for (uint32_t i = 0; i < n; i++) map[i] = i;
  for (uint32_t i = 0; i < n; i++) {
    tdStep *rcv = &st->steps[i];
    uint32_t j;
    if (rcv->op != TD_STEP_RECV && rcv->op != TD_STEP_RECV_REDUCE) continue;
    if (target[i] || !findPartner(s, st, removed, i, &j)) continue;
    rcv->op = rcv->op == TD_STEP_RECV ? TD_STEP_RECV_COPY_SEND : TD_STEP_RECV_REDUCE_SEND;
    rcv->peer2 = st->steps[j].peer;
    removed[j] = 1;
    map[j] = i;
    any = 1;
  }
  if (any) compact(s, si, removed, map);
  free(removed);
  free(map);
  return 1;
}

void schedFuse(tdSched *s) {
  for (uint32_t si = 0; si < s->nstreams && si < TD_MAX_STREAMS; si++) fuseStream(s, si);
}
