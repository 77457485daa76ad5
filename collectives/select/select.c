/*
 * select.c - per-communicator algorithm selection (select.h). For every collective, each built
 * generator that accepts the shape is generated once for all ranks (schedules are
 * count-independent) and evaluated by the cost model (cost.h) at every size bucket; the table
 * keeps the candidates per bucket ordered cheapest first. selectAlltoallvLocal reads the table for
 * the runtime's one question that spans all sizes: may all-to-all-v skip its counts exchange (one
 * algorithm first at every size, and one that needs only a row and column of the count matrix)?
 *
 * Size buckets: bytes = the larger buffer of one rank as NCCL's tests count it (all-reduce,
 * broadcast, reduce, send/recv: count * elem; all-gather: the gathered output, reduce-scatter:
 * the input, all-to-all(v): the whole send buffer, i.e. nranks blocks); bucket b holds sizes in
 * (2^(b-1), 2^b], b = 0 .. 30 (1 B .. 1 GiB; larger sizes use the last bucket). A bucket is
 * costed with per-block count max(1, 2^b / (4 * blocks)) of 4-byte elements.
 * All-to-all-v is costed as all-to-all with equal blocks for algorithms that have an all-to-all
 * twin of the same name (same step structure); others with an equal count matrix per bucket.
 *
 * Up to TD_SELECT_MAX_RANKS (256) ranks every rank is simulated (contention depends on all
 * flows; trees are not rank-symmetric), within a deterministic work budget, so that every rank
 * builds the same table: TD_SELECT_WORK_BUDGET (12 M) step evaluations (steps of a plan x buckets
 * evaluated) in all, estimated as rank 0's steps x ranks x buckets before the others are
 * generated; a candidate past it is costed at every 4th bucket (the others interpolated, as at
 * pod scale) if that fits, else ranked after the costed ones by a fixed order (latency
 * algorithms first up to 64 KiB, bandwidth algorithms above). 64 ranks on 4x4x4 are costed in
 * full. Why the cut-off is at 256 ranks: docs/results/design-choices.md, "Selection cut-off".
 *
 * Pod scale (more ranks): a candidate whose plans are images of rank 0's under a symmetry of the
 * rank set is costed from rank 0's plan alone (costPlanCreateSym): translations of a torus that
 * wraps on every axis (twisted or not: every chip is then a translate of chip 0; the torus
 * all-reduce, all-gather, reduce-scatter and all-to-all on plain tori), else cyclic shifts of
 * rank numbers (ring, pairwise, Bruck, direct: exact for matching, links then approximate, since
 * the shift of a route is not a route), else exclusive-or of rank numbers (recursive doubling and
 * Rabenseifner at a power of two). The symmetry is checked, not assumed: the plans of sample ranks
 * (a diagonal translate; rank 1 and the last) must have rank 0's messages with every peer mapped
 * (isImage, select_sym.c). Rooted plans (trees, chains) and shapes that break every symmetry (an
 * axis without wrap breaks translations; a rank count that is not a power of two breaks
 * exclusive-or, where recursive doubling folds ranks; the twisted torus all-reduce, whose ranks'
 * plans differ) are costed with every rank's plan if they fit TD_SELECT_POD_FULL_STEPS and, per
 * collective, TD_SELECT_POD_FULL_WORK; pod-scale costing evaluates every 4th bucket (every 8th in
 * full) and interpolates between (podInterpolate). Candidates that do not fit are costed from their
 * structure where select_est.c has an estimate (costEstimated; on a torus without DCN but the
 * chains): the chains, the tree all-reduce, and the folded recursive doubling family (recursive
 * doubling all-reduce, all-gather and reduce-scatter, Rabenseifner). What is left is ranked after
 * the costed ones and named on the header line, except the head of the fixed order (orderClass).
 */
#include "select.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "algos.h"
#include "drive.h"
#include "select_sym.h"

#define TD_SELECT_NBUCKETS 31
#define TD_SELECT_WORK_BUDGET 12000000ull
#define TD_SELECT_MAX_RANKS 256
#define TD_SELECT_SMALL_BYTES 65536
#define TD_SELECT_POD_STRIDE 4            /* pod scale: every 4th bucket evaluated (8th in full) */
#define TD_SELECT_POD_FULL_STEPS 200000   /* pod scale: most steps costed in full (memory) */
#define TD_SELECT_POD_FULL_WORK 600000ull /* pod scale: per collective, costed in full */

