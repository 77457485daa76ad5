/*
 * torus_rings.c - rings and lines along one torus axis, and reduce-scatter / all-gather over them,
 * emitted as schedule steps on slots (see torus_rings.h). Used by the torus all-reduce,
 * all-gather and reduce-scatter generators.
 *
 * Ring reduce-scatter, direction d, position i of n: step t sends block (i - d(1+t)) to i+d and
 * receive-reduces block (i - d(2+t)) from i-d; after n-1 steps block i is complete. Ring
 * all-gather: step t sends block (i - dt), receives block (i - d(t+1)).
 * Line (no wrap): block b's partial sums flow rightward from position 0 and leftward from n-1,
 * each rank reducing and forwarding; farthest block first so the pipeline fills. Line
 * all-gather: each rank sends its block both ways and forwards what it receives.
 * Every step goes to an adjacent position, so to a torus neighbour.
 */
#include "torus_rings.h"

#include <string.h>

tpudistResult_t torusCheck(const tdTopo *t, int nranks, int *ax, int *nax, char *err) {
  if (!t || t->ndims <= 0)
    return tdErr(err, tpudistNotSupported,
                 "torus algorithms need a torus topology (this one is flat)");
  if (t->nranks != nranks)
    return tdErr(err, tpudistNotSupported, "torus of %d chips does not match %d ranks", t->nranks,
                 nranks);
  *nax = 0;
  for (int a = 0; a < t->ndims; a++) {
    if (t->dims[a] > TDT_MAX_LINE)
      return tdErr(err, tpudistNotSupported, "axis %d longer than %d", a, TDT_MAX_LINE);
    if (t->dims[a] > 1) ax[(*nax)++] = a;
  }
  return tpudistSuccess;
}

int torusFlows(const tdTopo *t, const int *ax, int nax) {
  int ring = 0;
  for (int i = 0; i < nax; i++)
    if (t->wrap[ax[i]] && t->dims[ax[i]] >= 3) ring = 1;
  return nax == 0 ? 1 : nax * (ring ? 2 : 1);
}

void torusFlowOrder(const int *ax, int nax, int f, int *order, int *dir) {
  for (int l = 0; l < nax; l++) order[l] = ax[(f + l) % nax];
  *dir = (nax > 0 && (f / nax) % 2 == 1) ? -1 : 1;
}

/* Twisted n x n x 2n / n x 2n x 2n: n, which of x, y, z are long, and the first long axis. */
static int twistRoles(const tdTopo *t, int *n, int *isLong, int *first) {
  if (!t->twisted || t->ndims < 3) return 0;
  *n = TD_MIN(t->dims[0], TD_MIN(t->dims[1], t->dims[2]));
  *first = -1;
  for (int a = 0; a < 3; a++) {
    isLong[a] = t->dims[a] == 2 * *n;
    if (!isLong[a] && t->dims[a] != *n) return 0;
    if (isLong[a] && *first < 0) *first = a;
  }
  return *first >= 0 && *n >= 2;
}

void torusFlowLevels(const tdTopo *t, const int *order, int nax, tdtLevel *lv) {
  int n, isLong[3], first;
  int tw = twistRoles(t, &n, isLong, &first);
  for (int l = 0; l < nax; l++) lv[l] = (tdtLevel){TDT_LV_AXIS, order[l]};
  if (!tw || nax == 0 || order[0] >= 3 || isLong[order[0]]) return;
  lv[0].kind = TDT_LV_CYCLE;
  for (int l = 1; l < nax; l++)
    if (order[l] == first)
      lv[l].kind = TDT_LV_HALF;
    else if (order[l] < 3 && isLong[order[l]])
      lv[l].kind = TDT_LV_SHIFTED;
}

static int levelSize(const tdTopo *t, const tdtLevel *lv) {
  if (lv->kind == TDT_LV_CYCLE) return 2 * t->dims[lv->axis];
  if (lv->kind == TDT_LV_HALF) return t->dims[lv->axis] / 2;
  return t->dims[lv->axis];
}

int torusLevelPos(const tdTopo *t, const tdtLevel *lv, const int *c) {
  int n, isLong[3], first;
  if (lv->kind == TDT_LV_HALF) return c[lv->axis] % levelSize(t, lv);
  if (lv->kind == TDT_LV_CYCLE && twistRoles(t, &n, isLong, &first))
    return c[lv->axis] + n * (c[first] / n);
  if (lv->kind == TDT_LV_SHIFTED && twistRoles(t, &n, isLong, &first))
    return (c[lv->axis] + 2 * n - n * (c[first] / n)) % (2 * n);
  return c[lv->axis];
}

