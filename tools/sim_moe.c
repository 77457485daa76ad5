/*
 * sim_moe.c - tpudist-sim --moe: the dispatch and combine all-to-all-v of one mixture-of-experts
 * layer, simulated for each all-to-all-v algorithm (docs/simulator.md, "MoE expert parallelism").
 *
 * Layer (Qwen3-MoE-235B-like): E = 128 experts, top-k = 8 routing, hidden 4096, bfloat16 tokens;
 * T tokens per chip (--moe-tokens, default 2048; weak scaling: the same T at every size).
 * Placement: the N chips form N / 128 expert groups of 128 consecutive ranks (host-blocked: a slab
 * of the torus); chip g * 128 + e of group g holds a replica of expert e. A token on chip s goes,
 * for each of its k experts, to that expert's replica in group home(s): its own group ("local")
 * or group s mod (N / 128) ("spread", a placement that ignores the torus: every group receives
 * from sources all over it). Popularity: "uniform" (every expert gets T k / E of a chip's tokens)
 * or "zipf" (expert e gets a share proportional to 1 / (e + 1), at most T: a token picks an expert
 * once; the excess goes to the others in proportion). Counts are expectations, rounded; every
 * source uses the same popularity, so a popular expert's replicas are hot spots.
 *
 * Dispatch sends hidden-state rows from sources to experts (count matrix M), combine sends them
 * back (M transposed). Bounds (one way, per direction W = the preset's link figure): bisection,
 * the worst ICI axis' bytes crossing its halves (either direction) over its 2 x (chips in a
 * cross-section) links (wrapped; 1 x without wrap); injection/ejection, the busiest chip's bytes
 * over 2 x ndims links; with slices (tpudist-sim --slices) the DCN bound, the busiest host NIC
 * direction's bytes across slices over its bandwidth. The fraction printed is the largest bound
 * over the simulated time.
 */
#include "sim_moe.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "algos.h"
#include "select.h"
#include "sim.h"

#define MOE_EXPERTS 128
#define MOE_TOPK 8
#define MOE_HIDDEN 4096
#define MOE_ELEM 2 /* bfloat16 */
#define MOE_WINDOW 4096

/* Tokens per expert out of one chip's T (expected counts, at most T each, summing to T k). */
static void popularity(int zipf, uint64_t tokens, uint64_t *per) {
  double share[MOE_EXPERTS], total = (double)tokens * MOE_TOPK;
  int capped[MOE_EXPERTS] = {0};
  for (int e = 0; e < MOE_EXPERTS; e++) share[e] = zipf ? 1.0 / (e + 1) : 1.0;
  for (int round = 0; round < MOE_EXPERTS; round++) { /* water-fill under the cap T */
    double free_w = 0, left = total;
    for (int e = 0; e < MOE_EXPERTS; e++) {
      if (capped[e])
        left -= (double)tokens;
      else
        free_w += share[e];
    }
    int more = 0;
    for (int e = 0; e < MOE_EXPERTS; e++)
      if (!capped[e] && left * share[e] / free_w > (double)tokens) capped[e] = more = 1;
    if (!more) {
      for (int e = 0; e < MOE_EXPERTS; e++)
        per[e] = capped[e] ? tokens : (uint64_t)llround(left * share[e] / free_w);
      return;
    }
  }
}

static int homeGroup(int spread, int s, int groups) {
  return spread ? s % groups : s / MOE_EXPERTS;
}

/* The dispatch count matrix (elements, row = source), N x N. */
static uint64_t *dispatchMatrix(int n, int spread, int zipf, uint64_t tokens) {
  uint64_t per[MOE_EXPERTS], *m = calloc((size_t)n * (size_t)n, sizeof(uint64_t));
  if (!m) return NULL;
  popularity(zipf, tokens, per);
  int groups = n / MOE_EXPERTS;
  for (int s = 0; s < n; s++) {
    int g = homeGroup(spread, s, groups);
    for (int e = 0; e < MOE_EXPERTS; e++)
      m[(size_t)s * (size_t)n + (size_t)(g * MOE_EXPERTS + e)] = per[e] * MOE_HIDDEN;
  }
  return m;
}

static void transpose(uint64_t *m, int n) {
  for (size_t i = 0; i < (size_t)n; i++)
    for (size_t j = i + 1; j < (size_t)n; j++) {
      uint64_t t = m[i * (size_t)n + j];
      m[i * (size_t)n + j] = m[j * (size_t)n + i];
      m[j * (size_t)n + i] = t;
    }
}

