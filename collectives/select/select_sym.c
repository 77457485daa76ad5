/*
 * select_sym.c - pod-scale selection's symmetries (select_sym.h): translations of a wrapped torus,
 * cyclic shifts and exclusive-or of rank numbers. A symmetry is checked, not assumed: the plans of
 * sample ranks (a diagonal translate; rank 1 and the last) must have rank 0's messages with every
 * peer mapped (isImage); then rank 0's plan stands for every rank (costPlanCreateSym).
 */
#include "select_sym.h"

#include <stdlib.h>
#include <string.h>

#include "algos.h"
#include "step_sem.h"

#define TD_SELECT_SYM_FUSE_STEPS 2048 /* fuse rank 0's plan up to this size (as cost.c) */

/* The rank set a symmetry acts on. */
typedef struct {
  const tdTopo *topo;
  int nranks;
} symSet;

/* Symmetries of the rank set. */
typedef enum { SYM_TORUS = 0, SYM_SHIFT, SYM_XOR, SYM_NONE } selSym;

/* The image of rank q under the symmetry of kind k that maps 0 to rank g. */
static int symImage(const symSet *t, selSym k, int g, int q) {
  int cg[TD_MAX_DIMS], cq[TD_MAX_DIMS];
  switch (k) {
    case SYM_TORUS:
      topoRankToCoords(t->topo, g, cg);
      topoRankToCoords(t->topo, q, cq);
      return topoTranslate(t->topo, cg, cq, NULL);
    case SYM_SHIFT:
      return (int)(((int64_t)q + g) % t->nranks);
    default:
      return q ^ g;
  }
}

/* Rank 0's peer for the message it receives from q (cost.h, costPlanCreateSym). */
static int symMirror(const symSet *t, selSym k, int q) {
  int c[TD_MAX_DIMS];
  switch (k) {
    case SYM_TORUS:
      topoRankToCoords(t->topo, q, c);
      for (int a = 0; a < TD_MAX_DIMS; a++) c[a] = -c[a];
      return topoTranslate(t->topo, NULL, c, NULL);
    case SYM_SHIFT:
      return (t->nranks - q) % t->nranks;
    default:
      return q;
  }
}

static int symAvailable(const symSet *t, selSym k) {
  if (k == SYM_XOR) return (t->nranks & (t->nranks - 1)) == 0;
  if (k == SYM_SHIFT) return 1;
  if (t->topo->ndims == 0) return 0; /* flat: shifts are its translations */
  for (int a = 0; a < t->topo->ndims; a++)
    if (t->topo->dims[a] > 1 && !t->topo->wrap[a]) return 0;
  return 1;
}

/* Sample ranks g for checking a symmetry: one step along every torus axis at once (the
 * diagonal), or rank 1 and the last rank. */
static int symSamples(const symSet *t, selSym k, int *g) {
  if (k == SYM_TORUS) {
    int d[TD_MAX_DIMS] = {1, 1, 1, 1};
    g[0] = topoTranslate(t->topo, NULL, d, NULL);
    return 1;
  }
  g[0] = 1;
  g[1] = t->nranks - 1;
  return t->nranks > 2 ? 2 : 1;
}

/* A message step reduced to what the symmetric cost sees of it: sends, receives, the size of
 * what goes on the wire, peers (mapped). */
typedef struct {
  int wire, send, recv;
  uint32_t n;
} selKey;

static int keyCmp(const void *a, const void *b) {
  return memcmp(a, b, sizeof(selKey));
}

static int mapPeer(const int *map, int nranks, int peer) {
  return map && peer >= 0 && peer < nranks ? map[peer] : peer;
}

static selKey stepKey(const int *map, int nranks, const tdStep *p) {
  selKey e;
  memset(&e, 0, sizeof(e));
  e.wire = (int)(tdStepSemTable[p->op].flags & (TD_SEM_WIRE_IN | TD_SEM_WIRE_OUT));
  e.n = (tdStepSemTable[p->op].flags & TD_SEM_WIRE_OUT) ? schedWireRef(p).nchunks : p->dst.nchunks;
  e.send = mapPeer(map, nranks, schedSendPeer(p));
  e.recv = mapPeer(map, nranks, schedRecvPeer(p));
  return e;
}

/* What isImage compares of a plan: stream for stream its message steps as keys (peers mapped by
 * map, NULL: as they are), each run of one kind sorted; per buffer its chunks per block (-1: the
 * layout has offsets). A few bytes per message step, so that two plans need not be held at once
 * (the torus all-to-all's is 27 MB at 9,216 ranks). */
typedef struct {
  uint32_t nstreams;
  size_t *first; /* nstreams + 1 */
  selKey *keys;
  int64_t cpb[TD_NUM_BUFS];
} selImage;

static void imageFree(selImage *im) {
  free(im->first);
  free(im->keys);
  memset(im, 0, sizeof(*im));
}

