/*
 * torus.c - the pure torus model: shape checks, rank <-> coordinates, neighbours, routes, hosts.
 *
 * A torus has 1 to 4 axes (x, y, z and w; w is the two cores of a chip on TPU7x). Each axis is a
 * ring (wraps) or a line. Ranks map to coordinates with x fastest; once chips-per-host bounds are
 * set the mapping is host-blocked (see topoSetHostBounds). ndims == 0 is the flat topology: every
 * pair of ranks is one direct link.
 *
 * Twisted tori (n x n x 2n and n x 2n x 2n in any axis order, n >= 2, on the first three axes):
 * the axes of length n are "short", those of length 2n "long". Crossing the wraparound link of a
 * short axis, in either direction, also moves every long axis by n (half its length, so +n and
 * -n are the same). For 4x4x8 this is the published wiring: the x and y wraparound links land at
 * z+4 mod 8. For n x 2n x 2n the x wraparound lands at (y+n, z+n), the 3D twisted torus of
 * Camarero et al. Long axes wrap plainly; a fourth axis is never twisted.
 *
 * Routes are dimension ordered (x, then y, z, w). On a plain ring each axis takes the shorter way
 * round (ties go +). On a twisted torus the way round each short axis decides how far the long
 * axes are shifted, so the ways round of the short axes are chosen together (2 or 4 candidates)
 * to minimise the total hop count; the long axes then take their shorter way from where the
 * shift left them. This gives true shortest paths on the twisted shapes.
 * Cost: O(ndims) per coordinate conversion, O(hops) per route.
 */
#include <string.h>

#include "topo_priv.h"

int topoTwistRoles(const int *dims, int ndims, int *isShort, int *n) {
  if (ndims < 3) return 0;
  int mn = TD_MIN(dims[0], TD_MIN(dims[1], dims[2]));
  int mx = TD_MAX(dims[0], TD_MAX(dims[1], dims[2]));
  if (mn < 2 || mx != 2 * mn) return 0;
  for (int a = 0; a < 3; a++) {
    if (dims[a] != mn && dims[a] != mx) return 0;
    if (isShort) isShort[a] = dims[a] == mn;
  }
  if (n) *n = mn;
  return 1;
}

int topoDefaultWrap(const int *dims, int axis, int twisted) {
  if (dims[axis] < 2) return 0;
  if (twisted && axis < 3) return 1;
  return dims[axis] >= 3;
}

void topoInitFlat(tdTopo *t, int nranks) {
  memset(t, 0, sizeof(*t));
  t->nranks = nranks > 0 ? nranks : 0;
  for (int a = 0; a < TD_MAX_DIMS; a++) t->dims[a] = 1;
}

static tpudistResult_t checkShape(int ndims, const int *dims, char *err) {
  if (ndims < 1 || ndims > TD_MAX_DIMS)
    return tdErr(err, tpudistInvalidArgument, "%d dimensions; a torus has 1 to %d", ndims,
                 TD_MAX_DIMS);
  long long prod = 1;
  for (int a = 0; a < ndims; a++) {
    if (dims[a] < 1)
      return tdErr(err, tpudistInvalidArgument, "axis %c has length %d; every length must be >= 1",
                   topoAxisName(a), dims[a]);
    prod *= dims[a];
    if (prod > TD_TOPO_MAX_RANKS)
      return tdErr(err, tpudistInvalidArgument, "more than %d ranks", TD_TOPO_MAX_RANKS);
  }
  return tpudistSuccess;
}

void topoFormatDims(int ndims, const int *dims, char *buf, size_t len) {
  tdTopo tmp;
  topoInitFlat(&tmp, 1);
  tmp.ndims = ndims;
  memcpy(tmp.dims, dims, sizeof(int) * ndims);
  topoFormat(&tmp, buf, len);
}