struct tdSelectTable {
  tdTopo topo;
  int nranks;
  int ncand[TD_NUM_COLLS];
  const char *cand[TD_NUM_COLLS][TD_SELECT_MAX_CANDIDATES];
  /* seconds; < 0: refused (-1) or not costed (-2) */
  double cost[TD_NUM_COLLS][TD_SELECT_MAX_CANDIDATES][TD_SELECT_NBUCKETS];
  uint8_t order[TD_NUM_COLLS][TD_SELECT_NBUCKETS][TD_SELECT_MAX_CANDIDATES];
  int norder[TD_NUM_COLLS][TD_SELECT_NBUCKETS];
  const char *override[TD_NUM_COLLS];
  int partial;
  char uncosted[192];     /* "coll/algo ..." of the candidates left to the fixed order */
  int nsym;               /* candidates costed from rank 0 by symmetry */
  uint64_t work;          /* step evaluations spent */
  uint64_t pod_full_work; /* this collective's on plans of all ranks at pod scale */
  double build_s;
  int refs; /* communicators sharing it through the cache (0: not cached) */
};

/* Tables by shape: communicators of one shape (the groups of a device mesh, splits of the same
 * size and layout) share one table, built once per process. The key is everything the table
 * depends on: the topology (shape, wraps, twist, hosts, slices), the rank count, the override and
 * the cost model's figures. A table leaves the cache with its last communicator. */
typedef struct selCached {
  tdTopo topo;
  int nranks;
  char override[512]; /* parseOverride takes at most 511 characters */
  tdCostModel model;
  tdSelectTable *table;
  struct selCached *next;
} selCached;

static pthread_mutex_t selCacheLock = PTHREAD_MUTEX_INITIALIZER;
static selCached *selCache;

static void cacheKey(selCached *k, const tdTopo *topo, int nranks, const char *override,
                     const tdCostModel *m) {
  memset(k, 0, sizeof(*k));
  memcpy(&k->topo, topo, sizeof(*topo));
  k->nranks = nranks;
  snprintf(k->override, sizeof(k->override), "%s", override ? override : "");
  memcpy(&k->model, m, sizeof(*m));
}

static int sameKey(const selCached *a, const selCached *b) {
  return a->nranks == b->nranks && !memcmp(&a->topo, &b->topo, sizeof(a->topo)) &&
         !strcmp(a->override, b->override) && !memcmp(&a->model, &b->model, sizeof(a->model));
}

/* The cached table for key (one more reference), or NULL. Called with the lock held. */
static tdSelectTable *cacheFind(const selCached *key) {
  for (selCached *c = selCache; c; c = c->next)
    if (sameKey(c, key)) {
      c->table->refs++;
      return c->table;
    }
  return NULL;
}

static double nowSeconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int bucketOf(uint64_t bytes) {
  int b = 0;
  while (b < TD_SELECT_NBUCKETS - 1 && ((uint64_t)1 << b) < bytes) b++;
  return b;
}

static uint64_t blocksPerRank(tdColl c, int nranks) {
  switch (c) {
    case TD_COLL_ALLGATHER:
    case TD_COLL_REDUCESCATTER:
    case TD_COLL_ALLTOALL:
    case TD_COLL_ALLTOALLV:
      return (uint64_t)nranks;
    default:
      return 1;
  }
}

static uint64_t bucketCount(tdColl c, int nranks, int b) {
  uint64_t n = ((uint64_t)1 << b) / 4 / blocksPerRank(c, nranks);
  return n ? n : 1;
}

static void baseArgs(const tdSelectTable *t, tdColl c, tdCollArgs *a) {
  memset(a, 0, sizeof(*a));
  a->coll = c;
  a->nranks = t->nranks;
  a->root = c == TD_COLL_SENDRECV && t->nranks > 1 ? 1 : 0;
  a->count = 1;
  a->topo = &t->topo;
  a->elem_size = 4;
}

/* Equal count matrix of n elements per pair (and packed displacements for one rank). */
static uint64_t *equalMatrix(int nranks, uint64_t n) {
  size_t sz = (size_t)nranks * (size_t)nranks;
  uint64_t *m = malloc(sizeof(uint64_t) * (sz + 2 * (size_t)nranks));
  if (!m) return NULL;
  for (size_t i = 0; i < sz; i++) m[i] = n;
  for (int i = 0; i < nranks; i++)
    m[sz + (size_t)i] = m[sz + (size_t)nranks + (size_t)i] = (uint64_t)i * n;
  return m;
}

