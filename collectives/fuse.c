/*
 * fuse.c - the fusion pass: within one stream, a RECV (RECV_REDUCE) whose dst a later SEND of
 * the same stream puts on the wire unchanged becomes one RECV_COPY_SEND (RECV_REDUCE_SEND) with
 * peer2 = the send's peer, and the SEND is removed. The executor then forwards each piece as it
 * lands (pipelined recv-reduce-send) instead of waiting for the whole receive.
 *
 * A receive at position i fuses with the first SEND j > i whose src equals its dst exactly
 * (buffer, chunk, count) when, looking at the steps between them (as already fused):
 *  - none writes a range that may overlap dst (same buffer and intersecting chunks; with
 *    inplace, INPUT and OUTPUT are taken to overlap), so the data sent is the data received;
 *  - none sends to the SEND's peer, so the messages to that peer keep their order (the match
 *    key's ordinal is the position among messages on the stream to that peer);
 *  - the deps of both steps fit the fused step's two slots (duplicates merge).
 * The fused step keeps the receive's position; it completes when both its receive and its send
 * have. Deps that named the removed SEND now name the fused step; deps on later steps of the
 * stream are renumbered for the shift. Schedules with nothing to fuse are left untouched.
 * Cost: O(steps x distance between a receive and its send) per stream, one map per stream.
 */
#include <stdlib.h>

#include "sched_ir.h"

static int refsEqual(tdBufRef a, tdBufRef b) {
  return a.buf == b.buf && a.chunk == b.chunk && a.nchunks == b.nchunks;
}

static int refsMayOverlap(const tdSched *s, tdBufRef a, tdBufRef b) {
  if (a.buf != b.buf) {
    int io = (a.buf == TD_BUF_INPUT || a.buf == TD_BUF_OUTPUT) &&
             (b.buf == TD_BUF_INPUT || b.buf == TD_BUF_OUTPUT);
    return s->inplace && io;
  }
  return a.chunk < b.chunk + b.nchunks && b.chunk < a.chunk + a.nchunks;
}

/* Adds dep to deps (two slots) unless present; 0 if it does not fit. */
static int depAdd(tdDep deps[2], tdDep d) {
  if (d.stream == TD_NO_DEP) return 1;
  for (int k = 0; k < 2; k++)
    if (deps[k].stream == d.stream && deps[k].step == d.step) return 1;
  for (int k = 0; k < 2; k++)
    if (deps[k].stream == TD_NO_DEP) {
      deps[k] = d;
      return 1;
    }
  return 0;
}

/* The first live SEND after i that sends i's dst on, if the steps between allow fusing. */
static int findPartner(const tdSched *s, const tdStream *st, const uint8_t *removed, uint32_t i,
                       uint32_t *partner) {
  tdBufRef d = st->steps[i].dst;
  for (uint32_t j = i + 1; j < st->nsteps; j++) {
    if (removed[j]) continue;
    const tdStep *x = &st->steps[j];
    if (x->op == TD_STEP_SEND && refsEqual(x->src, d)) {
      /* no writer of d between (checked below as the scan went); no send to the same peer */
      for (uint32_t k = i + 1; k < j; k++)
        if (!removed[k] && schedSendPeer(&st->steps[k]) == x->peer) return 0;
      *partner = j;
      return 1;
    }
    if ((tdStepSemTable[x->op].flags & TD_SEM_WRITE_DST) && refsMayOverlap(s, x->dst, d)) return 0;
  }
  return 0;
}

/* Merges SEND j into receive i if their deps fit; returns 1 if fused. */
static int fuseInto(tdStep *recv, const tdStep *send) {
  tdDep deps[2] = {recv->deps[0], recv->deps[1]};
  if (!depAdd(deps, send->deps[0]) || !depAdd(deps, send->deps[1])) return 0;
  recv->op = recv->op == TD_STEP_RECV ? TD_STEP_RECV_COPY_SEND : TD_STEP_RECV_REDUCE_SEND;
  recv->peer2 = send->peer;
  recv->deps[0] = deps[0];
  recv->deps[1] = deps[1];
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

/* Fuses within stream si; returns 0 if out of memory (the stream is then unchanged). */
static int fuseStream(tdSched *s, uint32_t si) {
  tdStream *st = &s->streams[si];
  uint32_t n = st->nsteps;
  if (n < 2) return 1;
  uint8_t *removed = calloc(n, 1);
  uint32_t *map = malloc(sizeof(uint32_t) * n);
  if (!removed || !map) {
    free(removed);
    free(map);
    return 0;
  }
  int any = 0;
  for (uint32_t i = 0; i < n; i++) map[i] = i;
  for (uint32_t i = 0; i < n; i++) {
    uint8_t op = st->steps[i].op;
    if (removed[i] || (op != TD_STEP_RECV && op != TD_STEP_RECV_REDUCE)) continue;
    uint32_t j;
    if (findPartner(s, st, removed, i, &j) && fuseInto(&st->steps[i], &st->steps[j])) {
      removed[j] = 1;
      map[j] = i; /* old index for now; made new below */
      any = 1;
    }
  }
  if (any) {
    uint32_t out = 0;
    for (uint32_t i = 0; i < n; i++) {
      if (removed[i]) continue;
      st->steps[out] = st->steps[i];
      map[i] = out++;
    }
    for (uint32_t i = 0; i < n; i++)
      if (removed[i]) map[i] = map[map[i]]; /* map[i] held the fused step's old index < i */
    st->nsteps = out;
    renumberDeps(s, si, map, n);
  }
  free(removed);
  free(map);
  return 1;
}

void schedFuse(tdSched *s) {
  for (uint32_t si = 0; si < s->nstreams && si < TD_MAX_STREAMS; si++) fuseStream(s, si);
}