/* DCN (slices joined by the hosts' NICs): the busiest NIC direction's bytes over dcn_bw. */
static double dcnBound(const simConfig *cfg, const uint64_t *m) {
  const tdTopo *t = cfg->topo;
  int n = t->nranks, nh = topoNumHosts(t);
  if (!topoHasDcn(t)) return 0;
  double *out = calloc((size_t)nh * 2, sizeof(double)), worst = 0;
  for (int s = 0; s < n && out; s++)
    for (int d = 0; d < n; d++) {
      double b = (double)m[(size_t)s * (size_t)n + (size_t)d] * MOE_ELEM;
      if (b == 0 || topoDcnDomain(t, s) == topoDcnDomain(t, d)) continue;
      out[topoHostOf(t, s)] += b, out[nh + topoHostOf(t, d)] += b;
    }
  for (int h = 0; h < 2 * nh && out; h++) worst = TD_MAX(worst, out[h]);
  free(out);
  return worst / cfg->dcn_bw;
}

/* The larger of the bisection, injection/ejection and DCN bounds (seconds); *bis the first, *dcn
 * the last. The bisection is the worst over the ICI axes (with slices the slice axis, the last, is
 * DCN) of the bytes crossing that axis' halves over its cross-section: a placement's traffic may
 * cross one axis' halves and never another's (group-local slabs), so no single axis stands for
 * all. */
static double moeBound(const simConfig *cfg, const uint64_t *m, double *bis, double *dcn) {
  const tdTopo *t = cfg->topo;
  int n = t->nranks, ici = t->ndims - (topoNumSlices(t) > 1 && t->ndims > 0 ? 1 : 0);
  double w = cfg->p.link_bw, cross[TD_MAX_DIMS][2] = {{0}}, worst = 0;
  int c[TD_MAX_DIMS], cs[TD_MAX_DIMS];
  double *out = calloc((size_t)n, sizeof(double)), *in = calloc((size_t)n, sizeof(double));
  for (int s = 0; s < n && out && in; s++) {
    topoRankToCoords(t, s, cs);
    for (int d = 0; d < n; d++) {
      double b = (double)m[(size_t)s * (size_t)n + (size_t)d] * MOE_ELEM;
      if (b == 0 || s == d) continue;
      out[s] += b, in[d] += b;
      topoRankToCoords(t, d, c);
      for (int a = 0; a < ici; a++) {
        int half = t->dims[a] / 2;
        if ((cs[a] < half) != (c[a] < half)) cross[a][cs[a] < half] += b;
      }
    }
  }
  for (int r = 0; r < n && out && in; r++) worst = TD_MAX(worst, TD_MAX(out[r], in[r]));
  free(out);
  free(in);
  *bis = 0;
  for (int a = 0; a < ici; a++) {
    if (t->dims[a] < 2) continue;
    double links = (double)(n / t->dims[a]) * (t->wrap[a] ? 2 : 1);
    *bis = TD_MAX(*bis, TD_MAX(cross[a][0], cross[a][1]) / (links * w));
  }
  *dcn = dcnBound(cfg, m);
  return TD_MAX(TD_MAX(*bis, *dcn), worst / (2.0 * ici * w));
}

/* One all-to-all-v of matrix m with algo; seconds, or < 0 if the algorithm refuses. */
static double runA2av(const simConfig *cfg, const char *algo, const uint64_t *m) {
  tdCollArgs a;
  memset(&a, 0, sizeof(a));
  a.coll = TD_COLL_ALLTOALLV;
  a.nranks = cfg->topo->nranks;
  a.topo = cfg->topo;
  a.elem_size = MOE_ELEM;
  a.v_counts = m;
  simResult r;
  char err[TD_ERRLEN] = "";
  if (simRun(cfg, &a, algo, &r, err) != tpudistSuccess) {
    fprintf(stderr, "tpudist-sim: moe %s: %s\n", algo, err);
    return -1;
  }
  return r.time;
}

static const char *const moePlace[2] = {"local", "spread"}, *const moeSkew[2] = {"uniform", "zipf"};

/* The cases a comma-separated list of "place:skew" names, bit 2 * spread + zipf each (NULL: all
 * four); -1, with a message, for an entry that names no case. */