/* Does algo accept the shape? Generates rank 0 only; *steps = its step count. */
static tpudistResult_t acceptsRank(const tdSelectTable *t, tdColl c, const char *algo, int rank,
                                   char *err, uint64_t *steps) {
  tdCollArgs a;
  if (c == TD_COLL_ALLTOALLV && t->nranks > TD_SELECT_MAX_RANKS && algoFind(TD_COLL_ALLTOALL, algo))
    c = TD_COLL_ALLTOALL; /* its twin: the same preconditions, without an nranks^2 matrix */
  baseArgs(t, c, &a);
  a.rank = rank < t->nranks ? rank : 0;
  uint64_t *m = NULL;
  if (c == TD_COLL_ALLTOALLV) {
    if (!(m = equalMatrix(t->nranks, 1))) return tpudistNoMemory;
    a.v_counts = m;
    a.v_sdispls = m + (size_t)t->nranks * (size_t)t->nranks;
    a.v_rdispls = a.v_sdispls + t->nranks;
  }
  tdSched s;
  tpudistResult_t r = algoGenerate(&a, algo, &s, err);
  *steps = 0;
  for (uint32_t i = 0; r == tpudistSuccess && i < s.nstreams; i++) *steps += s.streams[i].nsteps;
  if (r == tpudistSuccess) schedFree(&s);
  free(m);
  return r;
}

static tpudistResult_t accepts(const tdSelectTable *t, tdColl c, const char *algo, char *err,
                               uint64_t *steps) {
  return acceptsRank(t, c, algo, 0, err, steps);
}

/* Pod scale: every TD_SELECT_POD_STRIDE-th bucket (and the last) is evaluated, the others
 * interpolated linearly in the block count. A plan's time is a maximum of affine functions of the
 * count (paths of latency plus bytes over bandwidth), so the chord is an upper bound. */
static int podEvaluated(int b, int stride) {
  return b % stride == 0 || b == TD_SELECT_NBUCKETS - 1;
}

static void podInterpolate(const tdSelectTable *t, tdColl c, double *out) {
  for (int b = 0; b < TD_SELECT_NBUCKETS; b++) {
    if (out[b] != -3) continue;
    int lo = b - 1, hi = b + 1;
    while (out[hi] == -3) hi++;
    double n = (double)bucketCount(c, t->nranks, b), n0 = (double)bucketCount(c, t->nranks, lo);
    double n1 = (double)bucketCount(c, t->nranks, hi);
    out[b] = n1 > n0 ? out[lo] + (out[hi] - out[lo]) * (n - n0) / (n1 - n0) : out[lo];
  }
}

/* Costs one candidate at every bucket into t->cost[c][i]; -1 if it refuses the shape. stride:
 * every stride-th bucket evaluated, the others interpolated (1: every bucket); sym: from rank 0's
 * plan alone by symmetry (2: translations of a wrapped torus only); *costed = 0 (and nothing
 * written) if its plans have none. */
static tpudistResult_t costCandidate(tdSelectTable *t, tdColl c, int i, const tdCostModel *m,
                                     int stride, int sym, int *costed) {
  char err[TD_ERRLEN];
  tdCollArgs a;
  baseArgs(t, c, &a);
  double *out = t->cost[c][i];
  uint64_t *mat = NULL;
  if (c == TD_COLL_ALLTOALLV && !(mat = equalMatrix(t->nranks, 1))) return tpudistNoMemory;
  a.v_counts = mat;
  tdCostPlan *p = NULL;
  tpudistResult_t r = tpudistSuccess;
  for (int b = 0; b < TD_SELECT_NBUCKETS && r == tpudistSuccess; b++) {
    uint64_t n = bucketCount(c, t->nranks, b);
    if (b > 0 && c != TD_COLL_ALLTOALLV && n == bucketCount(c, t->nranks, b - 1)) {
      out[b] = out[b - 1]; /* same block count as the bucket below (clamped at 1) */
      continue;
    }
    if (stride > 1 && !podEvaluated(b, stride)) {
      out[b] = -3; /* interpolated below */
      continue;
    }
    if (c == TD_COLL_ALLTOALLV) { /* explicit layouts: one plan per bucket */
      for (size_t k = 0; k < (size_t)t->nranks * (size_t)t->nranks; k++) mat[k] = n;
      costPlanFree(p);
      p = NULL;
    }
    if (!p && sym) {
      r = selectSymPlan(&t->topo, t->nranks, &a, t->cand[c][i], sym == 2, &p, err);
      if (r == tpudistSuccess && !p) break; /* no symmetry: not costed */
    } else if (!p) {
      r = costPlanGenerate(&a, t->cand[c][i], &p, err);
    }
    if (r == tpudistSuccess) r = costPlanEval(p, m, n, 4, &out[b], err);
    if (r == tpudistSuccess) t->work += costPlanSteps(p);
  }
  *costed = p != NULL;
  if (*costed && r == tpudistSuccess && stride > 1) podInterpolate(t, c, out);
  costPlanFree(p);
  free(mat);
  if (r == tpudistNotSupported || r == tpudistInvalidArgument || r == tpudistInternalError) {
    for (int b = 0; b < TD_SELECT_NBUCKETS; b++) out[b] = -1;
    return tpudistSuccess; /* refused (or not runnable): absent from this table */
  }
  return r;
}