/* Moves coordinates c to position p of their group at level lv. */
static void levelSet(const tdTopo *t, const tdtLevel *lv, int *c, int p) {
  int n, isLong[3], first;
  if (lv->kind == TDT_LV_HALF) {
    int m = levelSize(t, lv);
    c[lv->axis] = (c[lv->axis] / m) * m + p;
  } else if (lv->kind == TDT_LV_CYCLE && twistRoles(t, &n, isLong, &first)) {
    int flip = p / n != c[first] / n; /* crossing into the other half shifts every long axis */
    c[lv->axis] = p % n;
    for (int b = 0; b < 3 && flip; b++)
      if (isLong[b]) c[b] = (c[b] + n) % (2 * n);
  } else if (lv->kind == TDT_LV_SHIFTED && twistRoles(t, &n, isLong, &first)) {
    c[lv->axis] = (p + n * (c[first] / n)) % (2 * n);
  } else {
    c[lv->axis] = p;
  }
}

tpudistResult_t torusGroupAt(const tdTopo *t, int rank, const tdtLevel *lv, tdtGroup *g,
                             char *err) {
  int c[TD_MAX_DIMS], axis = lv->axis;
  topoRankToCoords(t, rank, c);
  g->n = levelSize(t, lv);
  if (g->n > TDT_MAX_LINE)
    return tdErr(err, tpudistNotSupported, "group longer than %d", TDT_MAX_LINE);
  g->pos = torusLevelPos(t, lv, c);
  for (int j = 0; j < g->n; j++) {
    levelSet(t, lv, c, j);
    g->ranks[j] = topoCoordsToRank(t, c);
  }
  for (int j = 0; j + 1 < g->n; j++)
    if (topoNeighbor(t, g->ranks[j], axis, +1) != g->ranks[j + 1])
      return tdErr(err, tpudistNotSupported, "ranks %d and %d are not linked along axis %d",
                   g->ranks[j], g->ranks[j + 1], axis);
  g->ring = g->n >= 3 && t->wrap[axis] && lv->kind != TDT_LV_HALF &&
            topoNeighbor(t, g->ranks[g->n - 1], axis, +1) == g->ranks[0] &&
            topoNeighbor(t, g->ranks[0], axis, -1) == g->ranks[g->n - 1];
  if (lv->kind == TDT_LV_CYCLE && !g->ring)
    return tdErr(err, tpudistNotSupported, "the twisted cycle along axis %d does not close", axis);
  return tpudistSuccess;
}

tpudistResult_t torusGroup(const tdTopo *t, int rank, int axis, tdtGroup *g, char *err) {
  tdtLevel lv = {TDT_LV_AXIS, axis};
  return torusGroupAt(t, rank, &lv, g, err);
}

static tdBufRef slotIn(const tdtCtx *c, tdtRange r) {
  if (c->map == TDT_MAP_AG)
    return schedRef(TD_BUF_INPUT, r.start - (uint32_t)c->rank * c->k, r.len);
  return schedRef(TD_BUF_INPUT, r.start, r.len);
}

static tdBufRef slotAcc(const tdtCtx *c, tdtRange r) {
  if (c->map == TDT_MAP_RS && r.start / c->k == (uint32_t)c->rank)
    return schedRef(TD_BUF_OUTPUT, r.start - (uint32_t)c->rank * c->k, r.len);
  if (c->map == TDT_MAP_RS) return schedRef(TD_BUF_SCRATCH, r.start, r.len);
  return schedRef(TD_BUF_OUTPUT, r.start, r.len);
}

static tpudistResult_t emitSend(tdtCtx *c, int peer, const tdtBlocks *b, int j) {
  for (int m = b->first[j]; m < b->first[j + 1]; m++) {
    tdtRange r = b->items[m];
    if (!c->touched[r.start] && c->map == TDT_MAP_AG && r.start / c->k != (uint32_t)c->rank)
      return tpudistInternalError; /* sending a slot this rank does not hold */
    tdStep st = schedSend(peer, c->touched[r.start] ? slotAcc(c, r) : slotIn(c, r));
    TD_CHECK(schedAppend(c->s, c->stream, &st, NULL));
  }
  return tpudistSuccess;
}