tpudistResult_t topoInit(tdTopo *t, int ndims, const int *dims, const int *wrap, int twisted,
                         char *err) {
  if (!t || !dims) return tdErr(err, tpudistInvalidArgument, "NULL topology or dims");
  TD_CHECK(checkShape(ndims, dims, err));
  if (twisted && !topoTwistRoles(dims, ndims, NULL, NULL)) {
    char shape[64];
    topoFormatDims(ndims, dims, shape, sizeof(shape));
    return tdErr(err, tpudistInvalidArgument,
                 "twist needs an n x n x 2n or n x 2n x 2n shape (n >= 2) on x, y, z; got %s",
                 shape);
  }
  topoInitFlat(t, 1);
  t->ndims = ndims;
  t->nranks = 1;
  t->twisted = twisted ? 1 : 0;
  for (int a = 0; a < ndims; a++) {
    t->dims[a] = dims[a];
    t->nranks *= dims[a];
    t->wrap[a] = wrap ? (wrap[a] != 0 && dims[a] > 1) : topoDefaultWrap(dims, a, twisted);
    if (twisted && a < 3 && !t->wrap[a])
      return tdErr(err, tpudistInvalidArgument, "twist needs x, y and z to wrap (%c does not)",
                   topoAxisName(a));
  }
  return tpudistSuccess;
}

static int hasHosts(const tdTopo *t) {
  return t->host_bounds[0] > 0;
}

/* Ranks per host when the host level is known. */
static int hostRanks(const tdTopo *t) {
  if (t->ndims == 0) return t->host_bounds[0];
  int per = 1;
  for (int a = 0; a < t->ndims; a++) per *= t->host_bounds[a];
  return per;
}

tpudistResult_t topoSetHostBounds(tdTopo *t, const int *bounds, char *err) {
  if (!t) return tdErr(err, tpudistInvalidArgument, "NULL topology");
  if (!bounds) {
    memset(t->host_bounds, 0, sizeof(t->host_bounds));
    return tpudistSuccess;
  }
  if (t->ndims == 0)
    return tdErr(err, tpudistInvalidArgument, "a flat topology has no chips-per-host bounds");
  for (int a = 0; a < t->ndims; a++) {
    if (bounds[a] < 1 || t->dims[a] % bounds[a] != 0)
      return tdErr(err, tpudistInvalidArgument,
                   "chips per host %d along %c does not divide the axis length %d", bounds[a],
                   topoAxisName(a), t->dims[a]);
  }
  for (int a = 0; a < TD_MAX_DIMS; a++) t->host_bounds[a] = a < t->ndims ? bounds[a] : 1;
  return tpudistSuccess;
}

/* Mixed-radix index <-> digits, first digit fastest. */
static void splitIndex(const int *radix, int nd, int idx, int *digit) {
  for (int a = 0; a < nd; a++) {
    digit[a] = idx % radix[a];
    idx /= radix[a];
  }
}

static int joinIndex(const int *radix, int nd, const int *digit) {
  int idx = 0;
  for (int a = nd - 1; a >= 0; a--) idx = idx * radix[a] + digit[a];
  return idx;
}

void topoRankToCoords(const tdTopo *t, int rank, int *coords) {
  for (int a = 0; a < TD_MAX_DIMS; a++) coords[a] = 0;
  if (t->ndims == 0) return;
  if (rank < 0 || rank >= t->nranks) {
    for (int a = 0; a < t->ndims; a++) coords[a] = -1;
    return;
  }
  if (!hasHosts(t)) {
    splitIndex(t->dims, t->ndims, rank, coords);
    return;
  }
  int grid[TD_MAX_DIMS], hc[TD_MAX_DIMS], lc[TD_MAX_DIMS], per = 1;
  for (int a = 0; a < t->ndims; a++) {
    grid[a] = t->dims[a] / t->host_bounds[a];
    per *= t->host_bounds[a];
  }
  splitIndex(grid, t->ndims, rank / per, hc);
  splitIndex(t->host_bounds, t->ndims, rank % per, lc);
  for (int a = 0; a < t->ndims; a++) coords[a] = hc[a] * t->host_bounds[a] + lc[a];
}

int topoCoordsToRank(const tdTopo *t, const int *coords) {
  if (t->ndims == 0) return -1;
  for (int a = 0; a < t->ndims; a++)
    if (coords[a] < 0 || coords[a] >= t->dims[a]) return -1;
  if (!hasHosts(t)) return joinIndex(t->dims, t->ndims, coords);
  int grid[TD_MAX_DIMS], hc[TD_MAX_DIMS], lc[TD_MAX_DIMS], per = 1;
  for (int a = 0; a < t->ndims; a++) {
    grid[a] = t->dims[a] / t->host_bounds[a];
    hc[a] = coords[a] / t->host_bounds[a];
    lc[a] = coords[a] % t->host_bounds[a];
    per *= t->host_bounds[a];
  }
  return joinIndex(grid, t->ndims, hc) * per + joinIndex(t->host_bounds, t->ndims, lc);
}

static int modp(int v, int m) {
  int r = v % m;
  return r < 0 ? r + m : r;
}