static tpudistResult_t imageOf(const tdSched *x, const int *map, int nranks, selImage *im) {
  size_t n = 0;
  for (uint32_t si = 0; si < x->nstreams; si++) n += x->streams[si].nsteps;
  im->nstreams = x->nstreams;
  im->first = malloc(sizeof(size_t) * (x->nstreams + 1));
  im->keys = malloc(sizeof(selKey) * (n + 1));
  if (!im->first || !im->keys) return tpudistNoMemory;
  for (int b = 0; b < TD_NUM_BUFS; b++)
    im->cpb[b] = x->layout[b].offsets ? -1 : (int64_t)x->layout[b].chunks_per_block;
  size_t m = 0;
  for (uint32_t si = 0; si < x->nstreams; si++) {
    const tdStream *a = &x->streams[si];
    im->first[si] = m;
    for (uint32_t i = 0; i < a->nsteps; i++)
      if (tdStepSemTable[a->steps[i].op].flags & (TD_SEM_WIRE_IN | TD_SEM_WIRE_OUT))
        im->keys[m++] = stepKey(map, nranks, &a->steps[i]);
    for (size_t i = im->first[si], j = i; i < m; i = j) {
      while (j < m && im->keys[j].wire == im->keys[i].wire) j++;
      qsort(im->keys + i, j - i, sizeof(selKey), keyCmp);
    }
  }
  im->first[x->nstreams] = m;
  return tpudistSuccess;
}

/* 1 if y (rank g's plan, its peers mapped back to rank 0's by the symmetry's inverse) is x (rank
 * 0's) under the symmetry, as far as messages go: stream for stream the same kinds of message
 * step (send, receive, both) in the same order, and within each run of one kind the same messages
 * (sizes in chunks, mapped peers) in any order. Generators may order a round by rank number (the
 * torus all-to-all does) or give partners different local work (recursive doubling reduces in a
 * fixed order: the upper partner has an extra local step); the symmetric cost then takes rank 0's
 * plan for every rank. */
static int isImage(const selImage *x, const selImage *y) {
  if (x->nstreams != y->nstreams) return 0;
  for (int b = 0; b < TD_NUM_BUFS; b++)
    if (x->cpb[b] < 0 || x->cpb[b] != y->cpb[b]) return 0;
  for (uint32_t si = 0; si <= x->nstreams; si++)
    if (x->first[si] != y->first[si]) return 0;
  return memcmp(x->keys, y->keys, sizeof(selKey) * x->first[x->nstreams]) == 0;
}

/* Does the symmetry of kind k map rank 0's plan to its samples' (symSamples)? Every sample is
 * generated, taken as its image under the inverse (map) and freed before rank 0's plan x is
 * generated (once, *made; xi its image), so that the two are not held at once. */
static tpudistResult_t symCheck(const symSet *t, const tdCollArgs *base, const char *algo, selSym k,
                                tdSched *x, int *made, selImage *xi, int *map, int *ok, char *err) {
  char why[TD_ERRLEN];
  int g[2], n = symAvailable(t, k) ? symSamples(t, k, g) : 0;
  selImage yi[2];
  memset(yi, 0, sizeof(yi));
  tpudistResult_t r = tpudistSuccess;
  *ok = n > 0;
  for (int j = 0; j < n && *ok && r == tpudistSuccess; j++) {
    tdCollArgs a = *base;
    a.rank = g[j];
    tdSched y;
    tpudistResult_t ry = algoGenerate(&a, algo, &y, why);
    if (ry == tpudistNoMemory) r = ry;
    *ok = ry == tpudistSuccess;
    if (!*ok) break;
    for (int q = 0; q < t->nranks && *ok; q++) {
      int im = symImage(t, k, g[j], q); /* a bijection of the ranks */
      *ok = im >= 0 && im < t->nranks;
      if (*ok) map[im] = q;
    }
    if (*ok) r = imageOf(&y, map, t->nranks, &yi[j]);
    schedFree(&y);
  }
  if (r == tpudistSuccess && *ok && !*made) {
    r = algoGenerate(base, algo, x, err);
    *made = r == tpudistSuccess;
    if (*made) r = imageOf(x, NULL, t->nranks, xi);
  }
  for (int j = 0; j < n && r == tpudistSuccess && *ok; j++) *ok = isImage(xi, &yi[j]);
  for (int j = 0; j < n; j++) imageFree(&yi[j]);
  return r;
}

/* select_sym.h. */
tpudistResult_t selectSymPlan(const tdTopo *topo, int nranks, const tdCollArgs *base,
                              const char *algo, int exact, tdCostPlan **p, char *err) {
  const symSet set = {topo, nranks}, *t = &set;
  *p = NULL;
  tdSched *x = calloc(1, sizeof(tdSched));
  int *map = malloc(sizeof(int) * (size_t)t->nranks), made = 0, ok = 0;
  selImage xi;
  memset(&xi, 0, sizeof(xi));
  tpudistResult_t r = x && map ? tpudistSuccess : tpudistNoMemory;
  selSym k = SYM_TORUS;
  for (int i = SYM_TORUS; i < (exact ? SYM_SHIFT : SYM_NONE) && r == tpudistSuccess && !ok; i++) {
    k = (selSym)i;
    r = symCheck(t, base, algo, k, x, &made, &xi, map, &ok, err);
  }
  imageFree(&xi);
  if (r == tpudistSuccess && ok) {
    for (int q = 0; q < t->nranks; q++) map[q] = symMirror(t, k, q);
    uint64_t steps = 0;
    for (uint32_t i = 0; i < x->nstreams; i++) steps += x->streams[i].nsteps;
    if (steps <= TD_SELECT_SYM_FUSE_STEPS) schedFuse(x); /* as costPlanGenerate does */
    r = costPlanCreateSym(t->topo, t->nranks, x, map, p, err);
    x = NULL, made = 0; /* owned by the plan, also on failure */
  }
  if (made) schedFree(x);
  free(x);
  free(map);
  return r;
}