/* All-to-all-v candidates with an all-to-all twin take its costs. */
static int copyTwin(tdSelectTable *t, int i) {
  const char *name = t->cand[TD_COLL_ALLTOALLV][i];
  for (int j = 0; j < t->ncand[TD_COLL_ALLTOALL]; j++)
    if (strcmp(t->cand[TD_COLL_ALLTOALL][j], name) == 0 && t->cost[TD_COLL_ALLTOALL][j][0] >= 0) {
      memcpy(t->cost[TD_COLL_ALLTOALLV][i], t->cost[TD_COLL_ALLTOALL][j], sizeof(t->cost[0][0]));
      return 1;
    }
  return 0;
}

static int tooBig(const tdSelectTable *t, tdColl c) {
  (void)c;
  return t->nranks > TD_SELECT_MAX_RANKS;
}

/* Not costed: ranked by the fixed order, and named on the header line. */
static void leaveUncosted(tdSelectTable *t, tdColl c, int i) {
  size_t n = strlen(t->uncosted);
  t->partial = 1;
  if (n + 40 < sizeof(t->uncosted))
    snprintf(t->uncosted + n, sizeof(t->uncosted) - n, "%s%s/%s", n ? " " : "", schedCollName(c),
             t->cand[c][i]);
}

/* Pod scale: a candidate past the budget costed from its structure (select_est.c): the chains
 * and the tree all-reduce at every bucket, the recursive doubling family at the buckets a
 * pod-scale costing of every rank's plan evaluates (every 8th; the others interpolated); 0 if it
 * has none (or no memory for it: left to the fixed order). */
static int costEstimated(tdSelectTable *t, tdColl c, int i, const tdCostModel *m) {
  const char *name = t->cand[c][i];
  int chain = strcmp(name, "chain") == 0 && (c == TD_COLL_BROADCAST || c == TD_COLL_REDUCE);
  int tree = strcmp(name, "tree") == 0 && c == TD_COLL_ALLREDUCE;
  uint64_t bytes[TD_SELECT_NBUCKETS];
  double *out = t->cost[c][i], est[TD_SELECT_NBUCKETS];
  for (int b = 0; b < TD_SELECT_NBUCKETS; b++) bytes[b] = bucketCount(c, t->nranks, b) * 4;
  if (tree) return selectTreeEstimate(&t->topo, m, TD_SELECT_NBUCKETS, bytes, out);
  if (chain) {
    for (int b = 0; b < TD_SELECT_NBUCKETS; b++)
      out[b] = selectChainEstimate(&t->topo, c, m, bytes[b]);
    return 1;
  }
  int ne = 0, at[TD_SELECT_NBUCKETS];
  for (int b = 0; b < TD_SELECT_NBUCKETS; b++)
    if (podEvaluated(b, 2 * TD_SELECT_POD_STRIDE) && (b == 0 || bytes[b] != bytes[b - 1]))
      at[ne] = b, bytes[ne++] = bytes[b];
  if (!selectFoldEstimate(&t->topo, c, name, m, ne, bytes, est)) return 0;
  for (int b = 0, e = 0; b < TD_SELECT_NBUCKETS; b++) {
    uint64_t n = bucketCount(c, t->nranks, b);
    if (e < ne && at[e] == b)
      out[b] = est[e++];
    else
      out[b] = b > 0 && n == bucketCount(c, t->nranks, b - 1) ? out[b - 1] : -3;
  }
  podInterpolate(t, c, out);
  return 1;
}