static int casesMask(const char *cases) {
  if (!cases) return 0xf;
  char buf[256];
  int mask = 0;
  snprintf(buf, sizeof(buf), "%s", cases);
  for (char *save = NULL, *c = strtok_r(buf, ",", &save); c; c = strtok_r(NULL, ",", &save)) {
    int k = 0;
    for (char name[32]; k < 4; k++) {
      snprintf(name, sizeof(name), "%s:%s", moePlace[k / 2], moeSkew[k % 2]);
      if (!strcmp(c, name)) break;
    }
    if (k == 4)
      return fprintf(stderr, "tpudist-sim: --moe-cases %s: local|spread:uniform|zipf\n", c), -1;
    mask |= 1 << k;
  }
  return mask;
}

int simMoe(const simConfig *cfg_in, const char *algos, const char *cases, uint64_t tokens,
           const char *csv_path) {
  int wanted = casesMask(cases);
  if (wanted < 0) return -1;
  simConfig c = *cfg_in, *cfg = &c;
  if (c.window < MOE_WINDOW) c.window = MOE_WINDOW; /* a rank's plan at once: no regenerations */
  int n = cfg->topo->nranks;
  if (n % MOE_EXPERTS) {
    fprintf(stderr, "tpudist-sim: --moe needs a multiple of %d chips (%d)\n", MOE_EXPERTS, n);
    return -1;
  }
  char list[256], pick[32] = "-", err[TD_ERRLEN];
  snprintf(list, sizeof(list), "%s", algos ? algos : "pairwise,direct,torus");
  uint64_t bytes = tokens * MOE_TOPK * MOE_HIDDEN * MOE_ELEM; /* a chip's dispatch send buffer */
  tdCostModel model;
  simCostModel(cfg, &model);
  if (simSelectAlgo(cfg->topo, &model, TD_COLL_ALLTOALLV, bytes, pick, sizeof(pick), err))
    snprintf(pick, sizeof(pick), "-");
  FILE *csv = csv_path ? fopen(csv_path, "a") : NULL;
  printf(
      "moe: %d chips in %d slices, %d experts (groups of %d), top-%d, hidden %d bf16, %llu tokens "
      "per chip (%.1f MiB dispatched per chip); selection picks %s\n",
      n, topoNumSlices(cfg->topo), MOE_EXPERTS, MOE_EXPERTS, MOE_TOPK, MOE_HIDDEN,
      (unsigned long long)tokens, (double)bytes / 1048576.0, pick);
  if (cfg->settle > 0)
    printf("moe: re-levelling after leaves waits up to %g of the simulated time (--settle)\n",
           cfg->settle);
  printf("%-7s %-8s %-9s %12s %12s %12s %9s %9s\n", "place", "skew", "algo", "dispatch_us",
         "combine_us", "layer_us", "bound_us", "of_bound");
  int rc = 0;
  for (int spread = 0; spread < 2; spread++)
    for (int zipf = 0; zipf < 2; zipf++) {
      if (!(wanted >> (2 * spread + zipf) & 1)) continue;
      uint64_t *m = dispatchMatrix(n, spread, zipf, tokens);
      if (!m) return fprintf(stderr, "tpudist-sim: moe: out of memory\n"), -1;
      double bis, dcn, bound = moeBound(cfg, m, &bis, &dcn);
      char buf[256];
      snprintf(buf, sizeof(buf), "%s", list);
      for (char *save = NULL, *al = strtok_r(buf, ",", &save); al;
           al = strtok_r(NULL, ",", &save)) {
        double td = runA2av(cfg, al, m);
        transpose(m, n);
        double tc = td >= 0 ? runA2av(cfg, al, m) : -1;
        transpose(m, n);
        if (td < 0 || tc < 0) {
          printf("%-7s %-8s %-9s %12s\n", moePlace[spread], moeSkew[zipf], al, "refused");
          rc = -1;
          continue;
        }
        double frac = bound / TD_MAX(td, tc);
        printf("%-7s %-8s %-9s %12.1f %12.1f %12.1f %9.1f %8.1f%%\n", moePlace[spread],
               moeSkew[zipf], al, td * 1e6, tc * 1e6, (td + tc) * 1e6, bound * 1e6, 100 * frac);
        if (csv)
          fprintf(csv, "%d,%s,%s,%s,%.9g,%.9g,%.9g,%.9g,%s,%d,%.9g,%g\n", n, moePlace[spread],
                  moeSkew[zipf], al, td, tc, bound, bis, pick, topoNumSlices(cfg->topo), dcn,
                  cfg->settle);
        if (csv) fflush(csv);
        fflush(stdout);
      }
      free(m);
    }
  if (csv) fclose(csv);
  return rc;
}