/* Moves coords one link along axis in direction dir; returns 0 where no link exists. */
static int stepCoords(const tdTopo *t, int *c, int axis, int dir) {
  int len = t->dims[axis], v = c[axis] + dir;
  if (len < 2) return 0;
  if (v >= 0 && v < len) {
    c[axis] = v;
    return 1;
  }
  if (!t->wrap[axis]) return 0;
  c[axis] = modp(v, len);
  int isShort[3], n;
  if (t->twisted && axis < 3 && topoTwistRoles(t->dims, t->ndims, isShort, &n) && isShort[axis]) {
    for (int l = 0; l < 3; l++)
      if (!isShort[l]) c[l] = (c[l] + n) % t->dims[l];
  }
  return 1;
}

int topoTranslate(const tdTopo *t, const int *c, const int *delta, int *out) {
  int v[TD_MAX_DIMS] = {0}, isShort[3] = {0}, n = 0, wraps = 0;
  int tw = t->twisted && topoTwistRoles(t->dims, t->ndims, isShort, &n);
  for (int a = 0; a < t->ndims; a++) {
    int len = t->dims[a], x = (c ? c[a] : 0) + delta[a];
    int q = x >= 0 ? x / len : -((len - 1 - x) / len); /* floor(x / len) */
    if (q && !t->wrap[a]) return -1;
    v[a] = x - q * len;
    if (tw && a < 3 && isShort[a]) wraps += q;
  }
  if (wraps & 1)
    for (int a = 0; a < 3; a++)
      if (!isShort[a]) v[a] = (v[a] + n) % t->dims[a];
  if (out) memcpy(out, v, sizeof(v));
  return topoCoordsToRank(t, v);
}

int topoNeighbor(const tdTopo *t, int rank, int axis, int dir) {
  if (t->ndims == 0 || rank < 0 || rank >= t->nranks) return -1;
  if (axis < 0 || axis >= t->ndims || (dir != 1 && dir != -1)) return -1;
  int c[TD_MAX_DIMS];
  topoRankToCoords(t, rank, c);
  if (!stepCoords(t, c, axis, dir)) return -1;
  return topoCoordsToRank(t, c);
}

int topoIsNeighbor(const tdTopo *t, int a, int b) {
  if (a < 0 || b < 0 || a >= t->nranks || b >= t->nranks) return 0;
  if (t->ndims == 0) return a != b;
  for (int axis = 0; axis < t->ndims; axis++) {
    if (topoNeighbor(t, a, axis, 1) == b || topoNeighbor(t, a, axis, -1) == b) return 1;
  }
  return 0;
}

/* Signed step count from s to d on an axis of length len: the shorter way on a ring (ties +). */
static int axisSteps(int s, int d, int len, int wrap) {
  if (!wrap) return d - s;
  int fwd = modp(d - s, len), bwd = fwd - len;
  return fwd <= -bwd ? fwd : bwd;
}

/* Steps per axis of the route from cs to cd on a twisted torus (see the top comment). */
static void planTwisted(const tdTopo *t, const int *cs, const int *cd, int *steps) {
  int isShort[3], n, best = -1;
  topoTwistRoles(t->dims, t->ndims, isShort, &n);
  for (int a = 3; a < t->ndims; a++) steps[a] = axisSteps(cs[a], cd[a], t->dims[a], t->wrap[a]);
  for (int mask = 0; mask < 8; mask++) {
    int cand[3], cross = 0, total = 0, skip = 0;
    for (int a = 0; a < 3; a++) {
      int bit = (mask >> a) & 1;
      if (!isShort[a]) {
        skip |= bit; /* only short axes choose a way round */
        continue;
      }
      int d = modp(cd[a] - cs[a], n);
      cand[a] = bit ? d - n : d;
      int after = cs[a] + cand[a];
      cross += after >= n || after < 0;
      total += cand[a] < 0 ? -cand[a] : cand[a];
    }
    if (skip) continue;
    for (int a = 0; a < 3; a++) {
      if (isShort[a]) continue;
      int from = (cs[a] + (cross & 1) * n) % t->dims[a];
      cand[a] = axisSteps(from, cd[a], t->dims[a], 1);
      total += cand[a] < 0 ? -cand[a] : cand[a];
    }
    if (best < 0 || total < best) {
      best = total;
      memcpy(steps, cand, sizeof(cand));
    }
  }
}