static tpudistResult_t costColl(tdSelectTable *t, tdColl c, const tdCostModel *m) {
  char err[TD_ERRLEN];
  t->pod_full_work = 0; /* the pod-scale budget of full costing is per collective */
  for (int i = 0; i < t->ncand[c]; i++) {
    for (int b = 0; b < TD_SELECT_NBUCKETS; b++) t->cost[c][i][b] = -2;
    if (c == TD_COLL_ALLTOALLV && copyTwin(t, i)) continue;
    uint64_t steps;
    tpudistResult_t r = accepts(t, c, t->cand[c][i], err, &steps);
    if (r == tpudistNoMemory) return r;
    if (r != tpudistSuccess) { /* refuses the shape: absent */
      for (int b = 0; b < TD_SELECT_NBUCKETS; b++) t->cost[c][i][b] = -1;
      continue;
    }
    /* estimated work: rank 0's steps for every rank and bucket; at pod scale the larger of rank
       0's and a middle rank's (a tree's root has half a leaf's steps), every 8th bucket */
    int pod = tooBig(t, c), costed = 0;
    if (pod && steps * (uint64_t)t->nranks <= TD_SELECT_POD_FULL_STEPS) {
      uint64_t mid;
      tpudistResult_t r2 = acceptsRank(t, c, t->cand[c][i], t->nranks / 2 + 1, err, &mid);
      if (r2 == tpudistNoMemory) return r2;
      steps = TD_MAX(steps, mid);
    }
    uint64_t est = steps * (uint64_t)t->nranks * TD_SELECT_NBUCKETS;
    if (pod) est = est / (2 * TD_SELECT_POD_STRIDE);
    int fits = pod ? t->pod_full_work + est <= TD_SELECT_POD_FULL_WORK &&
                         steps * (uint64_t)t->nranks <= TD_SELECT_POD_FULL_STEPS
                   : t->work + est <= TD_SELECT_WORK_BUDGET;
    if (c == TD_COLL_SENDRECV) continue;
    /* rank 0 alone, by symmetry: at pod scale any, else (past the budget) translations only */
    if ((pod || !fits) && c != TD_COLL_ALLTOALLV) {
      TD_CHECK(costCandidate(t, c, i, m, pod ? TD_SELECT_POD_STRIDE : 1, pod ? 1 : 2, &costed));
      t->nsym += costed;
    }
    if (!costed && fits && !(pod && c == TD_COLL_ALLTOALLV)) { /* no nranks^2 matrix */
      uint64_t w = t->work;
      TD_CHECK(costCandidate(t, c, i, m, pod ? 2 * TD_SELECT_POD_STRIDE : 1, 0, &costed));
      t->pod_full_work += pod ? t->work - w : 0;
    }
    /* past the budget below pod scale: every TD_SELECT_POD_STRIDE-th bucket, if that fits */
    if (!costed && !pod && t->work + est / TD_SELECT_POD_STRIDE <= TD_SELECT_WORK_BUDGET)
      TD_CHECK(costCandidate(t, c, i, m, TD_SELECT_POD_STRIDE, 0, &costed));
    if (!costed && pod) costed = costEstimated(t, c, i, m);
    if (!costed) leaveUncosted(t, c, i);
  }
  return tpudistSuccess;
}

/* Fixed order for candidates that were not costed. */
static int fallbackRank(const char *name, int small) {
  static const char *const lat[] = {"recdbl",   "tree",  "bruck", "rabenseifner", "chain", "direct",
                                    "pairwise", "torus", "hier",  "ring2",        "ring"};
  static const char *const bw[] = {"torus",  "hier",  "ring2", "ring",   "rabenseifner", "pairwise",
                                   "direct", "chain", "tree",  "recdbl", "bruck"};
  const char *const *l = small ? lat : bw;
  for (int i = 0; i < (int)TD_ARRAY_SIZE(lat); i++)
    if (strcmp(l[i], name) == 0) return i;
  return (int)TD_ARRAY_SIZE(lat);
}

/* Costed candidates y and p (y after p in the order so far): does y go first? By cost; a tie
 * (equal to 1e-9) goes, on a topology with DCN, to the plan built for its levels (hier: on two
 * levels of powers of two Rabenseifner's halving, nearest partners first, is the same plan and
 * costs the same), else stays in table order. */
static int cheaper(const tdSelectTable *t, tdColl c, int y, int p, int b) {
  double cy = t->cost[c][y][b], cp = t->cost[c][p][b];
  if (TD_MAX(cy, cp) - TD_MIN(cy, cp) > 1e-9 * TD_MAX(cy, cp)) return cy < cp;
  return topoHasDcn(&t->topo) && strcmp(t->cand[c][y], "hier") == 0;
}

/* Where candidate i goes in bucket b: 0 at pod scale not costed but heading the fixed order
 * (torus for bandwidth, recursive doubling for latency: a twisted pod's torus all-reduce, whose
 * ranks' plans are not translates, keeps its place), 1 costed, 2 other candidates not costed. */
static int orderClass(const tdSelectTable *t, tdColl c, int i, int b, int small) {
  if (t->cost[c][i][b] >= 0) return 1;
  return tooBig(t, c) && fallbackRank(t->cand[c][i], small) == 0 ? 0 : 2;
}