static tpudistResult_t emitRecv(tdtCtx *c, int peer, const tdtBlocks *b, int j, int reduce) {
  for (int m = b->first[j]; m < b->first[j + 1]; m++) {
    tdtRange r = b->items[m];
    tdBufRef cur = c->touched[r.start] ? slotAcc(c, r) : slotIn(c, r);
    tdStep st = reduce ? schedRecvReduce(peer, cur, slotAcc(c, r)) : schedRecv(peer, slotAcc(c, r));
    TD_CHECK(schedAppend(c->s, c->stream, &st, NULL));
    memset(c->touched + r.start, 1, r.len);
  }
  return tpudistSuccess;
}

static int mod(int a, int n) {
  return ((a % n) + n) % n;
}

static tpudistResult_t ringPhase(tdtCtx *c, const tdtGroup *g, int d, const tdtBlocks *b, int rs) {
  int n = g->n, i = g->pos;
  int next = g->ranks[mod(i + d, n)], prev = g->ranks[mod(i - d, n)];
  for (int t = 0; t + 1 < n; t++) {
    int sj = rs ? mod(i - d * (1 + t), n) : mod(i - d * t, n);
    int rj = rs ? mod(i - d * (2 + t), n) : mod(i - d * (t + 1), n);
    TD_CHECK(emitSend(c, next, b, sj));
    TD_CHECK(emitRecv(c, prev, b, rj, rs));
  }
  return tpudistSuccess;
}

/* Line reduce-scatter. Receives for forwarded blocks are posted first (distinct chunks, so they
 * never hold up issue), then the forwarding sends of both directions interleaved, then the two
 * receives into the own block (they conflict with each other, so they come last). */
static tpudistResult_t lineRS(tdtCtx *c, const tdtGroup *g, const tdtBlocks *b) {
  int n = g->n, i = g->pos;
  int left = i > 0 ? g->ranks[i - 1] : -1, right = i + 1 < n ? g->ranks[i + 1] : -1;
  int nr = n - 1 - i, nl = i; /* forwarded blocks each way: n-1 .. i+1 and 0 .. i-1 */
  for (int m = 0; m < TD_MAX(nr, nl); m++) {
    if (m < nr && left >= 0) TD_CHECK(emitRecv(c, left, b, n - 1 - m, 1));
    if (m < nl && right >= 0) TD_CHECK(emitRecv(c, right, b, m, 1));
  }
  for (int m = 0; m < TD_MAX(nr, nl); m++) {
    if (m < nr) TD_CHECK(emitSend(c, right, b, n - 1 - m));
    if (m < nl) TD_CHECK(emitSend(c, left, b, m));
  }
  if (left >= 0) TD_CHECK(emitRecv(c, left, b, i, 1));
  if (right >= 0) TD_CHECK(emitRecv(c, right, b, i, 1));
  return tpudistSuccess;
}

/* Line all-gather: own block both ways, then every receive, then the forwarding sends. */
static tpudistResult_t lineAG(tdtCtx *c, const tdtGroup *g, const tdtBlocks *b) {
  int n = g->n, i = g->pos;
  int left = i > 0 ? g->ranks[i - 1] : -1, right = i + 1 < n ? g->ranks[i + 1] : -1;
  if (right >= 0) TD_CHECK(emitSend(c, right, b, i));
  if (left >= 0) TD_CHECK(emitSend(c, left, b, i));
  for (int m = 0; m < TD_MAX(i, n - 1 - i); m++) {
    if (m < i) TD_CHECK(emitRecv(c, left, b, i - 1 - m, 0));          /* blocks i-1, ..., 0 */
    if (m < n - 1 - i) TD_CHECK(emitRecv(c, right, b, i + 1 + m, 0)); /* blocks i+1, ..., n-1 */
  }
  for (int m = 0; m < TD_MAX(i, n - 1 - i); m++) {
    if (m < i && right >= 0) TD_CHECK(emitSend(c, right, b, i - 1 - m));
    if (m < n - 1 - i && left >= 0) TD_CHECK(emitSend(c, left, b, i + 1 + m));
  }
  return tpudistSuccess;
}

tpudistResult_t torusReduceScatter(tdtCtx *c, const tdtGroup *g, int dir, const tdtBlocks *b) {
  if (g->n <= 1) return tpudistSuccess;
  return g->ring ? ringPhase(c, g, dir, b, 1) : lineRS(c, g, b);
}

tpudistResult_t torusAllGather(tdtCtx *c, const tdtGroup *g, int dir, const tdtBlocks *b) {
  if (g->n <= 1) return tpudistSuccess;
  return g->ring ? ringPhase(c, g, dir, b, 0) : lineAG(c, g, b);
}
