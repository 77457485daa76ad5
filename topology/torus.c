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
 * round. On a twisted torus the way round each short axis decides how far the long axes are
 * shifted, so the ways round of the short axes are chosen together (2 or 4 candidates) to
 * minimise the total hop count; the long axes then take their shorter way from where the shift
 * left them. This gives true shortest paths on the twisted shapes.
 *
 * Ties are spread by halves of each message, not by flow: where both ways round an even ring are
 * as short (half way round), or several ways round a twisted torus' short axes give the fewest
 * hops, the message is split into equal shares, one per shortest dimension-ordered route
 * (topoPaths; 2 per tied axis). A link's load is then the same for every pair with the same
 * coordinate difference, so routes stay translates of each other (topoTranslate), and a single
 * message or a one-axis all-to-all loads both directions of a ring equally, as the bidirectional
 * ring formulas assume. Path 0 takes every tie +.
 * Cost: O(ndims) per coordinate conversion, O(hops) per route.
 */
#include <stdlib.h>
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

/* 1 when axis a's steps of a route are a tie: half way round an even ring, either way as short. */
static int isTie(const tdTopo *t, int a, int steps) {
  return t->wrap[a] && t->dims[a] % 2 == 0 && steps == t->dims[a] / 2;
}

/* Adds cand, and its copies with each tied axis going the other way, to paths[*k] (no duplicates;
 * at most TD_MAX_PATHS). Axes in fixed (a bit mask: a twisted torus' short axes, whose ways round
 * are chosen with the shift they cause) keep their steps. */
static void addWithTies(const tdTopo *t, const int *cand, int fixed, int (*paths)[TD_MAX_DIMS],
                        int *k) {
  int ties[TD_MAX_DIMS], nt = 0;
  for (int a = 0; a < t->ndims; a++)
    if (!((fixed >> a) & 1) && isTie(t, a, cand[a])) ties[nt++] = a;
  for (int m = 0; m < (1 << nt); m++) {
    int v[TD_MAX_DIMS] = {0}, dup = 0;
    memcpy(v, cand, sizeof(int) * (size_t)t->ndims);
    for (int i = 0; i < nt; i++)
      if ((m >> i) & 1) v[ties[i]] -= t->dims[ties[i]];
    for (int j = 0; j < *k && !dup; j++) dup = !memcmp(paths[j], v, sizeof(v));
    if (!dup && *k < TD_MAX_PATHS) memcpy(paths[(*k)++], v, sizeof(v));
  }
}

/* Steps of one way round the short axes of a twisted torus (mask bit a: axis a goes the long way
 * round), the long axes then taking their shorter way from where the shift left them; returns
 * the total hop count, or -1 when mask names a long axis. */
static int twistCandidate(const tdTopo *t, const int *isShort, int n, const int *cs, const int *cd,
                          int mask, int *cand) {
  int cross = 0, total = 0;
  for (int a = 0; a < 3; a++) {
    int bit = (mask >> a) & 1;
    if (!isShort[a]) {
      if (bit) return -1;
      continue;
    }
    int d = modp(cd[a] - cs[a], n);
    cand[a] = bit ? d - n : d;
    int after = cs[a] + cand[a];
    cross += after >= n || after < 0;
    total += abs(cand[a]);
  }
  for (int a = 0; a < 3; a++) {
    if (isShort[a]) continue;
    cand[a] = axisSteps((cs[a] + (cross & 1) * n) % t->dims[a], cd[a], t->dims[a], 1);
    total += abs(cand[a]);
  }
  for (int a = 3; a < t->ndims; a++) cand[a] = axisSteps(cs[a], cd[a], t->dims[a], t->wrap[a]);
  return total;
}

/* The shortest dimension-ordered routes from cs to cd, as steps per axis (see the top comment):
 * on a plain torus the shorter way round each axis, both ways where they tie; on a twisted torus
 * every way round the short axes that gives the fewest hops, each with its long axes' ties.
 * Returns their number k (1 .. TD_MAX_PATHS), path 0 first (every tie +). */
static int planPaths(const tdTopo *t, const int *cs, const int *cd, int (*paths)[TD_MAX_DIMS]) {
  int k = 0, cand[TD_MAX_DIMS] = {0};
  if (!t->twisted) {
    for (int a = 0; a < t->ndims; a++) cand[a] = axisSteps(cs[a], cd[a], t->dims[a], t->wrap[a]);
    addWithTies(t, cand, 0, paths, &k);
    return k;
  }
  int isShort[3], n, best = -1, fixed = 0;
  topoTwistRoles(t->dims, t->ndims, isShort, &n);
  for (int a = 0; a < 3; a++) fixed |= isShort[a] << a;
  for (int mask = 0; mask < 8; mask++) {
    int tot = twistCandidate(t, isShort, n, cs, cd, mask, cand);
    if (tot >= 0 && (best < 0 || tot < best)) best = tot;
  }
  for (int mask = 0; mask < 8; mask++)
    if (twistCandidate(t, isShort, n, cs, cd, mask, cand) == best)
      addWithTies(t, cand, fixed, paths, &k);
  return k;
}

static int planCoords(const tdTopo *t, int src, int dst, int *cs, int (*paths)[TD_MAX_DIMS]) {
  int cd[TD_MAX_DIMS];
  topoRankToCoords(t, src, cs);
  topoRankToCoords(t, dst, cd);
  return planPaths(t, cs, cd, paths);
}

int topoPaths(const tdTopo *t, int src, int dst) {
  if (src < 0 || dst < 0 || src >= t->nranks || dst >= t->nranks) return -1;
  if (t->ndims == 0) return 1;
  int cs[TD_MAX_DIMS], paths[TD_MAX_PATHS][TD_MAX_DIMS];
  return planCoords(t, src, dst, cs, paths);
}

int topoHops(const tdTopo *t, int src, int dst) {
  if (src < 0 || dst < 0 || src >= t->nranks || dst >= t->nranks) return -1;
  if (t->ndims == 0) return src != dst;
  int cs[TD_MAX_DIMS], paths[TD_MAX_PATHS][TD_MAX_DIMS], hops = 0;
  planCoords(t, src, dst, cs, paths);
  for (int a = 0; a < t->ndims; a++) hops += abs(paths[0][a]);
  return hops;
}

int topoRoute(const tdTopo *t, int src, int dst, int path, tdHop *hops, int maxhops) {
  if (src < 0 || dst < 0 || src >= t->nranks || dst >= t->nranks || path < 0) return -1;
  if (t->ndims == 0) {
    if (path > 0) return -1;
    if (src == dst) return 0;
    if (hops && maxhops >= 1) hops[0] = (tdHop){.from = src, .axis = -1, .dir = 0, .to = dst};
    return 1;
  }
  int c[TD_MAX_DIMS], paths[TD_MAX_PATHS][TD_MAX_DIMS], n = 0;
  if (path >= planCoords(t, src, dst, c, paths)) return -1;
  const int *steps = paths[path];
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
    if (t->numa > 0 && pos < len) pos = appendList(buf, len, pos, ":numa=", &t->numa, 1, ',');
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
