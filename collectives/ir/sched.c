/*
 * sched.c - building schedules: init/free, layouts, appending steps, step builders, names.
 */
#include <stdlib.h>
#include <string.h>

#include "sched_ir.h"
#include "step_sem.h"

static const char *const collNames[TD_NUM_COLLS] = {"allreduce", "broadcast",     "reduce",
                                                    "allgather", "reducescatter", "alltoall",
                                                    "alltoallv", "sendrecv"};
static const char *const bufNames[TD_NUM_BUFS] = {"input", "output", "scratch"};

const char *schedCollName(tdColl c) {
  return (unsigned)c < TD_NUM_COLLS ? collNames[c] : "unknown";
}

int schedCollFromName(const char *name) {
  for (int c = 0; c < TD_NUM_COLLS; c++)
    if (name && strcmp(name, collNames[c]) == 0) return c;
  return -1;
}

const char *schedBufName(tdBufKind b) {
  return (unsigned)b < TD_NUM_BUFS ? bufNames[b] : "unknown";
}

void schedInit(tdSched *s, const tdCollArgs *args, const char *algo) {
  memset(s, 0, sizeof(*s));
  s->version = TD_SCHED_VERSION;
  s->coll = args->coll;
  snprintf(s->algo, sizeof(s->algo), "%s", algo ? algo : "");
  s->nranks = args->nranks;
  s->rank = args->rank;
  s->root = args->root;
  s->inplace = args->inplace;
  s->count = args->coll == TD_COLL_ALLTOALLV ? 0 : args->count;
}

int schedSameRef(tdBufRef a, tdBufRef b) {
  return a.buf == b.buf && a.chunk == b.chunk && a.nchunks == b.nchunks;
}

static int sameStep(const tdStep *x, const tdStep *y) {
  if (x->op != y->op || x->peer != y->peer || x->peer2 != y->peer2 ||
      !schedSameRef(x->src, y->src) || !schedSameRef(x->dst, y->dst))
    return 0;
  for (int d = 0; d < 2; d++)
    if (x->deps[d].stream != y->deps[d].stream ||
        (x->deps[d].stream != TD_NO_DEP && x->deps[d].step != y->deps[d].step))
      return 0;
  return 1;
}

int schedSameSteps(const tdSched *a, const tdSched *b, int with_layouts) {
  if (a->nstreams != b->nstreams) return 0;
  if (with_layouts) {
    if (a->needs_reduce != b->needs_reduce) return 0;
    for (int k = 0; k < TD_NUM_BUFS; k++)
      if (a->layout[k].nblocks != b->layout[k].nblocks ||
          a->layout[k].chunks_per_block != b->layout[k].chunks_per_block)
        return 0;
  }
  for (uint32_t s = 0; s < a->nstreams; s++) {
    if (a->streams[s].nsteps != b->streams[s].nsteps) return 0;
    for (uint32_t i = 0; i < a->streams[s].nsteps; i++)
      if (!sameStep(&a->streams[s].steps[i], &b->streams[s].steps[i])) return 0;
  }
  return 1;
}

void schedFree(tdSched *s) {
  for (uint32_t i = 0; i < TD_MAX_STREAMS; i++) free(s->streams[i].steps);
  for (int b = 0; b < TD_NUM_BUFS; b++) {
    free(s->layout[b].offsets);
    free(s->layout[b].counts);
  }
  memset(s, 0, sizeof(*s));
}

void schedSetLayout(tdSched *s, tdBufKind buf, uint32_t nblocks, uint32_t chunks_per_block) {
  tdLayout *l = &s->layout[buf];
  free(l->offsets);
  free(l->counts);
  l->offsets = l->counts = NULL;
  l->nblocks = nblocks;
  l->chunks_per_block = chunks_per_block;
}

tpudistResult_t schedSetLayoutExplicit(tdSched *s, tdBufKind buf, uint32_t nblocks,
                                       uint32_t chunks_per_block, const uint64_t *offsets,
                                       const uint64_t *counts) {
  uint64_t *o = malloc(sizeof(uint64_t) * (nblocks ? nblocks : 1));
  uint64_t *c = malloc(sizeof(uint64_t) * (nblocks ? nblocks : 1));
  if (!o || !c) {
    free(o);
    free(c);
    return tpudistNoMemory;
  }
  if (nblocks) {
    memcpy(o, offsets, sizeof(uint64_t) * nblocks);
    memcpy(c, counts, sizeof(uint64_t) * nblocks);
  }
  schedSetLayout(s, buf, nblocks, chunks_per_block);
  s->layout[buf].offsets = o;
  s->layout[buf].counts = c;
  return tpudistSuccess;
}

void schedTrim(tdSched *s) {
  for (uint32_t i = 0; i < s->nstreams; i++) {
    tdStream *st = &s->streams[i];
    if (st->nsteps == st->cap || st->nsteps == 0) continue;
    tdStep *n = realloc(st->steps, sizeof(tdStep) * st->nsteps);
    if (n) st->steps = n, st->cap = st->nsteps; /* else the larger block stays */
  }
}

tpudistResult_t schedAppend(tdSched *s, uint32_t stream, const tdStep *step, uint32_t *idx) {
  if (stream >= TD_MAX_STREAMS) return tpudistInternalError;
  tdStream *st = &s->streams[stream];
  if (st->nsteps == st->cap) {
    uint32_t cap = st->cap ? st->cap * 2 : 16;
    tdStep *n = realloc(st->steps, sizeof(tdStep) * cap);
    if (!n) return tpudistNoMemory;
    st->steps = n;
    st->cap = cap;
  }
  st->steps[st->nsteps] = *step;
  if (idx) *idx = st->nsteps;
  st->nsteps++;
  if (stream + 1 > s->nstreams) s->nstreams = stream + 1;
  if (tdStepSemTable[step->op].flags & TD_SEM_REDUCES) s->needs_reduce = 1;
  return tpudistSuccess;
}

static tdStep stepBase(tdStepOp op, int peer) {
  tdStep st;
  memset(&st, 0, sizeof(st));
  st.op = (uint8_t)op;
  st.peer = peer;
  st.peer2 = -1;
  st.deps[0].stream = st.deps[1].stream = TD_NO_DEP;
  return st;
}

tdStep schedSend(int peer, tdBufRef src) {
  tdStep st = stepBase(TD_STEP_SEND, peer);
  st.src = src;
  return st;
}

tdStep schedRecv(int peer, tdBufRef dst) {
  tdStep st = stepBase(TD_STEP_RECV, peer);
  st.dst = dst;
  return st;
}

tdStep schedRecvReduce(int peer, tdBufRef src, tdBufRef dst) {
  tdStep st = stepBase(TD_STEP_RECV_REDUCE, peer);
  st.src = src;
  st.dst = dst;
  return st;
}

tdStep schedCopy(tdBufRef src, tdBufRef dst) {
  tdStep st = stepBase(TD_STEP_COPY, -1);
  st.src = src;
  st.dst = dst;
  return st;
}

tdStep schedReduce(tdBufRef src, tdBufRef dst) {
  tdStep st = stepBase(TD_STEP_REDUCE, -1);
  st.src = src;
  st.dst = dst;
  return st;
}
