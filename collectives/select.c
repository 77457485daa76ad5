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
 * Every rank is simulated (no sampling: most generators are not rank-symmetric, e.g. trees, and
 * contention depends on all flows). The bound on build time is a deterministic work budget, so
 * that every rank builds the same table: TD_SELECT_WORK_BUDGET (12 M) step evaluations (steps of a
 * plan x buckets evaluated) in all; a candidate whose estimated evaluation (rank 0's steps x
 * ranks x buckets, known before generating the other ranks) would exceed what is left, and
 * every candidate of all-to-all(v) beyond TD_SELECT_MAX_A2A_RANKS ranks or of other collectives
 * beyond TD_SELECT_MAX_RANKS (where generating all ranks is itself too slow), is ranked after
 * the costed ones by a fixed order (latency algorithms first up to 64 KiB, bandwidth algorithms
 * above), if rank 0's generator accepts the shape. 64 ranks on 4x4x4 are costed in full.
 */
#include "select.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "algos.h"
#include "cost.h"

#define TD_SELECT_NBUCKETS 31
#define TD_SELECT_WORK_BUDGET 12000000ull
#define TD_SELECT_MAX_RANKS 1024
#define TD_SELECT_MAX_A2A_RANKS 256
#define TD_SELECT_SMALL_BYTES 65536

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
  uint64_t work; /* step evaluations spent */
  double build_s;
};

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
static tpudistResult_t accepts(const tdSelectTable *t, tdColl c, const char *algo, char *err,
                               uint64_t *steps) {
  tdCollArgs a;
  baseArgs(t, c, &a);
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

/* Costs one candidate at every bucket into t->cost[c][i]; -1 if it refuses the shape. */
static tpudistResult_t costCandidate(tdSelectTable *t, tdColl c, int i, const tdCostModel *m) {
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
    if (c == TD_COLL_ALLTOALLV) { /* explicit layouts: one plan per bucket */
      for (size_t k = 0; k < (size_t)t->nranks * (size_t)t->nranks; k++) mat[k] = n;
      costPlanFree(p);
      p = NULL;
    }
    if (!p) r = costPlanGenerate(&a, t->cand[c][i], &p, err);
    if (r == tpudistSuccess) r = costPlanEval(p, m, n, 4, &out[b], err);
    if (r == tpudistSuccess) t->work += costPlanSteps(p);
  }
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
  if (c == TD_COLL_ALLTOALL || c == TD_COLL_ALLTOALLV) return t->nranks > TD_SELECT_MAX_A2A_RANKS;
  return t->nranks > TD_SELECT_MAX_RANKS;
}

static tpudistResult_t costColl(tdSelectTable *t, tdColl c, const tdCostModel *m) {
  char err[TD_ERRLEN];
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
    /* estimated work: rank 0's steps for every rank and bucket */
    uint64_t est = steps * (uint64_t)t->nranks * TD_SELECT_NBUCKETS;
    if (c == TD_COLL_SENDRECV || tooBig(t, c) || t->work + est > TD_SELECT_WORK_BUDGET) {
      if (c != TD_COLL_SENDRECV) t->partial = 1; /* ranked by the fixed order */
      continue;
    }
    TD_CHECK(costCandidate(t, c, i, m));
  }
  return tpudistSuccess;
}

/* Fixed order for candidates that were not costed. */
static int fallbackRank(const char *name, int small) {
  static const char *const lat[] = {"recdbl", "tree",     "bruck", "rabenseifner", "chain",
                                    "direct", "pairwise", "torus", "ring2",        "ring"};
  static const char *const bw[] = {"torus",  "ring2", "ring", "rabenseifner", "pairwise",
                                   "direct", "chain", "tree", "recdbl",       "bruck"};
  const char *const *l = small ? lat : bw;
  for (int i = 0; i < 10; i++)
    if (strcmp(l[i], name) == 0) return i;
  return 10;
}

static void orderBucket(tdSelectTable *t, tdColl c, int b) {
  int n = 0, small = ((uint64_t)1 << b) <= TD_SELECT_SMALL_BYTES;
  uint8_t *o = t->order[c][b];
  for (int i = 0; i < t->ncand[c]; i++)
    if (t->cost[c][i][b] != -1) o[n++] = (uint8_t)i;
  for (int x = 1; x < n; x++) /* insertion sort: costed by cost, then the fallback order */
    for (int y = x; y > 0; y--) {
      double cy = t->cost[c][o[y]][b], cp = t->cost[c][o[y - 1]][b];
      int swap;
      if (cy >= 0 && cp >= 0)
        swap = cy < cp;
      else if (cy >= 0 || cp >= 0)
        swap = cy >= 0;
      else
        swap = fallbackRank(t->cand[c][o[y]], small) < fallbackRank(t->cand[c][o[y - 1]], small);
      if (!swap) break;
      uint8_t tmp = o[y];
      o[y] = o[y - 1];
      o[y - 1] = tmp;
    }
  t->norder[c][b] = n;
}

static void listCandidates(tdSelectTable *t) {
  for (const tdAlgo *a = tdAlgoTable; a->name; a++)
    if (a->gen && (unsigned)a->coll < TD_NUM_COLLS && t->ncand[a->coll] < TD_SELECT_MAX_CANDIDATES)
      t->cand[a->coll][t->ncand[a->coll]++] = a->name;
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

tpudistResult_t selectBuild(const tdTopo *topo, int nranks, const char *override,
                            tdSelectTable **out, char *err) {
  if (!topo || nranks < 1 || (topo->ndims > 0 && topo->nranks != nranks))
    return tdErr(err, tpudistInvalidArgument, "select: topology of %d chips for %d ranks",
                 topo ? topo->nranks : 0, nranks);
  double t0 = nowSeconds();
  tdSelectTable *t = calloc(1, sizeof(*t));
  if (!t) return tpudistNoMemory;
  t->topo = *topo;
  t->nranks = nranks;
  listCandidates(t);
  tpudistResult_t r = parseOverride(t, override, err);
  tdCostModel m;
  costModelDefault(topo, &m);
  for (int c = 0; c < TD_NUM_COLLS && r == tpudistSuccess; c++) {
    if (t->override[c]) continue;
    r = costColl(t, (tdColl)c, &m);
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
  fprintf(f, "# selection table: topology %s nranks %d elem_size 4 work %llu build_ms %.1f%s\n",
          name, t->nranks, (unsigned long long)t->work, t->build_s * 1e3,
          t->partial ? " (some candidates not costed: fixed order)" : "");
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
  free(t);
}

tpudistResult_t selectPrintTopology(const char *spec, int nranks, const char *override, FILE *f,
                                    char *err) {
  tdTopo t;
  TD_CHECK(topoParse(spec, nranks > 0 ? nranks : 0, &t, err));
  tdSelectTable *s;
  TD_CHECK(selectBuild(&t, nranks > 0 ? nranks : t.nranks, override, &s, err));
  selectPrint(s, f);
  selectFree(s);
  return tpudistSuccess;
}