static void planSteps(const tdTopo *t, const int *cs, const int *cd, int *steps) {
  if (t->twisted) {
    planTwisted(t, cs, cd, steps);
    return;
  }
  for (int a = 0; a < t->ndims; a++) steps[a] = axisSteps(cs[a], cd[a], t->dims[a], t->wrap[a]);
}

int topoHops(const tdTopo *t, int src, int dst) {
  if (src < 0 || dst < 0 || src >= t->nranks || dst >= t->nranks) return -1;
  if (t->ndims == 0) return src != dst;
  int cs[TD_MAX_DIMS], cd[TD_MAX_DIMS], steps[TD_MAX_DIMS], hops = 0;
  topoRankToCoords(t, src, cs);
  topoRankToCoords(t, dst, cd);
  planSteps(t, cs, cd, steps);
  for (int a = 0; a < t->ndims; a++) hops += steps[a] < 0 ? -steps[a] : steps[a];
  return hops;
}

int topoRoute(const tdTopo *t, int src, int dst, tdHop *hops, int maxhops) {
  if (src < 0 || dst < 0 || src >= t->nranks || dst >= t->nranks) return -1;
  if (t->ndims == 0) {
    if (src == dst) return 0;
    if (hops && maxhops >= 1) hops[0] = (tdHop){.from = src, .axis = -1, .dir = 0, .to = dst};
    return 1;
  }
  int c[TD_MAX_DIMS], cd[TD_MAX_DIMS], steps[TD_MAX_DIMS], n = 0;
  topoRankToCoords(t, src, c);
  topoRankToCoords(t, dst, cd);
  planSteps(t, c, cd, steps);
  int cur = src;
  for (int a = 0; a < t->ndims; a++) {
    int dir = steps[a] < 0 ? -1 : 1, count = steps[a] * dir;
    for (int i = 0; i < count; i++, n++) {
      stepCoords(t, c, a, dir);
      int next = topoCoordsToRank(t, c);
      if (hops && n < maxhops) hops[n] = (tdHop){.from = cur, .axis = a, .dir = dir, .to = next};
      cur = next;
    }
  }
  return n;
}

int topoHostOf(const tdTopo *t, int rank) {
  if (rank < 0 || rank >= t->nranks) return -1;
  if (!hasHosts(t)) return rank;
  return rank / hostRanks(t);
}

int topoNumHosts(const tdTopo *t) {
  if (!hasHosts(t)) return t->nranks;
  return t->nranks / hostRanks(t);
}

/* Appends lead then v[0..n) joined by sep; returns the new length (at most len - 1). */
static size_t appendList(char *buf, size_t len, size_t pos, const char *lead, const int *v, int n,
                         char sep) {
  if (pos + 1 >= len) return pos;
  int w = snprintf(buf + pos, len - pos, "%s", lead);
  for (int a = 0; a < n && w >= 0 && pos + (size_t)w < len; a++) {
    pos += (size_t)w;
    w = a ? snprintf(buf + pos, len - pos, "%c%d", sep, v[a])
          : snprintf(buf + pos, len - pos, "%d", v[a]);
  }
  if (w >= 0) pos += (size_t)w;
  return pos < len ? pos : len - 1;
}

void topoFormat(const tdTopo *t, char *buf, size_t len) {
  if (!buf || len == 0) return;
  buf[0] = '\0';
  int ns = topoNumSlices(t), nd = t->ndims - (ns > 1 && t->ndims > 0); /* one slice's axes */
  size_t pos;
  if (t->ndims == 0) {
    int n = t->nranks / ns;
    pos = (size_t)snprintf(buf, len, "flat(%d)", n);
    if (hasHosts(t) && pos < len)
      pos = appendList(buf, len, pos, ":hosts=", t->host_bounds, 1, ',');
  } else {
    pos = appendList(buf, len, 0, "", t->dims, nd, 'x');
    int custom = 0;
    for (int a = 0; a < nd; a++) custom |= t->wrap[a] != topoDefaultWrap(t->dims, a, t->twisted);
    if (custom) pos = appendList(buf, len, pos, ":wrap=", t->wrap, nd, ',');
    if (t->twisted) pos = appendList(buf, len, pos, ":twist", NULL, 0, 0);
    if (hasHosts(t) && pos < len)
      pos = appendList(buf, len, pos, ":hosts=", t->host_bounds, nd, ',');
  }
  if (ns > 1 && pos < len) appendList(buf, len, pos, ":slices=", &ns, 1, ',');
}
