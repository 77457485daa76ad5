/*
 * perf_alltoallv.c - all-to-all-v traffic for alltoallv_perf: skewed splits (-k skew: that fraction
 * of every rank's data goes to one hot receiver, the last rank) or MoE-shaped traffic (-T tokens
 * per rank, -H hidden size, -K top-k, -k Zipf exponent of expert popularity; one expert per rank).
 * Counts are a deterministic function of (sender, receiver), so every rank knows the matrix.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perf.h"

#define ES(c) perfDtypeSize((c)->o->dtype)

static size_t gBase; /* mean elements per (sender, receiver) in skew mode */
static size_t *gMoe; /* n x n counts in MoE mode */
static int gMoeN;

/* MoE: token t of rank s picks top-k distinct experts from a Zipf(skew) popularity. */
static void moeCounts(int n, const perfOpts *o) {
  free(gMoe);
  gMoe = calloc((size_t)n * n, sizeof(size_t));
  gMoeN = n;
  double *w = malloc(sizeof(double) * n), tot = 0;
  for (int e = 0; e < n; e++) tot += (w[e] = 1.0 / pow(e + 1, o->skew));
  int k = o->moe_topk < 1 ? 1 : (o->moe_topk > n ? n : o->moe_topk);
  for (int s = 0; s < n; s++) {
    unsigned seed = 12345u + 7919u * s;
    for (long t = 0; t < o->moe_tokens; t++) {
      int chosen[64], nc = 0;
      while (nc < k) {
        double u = (rand_r(&seed) / (double)RAND_MAX) * tot, acc = 0;
        int e = 0;
        for (; e < n - 1; e++)
          if ((acc += w[e]) >= u) break;
        int dup = 0;
        for (int j = 0; j < nc; j++) dup |= chosen[j] == e;
        if (!dup) chosen[nc++] = e;
        if (nc >= 64) break;
      }
      for (int j = 0; j < nc; j++) gMoe[(size_t)s * n + chosen[j]] += (size_t)o->moe_hidden;
    }
  }
  free(w);
  if (o->counts_out && perfRank == 0) {
    FILE *f = fopen(o->counts_out, "w");
    for (int a = 0; f && a < n; a++)
      for (int b = 0; b < n; b++)
        fprintf(f, "%zu%c", gMoe[(size_t)a * n + b], b == n - 1 ? '\n' : ',');
    if (f) fclose(f);
  }
}

static size_t cnt(int n, int s, int r) {
  const perfOpts *o = perfCurrentOpts;
  if (o->moe_tokens > 0) return gMoe[(size_t)s * n + r];
  double base = (double)gBase, v = (1.0 - o->skew) * base + (r == n - 1 ? o->skew * base * n : 0);
  return (size_t)v;
}

static void sizesV(size_t bytes, size_t es, int n, size_t *count, size_t *se, size_t *re) {
  const perfOpts *o = perfCurrentOpts;
  if (o->moe_tokens > 0) {
    if (gMoeN != n) moeCounts(n, o);
  } else {
    gBase = bytes / es / n;
  }
  size_t smax = 0, rmax = 0;
  for (int a = 0; a < n; a++) {
    size_t st = 0, rt = 0;
    for (int b = 0; b < n; b++) {
      st += cnt(n, a, b);
      rt += cnt(n, b, a);
    }
    smax = st > smax ? st : smax;
    rmax = rt > rmax ? rt : rmax;
  }
  *count = gBase;
  *se = smax;
  *re = rmax;
}

static size_t algV(size_t count, size_t es, int n) {
  (void)count;
  size_t tot = 0; /* mean bytes sent per rank */
  for (int s = 0; s < n; s++)
    for (int r = 0; r < n; r++) tot += cnt(n, s, r);
  return tot * es / n;
}

static double valueOf(const perfCtx *c, int s, int r, size_t i) {
  return perfValue(s * 131 + r, i) + (c->o->dtype == tpudistUint8 ? 4 : 0);
}

static void initV(const perfCtx *c, void *buf, size_t count, int root, int inplace) {
  (void)count;
  (void)root;
  (void)inplace;
  size_t off = 0;
  for (int r = 0; r < c->nranks; r++) {
    size_t k = cnt(c->nranks, c->rank, r);
    for (size_t i = 0; i < k; i++) perfStore(buf, off + i, c->o->dtype, valueOf(c, c->rank, r, i));
    off += k;
  }
}

static void layout(const perfCtx *c, size_t *sc, size_t *sd, size_t *rc, size_t *rd) {
  size_t so = 0, ro = 0;
  for (int p = 0; p < c->nranks; p++) {
    sc[p] = cnt(c->nranks, c->rank, p);
    rc[p] = cnt(c->nranks, p, c->rank);
    sd[p] = so;
    rd[p] = ro;
    so += sc[p];
    ro += rc[p];
  }
}

static int runV(const perfCtx *c, const void *s, void *r, size_t n, int root, int ip) {
  (void)n;
  (void)root;
  if (ip) return tpudistNotSupported;
  int np = c->nranks, res;
  size_t *v = malloc(sizeof(size_t) * 4 * np);
  size_t *sc = v, *sd = v + np, *rc = v + 2 * np, *rd = v + 3 * np;
  layout(c, sc, sd, rc, rd);
  if (c->o->impl == PERF_IMPL_MPI) {
    int *iv = malloc(sizeof(int) * 4 * np);
    size_t es = ES(c);
    for (int p = 0; p < 4 * np; p++) iv[p] = (int)(v[p] * es);
    res = MPI_Alltoallv(s, iv, iv + np, MPI_BYTE, r, iv + 2 * np, iv + 3 * np, MPI_BYTE,
                        c->mcomm) != MPI_SUCCESS;
    free(iv);
  } else {
    res = tpudistAllToAllv(s, sc, sd, r, rc, rd, c->o->dtype, c->comm, NULL);
  }
  free(v);
  return res;
}

static long checkV(const perfCtx *c, const void *r, size_t n, int root) {
  (void)n;
  (void)root;
  long wrong = 0;
  size_t off = 0;
  char tmp[8];
  for (int s = 0; s < c->nranks; s++) {
    size_t k = cnt(c->nranks, s, c->rank);
    for (size_t i = 0; i < k; i++) {
      perfStore(tmp, 0, c->o->dtype, valueOf(c, s, c->rank, i));
      if (perfLoad(r, off + i, c->o->dtype) != perfLoad(tmp, 0, c->o->dtype)) wrong++;
    }
    off += k;
  }
  return wrong;
}

static double factorV(int n) {
  return n > 1 ? (double)(n - 1) / n : 0.0;
}

const perfColl perfAllToAllv = {"alltoallv", "alltoallv", 0,    0,      sizesV,
                                factorV,     initV,       runV, checkV, algV};