static void orderBucket(tdSelectTable *t, tdColl c, int b) {
  int n = 0, small = ((uint64_t)1 << b) <= TD_SELECT_SMALL_BYTES;
  uint8_t *o = t->order[c][b];
  for (int i = 0; i < t->ncand[c]; i++)
    if (t->cost[c][i][b] != -1) o[n++] = (uint8_t)i;
  for (int x = 1; x < n; x++) /* insertion sort: by class, costed by cost, then the fixed order */
    for (int y = x; y > 0; y--) {
      double cy = t->cost[c][o[y]][b], cp = t->cost[c][o[y - 1]][b];
      int ky = orderClass(t, c, o[y], b, small), kp = orderClass(t, c, o[y - 1], b, small), swap;
      if (ky != kp)
        swap = ky < kp;
      else if (cy >= 0 && cp >= 0)
        swap = cheaper(t, c, o[y], o[y - 1], b);
      else
        swap = fallbackRank(t->cand[c][o[y]], small) < fallbackRank(t->cand[c][o[y - 1]], small);
      if (!swap) break;
      uint8_t tmp = o[y];
      o[y] = o[y - 1];
      o[y - 1] = tmp;
    }
  t->norder[c][b] = n;
}

/* Every registered generator of each collective is a candidate (more than
 * TD_SELECT_MAX_CANDIDATES of one collective is an error, never a silent cut). */
static tpudistResult_t listCandidates(tdSelectTable *t, char *err) {
  for (const tdAlgo *a = tdAlgoTable; a->name; a++) {
    if (!a->gen || (unsigned)a->coll >= TD_NUM_COLLS) continue;
    if (t->ncand[a->coll] == TD_SELECT_MAX_CANDIDATES)
      return tdErr(err, tpudistInternalError,
                   "select: %s has more than %d algorithms (raise TD_SELECT_MAX_CANDIDATES)",
                   schedCollName(a->coll), TD_SELECT_MAX_CANDIDATES);
    t->cand[a->coll][t->ncand[a->coll]++] = a->name;
  }
  return tpudistSuccess;
}

/* "allreduce=torus,alltoall=pairwise": each name must exist, be built and accept the shape. */
static tpudistResult_t parseOverride(tdSelectTable *t, const char *spec, char *err) {
  char buf[512];
  if (!spec || !*spec) return tpudistSuccess;
  if (strlen(spec) >= sizeof(buf))
    return tdErr(err, tpudistInvalidArgument, "algorithm override too long");
  strcpy(buf, spec);
  for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    char *eq = strchr(tok, '=');
    if (!eq)
      return tdErr(err, tpudistInvalidArgument,
                   "algorithm override '%s': expected collective=algorithm", tok);
    *eq = '\0';
    int c = schedCollFromName(tok);
    if (c < 0)
      return tdErr(err, tpudistInvalidArgument, "algorithm override: unknown collective '%s'", tok);
    const tdAlgo *a = algoFind((tdColl)c, eq + 1);
    if (!a)
      return tdErr(err, tpudistInvalidArgument, "algorithm override: unknown algorithm '%s' for %s",
                   eq + 1, tok);
    if (!a->gen)
      return tdErr(err, tpudistNotSupported, "algorithm override: '%s' for %s is not built",
                   a->name, tok);
    char why[TD_ERRLEN] = "";
    uint64_t steps;
    tpudistResult_t r = accepts(t, (tdColl)c, a->name, why, &steps);
    if (r != tpudistSuccess)
      return tdErr(err, r == tpudistNoMemory ? r : tpudistNotSupported,
                   "algorithm override: %s refuses %s on %d ranks: %s", a->name, tok, t->nranks,
                   why);
    t->override[c] = a->name;
  }
  return tpudistSuccess;
}

static tpudistResult_t buildTable(const tdTopo *topo, int nranks, const char *override,
                                  const tdCostModel *m, tdSelectTable **out, char *err) {
  double t0 = nowSeconds();
  tdSelectTable *t = calloc(1, sizeof(*t));
  if (!t) return tpudistNoMemory;
  t->topo = *topo;
  t->nranks = nranks;
  tpudistResult_t r = listCandidates(t, err);
  if (r == tpudistSuccess) r = parseOverride(t, override, err);
  for (int c = 0; c < TD_NUM_COLLS && r == tpudistSuccess; c++) {
    if (t->override[c]) continue;
    r = costColl(t, (tdColl)c, m);
    for (int b = 0; b < TD_SELECT_NBUCKETS && r == tpudistSuccess; b++)
      orderBucket(t, (tdColl)c, b);
  }
  if (r != tpudistSuccess) {
    if (r == tpudistNoMemory) tdErr(err, r, "select: out of memory");
    free(t);
    return r;
  }
  t->build_s = nowSeconds() - t0;
  *out = t;
  return tpudistSuccess;
}

