/*
 * topo_sub.c - the topology of a split communicator (docs/design.md, "Topology conventions").
 *
 * members[i] is the parent rank of new rank i. When the members are exactly an axis-aligned box of
 * the parent's coordinates, listed in the box's own rank order, the child is that box as a torus:
 *   - x fastest, or host-blocked with the parent's chips-per-host bounds when the box is made of
 *     whole hosts (its corner and lengths are multiples of the bounds);
 *   - an axis wraps only if the box spans the whole parent axis and that axis wraps;
 *   - a box that is the whole of x, y and z of a twisted parent stays twisted; in any smaller box
 *     the twisted wraparound links of the short axes land outside the box's plain rings, so those
 *     axes become lines (the long axes keep their plain wraparound when spanned whole).
 * Any other member list (scattered, reordered, duplicated, out of range) gives the flat topology.
 * Cost: O(n * ndims).
 */
#include <string.h>

#include "topo_priv.h"

/* Bounding box of the members' coordinates; returns 0 if a member is out of range. */
static int boundingBox(const tdTopo *p, const int *members, int n, int *lo, int *ext) {
  int hi[TD_MAX_DIMS], c[TD_MAX_DIMS];
  for (int a = 0; a < p->ndims; a++) {
    lo[a] = p->dims[a];
    hi[a] = -1;
  }
  for (int i = 0; i < n; i++) {
    if (members[i] < 0 || members[i] >= p->nranks) return 0;
    topoRankToCoords(p, members[i], c);
    for (int a = 0; a < p->ndims; a++) {
      lo[a] = TD_MIN(lo[a], c[a]);
      hi[a] = TD_MAX(hi[a], c[a]);
    }
  }
  for (int a = 0; a < p->ndims; a++) ext[a] = hi[a] - lo[a] + 1;
  return 1;
}

/* 1 if members[i] is the parent rank of child rank i for every i. */
static int sameOrder(const tdTopo *p, const tdTopo *child, const int *lo, const int *members,
                     int n) {
  int c[TD_MAX_DIMS];
  for (int i = 0; i < n; i++) {
    topoRankToCoords(child, i, c);
    for (int a = 0; a < p->ndims; a++) c[a] += lo[a];
    if (topoCoordsToRank(p, c) != members[i]) return 0;
  }
  return 1;
}

static void childWrap(const tdTopo *p, const int *ext, int *wrap, int *twisted) {
  int whole3 = 1, isShort[3] = {0, 0, 0};
  for (int a = 0; a < p->ndims && a < 3; a++) whole3 &= ext[a] == p->dims[a];
  *twisted = p->twisted && whole3;
  if (p->twisted) topoTwistRoles(p->dims, p->ndims, isShort, NULL);
  for (int a = 0; a < p->ndims; a++) {
    wrap[a] = p->wrap[a] && ext[a] == p->dims[a];
    if (p->twisted && !*twisted && a < 3 && isShort[a]) wrap[a] = 0;
  }
}

void topoSubBlock(const tdTopo *parent, const int *members, int n, tdTopo *out) {
  topoInitFlat(out, n);
  if (!parent || parent->ndims == 0 || !members || n <= 0) return;
  int lo[TD_MAX_DIMS], ext[TD_MAX_DIMS], wrap[TD_MAX_DIMS], twisted;
  if (!boundingBox(parent, members, n, lo, ext)) return;
  long long vol = 1;
  for (int a = 0; a < parent->ndims; a++) vol *= ext[a];
  if (vol != n) return;
  childWrap(parent, ext, wrap, &twisted);
  tdTopo child;
  if (topoInit(&child, parent->ndims, ext, wrap, twisted, NULL) != tpudistSuccess) return;
  if (parent->host_bounds[0] > 0) {
    int aligned = 1;
    for (int a = 0; a < parent->ndims; a++) {
      int hb = parent->host_bounds[a];
      aligned &= lo[a] % hb == 0 && ext[a] % hb == 0;
    }
    tdTopo hosted = child;
    if (aligned && topoSetHostBounds(&hosted, parent->host_bounds, NULL) == tpudistSuccess &&
        sameOrder(parent, &hosted, lo, members, n)) {
      *out = hosted;
      if (topoNumSlices(parent) > 1 && out->dims[out->ndims - 1] > 1)
        out->slices = out->dims[out->ndims - 1];
      return;
    }
  }
  if (sameOrder(parent, &child, lo, members, n)) *out = child;
  /* the slice level survives where the block spans more than one slice */
  if (out->ndims == parent->ndims && topoNumSlices(parent) > 1 && out->dims[out->ndims - 1] > 1)
    out->slices = out->dims[out->ndims - 1];
}