tpudistResult_t selectBuild(const tdTopo *topo, int nranks, const char *override,
                            const tdCostModel *model, tdSelectTable **out, char *err) {
  if (!topo || nranks < 1 || (topo->ndims > 0 && topo->nranks != nranks))
    return tdErr(err, tpudistInvalidArgument, "select: topology of %d chips for %d ranks",
                 topo ? topo->nranks : 0, nranks);
  tdCostModel m;
  if (model)
    m = *model;
  else
    costModelDefault(topo, &m);
  selCached *key = malloc(sizeof(*key));
  if (!key) return tdErr(err, tpudistNoMemory, "select: out of memory");
  cacheKey(key, topo, nranks, override, &m);
  pthread_mutex_lock(&selCacheLock);
  *out = cacheFind(key);
  pthread_mutex_unlock(&selCacheLock);
  if (*out) {
    free(key);
    return tpudistSuccess;
  }
  tdSelectTable *t;
  tpudistResult_t r = buildTable(topo, nranks, override, &m, &t, err);
  if (r != tpudistSuccess) {
    free(key);
    return r;
  }
  pthread_mutex_lock(&selCacheLock);
  if ((*out = cacheFind(key)) != NULL) { /* another thread built it meanwhile */
    free(t);
    free(key);
  } else {
    t->refs = 1;
    key->table = t;
    key->next = selCache;
    selCache = key;
    *out = t;
  }
  pthread_mutex_unlock(&selCacheLock);
  return tpudistSuccess;
}

int selectCandidates(const tdSelectTable *t, tdColl c, uint64_t bytes, const char **names,
                     int max) {
  if ((unsigned)c >= TD_NUM_COLLS || max < 1) return 0;
  if (t->override[c]) {
    names[0] = t->override[c];
    return 1;
  }
  int b = bucketOf(bytes), n = TD_MIN(max, t->norder[c][b]);
  for (int i = 0; i < n; i++) names[i] = t->cand[c][t->order[c][b][i]];
  return n;
}

const char *selectUniform(const tdSelectTable *t, tdColl c) {
  if ((unsigned)c >= TD_NUM_COLLS) return NULL;
  if (t->override[c]) return t->override[c];
  const char *first = NULL;
  for (int b = 0; b < TD_SELECT_NBUCKETS; b++) {
    if (t->norder[c][b] == 0) return NULL;
    const char *name = t->cand[c][t->order[c][b][0]];
    if (first && strcmp(first, name)) return NULL;
    first = name;
  }
  return first;
}

const char *selectAlltoallvLocal(const tdSelectTable *t) {
  const char *name = selectUniform(t, TD_COLL_ALLTOALLV);
  const tdAlgo *a = name ? algoFind(TD_COLL_ALLTOALLV, name) : NULL;
  return a && (a->flags & TD_ALGO_V_LOCAL) ? a->name : NULL;
}

const char *selectOverride(const tdSelectTable *t, tdColl c) {
  return t && (unsigned)c < TD_NUM_COLLS ? t->override[c] : NULL;
}

static void printLine(const tdSelectTable *t, int c, int b, FILE *f) {
  fprintf(f, "select %s bytes=%llu", schedCollName((tdColl)c), (unsigned long long)1 << b);
  if (t->override[c]) {
    fprintf(f, " best=%s est_us=- candidates=%s override=1\n", t->override[c], t->override[c]);
    return;
  }
  if (t->norder[c][b] == 0) {
    fprintf(f, " best=none est_us=- candidates=\n");
    return;
  }
  int i0 = t->order[c][b][0];
  double c0 = t->cost[c][i0][b];
  fprintf(f, " best=%s", t->cand[c][i0]);
  if (c0 >= 0)
    fprintf(f, " est_us=%.3f", c0 * 1e6);
  else
    fprintf(f, " est_us=-");
  fprintf(f, " candidates=");
  for (int k = 0; k < t->norder[c][b]; k++) {
    int i = t->order[c][b][k];
    fprintf(f, "%s%s", k ? "," : "", t->cand[c][i]);
    if (t->cost[c][i][b] >= 0) fprintf(f, ":%.3f", t->cost[c][i][b] * 1e6);
  }
  fprintf(f, "\n");
}

void selectPrint(const tdSelectTable *t, FILE *f) {
  char name[64];
  topoFormat(&t->topo, name, sizeof(name));
  fprintf(f, "# selection table: topology %s nranks %d elem_size 4 work %llu build_ms %.1f", name,
          t->nranks, (unsigned long long)t->work, t->build_s * 1e3);
  if (t->nsym) fprintf(f, " symmetric %d", t->nsym);
  if (t->partial) fprintf(f, " (not costed, fixed order: %s)", t->uncosted);
  fprintf(f, "\n");
  fprintf(f,
          "# select COLL bytes=BUCKET best=ALGO est_us=T candidates=ALGO:T,... (cheapest first)\n");
  for (int c = 0; c < TD_NUM_COLLS; c++)
    for (int b = 0; b < TD_SELECT_NBUCKETS; b++) printLine(t, c, b, f);
  const char *v = selectAlltoallvLocal(t);
  if (v)
    fprintf(f, "alltoallv phases=1 algo=%s (no counts exchange)\n", v);
  else
    fprintf(f, "alltoallv phases=2 (counts exchange, then the plan)\n");
}

void selectFree(tdSelectTable *t) {
  if (!t) return;
  pthread_mutex_lock(&selCacheLock);
  int last = 1;
  if (t->refs > 0 && --t->refs == 0) { /* the last communicator of its shape: out of the cache */
    for (selCached **c = &selCache; *c; c = &(*c)->next)
      if ((*c)->table == t) {
        selCached *gone = *c;
        *c = gone->next;
        free(gone);
        break;
      }
  } else if (t->refs > 0) {
    last = 0;
  }
  pthread_mutex_unlock(&selCacheLock);
  if (last) free(t);
}

size_t selectPackedBytes(void) {
  return sizeof(tdSelectTable);
}

/* Algorithm name of collective c as its index in tdAlgoTable + 1 (0: none), and back (NULL: not
 * an entry of c). */
static uintptr_t nameIndex(int c, const char *name) {
  const tdAlgo *a = name ? algoFind((tdColl)c, name) : NULL;
  return a ? (uintptr_t)(a - tdAlgoTable) + 1 : 0;
}
static const char *indexName(const char *packed, int c, int *bad) {
  uintptr_t i = (uintptr_t)packed, n = 0;
  while (tdAlgoTable[n].name) n++;
  if (i == 0) return NULL;
  if (i > n || tdAlgoTable[i - 1].coll != (tdColl)c) {
    *bad = 1;
    return NULL;
  }
  return tdAlgoTable[i - 1].name;
}

void selectPack(const tdSelectTable *t, void *buf) {
  tdSelectTable p = *t;
  for (int c = 0; c < TD_NUM_COLLS; c++) {
    for (int i = 0; i < TD_SELECT_MAX_CANDIDATES; i++)
      p.cand[c][i] = (const char *)nameIndex(c, t->cand[c][i]);
    p.override[c] = (const char *)nameIndex(c, t->override[c]);
  }
  memcpy(buf, &p, sizeof(p));
}

tpudistResult_t selectUnpack(const void *buf, size_t len, const tdTopo *topo, int nranks,
                             tdSelectTable **out, char *err) {
  if (len != sizeof(tdSelectTable))
    return tdErr(err, tpudistInvalidUsage, "select: a packed table of %zu bytes, not %zu", len,
                 sizeof(tdSelectTable));
  tdSelectTable *t = malloc(sizeof(*t));
  if (!t) return tdErr(err, tpudistNoMemory, "select: out of memory");
  memcpy(t, buf, sizeof(*t));
  t->refs = 0; /* a received table is this communicator's own */
  int bad = t->nranks != nranks || memcmp(&t->topo, topo, sizeof(*topo)) != 0;
  char theirs[64], mine[64];
  topoFormat(&t->topo, theirs, sizeof(theirs));
  topoFormat(topo, mine, sizeof(mine));
  if (bad) {
    int n = t->nranks;
    free(t);
    return tdErr(err, tpudistInvalidUsage,
                 "select: the table is for %d ranks on %s, this rank has %d ranks on %s", n, theirs,
                 nranks, mine);
  }
  for (int c = 0; c < TD_NUM_COLLS; c++) {
    bad |= t->ncand[c] < 0 || t->ncand[c] > TD_SELECT_MAX_CANDIDATES;
    for (int i = 0; i < TD_SELECT_MAX_CANDIDATES; i++)
      t->cand[c][i] = indexName(t->cand[c][i], c, &bad);
    t->override[c] = indexName(t->override[c], c, &bad);
    for (int b = 0; b < TD_SELECT_NBUCKETS && !bad; b++) {
      bad |= t->norder[c][b] < 0 || t->norder[c][b] > t->ncand[c];
      for (int i = 0; i < t->norder[c][b] && !bad; i++)
        bad |= t->order[c][b][i] >= t->ncand[c] || !t->cand[c][t->order[c][b][i]];
    }
  }
  t->uncosted[sizeof(t->uncosted) - 1] = 0;
  if (bad) {
    free(t);
    return tdErr(err, tpudistInvalidUsage, "select: a packed table that is not valid");
  }
  *out = t;
  return tpudistSuccess;
}

tpudistResult_t selectPrintTopology(const char *spec, int nranks, const char *override, FILE *f,
                                    char *err) {
  tdTopo t;
  TD_CHECK(topoParse(spec, nranks > 0 ? nranks : 0, &t, err));
  tdSelectTable *s;
  TD_CHECK(selectBuild(&t, nranks > 0 ? nranks : t.nranks, override, NULL, &s, err));
  selectPrint(s, f);
  selectFree(s);
  return tpudistSuccess;
}
